"""test_dropin.py: what the Python API took over from the CLI (issue 44):
`superopt import`'s options (input shapes, data inputs, dims), typed buffers
(int64 token ids, int32, bool) and their errors, weight values set on a
graph and on a runner, the drop-in ONNX export (`export --like`: the
original's names and opset, fused nodes written as ONNX operators) checked
against onnxruntime on a small BERT, and gen-rules / export-rules as calls."""
import os

import numpy as np
import pytest

import superopt

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

HERE = os.path.dirname(os.path.abspath(__file__))
# the repository's small BERT export (tests/install.sh copies it out of the
# tree it hides, and names it here)
BERT = os.environ.get("SUPEROPT_TEST_BERT") or os.path.join(
    HERE, "..", "..", "models", "onnx", "exports", "bert.legacy.onnx")
if not os.path.exists(BERT):
    pytest.skip("no %s (models/onnx/exports/ of the repository)" % BERT,
                allow_module_level=True)
SHAPES = {"input_ids": (2, 16), "attention_mask": (2, 16)}


def tokens():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, (2, 16)).astype(np.int64)
    mask = np.ones((2, 16), np.int64)
    mask[1, 10:] = 0
    return ids, mask


def ort_run(model, ids, mask):
    s = ort.InferenceSession(model if isinstance(model, (str, bytes)) else
                             model.SerializeToString(),
                             providers=["CPUExecutionProvider"])
    return s.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def names(m):
    g = m.graph
    return {v.name for v in list(g.input) + list(g.output)} | \
        {t.name for t in g.initializer}


def test_import_options():
    with pytest.raises(superopt.SuperoptError, match="--input-shape"):
        superopt.load(BERT)  # dynamic batch and sequence
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.load(BERT, input_shapes=["input_ids=2xq"])
    assert e.value.code == 1
    assert "bad --input-shape 'input_ids=2xq'" in e.value.message
    with pytest.raises(superopt.SuperoptError, match="--data-input 'nosuch'"):
        superopt.load_onnx(BERT, input_shapes=SHAPES, data_inputs=["nosuch"])
    g = superopt.load(BERT, input_shapes=SHAPES)
    assert g.inputs == [("input_ids", (2, 16)), ("attention_mask", (2, 16))]
    assert g.input_dtypes == [np.int64, np.int64]
    assert g.output_dtypes == [np.float32]
    # the same strings as the CLI's, from a ModelProto
    g2 = superopt.load_onnx(onnx.load(BERT), name=BERT,
                            input_shapes=["input_ids=2x16",
                                          "attention_mask=2x16"])
    assert g2.text() == g.text()


def test_import_option_dims():
    """--dim as load(..., dims=...): the model's named dynamic dimensions
    bound, the graph --input-shape gives; the CLI's message when bad."""
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.load(BERT, dims=["seq"])
    assert e.value.code == 1
    assert "bad --dim 'seq' (expected NAME=SIZE" in e.value.message
    with pytest.raises(superopt.SuperoptError, match="--input-shape"):
        superopt.load(BERT, dims={"seq": 16})  # batch still dynamic
    g = superopt.load(BERT, input_shapes=SHAPES)
    assert superopt.load(BERT, dims={"batch": 2, "seq": 16}).text() == \
        g.text()
    g2 = superopt.load_onnx(onnx.load(BERT), name=BERT,
                            dims=["batch=2", "seq=16"])
    assert g2.text() == g.text()


def test_token_ids_run_like_onnxruntime():
    g = superopt.load(BERT, input_shapes=SHAPES)
    ids, mask = tokens()
    ref = ort_run(BERT, ids, mask)
    (y,) = g.run([ids, mask])
    assert y.dtype == np.float32
    assert np.abs(y - ref).max() <= 1e-4 * max(1, np.abs(ref).max())
    (y32,) = g.run({"input_ids": ids.astype(np.int32),
                    "attention_mask": mask.astype(np.int32)})
    assert np.array_equal(y, y32)
    with pytest.raises(superopt.SuperoptError) as e:
        g.run([ids.astype(np.float32), mask])
    assert e.value.code == 1
    assert "input 0 (input_ids) is int64, not float32" in e.value.message
    big = ids.copy()
    big[0, 3] = 1 << 25
    with pytest.raises(superopt.SuperoptError, match="beyond"):
        g.run([big, mask])


