/* test_match.c: matching modulo parameters (src/rewrite/inst.c and the
 * padding comparison of match.c) on small crafted graphs with exact
 * expected match counts: explicit pads equal to 'same', biased, strided,
 * grouped convolutions and fused activations as proven rule instances, a
 * planted instance that does not hold and must be refused, every applied
 * instance checked numerically on the CPU executor, and the search finding
 * the ResNeXt merge (two convolutions + add -> one convolution on
 * concatenated inputs and weights); the edge filter refusing a graph with
 * the pattern's node signatures but not its edge; a batch-norm fold typed
 * on a convolution whose input and output channels differ; explicit pads
 * (a rule over pads [1,1,1,1] at stride 2 on other pads and strides);
 * rotate_half folded into a projection at other head counts and sizes
 * (its slices and reshapes as instances), a false variant refused;
 * reshape shapes (the attention out_proj's transpose sunk, on other sizes
 * only where proven); batchnorms of another eps (the pre-norm fold on
 * MaxViT's eps 1e-3); Llama's rotary embedding moved before the head
 * transpose at other sizes; a rule's enlarge on filters of another kernel,
 * and on a kernel no pattern filter has.
 * Rules:
 * tests/data/rules/instances.rules.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "rewrite/rewrite_int.h"
#include "search/search.h"
#include "verify/verify.h"

#define RULES SUPEROPT_SOURCE_DIR "/tests/data/rules/instances.rules"

static ir_ruleset rs;
static rewrite_rules *rules;

static void setup(void) {
  base_diag d;
  ir_ruleset_init(&rs);
  cr_assert_eq(ir_rules_read_file(RULES, &rs, &d), BASE_OK, "%s", d.msg);
  rules = rewrite_rules_compile(&rs, REWRITE_FORWARD, 0, &d);
  cr_assert(rules, "%s", d.msg);
}

static void teardown(void) {
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "parse: %s", d.msg);
  return g;
}

static int count_op(const ir_graph *g, ir_opcode op) {
  int c[IR_NOPS];
  ir_op_counts(g, c);
  return c[op];
}

/* The forward direction of rule id. */
static const rewrite_dir *dir_of(const char *id) {
  for (int k = 0; k < rules->ndirs; k++) /* slots with a direction */
    if (rules->dirs[k].pat && !strcmp(rs.rules[rules->dirs[k].rule].id, id))
      return &rules->dirs[k];
  cr_assert_fail("no direction for %s", id);
  return NULL;
}

/* Matches of rule id in g; *ninst of them are instances. Each match is
 * applied and the result checked against g on the CPU executor. */
static int matches(const char *id, const ir_graph *g, int *ninst) {
  const rewrite_dir *dr = dir_of(id);
  rewrite_index ix;
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_index_build(g, &ix, &d), BASE_OK);
  cr_assert_eq(rewrite_match_cpat(&dr->cp, g, &ix, &ms, &d), BASE_OK, "%s",
               d.msg);
  *ninst = 0;
  for (int i = 0; i < ms.n; i++) {
    const rewrite_match *m = &ms.m[i];
    *ninst += m->pat != NULL;
    ir_graph *h = rewrite_apply(g, rewrite_match_pat(dr, m),
                                rewrite_match_repl(dr, m), m, &d);
    cr_assert(h, "%s: apply: %s", id, d.msg);
    double e = -1;
    cr_assert_eq(ex_check(g, h, 5, &e, &d), BASE_OK, "%s", d.msg);
    cr_assert_leq(e, 1e-4, "%s: rewrite changes the result (%g)", id, e);
    ir_graph_free(h);
  }
  int n = ms.n;
  rewrite_matches_free(&ms);
  rewrite_index_free(&ix);
  return n;
}

/* Two convolutions added: the ResNeXt block's tail. CONV is the parameter
 * text of both convolutions, BIAS 1 to give both a bias. */
static ir_graph *add_convs(const char *conv, int bias, int relu) {
  char text[1024];
  snprintf(text, sizeof text,
           "input x: [1,6,10,10]\ninput y: [1,4,10,10]\n"
           "weight w: [8,%s,3,3]\nweight v: [8,%s,3,3]\n"
           "weight bw: [8]\nweight bv: [8]\n"
           "a = conv2d(x, w%s) %s\nb = conv2d(y, v%s) %s\n"
           "o = ewadd(a, b)\n%s",
           strstr(conv, "groups=2") ? "3" : "6",
           strstr(conv, "groups=2") ? "2" : "4", bias ? ", bw" : "", conv,
           bias ? ", bv" : "", conv,
           relu ? "r = relu(o)\noutput r\n" : "output o\n");
  return parse(text);
}

TestSuite(instances, .init = setup, .fini = teardown);

/* Batch-norm folding (a rule of rules/extended.rules: its pattern on [4,4]
 * filters, its folded bias built through reshapes to [1,4] and [4]) on a
 * 1x1 convolution of 3 channels into 5: pattern dimension 4 binds 3 and
 * 5, and the reshapes take the one size their input's elements leave
 * (applied and checked on the executor by matches()). */
