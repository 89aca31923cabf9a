"""optimize_parity.py: `superopt optimize`, the C API (tests/api_optimize.c)
and the Python package run one pipeline (src/opt): for the same model and
options they write byte-identical graphs and report the same counts (rules
applied, pass rules, activations fused, siblings merged, fused and
attention nodes, node order, mutants, the passes' and the lower stage's
counts). Zoo models resnet18, squeezenet and BERT-base at budget 20 with
the first rules of default.rules (a short load; the search, mutants and
fusion all run), under the default (no pass; resnet18 also with
extended.rules after them, the default's pair of files, given as two) and
the ablation (--passes rules: the pass rules; --passes hand), a small ONNX
model with an RMSNorm and movement chains, and the progress callback's
stages.

The drop-in path too: a small BERT export with dynamic axes imported at
fixed shapes (--input-shape; then --dim binding its named dimensions, the
same result), optimized and written as ONNX like the original (--like) by
the CLI (import, then optimize -o X.onnx --like), the C API and Python:
the same bytes. And gen-rules and export-rules: the CLI
and the library calls write the same files.

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
CASES = [  # model, options (CLI spelling), with extended.rules too
    ("resnet18", ["--no-check"], True),
    ("tv_squeezenet", [], False),
    ("tv_squeezenet", ["--passes", "rules"], False),
    ("bert_base", ["--no-check", "--passes", "rules"], False),
    ("small.onnx", [], False),  # written by small_model
    ("small.onnx", ["--passes", "hand"], False),
]
COUNTS = ["nodes_before", "nodes_after", "rules", "rules_read",
          "rules_applied", "pass_rules_applied", "acts_fused", "acts_unfused",
          "acts_fused_by_rules", "merged", "merged_by_rules", "bn_folded",
          "cse", "scales_folded", "splits_merged", "fused_nodes",
          "attention_nodes", "fused_ops", "fuse_recomputed", "fuse_rejected",
          "moved", "mutants_applied", "mutants_considered",
          "mutants_not_cheaper", "mutants_overlapping", "mutants_refused",
          "mutants_unmeasured", "expanded", "generated", "duplicates",
          "rejected", "queue_peak", "regions", "stopped_by_patience",
          "fuse_chosen", "inst_proven", "inst_refused", "rules_reproved",
          "rules_unproven", "rules_demoted", "check_rounds", "check_compared",
          "moves_removed", "rmsnorms", "rotates_folded", "identities_dropped",
          "lower_epilogues", "lower_moves", "lower_se", "lower_shuffles",
          "row_attention", "move_nodes", "move_node_ops", "patch_embeddings",
          "fuse_peeled"]
# costs, compared as optimize prints them (%.2f)
COSTS = ["cost_before_us", "cost_unfused_us", "fuse_cost_before_us",
         "fuse_cost_after_us"]
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


def groups(out, pattern, n, what, optional=False):
    """The n numbers pattern captures in optimize's output (0s when an
    optional line is absent)."""
    m = re.search(pattern, out, re.M)
    if m:
        return [int(x) if re.fullmatch(r"\d+", x) else x for x in m.groups()]
    if not optional:
        fail("optimize's output lacks its %s line" % what)
    return [0 if optional else -1] * n


def cli_counts(out):
    """Every count `superopt optimize` prints, by the report's names."""
    c = {}
    c["nodes_before"], c["rules_read"] = groups(
        out, r"^model: .* \((\d+) operators\); (\d+) rules", 2, "model")
    c["rules"], = groups(
        out, r"^rules: (\d+) usable directions read for this model", 1,
        "rules")
    c["nodes_after"], = groups(out, r"^wrote .* \((\d+) operators\)", 1,
                               "wrote")
    (c["cse"], c["bn_folded"], c["scales_folded"], c["acts_fused"],
     c["acts_fused_by_rules"], c["acts_unfused"], c["merged"],
     c["merged_by_rules"], c["splits_merged"], c["moves_removed"],
     c["rmsnorms"], c["rotates_folded"], c["identities_dropped"]) = groups(
        out, r"^passes: (\d+) common subexpressions, (\d+) batchnorm folded, "
        r"(\d+) scales folded, (\d+) activations fused \((\d+) by pass "
        r"rules, (\d+) taken back out by them\), (\d+) sibling groups merged "
        r"\((\d+) by pass rules\), (\d+) nested splits folded, (\d+) "
        r"movement operators removed, (\d+) RMSNorms formed, (\d+) "
        r"rotate_halves folded into projections, (\d+) identities dropped "
        r"after the search$", 13, "passes")
    c["rules_applied"], c["pass_rules_applied"] = groups(
        out, r"^rules applied in all: (\d+) \((\d+) of them pass rules\)", 2,
        "rules applied in all")
    (c["expanded"], c["generated"], c["duplicates"], c["rejected"],
     c["queue_peak"], c["regions"], c["stopped_by_patience"],
     c["fuse_chosen"]) = groups(
        out, r"^search: (\d+) expanded, (\d+) generated, (\d+) duplicates, "
        r"(\d+) rejected, queue peak (\d+), (\d+) regions \((\d+) stopped by "
        r"patience, (\d+) took a graph cheaper once fused\)", 8, "search")
    c["inst_proven"], c["inst_refused"] = groups(
        out, r"^rule instances .*: (\d+) proven, (\d+) refused", 2,
        "rule instances")
    (c["mutants_applied"], c["mutants_considered"], c["mutants_not_cheaper"],
     c["mutants_overlapping"], c["mutants_refused"],
     c["mutants_unmeasured"]) = groups(
        out, r"^mutants applied: (\d+) of (\d+) considered \((\d+) not "
        r"cheaper, (\d+) not chosen, (\d+) refused, (\d+) cheaper by "
        r"estimates only\)", 6, "mutants")
    (c["attention_nodes"], c["fused_nodes"], c["fused_ops"],
     c["fuse_recomputed"], c["fuse_rejected"], c["fuse_peeled"],
     c["fuse_cost_before_us"], c["fuse_cost_after_us"]) = groups(
        out, r"^fusion: (\d+) attention nodes?, (\d+) fused nodes? replaces? "
        r"(\d+) operators \((\d+) recomputed, (\d+) groups? refused by "
        r"cost; (\d+) product(?:'s|s') bias and residual moved into the layer "
        r"norm after it\); estimated ([\d.]+) -> ([\d.]+) us", 8, "fusion")
    (c["lower_epilogues"], c["lower_moves"], c["lower_se"],
     c["lower_shuffles"], c["moved"], c["row_attention"], c["move_nodes"],
     c["move_node_ops"], c["patch_embeddings"]) = groups(
        out, r"^lower: (\d+) epilogues \(residual, bias, clip, relu\), (\d+) "
        r"moves \(act on concat/split parts, pad\+slice\), (\d+) "
        r"squeeze-and-excitation, (\d+) channel shuffles made graph nodes, "
        r"(\d+) shortcuts? moved ahead of the chains? (?:it|they) joins?, "
        r"(\d+) attention in row layout, (\d+) move nodes replace (\d+) "
        r"movement operators, (\d+) patch embeddings? as matmuls?$", 9,
        "lower")
    c["rules_reproved"], = groups(out, r"^re-proof: re-proved (\d+)", 1,
                                  "re-proof", optional=True)
    c["rules_unproven"], = groups(
        out, r"^re-proof: .*; (\d+) applied rules? not labelled proven", 1,
        "re-proof", optional=True)
    c["rules_demoted"], = groups(out, r"^re-proof: .*; demoted (\d+)", 1,
                                 "re-proof", optional=True)
    c["check_rounds"], c["check_compared"] = groups(
        out, r"^check: .* over (\d+) rounds .*; (\d+) elements\)", 2, "check",
        optional=True)
    c["cost_before_us"], = groups(out, r"^cost before: ([\d.]+) us", 1,
                                  "cost before")
    c["cost_unfused_us"], = groups(out, r"^cost after:  ([\d.]+) us", 1,
                                   "cost after")
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
    passes = opts[opts.index("--passes") + 1] if "--passes" in opts else "none"
    h, rep = g.optimize(rules=rules, budget=20, check="--no-check" not in opts,
                        passes=passes, progress=lambda *a: seen.append(a))
    h.save(out)
    c = {k: getattr(rep, k) for k in COUNTS}
    c.update({k: "%.2f" % getattr(rep, k) for k in COSTS})
    return c, seen


