"""Regressions on a cluster: shards cover every seed once; a real Dask cluster on localhost that loses a
worker mid-run still counts exactly what a serial run counts."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cosim.verify import cluster

ROOT = Path(__file__).resolve().parents[3]
FAULT = "alu-max-imm-as-min"     # so that the counts include failures too


def test_plan_covers_every_seed_of_every_config_once():
    shards = cluster.plan(10, 25, ["small", "default"], shard=10)
    assert [s["id"] for s in shards] == ["small:10-19", "small:20-29", "small:30-34",
                                         "default:10-19", "default:20-29", "default:30-34"]
    for name in ("small", "default"):
        seeds = [x for s in shards if s["id"].startswith(name) for x in s["seeds"]]
        assert seeds == list(range(10, 35))
    assert [s["stall"] for s in shards[:3]] == [False, True, False]      # every other shard: DRAM pauses
    with pytest.raises(ValueError, match="shard = 0"):
        cluster.plan(0, 10, ["small"], shard=0)


def test_a_round_is_steered_toward_the_holes_of_its_config():
    shards = cluster.plan(0, 4, ["small", "default"], shard=2)
    coverage = {"small": {"vta.load.pad": {("INP", "x_pad_1", "4+"): 0, ("INP", "x_pad_0", "1"): 1},
                          "vta.axi.backpressure": {("read", "AR"): 0}},
                "default": {"vta.load.pad": {("INP", "x_pad_1", "4+"): 5}}}
    cluster.steer_round(shards, coverage)
    assert [(s["id"], s["bias"], s["stall"]) for s in shards] == [
        ("small:0-1", {"pad": 0.3}, True), ("small:2-3", {"pad": 0.3}, True),
        ("default:0-1", None, False), ("default:2-3", None, True)]


def _start(args, log, env):
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)      # its own process group: the nanny, the worker, its simulator
    proc.wait()


@pytest.mark.rtl
@pytest.mark.slow
def test_killed_worker_loses_nothing_and_counts_nothing_twice(tmp_path):
    from distributed import Client

    from cosim.model.build import CACHE_DIR
    dask = str(Path(sys.executable).parent / "dask")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "")
                                                                      .split(os.pathsep) if p]),
               VTA_COSIM_CACHE=str(CACHE_DIR))
    args = dict(start=500, count=24, configs=["small"], n_ops=12, shard=6, fault=FAULT, minimize=0)
    serial = cluster.fuzz(**args, scheduler=None, out_dir=tmp_path / "serial", progress=None)

    file = tmp_path / "scheduler.json"
    log = open(tmp_path / "dask.log", "w")
    procs = [_start([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(file)], log, env)]
    client = None
    try:
        deadline = time.time() + 60
        while not file.exists() and time.time() < deadline:
            time.sleep(0.2)
        workers = [_start([dask, "worker", "--scheduler-file", str(file), "--nthreads", "1", "--nworkers", "1",
                           "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}"], log, env) for i in range(2)]
        procs += workers
        client = Client(scheduler_file=str(file), timeout=60)
        client.wait_for_workers(2, timeout=120)
        pids = client.run(os.getpid)                              # worker address -> process id
        killed = {}

        def kill_one_busy_worker(result):
            if killed:
                return
            busy = {addr: keys for addr, keys in client.processing().items() if keys}
            if not busy:
                return
            addr, keys = sorted(busy.items())[0]
            victim = next(p for p in workers if os.getpgid(pids[addr]) == p.pid)
            os.killpg(victim.pid, signal.SIGKILL)
            killed.update(addr=addr, pid=pids[addr], keys=[str(k) for k in keys])

        lines = []
        on_cluster = cluster.fuzz(**args, client=client, out_dir=tmp_path / "cluster", progress=lines.append,
                                  on_result=kill_one_busy_worker)
    finally:
        if client is not None:
            client.close()
        for p in reversed(procs):
            _stop(p)
        log.close()

    assert killed, "no worker was busy when the first shard came back"
    lost = [k.split("-", 3)[-1] for k in killed["keys"]]           # the shards the killed worker held
    ran_on = {sid: r["worker"] for sid, r in on_cluster["results"].items()}
    print(f"\nkilled worker pid {killed['pid']} holding shards {lost}")
    print("\n".join(lines))
    print(f"serial: {serial['programs']} programs, failing seeds {[f['seed'] for f in serial['failures']]}")
    print(f"cluster: {on_cluster['programs']} programs in {on_cluster['shards']} shards, failing seeds "
          f"{[f['seed'] for f in on_cluster['failures']]}, shards ran on {sorted(set(ran_on.values()))}")
    assert lost and all(not ran_on[sid].endswith(f":{killed['pid']}") for sid in lost)   # re-run elsewhere
    assert on_cluster["programs"] == serial["programs"] == 24 and on_cluster["shards"] == 4
    key = [(f["config"], f["seed"], tuple(f["failure"]["signature"])) for f in serial["failures"]]
    assert [(f["config"], f["seed"], tuple(f["failure"]["signature"])) for f in on_cluster["failures"]] == key
    assert key, "the injected fault makes some of these programs fail"
    assert on_cluster["coverage"] == serial["coverage"]             # each shard's coverage merged once
    assert all(Path(f["replay_file"]).exists() for f in on_cluster["failures"])
