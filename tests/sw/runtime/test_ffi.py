"""sw.runtime.ffi: the Python callable behind a tvm-ffi function, global registration, error classes."""
import numpy as np
import pytest
import tvm_ffi

from sw import runtime
from sw.fsim import FsimDevice
from sw.isa import MemId
from sw.pipeline import DeadlockError, InsnError, VTAError, error_classes
from sw.runtime import ffi
from sw.runtime.memory import BufferError
from sw.testing import vta_tests as programs


class _Kernel:
    def __call__(self):
        return None

    def method(self):
        return None


def test_python_callable_sees_through_the_wrapper():
    assert ffi.UNWRAPS
    obj = _Kernel()
    for fn in (lambda: None, obj, obj.method, print):
        wrapped = tvm_ffi.convert(fn)
        assert isinstance(wrapped, tvm_ffi.Function)
        assert ffi.python_callable(wrapped) == fn
    assert ffi.python_callable(tvm_ffi.convert(obj)) is obj


def test_what_it_does_not_unwrap():
    assert ffi.python_callable(lambda: None) is None                  # not an FFI function
    assert ffi.python_callable(tvm_ffi.get_global_func("ffi.Array")) is None   # a C++ function
    assert ffi.python_callable(None) is None


def test_a_callable_passed_through_a_global_arrives_as_itself():
    seen = []
    tvm_ffi.register_global_func("test_ffi.take", lambda f: seen.append(ffi.python_callable(f)), override=True)
    take = tvm_ffi.get_global_func("test_ffi.take")

    def kernel():
        return None
    take(kernel)
    take(kernel)
    assert seen == [kernel, kernel]


def test_globals_and_error_classes_are_registered():
    for name in runtime.API:
        assert tvm_ffi.get_global_func(name) is not None and tvm_ffi.get_global_func(f"vta.{name}") is not None

    class LateError(VTAError):
        """Defined after registration: still keeps its type through tvm-ffi."""

    def boom():
        raise LateError("late")
    tvm_ffi.register_global_func("test_ffi.boom", boom, override=True)
    with pytest.raises(LateError, match="late"):
        tvm_ffi.get_global_func("test_ffi.boom")()


class _TargetTimeout(VTAError):
    """Defined after sw.runtime was imported, as the RTL target's errors (cosim.sim.rtl) are."""


class _TimingOut:
    """A golden-model target that times out on demand, as the RTL target does when wait_cycles run out."""

    def __init__(self, cfg):
        self.inner = FsimDevice(cfg, dram_bytes=4 << 20)
        self.cfg, self.dram, self.fail = cfg, self.inner.dram, True

    def run(self, insn_addr, insn_count, wait_cycles=None):
        if self.fail:
            raise _TargetTimeout(f"the run did not finish within wait_cycles = {wait_cycles}")
        return self.inner.run(insn_addr, insn_count, wait_cycles)


@pytest.mark.parametrize("kind", ["python", "ffi"])
def test_target_errors_keep_their_type_through_tvm_ffi(kind, default_cfg):
    api = programs.api(kind)
    target = _TimingOut(default_cfg)
    with runtime.use_target(target) as q:
        a = api.buffer_alloc(4096)
        view = np.from_dlpack(api.buffer_cpu_ptr(q.handle, a))
        view[:] = 0xEE
        view[:64] = np.arange(1, 17, dtype=np.int32).view(np.uint8)
        before = view.copy()
        api.load_2d(q.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))
        with pytest.raises(_TargetTimeout, match="within wait_cycles = 50") as err:
            api.synchronize(q.handle, 50)       # (only the runtime's own instruction buffer was written)
        assert isinstance(err.value, VTAError) and q.insns == [] and (view == before).all()
        target.fail = False                      # the runtime works afterwards
        api.load_2d(q.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))
        api.dep_push(q.handle, 2, 3)
        api.dep_pop(q.handle, 2, 3)
        api.store_2d(q.handle, 0, int(MemId.OUT), a, 64, 1, 1, 1)
        api.synchronize(q.handle, 100_000)
        before[1024:1040] = np.arange(1, 17)
        np.testing.assert_array_equal(view, before)
    # every runtime error class is a VTAError subclass registered with tvm-ffi under its name
    assert {BufferError, InsnError, DeadlockError, _TargetTimeout} <= set(error_classes())
    assert all(tvm_ffi.core.ERROR_NAME_TO_TYPE[c.__name__] is c for c in error_classes())
