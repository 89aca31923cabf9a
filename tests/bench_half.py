"""bench_half.py: the CPU-checkable side of the half-precision benchmark
(issue 42; scripts/benchlib.py, scripts/bench-gpu.py and
scripts/bench-transformers.py --dtype/--accuracy): the --dtype list, the
accuracy metric, bf16 rounding, safetensors files read by `superopt run
--inputs` and written by `--outputs` (through the binary), geomeans and the
summary lines, the scripts' argument parsing and table writing. PyTorch is
not needed: where it is absent the scripts are imported over a stub (the
GPU paths are not run here).

usage: python -m pytest tests/bench_half.py (SUPEROPT_BIN: the binary; the
binary's tests skip without it)
"""
import argparse
import importlib.util
import math
import os
import subprocess
import sys
import types

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import benchlib as BL  # noqa: E402

BIN = os.environ.get("SUPEROPT_BIN", os.path.join(ROOT, "build", "superopt"))


# ---- benchlib ----------------------------------------------------------------

def test_parse_dtypes():
    assert BL.parse_dtypes("bf16") == ["bf16"]
    assert BL.parse_dtypes("bf16,f16,bf16") == ["bf16", "f16"]
    assert BL.parse_dtypes("f16, f32") == ["f16", "f32"]
    for bad in ("fp16", "bf16,", "", "float16"):
        with pytest.raises(ValueError):
            BL.parse_dtypes(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        BL.dtype_arg("half")


def test_run_args_and_folders():
    assert BL.run_dtype_args("f32") == []
    assert BL.run_dtype_args("bf16") == ["--dtype", "bf16"]
    assert BL.dir_for("o/{dtype}/b1", "f16") == "o/f16/b1"
    assert BL.dir_for("o", "f32") == "o"
    assert BL.dir_for("o", "bf16") is None  # float32 graphs are not half
    assert BL.dir_for(None, "bf16") is None


def test_work_order_dtype_first():
    w = BL.work_order(["bf16", "f16"], ["a", "b"], "1,16")
    assert w[:4] == [("bf16", "a", 1), ("bf16", "a", 16), ("bf16", "b", 1),
                     ("bf16", "b", 16)]
    assert [d for d, _, _ in w] == ["bf16"] * 4 + ["f16"] * 4


def test_bf16_rounding():
    x = np.array([1.0, 1.00390625, 1.01171875, -2.5, 3e38, 0.0],
                 dtype=np.float32)
    # 1 + 2^-8 is a tie: to even (1.0); 1 + 3 * 2^-8 ties up to 1 + 2^-6
    assert BL.bf16_bits(x).tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC020,
                                        0x7F62, 0]
    assert BL.bf16_value(BL.bf16_bits(x))[3] == -2.5
    assert np.isnan(BL.bf16_value(BL.bf16_bits(np.array([np.nan],
                                                        np.float32))))[0]


