"""The token scheduler shared by the golden model and the runtime's dry run."""
import pytest

from sw.config import load_config
from sw.isa import Insn, MemId, Opcode, isa_for
from sw.pipeline import DeadlockError, InsnError, check_insn, schedule

CFG = load_config("default")
ISA = isa_for(CFG)


def insn(**f):
    kind = ISA.kind_of(f["opcode"])
    full = dict.fromkeys(ISA.formats[kind].fields, 0)
    full.update(f)
    return Insn(kind, full)


LOAD = lambda **f: insn(opcode=Opcode.LOAD, memory_type=MemId.INP, **f)
NOP_C = lambda **f: insn(opcode=Opcode.LOAD, memory_type=MemId.UOP, **f)
STORE = lambda **f: insn(opcode=Opcode.STORE, memory_type=MemId.OUT, **f)
FINISH = insn(opcode=Opcode.FINISH)


def test_pops_wait_for_pushes_and_order_is_respected():
    stream = [NOP_C(pop_prev=1, push_next=1), LOAD(push_next=1), STORE(pop_prev=1, push_prev=1),
              NOP_C(pop_next=1), FINISH]
    order = []
    tokens = schedule(CFG, stream, lambda i, _: order.append(i))
    assert order.index(1) < order.index(0) < order.index(2) < order.index(3) < order.index(4)
    assert tokens == {"l2g": 0, "g2l": 0, "g2s": 0, "s2g": 0}


def test_token_counts_accumulate():
    stream = [LOAD(push_next=1), LOAD(push_next=1), NOP_C(pop_prev=1), NOP_C(pop_prev=1), FINISH]
    assert schedule(CFG, stream)["l2g"] == 0


def test_deadlock_state():
    with pytest.raises(DeadlockError) as err:
        schedule(CFG, [STORE(pop_prev=1), FINISH, NOP_C(pop_next=1)], disasm=ISA.disasm)
    assert "left over" in str(err.value) or "deadlock" in str(err.value)


def test_finish_must_come_last():
    with pytest.raises(DeadlockError, match="left over"):
        schedule(CFG, [FINISH, NOP_C()])


def test_check_insn_accepts_nops_of_any_stage():
    for i in (LOAD(), NOP_C(), insn(opcode=Opcode.STORE, memory_type=MemId.UOP)):
        check_insn(CFG, i)
    with pytest.raises(InsnError, match="y_size = 0 with x_size = 1"):
        check_insn(CFG, LOAD(x_size=1, y_size=0))


def test_a_stream_that_could_overflow_a_token_queue_is_refused():
    """300 loads each push l2g before compute pops any: the 255-deep hardware queue would drop tokens."""
    n = 300
    stream = [LOAD(push_next=1) for _ in range(n)] + [NOP_C(pop_prev=1) for _ in range(n)]
    stream.append(insn(opcode=Opcode.FINISH))
    with pytest.raises(InsnError, match=r"token queue l2g could hold 300 tokens; the hardware holds at most 255"):
        schedule(CFG, stream)


def test_many_tokens_in_flight_one_at_a_time_are_accepted():
    """300 l2g tokens, each load waiting for compute's g2l token first: never more than one held."""
    n = 300
    stream = [LOAD(push_next=1)] + [LOAD(pop_next=1, push_next=1) for _ in range(n - 1)]
    stream += [NOP_C(pop_prev=1, push_prev=1) for _ in range(n - 1)] + [NOP_C(pop_prev=1)]
    stream.append(insn(opcode=Opcode.FINISH))
    assert all(v == 0 for v in schedule(CFG, stream).values())


def test_check_insn_refuses_depthwise_where_it_is_not_built():
    small = load_config("small")
    isa = isa_for(small)
    dw = Insn("gemm", dict.fromkeys(isa.formats["gemm"].fields, 0) | dict(opcode=Opcode.DEPTHWISE, uop_end=1,
                                                                            iter_out=1, iter_in=1))
    with pytest.raises(InsnError, match=r"^insn 3: opcode DEPTHWISE is not built in config small \(DEPTHWISE = 0\); "
                                        r"allowed: 0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, 4 ALU$"):
        check_insn(small, dw, where="insn 3")
    check_insn(CFG, insn(opcode=Opcode.DEPTHWISE, uop_end=1, iter_out=1, iter_in=1))      # built on default
