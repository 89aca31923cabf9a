#!/usr/bin/env python3
"""bench-transformers.py: issue 41's benchmark, the transformers people
export today against torch.compile(mode="reduce-overhead").

Runs on the GPU machine (PyTorch, torchvision, transformers; no network:
every model is built from its config with seeded random weights). For each
network and batch size, in one run on one GPU:

  export     torch.onnx.export of the PyTorch module (the legacy exporter,
             opset 17, weights inline) at that batch, sequence --seq
             (export, import and optimize of all rows run first, --jobs at
             a time with --threads each; their seconds are recorded)
  import     superopt import NET.onnx -o NET.graph
  optimize   superopt optimize NET.graph -o NET.opt.graph (its end-to-end
             check included; the status and wall seconds are recorded)
  ours-opt   superopt run NET.opt.graph --device cuda
  ours       (--unoptimized) the same for the imported NET.graph
  ro         torch.compile(module, mode="reduce-overhead", dynamic=False)
             of the same PyTorch module on inputs of the same shapes:
             the anchor; opt/ro = ours-opt / ro
  rebatch    whether `superopt optimize --batch 16` of the batch-1
             export works (issue 41: "transformers exported at batch 1 do
             not rebatch"); exit status and the first line of its error

All float32 with TF32 allowed on both sides (cudnn.allow_tf32 and
matmul.allow_tf32 on), no_grad, cudnn.benchmark on. PyTorch is timed as
scripts/bench-gpu.py times it (time_torch: 5 repeats of `iters`
back-to-back calls between CUDA events, median), ours per CUDA-graph
replay (`superopt run --iters`, median after 20 warm-up runs).

Networks (issue 41): torchvision vit_b_16, swin_t, maxvit_t (1x3x224x224
per image); Hugging Face BertModel (base), DistilBertModel (base), a T5
encoder (t5-small), a Llama-style decoder (4 layers, hidden 512, 8 heads;
prefill, causal), token inputs of --seq (128) tokens; models as
scripts/export-transformers.py builds them (--full).

Half precision (--dtype bf16,f16; issue 42, docs/half.md): per dtype D
the imported graph is optimized with `optimize --dtype D` (NET.bB.D.opt.graph),
ours is timed as it is, `run --dtype D` for --unoptimized, and the anchor
is the module `.to(D)` (floating parameters; token inputs stay int64,
images in D). --accuracy: at --accuracy-batch, the largest relative error
(scripts/benchlib.py) of our D output against our float32 output (the
imported graph, --fp32-strict; its weights are the module's) and of the
module's D output against its float32 output (eager, TF32 off), on the
same inputs (`run --inputs`). The rebatch check runs for f32 only.

Usage: bench-transformers.py --superopt BIN --out DIR [--nets a,b]
       [--batches 1,16] [--budget SECONDS] [--dtype bf16,f16] [--accuracy]
Writes DIR/transformers.json and DIR/transformers.md (the table, geomeans
of opt/ro per batch over the networks that ran, the networks slower than
the anchor named). A step that fails is recorded and the rest goes on.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib as BL  # noqa: E402


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


EXP = load("export_transformers", "export-transformers.py")
BENCH = load("bench_gpu", "bench-gpu.py")
NETS = ["vit_b_16", "swin_t", "maxvit_t", "bert", "distilbert", "t5_encoder",
        "llama"]


def module_and_inputs(name, batch, seq):
    """The PyTorch module (eval, CPU) and its example inputs."""
    torch.manual_seed(0)
    if name in EXP.TV:
        m = EXP.tv_model(name)
        return m, (torch.rand(batch, 3, 224, 224),), ["x"]
    base, with_mask = EXP.hf_model(name, True)
    m = EXP.Outputs0(base.eval())
    ids = torch.randint(0, 1000, (batch, seq), dtype=torch.int64)
    args, names = (ids,), ["input_ids"]
    if with_mask:
        args += (torch.ones(batch, seq, dtype=torch.int64),)
        names.append("attention_mask")
    return m, args, names


def export(m, args, names, path):
    with torch.no_grad():
        torch.onnx.export(m, args, path, dynamo=False, opset_version=17,
                          input_names=names, output_names=["y"])


def sh(cmd, timeout=600):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r, time.time() - t


def err(r):
    lines = (r.stderr or r.stdout).strip().splitlines()
    return lines[-1][:300] if lines else "exit %d" % r.returncode


def prepare(a, name, batch):
    """Export, import and optimize (CPU work, run in parallel): the row's
    fields so far."""
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    torch.set_num_threads(a.threads)
    row = {"net": name, "batch": batch}
    stem = os.path.join(a.out, "%s.b%d" % (name, batch))
    try:
        m, args, names = module_and_inputs(name, batch, a.seq)
        t = time.time()
        export(m, args, names, stem + ".onnx")
        row["export-s"] = round(time.time() - t, 1)
    except Exception as e:  # report and go on
        row["export"] = "error: %s" % str(e).splitlines()[0][:300]
        return row
    r, s = sh([a.superopt, "import", stem + ".onnx", "-o", stem + ".graph"])
    if r.returncode:
        row["import"] = "error: " + err(r)
        return row
    row["import-s"] = round(s, 1)
    row["opt"] = {}
    for dt in a.dtype:
        r, s = sh([a.superopt, "optimize", stem + ".graph", "-o",
                   opt_graph(stem, dt)] + BL.run_dtype_args(dt) +
                  a.optimize_args.split())
        o = row["opt"][dt] = {"optimize-s": round(s, 1)}
        if r.returncode:
            o["optimize"] = "error: " + err(r)
    if batch == 1 and "f32" in a.dtype:
        rebatch(a, name, row)
    return row


def opt_graph(stem, dtype):
    """The optimized graph of a row: NET.bB.opt.graph (f32), else
    NET.bB.D.opt.graph."""
    return stem + (".opt.graph" if dtype == "f32" else
                   ".%s.opt.graph" % dtype)


def dtype_rows(base):
    """A prepared row per dtype: the common fields and that dtype's
    optimize fields."""
    common = {k: v for k, v in base.items() if k != "opt"}
    if "opt" not in base:  # export or import failed: one row per dtype
        return [dict(common)]
    return [dict(common, dtype=dt, **o) for dt, o in base["opt"].items()]


def half_inputs(args, dtype):
    """The module's example inputs for dtype: floating ones converted."""
    td = getattr(torch, BL.TORCH_NAME[dtype])
    return [x.to(td) if x.is_floating_point() else x for x in args]


