"""pytest runs cocotb test modules through :func:`cosim.cocotb.run_tests`: one pytest item per module and config.

Enable it in a ``conftest.py`` (this project's tests/conftest.py does)::

    pytest_plugins = ["cosim.cocotb.pytest_plugin"]

Then every ``test_*.py`` file pytest collects that defines cocotb tests (a ``@cocotb.test`` decorator) is run in
the simulator instead of imported by pytest. The configs come from a module-level list ``VTA_CONFIGS = [...]`` of
config paths (relative to the module's folder or the working directory), else ``$VTA_CONFIG``, else the default
config. An item fails when any of its cocotb tests fails; its report lists each failed test with cocotb's text
(traceback and the accelerator's state). The JUnit files are under ``build/cocotb/pytest/``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["is_cocotb_module", "configs_of", "CocotbFile", "CocotbItem", "CocotbFailure"]

def _is_cocotb_test(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "test" and isinstance(target.value, ast.Name)
            and target.value.id == "cocotb")


def is_cocotb_module(path: Path) -> bool:
    """Whether the Python file at ``path`` defines cocotb tests (a top-level function decorated ``@cocotb.test``)."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return False            # pytest's own collection reports what is wrong with the file
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(_is_cocotb_test, node.decorator_list))
               for node in tree.body)


def configs_of(path: Path) -> list[str | None]:
    """The configs a cocotb module asks for (its ``VTA_CONFIGS`` list of paths), else [None] (the default)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "VTA_CONFIGS" for t in node.targets):
            value = ast.literal_eval(node.value)
            if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{path}: VTA_CONFIGS must be a non-empty list of config paths, got {value!r}")
            return [v if Path(v).is_absolute() or Path(v).exists() else str(path.parent / v) for v in value]
    return [None]


class CocotbFailure(Exception):
    """Some cocotb tests of a module failed (the message lists them)."""


class CocotbFile(pytest.File):
    """A test module of cocotb tests: its items are (module, config) simulator launches."""

    def collect(self) -> Iterator[CocotbItem]:
        for config in configs_of(self.path):
            name = Path(config).stem if config else Path(os.environ.get("VTA_CONFIG") or "default").stem
            yield CocotbItem.from_parent(self, name=f"{self.path.stem}[{name}]", vta_config=config)


class CocotbItem(pytest.Item):
    """One simulator launch of a cocotb module on one config."""

    def __init__(self, *, vta_config: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vta_config = vta_config
        self.add_marker("rtl")

    def runtest(self) -> None:
        from .runner import run_tests

        out = Path("build") / "cocotb" / "pytest" / f"{self.path.stem}-{os.getpid()}"
        results = run_tests([self.path], self.vta_config, out_dir=out, log=True)
        if not results.ok:
            raise CocotbFailure("\n\n".join(f"cocotb test {t.module}.{t.name} on config {t.config} failed: {t.message}\n"
                                            f"{t.details}" for t in results.failed)
                                + f"\n(results: {results.results_xml})")

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, CocotbFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> CocotbFile | None:
    """A ``test_*.py`` file with cocotb tests becomes a :class:`CocotbFile`; any other stays pytest's module."""
    if is_cocotb_module(module_path):
        return CocotbFile.from_parent(parent, path=module_path)
    return None
