"""Sweeps on the RTL: a two-point sweep of configs the suite builds anyway and a tiny network, on a real Dask
scheduler and two workers on localhost, one of which is killed mid-sweep; a third point that times out; the rerun
from the cache; the cycles equal to those of ``python -m apps.onnx MODEL --config C --target rtl``."""
import re
import time

import onnx
import psutil
import pytest

from apps.dse.spec import load_sweep
from apps.dse.sweep import run_sweep
from apps.dse.tasks import run_task
from apps.onnx.__main__ import main as onnx_main
from tests.apps.onnx.qdq import quantized
from tests.dask_local import local_cluster


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("dse") / "conv.onnx"
    onnx.save(quantized("conv")[0], path)
    return path


def _tasks_of(marker: str) -> list:
    return [p for p in psutil.process_iter(["cmdline"]) if any(marker in a for a in (p.info["cmdline"] or []))]


@pytest.mark.slow
def test_a_task_past_its_timeout_is_killed_with_everything_under_it(tmp_path):
    from sw.config import load_config

    # the whole config's synthesis (a minute of yosys at least; this config's is in no cache) past a 2 s timeout
    cfg = load_config("small").with_changes(LOG_UOP_BUFF_SIZE=12, LOG_BUS_WIDTH=8).to_dict()
    task = {"kind": "synth", "point": "small-u12_bus8", "config": cfg, "cache": str(tmp_path / "c"), "timeout": 2.0,
            "family": "ecp5", "unit": None, "key": "synth-timeout-test"}
    t = time.time()
    out = run_task(task)
    assert time.time() - t < 10
    err = out["results"]["ecp5"]["error"]
    assert err.startswith("timed out after 2 s (log: ") and out["kind"] == "synth" and out["point"] == "small-u12_bus8"
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())       # a failure is not cached
    work = re.search(r"log: (.*)/log.txt", err)[1]
    assert _tasks_of(work) == [] and _tasks_of("build/synth/small-u12_bus8.v") == []   # the child, fpga.resources, yosys


def _onnx_cycles(path, config, capsys) -> int:
    capsys.readouterr()
    assert onnx_main([str(path), "--config", config, "--target", "rtl", "--no-ort"]) == 0
    return int(re.search(r"^cycles ([\d,]+);", capsys.readouterr().out, re.M)[1].replace(",", ""))


