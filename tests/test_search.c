/* test_search.c: matching, rewriting, passes, the search and the optimizer
 * (src/search/), on small handwritten graphs, the rules of
 * tests/data/rules/ and the zoo in models/. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "fuse/fuse.h"
#include "pass/pass.h"
#include "search/search.h"

/* cd_sum_cost's value (the tests do not run out of memory). */
static double sum_cost(const ir_graph *g, cd_cost_fn f, void *u, int *est) {
  double c = 0;
  base_diag d;
  cr_assert_eq(cd_sum_cost(g, f, u, &c, est, &d), BASE_OK);
  return c;
}

/* ir_graph_hash's value (the tests do not run out of memory). */
static uint64_t graph_hash(const ir_graph *g) {
  uint64_t h = 0;
  cr_assert_eq(ir_graph_hash(g, &h), BASE_OK);
  return h;
}

#define RULES SUPEROPT_SOURCE_DIR "/tests/data/rules/"

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "parse: %s", d.msg);
  return g;
}

static void load_rules(const char *file, ir_ruleset *rs) {
  base_diag d;
  cr_assert_eq(ir_rules_read_file(file, rs, &d), BASE_OK, "%s:%d: %s", d.file,
               d.line, d.msg);
}

static const ir_rule *rule(const ir_ruleset *rs, const char *id) {
  for (int i = 0; i < rs->n; i++)
    if (!strcmp(rs->rules[i].id, id))
      return &rs->rules[i];
  cr_assert_fail("no rule %s", id);
  return NULL;
}

static int count_matches(const ir_graph *pat, const ir_graph *g) {
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_match_graph(pat, g, &ms, &d), BASE_OK, "%s", d.msg);
  int n = ms.n;
  rewrite_matches_free(&ms);
  return n;
}

static double check_err(const ir_graph *a, const ir_graph *b) {
  base_diag d;
  double e = -1;
  cr_assert_eq(ex_check(a, b, 7, &e, &d), BASE_OK, "check: %s", d.msg);
  return e;
}

static int count_op(const ir_graph *g, ir_opcode op) {
  int c[IR_NOPS];
  ir_op_counts(g, c);
  return c[op];
}

/* ---- matching
 * ---------------------------------------------------------------- */

static const char three_convs[] = "input x: [1,8,6,6]\n"
                                  "weight a: [5,8,1,1]\n"
                                  "weight b: [7,8,1,1]\n"
                                  "weight c: [9,8,1,1]\n"
                                  "weight k: [3,8,3,3]\n"
                                  "ya = conv2d(x, a)\n"
                                  "yb = conv2d(x, b)\n"
                                  "yc = conv2d(x, c)\n"
                                  "yk = conv2d(x, k)\n"
                                  "s = concat(ya, yb, yc, yk) axis=1\n"
                                  "output s\n";

Test(match, overlapping_multi_output) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  ir_graph *g = parse(three_convs);
  /* ordered pairs of the three 1x1 convs; the 3x3 one differs in rank-
   * generic shape only, so it matches too: 4 * 3 pairs */
  cr_assert_eq(count_matches(rule(&rs, "merge_conv1x1")->src, g), 12);
  /* the 3x3 relu pattern: params differ (act) */
  cr_assert_eq(count_matches(rule(&rs, "merge_conv3x3_relu")->src, g), 0);
  ir_graph_free(g);
  ir_ruleset_free(&rs);
}

Test(match, intermediate_used_outside) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  const ir_graph *pat = rule(&rs, "fuse_conv_relu")->src;
  ir_graph *ok = parse("input x: [1,2,4,4]\nweight w: [3,2,3,3]\n"
                       "y = conv2d(x, w)\nz = relu(y)\noutput z\n");
  ir_graph *used = parse("input x: [1,2,4,4]\nweight w: [3,2,3,3]\n"
                         "y = conv2d(x, w)\nz = relu(y)\n"
                         "s = ewadd(y, z)\noutput s\n");
  ir_graph *out = parse("input x: [1,2,4,4]\nweight w: [3,2,3,3]\n"
                        "y = conv2d(x, w)\nz = relu(y)\noutput z, y\n");
  cr_assert_eq(count_matches(pat, ok), 1);
  cr_assert_eq(count_matches(pat, used), 0);
  cr_assert_eq(count_matches(pat, out), 0);
  ir_graph_free(ok);
  ir_graph_free(used);
  ir_graph_free(out);
  ir_ruleset_free(&rs);
}

Test(match, input_used_twice_binds_one_tensor) {
  ir_graph *pat = parse("input a: [2,3]\nc = ewadd(a, a)\noutput c\n");
  ir_graph *same = parse("input x: [4,5]\nc = ewadd(x, x)\noutput c\n");
  ir_graph *diff =
      parse("input x: [4,5]\ninput y: [4,5]\nc = ewadd(x, y)\noutput c\n");
  ir_graph *rank = parse("input x: [4,5,6]\nc = ewadd(x, x)\noutput c\n");
  cr_assert_eq(count_matches(pat, same), 1);
  cr_assert_eq(count_matches(pat, diff), 0);
  cr_assert_eq(count_matches(pat, rank), 0, "rank must match");
  ir_graph_free(pat);
  ir_graph_free(same);
  ir_graph_free(diff);
  ir_graph_free(rank);
}

/* ---- rewriting
 * ------------------------------------------------------------------ */

/* Applies every match of every rule direction to g; each rewrite must
 * type-check and keep the outputs, or be refused with a shape/cycle error.
 * Checks at most `checks` rewrites per direction numerically; returns the
 * number of rewrites made. */
static int rewrite_all(const ir_ruleset *rs, const ir_graph *g, int checks) {
  int made = 0;
  for (int i = 0; i < rs->n; i++)
    for (int bw = 0; bw < 2; bw++) {
      const ir_graph *pat = bw ? rs->rules[i].dst : rs->rules[i].src;
      const ir_graph *repl = bw ? rs->rules[i].src : rs->rules[i].dst;
      rewrite_matches ms = {0};
      base_diag d;
      if (rewrite_match_graph(pat, g, &ms, &d) != BASE_OK)
        continue; /* a pattern without operators */
      for (int k = 0; k < ms.n; k++) {
        ir_graph *h = rewrite_apply(g, pat, repl, &ms.m[k], &d);
        if (!h) {
          cr_assert(d.code == BASE_ERR_SHAPE || d.code == BASE_ERR_CYCLE ||
                        d.code == BASE_ERR_PARAM,
                    "%s: %s", rs->rules[i].id, d.msg);
          continue;
        }
        cr_assert_eq(ir_graph_validate(h, &d), BASE_OK, "%s", d.msg);
        if (k < checks)
          cr_assert_leq(check_err(g, h), 1e-4, "rule %s %s", rs->rules[i].id,
                        bw ? "backward" : "forward");
        made++;
        ir_graph_free(h);
      }
      rewrite_matches_free(&ms);
    }
  return made;
}

Test(rewrite, small_graphs_keep_outputs) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  ir_graph *g = parse(three_convs);
  cr_assert_geq(rewrite_all(&rs, g, 1000), 6);
  ir_graph_free(g);
  ir_graph *m = parse("input x: [2,6,7]\nweight p: [7,3]\nweight q: [7,4]\n"
                      "a = matmul(x, p)\nb = matmul(x, q)\n"
                      "c = relu(a)\noutput c, b\n");
  cr_assert_geq(rewrite_all(&rs, m, 1000), 2);
  ir_graph_free(m);
  ir_ruleset_free(&rs);
}

Test(rewrite, merged_convs_have_one_conv_and_split_sizes) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  const ir_rule *r = rule(&rs, "merge_conv1x1");
  ir_graph *g = parse("input x: [1,8,6,6]\nweight a: [5,8,1,1]\n"
                      "weight b: [7,8,1,1]\nya = conv2d(x, a)\n"
                      "yb = conv2d(x, b)\noutput ya, yb\n");
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_match_graph(r->src, g, &ms, &d), BASE_OK);
  cr_assert_eq(ms.n, 2);
  ir_graph *h = rewrite_apply(g, r->src, r->dst, &ms.m[0], &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(count_op(h, IR_OP_CONV2D), 1);
  cr_assert_eq(count_op(h, IR_OP_SPLIT), 1);
  int o = ir_find_tensor(h, "ya");
  cr_assert_geq(o, 0, "replaced outputs keep their names");
  cr_assert_eq(h->tensors[o].shape.dim[1], 5);
  cr_assert_leq(check_err(g, h), 1e-5);
  ir_graph_free(h);
  rewrite_matches_free(&ms);
  ir_graph_free(g);
  ir_ruleset_free(&rs);
}

