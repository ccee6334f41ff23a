"""The generated Verilog of a configuration, elaborated once and cached on disk by what it depends on.

Elaborating the accelerator in Amaranth takes seconds, so :func:`generate` keeps the result in
``<cache>/verilog/<config>-<digest>/``, where the digest hashes the Python sources the hardware is
built from (``hw/``, ``sw/isa.py``, ``sw/config.py``, ``sw/registers.py``) and the config's values. Beside
``vta_top.v`` it stores what the testbench and the runtime need to know about that Verilog without
importing Amaranth: the top's ports (from the same signatures the RTL is built from, as
SystemVerilog declarations in ``vta_ports.svh``) and the control register map (``interface.json``).

Within one process the result is also memoized, so co-simulation, the lint test and the resource
tools elaborate each config at most once per run: call :func:`generate` (or :func:`verilog_text`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from sw.config import Config, load_config

from .cache import cached_build

__all__ = ["Generated", "generate", "verilog_text", "source_digest", "source_files", "cache_dir"]

ROOT = Path(__file__).resolve().parents[2]
_MEMO: dict = {}


def cache_dir() -> Path:
    """Where generated Verilog and built models live (``$VTA_COSIM_CACHE``, else ``build/cosim``)."""
    return Path(os.environ.get("VTA_COSIM_CACHE", ROOT / "build" / "cosim"))


@dataclass(frozen=True)
class Generated:
    """One config's Verilog (``vta_top.v``), its port declarations and its interface facts."""
    cfg: Config
    directory: Path

    @property
    def verilog(self) -> Path:
        return self.directory / "vta_top.v"

    @property
    def ports_header(self) -> Path:
        return self.directory / "vta_ports.svh"

    @property
    def interface(self) -> dict:
        return json.loads((self.directory / "interface.json").read_text())

    def text(self) -> str:
        return self.verilog.read_text()


def source_files() -> list:
    """The Python files the generated files depend on (hw/, the ISA, config and register map of sw/, and this module)."""
    not_in_model = {"__main__.py"}   # the command line
    files = sorted(f for f in (ROOT / "hw").rglob("*.py") if f.name not in not_in_model)
    return files + [ROOT / "sw" / "isa.py", ROOT / "sw" / "config.py", ROOT / "sw" / "registers.py",
                    Path(__file__).resolve()]


def source_digest(cfg: Config) -> str:
    """A hash of everything the Verilog of ``cfg`` is generated from."""
    h = hashlib.sha256()
    for f in source_files():
        name = f.relative_to(ROOT) if f.is_relative_to(ROOT) else f.name
        h.update(str(name).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(repr(sorted(cfg.to_dict().items())).encode())
    return h.hexdigest()[:16]


def generate(config: Config | str | None = None, src: bool = False) -> Generated:
    """The Verilog of ``config``: memoized in the process, cached on disk, elaborated only when missing.
    ``src=True``: a separate copy that keeps Amaranth's ``src`` attributes (for code coverage)."""
    cfg = load_config(config)
    digest = source_digest(cfg)
    key = (cfg.name, digest, str(cache_dir()), src)
    if key in _MEMO:
        return _MEMO[key]
    out = Generated(cfg, cache_dir() / "verilog" / f"{cfg.name}-{'src-' if src else ''}{digest}")
    cached_build(out.directory, lambda directory: _elaborate(cfg, directory, src), stamp="interface.json")
    _MEMO[key] = out
    return out


def verilog_text(config: Config | str | None = None) -> str:
    """The Verilog text of ``config`` (see :func:`generate`)."""
    return generate(config).text()


def _elaborate(cfg: Config, directory: Path, src: bool = False):
    from amaranth.hdl import Shape
    from amaranth.lib import wiring

    from hw.top import CTL_ADDR_BITS, TRACE_LANES, Top, top_verilog
    from sw.registers import REGISTERS

    text = top_verilog(cfg, emit_src=src)
    if src:        # src paths relative to the project (hw/alu.py:12) or the site-packages (amaranth/lib/...)
        import amaranth
        text = text.replace(str(ROOT) + "/", "").replace(str(Path(amaranth.__file__).parent.parent) + "/", "")
    top = Top(cfg)
    top._MustUse__silence = True            # only its signature is read here; top_verilog elaborated its own
    lines = ["// Signals of vta_tb named like the ports of vta_top (generated from its signature)."]
    for name, member in top.signature.members.items():
        width = Shape.cast(member.shape).width
        kind = "input " if member.flow == wiring.In else "output"
        rng = f"[{width - 1}:0] " if width > 1 else ""
        lines.append(f"logic {rng}{name};   // vta_top {kind}")
    interface = {"bus_width": cfg.BUS_WIDTH, "ctl_addr_bits": CTL_ADDR_BITS, "trace_lanes": list(TRACE_LANES),
                 "registers": dict(REGISTERS)}
    _write(directory / "vta_top.v", text)
    _write(directory / "vta_ports.svh", "\n".join(lines) + "\n")
    _write(directory / "interface.json", json.dumps(interface, indent=1) + "\n")   # written last: the entry is whole


def _write(path: Path, text: str):
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