@pytest.mark.rtl
@pytest.mark.slow
def test_a_sweep_on_a_cluster_that_loses_a_worker(tiny, tmp_path, capsys):
    from cosim import build_model
    # small-u12_bus8 is a config no model cache holds: its build runs past the rtl timeout and is killed (so it
    # never lands in a cache), while small and default, whose models the suite builds anyway (here first, so that
    # no build runs inside their tasks' timeout), run in a few seconds
    for name in ("small", "default"):
        build_model(name)
    spec = dict(configs=["small", "default"], grid=[{"base": "small", "LOG_UOP_BUFF_SIZE": 12, "LOG_BUS_WIDTH": 8}],
                networks=[str(tiny)], boards=["ulx3s"], unit="footprint", timeout={"rtl": 12})
    sweep = load_sweep(None, name="tiny", **spec)
    assert [p.name for p in sweep.points] == ["small-u12_bus8", "small", "default"]
    with local_cluster(tmp_path) as local:
        killed, seen = {}, []

        def kill_a_busy_worker(out):
            seen.append(out)
            if killed:
                return
            busy = {a: [str(k) for k in keys] for a, keys in local.client.processing().items() if keys}
            if not busy:
                return
            # a worker on a good point's task if one is busy (its task then runs again elsewhere in a second);
            # else the one holding small-u12_bus8's rtl task, busy until its timeout
            addr, keys = min(busy.items(), key=lambda item: (any("small-u12" in k for k in item[1]), item[0]))
            children = psutil.Process(local.pids[addr]).children(recursive=True)
            local.kill(addr)
            killed.update(pid=local.pids[addr], keys=keys, before=len(seen), children=children)

        lines = []
        results = run_sweep(sweep, "tcp://", out_dir=tmp_path / "out", client=local.client, progress=lines.append,
                            on_result=kill_a_busy_worker)
    print("\n".join(lines))
    assert killed, "no worker was busy when the first result came back"
    gone, alive = psutil.wait_procs(killed["children"], timeout=5)
    assert not alive, f"the killed worker's tasks still run: {alive}"
    st = results["stats"]
    assert st["tasks"] == 6 and len(seen) == 6                   # 3 rtl, 3 synth (one family): each counted once
    # a result is computed, or (a task the killed worker held, whose child stored it before it died) from the cache
    assert st["failed"] == 1 and st["computed"] + st["cached"] == 5
    lost_cached = [o for o in seen for r in o["results"].values() if r.get("cached")]
    assert all(any(f"-{o['kind']}-{o['point']}-" in k for k in killed["keys"]) for o in lost_cached)
    pts = {p["name"]: p for p in results["points"]}
    assert pts["small-u12_bus8"]["rtl"]["conv"]["error"].startswith("timed out after 12 s")
    assert pts["small-u12_bus8"]["synth"]["ecp5"]["LUT"] > 0         # the point's synthesis still ran
    for out in seen[:killed["before"]]:                              # finished before the kill: kept as they were
        assert pts[out["point"]][out["kind"]] == out["results"]
    again = [o for o in seen[killed["before"]:] if any(f"-{o['kind']}-{o['point']}-" in k for k in killed["keys"])]
    assert again and all(not o["worker"].endswith(f":{killed['pid']}") for o in again)     # ran elsewhere
    cycles = {name: pts[name]["rtl"]["conv"]["cycles"] for name in ("small", "default")}
    assert all(pts[n]["rtl"]["conv"]["exact"] for n in cycles)
    assert cycles == {"small": _onnx_cycles(tiny, "small", capsys), "default": _onnx_cycles(tiny, "default", capsys)}
    for name in ("small", "default"):
        s = pts[name]["synth"]["ecp5"]
        assert s["LUT"] > 0 and s["devices"]["LFE5U-85F (ULX3S)"]["fits"] is True
    # the rerun of the points that succeeded: every result from the cache, nothing submitted, nothing run
    again = run_sweep(load_sweep(None, name="tiny", **{**spec, "grid": []}), scheduler=None, out_dir=tmp_path / "out",
                      progress=None)
    assert again["stats"]["tasks_cached"] == again["stats"]["tasks"] == 4 and again["stats"]["computed"] == 0
    assert {p["name"]: p["rtl"]["conv"]["cycles"] for p in again["points"]} == cycles


def test_fmax_is_read_from_the_board_build_s_report_and_asked_of_ecp5_boards_only(tiny, tmp_path):
    from apps.dse.tasks import fmax_of
    from sw.cli import UsageError

    report = {"fmax": {"$glbnet$clk": {"fmax_mhz": 101.2, "target_mhz": 103.01, "pass": False},
                       "$glbnet$jtck": {"fmax_mhz": 250.0, "target_mhz": 100.0, "pass": True}},
              "pll_mhz": 100.0, "seconds": 2758.0}
    assert fmax_of(report) == {"fmax_mhz": 101.2, "target_mhz": 103.01, "clock": "$glbnet$clk", "pll_mhz": 100.0,
                               "seconds": 2758.0}
    with pytest.raises(RuntimeError, match="names no clock"):
        fmax_of({"fmax": {}})
    sweep = load_sweep(None, configs=["small"], networks=[str(tiny)], boards=["ultra96"], fmax=True)
    with pytest.raises(UsageError, match="Fmax is measured for ECP5 boards only; add the board ulx3s"):
        run_sweep(sweep, scheduler=None, out_dir=tmp_path)
    assert not (tmp_path / "cache").exists()
