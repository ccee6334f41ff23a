"""The simulator side of co-simulation: what runs inside the Verilator process, and how calls reach it.

``entry`` is the cocotb test module the simulator runs (a server of jobs, one forked child per call);
``rtl`` the runtime's ``rtl`` target (:class:`~cosim.sim.rtl.RtlDevice`); ``axi_monitor`` the AXI
checker's violations and stall counters; ``axiram`` cocotbext-axi's memory; ``coverage_dump`` each
job's coverage counters; ``vboard`` the virtual board (the runtime's ``board`` target on the Verilated
accelerator: its simulator side and its host side). On the client side, ``server`` starts one simulator
per model and sends it jobs over ``channel``; ``locate`` names a function so the simulator can import it.
Nothing here imports the verification (:mod:`cosim.verify`) or performance (:mod:`cosim.perf`) tools.
"""
