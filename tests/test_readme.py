"""The README and docs/, followed as a new user follows them: every command and snippet in them is run here (the long
ones with small arguments) or by the test named for it, which runs exactly that command; a command added to the README
or a document without saying how it is tested fails here.

Each ``make`` line is expanded with ``make -n`` and must run exactly the Python commands listed for it; each Python
command (from the README or from such an expansion) has one proof: ``Run`` (its ``main`` with small arguments, here),
``Covered`` (the test file that runs it, and the call it makes), ``Suite`` (the test suite itself) or ``NotRun`` (too
long for CI; the reason is given and the list of such commands is fixed below).
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
TEXT = "\n".join(p.read_text() for p in DOCS)
PY = ".venv/bin/python"
EXAMPLES = "examples/cocotb/test_registers.py examples/cocotb/test_gemm.py examples/cocotb/test_axi_error.py"


def readme_commands() -> list[str]:
    """The command lines of the README and docs/*.md: indented lines starting with ``make`` or the venv's python,
    comments cut."""
    out = []
    for line in TEXT.splitlines():
        if re.match(rf"    (make |{re.escape(PY)} )", line):
            out.append(re.sub(r"\s{2,}#.*$", "", line).strip())
    return list(dict.fromkeys(out))


def readme_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", TEXT, re.S)


@dataclass
class Run:
    """Run ``python -m module`` as ``main(argv)`` here, in a scratch directory; ``marks``: rtl, slow, fpga."""
    argv: list
    marks: tuple = ()


@dataclass
class Covered:
    """The test file that runs the command, and the call it makes (a substring of that file)."""
    test: str
    call: str


@dataclass
class Suite:
    """A pytest invocation of this suite."""


@dataclass
class NotRun:
    reason: str


@dataclass
class Make:
    expansion: list = field(default_factory=list)


MAKE = {
    "make sim": Make([f"{PY} -m apps.demo --config configs/default.json --demo default --target rtl"]),
    "make test": Make([f"{PY} -m pytest -n auto -q --junitxml=build/test-results/pytest.xml tests"]),
    "make test-fast": Make([f'{PY} -m pytest -n auto -q -m "not rtl and not slow and not fpga" tests']),
    "make bench": Make([f"{PY} -m sw.testing.fsim_speed --config configs/default.json --markdown docs/performance.md",
                        f"{PY} -m cosim.perf.cosim_speed --config configs/default.json configs/batch2.json --markdown "
                        "docs/performance.md",
                        f"{PY} -m cosim.perf.operators --config configs/default.json --markdown docs/performance.md",
                        f"{PY} -m apps.zoo --target fsim --config configs/default.json --markdown docs/performance.md",
                        f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target rtl --markdown "
                        "docs/performance.md"]),
    "make sim DEMO=zoo": Make([f"{PY} -m apps.demo --config configs/default.json --demo zoo --target rtl"]),
    "make sim DEMO=zoo TARGET=fsim": Make([f"{PY} -m apps.demo --config configs/default.json --demo zoo --target fsim"]),
    "make fuzz N=1000": Make([f"{PY} -m cosim.verify.regress --fuzz 1000 --config configs/default.json --mem dpi "
                              "--scheduler local --junit build/test-results/fuzz.xml"]),
    "make fuzz SCHEDULER=none": Make([f"{PY} -m cosim.verify.regress --fuzz 1000 --config configs/default.json --mem dpi "
                                      "--scheduler none --junit build/test-results/fuzz.xml"]),
    "make fuzz N=200 SCHEDULER=none": Make([f"{PY} -m cosim.verify.regress --fuzz 200 --config configs/default.json "
                                            "--mem dpi --scheduler none --junit build/test-results/fuzz.xml"]),
    "make fuzz MEM=cocotbext N=50": Make([f"{PY} -m cosim.verify.regress --config configs/default.json --mem cocotbext "
                                          "--junit build/test-results/reference.xml",
                                          f"{PY} -m cosim.verify.regress --fuzz 50 --config configs/default.json --mem "
                                          "cocotbext --scheduler local --junit build/test-results/fuzz.xml"]),
    "make coverage COV_N=200": Make([f"{PY} -m cosim.verify.coverage --config configs/default.json --fuzz 200 "
                                     "--out build/coverage"]),
    "make formal": Make([f"{PY} -m hw.formal --markdown docs/verification.md", f"{PY} -m hw.formal --mutants"]),
    "make verilog": Make([f"{PY} -m hw --config configs/default.json -o build/vta.v --docs",
                          f"{PY} -m fpga.fusesoc --config configs/default.json -o build/fusesoc"]),
    "make sim DEMO=digits": Make([f"{PY} -m apps.demo --config configs/default.json --demo digits --target rtl"]),
    "make sim CONFIG=configs/small.json": Make([f"{PY} -m apps.demo --config configs/small.json --demo default "
                                                "--target rtl"]),
    "make cocotb": Make([f"{PY} -m cosim.cocotb {EXAMPLES} --config configs/default.json"]),
    "make cocotb TESTS=tests/cocotb/test_mine.py CONFIG=configs/small.json": Make(
        [f"{PY} -m cosim.cocotb tests/cocotb/test_mine.py --config configs/small.json"]),
    "make test JOBS=1": Make([f"{PY} -m pytest -n 1 -q --junitxml=build/test-results/pytest.xml tests"]),
    "make fpga-report": Make([f"{PY} -m pip install --quiet -e '.[fpga]'",
                              f"{PY} -m fpga.resources --report --configs configs/ulx3s.json configs/small.json "
                              "configs/default.json --markdown docs/fpga.md"]),
    "make bitstream BOARD=ulx3s": Make([f"{PY} -m pip install --quiet -e '.[fpga]'",
                                        f"{PY} -m fpga.board --board ulx3s --config configs/ulx3s.json --freq 100 "
                                        "--timing 103 --seed 7 --docs docs/fpga.md"]),
    "make venv-fpga": Make([f"{PY} -m pip install --quiet -e '.[fpga]'"]),
    'make fuzz N=100000 SCHEDULER=tcp://host:8786 FUZZ_CONFIGS="configs/default.json configs/small.json"': Make(
        [f"{PY} -m cosim.verify.regress --fuzz 100000 --config configs/default.json --config configs/small.json --mem dpi "
         "--scheduler tcp://host:8786 --junit build/test-results/fuzz.xml"]),
    "make fuzz FAULT=axi-errors N=200 SCHEDULER=none": Make(
        [f"{PY} -m cosim.verify.regress --fuzz 200 --config configs/default.json --mem dpi --scheduler none "
         "--junit build/test-results/fuzz.xml --fault axi-errors"]),
    "make fuzz N=2000": Make([f"{PY} -m cosim.verify.regress --fuzz 2000 --config configs/default.json --mem dpi "
                              "--scheduler local --junit build/test-results/fuzz.xml"]),
    "make sim DEMO=resnet18": Make([f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target rtl"]),
    "make sim DEMO=resnet18 TARGET=fsim": Make([f"{PY} -m apps.demo --config configs/default.json --demo resnet18 "
                                                "--target fsim"]),
    "make sim DEMO=digits-onnx": Make([f"{PY} -m apps.demo --config configs/default.json --demo digits-onnx "
                                       "--target rtl"]),
    "make dse": Make([f"{PY} -m pip install --quiet -e '.[fpga]'",
                      f"{PY} -m apps.dse --sweep default --scheduler local --workers 2"]),
    "make dse SWEEP=resnet18": Make([f"{PY} -m pip install --quiet -e '.[fpga]'",
                                     f"{PY} -m apps.dse --sweep resnet18 --scheduler local --workers 2"]),
    "make dse SWEEP=mobilenetv2": Make([f"{PY} -m pip install --quiet -e '.[fpga]'",
                                        f"{PY} -m apps.dse --sweep mobilenetv2 --scheduler local --workers 2"]),
    "make dse SWEEP=resnet18 SCHEDULER=tcp://host:8786": Make(
        [f"{PY} -m pip install --quiet -e '.[fpga]'",
         f"{PY} -m apps.dse --sweep resnet18 --scheduler tcp://host:8786 --workers 2"]),
    "make bench-resnet18": Make([f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target fsim",
                                 f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target rtl"]),
}

RTL = ("rtl",)
SCHEDULER = Covered("tests/cosim/verify/test_cluster.py", 'cluster.fuzz(**args, scheduler=None')
# a sweep's command line end to end: one config (built by the suite anyway), the reduced BERT encoder, the
# resources of one small block, in this process; the cluster path is tests/apps/dse/test_sweep.py's
DSE = Run(["--configs", "small", "--network", "bert:reduced", "--board", "ulx3s", "--unit", "footprint",
           "--scheduler", "none", "--out", "dse"], RTL)
DSE_CLUSTER = Covered("tests/apps/dse/test_sweep.py", 'results = run_sweep(sweep, "tcp://", out_dir=tmp_path / "out"')
RESNET_RTL = Covered("tests/apps/test_resnet18.py", 'res = m.run({resnet18.INPUT: x}, target="rtl")')

PYTHON = {
    f"{PY} -m apps.dse --sweep default --scheduler local --workers 2": DSE,
    f"{PY} -m apps.dse --sweep resnet18 --scheduler local --workers 2": DSE,
    f"{PY} -m apps.dse --sweep mobilenetv2 --scheduler local --workers 2": DSE,
    f"{PY} -m apps.dse --sweep resnet18 --scheduler tcp://host:8786 --workers 2": DSE_CLUSTER,
    f"{PY} -m apps.dse --sweep resnet18 --markdown docs/dse.md --png-dir docs/dse": DSE,
    f"{PY} -m apps.dse --sweep mobilenetv2 --markdown docs/dse.md --png-dir docs/dse": DSE,
    # the test suite itself
    f"{PY} -m pytest -n auto -q --junitxml=build/test-results/pytest.xml tests": Suite(),
    f'{PY} -m pytest -n auto -q -m "not rtl and not slow and not fpga" tests': Suite(),
    f"{PY} -m pytest -n 1 -q --junitxml=build/test-results/pytest.xml tests": Suite(),
    f"{PY} -m pytest -m rtl tests": Suite(),
    f"{PY} -m pytest -q tests/sw/targets/test_zynq.py tests/sw/targets/test_launch.py "
    "tests/cosim/sim/test_vboard.py": Suite(),
    f"{PY} -m pip install --quiet -e '.[fpga]'": NotRun("installs the fpga extra (setup, never in a test)"),
    # make sim and the demos
    f"{PY} -m apps.demo --config configs/default.json --demo default --target rtl":
        Covered("tests/apps/test_demo.py", 'demo.main(["--target", target])'),
    f"{PY} -m apps.demo --config configs/small.json --demo default --target rtl":
        Run(["--config", "configs/small.json", "--target", "rtl"], RTL),
    f"{PY} -m apps.demo --demo digits": Run(["--demo", "digits", "--images", "4"], RTL),
    f"{PY} -m apps.demo --demo digits --images 16": Run(["--demo", "digits", "--images", "4"], RTL),
    f"{PY} -m apps.demo --config configs/default.json --demo digits --target rtl":
        Run(["--demo", "digits", "--images", "4"], RTL),
    f"{PY} -m apps.digits --rtl 16": Run(["--net", "mlp", "--rtl", "4"], RTL),
    f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target fsim":
        Run(["--demo", "resnet18", "--width", "8", "--image", "32", "--target", "fsim"], ("slow",)),
    f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target rtl": RESNET_RTL,
    f"{PY} -m apps.demo --config configs/default.json --demo digits-onnx --target rtl":
        Covered("tests/apps/test_digits_onnx.py", 'digits_onnx.evaluate("cnn", "rtl", images=32)'),
    f"{PY} -m apps.demo --config configs/default.json --demo zoo --target fsim":
        Covered("tests/apps/test_demo.py", '"--demo", "zoo", "--reduced", "--target", "fsim"'),
    f"{PY} -m apps.demo --config configs/default.json --demo zoo --target rtl":
        Covered("tests/apps/zoo/test_zoo.py", 'cosim.run_many(calls, config="default")'),     # the reduced zoo
    f"{PY} -m apps.demo --config configs/default.json --demo resnet18 --target rtl --markdown docs/performance.md":
        Run(["--demo", "resnet18", "--width", "8", "--image", "32", "--target", "rtl", "--markdown", "p.md"],
            ("rtl", "slow")),
    f"{PY} -m apps.zoo --target fsim --reduced --models mobilenetv2 bert":
        Covered("tests/apps/zoo/test_zoo.py", 'main(["--target", "fsim", "--reduced", "--models", "dcgan", "bert"'),
    f"{PY} -m apps.zoo --target fsim --config configs/default.json --markdown docs/performance.md":
        Covered("tests/apps/zoo/test_zoo.py", 'main(["--target", "fsim", "--reduced", "--models", "dcgan", "bert"'),
    f"{PY} -m apps.resnet18 --compare 8":
        Run(["--width", "8", "--image", "32", "--calib", "2", "--compare", "1", "-o", "r.onnx"], ("slow",)),
    f"{PY} -m apps.zoo --target fsim --formats qdq qoperator dynamic --markdown docs/onnx.md --marker formats":
        Covered("tests/apps/zoo/test_zoo.py", '"--formats", "qdq", "qoperator",'),
    f"{PY} -m apps.onnx FLOAT.onnx --calibrate data.npy --format qoperator":
        Covered("tests/apps/onnx/test_calibrate.py", 'argv = [str(path), "--format", fmt]'),
    f"{PY} -m apps.onnx FLOAT.onnx --format dynamic":
        Covered("tests/apps/onnx/test_calibrate.py", '("dynamic", "dyn", "ConvInteger")'),
    f"{PY} -m apps.tvm_vta MODEL.onnx --export build/model.so":
        Covered("tests/apps/tvm_vta/test_main.py", 'main([str(tmp_path / "m.onnx"), "--export"'),
    f"{PY} -m apps.onnx MODEL.onnx":
        Covered("tests/apps/onnx/test_model.py", 'main([str(path), "--csv", str(tmp_path / "r.csv")'),
    f"{PY} -m apps.onnx MODEL.onnx --target rtl --csv build/m.csv --png build/m.png": RESNET_RTL,
    f"{PY} -m apps.onnx MODEL.onnx --config ulx3s":
        Covered("tests/apps/onnx/test_model.py", 'main([str(path), "--config", "ulx3s", "--no-ort"])'),
    f"{PY} -m apps.onnx FLOAT.onnx --calibrate data.npy --per-channel":
        Covered("tests/apps/onnx/test_calibrate.py", 'main([str(path), "--calibrate", str(tmp_path / "cal.npy"), '
                                                     '"--per-channel",'),
    f"{PY} -m apps.onnx MODEL.onnx --input batch.npz --target rtl":
        Covered("tests/apps/onnx/test_model.py", '"--input", str(tmp_path / "batch.npz"), "--target", "rtl"'),
    # examples
    f"{PY} examples/get_started_vector_add.py": Covered("tests/sw/test_examples.py", "assert load(name).main([]) == 0"),
    f"{PY} examples/blocked_matrix_multiply.py": Covered("tests/sw/test_examples.py", "assert load(name).main([]) == 0"),
    f"{PY} examples/conv2d.py --layer C8":
        Covered("tests/sw/test_examples.py", "assert load(name).main([]) == 0"),      # C8 is the default layer
    f"{PY} examples/simple_gemm.py --config small --target rtl":
        Covered("tests/sw/test_examples.py", '"examples/simple_gemm.py", "--config", "small", "--target", "rtl"'),
    # benchmarks and measurements
    f"{PY} -m sw.testing.fsim_speed --config configs/default.json --markdown docs/performance.md":
        Run(["--config", "small", "--csv", "b.csv", "--markdown", "p.md"], ("slow",)),
    f"{PY} -m cosim.perf.cosim_speed --config configs/default.json configs/batch2.json --markdown docs/performance.md":
        Covered("tests/cosim/perf/test_cosim_speed.py", 'bench.cosim_speed("small", repeats=1)'),   # main: also a ceiling
    f'{PY} -m cosim.perf.cosim_speed --config configs/default.json --ceiling-args="--threads 2"':
        NotRun("builds a second ceiling model with --threads 2 (minutes); its flags are checked below"),
    f"{PY} -m cosim.perf.operators --config configs/default.json --markdown docs/performance.md":
        Covered("tests/cosim/perf/test_operators.py", 'wl.main(["--config", "small", "--only", "dense_128", "--vt", "2"'),
    f"{PY} -m cosim.perf.operators --config configs/small.json --only gemm_256 resnet18.C8 --vt 2":
        Covered("tests/cosim/perf/test_operators.py", 'wl.main(["--config", "small", "--only", "dense_128", "--vt", "2"'),
    f"{PY} -m cosim.perf.timeline --workload resnet18.C8":
        Run(["--workload", "dense_128", "-o", "t.png"], RTL),
    f"{PY} -m cosim.perf.timeline --workload resnet18.C8 --vt 2 -o build/timeline_C8_vt2.png":
        Run(["--workload", "dense_128", "--vt", "2", "-o", "t2.png"], RTL),
    f"{PY} -m cosim.perf.timeline --workload resnet18.C8 --window 0 60000 -o build/timeline_C8_zoom.png":
        Run(["--workload", "dense_128", "--vt", "2", "--window", "0", "600", "-o", "t3.png"], RTL),
    # regressions
    f"{PY} -m cosim.cocotb {EXAMPLES} --config configs/default.json":
        Covered("tests/cosim/cocotb/test_main.py", '"-m", "cosim.cocotb", *EXAMPLES, "--config", "configs/small.json"'),
    f"{PY} -m cosim.cocotb tests/cocotb/test_mine.py --config configs/small.json":
        Covered("tests/test_readme.py", '"cosim.cocotb", "tests/cocotb/test_mine.py", "--config", "configs/small.json"'),
    f"{PY} -m cosim.verify.regress --fuzz 1000 --config configs/default.json --mem dpi --scheduler none"
    f" --junit build/test-results/fuzz.xml":
        Run(["--fuzz", "2", "--config", "small", "--mem", "dpi", "--scheduler", "none"], RTL),
    f"{PY} -m cosim.verify.regress --fuzz 200 --config configs/default.json --mem dpi --scheduler none"
    f" --junit build/test-results/fuzz.xml":
        Run(["--fuzz", "2", "--config", "small", "--mem", "dpi", "--scheduler", "none"], RTL),
    f"{PY} -m cosim.verify.regress --fuzz 200 --config configs/default.json --mem dpi --scheduler none"
    f" --junit build/test-results/fuzz.xml --fault axi-errors":
        Run(["--fuzz", "3", "--config", "small", "--mem", "dpi", "--scheduler", "none", "--ops", "12", "--fault",
             "axi-errors"], RTL),
    f"{PY} -m cosim.verify.regress --fuzz 1000 --config configs/default.json --mem dpi --scheduler local"
    f" --junit build/test-results/fuzz.xml": SCHEDULER,
    f"{PY} -m cosim.verify.regress --fuzz 2000 --config configs/default.json --mem dpi --scheduler local"
    f" --junit build/test-results/fuzz.xml": SCHEDULER,
    f"{PY} -m cosim.verify.regress --fuzz 100000 --config configs/default.json --config configs/small.json --mem dpi "
    "--scheduler tcp://host:8786 --junit build/test-results/fuzz.xml": SCHEDULER,
    f"{PY} -m cosim.verify.regress --config configs/default.json --mem cocotbext --junit build/test-results/reference.xml":
        Covered("tests/cosim/sim/test_axiram.py", 'regress.compare(SUBSET, "small", mem="cocotbext"'),
    f"{PY} -m cosim.verify.regress --fuzz 50 --config configs/default.json --mem cocotbext --scheduler local"
    f" --junit build/test-results/fuzz.xml":
        Covered("tests/cosim/sim/test_axiram.py", 'regress.fuzz([7, 8], "small", n_ops=12, mem="cocotbext"'),
    f"{PY} -m cosim.verify.regress --fuzz 400 --config small --fault alu-max-imm-as-min":
        Covered("tests/cosim/verify/test_regress.py", '"--fuzz", "2", "--config", "small", "--ops", "60", "--fault", '
                                               '"alu-max-imm-as-min"'),
    f"{PY} -m cosim.verify.regress --replay build/replays/small-seed1.min.replay --waves":
        Covered("tests/cosim/verify/test_minimize.py", 'regress.main(["--replay", str(path), "--waves"])'),
    f"{PY} -m cosim.verify.cluster --bench --config default --programs 400 --shard 100 --workers 2":
        Run(["--bench", "--config", "small", "--programs", "4", "--shard", "2", "--workers", "1", "--ops", "6"],
            ("rtl", "slow")),
    f"{PY} -m cosim.verify.coverage --config configs/default.json --fuzz 200 --out build/coverage":
        NotRun("builds the coverage model of the config (about 20 minutes); tests/cosim/verify/test_coverage.py checks "
               "the report"),
    f"{PY} -m apps.tune --workloads all --models resnet18":
        Covered("tests/apps/test_tune.py", 'tune.main(["--config", "configs/small.json", "--workloads", "dense_128"'),
    f"{PY} -m apps.tune --onnx my_model.onnx --log build/my_tuning.json":
        Covered("tests/apps/test_tune.py", 'tune.main(["--config", "configs/default.json", "--onnx", str(path)'),
    f"{PY} -m apps.tune --workloads all --models resnet18 resnet18-pc resnet50":
        Covered("tests/apps/test_tune.py", 'tune.main(["--config", "configs/small.json", "--workloads", "dense_128"'),
    f"{PY} -m apps.tune --models yolov3-tiny dcgan bert mobilenetv2 --new":
        Covered("tests/apps/test_tune.py", 'tune.main(["--workloads", "resnet18.C7", "--new", "--log", str(log)])'),
    f"{PY} -m apps.tune --workloads all --models resnet18 resnet18-pc resnet50 mobilenetv2 yolov3-tiny dcgan bert "
    "--prune": Covered("tests/apps/test_tune.py", 'tune.main(["--workloads", "resnet18.C7", "--prune", "--log", str(log)])'),
    # hardware and FPGA
    f"{PY} -m hw.formal --markdown docs/verification.md":
        Run(["--only", "queue-bounds", "lite-stable", "--markdown", "verification.md"], ("slow",)),
    f"{PY} -m hw.formal --mutants": Run(["--mutants", "--only", "queue-bounds", "axi-bursts"], ("slow",)),
    f"{PY} -m hw.formal --only fetch-routing": Run(["--only", "queue-limit", "--fast"], ("slow",)),
    f"{PY} -m hw --config configs/default.json -o build/vta.v --docs":
        Covered("tests/hw/test_top.py", 'main(["--config", "configs/small.json", "-o", str(out)])'),
    f"{PY} -m fpga.fusesoc --config configs/default.json -o build/fusesoc":
        Covered("tests/fpga/test_fusesoc.py", 'fusesoc.main(["--config", "configs/small.json", "-o", str(tmp / "core")])'),
    f"{PY} -m fpga.shell --config configs/default.json -o build/vta_shell.v":
        Covered("tests/fpga/test_shell.py", 'main(["--config", str(config), "-o", str(tmp_path / "vta_shell.v")])'),
    f"{PY} -m fpga.timing --config configs/ulx3s.json":
        Covered("tests/fpga/test_timing.py", 'timing.main([str(path), "--period", "2"])'),
    f"{PY} -m fpga.resources --report --configs configs/ulx3s.json configs/small.json configs/default.json "
    "--markdown docs/fpga.md": NotRun("yosys synthesis of three configs for three devices (tens of minutes)"),
    f"{PY} -m fpga.board --board ulx3s --config configs/ulx3s.json --freq 100 --timing 103 "
    "--seed 7 --docs docs/fpga.md":
        NotRun("place and route of the ULX3S bitstream (about 35 minutes); tests/fpga/board/test_soc.py "
               "simulates the same design"),
}

NOT_RUN = {"pip install", "--ceiling-args", "cosim.verify.coverage", "fpga.resources", "fpga.board"}


def test_every_readme_command_has_a_proof():
    commands = readme_commands()
    assert len(commands) > 40
    missing = [c for c in commands if c not in MAKE and c not in PYTHON]
    assert missing == [], "README commands without a test: add them to MAKE or PYTHON in tests/test_readme.py"
    unused = [c for c in list(MAKE) + [c for c in PYTHON if c.startswith(f"{PY} ") and " -m pytest" not in c]
              if c not in commands and not any(c in m.expansion for m in MAKE.values())]
    assert unused == []


def test_only_the_long_commands_are_not_run():
    not_run = [c for c, p in PYTHON.items() if isinstance(p, NotRun)]
    assert sorted(next(k for k in NOT_RUN if k in c) for c in not_run) == sorted(NOT_RUN)


@pytest.mark.parametrize("command", list(MAKE))
def test_make_runs_the_listed_commands(command):
    # (the FPGA extra counted as out of date, as on a fresh clone, whatever this checkout has installed)
    res = subprocess.run(["make", "-n", "-o", ".venv/.installed", "-W", "pyproject.toml", *shlex.split(command)[1:]],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [re.sub(r"^nice -n \d+ ", "", line).strip() for line in res.stdout.splitlines()]
    assert [line for line in lines if line.startswith(PY)] == MAKE[command].expansion
    assert all(c in PYTHON for c in MAKE[command].expansion)


COVERED = [(c, p) for c, p in PYTHON.items() if isinstance(p, Covered)]


@pytest.mark.parametrize("command, proof", COVERED, ids=[c[len(PY) + 1:] for c, _ in COVERED])
def test_the_covering_test_runs_the_command(command, proof):
    assert proof.call in (ROOT / proof.test).read_text(), f"{proof.test} no longer runs {command}"


def test_ceiling_args_of_the_readme_reach_verilator_as_two_flags(monkeypatch):
    from cosim.perf import cosim_speed as bench
    line = next(c for c in readme_commands() if "--ceiling-args" in c)
    seen = []

    class Measured(Exception):
        pass

    def measure(config, repeats, runs, ceiling_args):
        seen.append((config, ceiling_args))
        raise Measured

    monkeypatch.setattr(bench, "measure", measure)
    with pytest.raises(Measured):
        bench.main(shlex.split(line)[3:])
    assert seen == [("configs/default.json", ("--threads", "2"))]


def _params():
    """One run per distinct (tool, arguments): README commands that reduce to the same run share it."""
    out, seen = [], set()
    for command, proof in PYTHON.items():
        key = (shlex.split(command)[2], tuple(proof.argv)) if isinstance(proof, Run) else None
        if key is not None and key not in seen:
            seen.add(key)
            marks = [getattr(pytest.mark, m) for m in proof.marks]
            out.append(pytest.param(command, proof, marks=marks, id=command[len(PY) + 1:]))
    return out


@pytest.mark.parametrize("command, proof", _params())
def test_run(command, proof, tmp_path, monkeypatch, capsys):
    module = shlex.split(command)[2]
    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(module)
    main = getattr(mod, "main", None) or importlib.import_module(module + ".__main__").main    # a package's __main__
    assert main(proof.argv) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out


# ---------------------------------------------------------------------- the Python snippets
def _snippet(word: str) -> str:
    return next(s for s in readme_snippets() if word in s)


def _python(code: str, cwd: Path, timeout=600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_every_snippet_is_run():
    assert len(readme_snippets()) == 6


def test_runtime_snippet(tmp_path):
    res = _python(_snippet("rt.push_alu_op(cmd, relu, 0)"), tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ("{'inp_load_nbytes': 0, 'wgt_load_nbytes': 0, 'acc_load_nbytes': 4096, "
                                  "'uop_load_nbytes': 4, 'out_store_nbytes': 1024, 'gemm_counter': 0, "
                                  "'alu_counter': 64}")


@pytest.mark.rtl
def test_cosim_run_snippet(tmp_path):
    res = _python(_snippet("out = cosim.run(programs.gemm"), tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    cycles, equal = res.stdout.split()
    assert int(cycles) > 0 and equal == "True"


@pytest.mark.rtl
def test_script_snippet(tmp_path):
    code = _snippet("# my_kernel.py")
    script = tmp_path / "my_kernel.py"
    script.write_text(code)
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "(120, 'RtlDevice')"


@pytest.mark.rtl
def test_cocotb_snippet(tmp_path):
    """docs/cocotb.md's first test, saved where the guide saves it and run with the guide's command."""
    (tmp_path / "tests" / "cocotb").mkdir(parents=True)
    (tmp_path / "tests" / "cocotb" / "test_mine.py").write_text(_snippet("# tests/cocotb/test_mine.py"))
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    command = ["cosim.cocotb", "tests/cocotb/test_mine.py", "--config", "configs/small.json"]
    res = subprocess.run([sys.executable, "-m", *command], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "small   test_mine  test_relu  PASSED" in res.stdout and "1 tests, 0 failed" in res.stdout
    assert (tmp_path / "build" / "cocotb" / "results.xml").exists()


@pytest.mark.slow
def test_tvm_snippet(tmp_path):
    code = _snippet("tvm_vta.build") + textwrap.dedent("""
        import numpy as np
        x = digits.quantize_input(digits.load_data()[2][:16]).reshape(16, 1, 8, 8)
        assert np.array_equal(logits, digits.reference(net, x)), "differs from the int8 reference"
        print(logits.shape)
    """)
    res = _python(code, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "(16, 10)"


def test_config_table_names_every_config():
    for path in sorted((ROOT / "configs").glob("*.json")):
        assert f"`{path.name}`" in README, f"the README's config table does not describe configs/{path.name}"


@pytest.mark.slow
def test_tvm_onnx_snippet(tmp_path):
    """docs/onnx.md's TVM flow: a reduced zoo model compiled, exported, run from the library."""
    res = _python(_snippet("compile_model(zoo.quantized"), tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.strip().splitlines()
    assert lines[0].endswith("100.00% of the MACs on VTA") and lines[-1].split()[1] == "21"
    assert (tmp_path / "build" / "resnet18_pc.so").exists()
