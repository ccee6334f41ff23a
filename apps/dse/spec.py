"""A sweep: its points (configs), networks, boards and options, from a TOML file and/or flags, validated whole.

A sweep file (``configs/sweeps/*.toml``)::

    name = "resnet18"
    base = "default"                    # a config of configs/ or a JSON path (default: default)
    boards = ["ulx3s", "pynq-z2", "ultra96", "zcu104"]
    networks = ["resnet18", "models/mine.onnx:inputs.npz", "mobilenetv2:reduced"]
    configs = ["small"]                 # whole configs as points
    unit = "footprint"                  # optional: resources of this block alone (fpga.resources --unit)
    fmax = false                        # nextpnr's Fmax of the ULX3S build of the points that fit it
    timeout = {rtl = 3600, synth = 7200, fmax = 7200}   # seconds per task (or one number for all)

    [params]                            # a grid over base: every combination
    LOG_BLOCK = [3, 4]
    POST_UNIT = [0, 1]

    [[grid]]                            # more grids, each over its own base (default: base)
    base = "small"
    LOG_BUS_WIDTH = [6, 7]

The points are the union of the grids and ``configs`` (the base alone when there is neither), each config once.
A network is a zoo name (``resnet18`` or one of :data:`apps.zoo.MODELS`, full size; ``NAME:reduced`` for the
reduced size, with the zoo's generated input) or an ONNX path, optionally ``PATH:INPUT`` with a .npy / .npz input
(default: the seeded noise ``python -m apps.onnx`` feeds when given no ``--input``).

:func:`load_sweep` builds every point's :class:`~sw.config.Config` before returning, so an invalid combination is a
:class:`~sw.config.ConfigError` naming the point, the parameter and its allowed range, before anything runs; an
unknown key, board or network, or a missing file, is a :class:`~sw.cli.UsageError`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from sw.cli import UsageError
from sw.config import Config, ConfigError, load_config

__all__ = ["Network", "Point", "Sweep", "load_sweep", "parse_network", "point_name", "ZOO_NETWORKS", "TASK_KINDS",
           "DEFAULT_TIMEOUTS", "SWEEP_KEYS"]

ROOT = Path(__file__).resolve().parents[2]
TASK_KINDS = ("rtl", "synth", "fmax")
DEFAULT_TIMEOUTS = {"rtl": 3600.0, "synth": 7200.0, "fmax": 7200.0}
SWEEP_KEYS = ("name", "base", "params", "grid", "configs", "networks", "boards", "unit", "fmax", "timeout")

# short tags of the config keys, for point names: default-b3_post0 is default with LOG_BLOCK 3 and POST_UNIT 0
_TAGS = {"LOG_INP_WIDTH": "iw", "LOG_WGT_WIDTH": "ww", "LOG_ACC_WIDTH": "aw", "LOG_BATCH": "n", "LOG_BLOCK": "b",
         "LOG_BLOCK_IN": "bi", "LOG_BLOCK_OUT": "bo", "LOG_UOP_BUFF_SIZE": "u", "LOG_INP_BUFF_SIZE": "i",
         "LOG_WGT_BUFF_SIZE": "w", "LOG_ACC_BUFF_SIZE": "a", "LOG_BUS_WIDTH": "bus", "ALU_MUL": "mul",
         "POST_UNIT": "post", "DEPTHWISE": "dw"}


def zoo_networks() -> tuple[str, ...]:
    """The zoo names a sweep takes: ``resnet18`` (:mod:`apps.resnet18`, per-tensor scales) and the zoo's models."""
    from ..zoo import MODELS

    return ("resnet18", *MODELS)


ZOO_NETWORKS = zoo_networks()


@dataclass(frozen=True)
class Network:
    """A network of a sweep: a zoo name or an ONNX path, its input (a .npy / .npz path, or None: the default one)."""
    name: str
    model: str
    input: str | None = None
    reduced: bool = False

    @property
    def zoo(self) -> bool:
        return self.model in ZOO_NETWORKS


@dataclass(frozen=True)
class Point:
    """One config of a sweep; ``values``: its value of each parameter that varies over the sweep."""
    config: Config
    values: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.config.name


@dataclass
class Sweep:
    """A validated sweep (see the module doc)."""
    name: str
    points: list[Point]
    networks: list[Network]
    boards: list[str]
    params: list[str]                   # the config keys that vary over the points (table columns)
    unit: str | None = None
    fmax: bool = False
    timeout: dict = field(default_factory=lambda: dict(DEFAULT_TIMEOUTS))


