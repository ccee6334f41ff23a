"""sw.cli: every command-line tool answers a wrong name with one line ``error: ...`` listing the choices."""

import importlib
import sys

import pytest

from sw import cli
from sw.config import ConfigError

CONFIG_NAMES = "batch2, default, small, ulx3s"

# every tool's main(argv) with a config that does not exist
WRONG_CONFIG = [
    ("hw.__main__", ["--config", "nope", "-o", "unused.v"]),
    ("apps.demo", ["--config", "nope", "--target", "fsim"]),
    ("apps.digits_onnx", ["--config", "nope"]),
    ("apps.onnx.__main__", ["unused.onnx", "--config", "nope"]),
    ("sw.testing.fsim_speed", ["--config", "nope"]),
    ("sw.testing.fuzz", ["--config", "nope"]),
    ("cosim.perf.cosim_speed", ["--config", "nope"]),
    ("cosim.perf.operators", ["--config", "nope"]),
    ("cosim.perf.timeline", ["--config", "nope"]),
    ("cosim.verify.regress", ["--config", "nope"]),
    ("cosim.verify.coverage", ["--config", "nope"]),
    ("fpga.shell", ["--config", "nope"]),
    ("fpga.board.__main__", ["--config", "nope"]),
    ("fpga.timing", ["--config", "nope"]),
]


@pytest.mark.parametrize("module, argv", WRONG_CONFIG, ids=[m for m, _ in WRONG_CONFIG])
def test_wrong_config_is_one_line_listing_the_names(module, argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                       # nothing may be written anywhere
    main = importlib.import_module(module).main
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: cannot read config file 'nope'")
    assert CONFIG_NAMES in err
    assert list(tmp_path.iterdir()) == []


WORKLOADS = ("matrix_multiply_opt, gemm_256, dense_128, dense_16x512x1008, resnet18.C2, resnet18.C3, resnet18.C4, "
             "resnet18.C5, resnet18.C6, resnet18.C7, resnet18.C8, resnet18.C9, resnet18.C10, resnet18.C11, "
             "mobilenetv2.dw112, mobilenetv2.dw112s2, mobilenetv2.dw56, mobilenetv2.dw56s2, mobilenetv2.dw28, "
             "mobilenetv2.dw28s2, mobilenetv2.dw14, mobilenetv2.dw14c576, mobilenetv2.dw14s2, mobilenetv2.dw7")

WRONG_NAME = [
    ("cosim.perf.timeline", ["--workload", "C8"], f"error: unknown workload 'C8'; choose one of: {WORKLOADS}\n"),
    ("cosim.perf.operators", ["--only", "gemm_256", "gemm256"],
     f"error: unknown workload 'gemm256'; choose one of: {WORKLOADS}\n"),
    ("cosim.verify.regress", ["--fault", "nope"],
     "error: unknown --fault 'nope'; choose one of: alu-max-imm-as-min, axi-errors, axi-read, axi-write\n"),
    ("apps.onnx.__main__", ["missing.onnx"], "error: missing.onnx: not a readable ONNX model (FileNotFoundError: "
                                             "[Errno 2] No such file or directory: 'missing.onnx')\n"),
]


@pytest.mark.parametrize("module, argv, expected", WRONG_NAME, ids=[m for m, _, _ in WRONG_NAME])
def test_wrong_name_is_one_line_listing_the_choices(module, argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert importlib.import_module(module).main(argv) == 2
    assert capsys.readouterr().err == expected


def test_argparse_choices_stay_argparse_errors(capsys):
    from apps import demo
    with pytest.raises(SystemExit) as exit_:
        demo.main(["--demo", "nope"])
    assert exit_.value.code == 2
    assert ("invalid choice: 'nope' (choose from 'default', 'digits', 'digits-onnx', 'resnet18', 'zoo')"
            in capsys.readouterr().err)


def test_choose():
    assert cli.choose("board", "ulx3s", ["ulx3s"]) == "ulx3s"
    with pytest.raises(cli.UsageError, match=r"^unknown board 'x'; choose one of: a, b$"):
        cli.choose("board", "x", ["a", "b"])


def test_config_names():
    assert ", ".join(cli.config_names()) == CONFIG_NAMES


def test_require_extra():
    assert cli.require_extra("json", "dev").dumps([1]) == "[1]"
    with pytest.raises(cli.MissingExtraError, match=r"^no_such_pkg_xyz is not installed: it comes with the 'fpga' "
                                                    r"extra of pyproject.toml; install it with make venv-fpga "):
        cli.require_extra("no_such_pkg_xyz", "fpga")


def test_command_keeps_bugs_as_tracebacks(capsys):
    @cli.command
    def main(argv=None):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        main([])

    @cli.command(errors=(KeyError,))
    def main2(argv=None):
        raise ConfigError("bad key X")

    assert main2([]) == 2
    assert capsys.readouterr().err == "error: bad key X\n"


def test_missing_file_names_it(capsys):
    @cli.command
    def main(argv=None):
        open("/nonexistent/x.json")

    assert main([]) == 2
    assert capsys.readouterr().err == "error: no such file: /nonexistent/x.json\n"


@pytest.mark.parametrize("module, argv", [("fpga.timing", []), ("fpga.board.__main__", ["--board", "ulx3s"])])
def test_fpga_tools_without_the_fpga_extra_name_the_make_target(module, argv, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "amaranth_boards", None)        # as if the fpga extra were not installed
    monkeypatch.setitem(sys.modules, "amaranth_boards.ulx3s", None)
    assert importlib.import_module(module).main(argv) == 2
    assert capsys.readouterr().err == ("error: amaranth_boards.ulx3s is not installed: it comes with the 'fpga' extra "
                                       "of pyproject.toml; install it with make venv-fpga (or .venv/bin/pip install "
                                       "-e '.[fpga]')\n")