def test_safetensors_round_trip(tmp_path):
    p = str(tmp_path / "t.safetensors")
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
    ids = np.array([[1, 2**40]], dtype=np.int64)
    BL.write_safetensors(p, {"a": a, "ids": ids,
                             "h": np.array([0.5, 65504], np.float16),
                             "m": np.array([True, False]),
                             "b": ("BF16", np.array([1.0, 1.01171875],
                                                    np.float32))})
    with open(p, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
    assert n % 8 == 0
    r = BL.read_safetensors(p)
    assert list(r) == ["a", "ids", "h", "m", "b"]
    assert np.array_equal(r["a"], a) and r["a"].dtype == np.float32
    assert r["ids"].tolist() == [[1, 2**40]]
    assert r["h"].tolist() == [0.5, 65504.0]
    assert r["m"].tolist() == [True, False]
    assert r["b"].tolist() == [1.0, 1.015625]
    with pytest.raises(ValueError):
        BL.write_safetensors(p, {"c": np.zeros(2, np.complex64)})


def test_rel_err():
    b = np.array([10.0, -4.0, 0.0, 1e-6])
    a = b + np.array([0.1, 0.0, 0.05, 1e-6])  # 1e-6 off by 100%: no blow-up
    assert BL.rel_err(a, b) == pytest.approx(0.01)
    assert BL.rel_err(b, b) == 0.0
    with pytest.raises(ValueError, match="all zero"):
        BL.rel_err(np.zeros(3), np.zeros(3))  # a run on zeros measures nothing
    assert BL.rel_err(np.ones(3), np.zeros(3)) == math.inf
    assert BL.rel_err(np.array([np.nan, 1.0]), np.array([1.0, 1.0])) == \
        math.inf
    # over several outputs: the largest difference over the largest value
    assert BL.rel_err([np.array([1.0]), np.array([102.0])],
                      [np.array([2.0]), np.array([100.0])]) == \
        pytest.approx(0.02)
    with pytest.raises(ValueError):
        BL.rel_err([np.ones(2)], [np.ones(3)])
    assert BL.accuracy_verdict(0.02, 0.01) == "ok"
    assert BL.accuracy_verdict(0.021, 0.01) == "MISS"
    assert BL.accuracy_verdict("error: x", 0.01) == ""


def test_fill_accuracy(monkeypatch):
    """Both scripts' accuracy columns: PyTorch's outputs taken with TF32
    off, the flags restored after, a failing step recorded in its field."""
    flags = types.SimpleNamespace(allow_tf32=True)
    t = types.ModuleType("torch")
    t.backends = types.SimpleNamespace(
        cuda=types.SimpleNamespace(matmul=flags),
        cudnn=types.SimpleNamespace(allow_tf32=True))
    monkeypatch.setitem(sys.modules, "torch", t)
    seen = []

    def ours():
        return [np.array([1.0, 2.01])], [np.array([1.0, 2.0])]

    def theirs():
        seen.append((flags.allow_tf32, t.backends.cudnn.allow_tf32))
        return [np.array([1.0, 2.02])], [np.array([1.0, 2.0])]

    row = {}
    BL.fill_accuracy(row, ours, theirs)
    assert row["acc-ours"] == pytest.approx(0.005)
    assert row["acc-torch"] == pytest.approx(0.01)
    assert row["acc"] == "ok" and seen == [(False, False)]
    assert flags.allow_tf32 and t.backends.cudnn.allow_tf32

    def fails(msg):
        def f():
            raise RuntimeError(msg)
        return f

    row = {}
    BL.fill_accuracy(row, fails("run failed\nexit 3"), fails("no GPU\nat x"))
    assert row == {"acc-ours": "error: exit 3", "acc-torch": "error: no GPU",
                   "acc": ""}
    assert flags.allow_tf32 and t.backends.cudnn.allow_tf32


def rows3():
    return [
        {"graph": "a", "batch": 1, "dtype": "bf16", "opt/ro": 0.5},
        {"graph": "b", "batch": 1, "dtype": "bf16", "opt/ro": 0.8},
        {"graph": "c", "batch": 1, "dtype": "bf16", "opt/ro": 1.0},
        {"graph": "a", "batch": 16, "dtype": "bf16", "opt/ro": 0.7},
        {"graph": "b", "batch": 16, "dtype": "bf16", "ours-opt": "error: x"},
        {"graph": "a", "batch": 1, "dtype": "f16", "opt/ro": 0.6},
    ]


def test_deadline():
    """BL.deadline ends a block that runs past it (StepTimeout, the row's
    error) and leaves SIGALRM as it found it."""
    import signal
    import time
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(BL.StepTimeout, match="torch.compile: over 1 s"):
        with BL.deadline(1, "torch.compile"):
            time.sleep(3)
    assert signal.getsignal(signal.SIGALRM) is before
    with BL.deadline(5):
        x = sum(range(1000))
    assert x == 499500 and signal.alarm(0) == 0  # no alarm left pending


def test_geomean_and_summary():
    assert BL.geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert BL.geomean([0.5, "error", None, 2.0]) == pytest.approx(1.0)
    assert BL.geomean([]) is None
    assert BL.ratio(1.0, 2.0) == 0.5 and BL.ratio("x", 2.0) is None
    s = BL.summary(rows3())
    assert s[0].startswith("bf16 batch 1: geomean opt/ro = %.3f over 3 "
                           "networks (worst 1.000); above 0.95: c;"
                           % (0.4 ** (1 / 3)))
    assert s[0].endswith("missed")
    assert s[1].startswith("bf16 batch 16: geomean opt/ro = 0.700 over 1")
    assert s[1].endswith("met")
    assert s[2] == "bf16 batch 16: no opt/ro (a step failed or was " \
        "skipped): b"
    assert s[3].startswith("f16 batch 1: geomean opt/ro = 0.600")
    assert len(s) == 4


# ---- superopt run --inputs / --outputs from Python's files -------------------

def need_bin():
    if not os.access(BIN, os.X_OK):
        pytest.skip("no superopt binary at %s (SUPEROPT_BIN)" % BIN)


def run(*args):
    r = subprocess.run([BIN, "run"] + list(args), capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_run_reads_inputs_and_writes_outputs(tmp_path):
    need_bin()
    g = tmp_path / "g.graph"
    g.write_text("input x: [2,5]\ninput s: [2,5]\ny = relu(x)\n"
                 "z = ewmul(y, s)\noutput y, z\n")
    x = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5) * 1.01
    inp, out = str(tmp_path / "in.safetensors"), str(tmp_path / "o.st")
    BL.write_safetensors(inp, {"x": x})  # s: drawn
    run(str(g), "--inputs", inp, "--outputs", out)
    r = BL.read_safetensors(out)
    assert list(r) == ["y", "z"]
    assert np.array_equal(r["y"], np.maximum(x, 0))
    # bf16: the float32 file rounded to bf16, as the run's own draws are
    run(str(g), "--inputs", inp, "--outputs", out, "--dtype", "bf16")
    y = BL.read_safetensors(out)["y"]
    assert np.array_equal(y, BL.bf16_value(BL.bf16_bits(np.maximum(x, 0))))
    assert BL.rel_err(y, np.maximum(x, 0)) < 2 ** -8
    # a BF16 entry for a bf16 graph's input is taken as it is
    BL.write_safetensors(inp, {"x": ("BF16", x)})
    h = tmp_path / "h.graph"
    h.write_text("input x: bf16[2,5]\ny = relu(x)\noutput y\n")
    run(str(h), "--inputs", inp, "--outputs", out)
    assert np.array_equal(BL.read_safetensors(out)["y"], y)


# ---- the scripts: argument parsing and tables --------------------------------

def stub_torch(monkeypatch):
    """A stand-in torch (and torch.nn.functional) where PyTorch is absent:
    the scripts import, their GPU paths are not run."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    t = types.ModuleType("torch")
    nn = types.ModuleType("torch.nn")
    f = types.ModuleType("torch.nn.functional")
    for m in (t, f):
        m.__getattr__ = lambda name: (lambda *a, **k: None)
    t.nn, nn.functional = nn, f
    for name, m in (("torch", t), ("torch.nn", nn),
                    ("torch.nn.functional", f)):
        monkeypatch.setitem(sys.modules, name, m)


def load(file, name, monkeypatch):
    stub_torch(monkeypatch)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "scripts", file))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_bench_gpu_args_and_table(tmp_path, monkeypatch):
    bg = load("bench-gpu.py", "bench_gpu_t", monkeypatch)
    a = bg.build_parser().parse_args(
        ["--superopt", "S", "--models", "M", "--dtype", "bf16,f16",
         "--accuracy", "--optimized", "o/{dtype}/b1", "--budget", "400"])
    assert a.dtype == ["bf16", "f16"] and a.accuracy and a.budget == 400
    assert a.accuracy_batch == 1
    assert bg.build_parser().parse_args(
        ["--superopt", "S", "--models", "M"]).dtype == ["f32"]
    with pytest.raises(SystemExit):
        bg.build_parser().parse_args(["--superopt", "S", "--models", "M",
                                      "--dtype", "fp8"])
    (tmp_path / "o" / "bf16" / "b1").mkdir(parents=True)
    (tmp_path / "o" / "bf16" / "b1" / "n.graph").write_text("")
    a.optimized = str(tmp_path / "o" / "{dtype}" / "b1")
    assert bg.optimized_path(a, "models/n.graph", 1, "bf16") == \
        str(tmp_path / "o" / "bf16" / "b1" / "n.graph")
    assert bg.optimized_path(a, "models/n.graph", 1, "f16") is None
    # batch 16 with no batch-16 graph: the batch-1 one, and a note says so
    a.optimized16 = str(tmp_path / "o" / "{dtype}" / "b16")
    o1 = bg.optimized_path(a, "models/n.graph", 16, "bf16")
    assert o1 == str(tmp_path / "o" / "bf16" / "b1" / "n.graph")
    assert bg.fallback_note(a, o1, 16, "bf16") == \
        "batch-1 graph (no batch-16 one)"
    assert bg.fallback_note(a, o1, 1, "bf16") is None
    (tmp_path / "o" / "bf16" / "b16").mkdir(parents=True)
    (tmp_path / "o" / "bf16" / "b16" / "n.graph").write_text("")
    o16 = bg.optimized_path(a, "models/n.graph", 16, "bf16")
    assert o16.endswith("b16/n.graph")
    assert bg.fallback_note(a, o16, 16, "bf16") is None
    rows = rows3()
    rows[0].update({"acc-ours": 0.004, "acc-torch": 0.003, "acc": "ok"})
    rows[1].update({"acc-ours": 0.02, "acc-torch": 0.003, "acc": "MISS"})
    md = bg.write(str(tmp_path), rows, {"gpu": "none"})
    text = (tmp_path / "bench.md").read_text()
    assert text == md + "\n"
    assert "| graph | batch | dtype | ours |" in text
    assert "| a | 1 | bf16 |" in text and "| 0.004 | 0.003 | ok |" in text
    assert "bf16 batch 1: geomean opt/ro = 0.737 over 3" in text
    assert "accuracy: 1 of 2 rows within 2x PyTorch's error; beyond: " \
        "b/bf16/b1" in text
    rows[3]["ours-opt-graph"] = "batch-1 graph (no batch-16 one)"
    bg.write(str(tmp_path), rows, {})
    assert "%s batch %d bf16: ours-opt timed the batch-1 graph (no " \
        "batch-16 one)" % (rows[3]["graph"], rows[3]["batch"]) in \
        (tmp_path / "bench.md").read_text()
    # float32 rows alone: the columns as before
    bg.write(str(tmp_path), [{"graph": "a", "batch": 1, "opt/ro": 0.5}], {})
    assert "| dtype |" not in (tmp_path / "bench.md").read_text()
    assert bg.input_shapes("input x: [1,3,8,8]\ninput p: [4]\n", 16) == \
        {"x": [16, 3, 8, 8], "p": [4]}


def test_bench_gpu_export_tv(tmp_path, monkeypatch, capsys):
    """--export-tv: only the bench's torchvision networks (exit 2 naming
    the others); a network whose export fails is reported and the others
    go on (exit 1), leaving no .onnx behind."""
    bg = load("bench-gpu.py", "bench_gpu_x", monkeypatch)
    monkeypatch.setattr(sys, "argv", [
        "bench-gpu.py", "--superopt", "S", "--models", str(tmp_path),
        "--export-tv", "tv_resnet50,resnet50"])
    assert bg.main() == 2
    assert "not torchvision networks of the bench: resnet50" in \
        capsys.readouterr().err

    def broken(name, dev, dtype="f32"):
        raise RuntimeError("no torchvision here")
    monkeypatch.setattr(bg, "tv_model", broken)
    assert bg.export_tv("S", ["tv_vgg16", "tv_squeezenet"],
                        str(tmp_path / "g")) == ["tv_vgg16", "tv_squeezenet"]
    err = capsys.readouterr().err
    assert "export-tv tv_vgg16: no torchvision here" in err
    assert "export-tv tv_squeezenet:" in err
    assert os.listdir(str(tmp_path / "g")) == []
    monkeypatch.setattr(sys, "argv", [
        "bench-gpu.py", "--superopt", "S", "--models", str(tmp_path / "g"),
        "--export-tv", "tv_vgg16"])
    assert bg.main() == 1


def test_step_lines(monkeypatch, capsys):
    """Both benches name each step of a row on stderr as it starts."""
    bg = load("bench-gpu.py", "bench_gpu_s", monkeypatch)
    bg.step({"t0": 0}, {"graph": "nasnet_a", "batch": 16, "dtype": "bf16"},
            "torch.compile of the graph")
    assert "s] nasnet_a b16 bf16: torch.compile of the graph\n" in \
        capsys.readouterr().err
    bt = load("bench-transformers.py", "bench_tf_s", monkeypatch)
    bt.step({"net": "bert", "batch": 1, "dtype": "f16"}, "accuracy")
    assert "s] bert b1 f16: accuracy\n" in capsys.readouterr().err


def test_superopt_weights(tmp_path, monkeypatch):
    """bench-gpu.py's superopt_weights: the weights `superopt run` draws,
    by name (what a zoo graph's interpreter then runs), the dump folder
    removed; the same values on a second call (seed 1)."""
    need_bin()
    bg = load("bench-gpu.py", "bench_gpu_w", monkeypatch)
    g = tmp_path / "g.graph"
    g.write_text("input x: [2,4]\nweight w: [4,3]\nweight b: [3]\n"
                 "y = matmul(x, w, b)\noutput y\n")
    w = bg.superopt_weights(BIN, str(g), str(tmp_path / "d"))
    assert sorted(w) == ["b", "w"]
    assert w["w"].shape == (4, 3) and w["b"].shape == (3,)
    assert w["w"].dtype == np.float32 and np.any(w["w"] != 0)
    assert not (tmp_path / "d").exists()
    again = bg.superopt_weights(BIN, str(g), str(tmp_path / "d"))
    assert np.array_equal(again["w"], w["w"])
    with pytest.raises(RuntimeError):
        bg.superopt_weights(BIN, str(tmp_path / "none.graph"),
                            str(tmp_path / "d"))


def test_gpu_half_export_tv_plan(tmp_path):
    """gpu-half exports the torchvision networks with their weights first
    (EXPORT_TV=1, the default), not with EXPORT_TV=0 (DRY=1 prints the
    plan)."""
    gh = os.path.join(ROOT, "scripts", "gpu-half")
    line = "+ export-tv: the tv_* networks of NETS with their weights"
    for env, want in (({}, True), ({"EXPORT_TV": "0"}, False)):
        e = dict(os.environ, DRY="1", OUT=str(tmp_path), **env)
        r = subprocess.run([gh], env=e, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert (line in r.stdout) == want, r.stdout


def test_bench_transformers_rows_and_table(tmp_path, monkeypatch):
    bt = load("bench-transformers.py", "bench_tf_t", monkeypatch)
    a = bt.build_parser().parse_args(
        ["--superopt", "S", "--out", str(tmp_path), "--dtype", "bf16",
         "--accuracy"])
    assert a.dtype == ["bf16"] and a.accuracy
    assert bt.opt_graph("d/n.b1", "f32") == "d/n.b1.opt.graph"
    assert bt.opt_graph("d/n.b1", "bf16") == "d/n.b1.bf16.opt.graph"
    base = {"net": "bert", "batch": 1, "import-s": 1.0,
            "opt": {"bf16": {"optimize-s": 9.0},
                    "f16": {"optimize-s": 8.0, "optimize": "error: x"}}}
    r = bt.dtype_rows(base)
    assert [x["dtype"] for x in r] == ["bf16", "f16"]
    assert r[1]["optimize"] == "error: x" and "optimize" not in r[0]
    assert bt.dtype_rows({"net": "t5", "batch": 1, "export": "error"}) == \
        [{"net": "t5", "batch": 1, "export": "error"}]
    rows = [dict(r[0], **{"ours-opt": 0.5, "ro": 1.0, "opt/ro": 0.5,
                          "acc-ours": 0.01, "acc-torch": 0.004,
                          "acc": "MISS"}), r[1]]
    bt.write(a, rows, {"torch": "none"})
    text = (tmp_path / "transformers.md").read_text()
    assert "| bert | 1 | bf16 |  | 0.500 |" in text
    assert "bf16 batch 1: geomean opt/ro = 0.500 over 1 networks" in text
    assert "f16 batch 1: no opt/ro (a step failed or was skipped): bert" \
        in text
    assert "- bert b1 f16 optimize: error: x" in text
    assert "beyond: bert/bf16/b1" in text


def test_gpu_half_gpus_split(tmp_path):
    """scripts/gpu-half GPUS=2: one gpu-half a dtype, each on a GPU of its
    own, into OUT/<dtype> (DRY=1 prints the plan); more dtypes than GPUs
    is refused."""
    gh = os.path.join(ROOT, "scripts", "gpu-half")
    env = dict(os.environ, DRY="1", GPUS="2", OUT=str(tmp_path))
    r = subprocess.run([gh], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "+ GPU 0: DTYPES=bf16 OUT=%s/bf16 gpu-half" % tmp_path in r.stdout
    assert "+ GPU 1: DTYPES=f16 OUT=%s/f16 gpu-half" % tmp_path in r.stdout
    env["DTYPES"] = "bf16 f16 f32"
    r = subprocess.run([gh], env=env, capture_output=True, text=True)
    assert r.returncode == 2
    assert "3 dtypes (bf16 f16 f32) for GPUS=2: at most one a GPU" in r.stderr
