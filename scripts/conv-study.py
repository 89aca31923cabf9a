#!/usr/bin/env python3
"""conv-study.py: where ResNet-18's convolution time goes, ours vs PyTorch.

Runs on the GPU machine (PyTorch, torchvision there). Issue 13 asks why
ResNet-18 at batch 1 takes longer with our executor than with
torch.compile(mode="reduce-overhead") on the same cuDNN. This measures, in
one run on one GPU, fp32 with TF32 allowed on both sides:

  1. torch.compile(mode="reduce-overhead") with Inductor's layout
     optimisation on (its default: conv nets run channels-last) and off;
     eager NCHW and eager channels-last (cudnn.benchmark on);
  2. each distinct convolution of ResNet-18 alone, NCHW vs channels-last,
     captured in a CUDA graph and replayed (median of CUDA-event timings);
  3. our executor on the same network imported from ONNX (`superopt run
     --device cuda --profile`): per-node times.

Usage: conv-study.py --superopt PATH --out DIR [--batch 1]
Writes DIR/conv-study.json and prints a table.
"""
import argparse
import json
import os
import statistics
import subprocess

import torch
import torch.nn.functional as F
import torchvision

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.backends.cudnn.benchmark = True


def time_fn(fn, iters=50, reps=5):
    """Median over reps of the mean of iters calls, CUDA events, after warm-up."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / iters)
    return statistics.median(out)


def graphed(fn):
    """fn captured in a CUDA graph; returns the replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def model_times(batch):
    res = {}
    m = torchvision.models.resnet18().cuda().eval()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    with torch.no_grad():
        res["eager-nchw"] = time_fn(lambda: m(x))
        mcl = torchvision.models.resnet18().cuda().eval().to(
            memory_format=torch.channels_last)
        xcl = x.to(memory_format=torch.channels_last)
        res["eager-cl"] = time_fn(lambda: mcl(xcl))
        import torch._inductor.config as ic
        for lo in (True, False):
            torch._dynamo.reset()
            ic.layout_optimization = lo
            cm = torch.compile(m, mode="reduce-overhead")
            for _ in range(5):
                cm(x)
            res[f"compile-ro-layoutopt={lo}"] = time_fn(lambda: cm(x))
        ic.layout_optimization = True
        torch._dynamo.reset()
    return res, m


def conv_times(m, batch):
    """Each distinct conv of m alone: NCHW vs channels-last, graph replay."""
    shapes = {}

    def hook(mod, inp, out):
        k = (tuple(inp[0].shape), mod.out_channels, mod.kernel_size,
             mod.stride, mod.padding, mod.groups)
        shapes.setdefault(k, [mod, 0])[1] += 1

    hs = [mod.register_forward_hook(hook) for mod in m.modules()
          if isinstance(mod, torch.nn.Conv2d)]
    with torch.no_grad():
        m(torch.randn(batch, 3, 224, 224, device="cuda"))
    for h in hs:
        h.remove()
    rows = []
    with torch.no_grad():
        for (ishape, oc, ks, st, pad, g), (mod, count) in shapes.items():
            row = {"in": list(ishape), "out_ch": oc, "kernel": list(ks),
                   "stride": list(st), "pad": list(pad), "count": count}
            for fmt in ("nchw", "cl"):
                mf = torch.channels_last if fmt == "cl" else torch.contiguous_format
                x = torch.randn(*ishape, device="cuda").to(memory_format=mf)
                w = mod.weight.detach().to(memory_format=mf)
                b = torch.zeros(oc, device="cuda")
                y = {}

                def f():
                    y["y"] = F.relu(F.conv2d(x, w, b, st, pad, 1, g))
                row[fmt] = time_fn(graphed(f), iters=100) * 1e3  # us
            rows.append(row)
    return rows


def ours(superopt, onnx_path, batch):
    r = subprocess.run([superopt, "run", onnx_path, "--device", "cuda",
                        "--batch", str(batch), "--iters", "100", "--profile"],
                       capture_output=True, text=True)
    return {"rc": r.returncode, "stdout": r.stdout[-20000:],
            "stderr": r.stderr[-4000:]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--superopt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "batch": a.batch}
    res["model_ms"], m = model_times(a.batch)
    print(json.dumps(res["model_ms"], indent=1), flush=True)
    res["convs_us"] = conv_times(m, a.batch)
    tot = {f: sum(r[f] * r["count"] for r in res["convs_us"])
           for f in ("nchw", "cl")}
    res["convs_total_us"] = tot
    for r in res["convs_us"]:
        print(r["in"], r["out_ch"], r["kernel"], r["stride"], "x%d" % r["count"],
              "nchw %.1f us  cl %.1f us" % (r["nchw"], r["cl"]))
    print("sum of convs (with relu): nchw %.1f us, channels-last %.1f us" %
          (tot["nchw"], tot["cl"]), flush=True)
    onnx_path = os.path.join(a.out, "resnet18.onnx")
    torch.onnx.export(torchvision.models.resnet18().eval(),
                      torch.randn(1, 3, 224, 224), onnx_path,
                      export_params=False, opset_version=17, dynamo=False)
    res["ours"] = ours(a.superopt, onnx_path, a.batch)
    print(res["ours"]["stdout"][-6000:], res["ours"]["stderr"][-2000:])
    with open(os.path.join(a.out, "conv-study.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
