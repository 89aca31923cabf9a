#!/usr/bin/env python3
"""onnx_estimate.py: what `optimize M.onnx -o X.onnx` says about costs.

usage: onnx_estimate.py SUPEROPT SOURCE_DIR

- Every line with an estimate (us) names the device it is for; by default
  that is $SUPEROPT_DEVICE, else the GPU present, else the CPU ("no GPU on
  this machine"); on a
  GPU's model an .onnx output is said plainly to be priced for superopt's
  CUDA kernels, not for what runs the file.
- With --device cpu, a model whose only gain in superopt's graph is an
  activation fused into a convolution (which the export writes unfused
  again) gets the same ONNX back and "cost after: ... no change", not a
  percentage lower.
- Batch norms over initializers are folded into the convolution's
  initializers (by the default's rules, rules/extended.rules' folds: no
  pass runs by default); over graph inputs the folding stays as nodes,
  with one line saying so, naming the inputs and how to make them
  initializers, and the estimate prices those nodes.
Small generated models, --no-rules (the batch-norm folds: the default
rules): a second or two each.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def run(cmd, device_env=None):
    """cmd's output; $SUPEROPT_DEVICE (set for the suite) left out, or
    device_env."""
    env = {k: v for k, v in os.environ.items() if k != "SUPEROPT_DEVICE"}
    if device_env:
        env["SUPEROPT_DEVICE"] = device_env
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout, r.stderr


def conv_relu_model(path):
    """x -> Conv -> Relu -> Conv -> Relu, weights as initializers: nothing
    for the search but fusing the activations."""
    rng = np.random.default_rng(0)
    inits = [nh.from_array((rng.standard_normal(s) / 4).astype(np.float32), n)
             for n, s in (("w1", (8, 4, 3, 3)), ("b1", (8,)),
                          ("w2", (8, 8, 3, 3)), ("b2", (8,)))]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c2"], ["y"])]
    g = h.make_graph(nodes, "cr", [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 16, 16])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 8, 16, 16])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def as_inputs(src, path):
    """src with its initializers turned into graph inputs (an export with
    export_params=False)."""
    m = onnx.load(src)
    g = m.graph
    ins = [h.make_tensor_value_info(t.name, T.FLOAT, list(t.dims)) for t in g.initializer]
    g2 = h.make_graph(list(g.node), g.name, list(g.input) + ins, list(g.output), [])
    m2 = h.make_model(g2, opset_imports=[h.make_opsetid("", 17)])
    m2.ir_version = 8
    onnx.save(m2, path)


def ops(path):
    return [n.op_type for n in onnx.load(path).graph.node]


def check_devices(out, dev, failures, label):
    """Every line with a cost in us names dev."""
    for line in out.splitlines():
        if re.search(r"\d us\b", line) and not re.search(rf"\bon {re.escape(dev)}\b", line):
            failures.append(f"{label}: a cost line without 'on {dev}': {line}")


def main():
    superopt, src = sys.argv[1], sys.argv[2]
    small = os.path.join(src, "tests/data/good/small_weighted.onnx")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        out_onnx = os.path.join(tmp, "out.onnx")
        base = [superopt, "optimize", "--no-rules"]
        folds = [superopt, "optimize"]  # the default rules fold batch norms

        # the default device, named on every cost line
        out, _ = run(base + [small, "-o", out_onnx])
        m = re.search(r"^cost model: device (\S+) \(.*the default: ([^;]*);", out, re.M)
        if not m:
            failures.append(f"default: no 'cost model: device D (... the default: ...)' line:\n{out}")
        else:
            dev, why = m.groups()
            if not os.path.isdir("/proc/driver/nvidia/gpus") and (
                    dev != "cpu" or why != "no GPU on this machine"):
                failures.append(f"default without a GPU: device {dev} ({why}), not cpu")
            check_devices(out, dev, failures, "default")
        if not re.search(r"^cost after: .*for the ONNX written", out, re.M):
            failures.append(f"no 'cost after' for the ONNX written:\n{out}")

        # $SUPEROPT_DEVICE chooses the default
        out, _ = run(base + [small, "-o", out_onnx], device_env="h200")
        if not re.search(r"^cost model: device h200 \(.*; \$SUPEROPT_DEVICE\)", out, re.M):
            failures.append(f"$SUPEROPT_DEVICE=h200: not the device:\n{out}")
        check_devices(out, "h200", failures, "$SUPEROPT_DEVICE=h200")

        # a GPU's model for an .onnx output says so plainly
        out, _ = run(base + [small, "-o", out_onnx, "--device", "h100"])
        check_devices(out, "h100", failures, "--device h100")
        if "note: these estimates are for superopt's CUDA kernels on h100, not for what runs the ONNX" not in out:
            failures.append(f"--device h100 with an .onnx output: no note:\n{out}")
        out, _ = run(base + [small, "-o", os.path.join(tmp, "out.graph"), "--device", "h100"])
        if "note:" in out:
            failures.append(f"--device h100 with a .graph output: a note about ONNX:\n{out}")

        # --device cpu: only fused activations, written unfused: no change
        cr = os.path.join(tmp, "cr.onnx")
        conv_relu_model(cr)
        out, _ = run(base + [cr, "-o", out_onnx, "--device", "cpu"])
        check_devices(out, "cpu", failures, "--device cpu")
        if ops(out_onnx) != ops(cr):
            failures.append(f"conv+relu: ONNX changed: {ops(cr)} -> {ops(out_onnx)}")
        m = re.search(r"^cost after: .*$", out, re.M)
        if not m or "no change from the model" not in m.group(0) or "lower" in m.group(0):
            failures.append(f"conv+relu, --device cpu: 'cost after' should claim no change:\n{out}")

        # batch norms over initializers: folded, no BatchNormalization left
        out, err = run(folds + [small, "-o", out_onnx, "--device", "cpu"])
        if "BatchNormalization" in ops(out_onnx) or "left as" in err:
            failures.append(f"initializers: batch norm not folded: {ops(out_onnx)}\n{err}")

        # over graph inputs: left as nodes, one line saying why and what to do
        inp = os.path.join(tmp, "inputs.onnx")
        as_inputs(small, inp)
        out, err = run(folds + [inp, "-o", out_onnx, "--device", "cpu"])
        lines = [l for l in err.splitlines() if "batch-norm folding left as" in l]
        if len(lines) != 1 or "graph inputs without values" not in lines[0] \
                or "w1" not in lines[0] or "export_params=True" not in lines[0]:
            failures.append(f"graph-input weights: no one line on the batch-norm folding left as nodes:\n{err}")
        m = re.search(r"^cost after: .*weight-preprocessing operators over graph-input weights included", out, re.M)
        if not m:
            failures.append(f"graph-input weights: 'cost after' does not price the nodes left:\n{out}")
    for f in failures:
        print("FAIL", f)
    print(f"onnx_estimate: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
