"""The co-simulation speed benchmark (cosim.perf.cosim_speed): its measurements and table, on the small config."""
from cosim.perf import cosim_speed as bench


def test_launch_times_measure_the_call_to_its_first_cycle():
    t = bench.launch_times("small", launches=2)
    assert set(t) == {"cold_launch_s", "warm_launch_s", "warm_call_s"}
    assert all(v > 0 for v in t.values())
    assert t["warm_launch_s"] <= t["cold_launch_s"]


def test_cosim_speed_counts_the_long_gemm():
    r = bench.cosim_speed("small", repeats=1)
    assert r["gemm_uops"] > 0 and r["cycles"] > r["gemm_uops"]
    assert r["cycles_per_s"] == r["cycles"] / r["wall"] and r["cycles_per_cpu_s"] == r["cycles"] / r["cpu"]


def test_table_has_a_line_per_config():
    row = {"config": "default", "cold_launch_s": 1.5, "warm_launch_s": 0.02, "warm_call_s": 0.05, "cycles": 274719,
           "cosim_cycles_per_s": 250000.0, "cosim_cycles_per_cpu_s": 260000.0, "ceiling_cycles_per_s": 300000.0,
           "ceiling_cycles_per_cpu_s": 325000.0, "ratio": 0.8, "utilization": 0.9,
           "ceiling_extra_cycles_per_s": 200000.0, "ceiling_extra_cycles_per_cpu_s": 150000.0}
    text = bench.format_table([row, {**row, "config": "batch2"}], ("--threads", "2"))
    lines = text.splitlines()
    assert len(lines) == 3 and "ceiling --threads 2" in lines[0]
    assert lines[1].split() == ["default", "1.500", "0.020", "0.050", "274,719", "250,000", "260,000", "300,000",
                                "325,000", "0.80", "200,000", "150,000"]
    assert lines[2].startswith("batch2")
