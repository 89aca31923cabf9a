#!/usr/bin/env python3
"""probe-conv-splitk.py: does splitting a convolution over its input
channels pay on this GPU?

A convolution is the sum of convolutions over groups of its input
channels: conv(x, w) = sum_g conv(x_g, w_g), or one grouped convolution
with the filters of every group stacked along the outputs, then a sum
over the groups. At batch 1 the deep convolutions of a ResNet are bound by
the serial reduction over C*kh*kw inside each tile (a 3x3 512 -> 512
convolution on 7x7 has few output tiles); splitting that reduction is
what split-K does for a GEMM. This times, for ResNet shapes at batch 1
and 16 (channels-last, TF32 allowed, cudnn.benchmark on, each variant
captured 20 times in a CUDA graph, median of 9 replays): the plain
convolution, the grouped convolution with g = 2, 4, 8, and grouped + sum,
with the relative error of the sum against the plain result.

Runs on the GPU machine (PyTorch there): python3 scripts/probe-conv-splitk.py
Prints one line per shape. (H200, 2026-11-26: refuted, docs/notes/results.md.)
"""
import torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
print(torch.cuda.get_device_name(), torch.__version__, torch.backends.cudnn.version())
def tgraph(fn, reps=20):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): fn()
    g.replay(); torch.cuda.synchronize()
    ts = []
    for _ in range(9):
        e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
        e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / reps * 1000)
    ts.sort(); return ts[4]
for b in (1, 16):
  for c,h,k,o in [(64,56,3,64),(128,28,3,128),(256,14,3,256),(512,7,3,512),(1024,14,1,256),(2048,7,1,512),(512,7,1,2048)]:
    x = torch.randn(b,c,h,h,device='cuda').to(memory_format=torch.channels_last)
    w = (torch.randn(o,c,k,k,device='cuda')*0.01).to(memory_format=torch.channels_last)
    ref = F.conv2d(x,w,padding=k//2)
    res = [f"b{b} c{c} h{h} k{k} o{o}: plain {tgraph(lambda: F.conv2d(x,w,padding=k//2)):.2f}"]
    for g in (2,4,8):
        if c % g: continue
        wg = torch.cat(w.split(c//g, dim=1), dim=0).contiguous().to(memory_format=torch.channels_last)  # [g*o, c/g, k, k]
        def f():  # [b, g*o, h, h] -> [b, g, o, h, h] -> summed over g
            return F.conv2d(x, wg, padding=k//2, groups=g).unflatten(1, (g, o)).sum(1)
        out = f(); err = ((out-ref).norm()/ref.norm()).item()
        t1 = tgraph(lambda: F.conv2d(x, wg, padding=k//2, groups=g))
        t2 = tgraph(f)
        res.append(f"g{g} conv {t1:.2f} +sum {t2:.2f} (err {err:.1e})")
    print("  ".join(res), flush=True)
