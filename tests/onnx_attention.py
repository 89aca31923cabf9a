#!/usr/bin/env python3
"""onnx_attention.py: an attention node with a bias and the guard exports to
ONNX primitives that onnxruntime runs as superopt's CPU executor does.

usage: onnx_attention.py SUPEROPT

A graph with four attention nodes (a -inf mask masking whole rows, guard=1;
a finite per-head bias without a guard; the row layout, heads=, on packed
[B,S,3C] rows and on sequence-first [S,B,3C] rows with a bias: Slice,
Reshape and Transpose around the product) is run by `superopt run --dump`
(seeded inputs and weights) and exported by `superopt export`; the weights
are inputs of the exported model (no values), fed with the dumped ones.
Outputs must agree: max|ort - ours| <= 1e-5 * max|ours| + 1e-6, no NaN,
and some rows of the guarded output exactly 0 (masked everywhere).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

GRAPH = """input q: [2,3,5,8]
input x: [2,5,48]
input xs: [5,2,48]
weight wr: [2,1,1,5]
input k: [2,3,8,7]
input v: [2,3,7,6]
weight s: []
weight w: [2,1,5,1]
weight wb: [3,5,7]
n0 = neg(w)
m = relu(n0)
mb = log(m)
a = attention(q, k, v, s, mb) guard=1
c = attention(q, k, v, s, wb)
e = attention(x, x, x, s) heads=2 cols=[0,16,32] hdim=[8,8]
f = attention(xs, xs, xs, s, wr) heads=3 cols=[0,16,32] hdim=[4,5] seqfirst=1
output a, c, e, f
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")


def main():
    superopt = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        g = os.path.join(tmp, "att.graph")
        with open(g, "w") as f:
            f.write(GRAPH)
        dump = os.path.join(tmp, "dump")
        os.mkdir(dump)
        run([superopt, "run", g, "--dump", dump])
        onnx_path = os.path.join(tmp, "att.onnx")
        run([superopt, "export", g, "-o", onnx_path])
        vals, outs = {}, {}
        with open(os.path.join(dump, "manifest.tsv")) as f:
            for line in f:
                kind, name, file = line.rstrip("\n").split("\t")
                arr = np.load(os.path.join(dump, file))
                (outs if kind == "output" else vals)[name] = arr
        sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        feed = {i.name: vals[i.name] for i in sess.get_inputs()}
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
        bad = 0
        for name, ref in outs.items():
            y = got[name]
            err = float(np.abs(y - ref).max())
            tol = 1e-5 * float(np.abs(ref).max()) + 1e-6
            ok = err <= tol and not np.isnan(y).any() and not np.isnan(ref).any()
            print(f"{name}: max|ort - ours| {err:.3g} (tolerance {tol:.3g})"
                  f"{'' if ok else ': FAIL'}")
            bad += not ok
        zero_rows = int((np.abs(outs["a"]).max(axis=-1) == 0).sum())
        print(f"a: {zero_rows} rows masked everywhere (0)")
        if zero_rows == 0:
            print("FAIL: no row masked everywhere: the guard is not tested")
            bad += 1
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
