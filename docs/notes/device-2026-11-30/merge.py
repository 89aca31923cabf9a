#!/usr/bin/env python3
"""Issue 42's tables from the three loans of 2026-11-30 (run in this folder):
each (dtype, network, batch) row from the latest loan that timed it with
its own batch's graph (a row marked ours-opt-graph timed another batch's
graph and is left out); geomeans over all 21 and over the 17 whose anchor
is a PyTorch module (the four zoo graphs' is torch compiling the bench's
interpreter)."""
import glob, json, math

LOANS = [("06:12", glob.glob("loan-0612/c*/*/*/bench/bench.json") +
          glob.glob("loan-0612/t/*/transformers.json")),
         ("08:23", glob.glob("loan-0823/r/*/*/bench/bench.json")),
         ("08:43", glob.glob("loan-0843/m/*/*/bench/bench.json"))]
GRAPH_RO = {"bert_base", "nasnet_a", "resnet50", "resnext50_taso"}
best = {}
for loan, files in LOANS:
    for f in files:
        for r in json.load(open(f))["rows"]:
            if r.get("opt/ro") in (None, "") or r.get("ours-opt-graph"):
                continue
            net = r.get("graph") or r.get("net")
            best[(r["dtype"], net, int(r["batch"]))] = dict(r, loan=loan)


def gm(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


for dt in ("bf16", "f16"):
    nets = sorted({n for d, n, _ in best if d == dt})
    print("\n**%s**\n" % dt)
    print("| network | b1 ours / anchor ms | b1 | b16 ours / anchor ms | b16 "
          "| acc ours / torch | loan |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for n in nets:
        c = []
        for b in (1, 16):
            r = best.get((dt, n, b))
            anchor = r and (r.get("tv-ro") or r.get("graph-ro") or r.get("ro"))
            c.append(("%.3f / %.3f" % (float(r["ours-opt"]), float(anchor)),
                      "%.3f" % float(r["opt/ro"])) if r else ("-", "-"))
        a = best.get((dt, n, 1), {})
        acc = ("%.2g / %.2g" % (float(a["acc-ours"]), float(a["acc-torch"]))
               if a.get("acc-ours") not in (None, "") else "")
        loans = sorted({best[(dt, n, b)]["loan"] for b in (1, 16)
                        if (dt, n, b) in best})
        print("| %s%s | %s | %s | %s | %s | %s | %s |" % (
            n, " (graph-ro)" if n in GRAPH_RO else "", c[0][0], c[0][1],
            c[1][0], c[1][1], acc, ", ".join(loans)))
    print()
    for b in (1, 16):
        rows = {n: best[(dt, n, b)] for n in nets if (dt, n, b) in best}
        v = {n: float(r["opt/ro"]) for n, r in rows.items()}
        worst = max(v, key=v.get)
        mod = [x for n, x in v.items() if n not in GRAPH_RO]
        print("- %s b%d: geomean %.3f over %d (%.3f over the %d with a module "
              "anchor); worst %s %.3f; above 0.95: %s" % (
                  dt, b, gm(v.values()), len(v), gm(mod), len(mod), worst,
                  v[worst], [n for n in v if v[n] > 0.95] or "none"))
    acc = [(float(r["acc-ours"]) / float(r["acc-torch"]), n)
           for (d, n, b), r in best.items() if d == dt and
           r.get("acc-ours") not in (None, "") and float(r["acc-torch"]) > 0]
    print("- %s accuracy: %d rows, ours / PyTorch's at most %.2f (%s); "
          "beyond 2x: %s" % (dt, len(acc), max(acc)[0], max(acc)[1],
                             [n for q, n in acc if q > 2] or "none"))
