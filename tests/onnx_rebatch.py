#!/usr/bin/env python3
"""onnx_rebatch.py: models exported at batch 1 with the batch folded into
their reshape targets, rebatched by `superopt run --batch N`, checked
sample by sample against onnxruntime running the original file at batch 1.

usage: onnx_rebatch.py SUPEROPT [MODEL.onnx ...] [--batch N]

Generated models (always): a ViT-like encoder laid out as torch's
MultiheadAttention exports it (class token Expand folded at import into a
[1,1,d] weight, [tokens, 1*heads, hd] head split, [tokens*1, d] merge,
[1, heads, tokens, hd] attention), a Swin-like window partition
([1, H, W, C] -> [H/w, w, W/w, w, C] -> [1*windows, w*w, C]) and the
BERT-like model of onnx_models.py (int64 token ids and mask), and
torch.export's padding mask (an identity GatherND). MODEL.onnx
files given (models/onnx/deit_tiny_patch16_224.onnx: weights stripped to
inputs) are imported with --data-input x, files with dynamic axes
at batch 1 and sequence 16 (the suite gives the Hugging Face exports of
models/onnx/exports: the dynamo ones fix batch 1 in the file and their
padding mask is a GatherND, imported as a reshape; the legacy ones' mask is
a Gather of the flattened mask at indices folded at batch 1, which rebatch
gives each sample). `run`/`optimize` of an .onnx file with --batch N and
--dim seq=S instead bind the dynamic dimensions at import: checked on
models/onnx/exports/bert.legacy.onnx (and bert.dynamo.onnx, whose batch
the exporter fixed at 1) against onnxruntime at the same shapes. Each is
imported at batch 1,
run at batch N (default 3) with --dump, and each sample's outputs are
compared with onnxruntime on that sample (max|ours - ort| <= 1e-4 *
max|ort|). Also: `export --like` an original with a dynamic dimension
says that the export keeps it, and the names of a dynamo export are counted
kept.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_models as om  # noqa: E402

TOL = 1e-4


def init(name, shape, rng):
    return nh.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32),
                         name)


def torch_vit(path, tokens=4, d=8, heads=2):
    """torch MultiheadAttention's layout at batch 1, as exported."""
    rng = np.random.default_rng(3)
    hd = d // heads
    nodes = []
    n = nodes.append
    inits = [init("cls", [1, 1, d], rng), init("wq", [d, d], rng),
             init("wk", [d, d], rng), init("wv", [d, d], rng),
             init("wo", [d, d], rng), init("pos", [1, tokens + 1, d], rng)]
    L = tokens + 1

    def const(name, v):
        n(om.C(name, np.array(v, np.int64)))
        return name

    # class token: Expand to the batch (Shape of x), folded at import
    n(h.make_node("Shape", ["x"], ["shp"]))
    n(h.make_node("Gather", ["shp", const("i0", [0])], ["b"]))
    n(h.make_node("Concat", ["b", const("rest", [1, 1])], ["es"], axis=0))
    n(h.make_node("Expand", ["cls", "es"], ["clsb"]))
    n(h.make_node("Concat", ["clsb", "x"], ["t0"], axis=1))
    n(h.make_node("Add", ["t0", "pos"], ["t"]))
    n(h.make_node("Transpose", ["t"], ["s"], perm=[1, 0, 2]))  # [L, 1, d]
    for p in "qkv":
        n(h.make_node("MatMul", ["s", "w" + p], [p + "0"]))
        n(h.make_node("Reshape", [p + "0", const(p + "sh", [L, heads, hd])],
                      [p + "1"]))  # [L, 1*heads, hd]
        n(h.make_node("Transpose", [p + "1"], [p + "2"], perm=[1, 0, 2]))
        n(h.make_node("Reshape", [p + "2", const(p + "sh4", [1, heads, L, hd])],
                      [p + "3"]))
    n(h.make_node("Transpose", ["k3"], ["kt"], perm=[0, 1, 3, 2]))
    n(h.make_node("MatMul", ["q3", "kt"], ["sc"]))
    n(h.make_node("Softmax", ["sc"], ["pr"], axis=-1))
    n(h.make_node("MatMul", ["pr", "v3"], ["at"]))  # [1, heads, L, hd]
    n(h.make_node("Transpose", ["at"], ["at2"], perm=[2, 0, 1, 3]))
    n(h.make_node("Reshape", ["at2", const("msh", [L, d])], ["m"]))
    n(h.make_node("MatMul", ["m", "wo"], ["o"]))  # [L*1, d]
    n(h.make_node("Reshape", ["o", const("osh", [L, 1, d])], ["o3"]))
    n(h.make_node("Transpose", ["o3"], ["o4"], perm=[1, 0, 2]))
    n(h.make_node("Gather", ["o4", const("z", 0)], ["y"], axis=1))
    ins = [h.make_tensor_value_info("x", T.FLOAT, [1, tokens, d])]
    outs = [h.make_tensor_value_info("y", T.FLOAT, [1, d])]
    g = h.make_graph(nodes, "torch_vit", ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def window_swin(path, hw=4, w=2, c=3):
    """Swin's window partition with the batch folded into the windows."""
    rng = np.random.default_rng(4)
    nodes = []
    n = nodes.append
    nw = (hw // w) ** 2
    n(om.C("v5", np.array([hw // w, w, hw // w, w, c], np.int64)))
    n(h.make_node("Reshape", ["x", "v5"], ["x5"]))
    n(h.make_node("Transpose", ["x5"], ["t5"], perm=[0, 2, 1, 3, 4]))
    n(om.C("v3", np.array([nw, w * w, c], np.int64)))
    n(h.make_node("Reshape", ["t5", "v3"], ["win"]))
    n(h.make_node("MatMul", ["win", "wq"], ["q"]))
    n(h.make_node("Transpose", ["win"], ["wt"], perm=[0, 2, 1]))
    n(h.make_node("MatMul", ["q", "wt"], ["sc"]))
    # the shifted-window mask: scores viewed as [1, windows, ..] (torch's
    # attn.view(B_ // nW, nW, ..) at batch 1)
    n(om.C("v4", np.array([1, nw, w * w, w * w], np.int64)))
    n(h.make_node("Reshape", ["sc", "v4"], ["sc4"]))
    n(h.make_node("Add", ["sc4", "mask"], ["sm4"]))
    n(om.C("v3s", np.array([nw, w * w, w * w], np.int64)))
    n(h.make_node("Reshape", ["sm4", "v3s"], ["sm"]))
    n(h.make_node("Softmax", ["sm"], ["pr"], axis=-1))
    n(h.make_node("MatMul", ["pr", "win"], ["a"]))
    n(om.C("back", np.array([1, hw, hw, c], np.int64)))
    n(h.make_node("Reshape", ["a", "back"], ["y"]))
    ins = [h.make_tensor_value_info("x", T.FLOAT, [1, hw, hw, c])]
    outs = [h.make_tensor_value_info("y", T.FLOAT, [1, hw, hw, c])]
    inits = [init("wq", [c, c], rng), init("mask", [nw, w * w, w * w], rng)]
    g = h.make_graph(nodes, "window_swin", ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def nd_mask(path, s=4, heads=2):
    """torch.export's padding mask at batch 1: GatherND of the mask by
    (arange(B), arange(S)) tuples, folded to constants at import, added to
    the attention scores (models/onnx/exports/*.dynamo.onnx)."""
    iid = np.stack(np.meshgrid(np.arange(1), np.arange(s), indexing="ij"),
                   -1).reshape(1, 1, 1, s, 2).astype(np.int64)
    nodes = [om.C("iid", iid),
             h.make_node("GatherND", ["m", "iid"], ["g"]),  # [1, 1, 1, s]
             h.make_node("Add", ["x", "g"], ["sc"]),
             h.make_node("Softmax", ["sc"], ["y"], axis=-1)]
    ins = [h.make_tensor_value_info("x", T.FLOAT, [1, heads, s, s]),
           h.make_tensor_value_info("m", T.FLOAT, [1, s])]
    outs = [h.make_tensor_value_info("y", T.FLOAT, [1, heads, s, s])]
    g = h.make_graph(nodes, "nd_mask", ins, outs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def weights_as_inputs(path):
    """Whether the file's parameters are graph inputs beside x (torchvision
    and timm exports with their weights stripped)."""
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = [i.name for i in m.graph.input if i.name not in inits]
    return "x" in ins and len(ins) > 1


def check(superopt, path, tmp, batch, data_input):
    label = os.path.basename(path)[:-5]
    g = os.path.join(tmp, label + ".graph")
    om.run([superopt, "import", path, "-o", g, *om.shape_args(path)] +
           (["--data-input", "x"] if data_input else []))
    d = tempfile.mkdtemp(dir=tmp)
    om.run([superopt, "run", g, "--batch", str(batch), "--seed", "7",
            "--dump", d])
    vals = om.collections.defaultdict(dict)
    with open(os.path.join(d, "manifest.tsv")) as f:
        for line in f:
            kind, name, fn = line.rstrip("\n").split("\t")
            vals[kind][name] = np.load(os.path.join(d, fn))
    outs = list(vals["output"].values())
    worst = 0.0
    for i in range(batch):
        one = {"input": {k: v[i:i + 1] for k, v in vals["input"].items()},
               "weight": vals["weight"]}
        refs = om.ort_outputs(path, one)
        mine = [o[i:i + 1] if o.shape[0] == batch else o for o in outs]
        worst = max(worst, om.rel_err(refs, mine))
    ok = worst <= TOL
    print(f"{label}: batch {batch}, per-sample error {worst:.2e} "
          f"({'ok' if ok else 'FAIL'})", flush=True)
    return ok


def export_note(superopt, tmp):
    """export --like keeps the original's dynamic dimension and says so
    (and says nothing for a file without them; tests/onnx_dynamic.py runs
    such files at other sizes)."""
    ok = True
    for dims, want in ((["batch", 4], "dynamic dimensions kept: batch"),
                       ([1, 4], None)):
        x = h.make_tensor_value_info("x", T.FLOAT, dims)
        y = h.make_tensor_value_info("y", T.FLOAT, dims)
        g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "dyn", [x], [y])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        src = os.path.join(tmp, "dyn.onnx")
        onnx.save(m, src)
        gr, out = os.path.join(tmp, "dyn.graph"), os.path.join(tmp, "o.onnx")
        om.run([superopt, "import", src, "-o", gr, "--input-shape", "x=2x4"])
        r = om.subprocess.run([superopt, "export", gr, "--like", src, "-o",
                               out], capture_output=True, text=True)
        said = "dynamic dimensions" in r.stderr
        good = r.returncode == 0 and (want in r.stderr if want else not said)
        ok &= good
        print(f"export --like {dims}: {'ok' if good else 'FAIL'} "
              f"({r.stderr.strip()[-160:]})", flush=True)
    return ok


def bound_dims(superopt, tmp, batch):
    """run/optimize of an .onnx file with dynamic axes: --batch binds the
    dynamic first dimensions and --dim the named ones, at import (no
    rebatch), and the outputs match onnxruntime at those shapes."""
    ok = True
    here = os.path.dirname(os.path.abspath(__file__))
    # (the dynamo exporter specialised the batch of 1 it was exported at:
    # only the sequence is dynamic there)
    for name, b in (("bert.legacy.onnx", batch), ("bert.dynamo.onnx", 1)):
        src = os.path.join(here, "..", "models", "onnx", "exports", name)
        d = tempfile.mkdtemp(dir=tmp)
        om.run([superopt, "run", src, "--batch", str(b), "--dim", "seq=8",
                "--seed", "7", "--dump", d])
        vals = om.collections.defaultdict(dict)
        with open(os.path.join(d, "manifest.tsv")) as f:
            for line in f:
                kind, nm, fn = line.rstrip("\n").split("\t")
                vals[kind][nm] = np.load(os.path.join(d, fn))
        shapes = sorted(v.shape for v in vals["input"].values())
        outs = list(vals["output"].values())
        err = om.rel_err(om.ort_outputs(src, vals), outs)
        good = err <= TOL and shapes[0] == (b, 8)
        opt = os.path.join(tmp, "b.graph")
        r = om.subprocess.run([superopt, "optimize", src, "--batch",
                               str(b), "--dim", "seq=8", "--no-check",
                               "-o", opt], capture_output=True, text=True)
        good &= r.returncode == 0
        r = om.subprocess.run([superopt, "optimize", opt, "--dim", "seq=8"],
                              capture_output=True, text=True)
        good &= r.returncode == 1 and "for an .onnx model" in r.stderr
        ok &= good
        print(f"{name} --batch {b} --dim seq=8: inputs {shapes}, error "
              f"{err:.2e} ({'ok' if good else 'FAIL'})", flush=True)
    return ok


def export_names(superopt, tmp):
    """export --like of a dynamo export, whose names are IR names already:
    it counts them kept (it said "0 names given back" and nothing else)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "models", "onnx", "exports", "bert.dynamo.onnx")
    gr, out = os.path.join(tmp, "bd.graph"), os.path.join(tmp, "bd.onnx")
    om.run([superopt, "import", src, "-o", gr, *om.shape_args(src)])
    r = om.subprocess.run([superopt, "export", gr, "--like", src, "-o", out],
                          capture_output=True, text=True)
    m = onnx.load(out, load_external_data=False)
    names = sorted([i.name for i in m.graph.input] +
                   [o.name for o in m.graph.output])
    good = (r.returncode == 0 and "3 of its 3 input and output names kept"
            in r.stderr and names == ["attention_mask", "input_ids", "y"])
    print(f"export --like bert.dynamo.onnx: {'ok' if good else 'FAIL'} "
          f"({r.stderr.strip()[:200]})", flush=True)
    return good


# dynamic axes (the Hugging Face exports of models/onnx/exports): imported
# at batch 1 and sequence 16, then rebatched
om.DYN = {"batch": 1, "seq": 16}


def main():
    args = sys.argv[1:]
    superopt = args.pop(0)
    batch = 3
    if "--batch" in args:
        batch = int(args[args.index("--batch") + 1])
        args.remove(str(batch))
    models = [a for a in args if a.endswith(".onnx")]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for make in (torch_vit, window_swin, om.tiny_bert, nd_mask):
            p = os.path.join(tmp, make.__name__ + ".onnx")
            make(p)
            models.insert(0, p)
        ok &= export_note(superopt, tmp)
        ok &= bound_dims(superopt, tmp, batch)
        ok &= export_names(superopt, tmp)
        for p in models:
            try:
                ok &= check(superopt, p, tmp, batch, weights_as_inputs(p))
            except (RuntimeError, AssertionError) as e:
                ok = False
                print(f"{os.path.basename(p)}: FAIL ({e})", flush=True)
    if not ok:
        sys.exit(1)
    print("onnx rebatch: all passed")


if __name__ == "__main__":
    main()
