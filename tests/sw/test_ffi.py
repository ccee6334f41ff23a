"""sw.ffi: the Python callable behind a tvm-ffi function, global registration, error classes."""
import pytest
import tvm_ffi

from sw import ffi, runtime  # noqa: F401 - importing the runtime registers the globals
from sw.pipeline import VTAError


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
    for name in runtime._API:
        assert tvm_ffi.get_global_func(name) is not None and tvm_ffi.get_global_func(f"vta.{name}") is not None

    class LateError(VTAError):
        """Defined after registration: still keeps its type through tvm-ffi."""

    def boom():
        raise LateError("late")
    tvm_ffi.register_global_func("test_ffi.boom", boom, override=True)
    with pytest.raises(LateError, match="late"):
        tvm_ffi.get_global_func("test_ffi.boom")()
