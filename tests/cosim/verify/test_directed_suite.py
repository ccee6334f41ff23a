"""The directed programs of make coverage (cosim.verify.directed_suite running cosim.verify.directed): each error
the hardware reports, the AXI error responses, the register sweep (every writable bit set and cleared), the field
sweep, token traffic, transfers stopped by an AXI error, the index sweep; all as expected."""
import pytest

import cosim
from cosim.verify import directed, directed_suite
from sw.config import load_config
from sw.isa import AluOp


@pytest.fixture(scope="module")
def results():
    return cosim.run_many(directed_suite.directed_calls(), config="small", watchdog_cycles=2000)


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
    # fetch refuses the ALU opcodes small does not build (MUL, POST) as it refuses 6 and 7
    assert [r["code"] for r in results[21]] == [code for code, _ in directed.FETCH_REFUSALS] + ["BAD_ALU_OPCODE"] * 2


def test_refusals_name_the_alu_opcodes_a_config_does_not_build():
    def alu_opcodes(config):
        return [insn["alu_opcode"] for _, insn in directed.refusals_of(load_config(config))[len(directed.FETCH_REFUSALS):]]
    assert alu_opcodes("small") == [AluOp.MUL, AluOp.POST] and alu_opcodes("default") == []


def test_a_wrong_result_is_reported(results):
    results = list(results)
    results[14] = dict(results[14], changed=3)
    results[9] = dict(results[9], error=None)
    results[16] = dict(results[16], sweep=dict(results[16]["sweep"], error="VTAError", message="outside"))
    mem, case, channel, beat, r = results[18][0]
    results[18] = [(mem, case, channel, beat, dict(r, changed=5))] + results[18][1:]
    bad = directed_suite.check_directed(results)
    assert any(b.startswith("field_sweep: None") and "3 bytes changed" in b for b in bad)
    assert any(b.startswith("SLVERR on read beat 0: expected an AxiResponseError") for b in bad)
    assert "address sweep at 0xfc000000: VTAError outside" in bad
    assert any(b.startswith("huge_transfers INP wide: expected a DECERR on read beat") and "5 bytes changed" in b
               for b in bad)
