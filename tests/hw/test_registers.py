"""The register map as data: the co-simulation's simulator reads it without loading Amaranth."""
import subprocess
import sys

from hw import control, registers


def test_the_map_imports_no_amaranth():
    code = "import sys, hw.registers; print(sorted(m for m in sys.modules if m.split('.')[0] == 'amaranth'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_hardware_uses_the_same_map():
    assert control.REGISTER_MAP is registers.REGISTER_MAP and control.REGISTERS is registers.REGISTERS
    assert control.ErrorCode is registers.ErrorCode and control.STATUS_BITS is registers.STATUS_BITS
    assert registers.REGISTERS["status"] == 0x40 and registers.STATUS_BITS["error_code"] == (8, 4)
