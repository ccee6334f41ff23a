"""The on-chip SRAMs of the accelerator, sized from the config, and the port signatures to reach them.

=====  ===============  ===============================  ===================================
name   depth            row width (bits)                 written by / read by
=====  ===============  ===============================  ===================================
uop    UOP_DEPTH        32                               compute (LOAD UOP) / compute
inp    INP_DEPTH        BATCH*BLOCK_IN*8                 load / compute (GEMM)
wgt    WGT_DEPTH        BLOCK_OUT*BLOCK_IN*8             load / compute (GEMM)
acc    ACC_DEPTH        BATCH*BLOCK_OUT*32               compute / compute
out    ACC_DEPTH        BATCH*BLOCK_OUT*8                compute (OUT mirror of acc) / store
=====  ===============  ===============================  ===================================

The acc SRAM is reached by GEMM and the tensor ALU through a *write register*: a write reaches the
SRAM one cycle after the unit presents it on ``acc_wr`` (an FPGA timing choice: the register sits
beside the block RAMs, so the owner's writer multiplexer is not in series with the route to them),
and the read port is not transparent. A read presented in cycle t so returns the writes presented
up to t-2; each unit merges the ones the read missed from the history of its own write register
(:func:`merge_history`, :func:`merge_select`, :func:`merge_rows`). :func:`join_acc` joins a unit
to a memory that way (the unit tests); :class:`~hw.compute.Compute` does the same per bank.

Rows are the little-endian concatenation of the lanes: inp ``[batch][block_in]``, wgt
``[block_out][block_in]`` and acc/out ``[batch][block_out]``, lane 0 in the low bits. Every memory
has one synchronous write port and synchronous read ports (one cycle of read latency).

The memories shared between modules (inp, wgt, out) belong to the top level; a module that uses
one has a member ``In(write_signature(cfg, "inp"))`` (flipped: the module drives ``addr``,
``data`` and ``en``) and the top level joins it to the memory with
``wiring.connect(m, load.inp_wr, inp_mem.write_port())``.
"""

from collections.abc import Iterable, Sequence

from amaranth.hdl import Cat, Const, Module, Signal, Value
from amaranth.lib import memory, wiring
from amaranth.utils import exact_log2

from sw.config import Config

__all__ = ["SRAM_NAMES", "check_config", "parameter_error", "sram_geometry", "make_memory", "write_signature",
           "read_signature", "and_or", "join_acc", "merge_history", "merge_select", "merge_rows"]

SRAM_NAMES = ("uop", "inp", "wgt", "acc", "out")


def parameter_error(component: wiring.Component, message: str) -> ValueError:
    """A ValueError about a parameter of ``component``, which is then never elaborated (so no
    UnusedElaboratable warning is raised for it)."""
    component._MustUse__silence = True
    return ValueError(f"{type(component).__name__}: {message}")


def check_config(cfg: object, component: wiring.Component) -> None:
    """Raise a ValueError unless ``cfg`` is a validated :class:`sw.config.Config`."""
    from sw.config import Config
    if not isinstance(cfg, Config):
        raise parameter_error(component, f"cfg must be a sw.config.Config (see sw.config.load_config), "
                                         f"not {type(cfg).__name__}")


def sram_geometry(cfg: Config, name: str) -> tuple[int, int]:
    """(depth, row width in bits) of the SRAM ``name`` (one of uop, inp, wgt, acc, out)."""
    if name == "uop":
        return cfg.UOP_DEPTH, 32
    if name == "inp":
        return cfg.INP_DEPTH, cfg.INP_MATRIX_WIDTH
    if name == "wgt":
        return cfg.WGT_DEPTH, cfg.WGT_MATRIX_WIDTH
    if name == "acc":
        return cfg.ACC_DEPTH, cfg.ACC_MATRIX_WIDTH
    if name == "out":
        return cfg.ACC_DEPTH, cfg.OUT_MATRIX_WIDTH
    raise ValueError(f"SRAM name must be one of {', '.join(SRAM_NAMES)}, not {name!r}")


def make_memory(cfg: Config, name: str, init: Sequence[int] = ()) -> memory.Memory:
    """A :class:`amaranth.lib.memory.Memory` for the SRAM ``name``, zero-initialised."""
    depth, width = sram_geometry(cfg, name)
    return memory.Memory(shape=width, depth=depth, init=init)


def write_signature(cfg: Config, name: str) -> wiring.Signature:
    depth, width = sram_geometry(cfg, name)
    return memory.WritePort.Signature(addr_width=exact_log2(depth), shape=width)