def parse_network(text: str) -> Network:
    """``resnet18``, ``mobilenetv2:reduced``, ``model.onnx`` or ``model.onnx:input.npz`` -> :class:`Network`; a zoo
    name must be known and a path must exist."""
    if not isinstance(text, str) or not text:
        raise UsageError(f"network {text!r}: give a zoo name ({', '.join(ZOO_NETWORKS)}) or an ONNX path")
    head, _, tail = text.partition(":")
    model, extra = (head, tail) if head in ZOO_NETWORKS or ":" not in text else text.rsplit(":", 1)
    if model in ZOO_NETWORKS:
        if extra not in ("", "reduced"):
            raise UsageError(f"network {text!r}: a zoo network takes ':reduced' or nothing, not {extra!r}")
        return Network(text, model, None, extra == "reduced")
    if not Path(model).is_file():
        raise UsageError(f"network {text!r}: no zoo network of that name and no such file; the zoo networks: "
                         f"{', '.join(ZOO_NETWORKS)}")
    if extra and not Path(extra).is_file():
        raise UsageError(f"network {text!r}: no such input file {extra!r}")
    return Network(Path(model).stem, str(Path(model).resolve()), str(Path(extra).resolve()) if extra else None)


def _network_entry(entry) -> Network:
    if isinstance(entry, dict):
        unknown = set(entry) - {"model", "input", "name"}
        if unknown or "model" not in entry:
            raise UsageError(f"network {entry!r}: a table takes 'model' and optionally 'input' and 'name'")
        net = parse_network(entry["model"] + (f":{entry['input']}" if entry.get("input") else ""))
        return Network(entry.get("name", net.name), net.model, net.input, net.reduced)
    return parse_network(entry)


def point_name(cfg: Config, base: Config) -> str:
    """``<base>-<tag><value>_...`` naming the keys where ``cfg`` differs from ``base`` (the base's own name when
    it does not differ): the name of its model and synthesis caches and of its rows."""
    diff = {f.name: getattr(cfg, f.name) for f in fields(Config)
            if f.name not in ("name", "TARGET", "HW_VER") and getattr(cfg, f.name) != getattr(base, f.name)}
    if "LOG_BLOCK_IN" in diff and diff.get("LOG_BLOCK_OUT") == diff["LOG_BLOCK_IN"]:
        diff["LOG_BLOCK"] = diff.pop("LOG_BLOCK_IN")
        del diff["LOG_BLOCK_OUT"]
    if not diff:
        return base.name
    return base.name + "-" + "_".join(f"{_TAGS.get(k, k.lower())}{v}" for k, v in
                                      sorted(diff.items(), key=lambda kv: list(_TAGS).index(kv[0])
                                             if kv[0] in _TAGS else len(_TAGS)))


def _values(key: str, value, where: str) -> list[int]:
    vals = value if isinstance(value, list) else [value]
    if not vals or any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
        raise ConfigError(f"{where}: parameter {key!r} = {value!r}: give an integer or a non-empty list of integers")
    return vals


def _grid(base: Config, params: dict, where: str) -> list[Config]:
    keys = list(params)
    lists = [_values(k, params[k], where) for k in keys]
    out = []
    for combo in itertools.product(*lists):
        changes = dict(zip(keys, combo))
        label = ", ".join(f"{k}={v}" for k, v in changes.items())
        try:
            cfg = base.with_changes(**changes)
        except ConfigError as err:
            raise ConfigError(f"{where}, point ({label}): {err}") from None
        out.append(Config.from_dict(cfg.to_dict(), name=point_name(cfg, base)))
    return out


def _config(source, where: str) -> Config:
    if not isinstance(source, str):
        raise UsageError(f"{where}: a config is a name of configs/ or a JSON path, got {source!r}")
    return load_config(source)


def _timeouts(value) -> dict:
    out = dict(DEFAULT_TIMEOUTS)
    if value is None:
        return out
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {k: float(value) for k in out}
    if isinstance(value, dict) and set(value) <= set(out):
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise UsageError(f"timeout {k} = {v!r}: give seconds > 0")
            out[k] = float(v)
        return out
    raise UsageError(f"timeout = {value!r}: give seconds, or a table of seconds by task kind ({', '.join(out)})")


