"""The registry of handlers: by the kind of node they make and by the ONNX operators they take."""

from __future__ import annotations

from .base import Handler

__all__ = ["register", "for_op", "for_kind", "HANDLERS"]

HANDLERS: dict[str, Handler] = {}        # kind -> handler
_BY_OP: dict[str, list[Handler]] = {}    # ONNX op type -> its handlers, tried in registration order


def register(cls: type[Handler]) -> type[Handler]:
    """Class decorator: put one instance of a handler in the registry (by kind and by op type)."""
    h = cls()
    if h.kind in HANDLERS:
        raise ValueError(f"two handlers of kind {h.kind!r}")
    HANDLERS[h.kind] = h
    for op in h.op_types:
        _BY_OP.setdefault(op, []).append(h)
    return cls


def for_op(op_type: str) -> list[Handler]:
    """The handlers that may take a node of ``op_type``, in order (none: the node goes to a CPU island)."""
    return _BY_OP.get(op_type, [])


def for_kind(kind: str) -> Handler:
    return HANDLERS[kind]
