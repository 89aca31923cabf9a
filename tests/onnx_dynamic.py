#!/usr/bin/env python3
"""onnx_dynamic.py: the original's dynamic axes kept on export (issue 41).

usage: onnx_dynamic.py SUPEROPT

A small BERT-like encoder layer with dynamic axes `batch` and `seq` (token
embedding, layer norm, two-head attention with the padding mask, its
reshape targets computed from Shape as torch exports them) is imported at
batch 2 and sequence 8, then written back as ONNX in two ways: `export
--like ORIG` and the one step `optimize ORIG --input-shape ... -o
X.onnx`. Each file must
name `batch` and `seq` on its inputs and output and run in onnxruntime at
batch 1 and 3 and sequence 5 and 11, within 1e-4 relative error of the
original there. The same model with BERT's position embeddings (a slice of
a table up to the sequence length, folded at import) keeps `batch` and
fixes `seq`, saying why in one line (the node), and runs at batch 3.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

D, HEADS, VOCAB = 16, 2, 50
TOL = 1e-4


def model(path, positions=False):
    rng = np.random.default_rng(5)
    hd = D // HEADS

    def w(name, *shape, s=0.3):
        return nh.from_array(rng.normal(0, s, shape).astype(np.float32), name)

    def c(name, v):
        return nh.from_array(np.array(v, np.int64), name)

    inits = [w("wte", VOCAB, D, s=1.0), w("g", D), w("b", D), w("wq", D, D),
             w("wk", D, D), w("wv", D, D), w("wo", D, D),
             c("i0", 0), c("i1", 1), c("ax0", [0]), c("heads", [HEADS, hd]),
             c("dd", [D]), c("ax12", [1, 2]),
             nh.from_array(np.array(-1e4, np.float32), "neg"),
             nh.from_array(np.array(1.0, np.float32), "one"),
             nh.from_array(np.array(hd ** -0.5, np.float32), "scale")]
    n = []
    a = n.append
    a(h.make_node("Gather", ["wte", "input_ids"], ["tok"]))
    emb = "tok"
    if positions:  # BERT: position_embeddings(position_ids[:, :seq])
        inits += [w("wpe", 32, D, s=1.0), c("s0", [0])]
        a(h.make_node("Shape", ["input_ids"], ["ishp"]))
        a(h.make_node("Gather", ["ishp", "i1"], ["slen"]))
        a(h.make_node("Unsqueeze", ["slen", "ax0"], ["slen1"]))
        a(h.make_node("Slice", ["wpe", "s0", "slen1", "s0"], ["pos"]))
        a(h.make_node("Add", ["tok", "pos"], ["emb"]))
        emb = "emb"
    a(h.make_node("LayerNormalization", [emb, "g", "b"], ["x"], axis=-1))
    a(h.make_node("Shape", ["x"], ["shp"]))
    a(h.make_node("Gather", ["shp", "i0"], ["bs"]))
    a(h.make_node("Gather", ["shp", "i1"], ["sl"]))
    a(h.make_node("Unsqueeze", ["bs", "ax0"], ["bs1"]))
    a(h.make_node("Unsqueeze", ["sl", "ax0"], ["sl1"]))
    a(h.make_node("Concat", ["bs1", "sl1", "heads"], ["split"], axis=0))
    a(h.make_node("Concat", ["bs1", "sl1", "dd"], ["merge"], axis=0))
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]),
                    ("v", [0, 2, 1, 3])):
        a(h.make_node("MatMul", ["x", "w" + p], [p + "0"]))
        a(h.make_node("Reshape", [p + "0", "split"], [p + "1"]))
        a(h.make_node("Transpose", [p + "1"], [p], perm=perm))
    a(h.make_node("MatMul", ["q", "k"], ["sc0"]))
    a(h.make_node("Mul", ["sc0", "scale"], ["sc1"]))
    a(h.make_node("Cast", ["attention_mask"], ["mf"], to=T.FLOAT))
    a(h.make_node("Unsqueeze", ["mf", "ax12"], ["m4"]))  # [B, 1, 1, S]
    a(h.make_node("Sub", ["one", "m4"], ["inv"]))
    a(h.make_node("Mul", ["inv", "neg"], ["bias"]))
    a(h.make_node("Add", ["sc1", "bias"], ["sc"]))
    a(h.make_node("Softmax", ["sc"], ["pr"], axis=-1))
    a(h.make_node("MatMul", ["pr", "v"], ["at"]))
    a(h.make_node("Transpose", ["at"], ["at2"], perm=[0, 2, 1, 3]))
    a(h.make_node("Reshape", ["at2", "merge"], ["at3"]))
    a(h.make_node("MatMul", ["at3", "wo"], ["o"]))
    a(h.make_node("Add", ["o", "x"], ["y"]))
    ins = [h.make_tensor_value_info("input_ids", T.INT64, ["batch", "seq"]),
           h.make_tensor_value_info("attention_mask", T.INT64,
                                    ["batch", "seq"])]
    outs = [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", D])]
    g = h.make_graph(n, "dyn_bert", ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd[1:3])}: {r.stderr.strip()[-300:]}")
    return r.stderr


def io_dims(path):
    m = onnx.load(path)
    return {v.name: [d.dim_param or d.dim_value
                     for d in v.type.tensor_type.shape.dim]
            for v in list(m.graph.input) + list(m.graph.output)}


def ort_y(path, b, s):
    rng = np.random.default_rng(b * 100 + s)
    ids = rng.integers(0, VOCAB, (b, s)).astype(np.int64)
    mask = np.ones((b, s), np.int64)
    mask[-1, s // 2:] = 0
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def agree(orig, path, sizes):
    worst = 0.0
    for b, s in sizes:
        ref, got = ort_y(orig, b, s), ort_y(path, b, s)
        assert ref.shape == got.shape, f"{got.shape} vs {ref.shape}"
        worst = max(worst, float(np.max(np.abs(got - ref)) /
                                 np.max(np.abs(ref))))
    return worst


def main():
    superopt = sys.argv[1]
    rules = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "rules", "default.rules")
    ok = True
    sizes = [(1, 5), (3, 5), (1, 11), (3, 11)]
    shapes = ["--input-shape", "input_ids=2x8",
              "--input-shape", "attention_mask=2x8"]
    with tempfile.TemporaryDirectory() as tmp:
        orig, g = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.graph")
        model(orig)
        run([superopt, "import", orig, "-o", g, *shapes])
        for how in ("export", "optimize"):
            out = os.path.join(tmp, how + ".onnx")
            try:
                if how == "export":
                    log = run([superopt, "export", g, "--like", orig,
                               "-o", out])
                else:
                    log = run([superopt, "optimize", orig, *shapes,
                               "--rules", rules, "--time-limit", "5",
                               "--budget", "50", "-o", out])
                dims = io_dims(out)
                err = agree(orig, out, sizes)
                good = ("dynamic dimensions kept: batch, seq" in log and
                        dims["input_ids"] == ["batch", "seq"] and
                        dims["y"] == ["batch", "seq", D] and err <= TOL)
                line = f"{dims}, error {err:.2e} at {sizes}"
            except (RuntimeError, AssertionError, KeyError) as e:
                good, line = False, str(e)
            ok &= good
            print(f"{how} --like: {line} ({'ok' if good else 'FAIL'})",
                  flush=True)
        # position embeddings folded at import: seq fixed, batch kept
        orig, g = os.path.join(tmp, "p.onnx"), os.path.join(tmp, "p.graph")
        out = os.path.join(tmp, "p.out.onnx")
        model(orig, positions=True)
        try:
            run([superopt, "import", orig, "-o", g, *shapes])
            log = run([superopt, "export", g, "--like", orig, "-o", out])
            dims = io_dims(out)
            err = agree(orig, out, [(1, 8), (3, 8)])
            good = ("kept: batch\n" in log and "fixed at this graph's sizes: "
                    "seq = 8: ewadd" in log and
                    dims["input_ids"] == ["batch", 8] and err <= TOL)
            line = f"{dims}, error {err:.2e}; {log.strip().splitlines()[-1]}"
        except (RuntimeError, AssertionError, KeyError) as e:
            good, line = False, str(e)
        ok &= good
        print(f"positions: {line} ({'ok' if good else 'FAIL'})", flush=True)
    if not ok:
        sys.exit(1)
    print("onnx dynamic: all passed")


if __name__ == "__main__":
    main()
