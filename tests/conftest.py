import sys
import threading

import numpy as np
import pytest

from sw import runtime
from sw.config import load_config
from sw.fsim import FsimDevice

_DIR_MARKS = {"cosim": "rtl", "fpga": "fpga"}   # every test below tests/cosim runs the RTL


def pytest_collection_modifyitems(items):
    """Tiers: ``pytest -m "not rtl and not slow and not fpga"`` is the fast one (README)."""
    for item in items:
        parts = item.path.relative_to(item.config.rootpath).parts
        if len(parts) > 2 and parts[0] == "tests" and parts[1] in _DIR_MARKS:
            item.add_marker(_DIR_MARKS[parts[1]])


CONFIG_NAMES = CONFIGS = ("default", "small", "batch2")


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


@pytest.fixture
def on(request):
    """on(config, **queue_kwargs): make a fresh golden-model runtime (64 MiB DRAM) current for the rest of the test."""
    made = []

    def make(config="default", **kwargs):
        q = make_queue(config, dram_bytes=64 << 20, **kwargs)
        made.append(runtime.set_current(q))
        return q
    yield make
    for previous in reversed(made):
        runtime.set_current(previous)


def rand8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def rand32(rng, shape, lo=-(1 << 20), hi=1 << 20):
    return rng.integers(lo, hi, size=shape, dtype=np.int32)


def run_threads(worker, tags):
    """``worker(tag)`` in one thread per tag, switching threads often so races have every chance; returns
    the ``(tag, exception)`` of every worker that raised."""
    errors = []

    def guarded(tag):
        try:
            worker(tag)
        except BaseException as err:  # noqa: BLE001 - reported to the caller
            errors.append((tag, err))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=guarded, args=(t,)) for t in tags]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    return errors