def accuracy(a, row, stem, names):
    """acc-ours, acc-torch, acc of a half row (module docstring)."""
    dt, name, batch = row["dtype"], row["net"], row["batch"]
    m, args, _ = module_and_inputs(name, batch, a.seq)
    inp = stem + ".in.safetensors"
    BL.write_safetensors(inp, {n: x.numpy() for n, x in zip(names, args)})

    def ours():
        ref = BENCH.superopt_outputs(a.superopt, stem + ".graph", batch, inp,
                                     stem + ".f32.safetensors",
                                     ["--fp32-strict"])
        half = BENCH.superopt_outputs(a.superopt, opt_graph(stem, dt), batch,
                                      inp, stem + ".%s.safetensors" % dt)
        return half, ref

    def theirs():
        dev = torch.device("cuda")
        md = m.to(dev)
        xs = [x.to(dev) for x in args]
        y32 = BENCH.torch_outputs(md, xs)
        mh = md.to(getattr(torch, BL.TORCH_NAME[dt]))
        return BENCH.torch_outputs(mh, half_inputs(xs, dt)), y32

    BL.fill_accuracy(row, ours, theirs)


T0 = time.time()


def step(row, what):
    """BL.step for a row of this bench (its GPU steps)."""
    BL.step(T0, row["net"], row["batch"], row.get("dtype", "f32"), what)


def bench_one(a, row):
    """The GPU timings of a prepared row."""
    name, batch = row["net"], row["batch"]
    dt = row.get("dtype", "f32")
    step(row, "start")
    stem = os.path.join(a.out, "%s.b%d" % (name, batch))
    if "import-s" not in row:
        return
    if a.unoptimized:
        try:
            row["ours"] = BENCH.time_ours(a.superopt, stem + ".graph", batch,
                                          a.iters, BL.run_dtype_args(dt))
        except Exception as e:  # report and go on
            row["ours"] = "error: " + str(e).splitlines()[-1][:300]
    if "optimize" not in row:
        try:
            row["ours-opt"] = BENCH.time_ours(a.superopt, opt_graph(stem, dt),
                                              batch, a.iters)
        except Exception as e:  # report and go on
            row["ours-opt"] = "error: " + str(e).splitlines()[-1][:300]
    step(row, "PyTorch: eager, then torch.compile")
    m, args, names = module_and_inputs(name, batch, a.seq)
    dev = torch.device("cuda")
    m = m.to(dev).to(getattr(torch, BL.TORCH_NAME[dt]))
    xs = half_inputs([x.to(dev) for x in args], dt)
    try:
        row["eager"] = BENCH.time_torch(m, xs, 10, a.iters)
        torch._dynamo.reset()
        t = time.time()
        with BL.deadline(BL.COMPILE_TIMEOUT, "torch.compile"):
            cm = torch.compile(m, mode="reduce-overhead", dynamic=False)
            with torch.no_grad():
                for _ in range(3):  # reduce-overhead records on run 2+
                    cm(*xs)
        row["ro-s"] = round(time.time() - t, 1)
        row["ro"] = BENCH.time_torch(cm, xs, 10, a.iters)
    except Exception as e:  # report and go on
        row["ro"] = "error: %s" % str(e).splitlines()[0][:300]
    if isinstance(row.get("ours-opt"), float) and isinstance(row.get("ro"),
                                                             float):
        row["opt/ro"] = row["ours-opt"] / row["ro"]
    if a.accuracy and dt != "f32" and batch == a.accuracy_batch and \
            "optimize" not in row:
        del m, xs
        torch._dynamo.reset()
        step(row, "accuracy")
        accuracy(a, row, stem, names)


