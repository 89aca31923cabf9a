#!/usr/bin/env python3
"""small_weighted.py: writes small_weighted.onnx beside this file, a small
network WITH initializers (conv + batch norm + relu, a 1x1 conv, a residual
add, pooling, a Gemm), opset 17, for the tests of weight values (sidecar,
drop-in export). Deterministic (seed 0); needs onnx and numpy (.venv)."""
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(0)


def init(name, shape, pos=False):
    a = rng.standard_normal(shape).astype(np.float32)
    if pos:
        a = np.abs(a) + 0.5
    return nh.from_array(a, name)


inits = [init("w1", (8, 3, 3, 3)), init("b1", (8,)), init("g", (8,), True),
         init("be", (8,)), init("m", (8,)), init("v", (8,), True),
         init("w2", (8, 8, 1, 1)), init("fc", (8, 10)), init("fb", (10,))]
nodes = [h.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
         h.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn1"]),
         h.make_node("Relu", ["bn1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2"], ["c2"]),
         h.make_node("Add", ["c2", "r1"], ["a1"]),
         h.make_node("GlobalAveragePool", ["a1"], ["gp"]),
         h.make_node("Flatten", ["gp"], ["fl"]),
         h.make_node("Gemm", ["fl", "fc", "fb"], ["logits:0"])]
g = h.make_graph(nodes, "small", [h.make_tensor_value_info("image", T.FLOAT, [1, 3, 8, 8])],
                 [h.make_tensor_value_info("logits:0", T.FLOAT, [1, 10])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "small_weighted.onnx"))