Test(instances, bn_fold_on_unequal_channels) {
  int ni;
  ir_graph *g = parse("input x: [1,3,6,6]\nweight w: [5,3,1,1]\n"
                      "weight s: [5]\nweight b: [5]\nweight m: [5]\n"
                      "weight v: [5]\nc = conv2d(x, w)\n"
                      "n = batchnorm(c, s, b, m, v)\nr = relu(n)\noutput r\n");
  cr_assert_eq(matches("bn_fold_relu", g, &ni), 1);
  cr_assert_eq(ni, 0);
  ir_graph_free(g);
}

/* A batchnorm before a biased 1x1 convolution (MaxViT's MBConv pre-norm:
 * eps 1e-3) folds through the tenth tier's eps-1e-5 rule only as a proven
 * instance whose batchnorms carry the graph's eps (checked on the executor
 * by matches()); the bias-free rule does not bind it (no bias slot left to
 * place it in); at eps 1e-5 without the bias, the rule itself; never into
 * a padded 3x3 convolution; the fold after a convolution at eps 1e-3 too. */
static ir_graph *prenorm(const char *eps, int bias, const char *conv, int k) {
  char text[1024];
  snprintf(text, sizeof text,
           "input x: [2,4,6,6]\nweight w: [6,4,%d,%d]\nweight c: [6]\n"
           "weight s: [4]\nweight b: [4]\nweight m: [4]\nweight v: [4]\n"
           "n = batchnorm(x, s, b, m, v) %s\ny = conv2d(n, w%s) %s\n"
           "output y\n",
           k, k, eps, bias ? ", c" : "", conv);
  return parse(text);
}

