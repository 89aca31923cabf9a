#!/usr/bin/env python3
"""onnx_half.py: half-precision ONNX models (docs/half.md).

A tiny float16 model (MatMul, Add, Relu, a Cast to float around Softmax and
back, MatMul; float16 input, initializers and output) is imported (an f16
graph), run by `superopt run --dump` and compared with onnxruntime running
the file on the same inputs (both compute in float16: max|ours - ort| <=
1e-2 max|ort|); optimized to .onnx, the export keeps float16 (input,
initializers, output) and onnxruntime's result on it agrees as closely.
A float32 model optimized with --dtype bf16 to .onnx is valid ONNX
(onnx.checker) whose input, initializers and output are bfloat16 at opset
13 or more, and imports back as a bf16 graph.

usage: onnx_half.py SUPEROPT
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_models as om  # noqa: E402

TOL = 1e-2  # float16: a few units of 2^-11 through a few roundings


def model(path, elem, npt):
    rng = np.random.default_rng(5)
    inits = [nh.from_array(rng.uniform(-0.5, 0.5, s).astype(npt), n)
             for n, s in (("w1", [8, 16]), ("b1", [16]), ("w2", [16, 4]))]
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m1"]),
             h.make_node("Add", ["m1", "b1"], ["a1"]),
             h.make_node("Relu", ["a1"], ["r1"]),
             h.make_node("Cast", ["r1"], ["c1"], to=T.FLOAT),
             h.make_node("Softmax", ["c1"], ["s1"], axis=-1),
             h.make_node("Cast", ["s1"], ["c2"], to=elem),
             h.make_node("MatMul", ["c2", "w2"], ["y"])]
    if elem == T.FLOAT:
        nodes = [n for n in nodes if n.op_type != "Cast"]
        nodes[3].input[0], nodes[4].input[0] = "r1", "s1"
    g = h.make_graph(nodes, "half", [h.make_tensor_value_info("x", elem, [2, 8])],
                     [h.make_tensor_value_info("y", elem, [2, 4])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def ort_run(path, x):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0].astype(np.float32)


def err(ref, got):
    return float(np.max(np.abs(got - ref))) / (float(np.max(np.abs(ref))) or 1)


def types(path):
    m = onnx.load(path)
    g = m.graph
    inits = {i.name for i in g.initializer}
    ins = [i.type.tensor_type.elem_type for i in g.input if i.name not in inits]
    return (ins, [i.data_type for i in g.initializer],
            [o.type.tensor_type.elem_type for o in g.output],
            max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")))


def main():
    sup = sys.argv[1]
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        f16 = os.path.join(tmp, "f16.onnx")
        model(f16, T.FLOAT16, np.float16)
        g = os.path.join(tmp, "f16.graph")
        om.run([sup, "import", f16, "-o", g])
        text = open(g).read()
        if "input x: f16[2,8]" not in text or "softmax" not in text:
            print("FAIL: the import is not an f16 graph:\n" + text)
            fails += 1
        vals = om.dump(sup, f16, tmp)
        x = vals["input"]["x"]
        if not np.array_equal(x.astype(np.float16).astype(np.float32), x):
            print("FAIL: the f16 input's values are not float16 values")
            fails += 1
        ours = list(vals["output"].values())[0]
        ref = ort_run(f16, x.astype(np.float16))
        e = err(ref, ours)
        print(f"f16 import vs onnxruntime: error {e:.2e}")
        fails += e > TOL

        out = os.path.join(tmp, "f16.opt.onnx")
        om.run([sup, "optimize", f16, "-o", out, "--budget", "20"])
        onnx.checker.check_model(onnx.load(out))
        ins, inits, outs, _ = types(out)
        if ins != [T.FLOAT16] or outs != [T.FLOAT16] or \
                set(inits) != {T.FLOAT16}:
            print(f"FAIL: the optimized export is not float16: {ins} {inits} {outs}")
            fails += 1
        e2 = err(ref, ort_run(out, x.astype(np.float16)))
        print(f"f16 optimized export vs onnxruntime on the original: {e2:.2e}")
        fails += e2 > TOL

        f32 = os.path.join(tmp, "f32.onnx")
        model(f32, T.FLOAT, np.float32)
        bf = os.path.join(tmp, "bf16.onnx")
        om.run([sup, "optimize", f32, "-o", bf, "--budget", "20",
                "--dtype", "bf16"])
        onnx.checker.check_model(onnx.load(bf))
        ins, inits, outs, opset = types(bf)
        print(f"bf16 export: inputs {ins}, initializers {inits}, outputs "
              f"{outs}, opset {opset}")
        if ins != [T.BFLOAT16] or outs != [T.BFLOAT16] or \
                T.BFLOAT16 not in inits or opset < 13:
            print("FAIL: the --dtype bf16 export is not bfloat16 at opset 13+")
            fails += 1
        back = os.path.join(tmp, "bf16.graph")
        om.run([sup, "import", bf, "-o", back])
        if "input x: bf16[2,8]" not in open(back).read():
            print("FAIL: the bf16 export does not import as bf16")
            fails += 1
    print(f"{fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
