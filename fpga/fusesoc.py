"""A FuseSoC core of the accelerator for a config: the ``vta_shell`` Verilog and a CAPI=2 core file beside it.

    python -m fpga.fusesoc --config configs/default.json -o build/fusesoc

writes ``build/fusesoc/vta_shell.v`` (fpga.shell: the accelerator with vendor port names, docs/fpga.md) and
``build/fusesoc/openvta_vta_<config>.core``, a core named ``openvta:vta:vta_<config>:<version>`` with

* the fileset ``rtl`` (the Verilog) and the config's parameters as the core's description;
* target ``default``: ``vta_shell`` as the top level, for a user's own core to depend on;
* target ``lint``: Verilator in lint-only mode, its lint warnings fatal except the waivers the project's own
  Verilator builds use (hw.lint) and SYMRSVDWORD (the port ``interrupt``); ``fusesoc run --target lint`` passes;
* with ``--board ulx3s`` (needs the ``fpga`` extra): target ``ulx3s``, the board top of ``make bitstream``
  (fpga.board: on-chip RAM standing in for DRAM, the PLL, the self-test) as Verilog with its LPF constraints, for
  edalize's ``trellis`` flow (yosys, nextpnr-ecp5, ecppack on PATH).

Use it from another project: ``fusesoc library add openvta build/fusesoc`` then depend on
``openvta:vta:vta_<config>``, or ``fusesoc run --target lint openvta:vta:vta_<config>``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from hw.lint import LINT_WAIVERS
from sw.cli import command, run_as_main
from sw.config import ConfigError, load_config

__all__ = ["VENDOR", "LIBRARY", "VERSION", "core_name", "core_text", "write_core"]

VENDOR, LIBRARY, VERSION = "openvta", "vta", "0.1.0"

#: the ULX3S build of ``make bitstream``: ECP5-85F in the CABGA381 package
ULX3S_NEXTPNR = ["--85k", "--package", "CABGA381"]


def _name_part(text: str) -> str:
    """A config name as a FuseSoC name part (letters, digits, underscores)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_").lower()


def core_name(cfg) -> str:
    """The core's VLNV name for a config: ``openvta:vta:vta_<config>:0.1.0``."""
    return f"{VENDOR}:{LIBRARY}:vta_{_name_part(cfg.name)}:{VERSION}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def core_text(cfg, board_files: dict | None = None, freq_mhz: float | None = None) -> str:
    """The CAPI=2 core file; ``board_files`` ({"verilog": name, "lpf": name}) adds the ``ulx3s`` target."""
    params = ", ".join(f"{k}={getattr(cfg, k)}" for k in ("LOG_BATCH", "LOG_BLOCK_IN", "LOG_BLOCK_OUT", "LOG_INP_WIDTH",
                                                          "LOG_WGT_WIDTH", "LOG_ACC_WIDTH", "LOG_BUS_WIDTH", "ALU_MUL",
                                                          "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE",
                                                          "LOG_ACC_BUFF_SIZE"))
    # the project's waivers, and SYMRSVDWORD: the shell's port `interrupt` (Vivado's name) is also a C++ word
    lint = ", ".join(_quote(o) for o in [*LINT_WAIVERS, "-Wno-SYMRSVDWORD"])
    description = (f"OpenVTA accelerator, config {cfg.name} ({params}): vta_shell, an AXI4 master to DRAM "
                   f"({cfg.BUS_WIDTH}-bit data) and AXI4-Lite control registers (docs/registers.md)")
    lines = [
        "CAPI=2:",
        f"name: {core_name(cfg)}",
        f"description: {_quote(description)}",
        "",
        "filesets:",
        "  rtl:",
        "    files:",
        "      - vta_shell.v",
        "    file_type: verilogSource",
    ]
    if board_files:
        lines += [
            "  ulx3s:",
            "    files:",
            f"      - {board_files['verilog']}: {{file_type: verilogSource}}",
            f"      - {board_files['lpf']}: {{file_type: LPF}}",
        ]
    lines += [
        "",
        "targets:",
        "  default:",
        "    filesets: [rtl]",
        "    toplevel: vta_shell",
        "  lint:",
        "    default_tool: verilator",
        "    filesets: [rtl]",
        "    toplevel: vta_shell",
        "    tools:",
        "      verilator:",
        "        mode: lint-only",
        f"        verilator_options: [{lint}]",
    ]
    if board_files:
        freq = f", \"--freq\", \"{freq_mhz:g}\"" if freq_mhz else ""
        lines += [
            "  ulx3s:",
            "    default_tool: trellis",
            "    filesets: [ulx3s]",
            "    toplevel: top",
            "    tools:",
            "      trellis:",
            f"        nextpnr_options: [{', '.join(_quote(o) for o in ULX3S_NEXTPNR)}{freq}]",
        ]
    return "\n".join(lines) + "\n"


def _board_files(cfg, out: Path, freq_mhz: float) -> dict:
    """The ULX3S board top of fpga.board as Verilog (the amaranth build plan's debug Verilog, written by its built-in
    Yosys) and its LPF constraints, into ``out``."""
    import tempfile

    from .board.build import board_plan

    with tempfile.TemporaryDirectory() as plan_dir:
        plan, _ = board_plan("ulx3s", cfg, freq_mhz, plan_dir, debug_verilog=True)
    (out / "ulx3s_top.v").write_text(plan.files["top.debug.v"])
    (out / "ulx3s_top.lpf").write_text(plan.files["top.lpf"])
    return {"verilog": "ulx3s_top.v", "lpf": "ulx3s_top.lpf"}


def write_core(config, out, board: str | None = None, freq_mhz: float = 100.0) -> Path:
    """Write the Verilog and the core file of ``config`` into ``out``; return the core file's path."""
    from .shell import HEADER, shell_verilog

    cfg = load_config(config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "vta_shell.v").write_text(HEADER.format(cfg=cfg, bus=cfg.BUS_WIDTH) + shell_verilog(cfg))
    board_files = _board_files(cfg, out, freq_mhz) if board == "ulx3s" else None
    path = out / f"{core_name(cfg).split(':')[2]}.core"
    path.write_text(core_text(cfg, board_files, freq_mhz if board_files else None))
    return path


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="config JSON (default: $VTA_CONFIG or configs/default.json)")
    parser.add_argument("-o", "--output", default="build/fusesoc", help="directory of the core")
    parser.add_argument("--board", default=None, choices=("ulx3s",), help="also the board build target (fpga extra)")
    parser.add_argument("--freq", type=float, default=100.0, help="with --board: the PLL clock, MHz")
    args = parser.parse_args(argv)
    try:
        path = write_core(args.config, args.output, args.board, args.freq)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({core_name(load_config(args.config))}) and {path.parent / 'vta_shell.v'}")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
