"""The directed programs of make coverage (cosim.verify.directed_suite running cosim.verify.directed): each error
the hardware reports, the AXI error responses, the register sweep (every writable bit set and cleared), the field
sweep, token traffic, transfers stopped by an AXI error, the index sweep; all as expected."""
import numpy as np
import pytest

import cosim
from cosim.verify import directed, directed_suite
from sw.config import load_config
from sw.isa import AluOp, Opcode


@pytest.fixture(scope="module")
def results():
    return cosim.run_many(directed_suite.directed_calls("small"), config="small", watchdog_cycles=2000)


def test_directed_programs_do_what_they_must(results):
    assert directed_suite.check_directed(results) == []
    assert results[6]["far"] == 0                        # an unmapped word at the end of the window reads 0
    assert set(results[6]["ones"]) == {0x04, 0x08, 0x0C, 0x10, 0x14, 0x18, 0x1C, 0x20}     # cycles and the host registers
    assert results[14]["counters"]["insn_fetched"] == 17 and results[14]["counters"]["gemm_counter"] == 0
    assert results[16]["window"] == 0xFC000000           # 64 MiB of device memory at the top of the 32-bit bus
    cases = [(mem, case) for mem, case, *_ in results[18]]
    assert cases[-1] == ("all", "small") and results[18][-1][4]["error"] is None
    cases = cases[:-1]
    assert len(cases) == 29 and cases[:5] == [("INP", "wide"), ("INP", "allbits"), ("INP", "mixed"), ("INP", "mixed2"),
                                              ("INP", "tall")]
    assert ("UOP", "tall") not in cases                   # a UOP load is one row
    # fetch refuses the ALU opcodes small does not build (MUL, POST) as it refuses 6 and 7, and DEPTHWISE (opcode 5)
    assert [r["code"] for r in results[21]] == [code for code, _ in directed.FETCH_REFUSALS] + ["BAD_ALU_OPCODE"] * 2 \
        + ["BAD_OPCODE"]
    assert len(results) == 28                             # no DEPTHWISE program on small


def test_refusals_name_the_opcodes_a_config_does_not_build():
    def unbuilt(config):
        return [(code, insn["opcode"], insn.get("alu_opcode"))
                for code, insn in directed.refusals_of(load_config(config))[len(directed.FETCH_REFUSALS):]]
    assert unbuilt("small") == [("BAD_ALU_OPCODE", Opcode.ALU, AluOp.MUL), ("BAD_ALU_OPCODE", Opcode.ALU, AluOp.POST),
                                ("BAD_OPCODE", Opcode.DEPTHWISE, None)]
    assert unbuilt("default") == [] and unbuilt("batch2") == []


def test_the_depthwise_program_is_listed_on_configs_with_depthwise():
    """Call 27 on default (its edges; the counters-clearing empty ALU stays last), none on small."""
    small, default = directed_suite.directed_calls("small"), directed_suite.directed_calls("default")
    assert len(small) == 28 and len(default) == 29
    assert default[27][0] is directed.depthwise_window and default[:27] == small[:27]
    assert small[-1][0] is default[-1][0] is directed.empty_alu


def test_a_wrong_result_is_reported(results):
    results = list(results)
    results[14] = dict(results[14], changed=3)
    results[9] = dict(results[9], error=None)
    results[16] = dict(results[16], sweep=dict(results[16]["sweep"], error="VTAError", message="outside"))
    mem, case, channel, beat, r = results[18][0]
    results[18] = [(mem, case, channel, beat, dict(r, changed=5))] + results[18][1:]
    bad = directed_suite.check_directed(results)
    assert not any(b.startswith("depthwise_window") for b in bad)      # small: no DEPTHWISE result to check
    assert any(b.startswith("field_sweep: None") and "3 bytes changed" in b for b in bad)
    assert any(b.startswith("SLVERR on read beat 0: expected an AxiResponseError") for b in bad)
    assert "address sweep at 0xfc000000: VTAError outside" in bad
    assert any(b.startswith("huge_transfers INP wide: expected a DECERR on read beat") and "5 bytes changed" in b
               for b in bad)
    # on a config with DEPTHWISE its edges are call 27: a wrong byte is named
    planes = np.zeros((4, 3, 1, 8), np.int8)
    wrong = dict(error=None, message="", result=planes, expected=planes.copy())
    wrong["expected"][2, 1, 0, 5] = 1
    dw = results[:27] + [wrong] + results[27:]
    assert "depthwise_window: None , 1 bytes differ from the reference" in directed_suite.check_directed(dw)
    assert not any(b.startswith("depthwise_window") for b in directed_suite.check_directed(
        results[:27] + [dict(wrong, expected=planes)] + results[27:]))
