#!/usr/bin/env python3
"""bench-gpu.py: latency of superopt's CUDA executor vs PyTorch, per graph.

Runs on the GPU machine (scripts/gpu-check bench). For every graph (the
zoo's models/*.graph and any extra .graph files named on the command line)
at each batch size it times, in one run on one GPU:

  ours         superopt run G --device cuda --batch B (CUDA-graph replay,
               median of CUDA-event-timed runs after warm-up)
  ours-opt     the same for the optimized graph of the same name in
               --optimized DIR (at batch 16 the one in --optimized16 DIR
               when given: optimized for batch 16), e.g. from
               `superopt optimize` (fused nodes included)
  eager-graph  PyTorch eager executing the same .graph, operator by
               operator (a small interpreter below; the same parameters)
  tv-eager     for the tv_* graphs: the torchvision network they were
  tv-compile   exported from, eager, torch.compile (default mode) and
  tv-ro        torch.compile(mode="reduce-overhead") (CUDA graphs, the
               figure to beat); opt/ro = ours-opt / tv-ro
  graph-ro     for the other graphs (bert_base, nasnet_a, the TASO-form
               ResNets): torch.compile(mode="reduce-overhead") of the
               eager-graph interpreter, i.e. of the same graph; opt/ro =
               ours-opt / graph-ro

Half precision (--dtype bf16,f16; issue 42, docs/half.md): per dtype D,
ours is `superopt run G --dtype D`, ours-opt the graph optimized with
`superopt optimize --dtype D` (--optimized DIR/{dtype}: the folder named
per dtype), and PyTorch runs the same module `.to(D)` with inputs in D
(torch.compile(mode="reduce-overhead", dynamic=False) as the anchor, and
eager). --accuracy adds, at --accuracy-batch, the largest relative error
(scripts/benchlib.py: max|a-b| / max|b|) of our D output against our
float32 output (the original graph, --fp32-strict) and of PyTorch's D
output against its float32 output (eager, TF32 off), on the same inputs
(drawn once, passed to ours with `run --inputs`). Rows carry their dtype;
the summary has geomeans per dtype and batch and names the networks above
0.95.

float32 rows: TF32 allowed for convolutions and matmuls on both sides
(PyTorch's cudnn.allow_tf32 default, and matmul.allow_tf32 switched on to
match ours), cudnn.benchmark on, no_grad. Each PyTorch time is the median
per call of 5 repeats of `iters` back-to-back calls between CUDA events
after warm-up (--per-call: each call alone; see time_torch). Ours is timed
per replay (`superopt run --iters`), which slightly favours PyTorch. Writes
bench.json and bench.md (with geomeans of opt/ro per batch) into --out.

Graphs of more torchvision networks (TV below) come from
scripts/export-tv.py and `superopt import` (see that script).
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as BL  # noqa: E402

TV = {"tv_resnet50": "resnet50", "tv_resnext50": "resnext50_32x4d",
      "tv_squeezenet": "squeezenet1_1", "tv_mobilenet_v2": "mobilenet_v2",
      # exported by scripts/export-tv.py (not in models/: lead's runs)
      "tv_mobilenet_v3_large": "mobilenet_v3_large",
      "tv_shufflenet_v2_x1_0": "shufflenet_v2_x1_0", "tv_vgg16": "vgg16",
      "tv_regnet_y_800mf": "regnet_y_800mf",
      "tv_convnext_tiny": "convnext_tiny",
      "tv_wide_resnet50_2": "wide_resnet50_2"}


# ---- the .graph interpreter ------------------------------------------------

def parse_value(v):
    if v.startswith("["):
        body = v[1:-1].strip()
        return [int(x) for x in body.split(",")] if body else []
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    try:
        return float(v)
    except ValueError:
        return v


def parse_graph(text):
    """Canonical .graph text -> (inputs, weights, nodes, outputs)."""
    inputs, weights, nodes, outputs = [], [], [], []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("graph "):
            continue
        m = re.match(r"(input|weight)\s+(\S+)\s*:\s*\[([\d,]*)\]$", line)
        if m:
            shape = [int(x) for x in m.group(3).split(",") if x]
            (inputs if m.group(1) == "input" else weights).append(
                (m.group(2), shape))
            continue
        if line.startswith("output "):
            outputs += [o.strip() for o in line[7:].split(",")]
            continue
        lhs, rhs = line.split("=", 1)
        outs = [(n, [int(x) for x in s.split(",") if x] if s else None)
                for n, s in re.findall(r"([^\s,:]+)\s*(?::\s*\[([\d,]*)\])?",
                                       lhs)]
        m = re.match(r"\s*(\w+)\((.*?)\)(.*)$", rhs)
        op, args, rest = m.group(1), m.group(2), m.group(3)
        ins = [a.strip() for a in args.split(",") if a.strip()]
        params = {k: parse_value(v) for k, v in
                  re.findall(r"(\w+)=(\[[^\]]*\]|\S+)", rest)}
        nodes.append((op, ins, outs, params))
    return inputs, weights, nodes, outputs


ACTS = {"none": lambda x: x, "relu": F.relu, "sigmoid": torch.sigmoid,
        "tanh": torch.tanh, "gelu": F.gelu}


def same_pads(size, k, s, d):
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def pads_of(p, x, k, s, d):
    """[top, left, bottom, right] for pad=same|valid|[t,l,b,r]."""
    mode = p.get("pad", "same")
    if isinstance(mode, list):
        return mode
    if mode == "valid":
        return [0, 0, 0, 0]
    t, b = same_pads(x.shape[2], k[0], s[0], d[0])
    l, r = same_pads(x.shape[3], k[1], s[1], d[1])
    return [t, l, b, r]


def conv(x, w, b, p):
    s, d = p.get("stride", [1, 1]), p.get("dilation", [1, 1])
    t, l, bo, r = pads_of(p, x, w.shape[2:], s, d)
    if t != bo or l != r:
        x, t, l = F.pad(x, (l, r, t, bo)), 0, 0
    y = F.conv2d(x, w, b, s, (t, l), d, p.get("groups", 1))
    return ACTS[p.get("act", "none")](y)


def pool(x, p, is_max):
    k, s = p["kernel"], p.get("stride", [1, 1])
    t, l, bo, r = pads_of(p if "pad" in p else dict(p, pad="valid"), x, k, s,
                          [1, 1])
    if t != bo or l != r:
        x = F.pad(x, (l, r, t, bo), value=-math.inf if is_max else 0.0)
        t = l = 0
    if is_max:
        return F.max_pool2d(x, k, s, (t, l))
    return F.avg_pool2d(x, k, s, (t, l),
                        count_include_pad=bool(p["count_include_pad"]))


def matmul(a, b, bias, p):
    y = torch.matmul(a, b)
    if bias is not None:
        y = y + bias
    return ACTS[p.get("act", "none")](y)


def run_node(op, x, p, old):
    """One operator; old = the graph's annotated shapes of its inputs."""
    if op == "conv2d":
        return conv(x[0], x[1], x[2] if len(x) > 2 else None, p)
    if op == "matmul":
        return matmul(x[0], x[1], x[2] if len(x) > 2 else None, p)
    simple = {"ewadd": lambda: x[0] + x[1], "ewsub": lambda: x[0] - x[1],
              "ewmul": lambda: x[0] * x[1], "ewdiv": lambda: x[0] / x[1],
              "smul": lambda: x[0] * x[1], "relu": lambda: F.relu(x[0]),
              "sigmoid": lambda: torch.sigmoid(x[0]),
              "tanh": lambda: torch.tanh(x[0]), "gelu": lambda: F.gelu(x[0]),
              "erf": lambda: torch.erf(x[0]), "sqrt": lambda: torch.sqrt(x[0]),
              "clip": lambda: torch.clamp(x[0], p["min"], p["max"]),
              "global_avgpool": lambda: x[0].mean((2, 3), keepdim=True)}
    if op in simple:
        return simple[op]()
    if op == "concat":
        return torch.cat(x, p["axis"])
    if op == "split":
        return torch.split(x[0], p["sizes"], p["axis"])
    if op == "transpose":
        return x[0].permute(p["perm"])
    if op == "reshape":
        shape = list(p["shape"])
        if old[0] and shape and shape[0] == old[0][0]:
            shape[0] = x[0].shape[0]
        return x[0].reshape(shape)
    if op in ("avgpool", "maxpool"):
        return pool(x[0], p, op == "maxpool")
    if op == "batchnorm":
        return F.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0,
                            p.get("eps", 1e-5))
    if op == "reduce_mean":
        return x[0].mean(tuple(p["axes"]), keepdim=bool(p.get("keepdims", 1)))
    if op == "softmax":
        return torch.softmax(x[0], p.get("axis", -1))
    if op == "attention":
        sc = torch.matmul(x[0], x[1])
        if len(x) > 3:
            sc = sc * x[3]
        return torch.matmul(torch.softmax(sc, -1), x[2])
    if op == "layernorm":
        ax = p.get("axis", -1) % x[0].dim()
        return F.layer_norm(x[0], x[0].shape[ax:],
                            x[1] if len(x) > 1 else None,
                            x[2] if len(x) > 2 else None, p.get("eps", 1e-5))
    if op == "enlarge":
        kh, kw = p["kernel"]
        h, w = x[0].shape[2], x[0].shape[3]
        t, l = (kh - h) // 2, (kw - w) // 2
        return F.pad(x[0], (l, kw - w - l, t, kh - h - t))
    if op == "pad":
        r, pads = x[0].dim(), p["pads"]
        tp = []
        for i in reversed(range(r)):
            tp += [pads[i], pads[r + i]]
        return F.pad(x[0], tp, value=p.get("value", 0.0))
    if op == "slice":
        ends = list(p["ends"])
        if old[0] and ends[0] == old[0][0]:
            ends[0] = x[0].shape[0]
        return x[0][tuple(slice(s, e) for s, e in zip(p["starts"], ends))]
    raise ValueError("bench-gpu: no PyTorch form for operator " + op)


