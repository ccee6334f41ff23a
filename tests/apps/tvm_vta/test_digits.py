"""TVM 0.27 front end: Relax graphs offloaded to VTA equal TVM's own CPU execution exactly."""

import numpy as np
import pytest
import tvm  # the tvm extra, installed by make: never skipped
from tvm import relax

from apps import digits, tvm_vta


@pytest.fixture(scope="module")
def x_q():
    return digits.quantize_input(digits.load_data()[2][:24])


@pytest.mark.parametrize("net", digits.NETS)
def test_offloaded_equals_tvm_cpu(net, x_q):
    q = digits.model(net).qnet
    cpu, cpu_calls, _ = tvm_vta.run_digits(q, x_q, offloaded=False)
    assert cpu_calls == {}
    vta, vta_calls, counters = tvm_vta.run_digits(q, x_q)
    assert vta.dtype == np.int32 and vta.shape == (len(x_q), 10)
    assert np.array_equal(vta, cpu)
    assert np.array_equal(cpu, digits.reference(q, x_q))     # TVM's CPU computes our semantics
    first = "vta.dense_int8" if net == "mlp" else "vta.conv2d_int8"
    assert vta_calls == {first: 1, "vta.gemm_int8": 1}       # every layer ran on VTA: no CPU fallback
    assert counters["gemm_counter"] > 0


def test_rewritten_module_has_no_cpu_matmul():
    mod = tvm_vta.offload(tvm_vta.relax_module(digits.model("cnn").qnet, 4))
    text = mod.script()
    assert 'R.call_dps_packed("vta.conv2d_int8"' in text and 'R.call_dps_packed("vta.gemm_int8"' in text
    assert "R.matmul" not in text and "R.nn.conv2d" not in text and "R.right_shift" not in text
    for name in tvm_vta.FUNCTIONS:
        assert tvm.get_global_func(name) is not None


def _requant_module(xshape, wshape, clip=(0, 127), conv=None):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(xshape, "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            w = relax.const(np.arange(np.prod(wshape)).reshape(wshape).astype(np.int8) % 7 - 3)
            if conv is not None:
                acc = bb.emit(relax.op.nn.conv2d(x, w, out_dtype="int32", **conv))
                b = relax.const(np.arange(wshape[0], dtype=np.int32).reshape(1, -1, 1, 1))
            else:
                acc = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w), out_dtype="int32"))
                b = relax.const(np.arange(wshape[0], dtype=np.int32))
            y = relax.op.right_shift(acc, relax.const(3, "int32"))
            y = relax.op.astype(relax.op.clip(relax.op.add(y, b), *clip), "int8")
            out = bb.emit_output(bb.emit(y))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("xshape, wshape, conv", [
    ((5, 40), (20, 40), None),
    ((2, 3, 6, 6), (18, 3, 3, 3), {"padding": 1}),
    ((1, 16, 7, 7), (16, 16, 3, 3), {"strides": 2, "padding": 0}),
])
def test_layers_equal_tvm_cpu(xshape, wshape, conv):
    mod = _requant_module(xshape, wshape, conv=conv)
    x = np.random.default_rng(1).integers(-128, 128, xshape, dtype=np.int8)
    cpu = tvm_vta.run(tvm_vta.build(mod), x)
    before = dict(tvm_vta.calls)
    vta = tvm_vta.run(tvm_vta.build(tvm_vta.offload(mod)), x)
    name = "vta.conv2d_int8" if conv else "vta.dense_int8"
    assert tvm_vta.calls[name] == before.get(name, 0) + 1
    assert vta.dtype == np.int8 and np.array_equal(vta, cpu)


@pytest.mark.parametrize("xshape, wshape, clip, conv, message", [
    ((2, 4, 64), (16, 64), (0, 127), None, "supports data (N, K) x weight (M, K) only"),
    ((4, 64), (16, 64), (0, 100), None, "the clip must be [0, 127]"),
    ((1, 16, 8, 8), (16, 8, 3, 3), (0, 127), {"padding": 1, "groups": 2}, "groups = 1 only"),
    ((1, 16, 8, 8), (16, 16, 3, 3), (0, 127), {"padding": 1, "dilation": 2}, "dilation 1 only"),
])
def test_unsupported_is_a_clear_error(xshape, wshape, clip, conv, message):
    mod = _requant_module(xshape, wshape, clip, conv)
    with pytest.raises(tvm_vta.UnsupportedError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        tvm_vta.offload(mod)
    lenient = tvm_vta.offload(mod, strict=False)           # stays on the CPU, visibly
    assert "call_dps_packed" not in lenient.script()


@pytest.mark.rtl
def test_relax_vm_on_rtl(x_q):
    """The Relax VM inside the co-simulation: the offloaded layers run on the RTL, equal to TVM's CPU."""
    import cosim

    q = digits.model("mlp").qnet
    x = x_q[:8]
    out, vta_calls, counters = cosim.run(tvm_vta.run_digits, q, x, config="default")
    cpu, _, _ = tvm_vta.run_digits(q, x, offloaded=False)
    assert np.array_equal(out, cpu)
    assert vta_calls == {"vta.dense_int8": 1, "vta.gemm_int8": 1}
    assert counters["cycles"] > 0
