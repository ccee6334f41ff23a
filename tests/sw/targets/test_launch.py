"""The launch sequence every hardware target runs (sw.targets.launch), driven through a register file of a dict."""
import pytest

from sw.config import load_config
from sw.pipeline import VTAError
from sw.registers import REGISTER_MAP
from sw.targets import launch
from sw.targets.launch import AxiResponseError, RunTimeout, WatchdogError

CFG = load_config("small")
FINISHED = launch.Stop(launch.FINISHED)


class Registers:
    """Executes the operations on a dict of register values; ``stop`` is what Wait returns; ``ops`` the log."""

    def __init__(self, stop=FINISHED, **values):
        self.values = {r.name: 0 for r in REGISTER_MAP}
        self.values.update(values)
        self.stop, self.ops = stop, []

    def __call__(self, op):
        self.ops.append(op)
        if isinstance(op, launch.Write):
            self.values[op.name] = op.value
        elif isinstance(op, launch.Read):
            return self.values[op.name]
        elif isinstance(op, launch.Wait):
            return self.stop
        return None


def _run(regs, insn_addr=0x400, insn_count=7, window=0x10000000):
    return launch.run_sync(launch.launch(CFG, bytes(0x1000), insn_addr, insn_count, window), regs)


def test_a_finished_run_writes_the_launch_and_returns_the_counters():
    regs = Registers(cycles=882, alu_counter=64, control=2)
    counters = _run(regs)
    host = [(op.name, op.value) for op in regs.ops if isinstance(op, launch.Write)]
    assert host == [("insn_count", 7), ("insn_addr", 0x10000400), ("uop_addr", 0x10000000), ("inp_addr", 0x10000000),
                    ("wgt_addr", 0x10000000), ("acc_addr", 0x10000000), ("out_addr", 0x10000000)]
    kinds = [type(op).__name__ for op in regs.ops]
    assert kinds[7:9] == ["Launch", "Wait"] and kinds[-1] == "Check" and "Reset" not in kinds
    assert [op.name for op in regs.ops if isinstance(op, launch.Read)] == list(launch.counter_registers())
    assert regs.ops[-1] == launch.Check(False)
    assert list(counters)[:8] == ["inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                                  "out_store_nbytes", "gemm_counter", "alu_counter", "cycles"]
    assert (counters["cycles"], counters["alu_counter"]) == (882, 64)
    assert not set(launch.NOT_COUNTERS) & set(counters)


def test_an_error_code_resets_and_is_named():
    regs = Registers(status=1 << 8 | 0b110, insn_fetched=0, cycles=33)
    with pytest.raises(VTAError, match=r"^the accelerator stopped on an error: BAD_OPCODE \(code 1\)\n"
                                       r"  status 0x106, 0 instructions fetched, cycles 33\n"):
        _run(regs)
    assert [type(op).__name__ for op in regs.ops[-2:]] == ["Reset", "Check"] and regs.ops[-1] == launch.Check(True)


@pytest.mark.parametrize("stop, error, text", [
    (launch.Stop(launch.WATCHDOG, "2000 cycles"), WatchdogError,
     "the accelerator made no progress for 2000 cycles (cycle 2100 of the run):\n"),
    (launch.Stop(launch.TIMEOUT, "wait_cycles = 50"), RunTimeout, "the run did not finish within wait_cycles = 50:\n"),
])
def test_a_stopped_run_resets_and_says_which_limit(stop, error, text):
    regs = Registers(stop, cycles=2100)
    with pytest.raises(error) as info:
        _run(regs)
    assert str(info.value).startswith(text) and "fetch is idle" in str(info.value)
    assert any(isinstance(op, launch.Reset) for op in regs.ops)


def test_an_axi_error_names_the_channel_and_the_offset_in_device_memory():
    regs = Registers(status=5 << 8 | 0b110, axi_error=3 | 0 << 4, axi_error_addr=0x10000440)
    with pytest.raises(AxiResponseError, match=r"DECERR on the read channel for the fetch module \(instructions\), "
                                               r"burst at 0x440, instruction words #4\.\.") as info:
        _run(regs)
    assert (info.value.channel, info.value.client, info.value.response, info.value.address) == \
        ("read", "fetch", "DECERR", 0x440)


def test_a_window_the_base_registers_cannot_reach_is_refused_before_any_register_is_written():
    assert launch.window_alignment(0x1000) == 0x1000 and launch.window_alignment(48 << 20) == 64 << 20
    assert launch.check_window(0xFC000000, 64 << 20) == 0xFC000000
    regs = Registers()
    with pytest.raises(ValueError, match=r"window base = 2048; allowed: a multiple of 0x1000 in \[0, 0xfffff000\]"):
        _run(regs, window=0x800)
    assert regs.ops == []
