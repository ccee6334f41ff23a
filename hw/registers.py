"""The register map of the control interface: :mod:`sw.registers`, re-exported for the hardware.

The map is defined once, as data, in :mod:`sw.registers` (the runtime's board target and the launch sequence
of :mod:`sw.targets.launch` read it, and ``sw`` imports nothing from ``hw``); :class:`hw.control.ControlRegs` builds the
registers from it. Like its source, this module imports nothing of Amaranth.
"""

from sw.registers import (
    ERROR_CODE_BITS,
    IMPL_REVISION,
    REGISTER_MAP,
    REGISTERS,
    STATUS_BITS,
    ErrorCode,
    Register,
    _const_values,  # noqa: F401 - hw.control uses it
    config_words,
    register_table_markdown,
    version_word,
)

__all__ = ["ErrorCode", "ERROR_CODE_BITS", "IMPL_REVISION", "Register", "REGISTER_MAP", "REGISTERS", "STATUS_BITS",
           "register_table_markdown", "version_word", "config_words"]
