"""One VTA configuration: the JSON keys of VTA's ``vta_config.json`` and every constant derived from them.

Everything that has a size (SRAM depths, element bytes, ISA field widths, bus ratios) is a property
of :class:`Config`; nothing else in the project hard-codes one.

>>> cfg = load_config("configs/default.json")
>>> cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT, cfg.INP_DEPTH, cfg.WGT_DEPTH, cfg.ACC_DEPTH, cfg.UOP_DEPTH
(1, 16, 16, 2048, 1024, 2048, 8192)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path

from sw.isa import ISA, MEMOP_SRAM_ADDR_BITS, UOP_WIDTH, FormatError

__all__ = ["Config", "ConfigError", "load_config", "default_config", "CONFIG_DIR", "DEFAULT_CONFIG_PATH"]

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
DEFAULT_CONFIG_PATH = CONFIG_DIR / "default.json"


class ConfigError(ValueError):
    """A configuration key is unknown, has the wrong type, or is outside what the hardware can build."""


# key -> (allowed minimum, allowed maximum, meaning). Integer keys only; strings are listed apart.
_INT_KEYS = {
    "LOG_INP_WIDTH": (3, 3, "log2 bits of an input element (int8)"),
    "LOG_WGT_WIDTH": (3, 3, "log2 bits of a weight element (int8)"),
    "LOG_ACC_WIDTH": (5, 5, "log2 bits of an accumulator element (int32)"),
    "LOG_BATCH": (0, 4, "log2 of the batch rows processed per micro-op"),
    "LOG_BLOCK": (1, 6, "log2 of the GEMM block (BLOCK_IN = BLOCK_OUT)"),
    "LOG_BLOCK_IN": (1, 6, "log2 of the GEMM input block"),
    "LOG_BLOCK_OUT": (1, 6, "log2 of the GEMM output block"),
    "LOG_UOP_BUFF_SIZE": (2, 20, "log2 bytes of the micro-op SRAM"),
    "LOG_INP_BUFF_SIZE": (3, 22, "log2 bytes of the input SRAM"),
    "LOG_WGT_BUFF_SIZE": (3, 24, "log2 bytes of the weight SRAM"),
    "LOG_ACC_BUFF_SIZE": (3, 23, "log2 bytes of the accumulator SRAM"),
    # Extensions of this project (not in VTA's JSON; defaults keep VTA's behaviour).
    "LOG_BUS_WIDTH": (6, 9, "log2 bits of the AXI4 data bus (64..512)"),
    "ALU_MUL": (0, 1, "1 = the tensor ALU implements MUL (opcode 4)"),
    "POST_UNIT": (0, 1, "1 = the compute module has the post-processing unit (ALU opcode 5, POST)"),
    "DEPTHWISE": (0, 1, "1 = the GEMM core has its depthwise mode (opcode 5, DEPTHWISE; needs BLOCK_IN = BLOCK_OUT)"),
}
_STR_KEYS = {
    "TARGET": "target name (sim, tsim, pynq, ...); informational",
    "HW_VER": "hardware version string; only 0.0.2 (the 3-bit memory_type / ALU opcode ISA) is built",
}
_SUPPORTED_HW_VER = ("0.0.2",)

@dataclass(frozen=True)
class Config:
    """A validated VTA configuration. Construct with :func:`load_config` or :meth:`Config.from_dict`."""

    TARGET: str = "sim"
    HW_VER: str = "0.0.2"
    LOG_INP_WIDTH: int = 3
    LOG_WGT_WIDTH: int = 3
    LOG_ACC_WIDTH: int = 5
    LOG_BATCH: int = 0
    LOG_BLOCK_IN: int = 4
    LOG_BLOCK_OUT: int = 4
    LOG_UOP_BUFF_SIZE: int = 15
    LOG_INP_BUFF_SIZE: int = 15
    LOG_WGT_BUFF_SIZE: int = 18
    LOG_ACC_BUFF_SIZE: int = 17
    LOG_BUS_WIDTH: int = 6
    ALU_MUL: int = 1
    POST_UNIT: int = 0
    DEPTHWISE: int = 0
    name: str = "default"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, data: dict, name: str = "config") -> Config:
        if not isinstance(data, dict):
            raise ConfigError(f"{name}: a config is a JSON object of keys, got {type(data).__name__}")
        values: dict[str, int | str] = {}
        for key, value in data.items():
            if key in _STR_KEYS:
                if not isinstance(value, str):
                    raise ConfigError(f"{name}: key {key!r} must be a string ({_STR_KEYS[key]}), got {value!r}")
                values[key] = value
            elif key in _INT_KEYS:
                lo, hi, meaning = _INT_KEYS[key]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigError(
                        f"{name}: key {key!r} must be an integer in [{lo}, {hi}] ({meaning}), got {value!r}")
                if not lo <= value <= hi:
                    raise ConfigError(
                        f"{name}: key {key!r} = {value} is outside the range this hardware builds, "
                        f"[{lo}, {hi}] ({meaning})")
                values[key] = value
            else:
                allowed = ", ".join(sorted([*_INT_KEYS, *_STR_KEYS]))
                raise ConfigError(f"{name}: unknown key {key!r}; allowed keys: {allowed}")
        if "LOG_BLOCK" in values:
            block = values.pop("LOG_BLOCK")
            for sub in ("LOG_BLOCK_IN", "LOG_BLOCK_OUT"):
                if values.setdefault(sub, block) != block:
                    raise ConfigError(f"{name}: key {sub!r} = {values[sub]} contradicts LOG_BLOCK = {block}")
        if values.get("HW_VER", "0.0.2") not in _SUPPORTED_HW_VER:
            raise ConfigError(f"{name}: key 'HW_VER' = {values['HW_VER']!r} is not built; allowed: "
                              f"{', '.join(_SUPPORTED_HW_VER)}")
        cfg = cls(name=name, **values)  # type: ignore[arg-type]  # each key checked above against its type
        cfg._check()
        return cfg

    def with_changes(self, **changes) -> Config:
        """A copy with some JSON keys changed, validated again."""
        data = self.to_dict()
        if "LOG_BLOCK" in changes:
            data.pop("LOG_BLOCK_IN", None), data.pop("LOG_BLOCK_OUT", None)
        elif "LOG_BLOCK_IN" in changes or "LOG_BLOCK_OUT" in changes:
            block = data.pop("LOG_BLOCK", None)
            if block is not None:
                data["LOG_BLOCK_IN"] = data["LOG_BLOCK_OUT"] = block
        data.update(changes)
        return Config.from_dict(data, name=self.name)

    def to_dict(self) -> dict:
        """The JSON keys (LOG_BLOCK is written when BLOCK_IN = BLOCK_OUT, as VTA does)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}
        if self.LOG_BLOCK_IN == self.LOG_BLOCK_OUT:
            out["LOG_BLOCK"] = out.pop("LOG_BLOCK_IN")
            del out["LOG_BLOCK_OUT"]
        return out

    def _check(self):
        for mem, log_size, log_elem in (
            ("UOP", self.LOG_UOP_BUFF_SIZE, self.LOG_UOP_ELEM_BYTES),
            ("INP", self.LOG_INP_BUFF_SIZE, self.LOG_INP_ELEM_BYTES),
            ("WGT", self.LOG_WGT_BUFF_SIZE, self.LOG_WGT_ELEM_BYTES),
            ("ACC", self.LOG_ACC_BUFF_SIZE, self.LOG_ACC_ELEM_BYTES),
        ):
            key = f"LOG_{mem}_BUFF_SIZE"
            if log_size < log_elem:
                raise ConfigError(
                    f"{self.name}: key {key!r} = {log_size} makes the {mem} buffer smaller than one element "
                    f"({1 << log_elem} bytes); allowed range [{log_elem}, {log_elem + MEMOP_SRAM_ADDR_BITS}]")
            if log_size - log_elem > MEMOP_SRAM_ADDR_BITS:
                raise ConfigError(
                    f"{self.name}: key {key!r} = {log_size} gives {1 << (log_size - log_elem)} {mem} elements, "
                    f"more than the 16-bit sram_base field addresses; allowed range "
                    f"[{log_elem}, {log_elem + MEMOP_SRAM_ADDR_BITS}]")
        if self.DEPTHWISE and self.LOG_BLOCK_IN != self.LOG_BLOCK_OUT:
            raise ConfigError(
                f"{self.name}: key 'DEPTHWISE' = 1 needs LOG_BLOCK_IN = LOG_BLOCK_OUT (each output lane reduces its "
                f"own input channel), got {self.LOG_BLOCK_IN} and {self.LOG_BLOCK_OUT}")
        if self.LOG_OUT_BUFF_SIZE < self.LOG_OUT_ELEM_BYTES:
            raise ConfigError(f"{self.name}: the OUT buffer (derived from LOG_ACC_BUFF_SIZE) is smaller than one element")
        uop_bits = self.LOG_ACC_DEPTH + self.UOP_SRC_BITS + self.LOG_WGT_DEPTH
        if uop_bits > UOP_WIDTH:
            raise ConfigError(
                f"{self.name}: the micro-op needs {uop_bits} bits (dst {self.LOG_ACC_DEPTH} + src "
                f"{self.UOP_SRC_BITS} + wgt {self.LOG_WGT_DEPTH}) but is {UOP_WIDTH} bits; shrink "
                f"LOG_ACC_BUFF_SIZE, LOG_INP_BUFF_SIZE or LOG_WGT_BUFF_SIZE")
        # The instruction layouts must fit their widths; the ISA module says which field does not.
        try:
            ISA(self)
        except FormatError as err:
            raise ConfigError(f"{self.name}: {err}") from None

    # ------------------------------------------------------------------ element shapes
    @property
    def LOG_BLOCK(self) -> int:
        if self.LOG_BLOCK_IN != self.LOG_BLOCK_OUT:
            raise AttributeError("LOG_BLOCK is undefined when LOG_BLOCK_IN != LOG_BLOCK_OUT")
        return self.LOG_BLOCK_IN

    @property
    def LOG_OUT_WIDTH(self) -> int:
        return self.LOG_INP_WIDTH

    @property
    def INP_WIDTH(self) -> int:
        return 1 << self.LOG_INP_WIDTH

    @property
    def WGT_WIDTH(self) -> int:
        return 1 << self.LOG_WGT_WIDTH

    @property
    def ACC_WIDTH(self) -> int:
        return 1 << self.LOG_ACC_WIDTH

    @property
    def OUT_WIDTH(self) -> int:
        return 1 << self.LOG_OUT_WIDTH

    @property
    def BATCH(self) -> int:
        return 1 << self.LOG_BATCH

    @property
    def BLOCK_IN(self) -> int:
        return 1 << self.LOG_BLOCK_IN

    @property
    def BLOCK_OUT(self) -> int:
        return 1 << self.LOG_BLOCK_OUT

    @property
    def BUS_WIDTH(self) -> int:
        return 1 << self.LOG_BUS_WIDTH

    # log2 bytes of one SRAM element of each memory type
    @property
    def LOG_UOP_ELEM_BYTES(self) -> int:
        return 2

    @property
    def LOG_INP_ELEM_BYTES(self) -> int:
        return self.LOG_INP_WIDTH + self.LOG_BATCH + self.LOG_BLOCK_IN - 3

    @property
    def LOG_WGT_ELEM_BYTES(self) -> int:
        return self.LOG_WGT_WIDTH + self.LOG_BLOCK_OUT + self.LOG_BLOCK_IN - 3

    @property
    def LOG_ACC_ELEM_BYTES(self) -> int:
        return self.LOG_ACC_WIDTH + self.LOG_BATCH + self.LOG_BLOCK_OUT - 3

    @property
    def LOG_OUT_ELEM_BYTES(self) -> int:
        return self.LOG_OUT_WIDTH + self.LOG_BATCH + self.LOG_BLOCK_OUT - 3

    @property
    def UOP_ELEM_BYTES(self) -> int:
        return 1 << self.LOG_UOP_ELEM_BYTES

    @property
    def INP_ELEM_BYTES(self) -> int:
        return 1 << self.LOG_INP_ELEM_BYTES

    @property
    def WGT_ELEM_BYTES(self) -> int:
        return 1 << self.LOG_WGT_ELEM_BYTES

    @property
    def ACC_ELEM_BYTES(self) -> int:
        return 1 << self.LOG_ACC_ELEM_BYTES

    @property
    def OUT_ELEM_BYTES(self) -> int:
        return 1 << self.LOG_OUT_ELEM_BYTES

    # matrix widths in bits (docs/architecture.md §1.2)
    @property
    def INP_MATRIX_WIDTH(self) -> int:
        return self.INP_WIDTH * self.BATCH * self.BLOCK_IN

    @property
    def WGT_MATRIX_WIDTH(self) -> int:
        return self.WGT_WIDTH * self.BLOCK_OUT * self.BLOCK_IN

    @property
    def ACC_MATRIX_WIDTH(self) -> int:
        return self.ACC_WIDTH * self.BATCH * self.BLOCK_OUT

    @property
    def OUT_MATRIX_WIDTH(self) -> int:
        return self.OUT_WIDTH * self.BATCH * self.BLOCK_OUT

    # ------------------------------------------------------------------ SRAM depths
    @property
    def LOG_OUT_BUFF_SIZE(self) -> int:
        return self.LOG_ACC_BUFF_SIZE + self.LOG_OUT_WIDTH - self.LOG_ACC_WIDTH

    @property
    def LOG_UOP_DEPTH(self) -> int:
        return self.LOG_UOP_BUFF_SIZE - self.LOG_UOP_ELEM_BYTES

    @property
    def LOG_INP_DEPTH(self) -> int:
        return self.LOG_INP_BUFF_SIZE - self.LOG_INP_ELEM_BYTES

    @property
    def LOG_WGT_DEPTH(self) -> int:
        return self.LOG_WGT_BUFF_SIZE - self.LOG_WGT_ELEM_BYTES

    @property
    def LOG_ACC_DEPTH(self) -> int:
        return self.LOG_ACC_BUFF_SIZE - self.LOG_ACC_ELEM_BYTES

    @property
    def LOG_OUT_DEPTH(self) -> int:
        return self.LOG_ACC_DEPTH

    @property
    def UOP_DEPTH(self) -> int:
        return 1 << self.LOG_UOP_DEPTH

    @property
    def INP_DEPTH(self) -> int:
        return 1 << self.LOG_INP_DEPTH

    @property
    def WGT_DEPTH(self) -> int:
        return 1 << self.LOG_WGT_DEPTH

    @property
    def ACC_DEPTH(self) -> int:
        return 1 << self.LOG_ACC_DEPTH

    @property
    def OUT_DEPTH(self) -> int:
        return 1 << self.LOG_OUT_DEPTH

    @property
    def UOP_SRC_BITS(self) -> int:
        """Bits of the micro-op's src field: it addresses inp rows (GEMM) and acc rows (ALU)."""
        return max(self.LOG_ACC_DEPTH, self.LOG_INP_DEPTH)

    def beats(self, elem_bytes: int) -> int:
        """Bus beats one element of ``elem_bytes`` takes (at least 1)."""
        return max(1, elem_bytes * 8 // self.BUS_WIDTH)

    @property
    def MACS_PER_CYCLE(self) -> int:
        return self.BATCH * self.BLOCK_IN * self.BLOCK_OUT

    @property
    def bitstream(self) -> str:
        """VTA's configuration string, e.g. ``1x16_i8w8a32_15_15_18_17``."""
        block = (f"{self.BLOCK_IN}" if self.BLOCK_IN == self.BLOCK_OUT else f"{self.BLOCK_IN}x{self.BLOCK_OUT}")
        return (f"{self.BATCH}x{block}_i{self.INP_WIDTH}w{self.WGT_WIDTH}a{self.ACC_WIDTH}_"
                f"{self.LOG_UOP_BUFF_SIZE}_{self.LOG_INP_BUFF_SIZE}_{self.LOG_WGT_BUFF_SIZE}_{self.LOG_ACC_BUFF_SIZE}")

    def __str__(self):
        return f"{self.name} ({self.bitstream}, bus {self.BUS_WIDTH})"


def load_config(source: Config | str | os.PathLike | dict | None = None) -> Config:
    """Load a config from a JSON path, a dict, an existing :class:`Config`, or None (the default).

    None means the file named by the ``VTA_CONFIG`` environment variable when it is set, else
    ``configs/default.json``. A string is a path, or the name of a file of ``configs/`` with or without
    ``.json`` (``"small"``); both work from any directory, and so does a path relative to the
repository root (``"configs/small.json"``) when the working directory has no such file. Raises
    :class:`ConfigError` naming the file or key when the file is unreadable, not JSON, or not a valid config.
    """
    if isinstance(source, Config):
        return source
    if isinstance(source, dict):
        return Config.from_dict(source)
    if source is None:
        source = os.environ.get("VTA_CONFIG") or DEFAULT_CONFIG_PATH
    path = Path(source)
    if not path.exists() and (CONFIG_DIR / path).exists():
        path = CONFIG_DIR / path
    if not path.exists() and (CONFIG_DIR / f"{path}.json").exists():
        path = CONFIG_DIR / f"{path}.json"
    if not path.exists() and not path.is_absolute() and (CONFIG_DIR.parent / path).exists():
        path = CONFIG_DIR.parent / path          # "configs/small.json" from outside the repository root
    try:
        text = path.read_text()
    except OSError as err:
        names = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.json")))
        raise ConfigError(f"cannot read config file {str(source)!r}: {err.strerror}; a config is a JSON file or "
                          f"one of the names {names} (the files of {CONFIG_DIR})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: not valid JSON: {err}") from None
    return Config.from_dict(data, name=path.stem)


def default_config() -> Config:
    return load_config(None)
