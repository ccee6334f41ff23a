"""apps.demo (``make sim``): the default demo passes on the golden model and on the RTL, and says so."""
import pytest

from apps import demo
from sw.config import load_config


@pytest.mark.parametrize("target", ["fsim", pytest.param("rtl", marks=pytest.mark.rtl)])
def test_default_demo_passes(target, capsys):
    assert demo.main(["--target", target]) == 0
    out = capsys.readouterr().out
    assert out.count(": PASS (equal to numpy: True); ran in ") == len(demo.DEMOS)
    assert out.rstrip().endswith("ALL PASS")
    assert f"target {target}" in out
    assert "counters:" not in out and "=0" not in out          # the few counters that matter, no dump
    assert "MACs 131,072" in out and "DRAM bytes moved 34,968" in out
    if target == "rtl":
        assert out.count("reading: ") == len(demo.DEMOS) and "MAC utilization " in out


RTL_GEMM = {"inp_load_nbytes": 1024, "wgt_load_nbytes": 32768, "acc_load_nbytes": 0, "uop_load_nbytes": 152,
            "out_store_nbytes": 1024, "gemm_counter": 512, "alu_counter": 192, "cycles": 5773, "load_busy": 5311,
            "compute_busy": 5715, "store_busy": 5311, "fetch_busy": 100, "tokens_l2g": 0}


def test_summary_of_an_rtl_run():
    assert demo.summary(RTL_GEMM, load_config("default")) == [
        "cycles 5,773; MACs 131,072; MAC utilization 8.9%; DRAM bytes moved 34,968",
        "busy share of the cycles: load 92%, compute 99%, store 92%",
        "reading: 512 GEMM cycles of work against at least 4,371 cycles of DRAM traffic and a launch's fixed cost: "
        "a tiny run loads each tile once and is memory-bound; large layers reuse their tiles and reach 95 % or more "
        "(docs/performance.md: 95.1 % on a 256x256x256 GEMM)"]


def test_summary_without_gemm_and_on_the_golden_model():
    alu_only = dict(RTL_GEMM, gemm_counter=0, inp_load_nbytes=0, wgt_load_nbytes=0)
    lines = demo.summary(alu_only, load_config("default"))
    assert lines[0] == "cycles 5,773; no GEMM; DRAM bytes moved 1,176"
    assert lines[2].startswith("reading: no GEMM, so MAC utilization does not apply")
    fsim = {k: v for k, v in RTL_GEMM.items() if k not in ("cycles", "load_busy", "compute_busy", "store_busy",
                                                             "fetch_busy", "tokens_l2g")}
    assert demo.summary(fsim, load_config("default")) == [
        "MACs 131,072; DRAM bytes moved 34,968; GEMM micro-ops 512, ALU micro-ops 192 "
        "(cycles are counted on the RTL only: --target rtl)"]


def test_unknown_demo_is_refused(capsys):
    with pytest.raises(SystemExit):
        demo.main(["--demo", "mnist"])
    assert "invalid choice: 'mnist'" in capsys.readouterr().err


@pytest.mark.parametrize("ok", [True, False])
def test_zoo_demo_hands_its_options_to_the_zoo(ok, monkeypatch, capsys):
    """``--demo zoo`` runs ``python -m apps.zoo`` with the demo's target, config and ``--reduced`` (the zoo itself
    is tested in tests/apps/zoo), and reports its outcome."""
    import apps.zoo.__main__ as zoo_main

    seen = []
    monkeypatch.setattr(zoo_main, "main", lambda argv: seen.append(argv) or (0 if ok else 1))
    argv = ["--config", "configs/default.json", "--demo", "zoo", "--reduced", "--target", "fsim"]
    assert demo.main(argv) == (0 if ok else 1)
    assert seen == [["--target", "fsim", "--config", "configs/default.json", "--reduced"]]
    assert capsys.readouterr().out.rstrip().endswith("ALL PASS" if ok else "FAILED")
