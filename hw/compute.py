"""The compute module: GEMM (and DEPTHWISE), ALU, FINISH and the LOADs of UOP, ACC and ACC_8BIT."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.isa import INS_WIDTH, MEMOP_SIZE_BITS, MemId, Opcode, alu_opcodes

from .alu import Alu
from .footprint import AccFootprint
from .gemm import Gemm, registered_mul
from .interfaces import ADDR_BITS, TokenPopSignature, TokenPushSignature, dma_read_signature
from .layouts import insn_layouts
from .load import TensorLoad, dma_read_mux
from .sram import and_or, check_config, make_memory, read_signature

__all__ = ["Compute"]


class Compute(wiring.Component):
    """The compute module (docs/architecture.md §2.7-§2.9): GEMM and ALU units side by side, FINISH, and the
    LOADs of UOP, ACC and ACC_8BIT.

    Instructions come in order from ``insn``. A GEMM or ALU instruction is issued to its unit once the unit
    is free and either the other unit is idle or both acc footprints (:class:`~hw.footprint.AccFootprint`)
    lie in different banks (halves) of the acc SRAM, so instructions that can touch the same acc row never
    overlap. It pops its tokens at issue (``pop_prev``: l2g, ``pop_next``: s2g); its pushes (``push_prev``:
    g2l, ``push_next``: g2s) leave in program order, one per cycle per queue, after it ends. LOADs and
    FINISH run after every older instruction has ended and pushed, except a LOAD UOP that pushes nothing
    and writes none of the running instructions' micro-ops, and a LOAD ACC / ACC_8BIT that pushes nothing
    and writes one bank only (younger GEMM/ALU instructions on the other bank issue beside it, one at a time).

    * LOAD UOP / ACC / ACC_8BIT: a :class:`~hw.load.TensorLoad` into the uop or acc SRAM (x_size = 0 is a
      NOP); ACC_8BIT sign-extends int8 lanes. DRAM addresses are ORed with ``uop_base`` / ``acc_base``.
    * GEMM: :class:`~hw.gemm.Gemm`; ALU: :class:`~hw.alu.Alu` (their latencies are theirs).
    * FINISH: pulses ``finish`` for one cycle, in the cycle of its pops and before its pushes.

    Every acc write also writes the low 8 bits of each lane to the same row of the out SRAM (the OUT mirror),
    which the store module reads through ``out_rd``. A bad instruction (STORE, LOAD of INP/WGT/OUT or an
    unknown memory type, an unknown opcode, MUL when ``cfg.ALU_MUL`` = 0) sets the sticky ``error`` before
    popping any token and stops the front end until ``clear``.

    Members:
        ``insn``        In(stream of 128 bits)
        ``dma``         Out(DMA read client)    UOP, ACC and ACC_8BIT loads
        ``inp_rd``, ``wgt_rd``  In(SRAM read port)  the inp and wgt SRAMs
        ``out_rd``      Out(SRAM read port)  the out SRAM, for the store
        ``l2g``, ``s2g``  Out(TokenPopSignature)   (pop_prev, pop_next)
        ``g2l``, ``g2s``  Out(TokenPushSignature)  (push_prev, push_next)
        ``uop_base``, ``acc_base``  In(32)
        ``finish``      Out(1)  one-cycle pulse per FINISH
        ``acc_writes``  Out(32) acc rows written (control register 0x24)
        ``gemm_uops``   Out(32) non-reset GEMM micro-ops executed (fsim gemm_counter)
        ``alu_uops``    Out(32) ALU micro-ops executed
        ``busy``        Out(1)  an instruction is in progress (including waiting for tokens)
        ``stall``       Out(1)  waiting for a token with neither unit running
        ``error``       Out(1)  sticky, a bad instruction stopped the module
        ``clear``       In(1)   leave the error halt (clears ``error``; ignored unless halted)

    Attributes for tests: the units ``gemm`` and ``alu``; the SRAMs ``uop_mem`` and ``acc_banks`` /
    ``out_banks`` (rows [0, D/2) and [D/2, D) of acc depth D; one bank when D is 1).
    """

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "insn": In(stream.Signature(INS_WIDTH)),
            "dma": Out(dma_read_signature(cfg.BUS_WIDTH)),
            "inp_rd": In(read_signature(cfg, "inp")),
            "wgt_rd": In(read_signature(cfg, "wgt")),
            "out_rd": Out(read_signature(cfg, "out")),
            "l2g": Out(TokenPopSignature),
            "s2g": Out(TokenPopSignature),
            "g2l": Out(TokenPushSignature),
            "g2s": Out(TokenPushSignature),
            "uop_base": In(ADDR_BITS),
            "acc_base": In(ADDR_BITS),
            "finish": Out(1),
            "acc_writes": Out(32),
            "gemm_uops": Out(32),
            "alu_uops": Out(32),
            "busy": Out(1),
            "stall": Out(1),
            "error": Out(1),
            "clear": In(1),
        })
        self.uop_mem = make_memory(cfg, "uop")
        self.gemm = Gemm(cfg)
        self.alu = Alu(cfg)
        nbanks = 2 if cfg.LOG_ACC_DEPTH >= 1 else 1
        self.acc_banks = [memory.Memory(shape=cfg.ACC_MATRIX_WIDTH, depth=cfg.ACC_DEPTH // nbanks, init=())
                          for _ in range(nbanks)]
        self.out_banks = [memory.Memory(shape=cfg.OUT_MATRIX_WIDTH, depth=cfg.ACC_DEPTH // nbanks, init=())
                          for _ in range(nbanks)]

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        aw = cfg.LOG_ACC_DEPTH
        m.submodules.uop_mem = self.uop_mem
        uop_wr = self.uop_mem.write_port()

        m.submodules.gemm = gemm = self.gemm
        m.submodules.alu = alu = self.alu
        m.submodules.footprint = fp = AccFootprint(cfg)
        m.submodules.ld_uop = ld_uop = TensorLoad(cfg, elem_bytes=cfg.UOP_ELEM_BYTES, depth=cfg.UOP_DEPTH)
        m.submodules.ld_acc = ld_acc = TensorLoad(cfg, elem_bytes=cfg.ACC_ELEM_BYTES, depth=cfg.ACC_DEPTH)
        m.submodules.ld_acc8 = ld_acc8 = TensorLoad(cfg, elem_bytes=cfg.OUT_ELEM_BYTES, depth=cfg.ACC_DEPTH)
        wiring.connect(m, gemm.inp_rd, wiring.flipped(self.inp_rd))
        wiring.connect(m, gemm.wgt_rd, wiring.flipped(self.wgt_rd))
        wiring.connect(m, ld_uop.wr, uop_wr)
        # one uop read port each for GEMM, ALU and the footprint scanner (the uop SRAM is written only
        # while neither unit runs)
        for user in (gemm, alu, fp):
            wiring.connect(m, user.uop_rd, self.uop_mem.read_port())

        word = Signal(INS_WIDTH, reset_less=True)
        layouts = insn_layouts(cfg)
        mem = layouts["mem"](word)
        gem = layouts["gemm"](word)
        alu_insn = layouts["alu"](word)
        for t in (ld_uop, ld_acc, ld_acc8):
            m.d.comb += t.insn.eq(word)
        m.d.comb += [gemm.insn.eq(word), alu.insn.eq(word), fp.insn.eq(word),
                     ld_uop.base.eq(self.uop_base), ld_acc.base.eq(self.acc_base),
                     ld_acc8.base.eq(self.acc_base)]
        dma_sel = Signal(2)
        dma_read_mux(m, self.dma, [ld_uop.dma, ld_acc.dma, ld_acc8.dma], dma_sel)

        # ------------------------------------------------------------ issue slots (GEMM, ALU)
        # A slot is taken from issue until its unit's ``done``. Pushes leave in program order: the
        # pushes of an instruction that ends while an older one (the head) still runs are held
        # (``held_*``) until the head ends; ended pushes queue in ``due_*`` and leave one per cycle.
        units: tuple[wiring.Component, ...] = (gemm, alu)
        # an acc load running beside younger GEMMs (``ld_side``: the load pushes nothing and its rows
        # lie in one bank, ``ld_bank``; decided in DRAIN from the row count multiplied out in DECODE)
        ld_taken = Signal()
        ld_bank = Signal()
        taken = [Signal(name=f"taken_{n}") for n in ("gemm", "alu")]
        head = Signal()                      # the older slot when both are taken
        bank_of = [Signal(name=f"bank_{n}") for n in ("gemm", "alu")]
        single_of = [Signal(name=f"single_{n}") for n in ("gemm", "alu")]
        push_p = [Signal(name=f"push_prev_{n}") for n in ("gemm", "alu")]
        push_n = [Signal(name=f"push_next_{n}") for n in ("gemm", "alu")]
        issue = [Signal(name=f"issue_{n}") for n in ("gemm", "alu")]
        uops_of = [(Signal(cfg.LOG_UOP_DEPTH + 1, name=f"uop_bgn_{n}"), Signal(cfg.LOG_UOP_DEPTH + 1, name=f"uop_end_{n}"))
                   for n in ("gemm", "alu")]
        ends = [Signal(name=f"ends_{n}") for n in ("gemm", "alu")]
        run = taken
        # the ALU may read a repeated source row once (hw.footprint ``apart``) and run micro-ops one per
        # cycle (``distinct``)
        alu_apart, alu_distinct, alu_increasing = Signal(), Signal(), Signal()
        with m.If(issue[1]):
            m.d.sync += [alu_apart.eq(fp.apart), alu_distinct.eq(fp.distinct), alu_increasing.eq(fp.increasing)]
        m.d.comb += [alu.src_apart.eq(alu_apart), alu.dst_distinct.eq(alu_distinct),
                     alu.dst_increasing.eq(alu_increasing)]
        for k, u in enumerate(units):
            # the unit starts in the cycle after its issue, from a register (its start fans out to
            # the whole loop sequencer: timing); ``word`` still holds the instruction then
            start_q = Signal(name=f"start_{('gemm', 'alu')[k]}")
            m.d.sync += start_q.eq(issue[k])
            m.d.comb += [u.start.eq(start_q), ends[k].eq(taken[k] & u.done)]
            with m.If(issue[k]):
                m.d.sync += [taken[k].eq(1), bank_of[k].eq(fp.bank), single_of[k].eq(fp.single),
                             push_p[k].eq(mem.push_prev), push_n[k].eq(mem.push_next),
                             uops_of[k][0].eq(gem.uop_bgn), uops_of[k][1].eq(gem.uop_end)]
            with m.Elif(ends[k]):
                m.d.sync += taken[k].eq(0)
        head_ends = Mux(head, ends[1], ends[0])
        with m.If(issue[0] & (~taken[1] | ends[1])):
            m.d.sync += head.eq(0)
        with m.Elif(issue[1] & (~taken[0] | ends[0])):
            m.d.sync += head.eq(1)
        with m.Elif(head_ends):
            m.d.sync += head.eq(~head)
        both_free = ~taken[0] & ~taken[1]
        fe_push = Signal()
        pushes_out = Signal()
        for port, flags, fe_flag, name in ((self.g2l, push_p, mem.push_prev, "g2l"),
                                           (self.g2s, push_n, mem.push_next, "g2s")):
            # (as wide as a token queue can count: more held pushes than that would overflow the queue)
            # (``due_held`` = due + held, kept as a register: each count then takes one adder, not two
            # in series after the units' ``done``: timing)
            held, due = Signal(9, name=f"held_{name}"), Signal(9, name=f"due_{name}")
            due_held = Signal(9, name=f"due_held_{name}")
            head_flag = Mux(head, flags[1], flags[0])
            other_flag = Mux(head, flags[0], flags[1])
            other_ends = Mux(head, ends[0], ends[1])
            # the head ends: its push, the held ones and a younger one ending in the same cycle leave
            # (``step``: the due count's change besides the held ones, -1 .. 3)
            step = (Mux(head_ends, head_flag + (other_ends & other_flag), 0) + (fe_push & fe_flag)
                    - (due != 0))
            hold = Mux(~head_ends & other_ends, other_flag, 0)
            m.d.comb += port.push.eq(due != 0)
            m.d.sync += [due.eq(Mux(head_ends, due_held, due) + step), held.eq(Mux(head_ends, 0, held + hold)),
                         due_held.eq(due_held + step + hold)]
            pushes_out = pushes_out | (due != 0) | (held != 0)
        # ------------------------------------------------------------ acc and out banks
        # Two banks, the halves of the acc (and out) row space, each one read and one write port.
        # A unit running alone drives both (by the top bit of its row); while both run, each drives
        # the bank of its footprint; with neither running the acc loads do.
        acc_banks, out_banks = self.acc_banks, self.out_banks
        nbanks = len(acc_banks)
        bw = max(aw - 1, 0)
        for b in range(nbanks):
            m.submodules[f"acc_bank{b}"] = acc_banks[b]
            m.submodules[f"out_bank{b}"] = out_banks[b]

        def bank_bit(addr):
            return addr[aw - 1] if nbanks == 2 else Const(0, 1)

        acc8_lanes = []
        for i in range(lanes):
            byte = ld_acc8.wr.data.word_select(i, cfg.OUT_WIDTH)      # sign-extended to an acc lane
            acc8_lanes.append(Cat(byte, byte[-1].replicate(cfg.ACC_WIDTH - cfg.OUT_WIDTH)))
        # the acc loaders' writes pass through a register (timing: the DMA data path ends there,
        # not at the bank muxes) and then the bank's write register, and their ``done`` is delayed
        # to match (``load_done`` below)
        ld_writes = []
        for t, data in ((ld_acc, ld_acc.wr.data), (ld_acc8, Cat(*acc8_lanes))):
            en, addr, dat = Signal(), Signal.like(t.wr.addr), Signal(cfg.ACC_MATRIX_WIDTH, reset_less=True)
            m.d.sync += [en.eq(t.wr.en), addr.eq(t.wr.addr), dat.eq(data)]
            ld_writes.append((en, addr, dat))
        writers = [  # (en, addr, data) of every acc writer: GEMM, ALU, LOAD ACC, LOAD ACC_8BIT
            (gemm.acc_wr.en, gemm.acc_wr.addr, gemm.acc_wr.data),
            (alu.acc_wr.en, alu.acc_wr.addr, alu.acc_wr.data),
            *ld_writes,
        ]
        readers = [gemm.acc_rd, alu.acc_rd]
        dual = run[0] & run[1]
        load_is_acc = Signal()           # the acc loader (not ACC_8BIT) owns the banks when no unit runs
        wr_count, bank_rd = [], []
        for b in range(nbanks):
            wr = acc_banks[b].write_port()
            rd = acc_banks[b].read_port()
            owr = out_banks[b].write_port()
            # which writer/reader drives this bank: 0 GEMM, 1 ALU, 2/3 the loads
            # The owner is a register, one cycle behind the slots: a unit's first acc access comes
            # several cycles after its issue and its last one before its ``done``, and a unit
            # running beside another never touches the other's bank, so it is settled whenever it
            # matters. One-hot, so the muxes below are AND-OR (two LUT levels), with one copy per
            # lane for the data mux, whose fan-out is the row width (registers named *_copy* stay
            # apart in the FPGA build: fpga.board.build.KEEP_COPIES).
            own = Signal(4, name=f"bank{b}_owner")
            own_lane = [Signal(4, name=f"bank{b}_owner_copy{i}") for i in range(lanes)]
            # (an acc load beside a GEMM or an ALU instruction: the unit drives its bank, the load the other;
            # never both units beside a load: with two banks one of them would share the load's)
            ld_code = Mux(load_is_acc, 0b0100, 0b1000)
            owner = Mux(dual, Mux(bank_of[0] == b, 0b0001, 0b0010),
                        Mux(ld_taken & run[0], Mux(bank_of[0] == b, 0b0001, ld_code),
                            Mux(ld_taken & run[1], Mux(bank_of[1] == b, 0b0010, ld_code),
                                Mux(run[0], 0b0001, Mux(run[1], 0b0010, ld_code)))))
            m.d.sync += [r.eq(owner) for r in (own, *own_lane)]
            lane_data = []
            for i in range(lanes):
                lane_data.append(and_or([(own_lane[i][k], data.word_select(i, cfg.ACC_WIDTH))
                                         for k, (_, _, data) in enumerate(writers)], cfg.ACC_WIDTH))
            # The write register (hw/sram.py): the selected write reaches the bank a cycle later,
            # from flip-flops that the placer can put beside the block RAMs (the acc bank and its
            # OUT mirror each have their own copy). Readers merge the writes their reads missed.
            w_en = Cat(*(own[k] & en & (bank_bit(addr) == b) for k, (en, addr, _) in enumerate(writers))).any()
            w_addr = and_or([(own[k], addr[:bw]) for k, (_, addr, _) in enumerate(writers)], bw)
            w_data = Cat(*lane_data)
            out_data = Cat(*(w_data.word_select(i, cfg.ACC_WIDTH)[:cfg.OUT_WIDTH] for i in range(lanes)))
            for port, data, tag in ((wr, w_data, "acc"), (owr, out_data, "out")):
                q_en = Signal(name=f"bank{b}_{tag}_wen_copy")
                q_addr = Signal(bw, name=f"bank{b}_{tag}_waddr_copy", reset_less=True)
                q_data = Signal(len(data), name=f"bank{b}_{tag}_wdata_copy", reset_less=True)
                m.d.sync += [q_en.eq(w_en), q_addr.eq(w_addr), q_data.eq(data)]
                m.d.comb += [port.en.eq(q_en), port.addr.eq(q_addr), port.data.eq(q_data)]
            m.d.comb += [
                rd.en.eq(1),
                rd.addr.eq(and_or([(own[k], readers[k].addr[:bw]) for k in range(2)], bw)),
            ]
            wr_count.append(wr.en)
            bank_rd.append(rd)
        # read data: the bank of the row each unit addressed in the previous cycle
        for r in readers:
            last_bank = Signal()
            m.d.sync += last_bank.eq(bank_bit(r.addr))
            m.d.comb += r.data.eq(Mux(last_bank, bank_rd[-1].data, bank_rd[0].data))
        # the store's read port on the out banks
        out_rds = [ob.read_port() for ob in out_banks]
        out_last = Signal()
        with m.If(self.out_rd.en):
            m.d.sync += out_last.eq(bank_bit(self.out_rd.addr))
        for p in out_rds:
            m.d.comb += [p.en.eq(self.out_rd.en), p.addr.eq(self.out_rd.addr[:bw])]
        m.d.comb += self.out_rd.data.eq(Mux(out_last, out_rds[-1].data, out_rds[0].data))

        # counters
        m.d.sync += self.acc_writes.eq(self.acc_writes + sum(wr_count))  # untoggled: acc-writes-sum
        with m.If(gemm.uop_fire):
            m.d.sync += self.gemm_uops.eq(self.gemm_uops + 1)
        with m.If(alu.uop_fire):
            m.d.sync += self.alu_uops.eq(self.alu_uops + 1)

        # ------------------------------------------------------------ the instruction front end
        op = mem.opcode
        mt = mem.memory_type
        alu_ok = alu_insn.alu_opcode.matches(*alu_opcodes(cfg))
        # (two cycles late: an acc load's last write passes the loader register and the bank's write
        # register before it is in the SRAM)
        acc_load_late, acc_load_done = Signal(), Signal()
        m.d.sync += [acc_load_late.eq(ld_acc.done | ld_acc8.done), acc_load_done.eq(acc_load_late)]
        load_done = ld_uop.done | acc_load_done
        tokens_ok = ~((mem.pop_prev & ~self.l2g.valid) | (mem.pop_next & ~self.s2g.valid))
        is_alu = Signal()
        fe_busy = Signal()
        token_wait = Signal()
        # the row count of a LOAD, multiplied out from ``word`` in a multiplier with its own registers
        # (on an ECP5 a MULT18X18D's input and output registers): valid two cycles after DECODE, so
        # from the second DRAIN cycle (each sum < 2^16 + 2 x 15 fits 17 bits)
        ld_rows = registered_mul(m, platform,  # untoggled: padded-size
                                 (mem.y_size + mem.y_pad_0 + mem.y_pad_1)[:MEMOP_SIZE_BITS + 1],  # untoggled: padded-size
                                 (mem.x_size + mem.x_pad_0 + mem.x_pad_1)[:MEMOP_SIZE_BITS + 1],  # untoggled: padded-size
                                 "ld_rows", signed_operands=False)  # untoggled: padded-size
        rows_ok = Signal()               # DRAIN: ``ld_rows`` holds this instruction's count (a cycle late)
        # a LOAD's rows from its first to the end of that row's acc bank (registered from ``word``, valid
        # from the first DRAIN cycle: no adder after the row count, timing)
        ld_first = mem.sram_base[:aw] if aw else Const(0, 1)
        ld_room = Signal(aw + 1)
        bank_end = Mux(bank_bit(ld_first), cfg.ACC_DEPTH, cfg.ACC_DEPTH // 2) if nbanks == 2 else Const(cfg.ACC_DEPTH)
        m.d.sync += ld_room.eq(bank_end - ld_first)
        m.d.sync += rows_ok.eq(0)        # (outside DRAIN)
        ld_side = Signal()
        with m.If(acc_load_done):
            m.d.sync += ld_taken.eq(0)
        m.d.comb += [self.busy.eq(fe_busy | ~both_free | pushes_out | ld_taken),
                     self.stall.eq(token_wait & both_free & ~ld_taken)]
        may_go = Signal()                # DRAIN: the instruction may run (a cycle late)
        uop_end = Signal(17)             # LOAD UOP: sram_base + x_size, and the checks of its
        uop_static = Signal()            # fields that allow it beside running units (from DECODE)
        m.d.sync += may_go.eq(0)         # (outside DRAIN)
        slot_ok = Signal()               # ISSUE: the unit's slot may be taken (a cycle late)
        m.d.sync += slot_ok.eq(0)        # (outside SCAN/ISSUE)
        mine = Mux(is_alu, taken[1], taken[0])
        other = Mux(is_alu, taken[0], taken[1])
        other_bank = Mux(is_alu, bank_of[0], bank_of[1])
        other_single = Mux(is_alu, single_of[0], single_of[1])
        apart = fp.single & other_single & (fp.bank != other_bank)
        beside_load = ~ld_taken | (fp.single & (fp.bank != ld_bank))
        slot_free = ~mine & (~other | apart) & beside_load
        with m.FSM(name="compute_fsm"):
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.d.comb += fe_busy.eq(1)
                bad = Signal()
                with m.If(bad):
                    m.d.sync += self.error.eq(1)
                with m.Switch(op):
                    with m.Case(Opcode.LOAD):
                        end = mem.sram_base + mem.x_size
                        m.d.sync += [uop_end.eq(end), uop_static.eq(
                            (mt == MemId.UOP) & ~mem.push_prev & ~mem.push_next & (mem.y_size == 1) &
                            (mem.x_pad_0 == 0) & (mem.x_pad_1 == 0) & (mem.y_pad_0 == 0) & (mem.y_pad_1 == 0) &
                            (end <= cfg.UOP_DEPTH))]
                        with m.If((mt == MemId.UOP) | (mt == MemId.ACC) | (mt == MemId.ACC_8BIT)):
                            m.next = "DRAIN"
                        with m.Else():
                            m.d.comb += bad.eq(1)
                            m.next = "HALT"
                    with m.Case(Opcode.FINISH):
                        m.next = "DRAIN"
                    with m.Case(Opcode.GEMM, Opcode.ALU, Opcode.DEPTHWISE):
                        dw_ok = (op == Opcode.DEPTHWISE) if cfg.DEPTHWISE else 0
                        with m.If((op == Opcode.GEMM) | dw_ok | ((op == Opcode.ALU) & alu_ok)):
                            m.d.comb += fp.start.eq(1)
                            m.d.sync += is_alu.eq(op == Opcode.ALU)
                            m.next = "SCAN"
                        with m.Else():
                            m.d.comb += bad.eq(1)
                            m.next = "HALT"
                    with m.Default():
                        m.d.comb += bad.eq(1)
                        m.next = "HALT"
            with m.State("SCAN"):
                # the acc footprint of this instruction, while the units run older ones
                m.d.comb += fe_busy.eq(1)
                with m.If(fp.done):
                    m.d.sync += slot_ok.eq(slot_free)
                    m.next = "ISSUE"
            with m.State("ISSUE"):
                # wait for this unit's slot; run beside the other unit only when both footprints are
                # single-bank and in different banks; then take the tokens and start. (``slot_ok``
                # is that condition a cycle late, a register: while waiting here it only turns true,
                # as units end, so acting on it a cycle late is safe.)
                m.d.comb += fe_busy.eq(1)
                m.d.sync += slot_ok.eq(slot_free)
                with m.If(slot_ok):
                    with m.If(~tokens_ok):
                        m.d.comb += token_wait.eq(1)
                    with m.Else():
                        m.d.comb += [self.l2g.pop.eq(mem.pop_prev), self.s2g.pop.eq(mem.pop_next),
                                     issue[0].eq(~is_alu), issue[1].eq(is_alu)]
                        m.next = "IDLE"
            with m.State("DRAIN"):
                # LOAD ACC and FINISH run alone, after every older instruction has ended and pushed;
                # so does LOAD UOP unless it writes none of the uops the running instructions read
                # and pushes nothing (the runtime stages kernels append-only, so it usually doesn't)
                m.d.comb += fe_busy.eq(1)
                # (``may_go`` is this condition one cycle late, a register: it only turns true while
                # waiting here, as units end and pushes leave, so acting on it a cycle late is safe)
                uop_apart = uop_static
                for k in range(2):
                    uop_apart &= ~taken[k] | (uop_end <= uops_of[k][0]) | (mem.sram_base >= uops_of[k][1])
                m.d.sync += rows_ok.eq(1)
                m.d.sync += may_go.eq(((both_free & ~pushes_out) | ((op == Opcode.LOAD) & uop_apart)) & ~ld_taken
                                      & rows_ok)
                # (the DMA port goes to this load's loader only once an acc load beside the units has ended)
                with m.If(~ld_taken):
                    m.d.sync += dma_sel.eq(Mux(mt == MemId.UOP, 0, Mux(mt == MemId.ACC, 1, 2)))
                # (a register too: ``ld_rows`` is ready from the second DRAIN cycle, ``may_go`` from the third;
                # the rows fit in the bank of the first when they are no more than ``room``)
                m.d.sync += ld_side.eq((op == Opcode.LOAD) & ((mt == MemId.ACC) | (mt == MemId.ACC_8BIT)) &
                                       ~mem.push_prev & ~mem.push_next & (ld_rows != 0) & (ld_rows <= ld_room))
                with m.If(may_go):
                    with m.If(~tokens_ok):
                        m.d.comb += token_wait.eq(1)
                    with m.Else():
                        m.d.comb += [self.l2g.pop.eq(mem.pop_prev), self.s2g.pop.eq(mem.pop_next)]
                        with m.If(op == Opcode.FINISH):
                            m.d.comb += self.finish.eq(1)
                            m.next = "PUSH"
                        with m.Else():
                            m.d.comb += [ld_uop.start.eq(mt == MemId.UOP), ld_acc.start.eq(mt == MemId.ACC),
                                         ld_acc8.start.eq(mt == MemId.ACC_8BIT)]
                            m.d.sync += load_is_acc.eq(mt == MemId.ACC)
                            with m.If(ld_side):
                                m.d.sync += [ld_taken.eq(1), ld_bank.eq(bank_bit(ld_first))]
                                m.next = "IDLE"
                            with m.Else():
                                m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += fe_busy.eq(1)
                with m.If(load_done):
                    m.next = "PUSH"
            with m.State("PUSH"):
                m.d.comb += [fe_busy.eq(1), fe_push.eq(1)]
                m.next = "IDLE"
            with m.State("HALT"):
                with m.If(self.clear):
                    m.d.sync += self.error.eq(0)
                    m.next = "IDLE"
        return m
