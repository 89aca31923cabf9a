#!/usr/bin/env python3
"""onnx_models.py: networks as users export them (transformers with int64
token ids and attention masks, vision transformers, torchvision CNNs)
checked end to end against onnxruntime.

usage: onnx_models.py SUPEROPT [MODEL.onnx ...] [--tiny] [--optimize]
                      [--dropin] [--budget N]

For each model: `superopt import` (int64 / bool inputs, constant folding of
shape and mask subgraphs), `superopt run --dump` with seeded random inputs
and weights (token ids in range of their embedding table, masks 0 / 1),
and onnxruntime on the ORIGINAL file fed the very same values (the files
carry no weights: every weight is a graph input). With --optimize the
imported graph is also optimized (its end-to-end check included) and the
optimized graph's outputs compared with onnxruntime's too. --dropin (with
--optimize) also makes the drop-in ONNX in one step (`superopt optimize
MODEL.onnx -o OPT.onnx`, its check included) and runs it in onnxruntime on
the same values, and optimizes the file at batch 16 (a dynamic batch bound
at 16, a batch the file fixes at 1 rebatched with `--batch 16`; the tool's
end-to-end check decides). --tiny adds
small generated models (BERT-like, GPT-2-like causal mask, ViT-like class
token, a Swin-like window partition) that exercise Gather, Equal, Not,
Where, Cast, Expand, ConstantOfShape, Range, Trilu, CumSum, And, Shape,
strided Slice, ScatterND and rank-6 Reshape/Transpose. Relative error
bound: max|ours - ort| <= 1e-4 * max|ort| per output. Prints one line per
model: imports? runs? optimizes? error. Named dynamic dimensions (the
dynamic axes of both torch exporters) are fixed at import with
--input-shape: batch 2 (models exported at batch 1 are rebatched) and
sequence 16.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

TOL = 1e-4


def ir_name(name):
    """The importer's name for an ONNX name (src/onnx/import.c)."""
    s = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return s if re.match(r"[A-Za-z_]", name) else "t_" + s


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0])} {cmd[1]}: "
                           f"{(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


def dump(superopt, graph, tmp):
    d = tempfile.mkdtemp(dir=tmp)
    run([superopt, "run", graph, "--seed", "7", "--dump", d])
    vals = collections.defaultdict(dict)
    with open(os.path.join(d, "manifest.tsv")) as f:
        for line in f:
            kind, name, fn = line.rstrip("\n").split("\t")
            vals[kind][name] = np.load(os.path.join(d, fn))
    return vals


NP = {"tensor(int64)": np.int64, "tensor(int32)": np.int32,
      "tensor(bool)": np.bool_, "tensor(float)": np.float32}


def ort_outputs(path, vals):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        n = ir_name(i.name)
        v = vals["input"].get(n, vals["weight"].get(n))
        if v is None:
            raise AssertionError(f"no value for ONNX input {i.name}")
        feeds[i.name] = v.astype(NP.get(i.type, np.float32))
    return sess.run(None, feeds)


def rel_err(refs, ours):
    assert len(refs) == len(ours), f"{len(ours)} outputs, onnxruntime {len(refs)}"
    worst = 0.0
    for ref, got in zip(refs, ours):
        assert ref.shape == got.shape, f"shape {got.shape} vs {ref.shape}"
        assert np.all(np.isfinite(got)), "non-finite output"
        scale = float(np.max(np.abs(ref))) or 1.0
        worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - ref)))
                    / scale)
    return worst


# sizes given to named dynamic dimensions (dynamic axes of both torch
# exporters): batch 2, so that import at another batch than the export's is
# checked too
DYN = {"batch": 2, "seq": 16}


