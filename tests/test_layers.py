"""The import contract of the source tree (docs/architecture.md §1.1), read from the code: every ``import`` of
every module of the product, also those inside functions, resolved to the module it names.

- what each package may import: ``sw`` nothing of ``hw``, ``cosim``, ``fpga`` or ``apps``; ``hw`` and ``fpga`` only
  the definitions and tools of ``sw`` (:data:`SW_BASE`); ``cosim`` not ``fpga`` or ``apps``; ``apps`` not ``hw`` or
  ``fpga``; inside ``sw`` the layers of :data:`SW_LAYERS` point down; ``cosim.sim`` nothing of ``cosim.verify`` or
  ``cosim.perf``;
- no module imports a private name (``_x``) of another package, nor reads one through a module it imported;
- no import cycle between modules.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sw", "hw", "cosim", "fpga", "apps")

# the definitions and tools of sw that the hardware side may use: the config, the ISA, the register map, the
# command-line frame and table formatting (each imports nothing of sw outside this set)
SW_BASE = ("sw.config", "sw.isa", "sw.registers", "sw.cli", "sw.tables")

# sw's layers, lowest first: a module imports only from its own layer and those below it
SW_LAYERS = (
    ("sw.config", "sw.isa", "sw.registers", "sw.cli", "sw.tables", "sw.pipeline", "sw.docs"),
    ("sw.fsim",),
    ("sw.targets",),
    ("sw.runtime",),
    ("sw.ops",),
    ("sw.testing",),
)

FORBIDDEN = {            # package -> the packages it must not import
    "sw": ("hw", "cosim", "fpga", "apps"),
    "hw": ("cosim", "fpga", "apps"),
    "fpga": ("cosim", "apps"),
    "cosim": ("fpga", "apps"),
    "apps": ("hw", "fpga"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def is_package(name: str) -> bool:
    return modules()[name].name == "__init__.py"


def resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package(importer):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def imports() -> dict[str, list[tuple[str, int, str | None]]]:
    """module -> [(imported module, line, imported name or None)] for the product's own modules."""
    mods = modules()
    out = {}
    for name, path in mods.items():
        found = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(a.name, node.lineno, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = resolve(name, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    found.append((sub, node.lineno, None) if sub in mods else (base, node.lineno, a.name))
        out[name] = [(m, line, what) for m, line, what in found if m.split(".")[0] in PACKAGES]
    return out


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_scan_sees_every_package_and_imports_inside_functions():
    mods = modules()
    assert {m.split(".")[0] for m in mods} == set(PACKAGES) and len(mods) > 150
    inner = [(m, i) for m, found in imports().items() for i in found if m == "sw.targets" and i[0] == "sw.fsim"]
    assert inner, "sw.targets imports sw.fsim inside make_target"


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_what_it_may(package):
    bad = []
    for mod, found in imports().items():
        if not within(mod, package):
            continue
        for target, line, _ in found:
            top = target.split(".")[0]
            if top in FORBIDDEN[package]:
                bad.append(f"{mod}:{line} imports {target}")
            elif package in ("hw", "fpga") and top == "sw" and not any(within(target, b) for b in SW_BASE):
                bad.append(f"{mod}:{line} imports {target} (hw and fpga use only {', '.join(SW_BASE)})")
    assert not bad, "\n".join(bad)


def sw_layer(module: str) -> int:
    return next(i for i, layer in enumerate(SW_LAYERS) for p in layer if within(module, p))


def test_sw_layers_point_down():
    bad = [f"{mod}:{line} imports {target}" for mod, found in imports().items() if within(mod, "sw")
           for target, line, _ in found if within(target, "sw") and target != "sw" and sw_layer(target) > sw_layer(mod)]
    assert not bad, "\n".join(bad)
    every = {m for m in modules() if within(m, "sw") and m != "sw"}
    assert all(sw_layer(m) >= 0 for m in every)        # every module of sw is in a layer (else StopIteration)


def test_the_simulator_side_of_cosim_imports_nothing_of_its_tools():
    bad = [f"{mod}:{line} imports {target}" for mod, found in imports().items() if within(mod, "cosim.sim")
           for target, line, _ in found if within(target, "cosim.verify") or within(target, "cosim.perf")]
    assert not bad, "\n".join(bad)


def top_package(module: str) -> str:
    return module.split(".")[0]


def test_no_private_name_crosses_a_package():
    bad = []
    mods = modules()
    for mod, found in imports().items():
        for target, line, what in found:
            if top_package(target) == top_package(mod):
                continue
            private = [p for p in target.split(".") if p.startswith("_") and not p.startswith("__")]
            if private or (what and what.startswith("_") and not what.startswith("__")):
                bad.append(f"{mod}:{line} imports {target}{'.' + what if what else ''}")
        # attribute reads through an imported module of another package: module._name
        tree = ast.parse(mods[mod].read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                base = resolve(mod, node)
                for a in node.names:
                    if f"{base}.{a.name}" in mods:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and top_package(aliases[node.value.id]) != top_package(mod)):
                bad.append(f"{mod}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = {m: {t for t, _, _ in found if t in modules() and t != m} for m, found in imports().items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):                                     # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)
