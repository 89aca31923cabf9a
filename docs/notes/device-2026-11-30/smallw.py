#!/usr/bin/env python3
"""smallw.py DIR...: for each NET.graph + NET.safetensors under DIR, write
NET.small (a safetensors file of the tensors of at most 4096 elements:
the constants, masks' scalars, biases, layer norms' parameters), so that
a device run can bring back what a local `optimize --device h200` of the
benchmark's own imported graphs needs (their constants decide which
attention fuses; the big weights draw at random). Here: copy NET.small to
NET.safetensors beside NET.graph. The metadata (the graph hash) is kept,
so the sidecar still matches its graph. No third-party package."""
import json, os, struct, sys

LIMIT = 4096


def small(path, out):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        base = 8 + n
        keep, parts, off = {}, [], 0
        for k, v in head.items():
            if k == "__metadata__":
                keep[k] = v
                continue
            numel = 1
            for d in v["shape"]:
                numel *= d
            if numel > LIMIT:
                continue
            b, e = v["data_offsets"]
            f.seek(base + b)
            data = f.read(e - b)
            keep[k] = dict(v, data_offsets=[off, off + len(data)])
            parts.append(data)
            off += len(data)
    h = json.dumps(keep, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for p in parts:
            f.write(p)


for d in sys.argv[1:]:
    for root, _, files in os.walk(d):
        for name in files:
            if name.endswith(".safetensors"):
                p = os.path.join(root, name)
                small(p, p[: -len(".safetensors")] + ".small")
