"""Partition a Relax module of an int8 QDQ model: the accelerator's layers as ``vta.qdq.*`` calls, TVM's CPU code for
the rest.

TVM's ONNX front end (``tvm.relax.frontend.onnx.from_onnx``) keeps a QDQ model's form: each QuantizeLinear is an
``R.quantize``, each DequantizeLinear an ``R.dequantize``, the operator between them runs in float. The layers
this accelerator runs are chains of Relax dataflow patterns (:mod:`tvm.relax.dpl`), tried in this order::

    conv2d_add        quantize(add(dequantize(<conv2d chain>), dequantize(other)))      (the residual add, fused)
    conv2d            quantize(conv2d(dequantize(x), dequantize(W)) [+ reshape(dequantize(b))])
    conv2d_transpose  quantize(conv2d_transpose(dequantize(x), dequantize(W)) [+ reshape(dequantize(b))])
    dense             quantize(matmul(dequantize(x), [permute_dims](dequantize(W))) [+ dequantize(b)])
    matmul            quantize(matmul(dequantize(a), dequantize(b)))                    (two activations)
    add / add_const   quantize(add(dequantize(a), dequantize(b)))                       (b may be a constant)

Per-tensor and per-channel weight scales, grouped and depthwise convolutions, int8 and uint8 activations all
take these forms. Each match (``rewrite_call``) is checked by the rules of the ONNX importer (:mod:`apps.onnx`):
constants and quantization read from the Relax graph, the weight and bias rules of
:func:`apps.onnx.graph.check_weight` / :func:`~apps.onnx.graph.check_bias`, the node built by the handler's
``make_node`` and prepared by :func:`apps.onnx.layers.prepare` for the config (:func:`apps.tvm_vta.runtime.layers_of`,
the same function the offloaded call runs), then the handler's placement at the static shapes. A layer that
passes becomes ``R.call_dps_packed("vta.qdq.<op>", (spec, int8 activations..., constants...))``
(:mod:`apps.tvm_vta.runtime`); one that does not stays as TVM's float operators, compiled for the CPU, and the
:class:`Partition` report says which layer and why. An intermediate value of a chain used outside it (a conv's
output read by a second layer: then no residual fusion) keeps the chain from matching, as FuseOpsByPattern's
leak check does, so nothing is computed twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax
from tvm.ir.prim import IntImm
from tvm.relax.analysis import get_var2val, remove_all_unused
from tvm.relax.dpl import is_const, is_op, rewrite_call, wildcard

from sw import runtime
from sw.config import Config, load_config

from ..onnx.graph import check_bias, check_weight
from ..onnx.handlers.base import Unsupported
from ..onnx.numerics import NumericsError, QParams
from ..onnx.runner import placement, residual_adds
from . import runtime as vta_runtime

__all__ = ["partition", "Partition", "Row", "onnx_names", "PATTERNS"]

PATTERNS = ("conv2d_add", "conv2d", "conv2d_transpose", "dense", "matmul", "add")
"""The patterns, in the order they are tried (a residual add first, so that it fuses into its conv)."""

_CPU_OPS = ("relax.nn.conv2d", "relax.nn.conv2d_transpose", "relax.matmul")


@dataclass
class Row:
    """One layer of the partition: ``where`` 'vta' (a ``vta.qdq.<op>`` call) or 'cpu' (TVM's code), ``reason``
    why it stays on the CPU ('' on the accelerator), ``macs`` per run at the static shapes."""
    name: str
    op: str
    where: str
    macs: int
    reason: str = ""
    tensor: str = ""
    position: int = field(default=0, repr=False)        # the layer's place in the graph (the report's order)


@dataclass
class Partition:
    """The partitioned module and its report (:meth:`table`)."""
    mod: tvm.IRModule
    rows: list[Row] = field(default_factory=list)

    @property
    def macs(self) -> int:
        return sum(r.macs for r in self.rows)

    @property
    def vta_macs(self) -> int:
        return sum(r.macs for r in self.rows if r.where == "vta")

    @property
    def mac_share(self) -> float:
        return self.vta_macs / self.macs if self.macs else 0.0

    def offloaded(self) -> list[Row]:
        return [r for r in self.rows if r.where == "vta"]

    def table(self) -> str:
        from sw.tables import format_table

        rows = [dict(name=r.name, op=r.op, where="VTA" if r.where == "vta" else "CPU (TVM)", macs=f"{r.macs:,}",
                     reason=r.reason) for r in self.rows]
        return format_table(rows, [("name", "layer"), ("op", "op"), ("where", "runs on"), ("macs", "MACs"),
                                   ("reason", "why on the CPU")])

    def summary(self) -> str:
        vta = self.offloaded()
        return (f"{len(vta)} layers on VTA ({self.vta_macs:,} MACs), {len(self.rows) - len(vta)} quantized layers on "
                f"TVM's CPU code ({self.macs - self.vta_macs:,} MACs): {self.mac_share:.2%} of the MACs on VTA")


# ---------------------------------------------------------------------------------------------------- patterns
def _q(inner):
    return is_op("relax.quantize")(inner, is_const(), is_const())


def _dq_const():
    return is_op("relax.dequantize")(is_const(), is_const(), is_const())


def _conv(op: str):
    core = is_op(op)(wildcard(), _dq_const())
    return _q(core | is_op("relax.add")(core, is_op("relax.reshape")(_dq_const(), wildcard())))


def _pattern(name: str):
    if name == "conv2d_add":
        y = is_op("relax.dequantize")(_conv("relax.nn.conv2d"), is_const(), is_const())
        other = wildcard()
        return _q(is_op("relax.add")(y, other) | is_op("relax.add")(other, y))
    if name == "conv2d":
        return _conv("relax.nn.conv2d")
    if name == "conv2d_transpose":
        return _conv("relax.nn.conv2d_transpose")
    if name == "dense":
        w = _dq_const()
        core = is_op("relax.matmul")(wildcard(), w | is_op("relax.permute_dims")(w))
        return _q(core | is_op("relax.add")(core, _dq_const()))
    if name == "matmul":
        return _q(is_op("relax.matmul")(wildcard(), wildcard()))
    if name == "add":
        return _q(is_op("relax.add")(wildcard(), wildcard()))
    raise ValueError(f"pattern = {name!r}; allowed: {', '.join(PATTERNS)}")


# ---------------------------------------------------------------------------------------------------- reading
def _is_call(expr, op: str) -> bool:
    return isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.name == op


def _const(expr) -> np.ndarray:
    return np.asarray(expr.value.numpy())


def _shape(expr, what: str) -> list[int]:
    shape = getattr(expr.ty, "shape", None)
    if shape is None:
        raise Unsupported(f"{what} has no known shape")
    dims = []
    for d in shape:
        if not isinstance(d, (int, IntImm)):
            raise Unsupported(f"{what} has a symbolic shape {list(shape)}; the partition needs static shapes "
                              f"(from_onnx's shape_dict)")
        dims.append(int(d))
    return dims


def _qparams(call, what: str) -> QParams:
    """Per-tensor quantization of a quantize / dequantize call."""
    scale, zp = _const(call.args[1]), _const(call.args[2])
    if scale.size != 1 or zp.size != 1:
        raise Unsupported(f"{what} is not quantized per tensor ({scale.size} scales)")
    if zp.dtype not in (np.int8, np.uint8):
        raise Unsupported(f"{what} is of type {zp.dtype}; taken: int8, uint8")
    return QParams(float(scale.reshape(())), int(zp.reshape(())), str(zp.dtype))


def _qp_json(q: QParams) -> list:
    return [q.scale, q.zero_point, q.dtype]


class _Chain:
    """Reads one matched chain of ``main``: values behind variables, the intermediate variables (which must have no
    other use), the activations, the constant arrays."""

    def __init__(self, var2val: dict, uses: dict):
        self.var2val, self.uses = var2val, uses
        self.acts: list = []            # (int8 expr, QParams, shape)
        self.arrays: list = []          # (name, Constant)

    def value(self, expr, inner: bool = True):
        """The value behind ``expr``; ``inner``: a variable of the chain, which must have no other use."""
        if isinstance(expr, relax.Var):
            if inner and self.uses.get(expr, 0) > 1:
                raise Unsupported(f"an intermediate result ({expr.name}) is used outside the chain")
            return self.var2val.get(expr, expr)
        return expr

    def activation(self, expr, idx: int):
        dq = self.value(expr, inner=False)
        if not _is_call(dq, "relax.dequantize") or isinstance(dq.args[0], tvm.ir.Constant):
            raise Unsupported(f"input {idx} is not a dequantized int8/uint8 activation")
        q = _qparams(dq, f"input {idx}")
        self.acts.append((dq.args[0], q, _shape(dq.args[0], f"input {idx}")))
        return q

    def weight(self, expr, channel_axis: int, rank: int, what: str):
        dq = self.value(expr, inner=False)          # (a constant's dequantize may be shared: it costs nothing)
        w, s, z = _const(dq.args[0]), _const(dq.args[1]), _const(dq.args[2])
        if w.ndim != rank:
            raise Unsupported(f"weight of rank {w.ndim}; the accelerator's {what} takes {rank}")
        check_weight(w, s, z, int(dq.attrs.axis), channel_axis)
        self.arrays += [("weight", dq.args[0]), ("w_scale", dq.args[1])]
        return w

    def bias(self, expr):
        dq = self.value(expr, inner=False)
        if not _is_call(dq, "relax.dequantize"):
            raise Unsupported("the bias is not a dequantized constant")
        check_bias(_const(dq.args[0]), _const(dq.args[1]), _const(dq.args[2]))
        self.arrays += [("bias", dq.args[0]), ("b_scale", dq.args[1])]


def _conv_spec(ch: _Chain, root, op: str) -> dict:
    """The spec of a conv2d / conv2d_transpose chain rooted at quantize call ``root``."""
    out = _qparams(root, "the output")
    inner = ch.value(root.args[0])
    conv_op = "relax.nn.conv2d" if op == "conv2d" else "relax.nn.conv2d_transpose"
    conv, bias = (ch.value(inner.args[0]), inner.args[1]) if _is_call(inner, "relax.add") else (inner, None)
    a = conv.attrs
    layouts = (str(a.data_layout), str(a.kernel_layout), str(a.out_layout))
    want = ("NCHW", "OIHW", "NCHW") if op == "conv2d" else ("NCHW", "IOHW", "NCHW")
    if layouts != want:
        raise Unsupported(f"layouts {'/'.join(layouts)}; taken: {'/'.join(want)}")
    if any(int(d) != 1 for d in a.dilation):
        raise Unsupported(f"dilations = {[int(d) for d in a.dilation]}; the accelerator's {op} takes 1")
    ch.activation(conv.args[0], 0)
    w = ch.weight(conv.args[1], 0 if op == "conv2d" else 1, 4, op)
    if bias is not None:
        reshape = ch.value(bias, inner=False)
        if not _is_call(reshape, "relax.reshape") or _shape(reshape, "the bias") != [1, int(w.shape[
                0 if op == "conv2d" else 1]), 1, 1]:
            raise Unsupported("the bias is not one value per output channel")
        ch.bias(reshape.args[0])
    pads = [int(p) for p in a.padding]
    attrs = {"pads": pads, "strides": [int(s) for s in a.strides]}
    if op == "conv2d":
        attrs["groups"] = int(a.groups)
    else:
        attrs.update(output_padding=[int(p) for p in a.output_padding], group=int(a.groups))
    if not _is_call(conv, conv_op):
        raise Unsupported(f"not a {conv_op}")
    return {"op": op, "inputs": [_qp_json(ch.acts[0][1])], "output": _qp_json(out), "attrs": attrs,
            "shapes": {"x0": ch.acts[0][2], "y": _shape(root, "the output")}}


def _dense_spec(ch: _Chain, root) -> dict:
    out = _qparams(root, "the output")
    inner = ch.value(root.args[0])
    mm, bias = (ch.value(inner.args[0]), inner.args[1]) if _is_call(inner, "relax.add") else (inner, None)
    ch.activation(mm.args[0], 0)
    if len(ch.acts[0][2]) < 2:
        raise Unsupported(f"input of rank {len(ch.acts[0][2])}; the accelerator's dense takes rank >= 2")
    wexpr = ch.value(mm.args[1])
    transposed = _is_call(wexpr, "relax.permute_dims")
    if transposed:
        axes = wexpr.attrs.axes
        if axes is not None and [int(x) for x in axes] != [1, 0]:
            raise Unsupported(f"a weight permuted by {list(axes)}; taken: a transpose")
        wexpr = wexpr.args[0]
    w = ch.weight(wexpr, 0 if transposed else 1, 2, "dense")
    if bias is not None:
        ch.bias(bias)
        if _shape(ch.value(bias, inner=False), "the bias") != [int(w.shape[0 if transposed else 1])]:
            raise Unsupported("the bias is not one value per output")
    return {"op": "dense", "inputs": [_qp_json(ch.acts[0][1])], "output": _qp_json(out),
            "attrs": {"transposed": transposed}, "shapes": {"x0": ch.acts[0][2], "y": _shape(root, "the output")}}


def _matmul_spec(ch: _Chain, root) -> dict:
    out = _qparams(root, "the output")
    mm = ch.value(root.args[0])
    qa, qb = ch.activation(mm.args[0], 0), ch.activation(mm.args[1], 1)
    sa, sb = ch.acts[0][2], ch.acts[1][2]
    if len(sa) < 2 or len(sa) != len(sb):
        raise Unsupported(f"operands of ranks {len(sa)} and {len(sb)}; taken: equal ranks >= 2 (no broadcasting)")
    return {"op": "matmul", "inputs": [_qp_json(qa), _qp_json(qb)], "output": _qp_json(out), "attrs": {},
            "shapes": {"x0": sa, "x1": sb, "y": _shape(root, "the output")}}


def _add_spec(ch: _Chain, root) -> dict:
    out = _qparams(root, "the output")
    add = ch.value(root.args[0])
    consts = [i for i in (0, 1) if _is_call(ch.value(add.args[i], inner=False), "relax.dequantize")
              and isinstance(ch.value(add.args[i], inner=False).args[0], tvm.ir.Constant)]
    if len(consts) == 2:
        raise Unsupported("an add of two constants")
    if consts:
        pos = consts[0]
        dq = ch.value(add.args[pos], inner=False)
        q = ch.activation(add.args[1 - pos], 0)
        ch.arrays += [("constant", dq.args[0]), ("c_scale", dq.args[1]), ("c_zero_point", dq.args[2])]
        return {"op": "add_const", "inputs": [_qp_json(q)], "output": _qp_json(out), "attrs": {"position": pos},
                "shapes": {"x0": ch.acts[0][2], "y": _shape(root, "the output")}}
    qa, qb = ch.activation(add.args[0], 0), ch.activation(add.args[1], 1)
    return {"op": "add", "inputs": [_qp_json(qa), _qp_json(qb)], "output": _qp_json(out), "attrs": {},
            "shapes": {"x0": ch.acts[0][2], "x1": ch.acts[1][2], "y": _shape(root, "the output")}}


def _conv_add_spec(ch: _Chain, root, names: dict) -> dict:
    out = _qparams(root, "the output")
    add = ch.value(root.args[0])
    side = None
    for i in (0, 1):
        dq = ch.value(add.args[i], inner=False)
        if _is_call(dq, "relax.dequantize") and _is_call(ch.value(dq.args[0], inner=False), "relax.quantize"):
            inner_q = ch.value(dq.args[0], inner=False)
            if _is_call(ch.value(inner_q.args[0], inner=False), "relax.add") or \
                    _is_call(ch.value(inner_q.args[0], inner=False), "relax.nn.conv2d"):
                side = i
                break
    if side is None:
        raise Unsupported("no conv2d chain among the add's inputs")
    dq = ch.value(add.args[side])                 # the conv's dequantized output: one use, this add
    conv_q_var = dq.args[0]
    conv_q = ch.value(conv_q_var)                 # its quantized output: one use, that dequantize
    spec = _conv_spec(ch, conv_q, "conv2d")
    cq = _qparams(conv_q, "the conv's output")
    if _qparams(dq, "the conv's output") != cq:
        raise Unsupported("the conv's output is dequantized with other parameters than it is quantized with")
    qo = ch.activation(add.args[1 - side], 1)
    node, tensor = names.get(conv_q_var, (conv_q_var.name, conv_q_var.name))
    spec.update(op="conv2d_add", inputs=spec["inputs"] + [_qp_json(qo)], output=_qp_json(out),
                conv_output=_qp_json(cq), index=side, conv_name=node, conv_tensor=tensor)
    spec["shapes"].update(x1=ch.acts[1][2], c=_shape(conv_q, "the conv's output"), y=_shape(root, "the output"))
    return spec


# ---------------------------------------------------------------------------------------------------- the pass
def onnx_names(model) -> list[tuple[str, str, float, int]]:
    """(node, tensor, scale, zero point) of each QuantizeLinear of an ONNX model, in graph order: the node is the one
    whose output it quantizes (the layer), the tensor its quantized output (the name ``apps.onnx`` keys it by)."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    out = []
    for n in model.graph.node:
        if n.op_type != "QuantizeLinear":
            continue
        src = producer.get(n.input[0])
        node = (src.name or src.output[0]) if src is not None else n.input[0]
        s = inits.get(n.input[1])
        z = inits.get(n.input[2]) if len(n.input) > 2 else None
        out.append((node, n.output[0], float(s.reshape(-1)[0]) if s is not None else float("nan"),
                    int(z.reshape(-1)[0]) if z is not None else 0))
    return out


def _bindings(func):
    for block in func.body.blocks:
        yield from block.bindings


def _uses(func) -> tuple[dict, dict]:
    """(var -> number of uses, var -> the variables bound to the values that use it) in ``func``."""
    counts: dict = {}
    users: dict = {}

    def visit(expr, user):
        if isinstance(expr, relax.Var):
            counts[expr] = counts.get(expr, 0) + 1
            users.setdefault(expr, []).append(user)
        elif isinstance(expr, relax.Call):
            for a in expr.args:
                visit(a, user)
        elif isinstance(expr, relax.Tuple):
            for f in expr.fields:
                visit(f, user)
        elif isinstance(expr, relax.TupleGetItem):
            visit(expr.tuple_value, user)

    for b in _bindings(func):
        visit(b.value, b.var)
    visit(func.body.body, None)
    return counts, users


def _names_of(func, model) -> dict:
    """var of each R.quantize binding -> (ONNX node, ONNX tensor), when the model's QuantizeLinear nodes correspond to
    them one to one in order (same scale and zero point); else {}."""
    qs = [b.var for b in _bindings(func) if _is_call(b.value, "relax.quantize")]
    if model is None:
        return {}
    names = onnx_names(model)
    if len(names) != len(qs):
        return {}
    var2val = get_var2val(func)
    out = {}
    for var, (node, tensor, s, z) in zip(qs, names):
        call = var2val[var]
        if float(_const(call.args[1]).reshape(-1)[0]) != s or int(_const(call.args[2]).reshape(-1)[0]) != z:
            return {}
        out[var] = (node, tensor)
    return out


def _macs_of_cpu_op(call) -> int:
    y = _shape(call, "the output")
    if _is_call(call, "relax.matmul"):
        return int(np.prod(y)) * _shape(call.args[0], "input")[-1]
    w = _shape(call.args[1], "weight")
    if _is_call(call, "relax.nn.conv2d"):
        return int(np.prod(y)) * int(np.prod(w[1:]))
    x = _shape(call.args[0], "input")                              # transposed: each input pixel x (O, kh, kw)
    return int(np.prod(x)) * int(np.prod(w)) // w[0]


def partition(mod: tvm.IRModule, config: Config | str | None = None, model=None) -> Partition:
    """Offload every chain of ``mod['main']`` that the accelerator of ``config`` takes (module docstring); ``model``:
    the ONNX model ``mod`` was imported from, for the layers' names (else the Relax variables')."""
    cfg = load_config(config)
    func = mod["main"]
    names = _names_of(func, model)
    order = {b.var: i for i, b in enumerate(_bindings(func))}
    rows: list[Row] = []
    reasons: dict = {}                  # root var -> (pattern, why) of the first pattern that matched and refused
    with runtime.use_target(cfg):
        for name in PATTERNS:
            var2val = get_var2val(func)
            counts, _ = _uses(func)
            roots = {v: k for k, v in var2val.items() if _is_call(v, "relax.quantize")}    # (keyed by identity)
            rewrite = _rewriter(name, var2val, counts, roots, names, cfg, rows, reasons, order)
            func = remove_all_unused(rewrite_call(_pattern(name), rewrite, func))
    var2val = get_var2val(func)
    _, users = _uses(func)
    for var, value in var2val.items():          # what stays on TVM's CPU code: quantized layers that were refused
        if var in reasons:
            node, tensor = names.get(var, (var.name, var.name))
            core = _core_op(value, var2val)
            rows.append(Row(node, reasons[var][0] if core is not None else "add", "cpu",
                            _macs_of_cpu_op(core) if core is not None else 0, reasons[var][1], tensor,
                            order.get(var, len(order))))
    for var, value in var2val.items():          # and operators with MACs outside any quantized chain
        if any(_is_call(value, op) for op in _CPU_OPS) and not _under_refused(var, users, var2val, reasons):
            rows.append(Row(var.name, value.op.name.split(".")[-1], "cpu", _macs_of_cpu_op(value),
                            "not between a dequantize and a quantize (a float input or output)", "",
                            order.get(var, len(order))))
    out = tvm.IRModule(dict(mod.functions))
    out["main"] = func
    return Partition(out, sorted(rows, key=lambda r: r.position))


def _rewriter(name, var2val, counts, roots, names, cfg, rows, reasons, order):
    """The rewriter of pattern ``name`` for ``rewrite_call``: the matched chain as a ``vta.qdq.<op>`` call, or the
    chain as it is (its reason kept in ``reasons``, a fused residual add's excepted: the add is tried alone next)."""
    def rewrite(expr, _matches):
        var = roots.get(expr)
        if var is None:
            return expr
        ch = _Chain(var2val, counts)
        node, tensor = names.get(var, (var.name, var.name))
        try:
            if name == "conv2d_add":
                spec = _conv_add_spec(ch, expr, names)
                spec.update(name=spec["conv_name"], add_name=node, tensor=tensor)
            else:
                spec = (_conv_spec(ch, expr, name) if name in ("conv2d", "conv2d_transpose") else
                        _dense_spec(ch, expr) if name == "dense" else
                        _matmul_spec(ch, expr) if name == "matmul" else _add_spec(ch, expr))
                spec.update(name=node, tensor=tensor)
            arrays = [_const(c) for _, c in ch.arrays]
            spec["arrays"] = [k for k, _ in ch.arrays]
            spec["digest"] = vta_runtime.digest(arrays)
            macs = _check_placement(spec, arrays, cfg)
        except (Unsupported, NumericsError, ValueError) as err:
            if name != "conv2d_add":
                reasons.setdefault(var, (name, str(err)))
            return expr
        reasons.pop(var, None)
        label = spec["name"] if name != "conv2d_add" else f"{spec['name']} + {node}"
        rows.append(Row(label, spec["op"], "vta", macs, "", tensor, order.get(var, len(order))))
        args = [tvm.ir.StringImm(json.dumps(spec, sort_keys=True))] + [a for a, _, _ in ch.acts] + \
            [c for _, c in ch.arrays]
        return relax.call_dps_packed(f"vta.qdq.{spec['op']}", args, out_ty=expr.ty)
    return rewrite


def _core_op(value, var2val):
    """The conv2d / conv2d_transpose / matmul inside a refused chain rooted at quantize ``value`` (None: an add)."""
    e = value.args[0]
    for _ in range(3):
        e = var2val.get(e, e) if isinstance(e, relax.Var) else e
        if any(_is_call(e, op) for op in _CPU_OPS):
            return e
        if _is_call(e, "relax.add"):
            e = e.args[0]
            continue
        return None
    return None


def _under_refused(var, users, var2val, reasons) -> bool:
    """Whether the operator bound to ``var`` is the core of a refused chain (already reported with its reason)."""
    frontier = [var]
    for _ in range(2):
        nxt = []
        for v in frontier:
            for u in users.get(v, []):
                if u is None:
                    continue
                if u in reasons and _is_call(var2val.get(u), "relax.quantize"):
                    return True
                nxt.append(u)
        frontier = nxt
    return False


def _check_placement(spec: dict, arrays: list, cfg: Config) -> int:
    """The layer's MACs at its static shapes; :class:`Unsupported` where the importer's placement keeps it on the
    CPU for ``cfg`` (or its residual add does not fuse: then the conv and the add are matched alone)."""
    layers = vta_runtime.layers_of(spec, arrays, bool(cfg.ALU_MUL))
    shapes = spec["shapes"]
    xs = {k: np.zeros(v, np.int8) for k, v in shapes.items()}
    macs = 0
    for lay in layers:
        ins = [xs[i] for i in lay.node.inputs]
        where, why = placement(lay, ins)
        if where != "vta":
            raise Unsupported(why)
        macs += int(lay.handler.macs(lay, ins, xs[lay.node.output]))
    if spec["op"] == "conv2d_add":
        conv, add = layers
        if not residual_adds(layers, ["y"]) or conv.handler.residual_epilogue(
                conv, add, spec["index"], [xs["x0"]], xs["x1"]) is None:
            raise Unsupported("the add does not fuse into the conv's epilogue")
    return macs
