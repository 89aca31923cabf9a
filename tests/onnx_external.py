#!/usr/bin/env python3
"""onnx_external.py: ONNX models whose weights live in an external data file
(what torch.onnx.export writes by default for large models): they import to
the same graph and the same weight values as the model with its weights
inline; a location outside the model's folder, a missing file and a range
past the file's end are one clear error each (exit 2, no output).

usage: onnx_external.py SUPEROPT
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper as nh

FAILS = []


def small_model():
    """MatMul by a weight, Add a bias, Reshape by an int64 shape constant."""
    rng = np.random.default_rng(3)
    w = nh.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    b = nh.from_array(rng.standard_normal(8).astype(np.float32), "b")
    shape = nh.from_array(np.array([4, 2, 4], dtype=np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Reshape", ["a", "shape"], ["y"])]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "ext", [vi("x", TensorProto.FLOAT, [4, 16])],
                          [vi("y", TensorProto.FLOAT, [4, 2, 4])], [w, b, shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def imp(superopt, src, out):
    return subprocess.run([superopt, "import", src, "-o", out],
                          capture_output=True, text=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def expect_error(superopt, tmp, label, m, *texts):
    d = os.path.join(tmp, label)
    os.makedirs(d)
    src, out = os.path.join(d, "m.onnx"), os.path.join(d, "m.graph")
    onnx.save(m, src)
    r = imp(superopt, src, out)
    if r.returncode != 2:
        FAILS.append(f"{label}: exit {r.returncode}, expected 2: {r.stderr}")
    for t in texts:
        if t not in r.stderr:
            FAILS.append(f"{label}: message lacks {t!r}: {r.stderr}")
    if os.path.exists(out):
        FAILS.append(f"{label}: output written despite the error")


def set_location(m, name, **entries):
    for t in m.graph.initializer:
        if t.name == name:
            t.data_location = TensorProto.EXTERNAL
            del t.external_data[:]
            for k, v in entries.items():
                e = t.external_data.add()
                e.key, e.value = k, str(v)
            t.ClearField("raw_data")


def main():
    superopt = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        inline = os.path.join(tmp, "inline.onnx")
        onnx.save(small_model(), inline)
        r = imp(superopt, inline, os.path.join(tmp, "inline.graph"))
        if r.returncode:
            FAILS.append(f"inline import failed: {r.stderr}")
        # all tensors in one file beside the model, at offsets
        sub = os.path.join(tmp, "sub")
        os.makedirs(sub)
        ext = os.path.join(sub, "model.onnx")
        onnx.save_model(small_model(), ext, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx.data",
                        size_threshold=0)
        m = onnx.load(ext, load_external_data=False)
        if not all(t.data_location == TensorProto.EXTERNAL for t in m.graph.initializer):
            FAILS.append("onnx did not write the tensors externally")
        # imported from another working folder: the location is relative to
        # the model's folder
        r = subprocess.run([superopt, "import", ext, "-o", os.path.join(tmp, "ext.graph")],
                           capture_output=True, text=True, cwd="/")
        if r.returncode:
            FAILS.append(f"external import failed: {r.stderr}")
        else:
            for suffix in (".graph", ".safetensors"):
                a = read(os.path.join(tmp, "inline" + suffix))
                b = read(os.path.join(tmp, "ext" + suffix))
                if a != b:
                    FAILS.append(f"external import differs from inline ({suffix})")
        m = small_model()
        set_location(m, "w", location="../w.data")
        expect_error(superopt, tmp, "outside", m, "tensor 'w'",
                     "outside the model's folder")
        m = small_model()
        set_location(m, "w", location="/etc/passwd")
        expect_error(superopt, tmp, "absolute", m, "outside the model's folder")
        m = small_model()
        set_location(m, "w", location="missing.data")
        expect_error(superopt, tmp, "missing", m, "cannot read external data file",
                     "missing.data")
        m = small_model()
        set_location(m, "w", location="short.data", offset=16, length=512)
        d = os.path.join(tmp, "short")
        os.makedirs(d)
        with open(os.path.join(d, "short.data"), "wb") as f:
            f.write(b"\0" * 100)
        src = os.path.join(d, "m.onnx")
        onnx.save(m, src)
        r = imp(superopt, src, os.path.join(d, "m.graph"))
        if r.returncode != 2 or "past the end of 'short.data'" not in r.stderr:
            FAILS.append(f"range past the end: exit {r.returncode}: {r.stderr}")
        if os.path.exists(os.path.join(d, "m.graph")):
            FAILS.append("range past the end: output written despite the error")
    for f in FAILS:
        print("FAIL:", f)
    if FAILS:
        sys.exit(1)
    print("onnx external data: all passed")


if __name__ == "__main__":
    main()
