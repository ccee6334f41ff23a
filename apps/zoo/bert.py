"""A BERT-style encoder (Devlin et al. 2019: post-LayerNorm Transformer layers, GELU), float ONNX.

Input: the embedded sequence (seq, hidden) (token, position and segment embeddings summed and
normalized: the lookup happens before the model). Each layer: Q, K, V projections (Gemm), per head
Q K^T / sqrt(d) (MatMul of two activations), Softmax, A V (MatMul of two activations), the output
projection, residual Add and LayerNormalization, a feed-forward of 4 hidden with GELU (the Erf form),
residual Add and LayerNormalization. Heads are split and merged with Reshape and Transpose.
"""

from __future__ import annotations

import numpy as np

from .net import Net

INPUT, OUTPUT = "embeddings", "encoded"


def build(hidden: int = 128, seq: int = 32, layers: int = 2, heads: int = 2, seed: int = 0):
    net = Net(f"bert_h{hidden}_s{seq}_l{layers}", seed)
    d = hidden // heads
    x = INPUT
    for i in range(layers):
        tag = f"layer{i}."

        def split(t):       # (seq, hidden) -> (heads, seq, d)
            return net.transpose(net.reshape(t, [seq, heads, d]), (1, 0, 2))

        q = split(net.dense(x, hidden, hidden, tag=tag + "query"))
        k = split(net.dense(x, hidden, hidden, tag=tag + "key"))
        v = split(net.dense(x, hidden, hidden, tag=tag + "value"))
        scores = net.node("MatMul", [q, net.transpose(k, (0, 2, 1))], tag + "scores")
        scores = net.node("Mul", [scores, net.const(tag + "scale", 1.0 / np.sqrt(d))])
        attn = net.node("Softmax", [scores], tag + "softmax", axis=-1)
        ctx = net.node("MatMul", [attn, v], tag + "context")
        ctx = net.reshape(net.transpose(ctx, (1, 0, 2)), [seq, hidden])
        x = net.layernorm(net.add(net.dense(ctx, hidden, hidden, gain=0.5, tag=tag + "attn.out"), x), hidden)
        h = net.dense(x, hidden, 4 * hidden, act="gelu", tag=tag + "ffn.in")
        x = net.layernorm(net.add(net.dense(h, 4 * hidden, hidden, gain=0.5, tag=tag + "ffn.out"), x), hidden)
    net.output(x, OUTPUT)
    return net.model([(INPUT, [seq, hidden])], [(OUTPUT, [seq, hidden])])