def constant(op, p, dev):
    shape = p["shape"]
    if op == "const_imm":
        return torch.eye(shape[0], device=dev)
    if op == "const_iconv":
        w = torch.zeros(shape, device=dev)
        for o in range(shape[0]):
            w[o, o % shape[1], shape[2] // 2, shape[3] // 2] = 1
        return w
    return torch.ones(shape, device=dev)


def tdtype(dtype):
    return getattr(torch, BL.TORCH_NAME[dtype])


def build_graph_fn(text, batch, dev, dtype="f32", values=None):
    """A function of the input tensors computing the graph's outputs, in
    dtype (weights seeded: the same values, rounded, for every dtype; or
    values[name], float32 arrays, where given: superopt_weights)."""
    torch.manual_seed(0)
    inputs, weights, nodes, outputs = parse_graph(text)
    shapes = {n: s for n, s in inputs + weights}
    for _, _, outs, _ in nodes:
        shapes.update({n: s for n, s in outs})
    env = {}
    for name, shape in weights:
        w = torch.rand(shape, device=dev) * 0.1
        env[name] = w + 0.5 if len(shape) == 1 else w - 0.05
        if values is not None and name in values:
            env[name] = torch.from_numpy(values[name]).to(dev)
    consts = {}
    for op, ins, outs, p in nodes:
        if op.startswith("const_"):
            consts[outs[0][0]] = constant(op, p, dev)
    td = tdtype(dtype)
    env = {k: v.to(td) for k, v in env.items()}
    consts = {k: v.to(td) for k, v in consts.items()}

    def fn(*xs):
        vals = dict(env)
        vals.update(consts)
        for (name, _), x in zip(inputs, xs):
            vals[name] = x
        for op, ins, outs, p in nodes:
            if op.startswith("const_"):
                continue
            y = run_node(op, [vals[i] for i in ins], p,
                         [shapes.get(i) for i in ins])
            if isinstance(y, (tuple, list)):
                for (n, _), t in zip(outs, y):
                    vals[n] = t
            else:
                vals[outs[0][0]] = y
        return [vals[o] for o in outputs]

    # as `superopt run --batch` does: only the inputs whose dim 0 is the
    # first input's take the batch; the rest are parameters fed as inputs
    # (ONNX exports with export_params=False) and keep their shape
    b0 = inputs[0][1][0] if inputs and inputs[0][1] else None
    xs = [(torch.rand(([batch] + s[1:]) if s and s[0] == b0 else s,
                      device=dev) * 2 - 1).to(td) for _, s in inputs]
    return fn, xs


def input_shapes(text, batch):
    """name -> shape of the graph's inputs at batch (as build_graph_fn)."""
    inputs = parse_graph(text)[0]
    b0 = inputs[0][1][0] if inputs and inputs[0][1] else None
    return {n: ([batch] + s[1:]) if s and s[0] == b0 else s
            for n, s in inputs}


# ---- timing --------------------------------------------------------------------

def time_torch(fn, xs, warmup, iters, per_call=False):
    """Median ms per forward. Default: 5 repeats of `iters` back-to-back
    calls between two CUDA events (ms / iters, median of the 5), the way
    the issue-13 figures were taken: a call's CPU work (torch.compile's
    CUDA-graph wrapper copies inputs, checks guards) overlaps the GPU work
    of the previous one. per_call: each call timed alone between events
    (CPU work before the launch then counts as GPU idle time)."""
    with torch.no_grad():
        for _ in range(warmup):
            fn(*xs)
        torch.cuda.synchronize()
        ts = []
        for _ in range(iters if per_call else 5):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(1 if per_call else iters):
                fn(*xs)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) / (1 if per_call else iters))
    return statistics.median(ts)


