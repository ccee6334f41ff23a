"""cocotb tests of the accelerator written by users: the testbench they use and the runner that runs them.

As in cocotb itself, what runs inside the simulator is apart from the host tools:

* :mod:`cosim.cocotb.testbench` (in the simulator): :class:`Testbench`, used in a test's coroutine as
  ``async with Testbench(dut) as tb:`` (registers, device memory, launches, the runtime on the RTL beside the
  golden model, injected faults, counters and the watchdog's report);
* :mod:`cosim.cocotb.runner` (on the host): :func:`run_tests` runs test modules with cocotb's runner against the
  cached Verilator model of a config and merges their results.xml; ``python -m cosim.cocotb`` is its command line;
* :mod:`cosim.cocotb.pytest_plugin`: makes pytest run a ``test_*.py`` file of cocotb tests through the runner.

docs/cocotb.md is the guide.
"""

from sw.pipeline import VTAError
from sw.targets.launch import AxiResponseError, RunTimeout, WatchdogError

from .runner import Results, TestResult, run_tests
from .testbench import Testbench, TestbenchTimeout

# the errors a run raises (each with ``registers``, the register values when it stopped), for ``except`` in tests
__all__ = ["Testbench", "TestbenchTimeout", "run_tests", "Results", "TestResult", "VTAError",
           "WatchdogError", "RunTimeout", "AxiResponseError"]
