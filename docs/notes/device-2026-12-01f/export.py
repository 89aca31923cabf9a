#!/usr/bin/env python3
"""export.py OUTDIR: the seven transformers of issue 41 exported as
bench-transformers.py exports them (legacy exporter, opset 17, sequence
128, seeded weights) at batch 1 and 16, and imported (NET.bB.orig.graph
with its weights), 7 at a time. For share.sh prep."""
import importlib.util
import os
import subprocess
import sys
from multiprocessing import Pool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
spec = importlib.util.spec_from_file_location(
    "bench_transformers", os.path.join(ROOT, "scripts", "bench-transformers.py"))
BT = importlib.util.module_from_spec(spec)
spec.loader.exec_module(BT)
OUT = sys.argv[1]
SO = os.environ.get("SO", ".gpu-bundle/superopt")


def one(job):
    name, batch = job
    import torch
    torch.set_num_threads(2)
    stem = os.path.join(OUT, "%s.b%d" % (name, batch))
    try:
        m, args, names = BT.module_and_inputs(name, batch, 128)
        BT.export(m, args, names, stem + ".onnx")
    except Exception as e:  # report and go on
        return "%s b%d export error: %s" % (name, batch, str(e)[:200])
    r = subprocess.run([SO, "import", stem + ".onnx", "-o",
                        stem + ".orig.graph"], capture_output=True, text=True)
    os.remove(stem + ".onnx")
    return "%s b%d import rc=%d %s" % (name, batch, r.returncode,
                                       r.stderr.strip()[-200:])


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    jobs = [(n, b) for n in BT.NETS for b in (1, 16)]
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(7) as p:
        for line in p.imap_unordered(one, jobs):
            print(line, flush=True)
