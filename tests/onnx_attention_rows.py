#!/usr/bin/env python3
"""onnx_attention_rows.py: exported transformers optimize to attention in the
row layout (heads=, made by the twelfth tier's rules or src/fuse/lower_att.c),
pass the end-to-end check, and export back to an ONNX model onnxruntime
agrees with.

usage: onnx_attention_rows.py SUPEROPT ROOT

DeiT-tiny (models/onnx, weights as inputs: x is the data; the packed QKV
projection reshaped, transposed and split, q and k scaled) and BERT from
the legacy exporter (models/onnx/exports, batch 2, sequence 16; separate
projections, a padding mask) are optimized for the H100 estimates with the
check on: every attention node takes the row layout, the transposes around
attention go (DeiT: 38 -> 2 in the optimized graph before this layout,
BERT 8 -> 0), and BERT's optimized graph exported with --like gives
onnxruntime the original's outputs on the same inputs. So does a MaxViT
block attention written here as torchvision exports it (packed QKV rows
[1,W,N,3C] sliced, heads split at rank 5, k scaled, two Einsums, a
relative-position bias [1,H,N,N]): the thirteenth tier's rules make it one
node on the rank-4 rows (docs/generation.md), no transpose left.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def optimize(superopt, model, out, extra, natt, max_transposes):
    log = run([superopt, "optimize", model, "--device", "h100", "-o", out] + extra)
    m = re.search(r"(\d+) attention in row layout", log)
    check = re.search(r"^check: max relative error (\S+)", log, re.M)
    text = open(out).read()
    nodes = len(re.findall(r"= attention\(", text))
    rows = len(re.findall(r"= attention\(.*heads=", text))
    # transpose nodes (not a move node's program steps; weight-only ones,
    # run once, count too: the head's and the patch embedding's weights)
    tr = len(re.findall(r"^[^{\n]*= transpose\(", text, re.M))
    print(f"{os.path.basename(model)}: {rows} of {nodes} attention nodes in "
          f"row layout, {tr} transposes, check {check and check.group(1)}")
    # made by the lower stage or, since the twelfth tier, by the rules
    # (docs/generation.md): the graph is what counts
    bad = not m or int(m.group(1)) > natt or rows != natt or nodes != natt
    bad |= not check or tr > max_transposes
    if bad:
        print("FAIL:\n" + log)
    return int(bad)


def maxvit_block(path):
    """A MaxViT window attention as torchvision's legacy export writes it
    (W 4 windows of N 9 tokens, C 16, H 2 heads of 8), random weights."""
    rng = np.random.default_rng(2)
    W, N, C, H = 4, 9, 16, 2
    D = C // H

    def init(name, a):
        return numpy_helper.from_array(np.asarray(a), name)

    inits = [init("wqkv", rng.standard_normal((C, 3 * C)).astype(np.float32) * 0.3),
             init("bqkv", rng.standard_normal(3 * C).astype(np.float32) * 0.1),
             init("wo", rng.standard_normal((C, C)).astype(np.float32) * 0.3),
             init("bo", rng.standard_normal(C).astype(np.float32) * 0.1),
             init("scale", np.float32(D ** -0.5)),
             init("rpb", rng.standard_normal((1, H, N, N)).astype(np.float32)),
             init("heads", np.array([1, W, N, H, D], np.int64)),
             init("rows", np.array([1, W, N, C], np.int64)),
             init("axes", np.array([3], np.int64))]
    nodes = [helper.make_node("MatMul", ["x", "wqkv"], ["qkv0"]),
             helper.make_node("Add", ["qkv0", "bqkv"], ["qkv"])]
    for i, t in enumerate("qkv"):
        inits += [init(t + "_s", np.array([i * C], np.int64)),
                  init(t + "_e", np.array([(i + 1) * C], np.int64))]
        nodes += [helper.make_node("Slice", ["qkv", t + "_s", t + "_e", "axes"],
                                   [t + "0"]),
                  helper.make_node("Reshape", [t + "0", "heads"], [t + "1"]),
                  helper.make_node("Transpose", [t + "1"], [t + "2"],
                                   perm=[0, 1, 3, 2, 4])]
    nodes += [helper.make_node("Mul", ["k2", "scale"], ["ks"]),
              helper.make_node("Einsum", ["q2", "ks"], ["sc"],
                               equation="bghid,bghjd->bghij"),
              helper.make_node("Add", ["sc", "rpb"], ["scb"]),
              helper.make_node("Softmax", ["scb"], ["p"], axis=-1),
              helper.make_node("Einsum", ["p", "v2"], ["o"],
                               equation="bghij,bghjd->bghid"),
              helper.make_node("Transpose", ["o"], ["o1"], perm=[0, 1, 3, 2, 4]),
              helper.make_node("Reshape", ["o1", "rows"], ["o2"]),
              helper.make_node("MatMul", ["o2", "wo"], ["y0"]),
              helper.make_node("Add", ["y0", "bo"], ["y"])]
    g = helper.make_graph(
        nodes, "maxvit_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, W, N, C])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, W, N, C])],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    superopt, root = sys.argv[1], sys.argv[2]
    deit = os.path.join(root, "models/onnx/deit_tiny_patch16_224.onnx")
    bert = os.path.join(root, "models/onnx/exports/bert.legacy.onnx")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        g = os.path.join(tmp, "deit.graph")
        bad += optimize(superopt, deit, g, ["--data-input", "x"], 12, 2)
        g = os.path.join(tmp, "bert.graph")
        shapes = ["--input-shape", "input_ids=2x16", "--input-shape",
                  "attention_mask=2x16"]
        bad += optimize(superopt, bert, g, shapes, 2, 0)
        out = os.path.join(tmp, "bert.onnx")
        run([superopt, "export", g, "-o", out, "--like", bert])
        rng = np.random.default_rng(1)
        feed = {"input_ids": rng.integers(0, 1000, (2, 16)).astype(np.int64),
                "attention_mask": np.ones((2, 16), np.int64)}
        feed["attention_mask"][1, 11:] = 0
        cpu = ["CPUExecutionProvider"]
        ref = ort.InferenceSession(bert, providers=cpu).run(None, feed)
        got = ort.InferenceSession(out, providers=cpu).run(None, feed)
        for r, y in zip(ref, got):
            err = float(np.abs(r - y).max() / np.abs(r).max())
            print(f"bert exported: max|ort(new) - ort(orig)| / max {err:.3g}")
            if not err <= 1e-5:
                print("FAIL")
                bad += 1
        mx = os.path.join(tmp, "maxvit.onnx")
        maxvit_block(mx)
        g = os.path.join(tmp, "maxvit.graph")
        bad += optimize(superopt, mx, g, [], 1, 0)
        out = os.path.join(tmp, "maxvit.opt.onnx")
        run([superopt, "export", g, "-o", out, "--like", mx])
        feed = {"x": rng.standard_normal((1, 4, 9, 16)).astype(np.float32)}
        ref = ort.InferenceSession(mx, providers=cpu).run(None, feed)
        got = ort.InferenceSession(out, providers=cpu).run(None, feed)
        err = float(np.abs(ref[0] - got[0]).max() / np.abs(ref[0]).max())
        print(f"maxvit exported: max|ort(new) - ort(orig)| / max {err:.3g}")
        if not err <= 1e-5:
            print("FAIL")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