Test(instances, prenorm_fold_at_other_eps) {
  int ni;
  ir_graph *g = prenorm("eps=0.001", 1, "", 1);
  cr_assert_eq(matches("prenorm_fold_b", g, &ni), 1);
  cr_assert_eq(ni, 1);
  const rewrite_dir *dr = dir_of("prenorm_fold_b");
  rewrite_index ix;
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_index_build(g, &ix, &d), BASE_OK);
  cr_assert_eq(rewrite_match_cpat(&dr->cp, g, &ix, &ms, &d), BASE_OK);
  const ir_graph *r = rewrite_match_repl(dr, &ms.m[0]);
  int bns = 0;
  for (int i = 0; i < r->nnodes; i++)
    if (r->nodes[i].op == IR_OP_BATCHNORM) {
      cr_expect_float_eq(r->nodes[i].a.eps, 0.001f, 1e-9);
      bns++;
    }
  cr_expect_eq(bns, 2);
  rewrite_matches_free(&ms);
  rewrite_index_free(&ix);
  cr_assert_eq(matches("prenorm_fold", g, &ni), 0); /* a bias to place */
  ir_graph_free(g);
  g = prenorm("", 0, "", 1);
  cr_assert_eq(matches("prenorm_fold", g, &ni), 1);
  cr_assert_eq(ni, 0);
  ir_graph_free(g);
  g = prenorm("eps=0.001", 0, "pad=[1,1,1,1]", 3); /* border taps read 0 */
  cr_assert_eq(matches("prenorm_fold", g, &ni), 0);
  ir_graph_free(g);
  g = parse("input x: [1,3,6,6]\nweight w: [5,3,1,1]\n"
            "weight s: [5]\nweight b: [5]\nweight m: [5]\n"
            "weight v: [5]\nc = conv2d(x, w)\n"
            "n = batchnorm(c, s, b, m, v) eps=0.001\nr = relu(n)\n"
            "output r\n");
  cr_assert_eq(matches("bn_fold_relu", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
}

Test(instances, explicit_pads_equal_to_same_match_exactly) {
  int ni;
  ir_graph *g = add_convs("pad=[1,1,1,1]", 0, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 1);
  cr_assert_eq(ni, 0); /* the rule itself, no instance */
  ir_graph_free(g);
  g = add_convs("pad=[0,0,0,0]", 0, 0); /* 'valid', not 'same' */
  cr_assert_eq(matches("merge_add_convs", g, &ni), 0);
  ir_graph_free(g);
  g = add_convs("pad=[1,1,0,0]", 0, 0); /* asymmetric: neither */
  cr_assert_eq(matches("merge_add_convs", g, &ni), 0);
  ir_graph_free(g);
}

Test(instances, biased) {
  int ni;
  ir_graph *g = add_convs("", 1, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  g = add_convs("", 1, 1); /* and the trailing relu */
  cr_assert_eq(matches("merge_add_convs_relu", g, &ni), 1);
  cr_assert_eq(ni, 1);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 1);
  ir_graph_free(g);
}

Test(instances, strided) {
  int ni;
  ir_graph *g = add_convs("stride=[2,2]", 1, 1);
  cr_assert_eq(matches("merge_add_convs_relu", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  g = add_convs("stride=[2,1]", 0, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  /* at stride 2, 'same' pads 10 rows by 0 above and 1 below: explicit
   * [1,1,1,1] pads differently and is not 'same' */
  g = add_convs("stride=[2,2] pad=[1,1,1,1]", 0, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 0);
  ir_graph_free(g);
}

/* A batchnorm after a convolution of kernel K, stride S and explicit pads
 * P (ResNet's stride-2 3x3 with pads 1, its 7x7 stem with pads 3). */
static ir_graph *conv_bn(int k, const char *params) {
  char text[512];
  snprintf(text, sizeof text,
           "input x: [1,3,12,12]\nweight w: [6,3,%d,%d]\n"
           "weight s: [6]\nweight b: [6]\nweight m: [6]\nweight v: [6]\n"
           "c = conv2d(x, w) %s\nn = batchnorm(c, s, b, m, v)\noutput n\n",
           k, k, params);
  return parse(text);
}

/* A rule over explicit pads (the extended set's conv2d/s2p1) binds a
 * convolution of equal pads exactly, one of other explicit pads or
 * another stride through a proven instance (the verifier's conv term
 * carries the pads), and no convolution padded by a mode. */
Test(instances, explicit_pads) {
  int ni;
  ir_graph *g = conv_bn(3, "stride=[2,2] pad=[1,1,1,1]");
  cr_assert_eq(matches("bn_fold_s2p1", g, &ni), 1);
  cr_assert_eq(ni, 0);
  ir_graph_free(g);
  g = conv_bn(7, "stride=[2,2] pad=[3,3,3,3]"); /* the stem */
  cr_assert_eq(matches("bn_fold_s2p1", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  g = conv_bn(3, "pad=[1,1,1,1]"); /* stride 1 */
  cr_assert_eq(matches("bn_fold_s2p1", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  g = conv_bn(3, "stride=[2,2] pad=[0,0,1,1]"); /* asymmetric pads */
  cr_assert_eq(matches("bn_fold_s2p1", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  g = conv_bn(3, "stride=[2,2] pad=same"); /* a mode: not explicit */
  cr_assert_eq(matches("bn_fold_s2p1", g, &ni), 0);
  ir_graph_free(g);
}

/* The verifier proves the fold over explicit pads and not a rule that
 * changes them (the same shapes: pads [0,0,2,2] at stride 2). */
Test(instances, explicit_pads_proven_not_changed) {
  const ir_rule *r = NULL;
  for (int i = 0; i < rs.n; i++)
    if (!strcmp(rs.rules[i].id, "bn_fold_s2p1"))
      r = &rs.rules[i];
  cr_assert(r);
  base_diag d;
  verify_ctx *c = verify_new(NULL);
  cr_assert(c);
  verify_result res;
  cr_assert_eq(verify_prove(c, r, &res, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(res.status, IR_RULE_PROVEN, "%s", res.reason);
  ir_rule bad = *r;
  bad.dst = ir_graph_clone(r->dst);
  cr_assert(bad.dst);
  for (int i = 0; i < bad.dst->nnodes; i++)
    if (bad.dst->nodes[i].op == IR_OP_CONV2D)
      memcpy(bad.dst->nodes[i].a.pad, (int32_t[]){0, 0, 2, 2},
             sizeof(int32_t[4]));
  cr_assert_eq(verify_prove(c, &bad, &res, &d), BASE_OK, "%s", d.msg);
  cr_expect_neq(res.status, IR_RULE_PROVEN, "pads [0,0,2,2] proven");
  ir_graph_free(bad.dst);
  verify_free(c);
}

Test(instances, grouped_only_where_proven) {
  int ni;
  /* concatenating grouped convolutions' inputs regroups the channels: the
   * instance does not hold and is refused */
  ir_graph *g = add_convs("groups=2", 1, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 0);
  ir_graph_free(g);
  /* a scalar commutes with a grouped (depthwise) convolution */
  g = parse("input x: [1,8,6,6]\ninput s: []\nweight w: [8,1,3,3]\n"
            "xs = smul(x, s)\no = conv2d(xs, w) groups=8 stride=[2,2]\n"
            "output o\n");
  cr_assert_eq(matches("conv_smul_x", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
}

/* A direction is given up (matched exactly from then on) after refusals of
 * 8 kinds with no proof, a kind being the bound nodes' parameters, shapes
 * aside: grouped biased siblings added, refused on 10 sizes, are one kind,
 * and the ungrouped ones after them are still proven (counting each size
 * gave the direction up after the eighth). */
Test(instances, one_refused_kind_on_many_shapes_keeps_a_direction) {
  int ni;
  for (int hw = 5; hw < 15; hw++) {
    char text[512];
    snprintf(text, sizeof text,
             "input x: [1,6,%d,%d]\ninput y: [1,4,%d,%d]\n"
             "weight w: [8,3,3,3]\nweight v: [8,2,3,3]\n"
             "weight bw: [8]\nweight bv: [8]\n"
             "a = conv2d(x, w, bw) groups=2\nb = conv2d(y, v, bv) groups=2\n"
             "o = ewadd(a, b)\noutput o\n",
             hw, hw, hw, hw);
    ir_graph *g = parse(text);
    cr_assert_eq(matches("merge_add_convs", g, &ni), 0);
    ir_graph_free(g);
  }
  ir_graph *g = add_convs("", 1, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
}

Test(instances, planted_biased_smul_refused) {
  int ni;
  /* conv(s*x, w) + b != s * (conv(x, w) + b): must be refused */
  ir_graph *g = parse("input x: [1,3,6,6]\ninput s: []\nweight w: [4,3,3,3]\n"
                      "weight b: [4]\nxs = smul(x, s)\n"
                      "o = conv2d(xs, w, b)\noutput o\n");
  cr_assert_eq(matches("conv_smul_x", g, &ni), 0);
  ir_graph_free(g);
  /* a fused activation on the output is applied to the replacement's
   * output: relu(conv(s*x, w)) = relu(s * conv(x, w)) */
  g = parse("input x: [1,3,6,6]\ninput s: []\nweight w: [4,3,3,3]\n"
            "xs = smul(x, s)\no = conv2d(xs, w) act=relu\noutput o\n");
  cr_assert_eq(matches("conv_smul_x", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  /* but not on a convolution inside the merge pattern */
  g = add_convs("act=relu", 1, 0);
  cr_assert_eq(matches("merge_add_convs", g, &ni), 0);
  ir_graph_free(g);
  /* exactly: the unbiased convolution matches the rule itself */
  g = parse("input x: [1,3,6,6]\ninput s: []\nweight w: [4,3,3,3]\n"
            "xs = smul(x, s)\no = conv2d(xs, w)\noutput o\n");
  cr_assert_eq(matches("conv_smul_x", g, &ni), 1);
  cr_assert_eq(ni, 0);
  ir_graph_free(g);
}

/* rotate_half of a head-split projection (Llama's q and k): the rule's
 * slices and reshapes, written on [2,3,7,22] with halves of 11, bind other
 * sizes only through instances proven at the graph's (HEADS heads of D,
 * halves of LO and D - LO). */
static ir_graph *rotate_half(int heads, int d, int lo) {
  char text[1024];
  int n = heads * d;
  snprintf(text, sizeof text,
           "input h: [1,16,64]\nweight w: [64,%d]\np = matmul(h, w)\n"
           "v = reshape(p) shape=[1,16,%d,%d]\n"
           "x = transpose(v) perm=[0,2,1,3]\n"
           "hi = slice(x) starts=[0,0,0,%d] ends=[1,%d,16,%d]\n"
           "n = neg(hi)\nlo = slice(x) starts=[0,0,0,0] ends=[1,%d,16,%d]\n"
           "r = concat(n, lo) axis=3\noutput x, r\n",
           n, heads, d, lo, heads, d, heads, lo);
  return parse(text);
}

Test(instances, rotate_half_folds_at_other_sizes) {
  int ni;
  ir_graph *g = rotate_half(4, 16, 8); /* q: 4 heads of 16 */
  cr_assert_eq(matches("rotate_half_fold", g, &ni), 1);
  cr_assert_eq(ni, 1);
  cr_assert_eq(matches("rotate_half_lower_negated", g, &ni), 0);
  ir_graph_free(g);
  g = rotate_half(2, 16, 8); /* k: 2 heads */
  cr_assert_eq(matches("rotate_half_fold", g, &ni), 1);
  ir_graph_free(g);
  g = rotate_half(16, 4, 2); /* 16 heads of 4 */
  cr_assert_eq(matches("rotate_half_fold", g, &ni), 1);
  ir_graph_free(g);
  g = rotate_half(4, 16, 6); /* not halves: another rotation, refused */
  cr_assert_eq(matches("rotate_half_fold", g, &ni), 0);
  ir_graph_free(g);
}

/* Llama's rotary embedding, x cos + rotate_half(x) sin of a head-split
 * projection (cos and sin [1,1,S,D] broadcast over the heads), B = 2:
 * the eleventh tier's rule binds it at other head counts, widths and
 * sequence lengths as a proven instance (checked on the executor by
 * matches()); with the rotation's halves not halves, refused. */
static ir_graph *rotary(int heads, int d, int lo) {
  char text[1400];
  int n = heads * d;
  snprintf(text, sizeof text,
           "input h: [2,16,64]\nweight w: [64,%d]\nweight c: [1,1,16,%d]\n"
           "weight s: [1,1,16,%d]\np = matmul(h, w)\n"
           "v = reshape(p) shape=[2,16,%d,%d]\n"
           "x = transpose(v) perm=[0,2,1,3]\nxc = ewmul(x, c)\n"
           "lo = slice(x) starts=[0,0,0,0] ends=[2,%d,16,%d]\n"
           "hi = slice(x) starts=[0,0,0,%d] ends=[2,%d,16,%d]\n"
           "n = neg(hi)\nr = concat(n, lo) axis=3\nrs = ewmul(r, s)\n"
           "y = ewadd(xc, rs)\noutput y\n",
           n, d, d, heads, d, heads, lo, lo, heads, d);
  return parse(text);
}

Test(instances, rotary_before_the_head_transpose) {
  int ni;
  ir_graph *g = rotary(4, 16, 8);
  cr_assert_eq(matches("rotary_rows", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  g = rotary(8, 8, 4);
  cr_assert_eq(matches("rotary_rows", g, &ni), 1);
  ir_graph_free(g);
  g = rotary(4, 16, 6); /* not halves: refused */
  cr_assert_eq(matches("rotary_rows", g, &ni), 0);
  ir_graph_free(g);
}

Test(instances, fused_activation_and_biases_on_outputs) {
  int ni;
  /* siblings with biases and relu: the instance concatenates the biases
   * and applies relu to the merged convolution's split outputs */
  ir_graph *g = parse("input x: [1,8,6,6]\nweight a: [5,8,1,1]\n"
                      "weight ab: [5]\nweight b: [3,8,1,1]\nweight bb: [3]\n"
                      "ya = conv2d(x, a, ab) act=relu\n"
                      "yb = conv2d(x, b, bb) act=relu\noutput ya, yb\n");
  cr_assert_eq(matches("merge_conv1x1", g, &ni), 2); /* both orders */
  cr_assert_eq(ni, 2);
  ir_graph_free(g);
}

/* A rule's enlarge (r06449: a 3x3 and a 1x3 convolution of x added, one
 * convolution with the 1x3 filter enlarged to 3x3 and added) takes the
 * kernel of the graph's filter bound to the rule's 3x3 one: on two 1x1
 * convolutions, kernel=[1,1] (ops.def's '#'; it kept the rule's [3,3],
 * broadcast the 1x1 filter over a 3x3 window, and the end-to-end check
 * refused the result); at the rule's own kernels on other channels, and
 * on a 3x3 and a 1x1, [3,3] (each checked on the executor by matches()). */
Test(instances, enlarge_takes_the_graphs_kernel) {
  int ni;
  ir_graph *g = parse("input x: [1,8,6,6]\nweight a: [8,8,1,1]\n"
                      "weight b: [8,8,1,1]\nya = conv2d(x, a)\n"
                      "yb = conv2d(x, b)\ns = ewadd(ya, yb)\nr = relu(s)\n"
                      "output r\n");
  cr_assert_eq(matches("enlarge_add_relu", g, &ni), 1);
  ir_graph_free(g);
  /* the rule's kernels, and a 3x3 with a 1x1 (the rule's 3x3 filter binds
   * the 3x3, its 1x3 one the 1x1: the kernel is the 3x3's) */
  for (int i = 0; i < 2; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "input x: [1,6,7,7]\nweight a: [6,6,3,3]\nweight b: [6,6,1,%d]\n"
             "ya = conv2d(x, a) pad=same\nyb = conv2d(x, b) pad=same\n"
             "s = ewadd(ya, yb)\nr = relu(s)\noutput r\n",
             i ? 1 : 3);
    g = parse(text);
    cr_assert_eq(matches("enlarge_add_relu", g, &ni), 1, "1x%d", i ? 1 : 3);
    ir_graph_free(g);
  }
}

/* A kernel no pattern filter has stays: r07441 backward (a 1x3 and a 3x1
 * convolution concatenated, both filters enlarged to 3x3 and one
 * convolution) on SqueezeNet's fire module, a 1x1 and a 3x3 expand: both
 * enlarged to 3x3 (checked on the executor by matches()). */
Test(instances, enlarge_keeps_a_kernel_no_filter_has) {
  int ni;
  ir_graph *g = parse("input x: [1,16,7,7]\nweight a: [8,16,1,1]\n"
                      "weight b: [8,16,3,3]\n"
                      "ya = conv2d(x, a) pad=same act=relu\n"
                      "yb = conv2d(x, b) pad=same act=relu\n"
                      "c = concat(ya, yb) axis=1\noutput c\n");
  cr_assert_eq(matches("enlarge_concat_relu", g, &ni), 1);
  ir_graph_free(g);
}

/* BERT's head split around a default-layout attention at H 3, D = E 4,
 * S = T 8, q and k scaled; with PACKED its q, k and v the parts (v, k,
 * q: the sibling merges' order) of one split of a merged projection. */
static ir_graph *bert_heads(int packed) {
  char text[1024];
  snprintf(
      text, sizeof text,
      "input x: [2,8,12]\ninput c: []\ninput s: []\ninput m: [1,1,8,8]\n"
      "%s"
      "q4 = reshape(q) shape=[2,8,3,4]\nqt = transpose(q4) perm=[0,2,1,3]\n"
      "qs = ewmul(qt, c)\nk4 = reshape(k) shape=[2,8,3,4]\n"
      "kt = transpose(k4) perm=[0,2,3,1]\nks = ewmul(kt, c)\n"
      "v4 = reshape(v) shape=[2,8,3,4]\nvt = transpose(v4) perm=[0,2,1,3]\n"
      "a = attention(qs, ks, vt, s, m)\n"
      "at = transpose(a) perm=[0,2,1,3]\ny = reshape(at) shape=[2,8,12]\n"
      "output y\n",
      packed ? "weight w: [12,36]\np = matmul(x, w)\n"
               "v, k, q = split(p) axis=2 sizes=[12,12,12]\n"
             : "weight wq: [12,12]\nweight wk: [12,12]\n"
               "weight wv: [12,12]\nq = matmul(x, wq)\n"
               "k = matmul(x, wk)\nv = matmul(x, wv)\n");
  return parse(text);
}

/* Rule id applied to g at its one match (checked by matches(): one match,
 * an instance, the values kept): the new graph, its attention node in
 * *n, and in *left the nodes of operator op it still has. */
static ir_graph *rows_applied(const char *id, const ir_graph *g, ir_opcode op,
                              int *n, int *left) {
  int ni;
  cr_assert_eq(matches(id, g, &ni), 1);
  cr_expect_eq(ni, 1);
  const rewrite_dir *dr = dir_of(id);
  rewrite_index ix;
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_index_build(g, &ix, &d), BASE_OK);
  cr_assert_eq(rewrite_match_cpat(&dr->cp, g, &ix, &ms, &d), BASE_OK);
  ir_graph *h = rewrite_apply(g, rewrite_match_pat(dr, &ms.m[0]),
                              rewrite_match_repl(dr, &ms.m[0]), &ms.m[0], &d);
  cr_assert(h, "%s", d.msg);
  *n = -1, *left = 0;
  for (int i = 0; i < h->nnodes; i++) {
    *n = h->nodes[i].op == IR_OP_ATTENTION ? i : *n;
    *left += h->nodes[i].op == op;
  }
  cr_assert_geq(*n, 0);
  rewrite_matches_free(&ms);
  rewrite_index_free(&ix);
  return h;
}

/* The twelfth tier's row-layout attention (docs/generation.md), written on
 * H 4, D 5, E 7, on BERT's head split at H 3, D = E 4, S = T 8: its
 * reshapes bind as an instance, heads= and hdim= come through the
 * dimension map, every move goes and the values stay. */
Test(instances, row_attention_takes_the_graphs_heads) {
  ir_graph *g = bert_heads(0);
  int n, transposes;
  ir_graph *h = rows_applied("rows_bert", g, IR_OP_TRANSPOSE, &n, &transposes);
  cr_expect_eq(transposes, 0);
  const ir_attrs *a = &h->nodes[n].a;
  cr_expect_eq(a->groups, 3);
  cr_expect(a->nlist2 == 2 && a->list2[0] == 4 && a->list2[1] == 4,
            "hdim [%lld,%lld]", (long long)a->list2[0], (long long)a->list2[1]);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Its packed form, written at H 4, D 5 with q at columns 40: at H 3, D 4
 * the columns are 24, 12 and 0 (multiples of the graph's H*D), no split
 * left. */
Test(instances, packed_row_attention_reads_in_place) {
  ir_graph *g = bert_heads(1);
  int n, splits;
  ir_graph *h = rows_applied("rows_packed", g, IR_OP_SPLIT, &n, &splits);
  cr_expect_eq(splits, 0);
  const ir_attrs *a = &h->nodes[n].a;
  cr_expect_eq(a->groups, 3);
  cr_expect(a->nlist == 3 && a->list[0] == 24 && a->list[1] == 12 &&
                a->list[2] == 0,
            "cols [%lld,%lld,%lld]", (long long)a->list[0],
            (long long)a->list[1], (long long)a->list[2]);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* An element-wise operator whose operands broadcast otherwise than the
 * rule's binds only as an instance (match.c's rewrite_bcast_alike): the
 * convolution of a sum, proven for operands of equal shapes, applies
 * exactly at other equal shapes and not to a [1,C,1,1] operand, where it
 * is false (the instance is refused: docs/verify.md, "Broadcasting"); the
 * exact GELU written out, proven on [1,2,3,4] with a scalar divisor,
 * addend and factor, binds a batch of 16 (the scalars broadcast over an
 * axis the pattern's do not) as an instance proven with its constants
 * still bound by value. matches() applies each and checks it. */
Test(instances, broadcast_operand_is_an_instance) {
  int ni;
  for (int bc = 0; bc < 2; bc++) {
    char text[512];
    snprintf(text, sizeof text,
             "input x: [1,3,5,5]\ninput y: [1,3,%s]\nweight w: [4,3,3,3]\n"
             "s = ewadd(x, y)\no = conv2d(s, w) pad=[1,1,1,1]\noutput o\n",
             bc ? "1,1" : "5,5");
    ir_graph *g = parse(text);
    cr_assert_eq(matches("conv_of_sum", g, &ni), !bc, "broadcast %d", bc);
    cr_assert_eq(ni, 0);
    ir_graph_free(g);
  }
  ir_graph *g = parse("input x: [16,2,3,4]\nweight s: []\nweight o: []\n"
                      "weight h: []\na = ewdiv(x, s)\nb = erf(a)\n"
                      "c = ewadd(b, o)\nd = ewmul(x, c)\ne = ewmul(d, h)\n"
                      "output e\n");
  static const float v[3] = {1.41421354f, 1.0f, 0.5f};
  const char *names[3] = {"s", "o", "h"};
  for (int k = 0; k < 3; k++)
    g->tensors[ir_find_tensor(g, names[k])].data = &v[k];
  cr_assert_eq(matches("gelu_written", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
}

Test(instances, off_means_exact) {
  int ni;
  rewrite_rules_set_instances(rules, 0);
  ir_graph *g = add_convs("stride=[2,2]", 1, 1);
  cr_assert_eq(matches("merge_add_convs_relu", g, &ni), 0);
  ir_graph_free(g);
}

/* The ResNeXt block's tail, as after batchnorm folding: the search merges
 * the two biased convolutions and the add (and the relu) into one. */
Test(instances, search_finds_resnext_merge) {
  ir_graph *g = parse("input x: [1,256,14,14]\ninput y: [1,512,14,14]\n"
                      "weight w: [512,256,1,1]\nweight bw: [512]\n"
                      "weight v: [512,512,1,1]\nweight bv: [512]\n"
                      "a = conv2d(x, w, bw)\nb = conv2d(y, v, bv)\n"
                      "o = ewadd(a, b)\nr = relu(o)\noutput r\n");
  srch_options o;
  srch_options_default(&o);
  /* priced as it is: once lowered (fuse_k, src/fuse/lower.h) the add and
   * the relu are the second convolution's residual input and act, which
   * the roofline prices below the merge */
  o.fuse_k = 0;
  srch_stats st;
  base_diag d;
  ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(count_op(h, IR_OP_CONV2D), 1);
  cr_assert_eq(count_op(h, IR_OP_EWADD), 1); /* the biases', weight-only */
  cr_assert_eq(count_op(h, IR_OP_RELU), 0);
  cr_assert_lt(st.cost_after, st.cost_before);
  const rewrite_dir *dr = dir_of("merge_add_convs_relu");
  cr_assert_eq(st.applied_fw[dr->rule], 1);
  double e = -1;
  cr_assert_eq(ex_check(g, h, 5, &e, &d), BASE_OK, "%s", d.msg);
  cr_assert_leq(e, 1e-4);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ---- the signature filters ----------------------------------------------
 */

/* may_match of pattern pat in graph g, with the node-signature filter's
 * verdict alone in *nodes_ok and the matcher's count in *n. */
static int may_match(const char *pat, const char *g, int *nodes_ok, int *n) {
  ir_graph *p = parse(pat), *h = parse(g);
  rewrite_cpat cp;
  rewrite_index ix;
  rewrite_matches ms = {0};
  base_diag d;
  cr_assert_eq(rewrite_cpat_init(&cp, p, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(rewrite_index_build(h, &ix, &d), BASE_OK, "%s", d.msg);
  *nodes_ok = 1;
  for (int w = 0; w < REWRITE_SIG_WORDS; w++)
    *nodes_ok &= !(cp.ssigset[w] & ~ix.ssigset[w]);
  int ok = rewrite_cpat_may_match(&cp, &ix);
  cr_assert_eq(rewrite_match_cpat(&cp, h, &ix, &ms, &d), BASE_OK, "%s", d.msg);
  *n = ms.n;
  rewrite_matches_free(&ms);
  rewrite_index_free(&ix);
  ir_graph_free(h), ir_graph_free(p);
  return ok;
}

/* A graph with every node signature of the pattern but not its edge (conv
 * then relu where the pattern reads relu then conv) is refused before
 * matching; with the edge it may match, and does. */
Test(filter, edges_between_signatures) {
  const char *pat = "input x: [1,4,8,8]\nweight w: [4,4,3,3]\n"
                    "a = relu(x)\nb = conv2d(a, w) pad=same\noutput b\n";
  int nodes_ok, n;
  cr_assert_not(may_match(pat,
                          "input x: [1,4,8,8]\nweight w: [4,4,3,3]\n"
                          "a = conv2d(x, w) pad=same\nb = relu(a)\n"
                          "output b\n",
                          &nodes_ok, &n));
  cr_assert(nodes_ok, "the node signatures alone already refuse it");
  cr_assert_eq(n, 0);
  cr_assert(may_match(pat,
                      "input x: [1,4,8,8]\nweight w: [4,4,3,3]\n"
                      "weight v: [4,4,3,3]\n"
                      "c = conv2d(x, v) pad=same\na = relu(c)\n"
                      "b = conv2d(a, w) pad=same\noutput b\n",
                      &nodes_ok, &n));
  cr_assert_eq(n, 1);
}

/* ---- re-proving the applied rules (src/rewrite/reprove.c) ----------------
 */

/* A rule file with a false rule labelled proven (clip_relu) and a true one
 * (relu_relu); the search applies both on a graph with a clip and a double
 * relu; rewrite_reprove proves the true one, demotes the false one (its
 * direction matches nothing after), and the search run again keeps the
 * clip. */
Test(reprove, demotes_a_false_rule_labelled_proven) {
  static const char text[] =
      "rule clip_relu proven\nsrc:\ninput x: [1,2,3,3]\n"
      "y = clip(x) min=0 max=6\noutput y\ndst:\ninput x: [1,2,3,3]\n"
      "y = relu(x)\noutput y\nend\n"
      "rule relu_relu proven\nsrc:\ninput x: [1,2,3,3]\n"
      "y = relu(x)\nz = relu(y)\noutput z\ndst:\ninput x: [1,2,3,3]\n"
      "y = relu(x)\noutput y\nend\n";
  ir_ruleset frs;
  base_diag d;
  cr_assert_eq(ir_rules_parse(text, strlen(text), "t.rules", &frs, &d), BASE_OK,
               "%s", d.msg);
  rewrite_rules *r = rewrite_rules_compile(&frs, REWRITE_FORWARD, 0, &d);
  rewrite_rules *also = rewrite_rules_compile(&frs, REWRITE_FORWARD, 0, &d);
  cr_assert(r && also, "%s", d.msg);
  ir_graph *g = parse("input x: [1,4,8,8]\na = relu(x)\nb = relu(a)\n"
                      "c = clip(b) min=0 max=6\nd = ewadd(c, x)\noutput d\n");
  rewrite_matches ms = {0};
  cr_assert_eq(rewrite_match_graph(frs.rules[0].src, g, &ms, &d), BASE_OK);
  cr_assert_eq(ms.n, 1);
  rewrite_matches_free(&ms);
  int fw[2] = {3, 1}, bw[2] = {0, 0}, nd = -1;
  rewrite_reproof p = {0};
  cr_assert_eq(rewrite_reprove(&p, r, also, fw, bw, &nd, &d), BASE_OK, "%s",
               d.msg);
  cr_assert_eq(nd, 1);
  cr_assert_eq(p.reproved, 1);
  cr_assert_eq(p.ndemoted, 1);
  cr_assert_eq(p.demoted[0].rule, 0);
  cr_assert(p.demoted[0].reason[0]);
  for (int k = 0; k < r->ndirs; k++) {           /* off in both compiled sets */
    cr_assert_eq(r->dirs[k].cp.off, k / 2 == 0); /* rule i: slots 2i, 2i+1 */
    cr_assert_eq(also->dirs[k].cp.off, k / 2 == 0);
  }
  /* once per rule: a second call proves nothing again */
  cr_assert_eq(rewrite_reprove(&p, r, also, fw, bw, &nd, &d), BASE_OK);
  cr_assert_eq(nd, 0);
  cr_assert_eq(p.reproved, 1);
  /* the search with the demoted rule off keeps the clip */
  srch_options o;
  srch_options_default(&o);
  srch_stats st;
  ir_graph *h = srch_optimize(g, r, &o, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(count_op(h, IR_OP_CLIP), 1);
  cr_assert_eq(st.applied_fw[0], 0);
  srch_stats_free(&st);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_reproof_free(&p);
  rewrite_rules_free(r);
  rewrite_rules_free(also);
  ir_ruleset_free(&frs);
}

/* A rule input with a value (`input k: [] value=0.5`) binds only a tensor
 * whose known values all equal it: the exact GELU written out matches a
 * graph whose constants hold sqrt 2, 1 and 0.5, not one whose 0.5 is 0.25
 * nor one whose constants have no values (seeded random); the
 * declaration prints back with its value. */
Test(values, bind_only_known_equal_values) {
  static const char rule[] =
      "rule g proven\nsrc:\ninput x: [2,3,4]\n"
      "input k1: [] value=1.41421354\ninput k2: [] value=1\n"
      "input k3: [] value=0.5\n"
      "a = ewdiv(x, k1)\nb = erf(a)\nc = ewadd(b, k2)\nd = ewmul(x, c)\n"
      "e = ewmul(d, k3)\noutput e\n"
      "dst:\ninput x: [2,3,4]\ny = gelu(x)\noutput y\nend\n";
  ir_ruleset grs;
  base_diag d;
  cr_assert_eq(ir_rules_parse(rule, strlen(rule), "g.rules", &grs, &d), BASE_OK,
               "%s", d.msg);
  char *text = ir_print(grs.rules[0].src);
  cr_assert(text && strstr(text, "input k3: [] value=0.5\n"), "%s", text);
  free(text);
  static const float r2 = 1.41421354f, one = 1.0f, half = 0.5f, quarter = 0.25f;
  const float *vals[3][3] = {
      {&r2, &one, &half}, {&r2, &one, &quarter}, {NULL, NULL, NULL}};
  int want[3] = {1, 0, 0};
  for (int v = 0; v < 3; v++) {
    ir_graph *g = parse("input x: [1,8,16]\nweight s: []\nweight o: []\n"
                        "weight h: []\na = ewdiv(x, s)\nb = erf(a)\n"
                        "c = ewadd(b, o)\nd = ewmul(x, c)\ne = ewmul(d, h)\n"
                        "f = relu(e)\noutput f\n");
    const char *names[3] = {"s", "o", "h"};
    for (int k = 0; k < 3; k++)
      g->tensors[ir_find_tensor(g, names[k])].data = vals[v][k];
    rewrite_matches ms = {0};
    cr_assert_eq(rewrite_match_graph(grs.rules[0].src, g, &ms, &d), BASE_OK);
    cr_expect_eq(ms.n, want[v], "values %d: %d matches", v, ms.n);
    rewrite_matches_free(&ms);
    ir_graph_free(g);
  }
  ir_ruleset_free(&grs);
}

/* A rule with reshapes in its pattern (rules/extended.rules' rows_sink:
 * the transpose after torch MultiheadAttention's out_proj sunk into the
 * one before it, written on B 2, H 3, S 4, D 5) binds other sizes only
 * through an instance proven for them (ops.def's '!' on reshape's shape):
 * B 3, H 2, S 5, D 4 with [S*B, H*D] rows is proven and applied (checked
 * on the executor by matches()); rows that do not divide by S*B ([10,12],
 * a product to 3 columns reshaped to [5,3,2]: false there) are refused. */
Test(instances, reshape_rows_sink) {
  int ni;
  static const char *fmt =
      "input x: [3,2,5,4]\nweight w: [%d,%d]\n"
      "a = transpose(x) perm=[2,0,1,3]\nb = reshape(a) shape=[%d,%d]\n"
      "c = matmul(b, w)\nd = reshape(c) shape=[5,3,%d]\n"
      "e = transpose(d) perm=[1,0,2]\noutput e\n";
  char text[512];
  snprintf(text, sizeof text, fmt, 8, 7, 15, 8, 7);
  ir_graph *g = parse(text);
  cr_assert_eq(matches("rows_sink", g, &ni), 1);
  cr_assert_eq(ni, 1);
  ir_graph_free(g);
  snprintf(text, sizeof text, fmt, 12, 3, 10, 12, 2);
  g = parse(text);
  cr_assert_eq(matches("rows_sink", g, &ni), 0);
  ir_graph_free(g);
}
