"""Design-space exploration: which config for a network on a board, from measured cycles and resources.

    python -m apps.dse --sweep configs/sweeps/resnet18.toml              (make dse SWEEP=...)
    python -m apps.dse --base default --param LOG_BLOCK=3,4 --param POST_UNIT=0,1 --network resnet18 \\
        --board ulx3s --board ultra96 [--scheduler tcp://host:8786] [--fmax]

A *sweep* (:mod:`apps.dse.spec`: a TOML file or flags) names config parameters to vary (grids over a base
config, or whole configs), networks (ONNX paths or zoo names, with inputs) and boards. Every point's config is
validated before anything runs: an invalid one is a :class:`~sw.config.ConfigError` naming the parameter and its
allowed range. Then, per point, as tasks on a Dask cluster (:mod:`apps.dse.sweep`):

* ``rtl``: the Verilator model built (cached by :mod:`cosim.model`), each network run on the RTL: its total
  accelerator cycles, the very number ``python -m apps.onnx MODEL --config C --target rtl`` prints, and whether
  every tensor equals the numpy reference (a sweep is also a regression: a point that differs is a failure);
* ``synth``: yosys resource estimates per part family of the boards (LUT, FF, DSP, block RAM) and whether the
  point fits each board;
* ``fmax`` (``--fmax``, ECP5 only): nextpnr's Fmax of the ULX3S build of each point that fits the ULX3S.

Inferences per second are at the board's clock (:data:`fpga.resources.DEVICES`: a stated figure per part) or at
the measured Fmax. Out (:mod:`apps.dse.report`): a CSV and a JSON of every (point, network, board), a Pareto plot
per network and board (cycles per inference against LUTs and DSPs) and a markdown summary naming the best fitting
config per (network, board).

Each task runs in a child process of its worker, with a timeout (the child's process group is killed; a child
whose worker dies kills itself), and its result is cached in ``build/dse/cache`` by a content hash of the config,
the sources the result depends on, the tool versions and the network (:mod:`apps.dse.cache`): a rerun, or a run
after losing a worker or the client, computes only what is missing. Failures are not cached.

The layering (docs/architecture.md §1.1): ``apps`` imports ``sw`` and ``cosim`` but not ``hw`` or ``fpga``. The RTL
runs through the ``rtl`` runner as every app's does; the resource estimates and the board build are
reached through their command lines (``python -m fpga.resources --json``, ``--devices``; ``python -m fpga.board``),
run as the tasks' child processes anyway, so the contract stays as it is and the devices' table has one home.
"""

from .spec import Network, Point, Sweep, load_sweep

__all__ = ["Network", "Point", "Sweep", "load_sweep"]
