#!/usr/bin/env python3
"""llama-graph.py: writes the LlamaModel of scripts/export-transformers.py
(the benchmark's config: 4 layers, hidden 512, 8 heads and 8 key/value
heads, intermediate 1376, vocabulary 32000) as `superopt import` makes it
of the legacy exporter's file, where no torch is at hand: the same
operators in the same order (RMSNorm as Pow, ReduceMean, Add, Sqrt, Div,
Mul, Mul; the rotary tables from inv_freq and the positions; q and k
through rotate_half's slices, neg and concat; SDPA's sqrt(scale) on q and
on k transposed, the causal mask a [B,1,S,S] weight, the IsNaN guard; the
cache's one-input concats), with a safetensors sidecar holding the values
the passes read (the norms' eps and 1, the scales, inv_freq, the
positions, the causal mask); the projections' weights have no values
(seeded random ones when run).

  scripts/micro/llama-graph.py OUT.graph [--batch 16] [--seq 128]
      [--layers 4] [--hidden 512] [--heads 8] [--inter 1376]

Checked against models/onnx/exports/llama.legacy.onnx imported at its own
config (hidden 64, but that file's 2 key/value heads are expanded; this
writes no expansion, as the benchmark's 8 of 8 has none).
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
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--inter", type=int, default=1376)
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args()
    B, S, C, H, F = a.batch, a.seq, a.hidden, a.heads, a.inter
    D = C // H
    g = graphtext.Graph()
    weight, op = g.weight, g.op

    weight("embed", [a.vocab, C])
    inv = 1.0 / (10000.0 ** (np.arange(0, D, 2) / D))
    weight("inv_freq", [1, D // 2, 1], inv)
    weight("positions", [1, 1, S], np.arange(S))
    weight("att_scaling", [], 1.0)
    mask = np.triu(np.full((S, S), np.finfo(np.float32).min), 1)
    weight("causal", [B, 1, S, S], np.broadcast_to(mask, (B, 1, S, S)))
    sq = math.sqrt(1.0 / math.sqrt(D))
    weight("sqrt_scale", [], sq)
    weight("nan_zero", [1], 0.0)
    x = op("h0", "gather(embed, input_ids)")
    op("freqs", "matmul(inv_freq, positions)")
    op("freqs_t", "transpose(freqs) perm=[0,2,1]")
    op("emb", "concat(freqs_t, freqs_t) axis=2")
    op("cos0", "cos(emb)")
    op("cos1", "ewmul(cos0, att_scaling)")
    op("sin0", "sin(emb)")
    op("sin1", "ewmul(sin0, att_scaling)")

    def rmsnorm(p, x):
        weight(p + ".eps", [], 1e-6)
        weight(p + ".one", [], 1.0)
        weight(p + ".weight", [C], np.ones(C))
        op(p + ".pow", "ewmul(%s, %s)" % (x, x))
        op(p + ".mean", "reduce_mean(%s.pow) axes=[2]" % p)
        op(p + ".add", "ewadd(%s.mean, %s.eps)" % (p, p))
        op(p + ".sqrt", "sqrt(%s.add)" % p)
        op(p + ".div", "ewdiv(%s.one, %s.sqrt)" % (p, p))
        op(p + ".mul", "ewmul(%s, %s.div)" % (x, p))
        return op(p + ".out", "ewmul(%s.weight, %s.mul)" % (p, p))

    def rotary(p, t):
        h2 = D // 2
        op(p + ".c", "ewmul(%s, cos)" % t)
        op(p + ".lo", "slice(%s) starts=[0,0,0,0] ends=[%d,%d,%d,%d]" %
           (t, B, H, S, h2))
        op(p + ".hi", "slice(%s) starts=[0,0,0,%d] ends=[%d,%d,%d,%d]" %
           (t, h2, B, H, S, D))
        op(p + ".neg", "neg(%s.hi)" % p)
        op(p + ".rot", "concat(%s.neg, %s.lo) axis=3" % (p, p))
        op(p + ".s", "ewmul(%s.rot, sin)" % p)
        return op(p + ".out", "ewadd(%s.c, %s.s)" % (p, p))

    op("cos", "reshape(cos1) shape=[1,1,%d,%d]" % (S, D))
    op("sin", "reshape(sin1) shape=[1,1,%d,%d]" % (S, D))
    for i in range(a.layers):
        p = "l%d" % i
        n = rmsnorm(p + ".in_norm", x)
        for j in "qkv":
            weight("%s.%s_proj" % (p, j), [C, C])
            op("%s.%s" % (p, j), "matmul(%s, %s.%s_proj)" % (n, p, j))
            op("%s.%sr" % (p, j),
               "reshape(%s.%s) shape=[%d,%d,%d,%d]" % (p, j, B, S, H, D))
            op("%s.%st" % (p, j), "transpose(%s.%sr) perm=[0,2,1,3]" % (p, j))
        q = rotary(p + ".qrot", p + ".qt")
        k = rotary(p + ".krot", p + ".kt")
        op(p + ".kc", "concat(%s) axis=2" % k)
        op(p + ".vc", "concat(%s.vt) axis=2" % p)
        op(p + ".ktt", "transpose(%s.kc) perm=[0,1,3,2]" % p)
        op(p + ".qs", "ewmul(%s, sqrt_scale)" % q)
        op(p + ".ks", "ewmul(%s.ktt, sqrt_scale)" % p)
        op(p + ".scores", "matmul(%s.qs, %s.ks)" % (p, p))
        op(p + ".masked", "ewadd(%s.scores, causal)" % p)
        op(p + ".p", "softmax(%s.masked) axis=3" % p)
        op(p + ".eq", "equal(%s.p, %s.p)" % (p, p))
        op(p + ".nan", "not(%s.eq)" % p)
        op(p + ".pg", "where(%s.nan, nan_zero, %s.p)" % (p, p))
        op(p + ".att", "matmul(%s.pg, %s.vc)" % (p, p))
        op(p + ".att_t", "transpose(%s.att) perm=[0,2,1,3]" % p)
        op(p + ".att_r", "reshape(%s.att_t) shape=[%d,%d,%d]" % (p, B, S, C))
        weight(p + ".o_proj", [C, C])
        op(p + ".o", "matmul(%s.att_r, %s.o_proj)" % (p, p))
        r1 = op(p + ".res1", "ewadd(%s, %s.o)" % (x, p))
        n2 = rmsnorm(p + ".post_norm", r1)
        for j in ("gate", "up"):
            weight("%s.%s_proj" % (p, j), [C, F])
            op("%s.%s" % (p, j), "matmul(%s, %s.%s_proj)" % (n2, p, j))
        op(p + ".sig", "sigmoid(%s.gate)" % p)
        op(p + ".silu", "ewmul(%s.gate, %s.sig)" % (p, p))
        op(p + ".gu", "ewmul(%s.silu, %s.up)" % (p, p))
        weight(p + ".down_proj", [F, C])
        op(p + ".down", "matmul(%s.gu, %s.down_proj)" % (p, p))
        x = op(p + ".res2", "ewadd(%s, %s.down)" % (r1, p))
    y = rmsnorm("norm", x)
    head = ["# %s: LlamaModel (scripts/micro/llama-graph.py, %d layers, "
            "hidden %d, %d heads, batch %d, sequence %d)" %
            (a.out.rsplit("/", 1)[-1], a.layers, C, H, B, S),
            "graph llama", "input input_ids: i64[%d,%d]" % (B, S)]
    g.write(a.out, head, [y])


if __name__ == "__main__":
    main()
