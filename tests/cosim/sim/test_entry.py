"""What runs inside the simulator stays small: the entry's import closure holds no verification or
performance tool (they may import the simulator side, never the other way round)."""

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("sw", "hw", "cosim", "apps", "fpga")


def _module_file(name: str) -> Path | None:
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def import_closure(start: str) -> set:
    """Every project module ``start`` imports, directly or through others, at module level or inside a
    function (read from the source with ``ast``; nothing is imported)."""
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level \
                    else node.module
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                if parts[0] in PACKAGES:
                    todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return seen


def test_the_simulator_side_imports_no_verification_or_performance_tool():
    closure = import_closure("cosim.sim.entry")
    assert {"cosim.sim.rtl", "cosim.sim.axi_monitor", "cosim.sim.coverage_dump", "sw.runtime"} <= closure
    assert sorted(m for m in closure if m.startswith(("cosim.verify", "cosim.perf", "apps", "fpga"))) == []


def test_the_walk_sees_function_level_imports():
    closure = import_closure("cosim.verify.coverage")
    assert "cosim.verify.regress" in closure          # imported inside main()
