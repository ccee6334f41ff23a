"""sw.testing.workloads: the benchmark table and its workloads (ResNet-18 layers, dense), exactly, on the golden model."""
import pytest

from sw.testing import workloads


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("layer", list(workloads.RESNET18))
def test_resnet18_layer(on, layer, vt):
    """ResNet-18 C2-C11 (batch = BATCH) on the default config, with bias, 1 and 2 virtual threads."""
    on("default")
    r = workloads.run_conv2d_workload(layer, virtual_threads=vt, seed=vt)
    assert r["ok"]
    assert r["counters"]["gemm_counter"] * 16 * 16 == r["macs"]


@pytest.mark.parametrize("config,layer", [("small", "C8"), ("small", "C10"), ("batch2", "C8"), ("batch2", "C11")])
def test_resnet18_layer_other_configs(on, config, layer):
    q = on(config)
    r = workloads.run_conv2d_workload(layer, virtual_threads=2)
    assert r["ok"]
    assert r["counters"]["gemm_counter"] * q.cfg.MACS_PER_CYCLE == r["macs"]



def test_workloads():
    w = workloads.workloads()
    for name in ["matrix_multiply_opt", "gemm_256", *[f"resnet18.C{i}" for i in range(2, 12)]]:
        fn, args = w[name]
        assert callable(fn) and fn.__module__ == "sw.testing.workloads" and isinstance(args, tuple)
    fn, args = w["matrix_multiply_opt"]
    assert args[:3] == (1, 1024, 1024)
    assert workloads.workloads(1)["resnet18.C8"][1] == ("C8", 1)


def test_workload_runs(on):
    on("small")
    fn, args = workloads.workloads()["gemm_256"]
    r = fn(*args)
    assert r["ok"] and r["macs"] == 256 ** 3 and r["counters"]["gemm_counter"] * 64 == r["macs"]
    fn, args = workloads.workloads()["resnet18.C10"]
    assert fn(*args)["ok"]


@pytest.mark.parametrize("vt", [1, 2])
def test_conv2d_workload_with_a_residual(on, vt):
    """A residual in the epilogue on the small config (no ALU MUL), stride 2."""
    on("small")
    out = workloads.run_conv2d_workload(None, None, 8, 8, 16, 24, 3, 1, 2, vt, residual=True)
    assert out["ok"] and out["macs"] == 24 * 4 * 4 * 16 * 9


def test_depthwise_workload(on):
    """A MobileNetV2 depthwise layer through the DEPTHWISE mode, checked against numpy: 9 MACs per output."""
    on("default")
    fn, args = workloads.workloads(1)["mobilenetv2.dw14s2"]
    assert args == ("dw14s2", 1)
    r = fn(*args)
    assert r["ok"] and r["macs"] == 576 * 7 * 7 * 9
