"""A BERT-style encoder (Devlin et al. 2019: post-LayerNorm Transformer layers, GELU), float ONNX, written
the way ``torch.onnx.export`` writes Hugging Face's ``BertModel`` encoder in eval mode.

Input: the embedded sequence (1, seq, hidden) (token, position and segment embeddings summed and
normalized: the lookup happens before the model). Each ``nn.Linear`` is a MatMul of the rank-3 activation
by the transposed weight, then an Add of the bias. Each layer: Q, K, V projections; heads split by
Reshape to (1, seq, heads, d) and Transpose (0, 2, 1, 3); K transposed again (0, 1, 3, 2); Q K^T (MatMul
of two activations), Div by sqrt(d), Softmax, A V; heads merged by Transpose and Reshape; the output
projection, residual Add and LayerNormalization; a feed-forward of 4 hidden with GELU (the Erf form),
residual Add and LayerNormalization.
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

        def split(t):       # (1, seq, hidden) -> (1, heads, seq, d)
            return net.transpose(net.reshape(t, [1, seq, heads, d]), (0, 2, 1, 3))

        q = split(net.linear(x, hidden, hidden, tag=tag + "query"))
        k = split(net.linear(x, hidden, hidden, tag=tag + "key"))
        v = split(net.linear(x, hidden, hidden, tag=tag + "value"))
        scores = net.node("MatMul", [q, net.transpose(k, (0, 1, 3, 2))], tag + "scores")
        scores = net.node("Div", [scores, net.const(tag + "sqrt_d", np.sqrt(d))])
        attn = net.node("Softmax", [scores], tag + "softmax", axis=-1)
        ctx = net.node("MatMul", [attn, v], tag + "context")
        ctx = net.reshape(net.transpose(ctx, (0, 2, 1, 3)), [1, seq, hidden])
        x = net.layernorm(net.add(net.linear(ctx, hidden, hidden, gain=0.5, tag=tag + "attn.out"), x), hidden)
        h = net.linear(x, hidden, 4 * hidden, act="gelu", tag=tag + "ffn.in")
        x = net.layernorm(net.add(net.linear(h, 4 * hidden, hidden, gain=0.5, tag=tag + "ffn.out"), x), hidden)
    net.output(x, OUTPUT)
    return net.model([(INPUT, [1, seq, hidden])], [(OUTPUT, [1, seq, hidden])])