def small_model(path):
    """An RMSNorm (onnx_rmsnorm.py's), two transposes that cancel, a
    projection, a roll along the rows and a transpose (one move node): the
    passes' movement operators removed and RMSNorms formed, the lower
    stage's move nodes, counted alike."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from onnx_rmsnorm import const, rms_nodes
    H = helper.make_node
    rng = np.random.default_rng(5)
    nodes = rms_nodes("x", "w1", "n1", "a_", False) + [
        H("Transpose", ["n1"], ["t1"], perm=[0, 2, 1]),
        H("Transpose", ["t1"], ["t2"], perm=[0, 2, 1]),
        H("MatMul", ["t2", "p"], ["h"]),
        H("Slice", ["h", "s1", "e1", "ax"], ["h1"]),
        H("Slice", ["h", "s0", "e0", "ax"], ["h0"]),
        H("Concat", ["h1", "h0"], ["hr"], axis=1),
        H("Transpose", ["hr"], ["y"], perm=[0, 2, 1])]
    inits = [const("w1", rng.uniform(0.5, 1.5, 32)),
             const("p", rng.uniform(-0.2, 0.2, (32, 32))),
             const("a_two", 2.0), const("a_one", 1.0), const("a_eps", 1e-6)]
    inits += [numpy_helper.from_array(np.array(v, dtype=np.int64), k)
              for k, v in (("s1", [1]), ("e1", [16]), ("s0", [0]),
                           ("e0", [1]), ("ax", [1]))]
    g = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32, 16])],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, path)
    return path


def one(case, tmp, rules, binary, driver, src):
    name, opts, ext = case
    model = (small_model(os.path.join(tmp, name)) if name == "small.onnx"
             else os.path.join(src, "models", name + ".graph"))
    if ext:  # the default's pair of files: --rules A --rules B, [A, B]
        rules = [rules, superopt.data_path("rules/extended.rules")]
    common = [a for r in ([rules] if isinstance(rules, str) else rules)
              for a in ("--rules", r)] + ["--budget", "20"] + opts
    tag = name + "".join(opts).replace("-", ".")
    outs = {k: os.path.join(tmp, "%s.%s.graph" % (tag, k))
            for k in ("cli", "capi", "python")}
    cli = run([binary, "optimize", model, "-o", outs["cli"]] + common)
    capi = run([driver, model, outs["capi"]] + common)
    counts = {"cli": cli_counts(cli.stdout),
              "capi": {ln.split()[0]: ln.split()[1] if ln.split()[0] in
                       COSTS else int(ln.split()[1])
                       for ln in capi.stdout.splitlines()}}
    counts["python"], seen = python_side(model, rules, opts, outs["python"])
    texts = {k: open(p, "rb").read() if os.path.exists(p) else b""
             for k, p in outs.items()}
    for k in ("capi", "python"):
        if texts[k] != texts["cli"] or not texts[k]:
            fail("%s: the graph %s wrote differs from the CLI's" % (tag, k))
        if counts[k] != counts["cli"]:
            fail("%s: %s counts %s, the CLI %s" % (tag, k, counts[k],
                                                    counts["cli"]))
    first = []  # the stages in the order progress first named them
    for s, _, _, _ in seen:
        first += [] if s in first else [s]
    want = ["rules", "batch", "costs", "passes", "search", "splits", "prune",
            "reprove", "dtype", "fuse", "lower", "check"]
    if first != want:
        fail("%s: progress named the stages %s" % (tag, first))
    regions = [(d, t) for s, d, t, _ in seen if s == "search" and t]
    if not regions or any(not 0 <= d < t for d, t in regions):
        fail("%s: progress gave no regions of the search: %s" % (tag, seen))
    if "progress search 0 " not in capi.stderr:
        fail("%s: the C API's progress callback saw no region" % tag)
    print("%s: %d bytes alike from CLI, C API, Python; counts %s" %
          (tag, len(texts["cli"]), counts["cli"]))
    return counts["cli"]


def dropin(tmp, rules, binary, driver, src, flag, values, kw):
    """BERT (int64 token ids, dynamic axes) imported at 2x16 (flag
    --input-shape or --dim, the same values as the Python keyword kw),
    optimized, exported like the original: CLI, C API and Python write the
    same ONNX. The CLI does not fuse an .onnx output; the API callers say
    so. Python's load_onnx reads bytes: its kw too."""
    model = os.path.join(src, "models", "onnx", "exports", "bert.legacy.onnx")
    how = flag.strip("-")
    graph = os.path.join(tmp, "bert.%s.graph" % how)
    out = {k: os.path.join(tmp, "bert.%s.%s.onnx" % (how, k))
           for k in ("cli", "capi", "python")}
    opts = [a for v in values for a in (flag, v)]
    run([binary, "import", model, "-o", graph] + opts)
    common = ["--rules", rules, "--budget", "20", "--no-check"]
    run([binary, "optimize", graph, "-o", out["cli"], "--like", model] +
        common)
    run([driver, model, out["capi"], "--like", model, "--no-fuse"] + common +
        opts)
    g = superopt.load(model, **{kw: values})
    with open(model, "rb") as f:
        g2 = superopt.load_onnx(f.read(), name=model, **{kw: values})
    if g2.text() != g.text():
        fail("bert %s: load_onnx and load import different graphs" % how)
    h, _ = g.optimize(rules=rules, budget=20, check=False, fuse=False)
    h.save(out["python"], like=model)
    data = {k: open(p, "rb").read() if os.path.exists(p) else b""
            for k, p in out.items()}
    for k in ("capi", "python"):
        if not data[k] or data[k] != data["cli"]:
            fail("bert drop-in (%s): the ONNX %s wrote differs from the "
                 "CLI's" % (flag, k))
    print("bert drop-in (%s): %d ONNX bytes alike from CLI, C API, Python" %
          (flag, len(data["cli"])))
    return data["cli"]