def shape_args(path, dyn=None):
    """--input-shape for each graph input with a dynamic dimension (sizes
    from dyn, default DYN)."""
    dyn = dyn or DYN
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    args = []
    for i in m.graph.input:
        dims = i.type.tensor_type.shape.dim
        if i.name in inits or all(d.HasField("dim_value") for d in dims):
            continue
        sizes = [d.dim_value if d.HasField("dim_value") else dyn.get(d.dim_param, 1)
                 for d in dims]
        args += ["--input-shape", f"{i.name}={'x'.join(map(str, sizes))}"]
    return args


def weights_made_inputs(path):
    """--data-input FIRST where the file's weights are graph inputs (the
    torchvision exports, stripped): its first input is the data, so that a
    rebatch does not take the weights for batched inputs."""
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    floats = [i for i in ins if i.type.tensor_type.elem_type == T.FLOAT]
    return ["--data-input", ins[0].name] if len(floats) > 1 else []


def dropin(superopt, path, tmp, vals, refs, budget):
    """The drop-in ONNX of path (one step) run by onnxruntime on vals, and
    path optimized at batch 16 (a dynamic batch imported at 16, a batch
    fixed at 1 rebatched: weights_made_inputs): (ok, text)."""
    label = os.path.basename(path)[:-5]
    o = os.path.join(tmp, label + ".dropin.onnx")
    lim = ["--budget", str(budget), "--patience", "20", "--time-limit", "60"]
    try:
        run([superopt, "optimize", path, "-o", o, *shape_args(path), *lim])
        derr = rel_err(refs, ort_outputs(o, vals))
        text = f", drop-in ONNX error {derr:.2e}"
        ok = derr <= TOL
    except (RuntimeError, AssertionError) as e:
        return False, f"; drop-in: no ({e})"
    try:
        b16 = shape_args(path, dict(DYN, batch=16))
        src = [path, *b16] if b16 != shape_args(path) else [
            path, *b16, *weights_made_inputs(path), "--batch", "16"]
        run([superopt, "optimize", *src, *lim,
             "-o", os.path.join(tmp, label + ".b16.opt.graph")])
        text += ", batch 16 optimizes"
    except RuntimeError as e:
        return False, text + f"; batch 16: no ({e})"
    return ok, text


def check(superopt, path, tmp, optimize, budget, drop=False):
    """One model: returns (ok, line)."""
    label = os.path.basename(path)[:-5]
    g = os.path.join(tmp, label + ".graph")
    t0 = time.time()
    try:
        run([superopt, "import", path, "-o", g, *shape_args(path)])
    except RuntimeError as e:
        return False, f"{label}: imports: no ({e})"
    try:
        vals = dump(superopt, g, tmp)
    except RuntimeError as e:
        return False, f"{label}: imports: yes; runs: no ({e})"
    refs = ort_outputs(path, vals)
    err = rel_err(refs, list(vals["output"].values()))
    line = f"{label}: imports: yes; runs: yes; error {err:.2e}"
    ok = err <= TOL
    if optimize:
        o = os.path.join(tmp, label + ".opt.graph")
        try:
            out = run([superopt, "optimize", g, "-o", o,
                       "--budget", str(budget), "--patience", "20",
                       "--time-limit", "60"])
            m = re.search(r"cost before: ([\d.]+ \w+).*?cost after:  ([\d.]+ \w+)",
                          out, re.S)
            oerr = rel_err(refs, list(dump(superopt, o, tmp)["output"].values()))
            ok &= oerr <= TOL
            line += (f"; optimizes: yes ({m.group(1)} -> {m.group(2)})"
                     if m else "; optimizes: yes")
            line += f", optimized error {oerr:.2e}"
            if drop:
                good, text = dropin(superopt, path, tmp, vals, refs, budget)
                ok &= good
                line += text
        except RuntimeError as e:
            ok = False
            line += f"; optimizes: no ({e})"
    line += f" [{time.time() - t0:.0f} s] ({'ok' if ok else 'FAIL'})"
    return ok, line


# ---- small generated models ------------------------------------------------

def C(name, arr):
    return h.make_node("Constant", [], [name],
                       value=nh.from_array(np.asarray(arr), name))


