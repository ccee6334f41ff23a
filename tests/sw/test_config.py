import json

import pytest

from sw.config import Config, ConfigError, load_config


def test_default_is_vta_default():
    cfg = load_config("configs/default.json")
    assert cfg.bitstream == "1x16_i8w8a32_15_15_18_17"
    assert (cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT) == (1, 16, 16)
    assert (cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES, cfg.ACC_ELEM_BYTES, cfg.OUT_ELEM_BYTES, cfg.UOP_ELEM_BYTES) == \
        (16, 256, 64, 16, 4)
    assert (cfg.UOP_DEPTH, cfg.INP_DEPTH, cfg.WGT_DEPTH, cfg.ACC_DEPTH, cfg.OUT_DEPTH) == (8192, 2048, 1024, 2048, 2048)
    assert cfg.LOG_OUT_BUFF_SIZE == 15
    assert (cfg.INP_MATRIX_WIDTH, cfg.WGT_MATRIX_WIDTH, cfg.ACC_MATRIX_WIDTH, cfg.OUT_MATRIX_WIDTH) == (128, 2048, 512, 128)
    assert cfg.BUS_WIDTH == 64 and cfg.beats(cfg.WGT_ELEM_BYTES) == 32 and cfg.beats(cfg.UOP_ELEM_BYTES) == 1
    assert cfg.MACS_PER_CYCLE == 256


def test_small_and_batch2():
    small = load_config("small")
    assert (small.BATCH, small.BLOCK_IN, small.BLOCK_OUT) == (1, 8, 8)
    assert small.INP_DEPTH == 512 and small.ALU_MUL == 0
    b2 = load_config("batch2")
    assert b2.BATCH == 2 and b2.ACC_DEPTH == 1024 and b2.INP_DEPTH == 1024 and b2.ACC_ELEM_BYTES == 128


def test_env_var_selects_default(monkeypatch):
    monkeypatch.setenv("VTA_CONFIG", "configs/small.json")
    assert load_config(None).BLOCK_IN == 8
    monkeypatch.delenv("VTA_CONFIG")
    assert load_config(None).BLOCK_IN == 16


def test_config_is_frozen_and_hashable():
    cfg = load_config("default")
    with pytest.raises(AttributeError):
        cfg.LOG_BATCH = 1
    assert cfg == load_config("default") and hash(cfg) == hash(load_config("default"))
    assert cfg.with_changes(LOG_BATCH=1).BATCH == 2


@pytest.mark.parametrize("change, words", [
    ({"LOG_BLCK": 4}, ["unknown key 'LOG_BLCK'", "allowed keys"]),
    ({"LOG_BATCH": "0"}, ["'LOG_BATCH'", "must be an integer", "[0, 4]"]),
    ({"LOG_BATCH": 1.5}, ["'LOG_BATCH'", "must be an integer"]),
    ({"LOG_BATCH": True}, ["'LOG_BATCH'", "must be an integer"]),
    ({"LOG_INP_WIDTH": 4}, ["'LOG_INP_WIDTH' = 4", "[3, 3]"]),
    ({"LOG_ACC_WIDTH": 4}, ["'LOG_ACC_WIDTH' = 4", "[5, 5]"]),
    ({"LOG_BLOCK": 7}, ["'LOG_BLOCK' = 7", "[1, 6]"]),
    ({"LOG_BUS_WIDTH": 10}, ["'LOG_BUS_WIDTH' = 10", "[6, 9]"]),
    ({"LOG_WGT_BUFF_SIZE": 7}, ["'LOG_WGT_BUFF_SIZE' = 7", "smaller than one element", "[8, 24]"]),
    ({"LOG_INP_BUFF_SIZE": 3}, ["'LOG_INP_BUFF_SIZE' = 3", "smaller than one element"]),
    ({"LOG_ACC_BUFF_SIZE": 23}, ["16-bit sram_base", "[6, 22]"]),
    ({"LOG_ACC_BUFF_SIZE": 20}, ["micro-op needs 38 bits"]),
    ({"HW_VER": "0.0.1"}, ["'HW_VER'", "0.0.2"]),
    ({"TARGET": 3}, ["'TARGET'", "string"]),
])
def test_bad_config_names_key_and_range(change, words):
    data = json.loads(open("configs/default.json").read())
    data.update(change)
    with pytest.raises(ConfigError) as err:
        Config.from_dict(data, name="bad")
    for w in words:
        assert w in str(err.value)


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    p = tmp_path / "broken.json"
    p.write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(p)
    p.write_text("[1]")
    with pytest.raises(ConfigError, match="JSON object"):
        load_config(p)


def test_names_and_repository_paths_work_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config("small") == load_config("small.json") == load_config("configs/small.json")
    assert load_config("configs/small.json").name == "small"
