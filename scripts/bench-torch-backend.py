#!/usr/bin/env python3
"""bench-torch-backend.py: torch.compile(backend="superopt") on ResNet-50
(torchvision, random weights) and a BERT-base encoder (12 layers, hidden 768,
12 heads, FFN 3072, GELU; a plain PyTorch module, input embeddings
[B,128,768]) against eager and torch.compile(mode="reduce-overhead"):
outputs vs eager (max relative error; TF32 tolerance 1e-2) and median latency
(CUDA events around one forward call, 100 iterations after 20 warm-up), plus
the compile time of the first call. Prints a Markdown table for
docs/notes/benchmarks.md and writes it to --out.

usage (on the GPU machine, after `cmake --install build --prefix P` of a
CUDA build and with torch + torchvision):
  SUPEROPT_PREFIX=P PYTHONPATH=python python3 scripts/bench-torch-backend.py \\
      [--batch 1,16] [--models resnet50,bert] [--budget 200] [--out F.md]
"""
import argparse
import math
import statistics
import sys
import time
import warnings

import torch

import superopt
from superopt import torch_backend

torch_backend.register()


class BertLayer(torch.nn.Module):
    def __init__(self, h=768, heads=12, ffn=3072):
        super().__init__()
        self.heads, self.dh = heads, h // heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(h, h)
                                          for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.f1, self.f2 = torch.nn.Linear(h, ffn), torch.nn.Linear(ffn, h)

    def split(self, x):
        b, s, _ = x.shape
        return x.reshape(b, s, self.heads, self.dh).transpose(1, 2)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), \
            self.split(self.v(x))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh), -1)
        c = (a @ v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.o(c))
        return self.ln2(x + self.f2(torch.nn.functional.gelu(self.f1(x))))


class Bert(torch.nn.Module):
    def __init__(self, layers=12):
        super().__init__()
        self.layers = torch.nn.Sequential(*[BertLayer() for _ in range(layers)])

    def forward(self, x):
        return self.layers(x)


def make(name, batch):
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50(), torch.randn(batch, 3, 224, 224)
    if name == "bert":
        return Bert(), torch.randn(batch, 128, 768)
    raise SystemExit("unknown model " + name)


def latency(fn, x, iters=100, warmup=20):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
        enable_timing=True)
    ms = []
    for _ in range(iters):
        a.record()
        fn(x)
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def first_call(fn, x):
    t = time.perf_counter()
    y = fn(x)
    torch.cuda.synchronize()
    return y, time.perf_counter() - t


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--batch", default="1,16")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--out", default="torch-backend.md")
    args = ap.parse_args()
    if not torch.cuda.is_available() or not superopt.cuda_available():
        sys.exit("needs a GPU and a CUDA build of libsuperopt")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    print(superopt.build_info(), file=sys.stderr)
    rows = ["| model | batch | eager ms | reduce-overhead ms | superopt ms | "
            "superopt err vs eager | reduce-overhead compile s | superopt "
            "compile s | superopt fallbacks |", "|---|---|---|---|---|---|---|"
            "---|---|"]
    for name in args.models.split(","):
        for batch in map(int, args.batch.split(",")):
            torch.manual_seed(0)
            model, x = make(name, batch)
            model, x = model.eval().cuda(), x.cuda()
            with torch.no_grad():
                ref = model(x)
                eager = latency(model, x)
                torch._dynamo.reset()
                ro = torch.compile(model, mode="reduce-overhead")
                _, ro_s = first_call(ro, x)
                ro_ms = latency(ro, x)
                torch._dynamo.reset()
                so = torch.compile(model, backend="superopt",
                                   options={"budget": args.budget,
                                            "verbose": True})
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always", RuntimeWarning)
                    y, so_s = first_call(so, x)
                fallbacks = [str(m.message) for m in w
                             if "superopt" in str(m.message)]
                for f in fallbacks:
                    print(f, file=sys.stderr)
                err = rel(y, ref)
                so_ms = latency(so, x)
            rows.append("| %s | %d | %.3f | %.3f | %.3f | %.2e | %.1f | %.1f "
                        "| %d |" % (name, batch, eager, ro_ms, so_ms, err,
                                    ro_s, so_s, len(fallbacks)))
            print(rows[-1], flush=True)
            if err > 1e-2:
                print("FAIL: %s batch %d differs from eager (%.3g)" %
                      (name, batch, err), file=sys.stderr)
    text = "\n".join(rows) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