def rule_files(tmp, binary):
    """gen-rules and export-rules: the CLI's files and the library calls'
    are the same bytes."""
    cli, lib = (os.path.join(tmp, "g.%s.rules" % k) for k in ("cli", "lib"))
    run([binary, "gen-rules", "--max-ops", "2", "--ops", "relu,ewadd",
         "--threads", "1", "-o", cli])
    superopt.gen_rules(max_ops=2, ops="relu,ewadd", threads=1, output=lib)
    same = [open(cli, "rb").read() == open(lib, "rb").read()]
    for fmt in ("json", "taso-pb", "tensat"):
        x = os.path.join(tmp, "g." + fmt)
        p = run([binary, "export-rules", cli, "--format", fmt, "-o", x])
        data, rep = superopt.export_rules(lib, fmt)
        same.append(open(x, "rb").read() == data)
        if "exported %d rules" % rep.exported not in p.stderr:
            fail("export-rules %s: the CLI says %r, the library %d" %
                 (fmt, p.stderr.strip(), rep.exported))
    if not all(same):
        fail("gen-rules / export-rules (json, taso-pb, tensat): the CLI and "
             "the library differ: %s" % same)
    print("gen-rules, export-rules: the same files from CLI and library")


def main():
    binary, driver, src = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SUPEROPT_COSTDB"] = os.path.join(tmp, "costdb.sqlite")
        rules = subset_rules(os.path.join(tmp, "subset.rules"))
        got = [one(c, tmp, rules, binary, driver, src) for c in CASES]
        shapes = dropin(tmp, rules, binary, driver, src, "--input-shape",
                        ["input_ids=2x16", "attention_mask=2x16"],
                        "input_shapes")
        dims = dropin(tmp, rules, binary, driver, src, "--dim",
                      ["batch=2", "seq=16"], "dims")
        if not dims or dims != shapes:
            fail("bert drop-in: --dim batch=2 --dim seq=16 is not "
                 "--input-shape's 2x16")
        rule_files(tmp, binary)
    # the cases exercise what they are meant to: the default's rules of
    # both files, pass rules (the ablation), fusion
    both = RULES + sum(1 for ln in open(superopt.data_path(
        "rules/extended.rules")) if ln.startswith("rule "))
    if got[0]["rules_read"] != both:
        fail("resnet18 read %d rules, not the %d of both files" %
             (got[0]["rules_read"], both))
    if not any(c["pass_rules_applied"] > 0 for c in got):
        fail("no case applied a pass rule")
    if any(c["pass_rules_applied"] + c["bn_folded"] > 0
           for c, (_, opts, _) in zip(got, CASES) if "--passes" not in opts):
        fail("a case of the default ran a pass")
    if not any(c["attention_nodes"] + c["fused_nodes"] > 0 for c in got):
        fail("no case fused anything")
    for k in ("moves_removed", "rmsnorms", "lower_epilogues", "row_attention",
              "move_nodes", "move_node_ops"):
        if not any(c[k] > 0 for c in got):
            fail("no case counted any %s" % k)
    print("%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
