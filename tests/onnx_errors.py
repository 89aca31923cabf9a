#!/usr/bin/env python3
"""onnx_errors.py: bad ONNX input gets one clear message, exit status 2 and
no output file: an unsupported operator (named with its node, position and
the supported list), malformed protobuf, an opset that is too old, a dynamic
input shape (and that --input-shape resolves it); hostile shapes (issue 12):
a node without outputs or op type, a negative dimension, messages nested
thousands deep, a constant reshaped to dimensions whose product overflows;
and --data-input (other inputs become weights; an unknown name is an error).

usage: onnx_errors.py SUPEROPT
"""
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

FAILS = []


def model(nodes, inputs, outputs, opset=17, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def nested(levels):
    """A model whose graph nests graph -> node -> attribute -> graph."""
    def ld(field, payload):
        return varint(field << 3 | 2) + varint(len(payload)) + payload
    g = b""
    for _ in range(levels):
        g = ld(1, ld(5, ld(6, g)))  # GraphProto.node.attribute.g
    return ld(7, g) + bytes([0x42, 2, 0x10, 17])  # graph, opset_import 17


def expect(superopt, tmp, label, data, code, *texts, args=()):
    src = os.path.join(tmp, label + ".onnx")
    out = os.path.join(tmp, label + ".graph")
    with open(src, "wb") as f:
        f.write(data)
    r = subprocess.run([superopt, "import", src, "-o", out, *args],
                       capture_output=True, text=True)
    msg = r.stderr
    if r.returncode != code:
        FAILS.append(f"{label}: exit {r.returncode}, expected {code}: {msg}")
    for t in texts:
        if t not in msg:
            FAILS.append(f"{label}: message lacks {t!r}: {msg}")
    if code and os.path.exists(out):
        FAILS.append(f"{label}: output written despite the error")
    if code == 2 and msg.count("error:") != 1:
        FAILS.append(f"{label}: expected one error message: {msg}")


def main():
    superopt = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        relu = helper.make_node("Relu", ["x"], ["r"], name="first")
        frob = helper.make_node("Frobnicate", ["r"], ["y"], name="my_frob")
        m = model([relu, frob], [vi("x", [1, 4])], [vi("y", [1, 4])])
        expect(superopt, tmp, "unsupported", m.SerializeToString(), 2,
               "node 2 'my_frob' (Frobnicate)",
               "unsupported ONNX operator 'Frobnicate'", "supported: Abs, Add,")
        # a shape/mask generator on a value that depends on a graph input
        ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])
        tri = helper.make_node("Trilu", ["ids"], ["t"], name="causal")
        m = model([tri], [ids], [helper.make_tensor_value_info(
            "t", TensorProto.INT64, [1, 4])])
        expect(superopt, tmp, "not_constant", m.SerializeToString(), 2,
               "node 1 'causal' (Trilu)", "supported only on constants",
               "input 1 ('ids') depends on a graph input")
        s = helper.make_tensor_value_info("s", TensorProto.STRING, [1, 4])
        m = model([helper.make_node("Identity", ["s"], ["y"])], [s],
                  [helper.make_tensor_value_info("y", TensorProto.STRING,
                                                 [1, 4])])
        expect(superopt, tmp, "string_input", m.SerializeToString(), 2,
               "graph input 's' has element type 8 (supported: float32, "
               "float16, bfloat16, int64, int32, bool)")
        expect(superopt, tmp, "garbage", b"\x08\x07\xff\xff\xff garbage", 2,
               "not a valid ONNX model")
        expect(superopt, tmp, "empty", b"", 2, "the model has no graph")
        ok = model([relu], [vi("x", [1, 4])], [vi("r", [1, 4])])
        data = ok.SerializeToString()
        expect(superopt, tmp, "truncated", data[: len(data) // 2], 2,
               "not a valid ONNX model")
        old = model([relu], [vi("x", [1, 4])], [vi("r", [1, 4])], opset=9)
        expect(superopt, tmp, "old_opset", old.SerializeToString(), 2,
               "opset 9 is too old")
        dyn = model([relu], [vi("x", ["batch", 4])], [vi("r", ["batch", 4])])
        expect(superopt, tmp, "dynamic", dyn.SerializeToString(), 2,
               "graph input 'x' has a dynamic dimension 0 ('batch')",
               "--input-shape x=")
        expect(superopt, tmp, "dynamic_resolved", dyn.SerializeToString(), 0,
               args=("--input-shape", "x=3x4"))
        ok_out = os.path.join(tmp, "dynamic_resolved.graph")
        if os.path.exists(ok_out) and "input x: [3,4]" not in open(ok_out).read():
            FAILS.append("dynamic_resolved: --input-shape not applied")
        expect(superopt, tmp, "bad_flag", dyn.SerializeToString(), 1,
               "bad --input-shape", args=("--input-shape", "x=3xq"))
        mm = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
        bad = model([mm], [vi("x", [2, 3]), vi("w", [4, 5])], [vi("y", [2, 5])])
        expect(superopt, tmp, "shape", bad.SerializeToString(), 2,
               "node 1 'mm' (MatMul)", "[2,3] and [4,5] do not multiply")
        undef = model([helper.make_node("Relu", ["nope"], ["y"], name="u")],
                      [vi("x", [2])], [vi("y", [2])])
        expect(superopt, tmp, "undefined", undef.SerializeToString(), 2,
               "input 'nope' is not defined")
        noout = model([helper.make_node("Identity", ["x"], [], name="i")],
                      [vi("x", [2])], [vi("x", [2])])
        expect(superopt, tmp, "no_output", noout.SerializeToString(), 2,
               "node 1 'i' (Identity): the node has no output")
        noop = helper.make_node("Relu", ["x"], ["y"], name="n")
        noop.ClearField("op_type")
        m = model([noop], [vi("x", [2])], [vi("y", [2])])
        expect(superopt, tmp, "no_op_type", m.SerializeToString(), 2,
               "node 1 'n' (no op type): the node has no op type")
        m = model([relu], [vi("x", [-5, 4])], [vi("r", [-5, 4])])
        expect(superopt, tmp, "negative_dim", m.SerializeToString(), 2,
               "graph input 'x' has a negative dimension 0 (-5)")
        expect(superopt, tmp, "deep", nested(5000), 2,
               "messages nested more than 100 deep")
        # a constant reshaped to dimensions whose product overflows 64 bits
        # (found by fuzz_onnx: signed overflow while folding)
        cdata = helper.make_tensor("c", TensorProto.FLOAT, [4], [1, 2, 3, 4])
        cshape = helper.make_tensor("cs", TensorProto.INT64, [2],
                                    [1 << 40, 1 << 40])
        rs = helper.make_node("Reshape", ["c", "cs"], ["k"], name="rs")
        add = helper.make_node("Add", ["x", "k"], ["y"], name="a")
        m = model([rs, add], [vi("x", [4])], [vi("y", [4])],
                  inits=(cdata, cshape))
        expect(superopt, tmp, "reshape_overflow", m.SerializeToString(), 2,
               "node 1 'rs' (Reshape)", "target shape too large")
        # an Einsum that is no matrix product: one clear message
        es = helper.make_node("Einsum", ["x", "x"], ["y"], name="es",
                              equation="ij,ij")
        m = model([es], [vi("x", [2, 3])], [vi("y", [])])
        expect(superopt, tmp, "einsum_implicit", m.SerializeToString(), 2,
               "node 1 'es' (Einsum)", "only two operands with an explicit output")
        es = helper.make_node("Einsum", ["x", "x"], ["y"], name="es2",
                              equation="ij,kj->k")
        m = model([es], [vi("x", [2, 3])], [vi("y", [2])])
        expect(superopt, tmp, "einsum_summed", m.SerializeToString(), 2,
               "'i' is summed within one operand")
        # --data-input: parameters exported as inputs (export_params=False)
        # and read by Add become weights; a name the model lacks is an error
        mm = helper.make_node("MatMul", ["x", "w"], ["m"], name="mm")
        ab = helper.make_node("Add", ["m", "b"], ["y"], name="ab")
        params = model([mm, ab], [vi("x", [2, 4]), vi("w", [4, 3]),
                                  vi("b", [3])], [vi("y", [2, 3])])
        data = params.SerializeToString()
        expect(superopt, tmp, "data_input", data, 0,
                     args=("--data-input", "x"))
        with open(os.path.join(tmp, "data_input.graph")) as f:
            text = f.read()
        for line in ("input x: [2,4]", "weight w: [4,3]", "weight b: [3]"):
            if line not in text:
                FAILS.append(f"data_input: no '{line}' in {text!r}")
        expect(superopt, tmp, "no_data_input", data, 0)
        with open(os.path.join(tmp, "no_data_input.graph")) as f:
            if "input b: [3]" not in f.read():
                FAILS.append("no_data_input: b is no longer an input")
        # a named data input stays one even where it only feeds a weight
        # slot (MatMul's second operand)
        mw = helper.make_node("MatMul", ["w", "x"], ["y"], name="mw")
        wx = model([mw], [vi("w", [3, 4]), vi("x", [4, 2])],
                   [vi("y", [3, 2])]).SerializeToString()
        expect(superopt, tmp, "data_in_weight_slot", wx, 0,
               args=("--data-input", "x"))
        with open(os.path.join(tmp, "data_in_weight_slot.graph")) as f:
            text = f.read()
        if "input x: [4,2]" not in text or "weight w: [3,4]" not in text:
            FAILS.append(f"data_in_weight_slot: {text!r}")
        expect(superopt, tmp, "data_input_missing", data, 2,
               "--data-input 'z': the model has no graph input of that name",
               args=("--data-input", "z"))
    for f in FAILS:
        print("FAIL:", f)
    if FAILS:
        sys.exit(1)
    print("onnx errors: all passed")


if __name__ == "__main__":
    main()
