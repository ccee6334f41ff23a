"""Type hints: mypy passes on sw, hw and cosim (configured in pyproject.toml), and every public function and method
of those packages has annotated parameters and return."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sw", "hw", "cosim")



def test_mypy():
    from mypy import api

    cwd = os.getcwd()
    os.chdir(ROOT)           # mypy reads pyproject.toml and the `files` it names from the working directory
    try:
        out, err, status = api.run([])
    finally:
        os.chdir(cwd)
    assert status == 0, out + err


def _needs_simulator(path: Path) -> bool:
    """The module imports cocotb at its top: it runs only inside a simulator."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "cocotb" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cocotb":
            return True
    return False


def _modules() -> list[str]:
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            if not _needs_simulator(path):
                out.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return out


def _public_functions(mod) -> Iterator[tuple[str, Callable]]:
    """The names of ``__all__``, else every public top-level function and class defined in the module; of a class,
    its public methods (properties, static and class methods too) and ``__init__``/``__call__``."""
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, o in vars(mod).items() if not n.startswith("_") and getattr(o, "__module__", None) == mod.__name__
                 and (inspect.isfunction(o) or inspect.isclass(o))]
    for name in names:
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__call__"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member) and member.__module__ == obj.__module__:
                    yield f"{obj.__module__}.{obj.__qualname__}.{attr}", member
        elif inspect.isfunction(obj):
            yield f"{obj.__module__}.{obj.__qualname__}", obj


def _unannotated(fn: Callable) -> list[str]:
    """The parameters without an annotation (self/cls, *args and **kwargs apart) and "return" when it has none
    (an ``__init__`` with an annotated parameter needs none: mypy checks it as returning None)."""
    params = list(inspect.signature(fn).parameters.values())
    out = [p.name for i, p in enumerate(params)
           if not (i == 0 and p.name in ("self", "cls")) and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
           and p.annotation is p.empty]
    checked = [p for i, p in enumerate(params) if not (i == 0 and p.name in ("self", "cls"))]
    if "return" not in fn.__annotations__ and not (fn.__name__ == "__init__" and len(out) < len(checked)):
        out.append("return")
    return out


def test_public_api_annotated():
    offenders: dict[str, list[str]] = {}
    seen = set()
    for name in _modules():
        mod = importlib.import_module(name)
        for qualname, fn in _public_functions(mod):
            if qualname in seen:
                continue
            seen.add(qualname)
            missing = _unannotated(fn)
            if missing:
                offenders.setdefault(fn.__module__, []).append(f"{qualname}: {', '.join(missing)}")
    assert len(seen) > 300
    missing = [line for _, lines in sorted(offenders.items()) for line in lines]
    assert not missing, (f"{len(missing)} public functions lack annotations (parameter names, or return):\n"
                         + "\n".join(missing))
