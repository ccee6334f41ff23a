"""The register map as data (sw.registers): the co-simulation's simulator reads it without loading Amaranth."""
import subprocess
import sys

from sw.registers import REGISTERS, STATUS_BITS, const_values, version_word


def test_the_map_imports_no_amaranth():
    code = "import sys, sw.registers; print(sorted(m for m in sys.modules if m.split('.')[0] == 'amaranth'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_offsets_and_constants():
    assert REGISTERS["status"] == 0x40 and STATUS_BITS["error_code"] == (8, 4)
    assert const_values(None) == {"version": version_word(None), "config0": 0, "config1": 0}
