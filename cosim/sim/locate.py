"""How a function passed to ``cosim.run`` is found again inside the simulator process.

The simulator is another process, so a call travels as (module, name) and is imported there. A
function of an importable module travels by its module name. A function of the script being run
(``python my_script.py``: its module is ``__main__``) travels by the script's path, and the
simulator imports that file under another module name, so the script's
``if __name__ == "__main__":`` block does not run again there. What cannot be imported by name
(a lambda, a nested function, a function typed into an interactive session or a notebook) is a
``ValueError`` that says how to make it importable.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["locate", "load", "SCRIPT_PREFIX", "SCRIPT_MODULE", "INSIDE_ENV"]

SCRIPT_PREFIX = "script:"            # (module) of a call whose function lives in the user's script, then its path
SCRIPT_MODULE = "__cosim_script__"   # the module name the simulator imports that script under
INSIDE_ENV = "VTA_COSIM_INSIDE"      # set in the simulator process: cosim.run there is a mistake


def locate(fn: Callable) -> tuple[str, str]:
    """``(module, qualified name)`` by which the simulator process imports ``fn``; ``ValueError`` when none exists."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not callable(fn) or module is None or name is None:
        raise ValueError(f"cosim.run needs a function; got {fn!r}")
    if "<" in name:
        raise ValueError(f"cosim.run needs a module-level function importable by name; got {module}.{name} (a lambda "
                         "or a function defined inside another function): define it with `def` at the top level of "
                         "a module or of your script")
    if module != "__main__":
        return module, name
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":     # python -m package.module
        return spec.name, name
    path = getattr(main, "__file__", None)
    if not path:
        raise ValueError(f"cosim.run needs a module-level function importable by name; got __main__.{name}, defined "
                         "in an interactive session or a notebook, which the simulator process cannot import: put it "
                         "in a .py file and import it from there (or run your script with python my_script.py)")
    return SCRIPT_PREFIX + str(Path(path).resolve()), name


def load(module: str, name: str) -> Callable:
    """The function ``name`` of ``module`` as :func:`locate` named it, imported in this (the simulator's) process."""
    if module.startswith(SCRIPT_PREFIX):
        path = module[len(SCRIPT_PREFIX):]
        mod = _import_script(path)
        where = f"script {path}"
    else:
        mod = importlib.import_module(module)
        where = f"module {module}"
    try:
        return functools.reduce(getattr, name.split("."), mod)
    except AttributeError:
        raise AttributeError(f"{where} defines no {name} when imported: define the function at the top level, not "
                             "inside `if __name__ == \"__main__\":`") from None


def _import_script(path: str):
    """Import the user's script by path as :data:`SCRIPT_MODULE` (once per process), its directory on ``sys.path``."""
    loaded = sys.modules.get(SCRIPT_MODULE)
    if loaded is not None and getattr(loaded, "__file__", None) == path:
        return loaded
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)         # the script's own imports of its neighbours, as when it was run
    spec = importlib.util.spec_from_file_location(SCRIPT_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the script {path} in the simulator")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[SCRIPT_MODULE] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[SCRIPT_MODULE]
        raise
    return mod
