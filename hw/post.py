"""The post-processing unit: the fixed chain of ALU steps that ALU opcode POST applies to an accumulator row
(docs/architecture.md §2.8), one row per cycle."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STAGE, POST_RESIDUAL_STEPS, POST_STAGES, AluOp

from .lanes import shift_amount
from .sram import check_config

__all__ = ["PostChain"]


class PostChain(wiring.Component):
    """:data:`~sw.isa.POST_STAGES` on BATCH*BLOCK_OUT int32 lanes, pipelined: a row in at ``valid_in`` leaves
    :attr:`latency` cycles later on ``valid`` with its ``dst`` and ``last`` tags. Stage k computes, per lane,
    ``alu_op(POST_STAGES[k], x, p[k])`` (:func:`sw.fsim.alu.post_op`): MAX/MIN signed, ADD wrapping, SHR by the
    signed operand (right arithmetic by min(p, 31), left by min(-p, 31)), MUL the low 32 bits of x times p;
    with ``use_r`` high the row's residual ``r_in``, taken through :data:`~sw.isa.POST_RESIDUAL_STEPS` (MUL, ADD:
    operands ``p[14]``, ``p[15]``) on its way, is added at stage :data:`~sw.isa.POST_RESIDUAL_STAGE` after that
    stage's ADD.

    The operands are registers written a row at a time (``p_we``, ``p_idx`` = the stage, ``p_row`` = one
    int32 per lane); a write takes effect for the rows that enter after it. SHR stages keep their operand
    as (direction, amount) (:func:`~hw.lanes.shift_amount`).

    Members: ``valid_in``, ``last_in``, ``use_r`` In(1), ``dst_in`` In(LOG_ACC_DEPTH), ``x_in``, ``r_in``,
    ``p_row`` In(ACC_MATRIX_WIDTH), ``p_we`` In(1), ``p_idx`` In(4); ``valid``, ``last`` Out(1), ``dst``
    Out(LOG_ACC_DEPTH), ``y`` Out(ACC_MATRIX_WIDTH); ``busy`` Out(1): a row is in the chain.
    """

    latency = len(POST_STAGES)

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        row = cfg.ACC_MATRIX_WIDTH
        super().__init__({
            "valid_in": In(1), "last_in": In(1), "use_r": In(1),
            "dst_in": In(max(cfg.LOG_ACC_DEPTH, 1)),
            "x_in": In(row), "r_in": In(row),
            "p_we": In(1), "p_idx": In(range(POST_PARAM_ROWS)), "p_row": In(row),
            "valid": Out(1), "last": Out(1), "dst": Out(max(cfg.LOG_ACC_DEPTH, 1)), "y": Out(row),
            "busy": Out(1),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        w = cfg.ACC_WIDTH
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        sw_bits = 1 + cfg.LOG_ACC_WIDTH

        def lane(row, i):
            return row[i * w:(i + 1) * w]

        # the operand registers, per stage and lane, in the form the stage uses
        params = []
        for k, op in enumerate(POST_STAGES + POST_RESIDUAL_STEPS):
            width = sw_bits if op == AluOp.SHR else w
            regs = [Signal(width, name=f"p{k}_{op.name.lower()}_{i}", reset_less=True) for i in range(lanes)]
            with m.If(self.p_we & (self.p_idx == k)):
                for i, r in enumerate(regs):
                    v = lane(self.p_row, i)
                    m.d.sync += r.eq(Cat(*shift_amount(v)) if op == AluOp.SHR else v[:width])
            params.append(regs)

        valid, last, dst = self.valid_in, self.last_in, self.dst_in
        stage_valid = []
        x = [lane(self.x_in, i) for i in range(lanes)]
        r = [lane(self.r_in, i) for i in range(lanes)]
        # a stage's values change only with a row in the stage before it (they are meaningless without one; the
        # simulation then skips the stage's arithmetic)
        for k, op in enumerate(POST_STAGES):
            nx = [Signal(signed(w), name=f"s{k}_x{i}", reset_less=True) for i in range(lanes)]
            moving = []
            for i in range(lanes):
                a, p = x[i].as_signed(), params[k][i]
                if op == AluOp.ADD:
                    v = a + p.as_signed()
                    if k == POST_RESIDUAL_STAGE:
                        v = v + Mux(self.use_r, r[i].as_signed(), 0)
                elif op == AluOp.MAX:
                    v = Mux(a < p.as_signed(), p, a)
                elif op == AluOp.MIN:
                    v = Mux(a < p.as_signed(), a, p)
                elif op == AluOp.MUL:
                    v = a * p.as_signed()
                else:
                    left, amount = p[0], p[1:]
                    v = Mux(left, (a << amount)[:w], a >> amount)
                moving.append(nx[i].eq(v[:w]))
            x = nx
            if k < POST_RESIDUAL_STAGE:
                # the residual travels beside the row, its own steps applied in the first stages
                nr = [Signal(w, name=f"s{k}_r{i}", reset_less=True) for i in range(lanes)]
                j = k if k < len(POST_RESIDUAL_STEPS) else None
                for i in range(lanes):
                    if j is None:
                        moving.append(nr[i].eq(r[i]))
                        continue
                    rp = params[len(POST_STAGES) + j][i].as_signed()
                    v = r[i].as_signed() * rp if POST_RESIDUAL_STEPS[j] == AluOp.MUL else r[i].as_signed() + rp
                    moving.append(nr[i].eq(v[:w]))
                r = nr
            with m.If(valid):
                m.d.sync += moving
            nv, nl = Signal(name=f"s{k}_valid"), Signal(name=f"s{k}_last")
            nd = Signal.like(self.dst_in, name=f"s{k}_dst", reset_less=True)
            m.d.sync += [nv.eq(valid), nl.eq(last), nd.eq(dst)]
            valid, last, dst = nv, nl, nd
            stage_valid.append(nv)
        m.d.comb += [self.valid.eq(valid), self.last.eq(last), self.dst.eq(dst), self.y.eq(Cat(*x)),
                     self.busy.eq(Cat(*stage_valid).any())]
        return m