RUN_TIMEOUT = 300  # seconds for one `superopt run` (TimeoutExpired: the
#                   row's error, and the bench goes on)


def time_ours(superopt, graph, batch, iters, extra=()):
    cmd = [superopt, "run", graph, "--device", "cuda", "--batch", str(batch),
           "--iters", str(iters), "--warmup", "20"] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=RUN_TIMEOUT)
    m = re.search(r"^time: ([0-9.]+) ms", r.stdout, re.M)
    if r.returncode or not m:
        raise RuntimeError((r.stdout + r.stderr).strip()[-300:])
    return float(m.group(1))


_TV_STATE = {}


def tv_model(name, dev, dtype="f32"):
    """torchvision's NAME with seeded random weights, eval, on dev in dtype.
    Its batch-norm statistics are calibrated once (calibrated_state): with
    the initial ones (mean 0, variance 1) the activations of a randomly
    initialised network can grow layer by layer: PyTorch's f16 outputs of
    MobileNet-V2/V3 read 100% off their float32 ones (2026-11-29), most
    likely beyond f16's range (not checked)."""
    import torchvision
    torch.manual_seed(0)
    m = getattr(torchvision.models, TV[name])(weights=None)
    if name not in _TV_STATE:
        _TV_STATE[name] = calibrated_state(m)
    m.load_state_dict(_TV_STATE[name])
    return m.eval().to(dev).to(tdtype(dtype))


