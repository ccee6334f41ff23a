"""The accelerator's top level: fetch, load, compute and store around one AXI4 master and the registers.

Ports (Verilog names; AXI names follow the AMBA convention so vendor tools infer the interfaces):

* ``clk``, ``rst`` (active high, synchronous);
* ``m_axi_*``: the AXI4 master to DRAM (data width ``cfg.BUS_WIDTH``, 32-bit addresses, ID width 1);
* ``s_axi_*``: the AXI4-Lite slave of the control registers (16-bit addresses, 32-bit data;
  :data:`sw.registers.REGISTER_MAP`);
* ``irq``: the finish bit of the control register (level, cleared by the next launch);
* ``activity``: something moved this cycle (a bus beat, or a module working rather than waiting);
  testbenches use it as a watchdog;
* ``busy[5:0]``: fetch, load, compute, store are executing (not waiting for a token), and the
  compute module's GEMM and ALU units are running an instruction, for timelines (:data:`TRACE_LANES`).

Read clients of the AXI master in priority order: fetch, compute (uop/acc), load (inp/wgt). The store
module is the one write client. The inp and wgt SRAMs live here: load writes them, compute reads them;
the out SRAM likewise between compute and store. Token queues (docs/architecture.md §2.3) and the profiler's
byte counters per memory type live here too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from sw.config import Config, load_config
from sw.isa import TOKEN_QUEUE_DEPTH, MemId, Opcode
from sw.registers import ErrorCode

from .axi import AxiMaster, axi4_lite_signature, axi4_signature
from .compute import Compute
from .control import ControlRegs
from .fetch import Fetch
from .interfaces import flat_members
from .layouts import insn_layouts
from .load import Load
from .queues import TokenQueue
from .sram import make_memory
from .store import Store

__all__ = ["Top", "top_verilog", "constant_meminit", "CTL_ADDR_BITS", "MODULES", "TRACE_LANES"]

CTL_ADDR_BITS = 16
MODULES = ("fetch", "load", "compute", "store")
TRACE_LANES = MODULES + ("gemm", "alu")     # the bits of the ``busy`` port


class Top(wiring.Component):
    """The whole accelerator for one configuration."""

    def __init__(self, cfg: Config | None = None, *, token_depth: int = TOKEN_QUEUE_DEPTH, queue_depth: int = 512):
        self.cfg = cfg = load_config(cfg)
        self.token_depth = token_depth
        self.queue_depth = queue_depth
        self._axi_sig = axi4_signature(cfg.BUS_WIDTH)
        self._lite_sig = axi4_lite_signature(CTL_ADDR_BITS, 32)
        members = {}
        members.update(flat_members("m_axi", self._axi_sig, flip=False))
        members.update(flat_members("s_axi", self._lite_sig, flip=True))
        members.update({"irq": Out(1), "activity": Out(1), "busy": Out(len(TRACE_LANES))})
        super().__init__(members)

    def elaborate(self, platform: object) -> Module:
        cfg = self.cfg
        m = Module()
        m.submodules.regs = regs = ControlRegs(cfg, addr_width=CTL_ADDR_BITS)
        m.submodules.axi = axi = AxiMaster(cfg, 3)
        m.submodules.fetch = fetch = Fetch(cfg, queue_depth=self.queue_depth)
        m.submodules.load = load = Load(cfg)
        m.submodules.compute = compute = Compute(cfg)
        m.submodules.store = store = Store(cfg)

        # ---------------------------------------------------------------- external buses
        for name, member in self._axi_sig.members.items():
            port, inner = getattr(self, f"m_axi_{name}"), getattr(axi.axi, name)
            m.d.comb += (port.eq(inner) if member.flow == wiring.Out else inner.eq(port))
        for name, member in self._lite_sig.members.items():
            port, inner = getattr(self, f"s_axi_{name}"), getattr(regs.bus, name)
            m.d.comb += (inner.eq(port) if member.flow == wiring.Out else port.eq(inner))

        # ---------------------------------------------------------------- DMA clients
        wiring.connect(m, fetch.dma, axi.read[0])
        wiring.connect(m, compute.dma, axi.read[1])
        wiring.connect(m, load.dma, axi.read[2])
        wiring.connect(m, store.dma, axi.write)

        # ---------------------------------------------------------------- command queues
        wiring.connect(m, fetch.load_queue, load.insn)
        wiring.connect(m, fetch.compute_queue, compute.insn)
        wiring.connect(m, fetch.store_queue, store.insn)

        # ---------------------------------------------------------------- shared SRAMs
        m.submodules.inp_mem = inp_mem = make_memory(cfg, "inp")
        m.submodules.wgt_mem = wgt_mem = make_memory(cfg, "wgt")
        wiring.connect(m, load.inp_wr, inp_mem.write_port())
        wiring.connect(m, load.wgt_wr, wgt_mem.write_port())
        wiring.connect(m, compute.inp_rd, inp_mem.read_port())
        wiring.connect(m, compute.wgt_rd, wgt_mem.read_port())
        wiring.connect(m, store.out_rd, compute.out_rd)       # the out SRAM (two banks) is in compute

        # ---------------------------------------------------------------- token queues
        queues = {}
        for name, producer, consumer in (("l2g", load, compute), ("g2l", compute, load),
                                         ("g2s", compute, store), ("s2g", store, compute)):
            q = TokenQueue(self.token_depth)
            m.submodules[f"tokens_{name}"] = q
            wiring.connect(m, getattr(producer, name), q.producer)
            wiring.connect(m, getattr(consumer, name), q.consumer)
            m.d.comb += [q.clear.eq(regs.launch), getattr(regs, f"tokens_{name}").eq(q.count)]
            queues[name] = q

        # ---------------------------------------------------------------- control and status
        m.d.comb += [
            fetch.start.eq(regs.launch),
            fetch.insn_count.eq(regs.insn_count),
            fetch.insn_addr.eq(regs.insn_addr),
            load.inp_base.eq(regs.inp_addr),
            load.wgt_base.eq(regs.wgt_addr),
            compute.uop_base.eq(regs.uop_addr),
            compute.acc_base.eq(regs.acc_addr),
            store.out_base.eq(regs.out_addr),
            axi.error_clear.eq(regs.launch),
            regs.axi_error_info.eq(axi.error_info),
            regs.axi_error_addr.eq(axi.error_addr),
            regs.finish.eq(compute.finish),
            self.irq.eq(regs.irq),
        ]
        if hasattr(load, "clear"):
            m.d.comb += [load.clear.eq(regs.launch), compute.clear.eq(regs.launch), store.clear.eq(regs.launch)]
        error = Signal(len(regs.error_code))
        with m.If(fetch.error != 0):
            m.d.comb += error.eq(fetch.error)
        with m.Elif(axi.error):
            m.d.comb += error.eq(ErrorCode.AXI_ERROR)
        with m.Elif(load.error):
            m.d.comb += error.eq(ErrorCode.LOAD_ERROR)
        with m.Elif(compute.error):
            m.d.comb += error.eq(ErrorCode.COMPUTE_ERROR)
        with m.Elif(store.error):
            m.d.comb += error.eq(ErrorCode.STORE_ERROR)
        m.d.comb += regs.error_code.eq(error)

        modules: dict[str, wiring.Component] = {"fetch": fetch, "load": load, "compute": compute, "store": store}
        for name, mod in modules.items():
            m.d.comb += [getattr(regs, f"{name}_busy").eq(mod.busy), getattr(regs, f"{name}_stall").eq(mod.stall)]
        m.d.comb += [
            regs.queue_load.eq(fetch.load_level),
            regs.queue_compute.eq(fetch.compute_level),
            regs.queue_store.eq(fetch.store_level),
            regs.insn_fetched.eq(fetch.insn_fetched),
            regs.acc_writes.eq(compute.acc_writes),
            regs.gemm_uops.eq(compute.gemm_uops),
            regs.alu_uops.eq(compute.alu_uops),
            regs.dma_fetch_beats.eq(axi.read_beats[0]),
            regs.dma_compute_beats.eq(axi.read_beats[1]),
            regs.dma_load_beats.eq(axi.read_beats[2]),
            regs.dma_store_beats.eq(axi.write_beats),
        ]
        working = [mod.busy & ~mod.stall for mod in modules.values()]
        m.d.comb += regs.modules_now.eq(Cat(*(mod.busy for mod in modules.values()),
                                            *(mod.busy & mod.stall for mod in modules.values())))
        bus_beat = ((self.m_axi_rvalid & self.m_axi_rready) | (self.m_axi_wvalid & self.m_axi_wready))
        m.d.comb += [self.busy.eq(Cat(*working, compute.gemm.busy, compute.alu.busy)),
                     self.activity.eq(bus_beat | Cat(*working).any())]

        # ---------------------------------------------------------------- profiler byte counters
        # Counted when a module accepts an instruction: x_size * y_size elements of its memory type.
        mem_layout = insn_layouts(cfg)["mem"]
        counters = {name: Signal(32, name=name) for name in
                    ("inp_load_bytes", "wgt_load_bytes", "acc_load_bytes", "uop_load_bytes", "out_store_bytes")}
        elem = {MemId.INP: ("inp_load_bytes", cfg.LOG_INP_ELEM_BYTES),
                MemId.WGT: ("wgt_load_bytes", cfg.LOG_WGT_ELEM_BYTES),
                MemId.ACC: ("acc_load_bytes", cfg.LOG_ACC_ELEM_BYTES),
                MemId.ACC_8BIT: ("acc_load_bytes", cfg.LOG_ACC_ELEM_BYTES),
                MemId.UOP: ("uop_load_bytes", cfg.LOG_UOP_ELEM_BYTES),
                MemId.OUT: ("out_store_bytes", cfg.LOG_OUT_ELEM_BYTES)}
        for mod in (load, compute, store):
            insn = data.View(mem_layout, mod.insn.payload)
            fire = Signal(name=f"{type(mod).__name__.lower()}_insn_fire")
            elems = Signal(32, name=f"{type(mod).__name__.lower()}_insn_elems")
            m.d.comb += [fire.eq(mod.insn.valid & mod.insn.ready  # untoggled: load-or-store
                                 & (insn.opcode <= Opcode.STORE)),  # untoggled: load-or-store
                         elems.eq(insn.x_size * insn.y_size)]
            with m.If(fire):
                with m.Switch(insn.memory_type):
                    for mem, (name, log_bytes) in elem.items():
                        if (mod is store) != (mem == MemId.OUT):
                            continue
                        with m.Case(mem):
                            m.d.sync += counters[name].eq(  # untoggled: byte-counter-next
                                counters[name] + (elems << log_bytes))  # untoggled: byte-counter-next
        for name, sig in counters.items():
            m.d.comb += getattr(regs, name).eq(sig)
        return m


def top_verilog(cfg: Config | str | None = None, name: str = "vta_top", emit_src: bool = False) -> str:
    """The Verilog of the whole accelerator for ``cfg``; ``emit_src=True`` keeps the ``(* src = "file:line" *)``
    attributes that name the Amaranth source of each statement (code-coverage builds map lines back with them)."""
    from amaranth.back import verilog
    top = Top(load_config(cfg))
    with constant_meminit():
        return verilog.convert(top, name=name, emit_src=emit_src)


@contextmanager
def constant_meminit() -> Iterator[None]:
    """A context in which Amaranth 0.5's RTLIL backend writes each memory's initial contents as one RTLIL constant
    built from its rows (its own writer goes through one netlist bit, a Python object, per SRAM bit). The RTLIL,
    and so the Verilog, is the same as without it (tests/hw/test_top.py compares both ways)."""
    from amaranth.back import rtlil
    from amaranth.hdl import _nir

    original = rtlil.ModuleEmitter.emit_memory

    def emit_memory(self, cell_idx, cell):
        if not cell.init or cell.width == 0:
            return original(self, cell_idx, cell)
        mask = (1 << cell.width) - 1
        bits = "".join(format(row & mask, f"0{cell.width}b") for row in reversed(cell.init))
        self.builder.cell("$meminit_v2", ports={
            "ADDR": self.sigspec(),
            "DATA": f"{len(bits)}'{bits}",
            "EN": self.sigspec(_nir.Value.ones(cell.width)),
        }, parameters={
            "MEMID": self.memories[cell_idx].memid,
            "ABITS": 0,
            "WIDTH": cell.width,
            "WORDS": cell.depth,
            "PRIORITY": 0,
        }, src_loc=cell.src_loc)

    rtlil.ModuleEmitter.emit_memory = emit_memory
    try:
        yield
    finally:
        rtlil.ModuleEmitter.emit_memory = original
