"""Sweeps: grids and whole configs as points, their names, networks, boards, and the validation of the whole
sweep before anything runs."""
from pathlib import Path

import pytest

from apps.dse import __main__ as dse_main
from apps.dse.spec import DEFAULT_TIMEOUTS, load_sweep, parse_network, point_name
from sw.cli import UsageError
from sw.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[3]
NET = {"networks": ["resnet18"], "boards": ["ulx3s"]}


def test_grids_and_configs_make_each_config_once_named_by_what_differs():
    s = load_sweep(None, base="small", params={"POST_UNIT": [0, 1], "ALU_MUL": [0, 1]},
                   grid=[{"base": "default", "POST_UNIT": [0, 1]}], configs=["small", "default"], **NET)
    assert [p.name for p in s.points] == ["small", "small-mul1", "small-post1", "small-mul1_post1", "default-post0",
                                          "default"]
    assert [p.config.POST_UNIT for p in s.points] == [0, 0, 1, 1, 0, 1]
    assert s.points[1].config.to_dict() == {**load_config("small").to_dict(), "ALU_MUL": 1}
    assert s.params == ["LOG_BLOCK", "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE",
                        "LOG_ACC_BUFF_SIZE", "ALU_MUL", "POST_UNIT", "DEPTHWISE"]
    assert s.points[4].values == {"LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15,
                                  "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17, "ALU_MUL": 1, "POST_UNIT": 0,
                                  "DEPTHWISE": 1}
    assert s.timeout == DEFAULT_TIMEOUTS and s.boards == ["ulx3s"] and not s.fmax
    one = load_sweep(None, base="small", **NET)                        # nothing varied: the base alone
    assert [p.name for p in one.points] == ["small"] and one.params == [] and one.points[0].values == {}


def test_point_names_tag_every_key_that_differs():
    base = load_config("small")
    assert point_name(base, base) == "small"
    cfg = base.with_changes(LOG_BLOCK=4, LOG_ACC_BUFF_SIZE=15, LOG_BUS_WIDTH=7)
    assert point_name(cfg, base) == "small-b4_a15_bus7"
    assert point_name(base.with_changes(LOG_BLOCK_OUT=4), base) == "small-bo4"


def test_an_invalid_point_names_the_parameter_and_its_range():
    with pytest.raises(ConfigError, match=r"point \(LOG_BATCH=5\): .*'LOG_BATCH' = 5 is outside the range this "
                                          r"hardware builds, \[0, 4\]"):
        load_sweep(None, base="default", params={"LOG_BATCH": [0, 5]}, **NET)
    with pytest.raises(ConfigError, match=r"LOG_BLOCK=3.*micro-op needs 36 bits.*shrink LOG_ACC_BUFF_SIZE"):
        load_sweep(None, base="default", params={"LOG_BLOCK": [3, 4]}, **NET)     # a combination, not a value
    with pytest.raises(ConfigError, match=r"grid 1 \(over small\).*unknown key 'LOG_FOO'; allowed keys: ALU_MUL"):
        load_sweep(None, grid=[{"base": "small", "LOG_FOO": [1]}], **NET)
    with pytest.raises(ConfigError, match=r"'POST_UNIT' = \[0, '1'\]: give an integer or a non-empty list"):
        load_sweep(None, params={"POST_UNIT": [0, "1"]}, **NET)


def test_keys_networks_boards_and_timeouts_are_checked(tmp_path):
    with pytest.raises(UsageError, match="unknown sweep keys bords; the keys: name, base"):
        load_sweep(None, bords=["ulx3s"], **NET)
    with pytest.raises(UsageError, match="at least one network"):
        load_sweep(None, boards=["ulx3s"])
    with pytest.raises(UsageError, match="at least one board"):
        load_sweep(None, networks=["resnet18"])
    with pytest.raises(UsageError, match="rtl = 0"):
        load_sweep(None, timeout={"rtl": 0}, **NET)
    assert load_sweep(None, timeout=60, **NET).timeout == {"rtl": 60.0, "synth": 60.0, "fmax": 60.0}
    assert load_sweep(None, timeout={"synth": 5}, **NET).timeout == {**DEFAULT_TIMEOUTS, "synth": 5.0}
    model, data = tmp_path / "m.onnx", tmp_path / "x.npz"
    model.write_bytes(b"x")
    data.write_bytes(b"x")
    assert parse_network("mobilenetv2:reduced").model == "mobilenetv2" and parse_network("mobilenetv2:reduced").reduced
    assert parse_network(f"{model}:{data}").input == str(data) and parse_network(str(model)).input is None
    assert parse_network(str(model)).name == "m" and parse_network(str(model)).model == str(model)
    with pytest.raises(UsageError, match="no zoo network of that name and no such file; the zoo networks: resnet18"):
        parse_network("resnet19")
    with pytest.raises(UsageError, match="takes ':reduced' or nothing"):
        parse_network("resnet18:tiny")
    with pytest.raises(UsageError, match="no such input file"):
        parse_network(f"{model}:{tmp_path / 'missing.npz'}")
    with pytest.raises(UsageError, match="share a name"):
        load_sweep(None, networks=[str(model), {"model": str(model)}], boards=["ulx3s"])


def test_the_sweep_files_of_the_repository_are_valid():
    files = sorted((ROOT / "configs" / "sweeps").glob("*.toml"))
    assert files
    for f in files:
        s = load_sweep(f)
        assert s.points and s.networks and s.boards and s.name == f.stem
    assert load_sweep("resnet18").name == "resnet18"          # by name, from configs/sweeps/


def test_the_command_line_refuses_an_invalid_sweep_before_running_anything(tmp_path, capsys):
    out = tmp_path / "out"
    code = dse_main.main(["--base", "small", "--param", "LOG_ACC_BUFF_SIZE=14,30", "--network", "resnet18",
                          "--board", "ulx3s", "--out", str(out)])
    assert code == 2 and not out.exists()
    assert "'LOG_ACC_BUFF_SIZE' = 30 is outside the range this hardware builds, [3, 23]" in capsys.readouterr().err
    assert dse_main.main(["--base", "small", "--network", "resnet18", "--board", "de10", "--out", str(out),
                          "--scheduler", "none"]) == 2
    assert "unknown board 'de10'; the boards: pynq-z1, pynq-z2, ultra96, ulx3s, zcu104" in capsys.readouterr().err
    assert not (out / "cache").exists()
    assert dse_main.parse_params(["LOG_BLOCK=3,4", "POST_UNIT=1"]) == {"LOG_BLOCK": [3, 4], "POST_UNIT": [1]}
    with pytest.raises(ConfigError, match="KEY=V1,V2"):
        dse_main.parse_params(["LOG_BLOCK"])
    assert dse_main.parse_timeouts(["rtl=60", "synth=5"]) == {"rtl": 60.0, "synth": 5.0}
    with pytest.raises(UsageError, match="the kinds are rtl, synth, fmax"):
        dse_main.parse_timeouts(["build=5"])