def read_signature(cfg: Config, name: str) -> wiring.Signature:
    depth, width = sram_geometry(cfg, name)
    return memory.ReadPort.Signature(addr_width=exact_log2(depth), shape=width)


def and_or(choices: Iterable[tuple[Value, Value]], width: int) -> Value:
    """The value of the one choice whose (one-hot) select bit is set: the OR of AND-masked values
    (two LUT levels for four choices, no priority chain). ``choices``: (bit, value) pairs."""
    out = Const(0, width)
    for bit, value in choices:
        out = out | (bit.replicate(width) & value)
    return out


def join_acc(m: Module, unit: wiring.Component, mem: memory.Memory) -> None:
    """Join ``unit``'s ``acc_wr`` and ``acc_rd`` to the acc memory ``mem`` as the compute module does:
    writes through a register (they reach ``mem`` a cycle after the unit presents them), a read port
    that is not transparent."""
    wr = mem.write_port()
    m.d.sync += [wr.en.eq(unit.acc_wr.en), wr.addr.eq(unit.acc_wr.addr), wr.data.eq(unit.acc_wr.data)]
    wiring.connect(m, unit.acc_rd, mem.read_port())


def fan_out(m: Module, value: Value, n: int, name: str) -> list[Signal]:
    """``n`` copies of ``value`` two cycles later, through a register tree (registers ``<name>_copy...``,
    deliberate duplicates that the FPGA build keeps apart): one register per half of the copies, then
    one per copy. For a signal that the lanes of a unit use where the lanes follow their memory slices
    across the die: no route from the unit's control to a lane is longer than half the span (timing).
    The registers have no reset (nor its routes): give it values that have one, or that do not matter
    until then."""
    halves = [Signal.like(value, name=f"{name}_copy_h{h}", reset_less=True) for h in range(2)]
    m.d.sync += [h.eq(value) for h in halves]
    copies = [Signal.like(value, name=f"{name}_copy{i}", reset_less=True) for i in range(n)]
    m.d.sync += [c.eq(halves[2 * i // n]) for i, c in enumerate(copies)]
    return copies


def merge_history(m: Module, wr_q: Value, n: int, name: str) -> list[Value]:
    """``[wr_q, wr_q one cycle before, ..., n cycles before]``: the rows a unit presented for writing
    in this cycle and the ``n`` before (reset-less registers named ``<name>_<k>``)."""
    hist = [wr_q]
    for k in range(1, n + 1):
        r = Signal(len(wr_q), name=f"{name}_{k}", reset_less=True)
        m.d.sync += r.eq(hist[-1])
        hist.append(r)
    return hist


def merge_select(m: Module, name: str, lanes: int, addr: Value, writes: Sequence[tuple[Value, Value]],
                 tree: bool = False) -> list[Signal]:
    """Registered one-hot selects of a merge, one copy per lane (registers ``<name>_copy<i>``, kept
    apart in the FPGA build). ``writes``: (valid, row address) of candidate writes, the most recent
    first; bit k of a select is set when write k is the most recent one to ``addr``, the last bit when
    none is (keep the row as read). The compares are registered, then the selects (timing: compare,
    priority and fan-out in different cycles), so they select two cycles after ``addr`` and
    ``writes`` are given: pass them a stage early (a pipeline without stalls, where the stage
    before holds what the stage will hold a cycle later). ``tree``: the selects reach the lanes through
    one register per half of them (:func:`fan_out`), three cycles after: pass them two stages early; its
    registers have no reset (the ``valid`` flags they are computed from have one; timing: the reset's
    routes)."""
    hits = Signal(len(writes), name=f"{name}_hits", reset_less=tree)
    m.d.sync += hits.eq(Cat(*(valid & (dst == addr) for valid, dst in writes)))
    onehot, none_yet = [], Const(1, 1)
    for k in range(len(writes)):
        onehot.append(hits[k] & none_yet)
        none_yet = none_yet & ~hits[k]
    onehot.append(none_yet)
    if tree:
        return fan_out(m, Cat(*onehot), lanes, name)
    sel = [Signal(len(onehot), name=f"{name}_copy{i}") for i in range(lanes)]
    m.d.sync += [s.eq(Cat(*onehot)) for s in sel]
    return sel


def merge_rows(sel: Sequence[Value], sources: Sequence[Value], lanes: int) -> Value:
    """The row picked lane by lane by the one-hot selects of :func:`merge_select` from ``sources``
    (in the order of its writes, then the row as read)."""
    w = len(sources[0]) // lanes
    return Cat(*(and_or([(sel[i][k], src[i * w:(i + 1) * w]) for k, src in enumerate(sources)], w)
                 for i in range(lanes)))
