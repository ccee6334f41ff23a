"""The board design in simulation (fpga.board.soc): accelerator, AXI RAM, launcher, built-in program, checker."""
from amaranth.sim import Simulator

from fpga.board import soc as board_soc
from fpga.board.program import test_program as program_image
from fpga.board.soc import BoardSoC
from sw.config import load_config

ULX3S = load_config("configs/ulx3s.json")


def run_board(cfg, cycles=3000):
    soc = BoardSoC(cfg, heartbeat_bit=4)
    sim = Simulator(soc)
    sim.add_clock(1e-8)
    out = {}

    async def bench(ctx):
        for i in range(cycles):
            await ctx.tick()
            if ctx.get(soc.leds) & 1:
                await ctx.tick().repeat(8)
                out["leds"], out["cycles"] = ctx.get(soc.leds), i
                return
        out["leds"] = ctx.get(soc.leds)
    sim.add_testbench(bench)
    sim.run()
    return out


def test_board_runs_builtin_program():
    out = run_board(ULX3S)
    assert "cycles" in out, f"no finish: leds {out['leds']:#010b}"
    leds = out["leds"]
    assert leds & 0b1111 == 0b1011, f"finish, correct, no error, launched expected: {leds:#010b}"


def test_board_checker_detects_wrong_result(monkeypatch):
    image, count, out_at, expected = program_image(ULX3S)
    wrong = bytes([expected[0] ^ 1]) + expected[1:]
    monkeypatch.setattr(board_soc, "test_program", lambda cfg, ram_bytes=4096: (image, count, out_at, wrong))
    leds = run_board(ULX3S)["leds"]
    assert leds & 0b1 and not leds & 0b10, f"{leds:#010b}"
