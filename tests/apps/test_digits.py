"""The digits classifier: deterministic training, int8 accuracy, sw.ops equal to the numpy reference."""

import numpy as np
import pytest

import cosim
from apps import digits
from sw import runtime  # needs scikit-learn (dev extra); not skipped when missing

NETS = digits.NETS


@pytest.fixture(scope="module")
def data():
    _, _, x_test, y_test = digits.load_data()
    return digits.quantize_input(x_test), y_test


def test_split_and_input():
    x_tr, y_tr, x_te, y_te = digits.load_data()
    assert x_tr.shape == (1797 - digits.N_TEST, 64) and x_te.shape == (digits.N_TEST, 64)
    assert set(np.unique(y_te)) == set(range(10))
    q = digits.quantize_input(x_te)
    assert q.dtype == np.int8 and q.min() >= 0 and q.max() <= 112
    with pytest.raises(ValueError):
        digits.quantize_input(np.array([[17]]))


@pytest.mark.parametrize("net", NETS)
def test_training_is_deterministic(net):
    a = digits.train(net, seed=0, epochs=2)
    b = digits.train(net, seed=0, epochs=2)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    qa, qb = digits.quantize(net, a), digits.quantize(net, b)
    for la, lb in zip(qa.layers, qb.layers):
        assert np.array_equal(la.weight, lb.weight) and np.array_equal(la.bias, lb.bias) and la.shift == lb.shift


@pytest.mark.parametrize("net", NETS)
def test_accuracy(net):
    m = digits.model(net)
    assert m.float_accuracy >= 0.95
    assert m.int8_accuracy >= m.float_accuracy - 0.02
    for layer in m.qnet.layers:
        assert layer.weight.dtype == np.int8 and layer.bias.dtype == np.int32
        assert np.abs(layer.weight.astype(int)).max() <= 127


@pytest.mark.parametrize("net", NETS)
def test_golden_model_equals_reference(net, data):
    x_q, y = data
    m = digits.model(net)
    with runtime.use_target("default"):
        logits, counters = digits.run(m.qnet, x_q)
    ref = digits.reference(m.qnet, x_q)
    assert logits.dtype == np.int32 and logits.shape == (len(x_q), 10)
    assert np.array_equal(logits, ref)
    assert digits.accuracy(digits.predict(logits), y) == m.int8_accuracy
    assert counters["gemm_counter"] > 0


@pytest.mark.rtl
def test_rtl_equals_reference(data):
    """The whole test split (360 images, about 4 s of simulation) on the RTL of the default config."""
    x_q, y = data
    nets = [digits.model(n).qnet for n in NETS]
    calls = [(digits.run, (q, x_q), {}) for q in nets]                               # 2 virtual threads
    calls += [(digits.run, (q, x_q[:16]), {"virtual_threads": 1}) for q in nets]
    results = cosim.run_many(calls, config="default")
    for q, (logits, counters) in zip(nets, results[:2]):
        assert np.array_equal(logits, digits.reference(q, x_q)), q.name
        assert digits.accuracy(digits.predict(logits), y) == digits.model(q.name).int8_accuracy
        assert 0 < counters["cycles"] / len(x_q) < (200 if q.name == "mlp" else 3000)
    for q, (logits, _) in zip(nets, results[2:]):
        assert np.array_equal(logits, digits.reference(q, x_q[:16])), q.name
