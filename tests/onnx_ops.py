#!/usr/bin/env python3
"""onnx_ops.py: one small ONNX model per importer feature (Gemm variants,
spelled-out layer norm and GELU, shape-computation chains, auto_pad modes,
ceil_mode, Split/Slice/Pad forms, ...), each imported and run on our CPU
executor and compared with onnxruntime on the same random inputs
(relative error <= 1e-4).

usage: onnx_ops.py SUPEROPT
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


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "t", [vi(n, s) for n, s in inputs],
                          [vi(n, None) for n in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


rng = np.random.default_rng(3)
W = lambda *s: rng.uniform(-0.5, 0.5, s).astype(np.float32)

CASES = {
    "gemm_transB_bias": model(
        [H("Gemm", ["x", "w", "b"], ["y"], transB=1)], [("x", [3, 5])], ["y"],
        [const("w", W(4, 5)), const("b", W(4))]),
    "gemm_alpha_beta_transA_C2d": model(
        [H("Gemm", ["x", "w", "c"], ["y"], transA=1, alpha=0.5, beta=2.0)],
        [("x", [5, 3])], ["y"], [const("w", W(5, 4)), const("c", W(3, 4))]),
    "matmul_batched_softmax": model(
        [H("MatMul", ["x", "w"], ["m"]), H("Softmax", ["m"], ["y"], axis=1)],
        [("x", [2, 3, 4])], ["y"], [const("w", W(2, 4, 6))]),
    "layernorm_gelu20": model(
        [H("LayerNormalization", ["x", "g", "b"], ["l"], axis=-1, epsilon=1e-3),
         H("Gelu", ["l"], ["y"])], [("x", [2, 3, 8])], ["y"],
        [const("g", W(8)), const("b", W(8))], opset=20),
    "layernorm_spelled_out": model(
        [H("ReduceMean", ["x"], ["mu"], axes=[-1]), H("Sub", ["x", "mu"], ["d"]),
         H("Pow", ["d", "two"], ["sq"]), H("ReduceMean", ["sq"], ["var"], axes=[-1]),
         H("Add", ["var", "eps"], ["ve"]), H("Sqrt", ["ve"], ["sd"]),
         H("Div", ["d", "sd"], ["n"]), H("Mul", ["n", "g"], ["ng"]),
         H("Add", ["ng", "b"], ["y"])], [("x", [2, 4, 8])], ["y"],
        [const("two", np.float32(2)), const("eps", np.float32(1e-5)),
         const("g", W(8)), const("b", W(8))]),
    "gelu_spelled_out": model(
        [H("Div", ["x", "s2"], ["a"]), H("Erf", ["a"], ["e"]),
         H("Add", ["e", "one"], ["p"]), H("Mul", ["x", "p"], ["q"]),
         H("Mul", ["q", "half"], ["y"])], [("x", [4, 6])], ["y"],
        [const("s2", np.float32(1.4142135)), const("one", np.float32(1)),
         const("half", np.float32(0.5))]),
    # the ew.def operators transformers need (rotary tables: Cos, Sin);
    # also exported back and checked again (ROUND_TRIP)
    "neg_exp_log_cos_sin": model(
        [H("Neg", ["x"], ["a"]), H("Exp", ["a"], ["b"]), H("Log", ["b"], ["c"]),
         H("Cos", ["c"], ["d"]), H("Sin", ["x"], ["e"]),
         H("Add", ["d", "e"], ["y"])], [("x", [3, 7])], ["y", "b"]),
    "gelu_tanh_gpt2": model(  # x^3 (Pow 3) of GPT-2's tanh GELU
        [H("Pow", ["x", "three"], ["c"]), H("Mul", ["c", "k"], ["kc"]),
         H("Add", ["x", "kc"], ["i"]), H("Mul", ["i", "s"], ["si"]),
         H("Tanh", ["si"], ["t"]), H("Add", ["t", "one"], ["p"]),
         H("Mul", ["x", "p"], ["q"]), H("Mul", ["q", "half"], ["y"])],
        [("x", [4, 6])], ["y"],
        [const("three", np.float32(3)), const("k", np.float32(0.044715)),
         const("s", np.float32(0.7978846)), const("one", np.float32(1)),
         const("half", np.float32(0.5))]),
    "shape_gather_concat_reshape": model(
        [H("Shape", ["x"], ["s"]), H("Gather", ["s", "i0"], ["n"], axis=0),
         H("Unsqueeze", ["n", "ax0"], ["n1"]),
         H("Concat", ["n1", "m1"], ["shp"], axis=0),
         H("Reshape", ["x", "shp"], ["y"])], [("x", [2, 3, 4])], ["y"],
        [const("i0", np.int64(0)), const("ax0", np.array([0], np.int64)),
         const("m1", np.array([-1], np.int64))], opset=13),
    "reshape_zero_flatten_transpose": model(
        [H("Reshape", ["x", "shp"], ["r"]), H("Transpose", ["r"], ["t"]),
         H("Flatten", ["t"], ["y"], axis=2)], [("x", [2, 3, 4])], ["y"],
        [const("shp", np.array([0, 4, -1], np.int64))]),
    "squeeze_unsqueeze_cast": model(
        [H("Unsqueeze", ["x", "ax"], ["u"]), H("Squeeze", ["u", "ax"], ["s"]),
         H("Cast", ["s"], ["c"], to=1), H("Identity", ["c"], ["i"]),
         H("Dropout", ["i"], ["y"])], [("x", [3, 4])], ["y"],
        [const("ax", np.array([1], np.int64))], opset=13),
    "conv_same_lower_bn_clip": model(
        [H("Conv", ["x", "w"], ["c"], auto_pad="SAME_LOWER", strides=[2, 2]),
         H("BatchNormalization", ["c", "sc", "bi", "mu", "va"], ["b"]),
         H("Clip", ["b", "lo"], ["y"])], [("x", [1, 2, 7, 6])], ["y"],
        [const("w", W(3, 2, 3, 2)), const("sc", W(3) + 1), const("bi", W(3)),
         const("mu", W(3)), const("va", np.abs(W(3)) + 0.5),
         const("lo", np.float32(0))]),
    "conv_same_upper_grouped": model(
        [H("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER", group=2,
           strides=[2, 1])], [("x", [1, 4, 9, 8])], ["y"],
        [const("w", W(6, 2, 3, 3)), const("b", W(6))]),
    "conv_dilated_pads": model(
        [H("Conv", ["x", "w", "b"], ["y"], pads=[2, 1, 1, 0], group=2,
           dilations=[2, 1])], [("x", [1, 4, 9, 8])], ["y"],
        [const("w", W(6, 2, 3, 3)), const("b", W(6))]),
    "pools_ceil_mode": model(
        [H("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
           ceil_mode=1),
         H("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2],
           ceil_mode=1, pads=[1, 1, 0, 0]),
         H("AveragePool", ["x"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
           count_include_pad=1),
         H("GlobalAveragePool", ["x"], ["g"])], [("x", [1, 2, 8, 8])],
        ["m", "a", "c", "g"]),
    "split_slice_pad": model(
        [H("Split", ["x", "sp"], ["a", "b"], axis=1),
         H("Split", ["x"], ["c", "d", "e"], axis=2),
         H("Slice", ["a", "st", "en", "axs"], ["s"]),
         H("Pad", ["b", "pads", "pv"], ["p"])], [("x", [2, 5, 6])],
        ["s", "p", "c", "d", "e"],
        [const("sp", np.array([2, 3], np.int64)),
         const("st", np.array([-3, 1], np.int64)),
         const("en", np.array([1000, 2], np.int64)),
         const("axs", np.array([2, 0], np.int64)),
         const("pads", np.array([0, 1, 0, 0, 0, 2], np.int64)),
         const("pv", np.float32(0.25))], opset=13),
    "slice_steps": model(  # x[:, 1::2, ::2, 1::2] and x[:, :, 1::2]
        [H("Slice", ["x", "st", "en", "axs", "stp"], ["s"]),
         H("Slice", ["x", "st2", "en2", "axs2", "stp2"], ["t"])],
        [("x", [2, 7, 9, 8])], ["s", "t"],
        [const("st", np.array([1, 0, 1], np.int64)),
         const("en", np.array([7, 9, 8], np.int64)),
         const("axs", np.array([1, 2, 3], np.int64)),
         const("stp", np.array([2, 2, 2], np.int64)),
         const("st2", np.array([1], np.int64)),
         const("en2", np.array([1000], np.int64)),
         const("axs2", np.array([2], np.int64)),
         const("stp2", np.array([3], np.int64))], opset=13),
    "gather_tensor_expand": model(
        [H("Gather", ["x", "i"], ["g"], axis=1),
         H("Gather", ["x", "j"], ["h"], axis=-1),
         H("Expand", ["g", "shp"], ["e"])], [("x", [2, 3, 4])], ["h", "e"],
        [const("i", np.int64(2)), const("j", np.array([3, 0, 3], np.int64)),
         const("shp", np.array([3, 1, 1], np.int64))]),
    "hardsigmoid_hardswish": model(
        [H("HardSigmoid", ["x"], ["s"], alpha=0.3, beta=0.4),
         H("HardSwish", ["x"], ["w"])], [("x", [4, 5])], ["s", "w"]),
    "activations_and_constants": model(
        [H("Constant", [], ["k"], value_float=0.5), H("Mul", ["x", "k"], ["m"]),
         H("Sigmoid", ["m"], ["s"]), H("Tanh", ["s"], ["t"]),
         H("Relu", ["t"], ["r"]), H("Sub", ["r", "x"], ["y"])],
        [("x", [3, 3])], ["y"]),
    # Einsum as a (batched) matmul: MaxViT's two, a transposed output, a
    # contraction over two letters, and a plain matrix product
    "einsum_attention": model(
        [H("Einsum", ["q", "k"], ["s"], equation="B G H I D, B G H J D -> B G H I J"),
         H("Einsum", ["s", "v"], ["y"], equation="bghij,bghjd->bghid")],
        [("q", [2, 2, 3, 4, 5]), ("k", [2, 2, 3, 6, 5]), ("v", [2, 2, 3, 6, 7])],
        ["s", "y"]),
    "einsum_transposed_out": model(
        [H("Einsum", ["a", "b"], ["y"], equation="bik,bkj->jbi")],
        [("a", [2, 3, 4]), ("b", [2, 4, 5])], ["y"]),
    "einsum_two_contracted": model(
        [H("Einsum", ["a", "w"], ["y"], equation="nchw,khw->nck")],
        [("a", [2, 3, 4, 5])], ["y"], [const("w", W(6, 4, 5))]),
    "einsum_matmul": model(
        [H("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")],
        [("a", [3, 4]), ("b", [4, 5])], ["y"]),
    # GatherND with constant indices (batch_dims 0 and 1), IsNaN, Reciprocal
    "gathernd_isnan_reciprocal": model(
        [H("GatherND", ["x", "i0"], ["g0"]),
         H("GatherND", ["x", "i1"], ["g1"], batch_dims=1),
         H("Mul", ["x", "z"], ["xz"]), H("Div", ["xz", "z"], ["q"]),
         H("IsNaN", ["q"], ["n"]),  # 0 / 0 in column 0: NaN, made 0
         H("Where", ["n", "zero", "q"], ["w"]),
         H("Reciprocal", ["g0"], ["r"])],
        [("x", [2, 3, 4])], ["g0", "g1", "w", "r"],
        [const("i0", np.array([[1, 2], [0, 0], [1, 1]], np.int64)),
         const("i1", np.array([[2], [0]], np.int64)),
         const("z", np.array([0, 1, 2, 3], np.float32)),
         const("zero", np.float32(0))]),
    # GatherND naming every row in order (torch.export's padding mask,
    # mask[arange(B)[:, None, None, None], arange(S)]): imported as a reshape
    "gathernd_identity": model(
        [H("GatherND", ["m", "iid"], ["g"])],
        [("m", [2, 3])], ["g"],
        [const("iid", np.stack(np.meshgrid(np.arange(2), np.arange(3),
                                           indexing="ij"), -1)
               .reshape(2, 1, 1, 3, 2).astype(np.int64))]),
}


# cases also imported, exported and run again: the operators the export
# must contain
ROUND_TRIP = {"neg_exp_log_cos_sin": {"Neg", "Exp", "Log", "Cos", "Sin"}}


def main():
    superopt = sys.argv[1]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in CASES.items():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            d = os.path.join(tmp, name)
            os.mkdir(d)
            r = subprocess.run([superopt, "run", path, "--dump", d],
                               capture_output=True, text=True)
            if r.returncode:
                fails.append(f"{name}: superopt failed: {r.stderr.strip()}")
                continue
            vals = {"input": {}, "output": []}
            for line in open(os.path.join(d, "manifest.tsv")):
                kind, nm, fn = line.rstrip("\n").split("\t")
                a = np.load(os.path.join(d, fn))
                if kind in ("input", "weight"):  # an input only gathered
                    vals["input"][nm] = a       # from is a weight (a table)
                elif kind == "output":
                    vals["output"].append(a)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            ref = sess.run(None, {i.name: vals["input"][i.name]
                                  for i in sess.get_inputs()})
            worst = 0.0
            for want, got in zip(ref, vals["output"]):
                if want.shape != got.shape:
                    fails.append(f"{name}: shape {got.shape} vs {want.shape}")
                    break
                scale = float(np.max(np.abs(want))) or 1.0
                err = float(np.max(np.abs(got - want))) / scale
                worst = err if not err <= worst else worst  # NaN sticks
            if name in ROUND_TRIP:  # import, export, onnxruntime again
                back = os.path.join(tmp, name + ".back.onnx")
                gr = os.path.join(tmp, name + ".graph")
                r = subprocess.run([superopt, "import", path, "-o", gr],
                                   capture_output=True, text=True)
                r = r if r.returncode else subprocess.run(
                    [superopt, "export", gr, "-o", back],
                    capture_output=True, text=True)
                if r.returncode:
                    fails.append(f"{name}: round trip: {r.stderr.strip()}")
                    continue
                types = {n.op_type for n in onnx.load(back).graph.node}
                if not ROUND_TRIP[name] <= types:
                    fails.append(f"{name}: exported {sorted(types)}")
                sess = ort.InferenceSession(back,
                                            providers=["CPUExecutionProvider"])
                again = sess.run(None, {i.name: vals["input"][i.name]
                                        for i in sess.get_inputs()})
                for want, got in zip(ref, again):
                    scale = float(np.max(np.abs(want))) or 1.0
                    err = float(np.max(np.abs(got - want))) / scale
                    worst = err if not err <= worst else worst
            print(f"{name}: relative error {worst:.2e}")
            if not worst <= TOL:
                fails.append(f"{name}: relative error {worst:.2e}")
    for f in fails:
        print("FAIL:", f)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
