"""conftest.py: shared fixtures of the Python API tests: a small ONNX model
(conv, batch norm, relu, two sibling convolutions, global pooling, Gemm) with
random initializers, built with onnx.helper."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _init(name, shape, rng, lo=-0.5, hi=0.5):
    return numpy_helper.from_array(
        rng.uniform(lo, hi, shape).astype(np.float32), name)


@pytest.fixture(scope="session")
def small_model():
    rng = np.random.default_rng(7)
    inits = [
        _init("w1", (8, 3, 3, 3), rng),
        _init("b1", (8,), rng),
        _init("bn_s", (8,), rng, 0.5, 1.5),
        _init("bn_b", (8,), rng),
        _init("bn_m", (8,), rng),
        _init("bn_v", (8,), rng, 0.5, 1.5),
        _init("w2", (8, 8, 1, 1), rng),
        _init("w3", (8, 8, 1, 1), rng),
        _init("fc_w", (10, 8), rng),
        _init("fc_b", (10,), rng),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("Conv", ["r1", "w3"], ["c3"]),
        helper.make_node("Add", ["c2", "c3"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="session")
def x():
    return np.random.default_rng(3).uniform(-1, 1, (1, 3, 8, 8)).astype(
        np.float32)