def _toml(text: str, path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:             # Python 3.10
        raise UsageError(f"{path}: sweep files are read with tomllib (Python 3.11 and later); on Python 3.10 give "
                         f"the sweep as flags") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: not valid TOML: {err}") from None


def load_sweep(path: str | Path | None = None, **overrides) -> Sweep:
    """The sweep of a TOML file (``path``) with ``overrides`` (the same keys; the flags of ``python -m apps.dse``)
    applied on top: ``params`` entries are added to (replace) the file's, the other keys replace the file's."""
    data: dict = {}
    if path is not None:
        p = Path(path)
        if not p.is_file() and (ROOT / "configs" / "sweeps" / f"{path}.toml").is_file():
            p = ROOT / "configs" / "sweeps" / f"{path}.toml"
        try:
            text = p.read_text()
        except FileNotFoundError:
            raise UsageError(f"no such sweep file {str(path)!r} (nor configs/sweeps/{path}.toml)") from None
        data = _toml(text, p)
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "params":
            data["params"] = {**data.get("params", {}), **value}
        else:
            data[key] = value
    unknown = sorted(set(data) - set(SWEEP_KEYS))
    if unknown:
        raise UsageError(f"unknown sweep keys {', '.join(unknown)}; the keys: {', '.join(SWEEP_KEYS)}")
    name = data.get("name") or (Path(path).stem if path is not None else "sweep")
    base = _config(data.get("base", "default"), "base")
    configs: list[Config] = []
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise UsageError(f"params = {params!r}: a table of config keys to lists of values")
    if params:
        configs += _grid(base, params, "params")
    grids = data.get("grid") or []
    for i, g in enumerate(grids if isinstance(grids, list) else [grids]):
        if not isinstance(g, dict):
            raise UsageError(f"grid {i + 1}: a table of config keys to lists of values (and 'base')")
        g = dict(g)
        gbase = _config(g.pop("base"), f"grid {i + 1}") if "base" in g else base
        configs += _grid(gbase, g, f"grid {i + 1} (over {gbase.name})")
    for c in data.get("configs") or []:
        configs.append(_config(c, "configs"))
    if not configs:
        configs = [base]
    points = _points(configs)
    networks = [_network_entry(n) for n in data.get("networks") or []]
    if not networks:
        raise UsageError("a sweep needs at least one network (a zoo name or an ONNX path): networks = [...] or "
                         "--network")
    if len({n.name for n in networks}) != len(networks):
        raise UsageError(f"two networks share a name: {[n.name for n in networks]}; name them (a table with 'name')")
    boards = data.get("boards") or []
    if not boards or not all(isinstance(b, str) for b in boards):
        raise UsageError("a sweep needs at least one board: boards = [...] or --board")
    unit = data.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise UsageError(f"unit = {unit!r}: the name of a block of fpga.resources --unit")
    fmax = data.get("fmax", False)
    if not isinstance(fmax, bool):
        raise UsageError(f"fmax = {fmax!r}: true or false")
    return Sweep(name=str(name), points=points, networks=networks, boards=[b.lower() for b in boards],
                 params=varying(p.config for p in points), unit=unit, fmax=fmax, timeout=_timeouts(data.get("timeout")))


def _points(configs: list[Config]) -> list[Point]:
    """Each config once (by value: the first of its names)."""
    seen: dict = {}
    for cfg in configs:
        seen.setdefault(tuple(sorted(cfg.to_dict().items())), cfg)
    configs = list(seen.values())
    names = [c.name for c in configs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"different configs share the names {dup}: give the configs of 'configs' distinct file names")
    keys = varying(configs)
    return [Point(c, {k: _value(c, k) for k in keys}) for c in configs]


def _value(cfg: Config, key: str) -> int:
    return cfg.LOG_BLOCK_IN if key == "LOG_BLOCK" else getattr(cfg, key)


def varying(configs: Iterable[Config]) -> list[str]:
    """The config keys whose values differ between ``configs`` (LOG_BLOCK when IN and OUT are equal in each)."""
    configs = list(configs)
    keys = [f.name for f in fields(Config) if f.name not in ("name", "TARGET", "HW_VER")]
    out = [k for k in keys if len({getattr(c, k) for c in configs}) > 1]
    if ("LOG_BLOCK_IN" in out or "LOG_BLOCK_OUT" in out) and all(c.LOG_BLOCK_IN == c.LOG_BLOCK_OUT for c in configs):
        out = ["LOG_BLOCK" if k == "LOG_BLOCK_IN" else k for k in out if k != "LOG_BLOCK_OUT"]
    return out
