"""hw.sram.check_config: every datapath component refuses a config that is not a Config (the full-design
lint and the RTL regression cover their conversion to Verilog)."""

import pytest

from hw.alu import Alu
from hw.compute import Compute
from hw.gemm import Gemm
from hw.load import Load
from hw.store import Store
from sw.config import load_config

COMPONENTS = {"load": Load, "store": Store, "gemm": Gemm, "alu": Alu, "compute": Compute}


@pytest.mark.parametrize("name", list(COMPONENTS))
def test_bad_config(name):
    with pytest.raises(ValueError, match="cfg must be a sw.config.Config"):
        COMPONENTS[name]({"LOG_BATCH": 0})


def test_bad_sram_name():
    from hw.sram import make_memory
    with pytest.raises(ValueError, match="SRAM name"):
        make_memory(load_config("small"), "foo")
