"""Regressions on a cluster: shards cover every seed once; a real Dask cluster on localhost that loses a
worker mid-run still counts exactly what a serial run counts."""
from pathlib import Path

import pytest

from cosim.verify import cluster
from tests.dask_local import local_cluster

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


@pytest.mark.rtl
@pytest.mark.slow
def test_killed_worker_loses_nothing_and_counts_nothing_twice(tmp_path):
    args = dict(start=500, count=24, configs=["small"], n_ops=12, shard=6, fault=FAULT, minimize=0)
    serial = cluster.fuzz(**args, scheduler=None, out_dir=tmp_path / "serial", progress=None)

    with local_cluster(tmp_path) as local:
        killed = {}

        def kill_one_busy_worker(result):
            if killed:
                return
            busy = {addr: keys for addr, keys in local.client.processing().items() if keys}
            if not busy:
                return
            addr, keys = sorted(busy.items())[0]
            local.kill(addr)
            killed.update(addr=addr, pid=local.pids[addr], keys=[str(k) for k in keys])

        lines = []
        on_cluster = cluster.fuzz(**args, client=local.client, out_dir=tmp_path / "cluster", progress=lines.append,
                                  on_result=kill_one_busy_worker)

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
