#!/usr/bin/env python3
"""export-tv.py: more torchvision networks as .graph files, for bench-gpu.py.

Runs where PyTorch and torchvision are (the GPU machine's python3; the GPU
itself is not needed). For each network: torch.onnx.export with
export_params=False, opset 17, batch 1, input 1x3x224x224 (as
../shared/models/README.md describes), then `superopt import` into
OUT/tv_<name>.graph, and with --optimize also `superopt optimize` for batch
1 (OUT/optimized/) and batch 16 (OUT/optimized16/). A network that fails to
export, import or optimize is reported (the failing step and the tool's
last message) and the others go on; the exit status is 1 when any failed.

Then, e.g. (lead, on the GPU machine, from a bundle of scripts/bundle-gpu):
  python3 export-tv.py --superopt .gpu-bundle/superopt --out /tmp/tv --optimize
  python3 bench-gpu.py --superopt .gpu-bundle/superopt --models /tmp/tv \\
      --optimized /tmp/tv/optimized --optimized16 /tmp/tv/optimized16 --out $OUT
"""
import argparse
import os
import subprocess
import sys

NETS = ["mobilenet_v3_large", "shufflenet_v2_x1_0", "vgg16", "regnet_y_800mf",
        "convnext_tiny", "wide_resnet50_2"]


def step(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s: %s" % (" ".join(cmd[:2]),
                                       (r.stdout + r.stderr).strip()[-400:]))
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--superopt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--optimize", action="store_true",
                    help="also optimize each graph for batch 1 and 16")
    ap.add_argument("--optimize-args", default="",
                    help="extra arguments for superopt optimize")
    a = ap.parse_args()
    import torch
    import torchvision
    os.makedirs(a.out, exist_ok=True)
    failed = []
    for net in a.nets.split(","):
        onnx = os.path.join(a.out, net + ".onnx")
        graph = os.path.join(a.out, "tv_%s.graph" % net)
        try:
            m = getattr(torchvision.models, net)(weights=None).eval()
            x = torch.rand(1, 3, 224, 224)
            torch.onnx.export(m, (x,), onnx, export_params=False,
                              opset_version=17, input_names=["x"],
                              dynamo=False)
            step([a.superopt, "import", onnx, "-o", graph])
            print("%s: %s" % (net, step([a.superopt, "check", graph])
                              .splitlines()[0]), flush=True)
            if a.optimize:
                for sub, extra in (("optimized", []),
                                   ("optimized16", ["--batch", "16"])):
                    os.makedirs(os.path.join(a.out, sub), exist_ok=True)
                    out = step([a.superopt, "optimize", graph, "-o",
                                os.path.join(a.out, sub, os.path.basename(
                                    graph))] + extra + a.optimize_args.split())
                    print("  %s: %s" % (sub, " | ".join(
                        l for l in out.splitlines()
                        if l.startswith(("fusion", "check", "wrote")))),
                          flush=True)
        except Exception as e:  # a finding: report it, go on
            failed.append(net)
            print("%s: FAILED: %s" % (net, str(e).strip()[-500:]), flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