def test_weights_on_graph_and_runner():
    g = superopt.parse("graph t\ninput x: [2,3]\nweight w: [2,3]\n"
                       "y = ewmul(x, w)\noutput y\n")
    assert g.weights == [("w", (2, 3), np.float32, False)]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.full((2, 3), 2.0, np.float32)
    r = g.runner()
    r.set_weight("w", w)
    assert np.array_equal(r.run([x])[0], 2 * x)
    r.set_weight("w", 3 * w)
    assert np.array_equal(r.run([x])[0], 6 * x)
    with pytest.raises(superopt.SuperoptError, match=r"shape \[2,3\], not "
                       r"\[3,2\]"):
        r.set_weight("w", w.T)
    with pytest.raises(superopt.SuperoptError, match="no weight 'v'"):
        r.set_weight("v", w)
    g.set_weight("w", -w)
    assert g.weights[0][3] is True
    assert np.array_equal(g.run([x])[0], -2 * x)


def test_dropin_export_like_onnxruntime():
    """Optimized (fused: element-wise chains become fused nodes) and exported
    with like: ONNX operators only, the original's interface names, opset
    and initializer names, and onnxruntime computes what the original
    does."""
    g = superopt.load(BERT, input_shapes=SHAPES)
    h, rep = g.optimize(no_rules=True, budget=20)  # the pass rules: fast
    assert rep.fused_nodes > 0
    orig = onnx.load(BERT)
    data, er = h.export_onnx_bytes(like=BERT, report=True)
    m = onnx.load_from_string(data)
    onnx.checker.check_model(m)
    assert er.like_opset == 17 and er.opset == 17 and er.renamed > 0
    assert [i.name for i in m.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in m.graph.output] == ["y"]
    assert all(n.domain in ("", "ai.onnx") for n in m.graph.node)
    plain = onnx.load_from_string(h.export_onnx_bytes())
    assert len(names(m) & names(orig)) > len(names(plain) & names(orig))
    assert h.export_onnx(like=orig) == m  # a ModelProto as like
    ids, mask = tokens()
    ref = ort_run(BERT, ids, mask)
    got = ort_run(data, ids, mask)
    assert np.abs(got - ref).max() <= 1e-4 * max(1, np.abs(ref).max())


def test_save_like(tmp_path):
    g = superopt.load(BERT, input_shapes=SHAPES)
    rep = g.save(tmp_path / "x.onnx", like=BERT)
    assert rep.renamed > 0
    assert open(tmp_path / "x.onnx", "rb").read() == \
        g.export_onnx_bytes(like=BERT)
    with pytest.raises(superopt.SuperoptError, match="nosuch.onnx"):
        g.save(tmp_path / "y.onnx", like=tmp_path / "nosuch.onnx")
    assert not os.path.exists(tmp_path / "y.onnx")
    assert g.save(tmp_path / "x.graph") is None


def test_gen_rules_and_export_rules(tmp_path):
    seen = []
    path, rep = superopt.gen_rules(max_ops=2, ops="relu,ewadd",
                                   output=tmp_path / "g.rules", threads=1,
                                   progress=lambda *a: seen.append(a),
                                   report=True)
    assert rep.written > 0 and rep.proven == rep.written
    assert {s for s, _, _ in seen} >= {"enumerate", "verify"}
    data, xr = superopt.export_rules(path, "json")
    assert xr.exported == rep.written and data.lstrip()[:1] in (b"{", b"[")
    xr2 = superopt.export_rules(path, "json", output=tmp_path / "g.json")
    assert xr2 == xr and open(tmp_path / "g.json", "rb").read() == data
    with pytest.raises(superopt.SuperoptError, match="format must be"):
        superopt.export_rules(path, "xml")


def test_export_like_keeps_dynamic_axes(tmp_path):
    """The API's export with like keeps the original's dynamic batch (as
    `export --like`): the file names it, its reshape target copies it, and
    onnxruntime runs it at another batch as the original."""
    h, T = onnx.helper, onnx.TensorProto
    nodes = [h.make_node("Relu", ["x"], ["r"]),
             h.make_node("Shape", ["r"], ["s"]),
             h.make_node("Slice", ["s", "z", "o"], ["b"]),
             h.make_node("Concat", ["b", "hw"], ["t"], axis=0),
             h.make_node("Reshape", ["r", "t"], ["y"])]
    inits = [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("z", [0]), ("o", [1]), ("hw", [2, 2]))]
    gp = h.make_graph(nodes, "dyn", [h.make_tensor_value_info(
        "x", T.FLOAT, ["batch", 4])], [h.make_tensor_value_info(
            "y", T.FLOAT, ["batch", 2, 2])], inits)
    m = h.make_model(gp, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = str(tmp_path / "dyn.onnx")
    onnx.save(m, path)
    g = superopt.load(path, input_shapes=["x=2x4"])
    out = onnx.load_from_string(g.export_onnx_bytes(like=path))
    dims = [d.dim_param or d.dim_value
            for d in out.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 4]
    x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    got = ort.InferenceSession(out.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(
                                   None, {"x": x})[0]
    assert np.array_equal(got, np.maximum(x, 0).reshape(5, 2, 2))
