"""Control and status registers: an AXI4-Lite slave with VTA's Chisel register map, extended.

The register map is defined once, as data, in :mod:`sw.registers`: :class:`ControlRegs` builds the registers
from its :data:`~sw.registers.REGISTER_MAP`.
"""

from typing import cast

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.registers import ERROR_CODE_BITS, REGISTER_MAP, const_values

from .axi import axi4_lite_signature

__all__ = ["ControlRegs"]


class ControlRegs(wiring.Component):
    """AXI4-Lite slave holding the control and status registers (:data:`sw.registers.REGISTER_MAP`).

    Ports
    -----
    ``bus`` (AXI4-Lite slave, 32-bit data, ``addr_width``-bit addresses): expose as ``s_axi_<name>``.
    ``launch`` (out): one-cycle pulse when the host writes 1 to bit 0 of ``control`` while idle.
    ``running`` (out): high from the launch until the run finishes.
    ``irq`` (out): the finish bit of ``control`` (level; cleared by the next launch).
    ``insn_count``, ``insn_addr``, ``uop_addr``, ``inp_addr``, ``wgt_addr``, ``acc_addr``,
    ``out_addr`` (out, 32): the host-written registers.
    ``finish`` (in): ends the run (the compute module's FINISH).
    ``error_code`` (in, 4): a non-zero :class:`sw.registers.ErrorCode`; the first one is latched into ``status``
    until the next launch, and it also ends the run (so a bad program never hangs). It is ignored
    in the cycle ``launch`` is high, so sources may clear a stale code on the launch pulse.
    ``fetch_busy``, ``fetch_stall``, ``load_busy``, ... ``store_stall`` (in, 1): counter enables,
    counted in the cycles of a run.
    ``acc_writes``, ``gemm_uops``, ``alu_uops`` (in, 32): free-running event counters of the compute
    module; the registers show their increase during the run.
    ``dma_fetch_beats``, ``dma_load_beats``, ``dma_compute_beats``, ``dma_store_beats`` (in, 32):
    the free-running beat counters of :class:`hw.axi.AxiMaster` for each client, likewise.
    ``tokens_*``, ``queue_*`` (in, 16) and ``insn_fetched`` (in, 32): read-only snapshots.

    Reads of unmapped addresses return 0, writes to them and to read-only registers are ignored;
    every response is OKAY. Write strobes apply per byte to the RW registers.

    Latency: a write is accepted in the cycle both AW and W are valid and takes effect (and
    ``launch`` pulses) on the next cycle, with BVALID; a read is answered the cycle after its AR
    handshake. One transaction per channel at a time. ``finish`` stops the counters on the next
    cycle.

    Parameters
    ----------
    cfg : Config or None
        Gives the ``version``/``config0``/``config1`` constants (zeros for the config ids if None).
    addr_width : int
        AXI4-Lite address bits, 8..32 (default 16, as VTA's VCR).
    """

    def __init__(self, cfg: Config | None = None, *, addr_width: int = 16):
        if isinstance(addr_width, bool) or not isinstance(addr_width, int) or not 8 <= addr_width <= 32:
            raise ValueError(f"ControlRegs: addr_width must be an integer in [8, 32], got {addr_width!r}")
        self.cfg = cfg
        self.addr_width = addr_width
        members = {
            "bus": In(axi4_lite_signature(addr_width, 32)),
            "launch": Out(1),
            "running": Out(1),
            "irq": Out(1),
            "finish": In(1),
            "error_code": In(ERROR_CODE_BITS),
        }
        for r in REGISTER_MAP:
            if r.kind == "host":
                members[r.name] = Out(32)
            elif r.kind in ("counter", "input", "delta"):
                members[cast(str, r.port)] = In(r.width)
        super().__init__(members)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        bus = self.bus
        consts = const_values(self.cfg)

        running = Signal()
        finished = Signal()
        error_code = Signal(ERROR_CODE_BITS)
        regs = {}
        for r in REGISTER_MAP:
            if r.kind in ("host", "cycles", "counter", "delta"):
                regs[r.name] = Signal(32, init=r.reset, name=f"reg_{r.port or r.name}")
        bases = {r.name: Signal(32, name=f"base_{r.port}") for r in REGISTER_MAP if r.kind == "delta"}

        # ------------------------------------------------------------ read values
        values = {}
        for r in REGISTER_MAP:
            if r.kind == "control":
                values[r.name] = Cat(running, finished)
            elif r.kind == "status":
                values[r.name] = Cat(running, finished, error_code != 0, Const(0, 5), error_code)
            elif r.kind == "const":
                values[r.name] = Const(consts[r.name], 32)
            elif r.kind == "input":
                values[r.name] = getattr(self, cast(str, r.port))
            else:
                values[r.name] = regs[r.name]
            if r.kind == "host":
                m.d.comb += getattr(self, r.name).eq(regs[r.name])
        m.d.comb += [self.running.eq(running), self.irq.eq(finished)]

        # ------------------------------------------------------------ AXI4-Lite write
        launch = Signal()
        write = Signal()
        m.d.comb += [
            write.eq(bus.awvalid & bus.wvalid & ~bus.bvalid),
            bus.awready.eq(write),
            bus.wready.eq(write),
            bus.bresp.eq(0),
        ]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        with m.If(write):
            m.d.sync += bus.bvalid.eq(1)

        def merged(old):
            return Cat(Mux(bus.wstrb[i], bus.wdata[8 * i:8 * i + 8], old[8 * i:8 * i + 8])
                       for i in range(4))

        with m.If(write):
            with m.Switch(bus.awaddr[2:]):
                for r in REGISTER_MAP:
                    if r.access != "RW":
                        continue
                    with m.Case(r.offset >> 2):
                        if r.kind == "control":
                            with m.If(~running & bus.wstrb[0]):
                                with m.If(bus.wdata[0]):
                                    m.d.comb += launch.eq(1)
                                with m.Else():
                                    m.d.sync += finished.eq(bus.wdata[1])
                        else:
                            m.d.sync += regs[r.name].eq(merged(regs[r.name]))

        # ------------------------------------------------------------ AXI4-Lite read
        m.d.comb += [bus.arready.eq(~bus.rvalid), bus.rresp.eq(0)]
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += bus.rvalid.eq(1)
            with m.Switch(bus.araddr[2:]):
                for r in REGISTER_MAP:
                    with m.Case(r.offset >> 2):
                        m.d.sync += bus.rdata.eq(values[r.name])
                with m.Default():
                    m.d.sync += bus.rdata.eq(0)

        # ------------------------------------------------------------ run state and counters
        m.d.sync += self.launch.eq(launch)
        # Sources clear their error on the launch pulse: ignore what they show in that cycle.
        error_in = Mux(self.launch, 0, self.error_code)
        stop = running & (self.finish | (error_in != 0))
        with m.If(launch):
            m.d.sync += [running.eq(1), finished.eq(0), error_code.eq(0)]
            for r in REGISTER_MAP:
                if r.kind in ("cycles", "counter", "delta"):
                    m.d.sync += regs[r.name].eq(0)
                if r.kind == "delta":
                    m.d.sync += bases[r.name].eq(getattr(self, cast(str, r.port)))
        with m.Else():
            with m.If((error_code == 0) & (error_in != 0)):
                m.d.sync += error_code.eq(error_in)
            with m.If(stop):
                m.d.sync += [running.eq(0), finished.eq(1)]
            with m.If(running):
                for r in REGISTER_MAP:
                    if r.kind == "cycles":
                        m.d.sync += regs[r.name].eq(regs[r.name] + 1)  # untoggled: counter
                    elif r.kind == "counter":
                        with m.If(getattr(self, cast(str, r.port))):
                            m.d.sync += regs[r.name].eq(regs[r.name] + 1)  # untoggled: counter
                    elif r.kind == "delta":
                        m.d.sync += regs[r.name].eq(getattr(self, cast(str, r.port)) - bases[r.name])  # untoggled: counter
        return m
