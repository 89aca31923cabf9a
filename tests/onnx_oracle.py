#!/usr/bin/env python3
"""onnx_oracle.py: checks the ONNX importer, the exporter and the CPU executor
against onnxruntime, an independent implementation.

usage: onnx_oracle.py SUPEROPT SOURCE_DIR [--only NAME]

For every torchvision model exported by torch (models/onnx/NAME.onnx for each
models/tv_NAME.graph; scripts/export-models.py) the importer's graph runs on
our executor with seeded random inputs and weights (`superopt run --dump`),
and onnxruntime runs the ORIGINAL .onnx file on the very same values; for
every zoo model (models/*.graph) and tests/data/good/every_op.graph the graph
is exported to ONNX and onnxruntime runs the export. It also checks the
importer's operator counts and output shapes against the ONNX file, that
import -> export -> import gives an identical graph, and that the checked-in
models/tv_*.graph files are what the importer gives today. Relative error bound:
max|ours - ort| <= 1e-4 * max|ort| (per output).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

TOL = 1e-4
# ONNX op type -> IR operator it imports as (counted for the op-count check)
OP_MAP = {"Conv": "conv2d", "Relu": "relu", "MaxPool": "maxpool",
          "Add": "ewadd", "GlobalAveragePool": "global_avgpool",
          "Concat": "concat", "Clip": "clip", "Flatten": "reshape"}


def ir_name(name):
    """The importer's name for an ONNX name (src/onnx/import.c)."""
    s = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return s if re.match(r"[A-Za-z_]", name) else "t_" + s


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def run_ours(superopt, graph, tmp):
    """Runs graph on our executor; returns {kind: {name: array}}."""
    d = tempfile.mkdtemp(dir=tmp)
    run([superopt, "run", graph, "--seed", "7", "--dump", d])
    vals = collections.defaultdict(dict)
    with open(os.path.join(d, "manifest.tsv")) as f:
        for line in f:
            kind, name, fn = line.rstrip("\n").split("\t")
            vals[kind][name] = np.load(os.path.join(d, fn))
    return vals


def compare(label, onnx_path, vals, rename):
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        ours = rename(i.name)
        src = vals["input"].get(ours, vals["weight"].get(ours))
        if src is None:
            raise AssertionError(f"{label}: no value for ONNX input {i.name}")
        # int64 / bool values are held as floats by our executor
        feeds[i.name] = src.astype({"tensor(int64)": np.int64,
                                    "tensor(bool)": np.bool_}.get(i.type,
                                                                  np.float32))
    outs = sess.run(None, feeds)
    ours = list(vals["output"].values())
    assert len(outs) == len(ours), f"{label}: {len(outs)} vs {len(ours)} outputs"
    worst = 0.0
    for ref, got in zip(outs, ours):
        assert ref.shape == got.shape, f"{label}: shape {got.shape} vs {ref.shape}"
        assert np.all(np.isfinite(got)), f"{label}: non-finite output"
        scale = float(np.max(np.abs(ref))) or 1.0
        err = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
        worst = max(worst, err)
    status = "ok" if worst <= TOL else "FAIL"
    print(f"{label}: relative error {worst:.2e} ({status})")
    return worst <= TOL


def check_counts(label, onnx_path, graph_text):
    m = onnx.load(onnx_path)
    want = collections.Counter(OP_MAP[n.op_type] for n in m.graph.node
                               if n.op_type in OP_MAP)
    got = collections.Counter(re.findall(r"= (\w+)\(", graph_text))
    for op, n in want.items():
        assert got[op] == n, f"{label}: {n} {op} in ONNX, {got[op]} imported"
    out = m.graph.output[0].type.tensor_type.shape
    dims = ",".join(str(d.dim_value) for d in out.dim)
    assert f": [{dims}] =" in graph_text, f"{label}: output shape [{dims}]"


def torchvision_models(src):
    """NAME.onnx for every models/tv_NAME.graph (its import, checked in);
    the .onnx must be in models/onnx/."""
    names = sorted(f[3:-6] + ".onnx" for f in os.listdir(os.path.join(src, "models"))
                   if f.startswith("tv_") and f.endswith(".graph"))
    assert names, "no models/tv_*.graph"
    for fn in names:
        path = os.path.join(src, "models", "onnx", fn)
        assert os.path.isfile(path), f"{path} missing (scripts/export-models.py)"
    return names


def main():
    superopt, src = sys.argv[1], sys.argv[2]
    only = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--only" else None
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for fn in torchvision_models(src):
            if only and only not in fn:
                continue
            path = os.path.join(src, "models", "onnx", fn)
            g1 = os.path.join(tmp, fn + ".graph")
            run([superopt, "import", path, "-o", g1])
            text = open(g1).read()
            check_counts(fn, path, text)
            zoo = os.path.join(src, "models", "tv_" + fn[:-5] + ".graph")
            kept = "".join(l for l in open(zoo) if not l.startswith("#"))
            assert kept == text, f"{zoo} is stale: re-import it (see its header)"
            rt = os.path.join(tmp, fn + ".rt.onnx")
            g2 = os.path.join(tmp, fn + ".rt.graph")
            run([superopt, "export", g1, "-o", rt])
            run([superopt, "import", rt, "-o", g2])
            assert open(g2).read() == text, f"{fn}: import-export-import differs"
            ok &= compare(fn, path, run_ours(superopt, path, tmp), ir_name)
        graphs = [os.path.join(src, "models", f)
                  for f in sorted(os.listdir(os.path.join(src, "models")))
                  if f.endswith(".graph")]
        graphs.append(os.path.join(src, "tests", "data", "good", "every_op.graph"))
        for g in graphs:
            label = os.path.basename(g)
            if only and only not in label:
                continue
            out = os.path.join(tmp, label + ".onnx")
            run([superopt, "export", g, "-o", out])
            ok &= compare(label + " (exported)", out, run_ours(superopt, g, tmp),
                          lambda n: n)
    if not ok:
        sys.exit(1)
    print("onnx oracle: all passed")


if __name__ == "__main__":
    main()
