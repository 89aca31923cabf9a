#!/usr/bin/env python3
"""bert-graph.py: writes Hugging Face's BertModel (base: 12 layers, hidden
768, 12 heads, intermediate 3072) as `superopt import` makes it of the
legacy exporter's file (what scripts/bench-transformers.py times as
"bert"), where no torch is at hand: each layer's operators in the
import's order (q, k and v each a bias-free MatMul and an Add of the bias,
reshaped and transposed, k to [B,H,D,S]; q and k each times sqrt(scale);
the padding mask's additive bias [B,1,S,S] made from attention_mask every
inference; softmax, the IsNaN guard, the product with v, the transpose
back; the output projection's MatMul and Add, the residual Add, the layer
norm; erf's GELU as Div, Erf, Add, Mul, Mul), with a safetensors sidecar
holding the values the passes read (the scales, GELU's constants, the
mask's 0 and minimum); the weights have no values (seeded random ones
when run). The embeddings are cut to the word embedding plus a position
table and their layer norm.

  scripts/micro/bert-graph.py OUT.graph [--batch 16] [--seq 128]
      [--layers 12] [--hidden 768] [--heads 12] [--inter 3072]

Checked against models/onnx/exports/bert.legacy.onnx imported at its own
config (hidden 64, 2 heads): the same layer, operator for operator.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graphtext  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--inter", type=int, default=3072)
    ap.add_argument("--vocab", type=int, default=30522)
    a = ap.parse_args()
    B, S, C, H, F = a.batch, a.seq, a.hidden, a.heads, a.inter
    D = C // H
    g = graphtext.Graph()
    weight, op = g.weight, g.op

    def shp(*d):
        return "[%s]" % ",".join(map(str, d))

    weight("word_emb", [a.vocab, C])
    weight("pos_emb", [1, S, C])
    weight("emb_ln.w", [C])
    weight("emb_ln.b", [C])
    sq = math.sqrt(1.0 / math.sqrt(D))
    weight("sqrt_scale", [], sq)
    weight("mask_zero", [], 0.0)
    weight("mask_min", [], np.finfo(np.float32).min)
    weight("nan_zero", [], 0.0)
    weight("gelu_sqrt2", [], math.sqrt(2.0))
    weight("gelu_one", [], 1.0)
    weight("gelu_half", [], 0.5)
    op("we", "gather(word_emb, input_ids)")
    op("e", "ewadd(we, pos_emb)")
    x = op("emb", "layernorm(e, emb_ln.w, emb_ln.b) axis=2 eps=1e-12")
    op("mf", "cast(attention_mask) to=f32")
    op("mr", "reshape(mf) shape=" + shp(B, 1, 1, S))
    op("mones", "const_ones() shape=" + shp(B, 1, S, S))
    op("mo", "ewmul(mr, mones)")
    op("mb", "cast(mo) to=bool")
    for i in range(a.layers):
        p = "l%d" % i
        op(p + ".bias", "where(mb, mask_zero, mask_min)")
        for j in "qkv":
            weight("%s.%s.w" % (p, j), [C, C])
            weight("%s.%s.b" % (p, j), [C])
            op("%s.%sm" % (p, j), "matmul(%s, %s.%s.w)" % (x, p, j))
            op("%s.%sa" % (p, j), "ewadd(%s.%s.b, %s.%sm)" % (p, j, p, j))
            op("%s.%sr" % (p, j),
               "reshape(%s.%sa) shape=%s" % (p, j, shp(B, S, H, D)))
        op(p + ".qt", "transpose(%s.qr) perm=[0,2,1,3]" % p)
        op(p + ".vt", "transpose(%s.vr) perm=[0,2,1,3]" % p)
        op(p + ".kt", "transpose(%s.kr) perm=[0,2,3,1]" % p)
        op(p + ".qs", "ewmul(%s.qt, sqrt_scale)" % p)
        op(p + ".ks", "ewmul(%s.kt, sqrt_scale)" % p)
        op(p + ".scores", "matmul(%s.qs, %s.ks)" % (p, p))
        op(p + ".masked", "ewadd(%s.scores, %s.bias)" % (p, p))
        op(p + ".p", "softmax(%s.masked) axis=3" % p)
        op(p + ".eq", "equal(%s.p, %s.p)" % (p, p))
        op(p + ".nan", "not(%s.eq)" % p)
        op(p + ".pg", "where(%s.nan, nan_zero, %s.p)" % (p, p))
        op(p + ".att", "matmul(%s.pg, %s.vt)" % (p, p))
        op(p + ".att_t", "transpose(%s.att) perm=[0,2,1,3]" % p)
        op(p + ".att_r", "reshape(%s.att_t) shape=%s" % (p, shp(B, S, C)))
        weight(p + ".o.w", [C, C])
        weight(p + ".o.b", [C])
        op(p + ".om", "matmul(%s.att_r, %s.o.w)" % (p, p))
        op(p + ".oa", "ewadd(%s.o.b, %s.om)" % (p, p))
        op(p + ".res1", "ewadd(%s.oa, %s)" % (p, x))
        weight(p + ".ln1.w", [C])
        weight(p + ".ln1.b", [C])
        op(p + ".ln1", "layernorm(%s.res1, %s.ln1.w, %s.ln1.b) axis=2 "
           "eps=1e-12" % (p, p, p))
        weight(p + ".fc1.w", [C, F])
        weight(p + ".fc1.b", [F])
        op(p + ".f1m", "matmul(%s.ln1, %s.fc1.w)" % (p, p))
        op(p + ".f1a", "ewadd(%s.fc1.b, %s.f1m)" % (p, p))
        op(p + ".gd", "ewdiv(%s.f1a, gelu_sqrt2)" % p)
        op(p + ".ge", "erf(%s.gd)" % p)
        op(p + ".ga", "ewadd(%s.ge, gelu_one)" % p)
        op(p + ".gm", "ewmul(%s.f1a, %s.ga)" % (p, p))
        op(p + ".gelu", "ewmul(%s.gm, gelu_half)" % p)
        weight(p + ".fc2.w", [F, C])
        weight(p + ".fc2.b", [C])
        op(p + ".f2m", "matmul(%s.gelu, %s.fc2.w)" % (p, p))
        op(p + ".f2a", "ewadd(%s.fc2.b, %s.f2m)" % (p, p))
        op(p + ".res2", "ewadd(%s.f2a, %s.ln1)" % (p, p))
        weight(p + ".ln2.w", [C])
        weight(p + ".ln2.b", [C])
        x = op(p + ".ln2", "layernorm(%s.res2, %s.ln2.w, %s.ln2.b) axis=2 "
               "eps=1e-12" % (p, p, p))
    head = ["# %s: BertModel (scripts/micro/bert-graph.py, %d layers, "
            "hidden %d, %d heads, batch %d, sequence %d)" %
            (a.out.rsplit("/", 1)[-1], a.layers, C, H, B, S),
            "graph bert", "input input_ids: i64" + shp(B, S),
            "input attention_mask: i64" + shp(B, S)]
    g.write(a.out, head, [x])


if __name__ == "__main__":
    main()