Test(rewrite, cycle_rejected) {
  ir_ruleset rs;
  load_rules(RULES "cycle.rules", &rs);
  const ir_rule *r = &rs.rules[0];
  /* y2 reads y1 (through tanh): merging both relus would be a cycle */
  ir_graph *g = parse("input x: [3,5]\ny1 = relu(x)\nt = tanh(y1)\n"
                      "y2 = relu(t)\noutput y2\n");
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_match_graph(r->src, g, &ms, &d), BASE_OK);
  int cycles = 0, ok = 0;
  for (int k = 0; k < ms.n; k++) {
    ir_graph *h = rewrite_apply(g, r->src, r->dst, &ms.m[k], &d);
    if (h) {
      ok++;
      cr_assert_leq(check_err(g, h), 1e-6);
    } else {
      cycles += d.code == BASE_ERR_CYCLE;
    }
    ir_graph_free(h);
  }
  cr_assert_eq(ms.n, 2);
  cr_assert_eq(cycles, 2, "both orders make a cycle");
  cr_assert_eq(ok, 0);
  rewrite_matches_free(&ms);
  ir_graph_free(g);
  ir_ruleset_free(&rs);
}

Test(rewrite, shape_mismatch_rejected) {
  ir_ruleset rs;
  load_rules(RULES "cycle.rules", &rs);
  const ir_rule *r = &rs.rules[0];
  /* concat along axis 0 needs equal columns: 5 vs 6 does not type-check */
  ir_graph *g = parse("input x: [3,5]\ninput z: [2,6]\ny1 = relu(x)\n"
                      "y2 = relu(z)\noutput y1, y2\n");
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_match_graph(r->src, g, &ms, &d), BASE_OK);
  cr_assert_eq(ms.n, 2);
  for (int k = 0; k < ms.n; k++) {
    cr_assert_null(rewrite_apply(g, r->src, r->dst, &ms.m[k], &d));
    cr_assert_eq(d.code, BASE_ERR_SHAPE);
  }
  rewrite_matches_free(&ms);
  ir_graph_free(g);
  ir_ruleset_free(&rs);
}

/* ---- passes
 * ---------------------------------------------------------------------- */

static const char conv_bn[] =
    "input x: [1,3,9,9]\nweight w: [6,3,3,3]\nweight b: [6]\n"
    "weight s: [6]\nweight bb: [6]\nweight m: [6]\nweight v: [6]\n"
    "weight w2: [4,6,1,1]\nweight s2: [4]\nweight bb2: [4]\n"
    "weight m2: [4]\nweight v2: [4]\n"
    "c = conv2d(x, w, b) stride=[2,2]\nn = batchnorm(c, s, bb, m, v) "
    "eps=0.001\nr = relu(n)\nc2 = conv2d(r, w2)\n"
    "n2 = batchnorm(c2, s2, bb2, m2, v2)\ny = sigmoid(n2)\noutput y\n";

