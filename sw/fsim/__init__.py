"""The numpy golden model: VTA's functional-simulator semantics with docs/architecture.md §2's decisions.

* :mod:`sw.fsim.device`: :class:`FsimDevice` (DRAM, SRAMs, checking, scheduling and executing a stream),
  :data:`COUNTER_NAMES`, :data:`DEFAULT_DRAM_BYTES`;
* :mod:`sw.fsim.alu`: :func:`alu_op`, the tensor ALU's arithmetic, which the operators' host references
  use too;
* :mod:`sw.fsim.gemm`: a GEMM instruction's products, exact, folded into BLAS where the loops allow.
"""

from sw.fsim.alu import alu_op
from sw.fsim.device import COUNTER_NAMES, DEFAULT_DRAM_BYTES, FsimDevice

__all__ = ["FsimDevice", "COUNTER_NAMES", "DEFAULT_DRAM_BYTES", "alu_op"]