def rebatch(a, name, row):
    g = os.path.join(a.out, "%s.b1.graph" % name)
    if not os.path.exists(g):
        row["rebatch"] = "no batch-1 graph"
        return
    r, s = sh([a.superopt, "optimize", g, "--batch", "16", "--no-check",
               "-o", os.path.join(a.out, "%s.b1to16.graph" % name)])
    row["rebatch"] = "ok" if r.returncode == 0 else "exit %d: %s" % (
        r.returncode, err(r))


fmt = BL.fmt


def write(a, rows, ver):
    with open(os.path.join(a.out, "transformers.json"), "w") as f:
        json.dump({"versions": ver, "rows": rows}, f, indent=1)
    cols = ["net", "batch", "dtype", "ours", "ours-opt", "eager", "ro",
            "opt/ro", "acc-ours", "acc-torch", "acc", "optimize-s", "ro-s"]
    out = ["# bench-transformers.py (%s)" % ", ".join(
        "%s %s" % kv for kv in ver.items()), ""] + BL.md_table(rows, cols)
    out.append("")
    out += BL.summary(rows, name="net") + BL.accuracy_lines(rows, name="net")
    for dt, b in sorted({(r.get("dtype", "f32"), r["batch"]) for r in rows}):
        slow = [r["net"] for r in rows if r["batch"] == b and
                r.get("dtype", "f32") == dt and r.get("opt/ro", 0) > 1]
        out.append("%s batch %d: slower than the anchor: %s" %
                   (dt, b, ", ".join(slow) or "none"))
    for r in rows:
        for k in ("export", "import", "optimize", "ours", "ours-opt", "ro",
                  "rebatch", "acc-ours", "acc-torch"):
            if isinstance(r.get(k), str) and r[k] not in ("ok", ""):
                out.append("- %s b%d %s %s: %s" % (
                    r["net"], r["batch"], r.get("dtype", "f32"), k, r[k]))
    with open(os.path.join(a.out, "transformers.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out), flush=True)


def build_parser():
    ap = argparse.ArgumentParser()
    ap.add_argument("--superopt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of each export/import/optimize job")
    ap.add_argument("--jobs", type=int, default=7,
                    help="export/import/optimize jobs at once")
    ap.add_argument("--unoptimized", action="store_true",
                    help="also time the imported graph before optimize")
    ap.add_argument("--budget", type=float, default=1e9,
                    help="seconds; rows not timed by then are skipped")
    ap.add_argument("--dtype", type=BL.dtype_arg, default=["f32"],
                    help="comma list of f32, bf16, f16: rows per dtype")
    ap.add_argument("--optimize-args", default="",
                    help="more options of every optimize (words), e.g. "
                    "'--passes none --rules both.rules': issue 43's "
                    "generated-rules path on these rows")
    BL.add_accuracy_args(ap)
    return ap


def main():
    a = build_parser().parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    ver = {"torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(0)}
    t0 = time.time()
    work = [(n, int(b)) for b in a.batches.split(",")
            for n in a.nets.split(",")]  # batch 1 first
    import multiprocessing as mp
    ctx = mp.get_context("spawn")  # no CUDA state in the children
    with ctx.Pool(a.jobs) as pool:
        pending = [pool.apply_async(prepare, (a, n, b)) for n, b in work]
        rows = []
        for p in pending:
            for row in dtype_rows(p.get()):
                rows.append(row)
                if time.time() - t0 > a.budget:
                    row["ro"] = "skipped (time budget)"
                else:
                    try:
                        bench_one(a, row)
                    except Exception as e:  # report and go on
                        row["error"] = "%s: %s" % (type(e).__name__,
                                                   str(e)[:300])
                print(json.dumps(row), flush=True)
                write(a, rows, ver)
    write(a, rows, ver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
