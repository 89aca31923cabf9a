"""optimize_parity.py: `superopt optimize`, the C API (tests/api_optimize.c)
and the Python package run one pipeline (src/opt): for the same model and
options they write byte-identical graphs and report the same counts (rules
applied, pass rules, activations fused, siblings merged, fused and
attention nodes, node order, mutants). Zoo models resnet18, squeezenet and
BERT-base at budget 20 with the first rules of default.rules (a short load;
the pass rules, the search, mutants and fusion all run), and the progress
callback's stages.

usage: optimize_parity.py SUPEROPT API_OPTIMIZE SOURCE_DIR
(with PYTHONPATH naming python/ and SUPEROPT_LIB the built libsuperopt.so)
"""
import os
import re
import subprocess
import sys
import tempfile

import superopt

RULES = 4000  # the first rules of default.rules (sorted small first)
CASES = [  # model, options (CLI spelling), whether the check runs
    ("resnet18", ["--no-check"]),
    ("tv_squeezenet", []),
    ("bert_base", ["--no-check"]),
]
COUNTS = ["nodes_after", "rules_applied", "pass_rules_applied", "acts_fused",
          "acts_unfused", "merged", "bn_folded", "fused_nodes",
          "attention_nodes", "fused_ops", "moved", "mutants_applied"]
fails = []


def fail(msg):
    print("FAIL: " + msg)
    fails.append(msg)


def subset_rules(path):
    """The header and the first RULES rules of the default rule file."""
    text = open(superopt.data_path("rules/default.rules")).read()
    parts = re.split(r"(?m)^(?=rule )", text)
    with open(path, "w") as f:
        f.write("".join(parts[:RULES + 1]))
    return path


def cli_counts(out):
    """The counts `superopt optimize` prints."""
    def num(pattern, k=1):
        m = re.search(pattern, out, re.M)
        if not m:
            fail("optimize's output lacks /%s/" % pattern)
            return -1
        return int(m.group(k))
    c = {"nodes_after": num(r"^wrote .* \((\d+) operators\)"),
         "rules_applied": num(r"^rules applied in all: (\d+)"),
         "pass_rules_applied": num(r"^rules applied in all: \d+ \((\d+) of"),
         "bn_folded": num(r"(\d+) batchnorm folded"),
         "acts_fused": num(r"(\d+) activations fused"),
         "acts_unfused": num(r"(\d+) taken back out"),
         "merged": num(r"(\d+) sibling groups merged"),
         "moved": num(r"^order: (\d+) shortcut"),
         "mutants_applied": num(r"^mutants applied: (\d+) of")}
    m = re.search(r"^fusion: (\d+) attention nodes?, (\d+) fused nodes? "
                  r"replaces? (\d+) operators", out, re.M)
    if not m:
        fail("optimize's output lacks its fusion line")
        m = [None, -1, -1, -1]
    else:
        m = [None] + [int(x) for x in m.groups()]
    c.update(attention_nodes=m[1], fused_nodes=m[2], fused_ops=m[3])
    return c


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, **kw)
    if p.returncode:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode,
                                   p.stderr.strip()[-400:]))
    return p


def python_side(model, rules, opts, out):
    seen = []
    g = superopt.load(model)
    h, rep = g.optimize(rules=rules, budget=20, check="--no-check" not in opts,
                        progress=lambda *a: seen.append(a))
    h.save(out)
    return {k: getattr(rep, k) for k in COUNTS}, seen


def one(case, tmp, rules, binary, driver, src):
    name, opts = case
    model = os.path.join(src, "models", name + ".graph")
    common = ["--rules", rules, "--budget", "20"] + opts
    outs = {k: os.path.join(tmp, "%s.%s.graph" % (name, k))
            for k in ("cli", "capi", "python")}
    cli = run([binary, "optimize", model, "-o", outs["cli"]] + common)
    capi = run([driver, model, outs["capi"]] + common)
    counts = {"cli": cli_counts(cli.stdout),
              "capi": {ln.split()[0]: int(ln.split()[1])
                       for ln in capi.stdout.splitlines()}}
    counts["python"], seen = python_side(model, rules, opts, outs["python"])
    texts = {k: open(p, "rb").read() if os.path.exists(p) else b""
             for k, p in outs.items()}
    for k in ("capi", "python"):
        if texts[k] != texts["cli"] or not texts[k]:
            fail("%s: the graph %s wrote differs from the CLI's" % (name, k))
        if counts[k] != counts["cli"]:
            fail("%s: %s counts %s, the CLI %s" % (name, k, counts[k],
                                                    counts["cli"]))
    first = []  # the stages in the order progress first named them
    for s, _, _, _ in seen:
        first += [] if s in first else [s]
    want = ["rules", "batch", "costs", "passes", "search", "splits", "prune",
            "reprove", "fuse", "order", "lower", "check"]
    if first != want:
        fail("%s: progress named the stages %s" % (name, first))
    regions = [(d, t) for s, d, t, _ in seen if s == "search" and t]
    if not regions or any(not 0 <= d < t for d, t in regions):
        fail("%s: progress gave no regions of the search: %s" % (name, seen))
    if "progress search 0 " not in capi.stderr:
        fail("%s: the C API's progress callback saw no region" % name)
    print("%s: %d bytes alike from CLI, C API, Python; counts %s" %
          (name, len(texts["cli"]), counts["cli"]))
    return counts["cli"]


def main():
    binary, driver, src = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SUPEROPT_COSTDB"] = os.path.join(tmp, "costdb.sqlite")
        rules = subset_rules(os.path.join(tmp, "subset.rules"))
        got = [one(c, tmp, rules, binary, driver, src) for c in CASES]
    # the cases exercise what they are meant to: pass rules, fusion
    if not any(c["pass_rules_applied"] > 0 for c in got):
        fail("no case applied a pass rule")
    if not any(c["attention_nodes"] + c["fused_nodes"] > 0 for c in got):
        fail("no case fused anything")
    print("%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