Test(passes, batchnorm_fold_and_fusion_keep_outputs) {
  ir_graph *g = parse(conv_bn);
  base_diag d;
  int n = 0, f = 0;
  ir_graph *h = pass_fold_batchnorm(g, &n, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(n, 2);
  cr_assert_eq(count_op(h, IR_OP_CONV2D), 2);
  cr_assert_leq(check_err(g, h), 1e-5);
  ir_graph *k = pass_fuse_activations(h, &f, &d);
  cr_assert(k, "%s", d.msg);
  cr_assert_eq(f, 2);
  cr_assert_eq(count_op(k, IR_OP_RELU) + count_op(k, IR_OP_SIGMOID), 0);
  cr_assert_leq(check_err(g, k), 1e-5);
  /* the folded weights are weight-only: the compute cost is two convs */
  uint8_t mask[64];
  ir_weight_only(k, mask);
  int compute = 0;
  for (int i = 0; i < k->nnodes; i++)
    compute += !mask[i];
  cr_assert_eq(compute, 2);
  cr_assert_lt(sum_cost(k, cd_model_cost, NULL, NULL),
               sum_cost(g, cd_model_cost, NULL, NULL));
  ir_graph_free(k);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A batchnorm before a convolution without padding (MaxViT's MBConv
 * pre-norm before its 1x1 expansion; its input also read by the residual
 * add) folds into the convolution's weights and bias, a 3x3 without
 * padding too (its taps' sum times the shift); before a padded one it
 * stays (the border reads 0, not the shift). */
static const char bn_conv[] =
    "input x: [2,6,7,7]\n"
    "weight s: [6]\nweight bb: [6]\nweight m: [6]\nweight v: [6]\n"
    "weight w1: [8,6,1,1]\nweight b1: [8]\nweight w3: [6,6,3,3]\n"
    "weight w4: [6,6,3,3]\nweight wr: [6,8,1,1]\n"
    "n = batchnorm(x, s, bb, m, v) eps=0.001\n"
    "c1 = conv2d(n, w1, b1) pad=[0,0,0,0] act=relu\n"
    "r = conv2d(c1, wr)\ny1 = ewadd(r, x)\n"
    "n3 = batchnorm(y1, s, bb, m, v) eps=0.001\n"
    "c3 = conv2d(n3, w3) pad=[0,0,0,0] stride=[2,2]\n"
    "n4 = batchnorm(y1, s, bb, m, v) eps=0.001\n"
    "c4 = conv2d(n4, w4) pad=[1,1,1,1]\n"
    "output c3\noutput c4\n";

Test(passes, batchnorm_before_unpadded_conv_folds) {
  ir_graph *g = parse(bn_conv);
  base_diag d;
  int n = 0;
  ir_graph *h = pass_fold_batchnorm(g, &n, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(n, 2);
  uint8_t mask[128];
  cr_assert_lt(h->nnodes, 128);
  ir_weight_only(h, mask);
  int bn = 0;
  for (int i = 0; i < h->nnodes; i++)
    bn += !mask[i] && h->nodes[i].op == IR_OP_BATCHNORM;
  cr_assert_eq(bn, 1); /* n4's, before the padded convolution */
  int c1 = ir_find_tensor(h, "c1");
  cr_assert_eq(h->nodes[h->tensors[c1].node].in[0], ir_find_tensor(h, "x"));
  cr_assert_eq(h->nodes[h->tensors[c1].node].a.act, IR_ACT_RELU);
  cr_assert_leq(check_err(g, h), 1e-5);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ConvNeXt's layer scale: s * transpose(matmul(a, W) + b) folded into W
 * and b (weight-only nodes); with and without the bias and the transpose;
 * and the sites it must leave: a scale that is an input, one along the
 * wrong axis, a matmul result read twice, a multiply that is an output. */
Test(passes, scale_fold) {
  ir_graph *g = parse(
      "input x: [2,3,4,8]\ninput si: [8,1,1]\nweight w: [8,8]\n"
      "weight b: [8]\nweight s: [8,1,1]\nweight s8: [8]\n"
      "weight sw: [1,1,4,1]\n"
      "m = matmul(x, w)\ne = ewadd(b, m)\nt = transpose(e) perm=[0,3,1,2]\n"
      "y = ewmul(s, t)\nr = relu(y)\n"
      "m2 = matmul(x, w)\nt2 = transpose(m2) perm=[0,3,1,2]\n"
      "y2 = ewmul(t2, s)\nr2 = relu(y2)\n"
      "m3 = matmul(x, w)\ny3 = ewmul(m3, s8)\nr3 = relu(y3)\n"
      "m4 = matmul(x, w)\nt4 = transpose(m4) perm=[0,3,1,2]\n"
      "y4 = ewmul(si, t4)\nr4 = relu(y4)\n"
      "m5 = matmul(x, w)\ny5 = ewmul(m5, sw)\nr5 = relu(y5)\n"
      "m6 = matmul(x, w)\ny6 = ewmul(m6, s8)\nr6 = ewadd(y6, m6)\n"
      "m7 = matmul(x, w)\ny7 = ewmul(m7, s8)\n"
      "output r, r2, r3, r4, r5, r6, y7\n");
  base_diag d;
  int n = -1;
  ir_graph *h = pass_fold_scale(g, &n, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(n, 3); /* y, y2, y3 */
  cr_assert_eq(count_op(h, IR_OP_EWMUL), count_op(g, IR_OP_EWMUL) - 3 + 4);
  cr_assert_leq(check_err(g, h), 1e-5);
  uint8_t mask[96];
  ir_weight_only(h, mask);
  int muls = 0; /* the multiplies left to run: y4, y5, y6, y7 */
  for (int i = 0; i < h->nnodes; i++)
    muls += !mask[i] && h->nodes[i].op == IR_OP_EWMUL;
  cr_assert_eq(muls, 4);
  cr_assert(ir_find_tensor(h, "y7") >= 0, "an output keeps its name");
  ir_graph_free(h);
  ir_graph_free(g);
  /* left alone (a review found both folded wrongly): a bias computed after
   * the matmul (b' is made with W'), and a scale of higher rank than what
   * it multiplies (the multiply broadcasts: its output has another shape,
   * and C would fall on the wrong axis) */
  g = parse("input x: [4,8]\ninput z: [1,4,4,3,5]\ninput x4: [4,3,5,4]\n"
            "weight w: [8,8]\nweight b0: [1,8]\nweight s: [8]\n"
            "weight s3: [1,1,8]\nweight w4: [4,4]\nweight s5: [1,4,1,1,1]\n"
            "m = matmul(x, w)\nb = reshape(b0) shape=[8]\ne = ewadd(m, b)\n"
            "y = ewmul(e, s)\nr = relu(y)\n"
            "m2 = matmul(x, w)\ny2 = ewmul(m2, s3)\nr2 = relu(y2)\n"
            "m3 = matmul(x4, w4)\nt3 = transpose(m3) perm=[0,3,1,2]\n"
            "y3 = ewmul(s5, t3)\nr3 = ewadd(y3, z)\n"
            "output r, r2, r3\n");
  h = pass_fold_scale(g, &n, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(n, 0);
  cr_assert_leq(check_err(g, h), 1e-6);
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(passes, fusion_needs_a_sole_reader) {
  ir_graph *g = parse("input x: [1,3,4,4]\nweight w: [2,3,1,1]\n"
                      "c = conv2d(x, w)\nr = relu(c)\ns = ewadd(c, r)\n"
                      "output s\n");
  base_diag d;
  int f = -1;
  ir_graph *h = pass_fuse_activations(g, &f, &d);
  cr_assert(h);
  cr_assert_eq(f, 0);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ---- search
 * ---------------------------------------------------------------------- */

/* The default model with splits free, as views (the CUDA executor copies
 * them: cd_node_work). At these small shapes a merge's copy costs as much
 * as the convolution it saves; these tests are about the search finding
 * merges, not about whether they pay. */
static base_status split_as_view(void *u, const ir_graph *g, int node,
                                 double *c, int *est, base_diag *d) {
  if (g->nodes[node].op == IR_OP_SPLIT) {
    *c = 0, *est = 1;
    return BASE_OK;
  }
  return cd_model_cost(u, g, node, c, est, d);
}

static rewrite_rules *compile(const ir_ruleset *rs) {
  base_diag d;
  rewrite_rules *r = rewrite_rules_compile(rs, REWRITE_BOTH, 0, &d);
  cr_assert(r, "%s", d.msg);
  return r;
}

Test(search, finds_merged_convs) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input x: [1,64,28,28]\nweight a: [64,64,1,1]\n"
                      "weight b: [32,64,1,1]\nya = conv2d(x, a)\n"
                      "yb = conv2d(x, b)\ns = ewadd(ya, ya)\noutput s, yb\n");
  srch_options o;
  srch_options_default(&o);
  o.merge = 0; /* the search, not the sibling-merging pass, merges */
  o.cost = split_as_view;
  srch_stats st;
  base_diag d;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(count_op(h, IR_OP_CONV2D), 1);
  cr_assert_eq(count_op(h, IR_OP_SPLIT), 1);
  cr_assert_lt(st.cost_after, st.cost_before);
  cr_assert(st.estimated);
  int id = (int)(rule(&rs, "merge_conv1x1") - rs.rules);
  cr_assert_eq(st.applied_fw[id], 1);
  cr_assert_leq(check_err(g, h), 1e-5);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* --passes none (o.no_passes) still puts the graph in its canonical form:
 * NASNet-A's branches each apply relu to one input; the second relu is
 * merged into the first (pass_cse) before the search, and nothing else of
 * the passes runs (the batch norm stays). */
Test(search, no_passes_merges_common_subexpressions) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input x: [1,8,6,6]\nweight w: [8,8,1,1]\n"
                      "weight s: [8]\nweight b: [8]\nweight m: [8]\n"
                      "weight v: [8]\na = relu(x)\nc = relu(x)\n"
                      "y = conv2d(a, w)\nn = batchnorm(y, s, b, m, v)\n"
                      "z = ewmul(n, c)\noutput z\n");
  srch_options o;
  srch_options_default(&o);
  o.no_passes = 1;
  srch_stats st;
  base_diag d;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(st.cse, 1);
  cr_assert_eq(count_op(h, IR_OP_RELU), 1);
  cr_assert_eq(count_op(h, IR_OP_BATCHNORM), 1);
  cr_assert_eq(st.bn_folded, 0);
  cr_assert_leq(check_err(g, h), 1e-5);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* The canonical form under --passes none also makes small weights of
 * equal values one (pass_dedupe_weights): BERT's every layer builds its
 * mask where(m, 0, -inf) from its own two constants; the two wheres are
 * one after it (pass_cse), where without the dedupe both stay. */
Test(search, no_passes_dedupes_equal_constants) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input m: bool[2,4]\ninput x: [2,4]\n"
                      "weight z1: []\nweight n1: []\nweight z2: []\n"
                      "weight n2: []\n"
                      "a = where(m, z1, n1)\nb = where(m, z2, n2)\n"
                      "s1 = ewadd(a, x)\ns2 = ewmul(b, s1)\noutput s2\n");
  static const float zero[1] = {0.0f}, ninf[1] = {-1e4f};
  const char *zs[] = {"z1", "z2"}, *ns[] = {"n1", "n2"};
  for (int k = 0; k < 2; k++) {
    g->tensors[ir_find_tensor(g, zs[k])].data = zero;
    g->tensors[ir_find_tensor(g, ns[k])].data = ninf;
  }
  srch_options o;
  srch_options_default(&o);
  o.no_passes = 1;
  srch_stats st;
  base_diag d;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(st.cse, 1, "the second where, once its constants are one");
  cr_assert_eq(count_op(h, IR_OP_WHERE), 1);
  /* (no check_err: ex_check draws the weights afresh, so z1 and z2 would
     differ in g and not in h) */
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* Passes as rules (rules/passes.rules, o.pass_rules): the search fuses the
 * activations and merges the siblings the pass rules match, and the
 * hand-written passes only the forms no pass rule matches (here a grouped
 * convolution's relu). */
static const char pass_sites[] =
    "input x: [1,16,14,14]\nweight a: [32,16,1,1]\nweight ab: [32]\n"
    "weight b: [48,16,1,1]\nweight bb: [48]\nweight g: [16,8,3,3]\n"
    "ya = conv2d(x, a, ab)\nra = relu(ya)\n"
    "yb = conv2d(x, b, bb)\nrb = relu(yb)\n"
    "yg = conv2d(x, g) groups=2\nrg = relu(yg)\n"
    "s = concat(ra, rb, rg) axis=1\noutput s\n";

/* rules/passes.rules into *rs, compiled in both directions (*rules) and
 * forward only (the cover, returned). */
static rewrite_rules *load_pass_rules(ir_ruleset *rs, rewrite_rules **rules) {
  load_rules(SUPEROPT_SOURCE_DIR "/rules/passes.rules", rs);
  *rules = compile(rs);
  base_diag d;
  rewrite_rules *cover = rewrite_rules_compile(rs, REWRITE_FORWARD, 0, &d);
  cr_assert(cover, "%s", d.msg);
  return cover;
}

static void free_pass_rules(ir_ruleset *rs, rewrite_rules *rules,
                            rewrite_rules *cover) {
  rewrite_rules_free(cover);
  rewrite_rules_free(rules);
  ir_ruleset_free(rs);
}

/* srch_optimize of g with the pass rules (cover as options.pass_rules). */
static ir_graph *optimize_with_pass_rules(const ir_graph *g,
                                          const rewrite_rules *rules,
                                          const rewrite_rules *cover,
                                          srch_stats *st) {
  srch_options o;
  srch_options_default(&o);
  o.pass_rules = cover;
  o.cost = split_as_view;
  base_diag d;
  ir_graph *h = srch_optimize(g, rules, &o, st, &d);
  cr_assert(h, "%s", d.msg);
  return h;
}

/* How often the rules whose id starts with prefix were applied. */
static int applied_prefix(const ir_ruleset *rs, const srch_stats *st,
                          const char *prefix) {
  int n = 0;
  for (int i = 0; i < rs->n; i++)
    if (!strncmp(rs->rules[i].id, prefix, strlen(prefix)))
      n += st->applied_fw[i] + st->applied_bw[i];
  return n;
}

Test(search, passes_as_rules) {
  ir_ruleset rs;
  rewrite_rules *rules, *cover = load_pass_rules(&rs, &rules);
  base_diag d;
  ir_graph *g = parse(pass_sites);
  srch_stats st;
  ir_graph *h = optimize_with_pass_rules(g, rules, cover, &st);
  /* the grouped conv's relu by hand, or by a proven instance of a pass rule
   * (src/rewrite/inst.c: a groups=1 pattern bound to the grouped conv); the
   * two others by the rules */
  cr_assert_leq(st.acts_fused, 1);
  cr_assert_eq(st.merged, 0);
  cr_assert_eq(count_op(h, IR_OP_RELU), 0);
  cr_assert_eq(count_op(h, IR_OP_CONV2D), 2);
  int fused = applied_prefix(&rs, &st, "pass.fuse.");
  cr_assert_eq(applied_prefix(&rs, &st, "pass.merge"), 1);
  /* before or after the merge; the grouped one by rule or by hand */
  cr_assert_geq(fused + st.acts_fused, 2, "%d + %d", fused, st.acts_fused);
  cr_assert_lt(st.cost_after, st.cost_before);
  cr_assert_leq(check_err(g, h), 1e-5);
  /* the cover alone: the two biased pairs; the grouped pair only where the
   * matcher binds it through an instance (src/rewrite/inst.c); never s */
  uint8_t cv[16];
  cr_assert_eq(pass_rule_cover(g, cover, cv, &d), BASE_OK);
  int covered = 0;
  for (int i = 0; i < g->nnodes; i++)
    covered += cv[i];
  cr_assert(cv[0] && cv[1] && cv[2] && cv[3], "%d nodes covered", covered);
  cr_assert_eq(cv[4], cv[5]); /* yg and rg together or not at all */
  cr_assert(!cv[6]);          /* s */
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  free_pass_rules(&rs, rules, cover);
}

/* srch_optimize folds a split of a split (as the pass rules' two-at-a-time
 * merges leave them, Inception-v3: 8) and counts it. */
Test(search, nested_splits_folded_and_counted) {
  ir_ruleset rs;
  rewrite_rules *rules, *cover = load_pass_rules(&rs, &rules);
  ir_graph *g = parse("input x: [1,16,14,14]\n"
                      "weight w: [48,16,1,1]\nweight wb: [48]\n"
                      "y = conv2d(x, w, wb)\n"
                      "a, t = split(y) axis=1 sizes=[16,32]\n"
                      "b, c = split(t) axis=1 sizes=[24,8]\n"
                      "ra = relu(a)\nrb = relu(b)\nrc = relu(c)\n"
                      "output ra, rb, rc\n");
  srch_stats st;
  ir_graph *h = optimize_with_pass_rules(g, rules, cover, &st);
  cr_assert_eq(st.splits_merged, 1);
  cr_assert_eq(count_op(h, IR_OP_SPLIT), 1);
  cr_assert_leq(check_err(g, h), 1e-5);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  free_pass_rules(&rs, rules, cover);
}

/* A SqueezeNet fire module: the 1x1 and 3x3 expand convolutions of the
 * squeeze's result, joined by a concat, become one 3x3 convolution on the
 * enlarged and concatenated filters (pass.merge2e.*): no concat left. */
static const char fire_module[] =
    "input x: [1,64,55,55]\nweight s: [16,64,1,1]\nweight sb: [16]\n"
    "weight e1: [64,16,1,1]\nweight e1b: [64]\n"
    "weight e3: [64,16,3,3]\nweight e3b: [64]\n"
    "q = conv2d(x, s, sb) act=relu\n"
    "a = conv2d(q, e1, e1b) act=relu\nb = conv2d(q, e3, e3b) act=relu\n"
    "c = concat(a, b) axis=1\noutput c\n";

Test(search, fire_module_merged_through_enlarge) {
  ir_ruleset rs;
  rewrite_rules *rules, *cover = load_pass_rules(&rs, &rules);
  ir_graph *g = parse(fire_module);
  srch_stats st;
  ir_graph *h = optimize_with_pass_rules(g, rules, cover, &st);
  cr_assert_eq(applied_prefix(&rs, &st, "pass.merge2e."), 1);
  /* left to run: the squeeze and the merged convolution; the concats and
   * the enlarge are of weights */
  uint8_t mask[32];
  cr_assert_lt(h->nnodes, 32);
  ir_weight_only(h, mask);
  int convs = 0, concats = 0;
  for (int i = 0; i < h->nnodes; i++) {
    convs += !mask[i] && h->nodes[i].op == IR_OP_CONV2D;
    concats += !mask[i] && h->nodes[i].op == IR_OP_CONCAT;
  }
  cr_assert_eq(convs, 2);
  cr_assert_eq(concats, 0);
  cr_assert_eq(count_op(h, IR_OP_ENLARGE), 1);
  cr_assert_lt(st.cost_after, st.cost_before);
  cr_assert_leq(check_err(g, h), 1e-5);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  free_pass_rules(&rs, rules, cover);
}

/* BERT's q/k/v: three biased rank-3 matmuls on one input, in three layers.
 * The pass rules (pass.merge3.matmulb.r3.none) merge each layer's three
 * into one matmul and a split; the hand-written merge does nothing (the
 * cover leaves it no site), never as a pair merged twice (two splits). */
static const char qkv_layers[] =
    "input x: [1,8,16]\n"
    "weight q0: [16,16]\nweight qb0: [16]\nweight k0: [16,16]\n"
    "weight kb0: [16]\nweight v0: [16,16]\nweight vb0: [16]\n"
    "weight q1: [16,16]\nweight qb1: [16]\nweight k1: [16,16]\n"
    "weight kb1: [16]\nweight v1: [16,16]\nweight vb1: [16]\n"
    "weight q2: [16,16]\nweight qb2: [16]\nweight k2: [16,16]\n"
    "weight kb2: [16]\nweight v2: [16,16]\nweight vb2: [16]\n"
    "a0 = matmul(x, q0, qb0)\nb0 = matmul(x, k0, kb0)\n"
    "c0 = matmul(x, v0, vb0)\ns0 = ewmul(a0, b0)\nx1 = ewadd(s0, c0)\n"
    "a1 = matmul(x1, q1, qb1)\nb1 = matmul(x1, k1, kb1)\n"
    "c1 = matmul(x1, v1, vb1)\ns1 = ewmul(a1, b1)\nx2 = ewadd(s1, c1)\n"
    "a2 = matmul(x2, q2, qb2)\nb2 = matmul(x2, k2, kb2)\n"
    "c2 = matmul(x2, v2, vb2)\ns2 = ewmul(a2, b2)\ny = ewadd(s2, c2)\n"
    "output y\n";

static int applied(const ir_ruleset *rs, const srch_stats *st, const char *id) {
  int i = (int)(rule(rs, id) - rs->rules);
  return st->applied_fw[i] + st->applied_bw[i];
}

Test(search, passes_as_rules_batched_matmul) {
  ir_ruleset rs;
  rewrite_rules *rules, *cover = load_pass_rules(&rs, &rules);
  base_diag d;
  ir_graph *g = parse(qkv_layers);
  /* exact counts: each layer's triple in its 3! orders, 3 x 3 x 2 ordered
   * pairs; the rank-2 forms bind no rank-3 matmul */
  cr_assert_eq(count_matches(rule(&rs, "pass.merge3.matmulb.r3.none")->src, g),
               18);
  cr_assert_eq(count_matches(rule(&rs, "pass.merge2.matmulb.r3.none")->src, g),
               18);
  cr_assert_eq(count_matches(rule(&rs, "pass.merge4.matmulb.r3.none")->src, g),
               0);
  cr_assert_eq(count_matches(rule(&rs, "pass.merge3.matmulb.r2.none")->src, g),
               0);
  cr_assert_eq(count_matches(rule(&rs, "pass.merge3.matmulb.r3.relu")->src, g),
               0);
  uint8_t cv[32];
  cr_assert_eq(pass_rule_cover(g, cover, cv, &d), BASE_OK);
  for (int i = 0; i < g->nnodes; i++) /* the matmuls, not the adds */
    cr_assert_eq(cv[i], g->nodes[i].op == IR_OP_MATMUL, "node %d", i);
  srch_stats st;
  ir_graph *h = optimize_with_pass_rules(g, rules, cover, &st);
  cr_assert_eq(st.merged, 0);
  cr_assert_eq(applied(&rs, &st, "pass.merge3.matmulb.r3.none"), 3);
  cr_assert_eq(applied(&rs, &st, "pass.merge2.matmulb.r3.none"), 0);
  cr_assert_eq(count_op(h, IR_OP_MATMUL), 3);
  cr_assert_eq(count_op(h, IR_OP_SPLIT), 3);
  cr_assert_lt(st.cost_after, st.cost_before);
  cr_assert_leq(check_err(g, h), 1e-5);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  free_pass_rules(&rs, rules, cover);
}

Test(search, depth_zero_and_budget) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse(three_convs);
  srch_options o;
  srch_options_default(&o);
  o.max_depth = 0;
  srch_stats st = {0};
  base_diag d;
  ir_graph *h = srch_search(g, rules, &o, &st, &d);
  cr_assert(h);
  cr_assert_eq(graph_hash(h), graph_hash(g));
  cr_assert_eq(st.generated, 0);
  ir_graph_free(h);
  o.max_depth = -1;
  o.budget = 3;
  h = srch_search(g, rules, &o, &st, &d);
  cr_assert(h);
  cr_assert_leq(st.expanded, 1 + 3);
  ir_graph_free(h);
  srch_stats_free(&st);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* Fusion as the search's decision (srch_options.fuse_k). Costs: a
 * convolution 100 (103 with a fused activation), a fused node 12, any other
 * operator 10. conv -> relu -> ewmul costs 120 unfused and 112 fused (relu
 * and ewmul become one fused node); fuse_conv_relu gives conv(act=relu) ->
 * ewmul, cheaper unfused (113) but dearer once fused (113: nothing left to
 * fuse). */
static base_status toy_cost(void *u, const ir_graph *g, int node, double *cost,
                            int *estimated, base_diag *d) {
  (void)u, (void)d;
  const ir_node *n = &g->nodes[node];
  if (n->op == IR_OP_CONV2D)
    *cost = n->a.act == IR_ACT_NONE ? 100 : 103;
  else
    *cost = n->op == IR_OP_FUSED ? 12 : 10;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

static const char conv_relu_mul[] = "input x: [1,3,5,5]\nweight w: [4,3,3,3]\n"
                                    "input s: [1,4,5,5]\n"
                                    "y = conv2d(x, w)\nz = relu(y)\n"
                                    "u = ewmul(z, s)\noutput u\n";

static ir_graph *fuse_search(const rewrite_rules *rules, const ir_graph *g,
                             int k, srch_stats *st) {
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_cost;
  o.fuse_k = k;
  base_diag d;
  ir_graph *h = srch_search(g, rules, &o, st, &d);
  cr_assert(h, "%s", d.msg);
  return h;
}

static double fused_toy_cost(const ir_graph *g) {
  fuse_options fo = {toy_cost, NULL};
  fuse_stats fs;
  base_diag d;
  ir_graph *f = fuse_graph(g, &fo, &fs, &d);
  cr_assert(f, "%s", d.msg);
  ir_graph_free(f);
  return fs.cost_after;
}

Test(search, fusion_chooses_among_candidates) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse(conv_relu_mul);
  cr_assert_float_eq(sum_cost(g, toy_cost, NULL, NULL), 120, 1e-9);
  cr_assert_float_eq(fused_toy_cost(g), 112, 1e-9);
  /* fusion a pass after the search: the cheapest unfused graph */
  srch_stats st = {0};
  ir_graph *h0 = fuse_search(rules, g, 0, &st);
  cr_assert_eq(count_op(h0, IR_OP_RELU), 0);
  cr_assert_eq(count_op(h0, IR_OP_CONV2D), 1);
  cr_assert_float_eq(sum_cost(h0, toy_cost, NULL, NULL), 113, 1e-9);
  cr_assert_float_eq(fused_toy_cost(h0), 113, 1e-9);
  cr_assert_eq(st.fuse_chosen, 0);
  int id = (int)(rule(&rs, "fuse_conv_relu") - rs.rules);
  cr_assert_eq(st.applied_fw[id], 1);
  srch_stats_free(&st);
  /* fusion chosen by the search: the input, cheaper once fused */
  ir_graph *h8 = fuse_search(rules, g, 8, &st);
  cr_assert_eq(graph_hash(h8), graph_hash(g));
  cr_assert_float_eq(fused_toy_cost(h8), 112, 1e-9);
  cr_assert_eq(st.fuse_chosen, 1);
  cr_assert_eq(st.applied_fw[id] + st.applied_bw[id], 0);
  srch_stats_free(&st);
  /* deterministic: the same graph again */
  ir_graph *again = fuse_search(rules, g, 8, &st);
  cr_assert_eq(graph_hash(again), graph_hash(h8));
  srch_stats_free(&st);
  /* fuse_k 1: no choice, as 0 */
  ir_graph *h1 = fuse_search(rules, g, 1, &st);
  cr_assert_eq(graph_hash(h1), graph_hash(h0));
  srch_stats_free(&st);
  ir_graph_free(h1);
  ir_graph_free(again);
  ir_graph_free(h8);
  ir_graph_free(h0);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* The fuse bound (srch_options.fuse_bound): the same costs, a fused node
 * priced 20 (the roofline's price of a class without rows, where the fit
 * says 12). The input is cheaper once fused by the cost (112 < 113) but
 * dearer under the bound (120 > 113): the search keeps its cheapest
 * unfused graph, conv(act=relu) -> ewmul, and counts the refusal. */
static base_status toy_bound(void *u, const ir_graph *g, int node, double *cost,
                             int *estimated, base_diag *d) {
  base_status st = toy_cost(u, g, node, cost, estimated, d);
  if (!st && g->nodes[node].op == IR_OP_FUSED)
    *cost = 20;
  return st;
}

Test(search, fuse_bound_keeps_the_unfused_pick) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse(conv_relu_mul);
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_cost;
  o.fuse_bound = toy_bound;
  srch_stats st = {0};
  base_diag d;
  ir_graph *h = srch_search(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(count_op(h, IR_OP_RELU), 0);
  cr_assert_float_eq(sum_cost(h, toy_cost, NULL, NULL), 113, 1e-9);
  cr_assert_eq(st.fuse_chosen, 0);
  cr_assert_eq(st.fuse_bounded, 1);
  srch_stats_free(&st);
  /* a bound that agrees with the cost: the input, as without one */
  o.fuse_bound = toy_cost;
  ir_graph *h2 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h2, "%s", d.msg);
  cr_assert_eq(graph_hash(h2), graph_hash(g));
  cr_assert_eq(st.fuse_chosen, 1);
  cr_assert_eq(st.fuse_bounded, 0);
  srch_stats_free(&st);
  ir_graph_free(h2);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* Patience's last look at removals. Costs: a convolution 100 (111 with a
 * fused relu), an ewadd 0 when it reads an input first and a conv(act=relu)
 * second, any other operator 10. conv -> relu -> ewadd(z, s) costs 120;
 * fusing the relu removes an operator but costs 121, and only the ewadd
 * commuted after it pays (111). With patience 1 the search stops after the
 * start's expansion (its cheapest child, the commuted start, costs 120);
 * the look keeps the queued graph of fewer operators and finds 111. */
static base_status toy_plateau(void *u, const ir_graph *g, int node,
                               double *cost, int *estimated, base_diag *d) {
  (void)u, (void)d;
  const ir_node *n = &g->nodes[node];
  *cost = 10;
  if (n->op == IR_OP_CONV2D)
    *cost = n->a.act == IR_ACT_NONE ? 100 : 111;
  if (n->op == IR_OP_EWADD) {
    int p = g->tensors[n->in[1]].node;
    if (g->tensors[n->in[0]].node < 0 && p >= 0 &&
        g->nodes[p].op == IR_OP_CONV2D && g->nodes[p].a.act == IR_ACT_RELU)
      *cost = 0;
  }
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

Test(search, patience_looks_at_removals) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input x: [1,3,5,5]\nweight w: [4,3,3,3]\n"
                      "input s: [1,4,5,5]\ny = conv2d(x, w)\nz = relu(y)\n"
                      "u = ewadd(z, s)\noutput u\n");
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_plateau;
  o.fuse_k = 0;
  o.patience = 1;
  srch_stats st = {0};
  base_diag d;
  ir_graph *h = srch_search(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_float_eq(sum_cost(h, toy_plateau, NULL, NULL), 111, 1e-9);
  cr_assert_eq(count_op(h, IR_OP_RELU), 0);
  cr_assert_eq(st.removal_looks, 1);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* The second descent (srch_options.descent, under no_passes). Three 1x1
 * convolutions of one input, each followed by a batch norm and a relu,
 * and rules/extended.rules' sibling merges (e00122 plain, e00180 with
 * relu), batch-norm fold (e00470) and nested splits (descent.rules).
 * Costs: a convolution 10 (any), a split 1, a batch norm or a relu 3.
 * The start costs 48. Merging two plain convolutions saves 9, folding a
 * norm and its relu 6, so the search merges first (all three: 29), and
 * then no rule folds a norm of a split's part; each fold then lies beyond
 * alpha of 29 (42). The descent, fewest operators first, folds the three
 * and merges the biased convolutions through proven instances: one
 * convolution and a split, 11. */
static base_status toy_descent(void *u, const ir_graph *g, int node,
                               double *cost, int *estimated, base_diag *d) {
  (void)u, (void)d;
  switch (g->nodes[node].op) {
  case IR_OP_CONV2D: *cost = 10; break;
  case IR_OP_SPLIT: *cost = 1; break;
  default: *cost = 3;
  }
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

static const char siblings_bn_relu[] =
    "input x: [1,8,6,6]\n"
    "weight w1: [4,8,1,1]\nweight s1: [4]\nweight b1: [4]\n"
    "weight m1: [4]\nweight v1: [4]\n"
    "weight w2: [2,8,1,1]\nweight s2: [2]\nweight b2: [2]\n"
    "weight m2: [2]\nweight v2: [2]\n"
    "weight w3: [6,8,1,1]\nweight s3: [6]\nweight b3: [6]\n"
    "weight m3: [6]\nweight v3: [6]\n"
    "c1 = conv2d(x, w1)\nn1 = batchnorm(c1, s1, b1, m1, v1)\nr1 = relu(n1)\n"
    "c2 = conv2d(x, w2)\nn2 = batchnorm(c2, s2, b2, m2, v2)\nr2 = relu(n2)\n"
    "c3 = conv2d(x, w3)\nn3 = batchnorm(c3, s3, b3, m3, v3)\nr3 = relu(n3)\n"
    "output r1, r2, r3\n";

/* g searched with file's rules under --passes none (no_passes), toy costs
 * and no fusion candidates: without the second descent (*first), with it
 * (returned) and, where plain is not NULL, without no_passes (*plain, the
 * default pipeline); descents[k] the descents each counted. */
static ir_graph *descent_runs(const char *file, const ir_graph *g,
                              cd_cost_fn cost, ir_graph **first,
                              ir_graph **plain, int descents[3]) {
  ir_ruleset rs;
  load_rules(file, &rs);
  rewrite_rules *rules = compile(&rs);
  srch_options o;
  srch_options_default(&o);
  o.cost = cost;
  o.fuse_k = 0;
  o.no_passes = 1;
  ir_graph *h[3] = {NULL, NULL, NULL};
  for (int k = 0; k < (plain ? 3 : 2); k++) {
    o.descent = k > 0;   /* 0: the first search alone */
    o.no_passes = k < 2; /* 2: the default pipeline, no descent */
    srch_stats st = {0};
    base_diag d;
    h[k] = srch_search(g, rules, &o, &st, &d);
    cr_assert(h[k], "%s", d.msg);
    descents[k] = st.descents;
    srch_stats_free(&st);
  }
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
  *first = h[0];
  if (plain)
    *plain = h[2];
  return h[1];
}

Test(search, second_descent_folds_before_merging) {
  ir_graph *g = parse(siblings_bn_relu), *h, *h3;
  int descents[3];
  ir_graph *h2 =
      descent_runs(RULES "descent.rules", g, toy_descent, &h, &h3, descents);
  /* the first search alone: the merge's dead end */
  cr_assert_float_eq(sum_cost(h, toy_descent, NULL, NULL), 29, 1e-9);
  cr_assert_eq(count_op(h, IR_OP_BATCHNORM), 3);
  cr_assert_eq(descents[0], 0);
  cr_assert_float_eq(sum_cost(h2, toy_descent, NULL, NULL), 11, 1e-9);
  cr_assert_eq(count_op(h2, IR_OP_CONV2D), 1);
  cr_assert_eq(descents[1], 1);
  cr_assert_lt(check_err(g, h2), 1e-4);
  /* without no_passes (the default pipeline) there is no descent */
  cr_assert_eq(graph_hash(h3), graph_hash(h));
  cr_assert_eq(descents[2], 0);
  ir_graph_free(h3);
  ir_graph_free(h2);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* The second descent folds into weights first. NASNet-A's combinations
 * (two convolutions, each with its batch norm, added) under --passes
 * none, with rules/extended.rules' batch-norm fold (e00458 backward) and
 * residual (e00597) and rules/default.rules' merge of two added
 * convolutions (r01863; foldmerge.rules). Costs: a convolution 10 (with
 * a residual too), a batch norm 1, a concat 1, any other 3. A comb costs
 * 25; once one norm is folded, the residual (21) is cheaper than the
 * other fold (23), and after it the merge no longer matches (20, where
 * both folds and the merge make 11): the first search's dead end, the
 * folds-first graphs beyond alpha of it. The descent orders graphs that
 * run as many operators by their weight-only operators, most first (a
 * fold moves a norm into the weights, the residual moves nothing), so it
 * folds both norms before it looks at the residual; by cost alone it
 * took the residual first, went down, and its patience ran out among the
 * other combs' variants before it came back. */
static base_status toy_comb(void *u, const ir_graph *g, int node, double *cost,
                            int *estimated, base_diag *d) {
  (void)u, (void)d;
  switch (g->nodes[node].op) {
  case IR_OP_CONV2D: *cost = 10; break;
  case IR_OP_BATCHNORM:
  case IR_OP_CONCAT: *cost = 1; break;
  default: *cost = 3;
  }
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

/* n combs of 1x1 convolutions on inputs a<i>, b<i>, each an output. */
static ir_graph *combs(int n) {
  char text[8192];
  size_t k = 0;
  for (int i = 0; i < n; i++)
    for (int j = 1; j <= 2; j++)
      k += (size_t)snprintf(
          text + k, sizeof text - k,
          "input x%d%d: [1,4,5,5]\nweight w%d%d: [4,4,1,1]\n"
          "weight s%d%d: [4]\nweight b%d%d: [4]\nweight m%d%d: [4]\n"
          "weight v%d%d: [4]\nc%d%d = conv2d(x%d%d, w%d%d)\n"
          "n%d%d = batchnorm(c%d%d, s%d%d, b%d%d, m%d%d, v%d%d)\n",
          i, j, i, j, i, j, i, j, i, j, i, j, i, j, i, j, i, j, i, j, i, j, i,
          j, i, j, i, j, i, j);
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(text + k, sizeof text - k,
                          "y%d = ewadd(n%d1, n%d2)\noutput y%d\n", i, i, i, i);
  return parse(text);
}

Test(search, second_descent_folds_into_weights_first) {
  ir_graph *g = combs(3), *h;
  int descents[3];
  ir_graph *h2 =
      descent_runs(RULES "foldmerge.rules", g, toy_comb, &h, NULL, descents);
  /* the first search alone: the residual's dead end */
  cr_assert_float_eq(sum_cost(h, toy_comb, NULL, NULL), 51, 1e-9);
  cr_assert_eq(count_op(h, IR_OP_CONCAT), 2); /* one comb merged of 3 */
  /* every comb folded and merged: a convolution of concatenated inputs
   * and weights each */
  cr_assert_float_eq(sum_cost(h2, toy_comb, NULL, NULL), 33, 1e-9);
  cr_assert_eq(count_op(h2, IR_OP_CONCAT), 6);
  cr_assert_eq(count_op(h2, IR_OP_CONV2D), 3);
  cr_assert_eq(descents[1], 1);
  cr_assert_lt(check_err(g, h2), 1e-4);
  ir_graph_free(h2);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* srch_optimize of g under --passes none (no_passes) with regions of
 * `size`, the rules of file, costs f, far_siblings and boundary_joins as
 * given. */
static ir_graph *region_runs_w(const ir_graph *g, const char *file,
                               cd_cost_fn f, int size, int far_siblings,
                               int boundary_joins, int wide_pass) {
  ir_ruleset rs;
  load_rules(file, &rs);
  rewrite_rules *rules = compile(&rs);
  srch_options o;
  srch_options_default(&o);
  o.cost = f;
  o.fuse_k = 0;
  o.no_passes = 1;
  o.region_nodes = size;
  o.far_siblings = far_siblings;
  o.boundary_joins = boundary_joins;
  o.wide_pass = wide_pass;
  srch_stats st = {0};
  base_diag d;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  srch_stats_free(&st);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
  return h;
}

/* region_runs_w without the wide last pass (srch_options.wide_pass 0). */
static ir_graph *region_runs(const ir_graph *g, const char *file, cd_cost_fn f,
                             int size, int far_siblings, int boundary_joins) {
  return region_runs_w(g, file, f, size, far_siblings, boundary_joins, 0);
}

/* Far siblings in one region (srch_options.far_siblings): two 1x1
 * convolutions of one relu, each with its batch norm and relu, 14
 * operators apart (a chain of relus between), regions of 8,
 * descent.rules and toy_descent's costs. Cut in g's order no region of
 * either pass holds both, so each is folded alone (2 convolutions and the
 * chain: 56); the first pass's order puts the second with its norm and
 * relu behind the first (regions.c, cut_order), and one region folds both
 * and merges them: 47. */
Test(regions, far_siblings_share_a_region) {
  char text[4096];
  size_t z = (size_t)snprintf(
      text, sizeof text,
      "input x: [1,8,6,6]\n"
      "weight w1: [4,8,1,1]\nweight s1: [4]\nweight b1: [4]\n"
      "weight m1: [4]\nweight v1: [4]\n"
      "weight w2: [2,8,1,1]\nweight s2: [2]\nweight b2: [2]\n"
      "weight m2: [2]\nweight v2: [2]\n"
      "r = relu(x)\nc1 = conv2d(r, w1)\nn1 = batchnorm(c1, s1, b1, m1, v1)\n"
      "f0 = relu(n1)\n");
  for (int i = 1; i < 12; i++)
    z += (size_t)snprintf(text + z, sizeof text - z, "f%d = relu(f%d)\n", i,
                          i - 1);
  snprintf(text + z, sizeof text - z,
           "c2 = conv2d(r, w2)\nn2 = batchnorm(c2, s2, b2, m2, v2)\n"
           "y2 = relu(n2)\noutput f11, y2\n");
  ir_graph *g = parse(text);
  ir_graph *h0 = region_runs(g, RULES "descent.rules", toy_descent, 8, 0, 0);
  ir_graph *h1 = region_runs(g, RULES "descent.rules", toy_descent, 8, 1, 0);
  cr_assert_float_eq(sum_cost(h0, toy_descent, NULL, NULL), 56, 1e-9);
  cr_assert_eq(count_op(h0, IR_OP_CONV2D), 2);
  cr_assert_float_eq(sum_cost(h1, toy_descent, NULL, NULL), 47, 1e-9);
  cr_assert_eq(count_op(h1, IR_OP_CONV2D), 1);
  cr_assert_eq(count_op(h1, IR_OP_SPLIT), 1);
  cr_assert_lt(check_err(g, h1), 1e-4);
  ir_graph_free(h1);
  ir_graph_free(h0);
  ir_graph_free(g);
}

/* Joins at a region's edge wait (srch_options.fixed_inputs, set by the
 * region passes before the last under boundary_joins). A region whose
 * input `a` another region computes: y = a + norm(conv(x)), and
 * z = norm(conv(a)) beside it; foldmerge.rules, toy_comb's costs. Free,
 * the search folds both norms and makes the add conv(x)'s residual (20;
 * a's branch, in the region before, could then no longer merge with
 * conv(x)). With `a` fixed the add, which joins a to this region's
 * branch, is left as it is, while conv(a), which reads a with weights
 * only, still has its norm folded: 10 + 3 + 10 = 23 (24 with that norm
 * left too, as when every reader of `a` was frozen). */
Test(regions, a_boundary_join_waits_for_the_next_pass) {
  ir_ruleset rs;
  load_rules(RULES "foldmerge.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input a: [1,4,5,5]\ninput x: [1,4,5,5]\n"
                      "weight w: [4,4,1,1]\nweight s: [4]\nweight b: [4]\n"
                      "weight m: [4]\nweight v: [4]\n"
                      "weight w2: [4,4,1,1]\nweight s2: [4]\nweight b2: [4]\n"
                      "weight m2: [4]\nweight v2: [4]\n"
                      "c = conv2d(x, w)\nn = batchnorm(c, s, b, m, v)\n"
                      "y = ewadd(n, a)\n"
                      "c2 = conv2d(a, w2)\nz = batchnorm(c2, s2, b2, m2, v2)\n"
                      "output y, z\n");
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_comb;
  o.fuse_k = 0;
  o.no_passes = 1;
  srch_stats st = {0};
  base_diag d;
  ir_graph *h0 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h0, "%s", d.msg);
  const char *fixed[] = {"a"};
  o.fixed_inputs = fixed, o.nfixed_inputs = 1;
  ir_graph *h1 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h1, "%s", d.msg);
  cr_assert_float_eq(sum_cost(h0, toy_comb, NULL, NULL), 20, 1e-9);
  cr_assert_eq(count_op(h0, IR_OP_EWADD), 0);
  cr_assert_float_eq(sum_cost(h1, toy_comb, NULL, NULL), 23, 1e-9);
  cr_assert_eq(count_op(h1, IR_OP_EWADD), 1);
  cr_assert_lt(check_err(g, h1), 1e-4);
  srch_stats_free(&st);
  ir_graph_free(h1);
  ir_graph_free(h0);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* The search's start graph is always a fusion candidate, and the K kept
 * are of K distinct costs. BERT's scores scaled at batch 16: the default
 * rules' r00449 backward makes smul(scores, s) an ewmul by a weight-only
 * tensor of ones times s, which the cost database priced cheaper, and
 * rewrites that change nothing of the cost (operands commuted, undone
 * elsewhere) give K graphs of that one cost; none forms an attention
 * node, the start does. Costs: ewmul 9, fused 12, attention 15, any other
 * 10; the chain 40 unfused (the rewrite 39) and 15 fused (the rewrite's
 * 32: the products and a fused node). */
static base_status att_cost(void *u, const ir_graph *g, int node, double *cost,
                            int *estimated, base_diag *d) {
  (void)u, (void)d;
  ir_opcode op = g->nodes[node].op;
  *cost = op == IR_OP_EWMUL       ? 9
          : op == IR_OP_FUSED     ? 12
          : op == IR_OP_ATTENTION ? 15
                                  : 10;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

Test(search, fusion_keeps_the_start_candidate) {
  ir_ruleset rs;
  load_rules(SUPEROPT_SOURCE_DIR "/rules/default.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input q: [2,2,4,8]\ninput k: [2,2,8,4]\n"
                      "input v: [2,2,4,8]\nweight s: []\n"
                      "sc = matmul(q, k)\nss = smul(sc, s)\n"
                      "p = softmax(ss)\ny = matmul(p, v)\noutput y\n");
  fuse_options fo = {att_cost, NULL};
  fuse_stats fs;
  base_diag d;
  for (int k = 0; k <= 8; k += 2) {
    srch_options o;
    srch_options_default(&o);
    o.cost = att_cost;
    o.fuse_k = k;
    srch_stats st = {0};
    ir_graph *h = srch_search(g, rules, &o, &st, &d);
    cr_assert(h, "%s", d.msg);
    ir_graph *f = fuse_graph(h, &fo, &fs, &d);
    cr_assert(f, "%s", d.msg);
    if (k) { /* the start, fused: one attention node */
      cr_assert_eq(fs.attention, 1, "fuse_k %d", k);
      cr_assert_float_eq(fs.cost_after, 15, 1e-9);
      cr_assert_eq(st.fuse_chosen, 1);
    } else { /* the cheapest unfused: the scale made a tensor */
      cr_assert_float_eq(sum_cost(h, att_cost, NULL, NULL), 39, 1e-9);
      cr_assert_eq(fs.attention, 0);
    }
    ir_graph_free(f), ir_graph_free(h);
    srch_stats_free(&st);
  }
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* srch_options.cand_fn: every distinct graph the search builds, with its
 * cost and the rewrites that made it, and the search's result unchanged.
 * From conv(act=relu) -> ewmul (113, and 113 fused) at alpha 1, the
 * unfused conv -> relu -> ewmul (120, but 112 fused) is neither queued nor
 * the best, so the search never builds it; the hook sees it all the same,
 * and it must not join the graphs the fusion choice picks from. */
typedef struct seen_cands {
  int n, first_steps, relu_by, backward;
  uint64_t hash[256];
} seen_cands;

static base_status see_cand(void *u, const ir_graph *g, double cost,
                            const srch_step *steps, int nsteps, base_diag *d) {
  (void)d;
  seen_cands *s = u;
  cr_assert_float_eq(cost, sum_cost(g, toy_cost, NULL, NULL), 1e-9);
  if (s->n == 0)
    s->first_steps = nsteps;
  cr_assert(s->n == 0 || nsteps > 0);
  uint64_t h = graph_hash(g);
  for (int i = 0; i < s->n; i++)
    cr_assert_neq(s->hash[i], h, "a graph handed over twice");
  cr_assert_lt(s->n, 256);
  s->hash[s->n++] = h;
  if (count_op(g, IR_OP_RELU) == 1 && nsteps == 1)
    s->relu_by = steps[0].rule, s->backward = steps[0].backward;
  return BASE_OK;
}

Test(search, cand_fn_sees_every_graph_and_changes_nothing) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input x: [1,3,5,5]\nweight w: [4,3,3,3]\n"
                      "input s: [1,4,5,5]\ny = conv2d(x, w) act=relu\n"
                      "u = ewmul(y, s)\noutput u\n");
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_cost;
  o.alpha = 1.0;
  srch_stats st = {0};
  base_diag d;
  ir_graph *h0 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h0, "%s", d.msg);
  seen_cands sc = {.relu_by = -1};
  o.cand_fn = see_cand;
  o.cand_u = &sc;
  ir_graph *h1 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h1, "%s", d.msg);
  cr_assert_eq(graph_hash(h1), graph_hash(h0));
  cr_assert_eq(graph_hash(h1), graph_hash(g));
  cr_assert_eq(st.fuse_chosen, 0);
  cr_assert_eq(sc.first_steps, 0);
  cr_assert_eq(sc.hash[0], graph_hash(g));
  cr_assert_eq(sc.relu_by, (int)(rule(&rs, "fuse_conv_relu") - rs.rules));
  cr_assert_eq(sc.backward, 1);
  srch_stats_free(&st);
  ir_graph_free(h1);
  ir_graph_free(h0);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

static uint64_t optimize_hash(const char *model, const rewrite_rules *rules) {
  base_diag d;
  ir_graph *g = ir_parse_file(model, &d);
  cr_assert(g, "%s", d.msg);
  srch_options o;
  srch_options_default(&o);
  o.budget = 200;
  srch_stats st;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  uint64_t x = graph_hash(h);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  return x;
}

Test(search, deterministic) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  const char *m = SUPEROPT_SOURCE_DIR "/models/nasnet_a.graph";
  cr_assert_eq(optimize_hash(m, rules), optimize_hash(m, rules));
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* ---- rule files
 * ------------------------------------------------------------------ */

Test(rules, unproven_refused_unless_allowed) {
  ir_ruleset rs;
  load_rules(RULES "unproven.rules", &rs);
  base_diag d;
  cr_assert_null(rewrite_rules_compile(&rs, REWRITE_BOTH, 0, &d));
  cr_assert_eq(d.code, BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "wrong"), "%s", d.msg);
  cr_assert_gt(d.line, 1);
  rewrite_rules *r = rewrite_rules_compile(&rs, REWRITE_BOTH, 1, &d);
  cr_assert(r);
  cr_assert_eq(rewrite_rules_count(r), 4);
  rewrite_rules_free(r);
  ir_ruleset_free(&rs);
}

Test(rules, bad_file_refused) {
  ir_ruleset rs;
  base_diag d;
  cr_assert_neq(ir_rules_read_file(RULES "bad.rules", &rs, &d), BASE_OK);
  cr_assert_eq(d.line, 4);
  cr_assert_eq(rs.n, 0);
}

/* ---- the zoo
 * ---------------------------------------------------------------------- */

/* Applies the first valid match of every rule direction in turn. Every
 * match's rewrite is validated; returns the rewritten graph. */
static ir_graph *apply_each_rule(const ir_ruleset *rs, ir_graph *g) {
  for (int i = 0; i < rs->n; i++)
    for (int bw = 0; bw < 2; bw++) {
      const ir_graph *pat = bw ? rs->rules[i].dst : rs->rules[i].src;
      const ir_graph *repl = bw ? rs->rules[i].src : rs->rules[i].dst;
      rewrite_matches ms = {0};
      base_diag d;
      if (rewrite_match_graph(pat, g, &ms, &d) != BASE_OK)
        continue;
      ir_graph *next = NULL;
      for (int k = 0; k < ms.n; k++) {
        ir_graph *h = rewrite_apply(g, pat, repl, &ms.m[k], &d);
        if (!h)
          continue;
        cr_assert_eq(ir_graph_validate(h, &d), BASE_OK, "%s", d.msg);
        if (!next)
          next = h;
        else
          ir_graph_free(h);
      }
      rewrite_matches_free(&ms);
      if (next) {
        ir_graph_free(g);
        g = next;
      }
    }
  return g;
}

/* Optimizes a zoo model, then applies every test rule once more on the
 * result, and checks the outcome end to end against the original. */
static void zoo_model(const char *name) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  char path[512];
  base_diag d;
  snprintf(path, sizeof path, SUPEROPT_SOURCE_DIR "/models/%s.graph", name);
  ir_graph *g = ir_parse_file(path, &d);
  cr_assert(g, "%s", d.msg);
  srch_options o;
  srch_options_default(&o);
  o.budget = 100;
  srch_stats st;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s: %s", name, d.msg);
  cr_assert_leq(st.cost_after, st.cost_before, "%s", name);
  h = apply_each_rule(&rs, h);
  cr_assert_leq(check_err(g, h), 1e-4, "%s", name);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

Test(zoo, tv_squeezenet) { zoo_model("tv_squeezenet"); }
Test(zoo, nasnet_a) { zoo_model("nasnet_a"); }
Test(zoo, resnet50) { zoo_model("resnet50"); }
Test(zoo, tv_mobilenet_v2) { zoo_model("tv_mobilenet_v2"); }
#ifndef __SANITIZE_ADDRESS__ /* the big ones: too slow under ASan */
Test(zoo, tv_resnet50) { zoo_model("tv_resnet50"); }
Test(zoo, resnext50_taso) { zoo_model("resnext50_taso"); }
Test(zoo, tv_resnext50) { zoo_model("tv_resnext50"); }
Test(zoo, bert_base, .timeout = 300) { zoo_model("bert_base"); }
#endif

/* Rules are float-only: a rule whose pattern fits an int64 or bool
 * subgraph (reshape of a reshape) matches it only where the values are
 * float32, never on the index and mask tensors (no law is proven for
 * them). */
Test(match, never_touches_non_float_nodes) {
  ir_graph *pat = parse("input x: [2,6]\na = reshape(x) shape=[3,4]\n"
                        "b = reshape(a) shape=[12]\noutput b\n");
  ir_graph *f = parse("input x: [2,6]\na = reshape(x) shape=[3,4]\n"
                      "b = reshape(a) shape=[12]\noutput b\n");
  ir_graph *i = parse("input x: i64[2,6]\na = reshape(x) shape=[3,4]\n"
                      "b = reshape(a) shape=[12]\noutput b\n");
  ir_graph *m = parse("input x: i64[2,6]\ninput y: i64[2,6]\n"
                      "q = equal(x, y)\na = reshape(q) shape=[3,4]\n"
                      "b = reshape(a) shape=[12]\noutput b\n");
  cr_assert_eq(count_matches(pat, f), 1);
  cr_assert_eq(count_matches(pat, i), 0);
  cr_assert_eq(count_matches(pat, m), 0);
  ir_graph_free(pat), ir_graph_free(f), ir_graph_free(i), ir_graph_free(m);
}

/* Toy costs for the lowered pricing: a convolution 25 whatever its inputs
 * (a residual input costs nothing more), a fused node 12, any other
 * operator 10. Two 1x1 convolutions with biases, each read by a residual
 * add, cost 70 as they are, 50 once lowered (each add a residual input of
 * its convolution); merge_conv1x1_bias makes one convolution and a split,
 * 55, whose adds read the split and stay. */
static base_status toy_cost_lowered(void *u, const ir_graph *g, int node,
                                    double *cost, int *estimated,
                                    base_diag *d) {
  (void)u, (void)d;
  const ir_node *n = &g->nodes[node];
  *cost = n->op == IR_OP_CONV2D ? 25 : n->op == IR_OP_FUSED ? 12 : 10;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

Test(search, fusion_choice_prices_the_lowered_graph) {
  ir_ruleset rs;
  load_rules(RULES "basic.rules", &rs);
  rewrite_rules *rules = compile(&rs);
  ir_graph *g = parse("input x: [1,3,5,5]\nweight w1: [4,3,1,1]\n"
                      "weight w2: [2,3,1,1]\nweight b1: [4]\nweight b2: [2]\n"
                      "input s1: [1,4,5,5]\ninput s2: [1,2,5,5]\n"
                      "y1 = conv2d(x, w1, b1)\ny2 = conv2d(x, w2, b2)\n"
                      "a1 = ewadd(y1, s1)\na2 = ewadd(y2, s2)\n"
                      "output a1, a2\n");
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_cost_lowered;
  base_diag d;
  srch_stats st = {0};
  /* priced as it is: the merged convolution (55 < 70) */
  o.fuse_k = 0;
  ir_graph *h0 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h0, "%s", d.msg);
  cr_assert_eq(count_op(h0, IR_OP_CONV2D), 1);
  srch_stats_free(&st);
  /* priced fused and lowered: the two convolutions with their residual
   * inputs (50 < 55); 16 candidates: the merge comes in 8 forms (the
   * order of the concatenation, each add's operand order) */
  o.fuse_k = 16;
  ir_graph *h8 = srch_search(g, rules, &o, &st, &d);
  cr_assert(h8, "%s", d.msg);
  cr_assert_eq(count_op(h8, IR_OP_CONV2D), 2);
  cr_assert_eq(count_op(h8, IR_OP_SPLIT), 0);
  cr_assert_eq(st.fuse_chosen, 1);
  srch_stats_free(&st);
  ir_graph_free(h8);
  ir_graph_free(h0);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* A region ends where the fewest tensors cross, of the last few places
 * before it is full: with regions of 5, the full cut after b would part
 * the siblings a and b from the add that joins them; the cut after c2
 * (one tensor crossing) keeps them together. */
Test(regions, cut_where_fewest_tensors_cross) {
  ir_graph *g = parse("input x: [4]\n"
                      "c0 = relu(x)\nc1 = relu(c0)\nc2 = relu(c1)\n"
                      "a = relu(c2)\nb = relu(c2)\ns = ewadd(a, b)\n"
                      "t = relu(s)\noutput t\n");
  base_diag d;
  srch_regions *r = srch_regions_cut(g, 5, &d);
  cr_assert(r, "%s", d.msg);
  cr_assert_eq(srch_regions_count(r), 2);
  cr_assert_eq(srch_regions_graph(r, 0)->nnodes, 3);
  cr_assert_eq(srch_regions_graph(r, 1)->nnodes, 4);
  srch_regions_free(r);
  ir_graph_free(g);
}

/* A wider last pass (srch_options.wide_pass): a comb (two 1x1
 * convolutions with their norms, added) whose branches lie four relus
 * apart, regions of 8, foldmerge.rules, toy_comb's costs. The first pass's
 * cuts and the second's (half a region later) each part the two
 * convolutions from the add, so each norm is folded alone and the add
 * stays (2 convolutions: 77); the third pass's regions of 9, cut from the
 * start, hold the folded pair and the add, which merge into one
 * convolution of the concatenated inputs and weights (65). */
Test(regions, a_wider_last_pass_joins_what_both_cuts_part) {
  char text[4096];
  size_t z = (size_t)snprintf(
      text, sizeof text,
      "input x: [1,4,5,5]\nweight w1: [4,4,1,1]\nweight s1: [4]\n"
      "weight b1: [4]\nweight m1: [4]\nweight v1: [4]\n"
      "weight w2: [4,4,1,1]\nweight s2: [4]\nweight b2: [4]\n"
      "weight m2: [4]\nweight v2: [4]\np = relu(x)\n"
      "c1 = conv2d(p, w1)\nn1 = batchnorm(c1, s1, b1, m1, v1)\n"
      "q0 = relu(p)\n");
  for (int i = 1; i <= 4; i++)
    z += (size_t)snprintf(text + z, sizeof text - z, "q%d = relu(q%d)\n", i,
                          i - 1);
  z += (size_t)snprintf(text + z, sizeof text - z,
                        "c2 = conv2d(q4, w2)\n"
                        "n2 = batchnorm(c2, s2, b2, m2, v2)\n"
                        "y = ewadd(n1, n2)\nt0 = relu(y)\n");
  for (int i = 1; i < 12; i++)
    z += (size_t)snprintf(text + z, sizeof text - z, "t%d = relu(t%d)\n", i,
                          i - 1);
  snprintf(text + z, sizeof text - z, "output t11\n");
  ir_graph *g = parse(text);
  ir_graph *h0 =
      region_runs_w(g, RULES "foldmerge.rules", toy_comb, 8, 1, 1, 0);
  ir_graph *h1 =
      region_runs_w(g, RULES "foldmerge.rules", toy_comb, 8, 1, 1, 1);
  cr_assert_eq(count_op(h0, IR_OP_CONV2D), 2);
  cr_assert_float_eq(sum_cost(h0, toy_comb, NULL, NULL), 77, 1e-9);
  cr_assert_eq(count_op(h1, IR_OP_CONV2D), 1);
  cr_assert_eq(count_op(h1, IR_OP_CONCAT), 2);
  cr_assert_float_eq(sum_cost(h1, toy_comb, NULL, NULL), 65, 1e-9);
  cr_assert_lt(check_err(g, h1), 1e-4);
  ir_graph_free(h1);
  ir_graph_free(h0);
  ir_graph_free(g);
}
