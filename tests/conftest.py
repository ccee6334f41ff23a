import numpy as np
import pytest

from sw.config import load_config
from sw.fsim import FsimDevice
from sw import runtime

CONFIG_NAMES = ("default", "small", "batch2")


@pytest.fixture(params=CONFIG_NAMES)
def cfg(request):
    return load_config(request.param)


@pytest.fixture
def default_cfg():
    return load_config("default")


def make_queue(config="default", dram_bytes=16 << 20, **kwargs):
    return runtime.CommandQueue(FsimDevice(load_config(config), dram_bytes=dram_bytes), **kwargs)


@pytest.fixture
def queue(request):
    """A fresh golden-model runtime (16 MiB DRAM) made current for the test."""
    config = getattr(request, "param", "default")
    q = make_queue(config)
    previous = runtime.set_current(q)
    yield q
    runtime.set_current(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(0xDEADB)
