#!/usr/bin/env python3
"""onnx_rmsnorm.py: RMSNorm as the torch exporters write it (Pow, ReduceMean,
Add eps, Sqrt, Div(1, .) or Reciprocal, Mul by x, Mul by the weight) is made
one layernorm rms=1 by optimize (the .graph says rms=1: by default the rules
of rules/extended.rules form it; under --passes hand, the ablation, the
pass, which its `passes:` line counts), and the drop-in ONNX it writes
(the layernorm spelled out as primitives) agrees with onnxruntime on the
original (relative error <= 1e-4), as does the .graph on our CPU executor
(optimize's check).

usage: onnx_rmsnorm.py SUPEROPT
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

TOL = 1e-4
H = helper.make_node


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)


def rms_nodes(x, w, out, p, recip):
    """Llama's RMSNorm of x (weight w) into out; names prefixed p."""
    inv = ([H("Reciprocal", [p + "s"], [p + "i"])] if recip else
           [H("Div", [p + "one", p + "s"], [p + "i"])])
    return ([H("Pow", [x, p + "two"], [p + "q"]),
             H("ReduceMean", [p + "q"], [p + "m"], axes=[-1], keepdims=1),
             H("Add", [p + "m", p + "eps"], [p + "a"]),
             H("Sqrt", [p + "a"], [p + "s"])] + inv +
            [H("Mul", [x, p + "i"], [p + "y"]), H("Mul", [w, p + "y"], [out])])


def model():
    """Two RMSNorms (one through Div, one through Reciprocal) around a
    projection, as in a Llama layer."""
    rng = np.random.default_rng(5)
    nodes = (rms_nodes("x", "w1", "n1", "a_", False) +
             [H("MatMul", ["n1", "p"], ["h"]), H("Add", ["h", "x"], ["r"])] +
             rms_nodes("r", "w2", "y", "b_", True))
    inits = [const("w1", rng.uniform(0.5, 1.5, 32)),
             const("w2", rng.uniform(0.5, 1.5, 32)),
             const("p", rng.uniform(-0.2, 0.2, (32, 32)))]
    for p in ("a_", "b_"):
        inits += [const(p + "two", 2.0), const(p + "one", 1.0),
                  const(p + "eps", 1e-6)]
    g = helper.make_graph(
        nodes, "rms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 32])],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: {r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def main():
    superopt = sys.argv[1]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        orig = os.path.join(tmp, "rms.onnx")
        onnx.save(model(), orig)
        gr, out = os.path.join(tmp, "o.graph"), os.path.join(tmp, "o.onnx")
        for passes, counted in (("none", "0"), ("hand", "2")):
            log = run([superopt, "optimize", orig, "--device", "h200",
                       "--passes", passes, "-o", gr])
            if counted + " RMSNorms formed" not in log:
                fails.append("--passes %s: the passes did not count %s "
                             "RMSNorms formed:\n%s" % (passes, counted, log))
            text = open(gr).read()
            if text.count("rms=1") != 2:
                fails.append("--passes %s: the .graph has not 2 layernorms "
                             "rms=1:\n%s" % (passes, text))
        run([superopt, "optimize", orig, "--device", "h200", "-o", out])
        x = np.random.default_rng(1).standard_normal((2, 16, 32),
                                                     dtype=np.float32)
        want = ort.InferenceSession(orig, providers=["CPUExecutionProvider"]
                                    ).run(None, {"x": x})[0]
        got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]
                                   ).run(None, {"x": x})[0]
        err = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
        print(f"drop-in ONNX against the original: relative error {err:.2e}")
        if not err <= TOL:
            fails.append(f"relative error {err:.2e}")
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print("onnx_rmsnorm: passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