def save(nodes, name, ins, outs, path):
    g = h.make_graph(nodes, name, ins, outs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def tiny_bert(path, seq=8, vocab=30, d=16, heads=2):
    """Token ids, position ids from Shape/Range, a runtime attention mask
    (Equal, Unsqueeze, Expand, And, Where) and the float bias form (Cast,
    Sub, Mul), RoBERTa's position ids (Not, Cast, CumSum, Mul, Add)."""
    nodes = []
    n = nodes.append
    ins = [h.make_tensor_value_info("input_ids", T.INT64, [1, seq]),
           h.make_tensor_value_info("attention_mask", T.INT64, [1, seq]),
           h.make_tensor_value_info("word_emb", T.FLOAT, [vocab, d]),
           h.make_tensor_value_info("pos_emb", T.FLOAT, [seq + 2, d]),
           h.make_tensor_value_info("wq", T.FLOAT, [d, d]),
           h.make_tensor_value_info("ln_g", T.FLOAT, [d]),
           h.make_tensor_value_info("ln_b", T.FLOAT, [d])]
    n(h.make_node("Gather", ["word_emb", "input_ids"], ["we"]))
    n(C("one", np.array(1, np.int64)))
    n(C("zero", np.array(0, np.int64)))
    n(h.make_node("Equal", ["input_ids", "one"], ["pad"]))
    n(h.make_node("Not", ["pad"], ["notpad"]))
    n(h.make_node("Cast", ["notpad"], ["np32"], to=T.INT32))
    n(h.make_node("CumSum", ["np32", "one"], ["cs"]))
    n(h.make_node("Mul", ["cs", "np32"], ["inc"]))
    n(h.make_node("Cast", ["inc"], ["inc64"], to=T.INT64))
    n(h.make_node("Add", ["inc64", "one"], ["pos_ids"]))
    n(h.make_node("Gather", ["pos_emb", "pos_ids"], ["pe"]))
    n(h.make_node("Add", ["we", "pe"], ["emb"]))
    n(h.make_node("LayerNormalization", ["emb", "ln_g", "ln_b"], ["x"],
                  axis=-1, epsilon=1e-12))
    # constant mask pieces folded: Shape -> Gather -> Range -> ...
    n(h.make_node("Shape", ["input_ids"], ["shp"]))
    n(h.make_node("Gather", ["shp", "one"], ["slen"]))
    n(h.make_node("Range", ["zero", "slen", "one"], ["rng"]))
    n(h.make_node("GreaterOrEqual", ["rng", "zero"], ["all"]))
    n(h.make_node("Equal", ["attention_mask", "zero"], ["m0"]))
    n(h.make_node("Not", ["m0"], ["keep"]))
    n(h.make_node("And", ["keep", "all"], ["keep2"]))
    n(C("ax12", np.array([1, 2], np.int64)))
    n(h.make_node("Unsqueeze", ["keep2", "ax12"], ["m1"]))
    n(C("eshape", np.array([1, heads, seq, seq], np.int64)))
    n(h.make_node("Expand", ["m1", "eshape"], ["m2"]))
    n(h.make_node("MatMul", ["x", "wq"], ["q"]))
    n(C("qshape", np.array([1, seq, heads, d // heads], np.int64)))
    n(h.make_node("Reshape", ["q", "qshape"], ["q1"]))
    n(h.make_node("Transpose", ["q1"], ["q2"], perm=[0, 2, 1, 3]))
    n(h.make_node("Transpose", ["q1"], ["k2"], perm=[0, 2, 3, 1]))
    n(h.make_node("MatMul", ["q2", "k2"], ["s"]))
    n(C("minf", np.array(np.finfo(np.float32).min, np.float32)))
    n(h.make_node("Where", ["m2", "s", "minf"], ["s2"]))
    n(h.make_node("Softmax", ["s2"], ["p"], axis=-1))
    n(h.make_node("MatMul", ["p", "q2"], ["o"]))
    n(h.make_node("Cast", ["attention_mask"], ["mf"], to=T.FLOAT))
    n(C("onef", np.array(1.0, np.float32)))
    n(h.make_node("Sub", ["onef", "mf"], ["inv"]))
    n(C("big", np.array(-1e4, np.float32)))
    n(h.make_node("Mul", ["inv", "big"], ["bias"]))
    outs = [h.make_tensor_value_info("o", T.FLOAT, [1, heads, seq, d // heads]),
            h.make_tensor_value_info("bias", T.FLOAT, [1, seq])]
    save(nodes, "tiny_bert", ins, outs, path)


def tiny_gpt(path, seq=8, vocab=30, d=16):
    """A causal mask from ConstantOfShape, Trilu, Cast to bool and Where, and
    position ids from Shape / Slice / Squeeze / Range (all folded)."""
    nodes = []
    n = nodes.append
    ins = [h.make_tensor_value_info("input_ids", T.INT64, [1, seq]),
           h.make_tensor_value_info("wte", T.FLOAT, [vocab, d]),
           h.make_tensor_value_info("wpe", T.FLOAT, [64, d])]
    n(h.make_node("Gather", ["wte", "input_ids"], ["we"]))
    n(h.make_node("Shape", ["input_ids"], ["shp"]))
    n(C("s0", np.array([1], np.int64)))
    n(C("s1", np.array([2], np.int64)))
    n(h.make_node("Slice", ["shp", "s0", "s1"], ["slen1"]))
    n(h.make_node("Squeeze", ["slen1"], ["slen"]))
    n(C("zero", np.array(0, np.int64)))
    n(C("one", np.array(1, np.int64)))
    n(h.make_node("Range", ["zero", "slen", "one"], ["pos"]))
    n(h.make_node("Gather", ["wpe", "pos"], ["pe"]))
    n(h.make_node("Add", ["we", "pe"], ["x"]))
    n(h.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]))
    n(h.make_node("MatMul", ["x", "xt"], ["s"]))
    n(h.make_node("Concat", ["slen1", "slen1"], ["sq"], axis=0))
    n(h.make_node("ConstantOfShape", ["sq"], ["ones"],
                  value=nh.from_array(np.array([1], np.int64))))
    n(h.make_node("Trilu", ["ones"], ["tri"], upper=0))
    n(h.make_node("Cast", ["tri"], ["causal"], to=T.BOOL))
    n(C("minf", np.array(-3.4028234663852886e38, np.float32)))
    n(h.make_node("Where", ["causal", "s", "minf"], ["s2"]))
    n(h.make_node("Softmax", ["s2"], ["p"], axis=-1))
    n(h.make_node("MatMul", ["p", "x"], ["o"]))
    n(C("half", np.array(0.5, np.float32)))
    n(h.make_node("Mul", ["o", "half"], ["y"]))
    outs = [h.make_tensor_value_info("y", T.FLOAT, [1, seq, d])]
    save(nodes, "tiny_gpt", ins, outs, path)


def tiny_vit(path, d=8, patches=4):
    """A class token expanded to the batch with ConstantOfShape / Expand /
    Concat, and taken back with a constant Gather."""
    nodes = []
    n = nodes.append
    ins = [h.make_tensor_value_info("x", T.FLOAT, [1, patches, d]),
           h.make_tensor_value_info("cls", T.FLOAT, [1, 1, d]),
           h.make_tensor_value_info("w", T.FLOAT, [d, d])]
    n(h.make_node("Shape", ["x"], ["shp"]))
    n(C("i0", np.array([0], np.int64)))
    n(h.make_node("Gather", ["shp", "i0"], ["b"]))
    n(C("rest", np.array([-1, -1], np.int64)))
    n(h.make_node("Concat", ["b", "rest"], ["eshape"], axis=0))
    n(C("three", np.array([3], np.int64)))
    n(h.make_node("ConstantOfShape", ["three"], ["ones"],
                  value=nh.from_array(np.array([1], np.int64))))
    n(C("m1", np.array(-1, np.int64)))
    n(h.make_node("Mul", ["ones", "m1"], ["neg"]))
    n(h.make_node("Equal", ["eshape", "neg"], ["isneg"]))
    n(h.make_node("Where", ["isneg", "ones", "eshape"], ["eshape2"]))
    n(h.make_node("Expand", ["cls", "eshape2"], ["clsb"]))
    n(h.make_node("Concat", ["clsb", "x"], ["t"], axis=1))
    n(h.make_node("MatMul", ["t", "w"], ["y"]))
    n(C("zero", np.array(0, np.int64)))
    n(h.make_node("Gather", ["y", "zero"], ["first"], axis=1))
    outs = [h.make_tensor_value_info("first", T.FLOAT, [1, d])]
    save(nodes, "tiny_vit", ins, outs, path)


def tiny_swin(path):
    """Swin's window partition (a rank-6 view and permutation), its patch
    merging (Slice with step 2, start 0 and 1) and a shifted-window mask
    built with ScatterND on constants."""
    nodes = []
    n = nodes.append
    ins = [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 6, 3]),
           h.make_tensor_value_info("w", T.FLOAT, [3, 3])]
    n(C("v6", np.array([1, 2, 2, 3, 2, 3], np.int64)))
    n(h.make_node("Reshape", ["x", "v6"], ["x6"]))
    n(h.make_node("Transpose", ["x6"], ["t6"], perm=[0, 1, 3, 2, 4, 5]))
    n(C("v3", np.array([-1, 4, 3], np.int64)))
    n(h.make_node("Reshape", ["t6", "v3"], ["win"]))
    n(h.make_node("MatMul", ["win", "w"], ["y"]))
    for k, (b, e) in enumerate([(0, 99), (1, 99)]):
        n(C(f"b{k}", np.array([b], np.int64)))
        n(C(f"e{k}", np.array([e], np.int64)))
        n(C(f"a{k}", np.array([1], np.int64)))
        n(C(f"s{k}", np.array([2], np.int64)))
        n(h.make_node("Slice", ["x", f"b{k}", f"e{k}", f"a{k}", f"s{k}"],
                      [f"h{k}"]))
    n(h.make_node("Concat", ["h0", "h1"], ["merged"], axis=-1))
    n(C("zeros", np.zeros((4, 4), np.float32)))
    n(C("idx", np.array([[0, 1], [2, 3]], np.int64)))
    n(C("upd", np.array([5.0, -3.0], np.float32)))
    n(h.make_node("ScatterND", ["zeros", "idx", "upd"], ["mask"]))
    n(C("four", np.array([1, 1, 4, 4], np.int64)))
    n(h.make_node("Reshape", ["mask", "four"], ["mask4"]))
    outs = [h.make_tensor_value_info("y", T.FLOAT, [6, 4, 3]),
            h.make_tensor_value_info("merged", T.FLOAT, [1, 2, 6, 6]),
            h.make_tensor_value_info("mask4", T.FLOAT, [1, 1, 4, 4])]
    save(nodes, "tiny_swin", ins, outs, path)


def main():
    args = sys.argv[1:]
    superopt = args.pop(0)
    optimize = "--optimize" in args
    tiny = "--tiny" in args
    drop = "--dropin" in args
    budget = 50
    if "--budget" in args:
        budget = int(args[args.index("--budget") + 1])
        args.remove(str(budget))
    models = [a for a in args if a.endswith(".onnx")]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if tiny:
            for make in (tiny_bert, tiny_gpt, tiny_vit, tiny_swin):
                p = os.path.join(tmp, make.__name__ + ".onnx")
                make(p)
                models.insert(0, p)
        for p in models:
            good, line = check(superopt, p, tmp, optimize, budget, drop)
            ok &= good
            print(line, flush=True)
    if not ok:
        sys.exit(1)
    print("onnx models: all passed")


if __name__ == "__main__":
    main()