def calibrated_state(m, batches=2, batch=8):
    """m's state dict after its batch norms' running statistics are set
    to the mean and variance over a few seeded random batches (train mode,
    no gradients, on the CPU in float32, so every dtype's copy gets the
    same values); m's own state when it has no batch norm."""
    bns = [x for x in m.modules()
           if isinstance(x, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        g = torch.Generator().manual_seed(1)
        for x in bns:
            x.reset_running_stats()
            x.momentum = None  # a cumulative average over the batches
        m.train()
        with torch.no_grad():
            for _ in range(batches):
                m(torch.rand(batch, 3, 224, 224, generator=g) * 2 - 1)
        m.eval()
    return {k: v.clone() for k, v in m.state_dict().items()}


def export_tv(superopt, names, out):
    """Each torchvision network of names (keys of TV) as tv_model gives it
    in float32 (seeded weights, batch norms calibrated) exported with its
    weights (legacy exporter, opset 17, input x, batch 1) and imported as
    OUT/<name>.graph with its weights: the graph ours then runs is the
    module the anchor and PyTorch's accuracy run, weight for weight (the
    ONNX files of models/onnx hold no weights: the importer's seeded ones,
    batch norms at mean 0 and variance 1, are another network's numbers).
    Returns the names that failed, each reported on stderr."""
    failed = []
    os.makedirs(out, exist_ok=True)
    for n in names:
        onnx = os.path.join(out, n + ".onnx")
        try:
            m = tv_model(n, "cpu", "f32")
            with torch.no_grad():
                torch.onnx.export(m, (torch.rand(1, 3, 224, 224),), onnx,
                                  opset_version=17, input_names=["x"],
                                  dynamo=False)
            r = subprocess.run([superopt, "import", onnx, "-o",
                                os.path.join(out, n + ".graph")],
                               capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError((r.stdout + r.stderr).strip()[-300:])
        except Exception as e:  # report and go on
            print("export-tv %s: %s" % (n, e), file=sys.stderr, flush=True)
            failed.append(n)
        finally:
            if os.path.exists(onnx):
                os.remove(onnx)
    return failed


def superopt_outputs(superopt, graph, batch, inputs, out, extra=()):
    """Runs graph once on the GPU on the inputs file; its outputs (a list,
    in the file's order)."""
    cmd = [superopt, "run", graph, "--device", "cuda", "--batch", str(batch),
           "--iters", "1", "--warmup", "0", "--inputs", inputs,
           "--outputs", out] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=RUN_TIMEOUT)
    if r.returncode:
        raise RuntimeError((r.stdout + r.stderr).strip()[-300:])
    return list(BL.read_safetensors(out).values())


def superopt_weights(superopt, graph, out):
    """graph's weights as `superopt run` gives them (its sidecar's, else
    drawn by name, seed 1, as every run of the bench draws them), by name
    (float32 arrays): `run --dump OUT` on the CPU, OUT removed after. What
    the interpreter's side of a zoo graph's accuracy row runs, so that
    both sides compute the same network (its own seeded weights, uniform
    and small, had made BERT-base's f16 rows 0.0022 against 0.0011,
    2026-11-30: another network)."""
    try:
        r = subprocess.run([superopt, "run", graph, "--dump", out],
                           capture_output=True, text=True,
                           timeout=RUN_TIMEOUT)
        if r.returncode:
            raise RuntimeError((r.stdout + r.stderr).strip()[-300:])
        w = {}
        with open(os.path.join(out, "manifest.tsv")) as f:
            for line in f:
                kind, name, file = line.rstrip("\n").split("\t")
                if kind == "weight":
                    w[name] = np.load(os.path.join(out, file)).astype(
                        np.float32)
        return w
    finally:
        shutil.rmtree(out, ignore_errors=True)


def torch_outputs(fn, xs):
    with torch.no_grad():
        y = fn(*xs)
    ys = y if isinstance(y, (list, tuple)) else [y]
    return [t.float().cpu().numpy() for t in ys]


def accuracy(a, row, path, opt, text, batch, dev):
    """acc-ours, acc-torch, acc of a half row (module docstring)."""
    dt, name = row["dtype"], row["graph"]
    d = os.path.join(a.out, "acc")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "%s.b%d" % (name, batch))
    rng = np.random.RandomState(0)
    xs = {n: (rng.rand(*s).astype(np.float32) * 2 - 1)
          for n, s in input_shapes(text, batch).items()}
    BL.write_safetensors(stem + ".in.safetensors", xs)

    def ours():
        ref = superopt_outputs(a.superopt, path, batch, stem +
                               ".in.safetensors", stem + ".f32.safetensors",
                               ["--fp32-strict"])
        half = superopt_outputs(
            a.superopt, opt or path, batch, stem + ".in.safetensors",
            stem + ".%s.safetensors" % dt,
            [] if opt else BL.run_dtype_args(dt))
        return half, ref

    def theirs():
        tx = [torch.from_numpy(x).to(dev) for x in xs.values()]
        outs = {}
        w = None if name in TV else \
            superopt_weights(a.superopt, path, stem + ".weights")
        for t in ("f32", dt):
            if name in TV:
                fn = tv_model(name, dev, t)
            else:
                fn = build_graph_fn(text, batch, dev, t, w)[0]
            outs[t] = torch_outputs(fn, [x.to(tdtype(t)) for x in tx])
        return outs[dt], outs["f32"]

    BL.fill_accuracy(row, ours, theirs)


fmt = BL.fmt


def compile_ro(fn, dtype):
    """torch.compile(mode="reduce-overhead"), with dynamic=False in half
    precision (issue 42's anchor; the float32 rows as before)."""
    if dtype == "f32":
        return torch.compile(fn, mode="reduce-overhead")
    return torch.compile(fn, mode="reduce-overhead", dynamic=False)


def optimized_path(a, path, batch, dtype, state=None):
    """The optimized graph for path at batch in dtype, or None. With
    --wait-optimized MARKER (the graphs being optimized meanwhile), waits
    for it until MARKER exists or the budget ends."""
    while a.wait_optimized and state and not os.path.exists(
            a.wait_optimized) and time.time() - state["t0"] < a.budget:
        if optimized_path(a, path, batch, dtype):
            break
        time.sleep(1)
    dirs = [BL.dir_for(a.optimized16, dtype)] if batch != 1 else []
    for d in dirs + [BL.dir_for(a.optimized, dtype)]:
        if d and os.path.exists(os.path.join(d, os.path.basename(path))):
            return os.path.join(d, os.path.basename(path))
    return None


def fallback_note(a, opt, batch, dtype):
    """Where the optimized graph timed at batch > 1 is the batch-1 one
    because --optimized16 has none of the name (that optimize refused or
    failed: the graph was checked at batch 1 only), a note saying so for
    the row and the summary; else None."""
    if not opt or batch == 1 or not a.optimized16:
        return None
    if os.path.dirname(opt) == BL.dir_for(a.optimized16, dtype):
        return None
    return "batch-1 graph (no batch-%d one)" % batch


def step(state, row, what):
    """BL.step for a row of this bench."""
    BL.step(state["t0"], row["graph"], row["batch"], row["dtype"], what)


def bench_one(a, path, batch, dev, state, dtype="f32"):
    name = os.path.basename(path)[:-6]
    row = {"graph": name, "batch": batch, "dtype": dtype}
    step(state, row, "start")
    td = tdtype(dtype)
    if time.time() - state["t0"] >= a.budget:
        row["ours"] = "skipped (time budget)"
        return row
    try:
        if not a.lean:
            row["ours"] = time_ours(a.superopt, path, batch, a.iters,
                                    BL.run_dtype_args(dtype))
    except Exception as e:  # report and go on
        row["ours"] = "error: " + str(e).splitlines()[-1]
    opt = optimized_path(a, path, batch, dtype, state)
    step(state, row, "ours (optimized)" if opt else "no optimized graph")
    note = fallback_note(a, opt, batch, dtype)
    if note:
        row["ours-opt-graph"] = note
    if opt:
        try:
            row["ours-opt"] = time_ours(a.superopt, opt, batch, a.iters)
        except Exception as e:  # report and go on
            row["ours-opt"] = "error: " + str(e).splitlines()[-1]
    if a.legacy:
        try:
            row["ours-legacy-conv"] = time_ours(a.superopt, path, batch,
                                                a.iters, ["--legacy-conv"])
        except Exception as e:  # report and go on
            row["ours-legacy-conv"] = "error: " + str(e).splitlines()[-1]
    text = subprocess.run([a.superopt, "print", "--drop-weights", path],
                          capture_output=True,
                          text=True, check=True).stdout
    fn = None
    try:
        if not (a.lean and name in TV):  # tv-eager is their eager figure
            fn, xs = build_graph_fn(text, batch, dev, dtype)
            row["eager-graph"] = time_torch(fn, xs, 10, a.iters, a.per_call)
    except Exception as e:  # report and go on
        row["eager-graph"] = "error: %s" % e
        fn = None
    if name not in TV and fn is not None:  # the same graph, compiled
        if time.time() - state["t0"] >= a.compile_budget:
            row["graph-ro"] = "skipped (time budget)"
        else:
            try:
                step(state, row, "torch.compile of the graph")
                torch._dynamo.reset()
                t = time.time()
                with BL.deadline(BL.COMPILE_TIMEOUT, "torch.compile"):
                    cfn = compile_ro(fn, dtype)
                    with torch.no_grad():
                        for _ in range(3):  # reduce-overhead records on 2+
                            cfn(*xs)
                row["graph-ro-s"] = round(time.time() - t, 1)
                row["graph-ro"] = time_torch(cfn, xs, 10, a.iters, a.per_call)
            except Exception as e:  # report and go on
                row["graph-ro"] = "error: %s" % str(e).splitlines()[0][:200]
    if name in TV:
        m = tv_model(name, dev, dtype)
        x = torch.rand(batch, 3, 224, 224, device=dev).to(td)
        row["tv-eager"] = time_torch(m, [x], 10, a.iters, a.per_call)
        for key, mode in (("tv-compile", "default"),
                          ("tv-ro", "reduce-overhead")):
            if key == "tv-compile" and (a.no_default_compile or a.lean):
                continue
            if time.time() - state["t0"] >= a.compile_budget:
                row[key] = "skipped (time budget)"
                continue
            try:
                step(state, row, "torch.compile (%s)" % mode)
                torch._dynamo.reset()
                t = time.time()
                with BL.deadline(BL.COMPILE_TIMEOUT, "torch.compile"):
                    cm = compile_ro(m, dtype) if mode != "default" else \
                        torch.compile(m, mode=mode)
                    with torch.no_grad():
                        for _ in range(3):  # reduce-overhead records on 2+
                            cm(x)
                row[key + "-s"] = round(time.time() - t, 1)
                row[key] = time_torch(cm, [x], 10, a.iters, a.per_call)
            except Exception as e:  # report and go on
                row[key] = "error: %s" % str(e).splitlines()[0][:200]
    ro = row.get("tv-ro", row.get("graph-ro"))
    if isinstance(row.get("ours-opt"), float) and isinstance(ro, float):
        row["opt/ro"] = row["ours-opt"] / ro
    if a.accuracy and dtype != "f32" and batch == a.accuracy_batch:
        step(state, row, "accuracy")
        accuracy(a, row, path, opt, text, batch, dev)
    return row


def torch_profile(spec, dev):
    """Prints PyTorch's profile of a torchvision network: NAME:BATCH, or
    NAME:BATCH:compile for torch.compile's default mode (the kernels that
    reduce-overhead replays, without the CUDA graph); a last field bf16 or
    f16 profiles the module in that type (NAME:BATCH:compile:bf16)."""
    name, batch, *how = spec.split(":")
    dtype = how.pop() if how and how[-1] in ("bf16", "f16") else "f32"
    m = tv_model(name, dev, dtype)
    x = torch.rand(int(batch), 3, 224, 224, device=dev, dtype=tdtype(dtype))
    if how == ["compile"]:
        m = torch.compile(m)
    from torch.profiler import ProfilerActivity, profile
    time_torch(m, [x], 10, 10)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            m(x)
        torch.cuda.synchronize()
    print("PyTorch %s %s, 10 runs:" % ("compiled" if how else "eager",
                                      spec))
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=int(os.environ.get("ROWS", "15")),
                                    max_name_column_width=70))


