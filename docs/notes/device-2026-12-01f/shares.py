#!/usr/bin/env python3
"""shares.py T1.txt [T16.txt ...]: share.sh's timings as shares of the
default's gain, (orig - X) / (orig - default), each kind's mean of its
rounds, per network and summed over the networks of each file (the gains
added, as docs/notes/results.md's totals are)."""
import sys
from collections import defaultdict

for f in sys.argv[1:]:
    t = defaultdict(list)
    for line in open(f):
        p = line.split()
        if len(p) >= 5 and p[3] == "time:":
            t[(p[0], p[1])].append(float(p[4]))
    nets = sorted({n for n, _ in t})
    kinds = [k for k in ("ro", "mi", "mi0") if any((n, k) in t for n in nets)]
    m = {key: sum(v) / len(v) for key, v in t.items()}
    print("| network | orig ms | default ms | " +
          " | ".join("%s ms | %s share" % (k, k) for k in kinds) + " |")
    print("| --- |" + " ---: |" * (2 + 2 * len(kinds)))
    tot = defaultdict(float)
    for n in nets:
        o, d = m[(n, "orig")], m[(n, "default")]
        row = "| %s | %.4f | %.4f |" % (n, o, d)
        tot["gain"] += o - d
        for k in kinds:
            x = m[(n, k)]
            tot[k] += o - x
            row += " %.4f | %.1f%% |" % (x, 100 * (o - x) / (o - d))
        print(row)
    print("| **all** | | %.3f ms gain |" % tot["gain"] + "".join(
        " | **%.1f%%** |" % (100 * tot[k] / tot["gain"]) for k in kinds))
    print()
