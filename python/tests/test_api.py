"""test_api.py: the Python API over libsuperopt.so: ONNX in (path, bytes,
ModelProto), optimize with options and a report, ONNX out with the weights
kept, runs on the CPU against onnxruntime, gen_rules, and errors raised as
SuperoptError carrying the library's message."""
import os

import numpy as np
import pytest

import superopt

ort = pytest.importorskip("onnxruntime")


def ort_run(model, x):
    s = ort.InferenceSession(model.SerializeToString(),
                             providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def close(a, b, tol=1e-4):
    return np.max(np.abs(a - b)) <= tol * max(1.0, np.max(np.abs(b)))


def rules_in(rel):
    """The rules of installed rules file rel ("rule " lines)."""
    with open(superopt.data_path(rel)) as f:
        return sum(line.startswith("rule ") for line in f)


def test_build_info_and_data():
    assert superopt.version() == "0.1.0"
    info = superopt.build_info()
    assert "commit: " in info and "backends: CPU" in info
    assert os.path.exists(superopt.data_path("rules/default.rules"))


def test_load_forms(small_model, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(small_model.SerializeToString())
    for src in (small_model, str(path), path, small_model.SerializeToString()):
        g = superopt.load_onnx(src)
        assert g.inputs == [("x", (1, 3, 8, 8))]
        assert g.outputs[0][1] == (1, 10)
        assert g.num_nodes >= 9
    assert superopt.load(str(path)).num_nodes == g.num_nodes


def test_run_matches_onnxruntime(small_model, x):
    g = superopt.load_onnx(small_model)
    (y,) = g.run([x])
    assert y.shape == (1, 10) and y.dtype == np.float32
    assert close(y, ort_run(small_model, x))
    (y2,) = g.run({"x": x.astype(np.float64)})  # converted to float32
    assert np.array_equal(y, y2)


def test_optimize_roundtrip(small_model, x, tmp_path):
    g = superopt.load_onnx(small_model)
    # fuse=False: the graph is exported to ONNX, which has no fused
    # operator (the CLI does not fuse an .onnx output either)
    h, rep = g.optimize(device="h100", alpha=1.05, budget=50,
                        db=str(tmp_path / "cost.sqlite"), fuse=False)
    assert isinstance(rep, superopt.OptimizeReport)
    assert rep.nodes_before == g.num_nodes
    assert rep.nodes_after == h.num_nodes
    # the default: no pass (none folds the batchnorm by hand), the rules of
    # the installed default.rules and extended.rules (a rule folds it)
    assert rep.bn_folded == 0
    assert rep.rules_read == (rules_in("rules/default.rules") +
                              rules_in("rules/extended.rules"))
    assert rep.cost_after_us < rep.cost_before_us
    assert rep.max_rel_error is not None and rep.max_rel_error <= 1e-4
    assert rep.rules > 1000  # the installed default library
    # no mutant pays on this model; the fields follow the C struct
    assert rep.mutants_applied == 0 and rep.mutants_saved_us == 0
    # every applied rule of the default library is proven again
    assert (rep.rules_reproved > 0) == (rep.rules_applied > 0)
    assert rep.rules_demoted == 0
    h0, rep0 = g.optimize(device="h100", alpha=1.05, budget=50,
                          db=str(tmp_path / "cost.sqlite"), mutants=False,
                          fuse=False)
    assert rep0.cost_after_us == rep.cost_after_us
    assert rep0.mutants_applied == 0
    m = h.export_onnx()
    assert isinstance(m, superopt_onnx().ModelProto)
    assert len(m.graph.initializer) > 0  # weights kept with their values
    ref = ort_run(small_model, x)
    assert close(ort_run(m, x), ref)  # onnxruntime on our export
    assert close(h.run([x])[0], ref)  # our executor on the optimized graph
    h2 = superopt.load_onnx(m)  # and back in (constants folded at import)
    assert h2.num_nodes <= h.num_nodes
    assert close(h2.run([x])[0], ref)


def superopt_onnx():
    import onnx
    return onnx


def test_optimize_dtype(small_model, x, tmp_path):
    """dtype="bf16": the result is a bf16 graph (float32 buffers in and
    out), its check passed at bf16's tolerance, close to onnxruntime's
    float32 at bf16's precision; a bad dtype is refused."""
    g = superopt.load_onnx(small_model)
    h, rep = g.optimize(device="cpu", budget=20, dtype="bf16",
                        db=str(tmp_path / "cost.sqlite"))
    assert "bf16[" in h.text()
    assert rep.max_rel_error is not None
    assert close(h.run([x])[0], ort_run(small_model, x), tol=5e-2)
    with pytest.raises(superopt.SuperoptError, match="dtype must be"):
        g.optimize(device="cpu", budget=1, dtype="i64",
                   db=str(tmp_path / "cost.sqlite"))


def test_taso_spelling(small_model, tmp_path):
    g = superopt.load_onnx(small_model)
    h = superopt.optimize(g, 1.0, 10, db=str(tmp_path / "c.sqlite"),
                          fuse=False)
    assert isinstance(h, superopt.Graph)
    assert superopt.export_onnx(h).graph.node


def test_parse_and_text():
    text = "graph tiny\ninput x: [2,3]\nr = relu(x)\noutput r\n"
    try:
        g = superopt.parse(text)
    except superopt.SuperoptError as e:
        pytest.fail(str(e))
    assert superopt.parse(g.text()).text() == g.text()
    (y,) = g.run([np.array([[-1, 2, -3], [4, -5, 6]], np.float32)])
    assert np.array_equal(y, [[0, 2, 0], [4, 0, 6]])


def test_gen_rules_then_optimize(small_model, tmp_path):
    out = superopt.gen_rules(max_ops=2, ops=["relu", "ewadd"],
                             output=tmp_path / "g.rules")
    text = open(out).read()
    assert text.startswith("# superopt rules v1") and "rule r" in text
    g = superopt.load_onnx(small_model)
    # the default (no pass) and passes="hand": the file's rules alone
    h, rep = g.optimize(rules=out, budget=20, db=str(tmp_path / "c.sqlite"))
    assert 0 < rep.rules < 100 and rep.rules_read == text.count("\nrule ")
    h, rep1 = g.optimize(rules=out, budget=20, db=str(tmp_path / "c.sqlite"),
                         passes="hand")
    assert rep1.rules_read == rep.rules_read
    # passes="rules", the ablation: the pass rules join
    h, rep2 = g.optimize(rules=out, budget=20, db=str(tmp_path / "c.sqlite"),
                         passes="rules")
    assert rep2.rules > rep.rules
    assert rep2.rules_read == rep.rules_read + rules_in("rules/passes.rules")
    # a list of files: read in order as one set (as --rules A --rules B)
    ext = superopt.data_path("rules/extended.rules")
    h, rep3 = g.optimize(rules=[out, ext], budget=20,
                         db=str(tmp_path / "c.sqlite"))
    assert rep3.rules_read == rep.rules_read + rules_in("rules/extended.rules")
    with pytest.raises(superopt.SuperoptError, match="given twice"):
        g.optimize(rules=[out, out], db=str(tmp_path / "c.sqlite"))


def test_optimize_progress(small_model, tmp_path):
    """progress: every stage of the pipeline in order, the search's regions
    (done of total, elapsed growing); an exception raised in it is raised
    by optimize."""
    g = superopt.load_onnx(small_model)
    seen = []
    h, rep = g.optimize(budget=20, db=str(tmp_path / "c.sqlite"),
                        progress=lambda *a: seen.append(a))
    first = []
    for stage, _, _, _ in seen:
        first += [] if stage in first else [stage]
    assert first == ["rules", "batch", "costs", "passes", "search", "splits",
                     "prune", "reprove", "dtype", "fuse", "lower", "check"]
    regions = [(d, t) for s, d, t, _ in seen if s == "search" and t]
    assert regions and all(0 <= d < t for d, t in regions)
    times = [e for _, _, _, e in seen]
    assert times == sorted(times) and times[0] >= 0
    assert rep.rules_seconds > 0 and rep.check_seconds > 0

    def stop(stage, done, total, elapsed):
        if stage == "search":
            raise KeyboardInterrupt("stop")
    with pytest.raises(KeyboardInterrupt):
        g.optimize(budget=20, db=str(tmp_path / "c.sqlite"), progress=stop)
    with pytest.raises(superopt.SuperoptError, match="'none', 'rules' or"):
        g.optimize(passes="sometimes")


def test_errors(small_model, x, tmp_path):
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.load_onnx(b"not a protobuf")
    assert e.value.code == 2 and "<onnx>" in e.value.message
    bad = tmp_path / "bad.graph"
    bad.write_text("input x: [1,3,8,8]\n\ny = conv3d(x)\noutput y\n")
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.load(str(bad))
    assert e.value.code == 2
    assert "bad.graph:3:5: unknown operator 'conv3d'" in e.value.message
    g = superopt.load_onnx(small_model)
    with pytest.raises(superopt.SuperoptError) as e:
        g.optimize(device="tpu")
    assert e.value.code == 1 and "tpu" in e.value.message
    with pytest.raises(superopt.SuperoptError) as e:
        g.optimize(rules=str(tmp_path / "missing.rules"),
                   db=str(tmp_path / "c.sqlite"))
    assert e.value.code == 2 and "missing.rules" in e.value.message
    with pytest.raises(superopt.SuperoptError) as e:
        g.run([x[:, :2]])
    assert "shape (1, 2, 8, 8), expected (1, 3, 8, 8)" in e.value.message
    with pytest.raises(superopt.SuperoptError) as e:
        g.run([x], device="tpu")
    assert e.value.code == 1 and "unknown run device 'tpu'" in e.value.message
    with pytest.raises(superopt.SuperoptError) as e:
        g.run([x], streams=9)
    assert e.value.code == 1 and "streams must be 0..8, not 9" in e.value.message
    if not superopt.cuda_available():
        with pytest.raises(superopt.SuperoptError) as e:
            g.run([x], device="cuda")
        assert e.value.code == 4 and "cuda" in e.value.message


def test_missing_data(small_model, tmp_path, monkeypatch):
    """With SUPEROPT_DATA pointing at an empty folder the installed data is
    still found after it (it is a first choice, not the only one); with the
    default rules named explicitly missing, the message names the file."""
    monkeypatch.setenv("SUPEROPT_DATA", str(tmp_path))
    assert superopt.data_path("rules/default.rules") != str(
        tmp_path / "rules/default.rules")
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.data_path("rules/nothing.rules")
    assert e.value.code == 2
    assert str(tmp_path / "rules/nothing.rules") in e.value.message


def test_cuda_run(small_model, x):
    if not superopt.cuda_available():
        pytest.skip("no CUDA build or no GPU")
    g = superopt.load_onnx(small_model)
    (y,) = g.run([x], device="cuda")
    assert close(y, ort_run(small_model, x), 1e-3)  # TF32


def test_nul_in_a_path_is_refused(small_model, tmp_path):
    """A NUL inside a path or name ended the C string early:
    save("x.graph\\0.onnx") wrote x.graph (issue 40)."""
    g = superopt.load_onnx(small_model)
    target = tmp_path / "x.graph"
    for call in (lambda: g.save(str(target) + "\0.onnx"),
                 lambda: g.save(os.fsencode(str(target)) + b"\0.onnx"),
                 lambda: superopt.load(str(target) + "\0.onnx"),
                 lambda: superopt.parse("input x: [1]\noutput x\n", "a\0b"),
                 lambda: superopt.load_onnx(small_model, name="m\0.onnx"),
                 lambda: superopt.data_path("rules\0/x"),
                 lambda: g.optimize(rules=str(tmp_path / "r\0.rules")),
                 lambda: g.optimize(db=str(tmp_path / "c\0.sqlite")),
                 lambda: g.optimize(device="h100\0x"),
                 lambda: g.runner(device="cpu\0x"),
                 lambda: superopt.gen_rules(output=str(target) + "\0.rules")):
        with pytest.raises(ValueError, match="NUL"):
            call()
    assert not os.listdir(tmp_path), "nothing written"


def test_out_of_range_options_are_refused(small_model, tmp_path):
    """Values ctypes would have wrapped (2**32 + 5 became 5) and values the
    CLI refuses both raise SuperoptError 1 with the option's name."""
    g = superopt.load_onnx(small_model)
    db = str(tmp_path / "c.sqlite")
    for kw, name in ((dict(budget=2**32 + 5), "budget"),
                     (dict(budget=-1), "budget"),
                     (dict(patience=-3), "patience"),
                     (dict(max_depth=-7), "max_depth"),
                     (dict(batch=2**31), "batch"),
                     (dict(batch=-2), "batch"),
                     (dict(budget=1.5), "budget"),
                     (dict(alpha=float("nan")), "alpha"),
                     (dict(alpha=1000.0), "alpha"),
                     (dict(time_limit=1e9), "time_limit")):
        with pytest.raises(superopt.SuperoptError) as e:
            g.optimize(db=db, **kw)
        assert e.value.code == 1 and name in e.value.message, (kw, e.value)
    for kw, name in ((dict(threads=2**32), "threads"),
                     (dict(threads=-1), "threads"),
                     (dict(threads=5000), "threads"),
                     (dict(streams=2**32 + 1), "streams"),
                     (dict(seed=-1), "seed"),
                     (dict(seed=2**64), "seed")):
        with pytest.raises(superopt.SuperoptError) as e:
            g.runner(**kw)
        assert e.value.code == 1 and name in e.value.message, (kw, e.value)


def test_gen_rules_error_keeps_the_reason(tmp_path):
    """The message is the reason (through the CLI it once was the usage
    hint "(see 'superopt gen-rules --help')"); now the library's own."""
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.gen_rules(max_ops=2, ops=["nosuch"],
                           output=tmp_path / "g.rules")
    assert e.value.code == 1
    assert "'nosuch' is not a generation operator" in e.value.message
    assert "--help" not in e.value.message
    with pytest.raises(superopt.SuperoptError) as e:
        superopt.gen_rules(max_ops=99)
    assert "max_ops must be 1..5, not 99" in e.value.message