def versions():
    import torchvision
    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def write(out, rows, ver):
    cols = ["graph", "batch", "dtype", "ours", "ours-opt", "ours-legacy-conv",
            "eager-graph", "graph-ro", "tv-eager", "tv-compile", "tv-ro",
            "opt/ro", "acc-ours", "acc-torch", "acc", "tv-compile-s",
            "tv-ro-s", "graph-ro-s"]
    if all(r.get("dtype", "f32") == "f32" for r in rows):  # as before
        cols = [c for c in cols if c not in ("dtype", "acc-ours",
                                             "acc-torch", "acc")]
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c, "")) for c in cols) +
                     " |")
    lines.append("")
    lines += BL.summary(rows) + BL.accuracy_lines(rows)
    lines += ["%s batch %d %s: ours-opt timed the %s" % (
        r["graph"], r["batch"], r.get("dtype", "f32"), r["ours-opt-graph"])
        for r in rows if r.get("ours-opt-graph")]
    md = "\n".join(["%s: %s" % kv for kv in ver.items()] + [""] + lines)
    with open(os.path.join(out, "bench.md"), "w") as f:
        f.write(md + "\n")
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"versions": ver, "rows": rows}, f, indent=1)
    return md


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--superopt", required=True)
    ap.add_argument("--models", required=True, help="folder of .graph files")
    ap.add_argument("--out", default=".")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--compile-budget", type=float, default=3600,
                    help="seconds after which torch.compile is skipped")
    ap.add_argument("--optimized", default=None,
                    help="folder of optimized graphs (same file names)")
    ap.add_argument("--optimized16", default=None,
                    help="folder of graphs optimized for batch 16")
    ap.add_argument("--per-call", action="store_true",
                    help="time each PyTorch call alone (see time_torch)")
    ap.add_argument("--no-default-compile", action="store_true",
                    help="skip torch.compile's default mode (time)")
    ap.add_argument("--legacy", action="store_true",
                    help="also time ours with --legacy-conv")
    ap.add_argument("--dtype", type=BL.dtype_arg, default=["f32"],
                    help="comma list of f32, bf16, f16 (rows per dtype; "
                    "--optimized DIR/{dtype} names a folder per dtype)")
    BL.add_accuracy_args(ap)
    ap.add_argument("--lean", action="store_true",
                    help="only what the ratios and accuracy need: no "
                    "timing of the original graph, no interpreter run of "
                    "the torchvision networks (tv-eager is their eager "
                    "figure), no default-mode torch.compile")
    ap.add_argument("--wait-optimized", default=None, metavar="MARKER",
                    help="optimized graphs are being written: wait for "
                    "each until the file MARKER exists")
    ap.add_argument("--budget", type=float, default=1e9,
                    help="seconds; rows not started by then are skipped")
    ap.add_argument("--torch-profile", action="append", default=[],
                    help="NAME:BATCH: print PyTorch's kernel profile of a "
                    "tv_* network instead of benchmarking")
    ap.add_argument("--export-tv", default=None, metavar="NAMES",
                    help="comma list of tv_* networks: export each with "
                    "its weights into --models as a .graph (export_tv) "
                    "and exit; 1 when any failed")
    ap.add_argument("graphs", nargs="*", help="extra .graph files to time")
    return ap


def main():
    a = build_parser().parse_args()
    if a.export_tv:
        names = [n for n in a.export_tv.split(",") if n]
        bad = [n for n in names if n not in TV]
        if bad:
            print("--export-tv: not torchvision networks of the bench: %s" %
                  ", ".join(bad), file=sys.stderr)
            return 2
        return 1 if export_tv(a.superopt, names, a.models) else 0
    os.makedirs(a.out, exist_ok=True)  # results are written after each row
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = torch.device("cuda")
    for spec in a.torch_profile:
        torch_profile(spec, dev)
    if a.torch_profile:
        return 0
    paths = sorted(os.path.join(a.models, f) for f in os.listdir(a.models)
                   if f.endswith(".graph")) + a.graphs
    state, rows = {"t0": time.time()}, []
    md = ""
    for dtype, path, b in BL.work_order(a.dtype, paths, a.batches):
        row = bench_one(a, path, b, dev, state, dtype)
        rows.append(row)
        print(" ".join("%s=%s" % (k, fmt(v)) for k, v in row.items()),
              flush=True)
        md = write(a.out, rows, versions())  # after each row: partial
    print(md)                                # results survive a kill


if __name__ == "__main__":
    sys.exit(main())
