"""The networks of a sweep as files: the int8 ONNX model and its input, written once, named by their digest.

A zoo network is built and quantized in code (:mod:`apps.resnet18`, :mod:`apps.zoo`) with the input its app feeds
(``resnet18``: the demo's image, ``calibration_images(1, 224, seed=1000)``; a zoo model: ``apps.zoo.inputs(name,
1)``); the files are kept under a digest of the recipe (the builders' sources and the quantizer's versions), so a
rerun does not quantize again. An ONNX path is used as it is, with its input file or, without one, the seeded
noise ``python -m apps.onnx MODEL`` feeds (one array per graph input, ``normal(0, 1)`` from seed 0, in the graph's
input order), written to a .npz.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from .cache import ROOT, digest_file
from .spec import Network

__all__ = ["Prepared", "prepare", "default_inputs", "RECIPE_SOURCES"]

# what a zoo network's files are made from (relative to the repository root)
RECIPE_SOURCES = ("apps/zoo", "apps/resnet18.py", "apps/onnx/calibrate.py")


@dataclass(frozen=True)
class Prepared:
    """A network's files and the digest of their bytes (the network's part of the rtl tasks' cache keys)."""
    name: str
    onnx: Path
    input: Path
    digest: str


def default_inputs(onnx_path: str | Path, seed: int = 0) -> dict:
    """The input ``python -m apps.onnx MODEL`` runs without ``--input``: seeded normal noise per graph input."""
    from ..onnx.graph import load

    shapes = dict(load(str(onnx_path)).inputs)
    rng = np.random.default_rng(seed)
    return {n: rng.normal(0, 1, shape).astype(np.float32) for n, shape in shapes.items()}


def _recipe(net: Network) -> str:
    h = hashlib.sha256(f"{net.model}:{net.reduced}".encode())
    for entry in RECIPE_SOURCES:
        p = ROOT / entry
        for f in sorted(p.rglob("*.py")) if p.is_dir() else [p]:
            h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    for dist in ("numpy", "onnx", "onnxruntime"):
        h.update(f"{dist}={version(dist)}".encode())
    return h.hexdigest()[:16]


def _zoo(net: Network) -> tuple[bytes, dict]:
    if net.model == "resnet18":
        from .. import resnet18

        width, image = (8, 32) if net.reduced else (64, 224)
        _, q = resnet18.quantized_model(width, image)
        return q.SerializeToString(), {resnet18.INPUT: resnet18.calibration_images(1, image, seed=1000)}
    from .. import zoo

    return zoo.quantized(net.model, net.reduced).SerializeToString(), zoo.inputs(net.model, 1, net.reduced)[0]


def prepare(net: Network, directory: str | Path) -> Prepared:
    """The files of ``net`` in ``directory`` (written when missing)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if net.zoo:
        stem = directory / f"{net.model}{'-reduced' if net.reduced else ''}-{_recipe(net)}"
        onnx_path, input_path = stem.with_suffix(".onnx"), stem.with_suffix(".npz")
        if not (onnx_path.exists() and input_path.exists()):
            data, inputs = _zoo(net)
            _atomic(input_path, lambda p: np.savez(p, **inputs))
            _atomic(onnx_path, lambda p: p.write_bytes(data))
    else:
        onnx_path = Path(net.model)
        if net.input is not None:
            input_path = Path(net.input)
        else:
            input_path = directory / f"{onnx_path.stem}-{digest_file(onnx_path)[:16]}-seed0.npz"
            if not input_path.exists():
                inputs = default_inputs(onnx_path)
                _atomic(input_path, lambda p: np.savez(p, **inputs))
    h = hashlib.sha256()
    for f in (onnx_path, input_path):
        h.update(digest_file(f).encode())
    return Prepared(net.name, onnx_path, input_path, h.hexdigest()[:24])


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    write(tmp)
    tmp.replace(path)
