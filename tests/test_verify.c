/* test_verify.c: the Z3 verifier (src/verify/). Every axiom is checked
 * numerically on its concrete instance with the CPU executor (and planted
 * wrong axioms must fail that check); known laws written as rules are
 * proven with the expected axioms in the core; planted false rules are
 * refused; operators without axioms give a reason, not a crash; two threads
 * with a context each work; the median proof time is reported.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "verify/verify.h"

/* ---- numeric validation of axioms ---------------------------------------- */

/* Runs g on seeded random inputs; returns its output (malloc'd). */
static float *run1(const ir_graph *g, int64_t *n) {
  base_diag d;
  ex_values *v = ex_values_new(g);
  cr_assert(v);
  cr_assert_eq(ex_fill_random(g, v, 7, &d), BASE_OK, "%s", d.msg);
  ex_options o = {1, 0};
  cr_assert_eq(ex_run(g, v, &o, &d), BASE_OK, "%s", d.msg);
  int t = g->outputs[0];
  *n = ir_shape_numel(&g->tensors[t].shape);
  float *r = malloc((size_t)*n * sizeof *r);
  cr_assert(r);
  memcpy(r, v->v[t], (size_t)*n * sizeof *r);
  ex_values_free(v);
  return r;
}

/* Builds and runs both sides of ax; returns 1 when they agree within a
 * relative tolerance of 1e-4 (relative to the largest magnitude). */
static int axiom_holds(const verify_axiom *ax, double *maxerr) {
  ir_graph *l, *r;
  base_diag d;
  cr_assert_eq(verify_axiom_graphs(ax, &l, &r, &d), BASE_OK, "%s: %s", ax->name,
               d.msg);
  cr_assert(ir_shape_eq(&l->tensors[l->outputs[0]].shape,
                        &r->tensors[r->outputs[0]].shape),
            "%s: the two sides have different shapes", ax->name);
  int64_t n, m;
  float *a = run1(l, &n), *b = run1(r, &m);
  double scale = 0, err = 0;
  for (int64_t i = 0; i < n; i++)
    scale = fmax(scale, fmax(fabs(a[i]), fabs(b[i])));
  for (int64_t i = 0; i < n; i++)
    err = fmax(err, fabs(a[i] - b[i]));
  cr_assert_gt(scale, 0, "%s: the instance computes all zeros", ax->name);
  *maxerr = err / scale;
  free(a);
  free(b);
  ir_graph_free(l);
  ir_graph_free(r);
  return *maxerr <= 1e-4;
}

Test(verify, axiom_table) {
  int n = verify_naxioms();
  cr_assert_geq(n, 40, "only %d axioms", n);
  for (int i = 0; i < n; i++) {
    const verify_axiom *a = verify_axiom_at(i);
    cr_assert(a && a->name && a->text && a->inst);
    cr_assert_geq(ir_op_lookup(a->op, strlen(a->op)), 0, "%s: bad op %s",
                  a->name, a->op);
    for (int j = 0; j < i; j++)
      cr_assert_str_neq(a->name, verify_axiom_at(j)->name);
  }
  cr_assert_null(verify_axiom_at(n));
  cr_assert_null(verify_axiom_at(-1));
}

Test(verify, every_axiom_holds_numerically) {
  for (int i = 0; i < verify_naxioms(); i++) {
    double err;
    const verify_axiom *a = verify_axiom_at(i);
    cr_expect(axiom_holds(a, &err), "axiom %s: relative error %g", a->name,
              err);
  }
}

/* The encoding of graphs agrees with the axioms' own terms: each axiom's
 * instance, as a rule, is proven from that axiom alone, which must be in the
 * core. */
Test(verify, each_axiom_proves_its_instance) {
  for (int i = 0; i < verify_naxioms(); i++) {
    const verify_axiom *a = verify_axiom_at(i);
    ir_graph *l, *r;
    base_diag d;
    cr_assert_eq(verify_axiom_graphs(a, &l, &r, &d), BASE_OK, "%s", d.msg);
    ir_ruleset rs;
    ir_ruleset_init(&rs);
    ir_rule *rule = ir_ruleset_add(&rs, a->name, l, r, &d);
    cr_assert(rule, "%s: %s", a->name, d.msg);
    verify_ctx *c = verify_new_with(NULL, a, 1, 1, &d);
    cr_assert(c, "%s", d.msg);
    verify_result res;
    cr_assert_eq(verify_prove(c, rule, &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status, IR_RULE_PROVEN, "%s: %s", a->name, res.reason);
    cr_expect(res.status != IR_RULE_PROVEN ||
                  (res.ncore == 1 && !strcmp(res.core[0], a->name)),
              "%s: core of %d", a->name, res.ncore);
    verify_free(c);
    ir_ruleset_free(&rs);
  }
}

static const verify_axiom wrong[] = {
    {"matmul_comm", "matmul", "(= (matmul NONE x y) (matmul NONE y x))",
     "x=[4,4] y=[4,4]"},
    {"relu_ewadd", "relu",
     "(= (act RELU (ewadd x y)) (ewadd (act RELU x) (act RELU y)))",
     "x=[2,3] y=[2,3]"},
    {"concat_comm", "concat", "(= (concat 0 n x y) (concat 0 n y x))",
     "n=2 x=[2,3] y=[2,3]"},
};

Test(verify, wrong_axioms_fail_numerically) {
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    double err;
    cr_expect(!axiom_holds(&wrong[i], &err), "wrong axiom %s passed (%g)",
              wrong[i].name, err);
  }
}

Test(verify, bad_instances_are_rejected) {
  static const verify_axiom bad[] = {
      /* guard false for the instance */
      {"g", "conv2d",
       "(=> (= g 1) (= (conv2d 1 1 SAME g NONE x w) (conv2d 1 1 SAME g NONE x "
       "w)))",
       "g=2 x=[1,4,5,5] w=[4,2,3,3]"},
      /* concat's carried size is not x.dim[axis] */
      {"n", "concat", "(= (concat 0 n x y) (concat 0 n x y))",
       "n=1 x=[2,3] y=[2,3]"},
      /* missing binding */
      {"m", "ewadd", "(= (ewadd x y) (ewadd y x))", "x=[2,3]"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ir_graph *l, *r;
    base_diag d;
    cr_expect_neq(verify_axiom_graphs(&bad[i], &l, &r, &d), BASE_OK, "%s",
                  bad[i].name);
    cr_expect(strstr(d.msg, bad[i].name), "%s", d.msg);
  }
}

Test(verify, malformed_axiom_text_is_an_error) {
  static const verify_axiom bad[] = {
      {"nosuchfn", "ewadd", "(= (frob x) x)", "x=[2]"},
      {"sorts", "ewadd", "(= (ewadd x y) (concat x 1 y y))", "x=[2]"},
      {"paren", "ewadd", "(= (ewadd x y) (ewadd y x)", "x=[2]"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    base_diag d;
    memset(&d, 0, sizeof d);
    verify_ctx *c = verify_new_with(NULL, &bad[i], 1, 1, &d);
    cr_expect_null(c, "%s parsed", bad[i].name);
    verify_free(c);
    cr_expect(strstr(d.msg, bad[i].name), "message: %s", d.msg);
    cr_expect_gt(d.col, 0, "%s: no column", bad[i].name);
  }
}

/* ---- proving rules --------------------------------------------------------
 */

static const char *known_rules =
    "rule matmul_assoc unverified\n"
    "src:\n"
    "input a: [2,3]\ninput b: [3,4]\ninput c: [4,5]\n"
    "t = matmul(a, b)\no = matmul(t, c)\noutput o\n"
    "dst:\n"
    "input a: [2,3]\ninput b: [3,4]\ninput c: [4,5]\n"
    "t = matmul(b, c)\no = matmul(a, t)\noutput o\n"
    "end\n"
    "rule conv_concat_weights unverified\n"
    "src:\n"
    "input x: [1,2,5,5]\nweight w1: [3,2,3,3]\nweight w2: [2,2,3,3]\n"
    "w = concat(w1, w2) axis=0\no = conv2d(x, w) act=relu\noutput o\n"
    "dst:\n"
    "input x: [1,2,5,5]\nweight w1: [3,2,3,3]\nweight w2: [2,2,3,3]\n"
    "o1 = conv2d(x, w1) act=relu\no2 = conv2d(x, w2) act=relu\n"
    "o = concat(o1, o2) axis=1\noutput o\n"
    "end\n"
    "rule relu_concat unverified\n"
    "src:\n"
    "input a: [2,3]\ninput b: [2,2]\n"
    "c = concat(a, b) axis=1\no = relu(c)\noutput o\n"
    "dst:\n"
    "input a: [2,3]\ninput b: [2,2]\n"
    "ra = relu(a)\nrb = relu(b)\no = concat(ra, rb) axis=1\noutput o\n"
    "end\n"
    "rule split_concat unverified\n"
    "src:\n"
    "input a: [2,3]\ninput b: [1,3]\n"
    "ea = relu(a)\nc = concat(ea, b) axis=0\n"
    "p, q = split(c) axis=0 sizes=[2,1]\noutput p, q\n"
    "dst:\n"
    "input a: [2,3]\ninput b: [1,3]\n"
    "ea = relu(a)\noutput ea, b\n"
    "end\n"
    "rule transpose_matmul unverified\n"
    "src:\n"
    "input a: [2,3]\ninput b: [3,4]\n"
    "m = matmul(a, b)\no = transpose(m) perm=[1,0]\noutput o\n"
    "dst:\n"
    "input a: [2,3]\ninput b: [3,4]\n"
    "ta = transpose(a) perm=[1,0]\ntb = transpose(b) perm=[1,0]\n"
    "o = matmul(tb, ta)\noutput o\n"
    "end\n"
    "rule ewadd_three unverified\n"
    "src:\n"
    "input a: [2,3]\ninput b: [2,3]\ninput c: [2,3]\n"
    "s = ewadd(a, b)\no = ewadd(s, c)\noutput o\n"
    "dst:\n"
    "input a: [2,3]\ninput b: [2,3]\ninput c: [2,3]\n"
    "s = ewadd(b, a)\no = ewadd(c, s)\noutput o\n"
    "end\n"
    "rule taso_matmul_concat unverified\n"
    "src:\n"
    "input a: [2,4]\ninput b: [2,4]\ninput c: [4,4]\ninput d: [4,4]\n"
    "l = concat(a, b) axis=1\nr = concat(c, d) axis=0\no = matmul(l, r)\n"
    "output o\n"
    "dst:\n"
    "input a: [2,4]\ninput b: [2,4]\ninput c: [4,4]\ninput d: [4,4]\n"
    "m1 = matmul(a, c)\nm2 = matmul(b, d)\no = ewadd(m1, m2)\noutput o\n"
    "end\n"
    "rule taso_conv_enlarge unverified\n"
    "src:\n"
    "input x: [2,4,5,5]\ninput y: [2,4,5,5]\ninput w: [4,4,3,1]\n"
    "c1 = conv2d(x, w)\nc2 = conv2d(y, w)\no = concat(c1, c2) axis=0\n"
    "output o\n"
    "dst:\n"
    "input x: [2,4,5,5]\ninput y: [2,4,5,5]\ninput w: [4,4,3,1]\n"
    "xy = concat(x, y) axis=0\new = enlarge(w) kernel=[3,3]\n"
    "o = conv2d(xy, ew)\noutput o\n"
    "end\n"
    "rule iconv_relu unverified\n"
    "src:\n"
    "input x: [2,4,5,5]\n"
    "k = const_iconv() shape=[4,4,3,3]\no = conv2d(x, k) act=relu\noutput o\n"
    "dst:\n"
    "input x: [2,4,5,5]\n"
    "o = relu(x)\noutput o\n"
    "end\n"
    "rule imm_linear unverified\n"
    "src:\n"
    "input a: [2,4]\ninput b: [4,4]\n"
    "m = matmul(a, b)\no = ewadd(a, m)\noutput o\n"
    "dst:\n"
    "input a: [2,4]\ninput b: [4,4]\n"
    "i = const_imm() shape=[4,4]\ns = ewadd(b, i)\no = matmul(a, s)\n"
    "output o\n"
    "end\n"
    "rule smul_split unverified\n"
    "src:\n"
    "input a: [2,4]\ninput b: [2,3]\ninput s: []\n"
    "o = smul(a, s)\noutput o\n"
    "dst:\n"
    "input a: [2,4]\ninput b: [2,3]\ninput s: []\n"
    "c = concat(a, b) axis=1\nm = smul(c, s)\n"
    "p, q = split(m) axis=1 sizes=[4,3]\noutput p\n"
    "end\n"
    "rule ones_identity unverified\n"
    "src:\n"
    "input a: [2,4]\ninput b: [2,4]\n"
    "k = const_ones() shape=[2,4]\nm = ewmul(a, k)\no = ewadd(m, b)\n"
    "output o\n"
    "dst:\n"
    "input a: [2,4]\ninput b: [2,4]\n"
    "o = ewadd(b, a)\noutput o\n"
    "end\n"
    "rule split3 unverified\n"
    "src:\n"
    "input a: [1,3]\ninput b: [2,3]\ninput c: [1,3]\n"
    "x = concat(a, b, c) axis=0\ny = relu(x)\n"
    "p, q, r = split(y) axis=0 sizes=[1,2,1]\noutput q\n"
    "dst:\n"
    "input a: [1,3]\ninput b: [2,3]\ninput c: [1,3]\n"
    "o = relu(b)\noutput o\n"
    "end\n"
    "rule relu_twice unverified\n"
    "src:\ninput x: [1,2,5,5]\nweight w: [3,2,3,1]\n"
    "c = conv2d(x, w) act=relu\no = relu(c)\noutput o\n"
    "dst:\ninput x: [1,2,5,5]\nweight w: [3,2,3,1]\n"
    "o = conv2d(x, w) act=relu\noutput o\n"
    "end\n"
    "rule split_matmul unverified\n"
    "src:\ninput a: [2,3]\ninput b: [3,4]\n"
    "m = matmul(a, b)\np, q = split(m) axis=1 sizes=[1,3]\noutput q\n"
    "dst:\ninput a: [2,3]\ninput b: [3,4]\n"
    "u, v = split(b) axis=1 sizes=[1,3]\no = matmul(a, v)\noutput o\n"
    "end\n"
    "rule depthwise_smul unverified\n"
    "src:\ninput x: [1,4,5,5]\nweight w: [4,1,1,3]\ninput s: []\n"
    "xs = smul(x, s)\no = conv2d(xs, w) groups=4\noutput o\n"
    "dst:\ninput x: [1,4,5,5]\nweight w: [4,1,1,3]\ninput s: []\n"
    "c = conv2d(x, w) groups=4\no = smul(c, s)\noutput o\n"
    "end\n";

/* Expected axiom in each known rule's core (by position). */
static const char *const expect_core[] = {
    "matmul_assoc",     "conv_concat_w", "act_concat",          "split0_concat",
    "transpose_matmul", "ewadd_comm",    "matmul_concat_inner", "conv_enlarge",
    "conv_iconv",       "matmul_imm_r",  "smul_concat",         "ewmul_ones",
    "act_split1",       "relu_idem",     "split1_matmul_r",     "conv_smul_x"};

static void parse_rules(const char *text, ir_ruleset *rs) {
  base_diag d;
  cr_assert_eq(ir_rules_parse(text, strlen(text), "test.rules", rs, &d),
               BASE_OK, "test.rules:%d:%d: %s", d.line, d.col, d.msg);
}

static int in_core(const verify_result *r, const char *name) {
  for (int i = 0; i < r->ncore; i++)
    if (!strcmp(r->core[i], name))
      return 1;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

Test(verify, proves_known_laws) {
  ir_ruleset rs;
  parse_rules(known_rules, &rs);
  cr_assert_eq((size_t)rs.n, sizeof expect_core / sizeof expect_core[0]);
  verify_ctx *c = verify_new(NULL);
  cr_assert(c);
  double ms[64];
  for (int i = 0; i < rs.n; i++) {
    verify_result res;
    base_diag d;
    cr_assert_eq(verify_prove(c, &rs.rules[i], &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status, IR_RULE_PROVEN, "%s: %s", rs.rules[i].id,
                 res.reason);
    cr_expect(in_core(&res, expect_core[i]), "%s: core lacks %s (%d axioms)",
              rs.rules[i].id, expect_core[i], res.ncore);
    ms[i] = res.ms;
  }
  qsort(ms, (size_t)rs.n, sizeof ms[0], cmp_double);
  fprintf(stderr, "verify: %d known rules, median proof %.1f ms, max %.1f ms\n",
          rs.n, ms[rs.n / 2], ms[rs.n - 1]);
  verify_free(c);
  ir_ruleset_free(&rs);
}

static const char *false_rules =
    "rule matmul_comm unverified\n"
    "src:\ninput a: [4,4]\ninput b: [4,4]\no = matmul(a, b)\noutput o\n"
    "dst:\ninput a: [4,4]\ninput b: [4,4]\no = matmul(b, a)\noutput o\n"
    "end\n"
    "rule relu_ewadd unverified\n"
    "src:\ninput a: [2,3]\ninput b: [2,3]\ns = ewadd(a, b)\no = relu(s)\n"
    "output o\n"
    "dst:\ninput a: [2,3]\ninput b: [2,3]\nra = relu(a)\nrb = relu(b)\n"
    "o = ewadd(ra, rb)\noutput o\n"
    "end\n"
    "rule concat_swap unverified\n"
    "src:\ninput a: [2,3]\ninput b: [2,3]\no = concat(a, b) axis=0\n"
    "output o\n"
    "dst:\ninput a: [2,3]\ninput b: [2,3]\no = concat(b, a) axis=0\n"
    "output o\n"
    "end\n"
    "rule avgpool_is_not_sum_pool unverified\n"
    "src:\ninput x: [1,4,5,5]\n"
    "o = avgpool(x) kernel=[3,3] pad=same count_include_pad=1\noutput o\n"
    "dst:\ninput x: [1,4,5,5]\n"
    "k = const_pool() shape=[4,1,3,3]\no = conv2d(x, k) groups=4\noutput o\n"
    "end\n";

/* Proves each rule of text (2 s each): those whose id begins "ok_" must
 * be proven, the others refused with a reason. */
static void expect_ok_proven(const char *text) {
  ir_ruleset rs;
  parse_rules(text, &rs);
  verify_opts o = {2000};
  verify_ctx *c = verify_new(&o);
  cr_assert(c);
  for (int i = 0; i < rs.n; i++) {
    verify_result res;
    base_diag d;
    int want = !strncmp(rs.rules[i].id, "ok_", 3);
    cr_assert_eq(verify_prove(c, &rs.rules[i], &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status == IR_RULE_PROVEN, want, "%s: %s", rs.rules[i].id,
                 want ? res.reason : "proven");
    cr_expect(want || res.reason[0], "%s: no reason", rs.rules[i].id);
  }
  verify_free(c);
  ir_ruleset_free(&rs);
}

Test(verify, refuses_false_rules) { expect_ok_proven(false_rules); }

/* Broadcasting (encode.c's enc_ew2): an element-wise operator of operands
 * of different shapes is no equal-shape ewadd/ewmul, whose laws (a
 * convolution or split of a sum is the sum of the parts) fail under
 * broadcasting. conv_of_broadcast_sum is false (a padded 3x3 convolution
 * of a per-channel constant is no convolution of the 1x1 constant; the
 * verifier of 2026-11-30 proved it by conv_ewadd_x), and so is
 * enlarged_filter_plus_broadcast_one (the 1x1 filter broadcast over the
 * 3x3 window: r06449's instance on two 1x1 convolutions with its kernel
 * written literally, proven then by conv_ewadd_w); the laws that do hold
 * of broadcasts are proven. */
static const char *broadcast_rules =
    "rule conv_of_broadcast_sum unverified\n"
    "src:\ninput x: [1,2,4,4]\ninput y: [1,2,1,1]\ninput w: [3,2,3,3]\n"
    "s = ewadd(x, y)\no = conv2d(s, w) pad=[1,1,1,1]\noutput o\n"
    "dst:\ninput x: [1,2,4,4]\ninput y: [1,2,1,1]\ninput w: [3,2,3,3]\n"
    "a = conv2d(x, w) pad=[1,1,1,1]\nb = conv2d(y, w) pad=[1,1,1,1]\n"
    "o = ewadd(a, b)\noutput o\n"
    "end\n"
    "rule enlarged_filter_plus_broadcast_one unverified\n"
    "src:\ninput x: [1,4,6,6]\ninput w: [4,4,1,1]\ninput h: [4,4,1,1]\n"
    "a = conv2d(x, w) pad=same\nb = conv2d(x, h) pad=same\n"
    "o = ewadd(a, b)\noutput o\n"
    "dst:\ninput x: [1,4,6,6]\ninput w: [4,4,1,1]\ninput h: [4,4,1,1]\n"
    "e = enlarge(h) kernel=[3,3]\ns = ewadd(w, e)\n"
    "o = conv2d(x, s) pad=same\noutput o\n"
    "end\n"
    "rule scalar_sum_of_concat unverified\n"
    "src:\ninput x: [2,3]\ninput z: [2,3]\ninput s: []\n"
    "c = concat(x, z) axis=0\no = ewadd(c, s)\noutput o\n"
    "dst:\ninput x: [2,3]\ninput z: [2,3]\ninput s: []\n"
    "a = ewadd(x, s)\nc = concat(a, z) axis=0\noutput c\n"
    "end\n"
    "rule ok_broadcast_product_commutes unverified\n"
    "src:\ninput x: [2,3]\ninput y: [1,3]\no = ewmul(x, y)\noutput o\n"
    "dst:\ninput x: [2,3]\ninput y: [1,3]\no = ewmul(y, x)\noutput o\n"
    "end\n"
    "rule ok_head_transpose_of_broadcast_product unverified\n"
    "src:\ninput x: [2,3,4,5]\ninput y: [1,3,1,5]\nm = ewmul(x, y)\n"
    "o = transpose(m) perm=[0,2,1,3]\noutput o\n"
    "dst:\ninput x: [2,3,4,5]\ninput y: [1,3,1,5]\n"
    "a = transpose(x) perm=[0,2,1,3]\nb = transpose(y) perm=[0,2,1,3]\n"
    "o = ewmul(a, b)\noutput o\n"
    "end\n";

/* Runs rule i's two sides on the same seeded inputs: their largest
 * difference relative to the largest magnitude. */
static double sides_differ(const ir_rule *r) {
  int64_t n, m;
  float *a = run1(r->src, &n), *b = run1(r->dst, &m);
  cr_assert_eq(n, m);
  double scale = 0, err = 0;
  for (int64_t i = 0; i < n; i++) {
    scale = fmax(scale, fmax(fabs(a[i]), fabs(b[i])));
    err = fmax(err, fabs(a[i] - b[i]));
  }
  free(a);
  free(b);
  cr_assert_gt(scale, 0);
  return err / scale;
}

/* expect_ok_proven on text, and each rule's sides run on the CPU
 * executor: the "ok_" ones equal, the others different (the refused are
 * false, the proven true). */
static void expect_proven_and_equal(const char *text) {
  expect_ok_proven(text);
  ir_ruleset rs;
  parse_rules(text, &rs);
  for (int i = 0; i < rs.n; i++) {
    double e = sides_differ(&rs.rules[i]);
    int ok = !strncmp(rs.rules[i].id, "ok_", 3);
    cr_expect(ok ? e < 1e-5 : e > 1e-2, "%s: sides differ by %g",
              rs.rules[i].id, e);
  }
  ir_ruleset_free(&rs);
}

Test(verify, broadcasts_keep_equal_shape_laws_out) {
  expect_proven_and_equal(broadcast_rules);
}

/* The row layout (heads=) by its definition (encode.c's enc_att_rows, the
 * twelfth tier, docs/generation.md): BERT's head split around a
 * default-layout attention, q and k scaled, is the row-layout node on the
 * rows with both scales moved into its s (bmatmul_smul_l, _r, smul_smul);
 * Llama's, q and k already [B,S,H,D] and k transposed twice, is the node
 * on their reshapes. With k and v swapped, or one scale left out, the
 * sides differ and the verifier refuses them. */
#define ROWS_IN                                                                \
  "input x1: [2,3,20]\ninput x2: [2,6,20]\ninput x3: [2,6,20]\n"               \
  "input c1: []\ninput c2: []\ninput s1: []\ninput m1: [1,1,3,6]\n"
#define ROWS_SRC                                                               \
  "src:\n" ROWS_IN "t1 = reshape(x1) shape=[2,3,4,5]\n"                        \
  "t2 = transpose(t1) perm=[0,2,1,3]\nt3 = ewmul(t2, c1)\n"                    \
  "t4 = reshape(x2) shape=[2,6,4,5]\nt5 = transpose(t4) perm=[0,2,3,1]\n"      \
  "t6 = ewmul(t5, c2)\nt7 = reshape(x3) shape=[2,6,4,5]\n"                     \
  "t8 = transpose(t7) perm=[0,2,1,3]\n"                                        \
  "t9 = attention(t3, t6, t8, s1, m1) guard=1\n"                               \
  "t10 = transpose(t9) perm=[0,2,1,3]\nt11 = reshape(t10) shape=[2,3,20]\n"    \
  "output t11\n"
#define ROWS_ATT " guard=1 heads=4 cols=[0,0,0] hdim=[5,5]\noutput o\nend\n"
#define ROWS_S "p = ewmul(c1, c2)\nsc = ewmul(p, s1)\n"
static const char *row_rules =
    "rule ok_rows unverified\n" ROWS_SRC "dst:\n" ROWS_IN ROWS_S
    "o = attention(x1, x2, x3, sc, m1)" ROWS_ATT "rule ok_heads unverified\n"
    "src:\ninput r1: [2,3,4,5]\ninput r2: [2,6,4,5]\ninput x3: [2,6,20]\n"
    "input c1: []\ninput c2: []\ninput s1: []\ninput m1: [1,1,3,6]\n"
    "t2 = transpose(r1) perm=[0,2,1,3]\nt3 = ewmul(t2, c1)\n"
    "t4 = transpose(r2) perm=[0,2,1,3]\nt5 = transpose(t4) perm=[0,1,3,2]\n"
    "t6 = ewmul(t5, c2)\nt7 = reshape(x3) shape=[2,6,4,5]\n"
    "t8 = transpose(t7) perm=[0,2,1,3]\n"
    "t9 = attention(t3, t6, t8, s1, m1) guard=1\n"
    "t10 = transpose(t9) perm=[0,2,1,3]\nt11 = reshape(t10) shape=[2,3,20]\n"
    "output t11\n"
    "dst:\ninput r1: [2,3,4,5]\ninput r2: [2,6,4,5]\ninput x3: [2,6,20]\n"
    "input c1: []\ninput c2: []\ninput s1: []\ninput m1: [1,1,3,6]\n"
    "a = reshape(r1) shape=[2,3,20]\nb = reshape(r2) shape=[2,6,20]\n" ROWS_S
    "o = attention(a, b, x3, sc, m1)" ROWS_ATT
    "rule rows_k_v_swapped unverified\n" ROWS_SRC "dst:\n" ROWS_IN ROWS_S
    "o = attention(x1, x3, x2, sc, m1)" ROWS_ATT
    "rule rows_one_scale_left_out unverified\n" ROWS_SRC "dst:\n" ROWS_IN
    "sc = ewmul(c1, s1)\n"
    "o = attention(x1, x2, x3, sc, m1)" ROWS_ATT;

Test(verify, row_attention_by_definition) {
  expect_proven_and_equal(row_rules);
}

/* MaxViT's (the thirteenth tier): q, k and v sliced out of packed rows of
 * rank 4 [1,W,N,3C], split into heads at rank 5, k scaled between its two
 * transposes (transpose01342_of_01324, transpose_smul_any), a rank-5
 * default-layout attention with the relative-position bias, merged back:
 * the row-layout node on the rank-4 rows (their leading dimensions one
 * batch), k's scale in its s. With q and k's columns swapped, or the
 * scale left out, the sides differ and the verifier refuses them. */
#define MXV_IN                                                                 \
  "input x0: [1,2,3,60]\ninput s1: []\ninput c2: []\ninput m1: [1,4,3,3]\n"
#define MXV_SRC                                                                \
  "src:\n" MXV_IN "q0 = slice(x0) starts=[0,0,0,0] ends=[1,2,3,20]\n"          \
  "q1 = reshape(q0) shape=[1,2,3,4,5]\nq2 = transpose(q1) perm=[0,1,3,2,4]\n"  \
  "k0 = slice(x0) starts=[0,0,0,20] ends=[1,2,3,40]\n"                         \
  "k1 = reshape(k0) shape=[1,2,3,4,5]\nk2 = transpose(k1) perm=[0,1,3,2,4]\n"  \
  "k3 = ewmul(k2, c2)\nk4 = transpose(k3) perm=[0,1,2,4,3]\n"                  \
  "v0 = slice(x0) starts=[0,0,0,40] ends=[1,2,3,60]\n"                         \
  "v1 = reshape(v0) shape=[1,2,3,4,5]\nv2 = transpose(v1) perm=[0,1,3,2,4]\n"  \
  "a1 = attention(q2, k4, v2, s1, m1)\na2 = transpose(a1) perm=[0,1,3,2,4]\n"  \
  "a3 = reshape(a2) shape=[1,2,3,20]\noutput a3\n"
#define MXV_ATT " hdim=[5,5]\noutput o\nend\n"
#define MXV_SC "sc = ewmul(c2, s1)\n"
static const char *maxvit_rules =
    "rule ok_maxvit unverified\n" MXV_SRC "dst:\n" MXV_IN MXV_SC
    "o = attention(x0, x0, x0, sc, m1) heads=4 cols=[0,20,40]" MXV_ATT
    "rule maxvit_q_k_swapped unverified\n" MXV_SRC "dst:\n" MXV_IN MXV_SC
    "o = attention(x0, x0, x0, sc, m1) heads=4 cols=[20,0,40]" MXV_ATT
    "rule maxvit_scale_left_out unverified\n" MXV_SRC "dst:\n" MXV_IN
    "o = attention(x0, x0, x0, s1, m1) heads=4 cols=[0,20,40]" MXV_ATT;

Test(verify, rank4_row_attention_by_definition) {
  expect_proven_and_equal(maxvit_rules);
}

/* ViT's (torch's MultiheadAttention, sequence-first, one packed
 * projection [S,B,3E]): the head split as the export writes it (a rank-5
 * transpose, slices on the first axis, reshapes to [S,B*H,D] and back),
 * q and k scaled by a [1] constant, is the sequence-first row-layout node
 * on the packed rows, reshaped: proven by the move chains' index maps
 * (moves.c) and the one-element scale as a scalar (encode.c's one_scale).
 * With q and k's columns swapped, v read from k's, the output's rows in
 * sequence order, or a scale left out, the sides differ and the verifier
 * refuses them. */
#define VIT_IN "input x: [5,2,36]\ninput c1: [1]\n"
#define VIT_SRC(QS, OUTPERM)                                                   \
  "src:\n" VIT_IN "t1 = reshape(x) shape=[5,2,3,12]\n"                         \
  "t2 = reshape(t1) shape=[1,5,2,3,12]\n"                                      \
  "t3 = transpose(t2) perm=[3,1,2,0,4]\nt4 = reshape(t3) shape=[3,5,2,12]\n"   \
  "q0 = slice(t4) starts=[0,0,0,0] ends=[1,5,2,12]\n"                          \
  "q1 = reshape(q0) shape=[5,6,4]\nq2 = transpose(q1) perm=[1,0,2]\n"          \
  "q3 = reshape(q2) shape=[2,3,5,4]\n" QS                                      \
  "k0 = slice(t4) starts=[1,0,0,0] ends=[2,5,2,12]\n"                          \
  "k1 = reshape(k0) shape=[5,6,4]\nk2 = transpose(k1) perm=[1,0,2]\n"          \
  "k3 = transpose(k2) perm=[0,2,1]\nk4 = reshape(k3) shape=[2,3,4,5]\n"        \
  "k5 = ewmul(k4, c1)\n"                                                       \
  "v0 = slice(t4) starts=[2,0,0,0] ends=[3,5,2,12]\n"                          \
  "v1 = reshape(v0) shape=[5,6,4]\nv2 = transpose(v1) perm=[1,0,2]\n"          \
  "v3 = reshape(v2) shape=[2,3,5,4]\na = attention(q4, k5, v3)\n"              \
  "a2 = transpose(a) perm=" OUTPERM "\ny = reshape(a2) shape=[10,12]\n"        \
  "output y\n"
#define VIT_Q "q4 = ewmul(q3, c1)\n"
#define VIT_OK VIT_SRC(VIT_Q, "[0,2,1,3]")
#define VIT_DST(SC, COLS)                                                      \
  "dst:\n" VIT_IN "s = reshape(c1) shape=[]\n" SC                              \
  "o = attention(x, x, x, sc) heads=3 cols=" COLS " hdim=[4,4] seqfirst=1\n"   \
  "y = reshape(o) shape=[10,12]\noutput y\nend\n"
#define VIT_SC "sc = ewmul(s, s)\n"
static const char *vit_rules = "rule ok_vit unverified\n" VIT_OK VIT_DST(
    VIT_SC, "[0,12,24]") "rule vit_q_k_swapped unverified\n" VIT_OK
    VIT_DST(VIT_SC, "[12,0,24]") "rule vit_v_read_from_k unverified\n" VIT_OK
        VIT_DST(VIT_SC,
                "[0,12,12]") "rule vit_rows_in_sequence_order "
                             "unverified\n" VIT_SRC(VIT_Q, "[2,0,1,3]")
                                 VIT_DST(VIT_SC, "[0,12,24]") "rule "
                                                              "vit_one_scale_"
                                                              "left_out "
                                                              "unverified"
                                                              "\n" VIT_SRC(
                                                                  "q4 = "
                                                                  "reshape(q3) "
                                                                  "shape=[2,3,"
                                                                  "5,4]\n",
                                                                  "[0,2,1,3]")
                                                                  VIT_DST(
                                                                      VIT_SC,
                                                                      "[0,12,"
                                                                      "24]");

Test(verify, seqfirst_row_attention_by_move_maps) {
  expect_proven_and_equal(vit_rules);
}

Test(verify, planted_axiom_is_used_and_named) {
  ir_ruleset rs;
  parse_rules(false_rules, &rs);
  base_diag d;
  verify_ctx *c = verify_new_with(NULL, wrong, 1, 0, &d);
  cr_assert(c, "%s", d.msg);
  verify_result res;
  cr_assert_eq(verify_prove(c, &rs.rules[0], &res, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(res.status, IR_RULE_PROVEN, "%s", res.reason);
  cr_expect(in_core(&res, "matmul_comm"));
  verify_free(c);
  ir_ruleset_free(&rs);
}

static const char *softmax_rules =
    "rule softmax_linear unverified\n"
    "src:\ninput a: [2,3]\ninput b: [2,3]\ns = ewadd(a, b)\no = softmax(s)\n"
    "output o\n"
    "dst:\ninput a: [2,3]\ninput b: [2,3]\nsa = softmax(a)\nsb = softmax(b)\n"
    "o = ewadd(sa, sb)\noutput o\n"
    "end\n"
    "rule softmax_congruence unverified\n"
    "src:\ninput a: [2,3]\ninput b: [2,3]\ns = ewadd(a, b)\no = softmax(s)\n"
    "output o\n"
    "dst:\ninput a: [2,3]\ninput b: [2,3]\ns = ewadd(b, a)\no = softmax(s)\n"
    "output o\n"
    "end\n"
    "rule dilated_conv_congruence unverified\n"
    "src:\ninput x: [1,2,7,7]\ninput w: [2,2,3,3]\ninput v: [2,2,3,3]\n"
    "s = ewadd(w, v)\no = conv2d(x, s) dilation=[2,2]\noutput o\n"
    "dst:\ninput x: [1,2,7,7]\ninput w: [2,2,3,3]\ninput v: [2,2,3,3]\n"
    "s = ewadd(v, w)\no = conv2d(x, s) dilation=[2,2]\noutput o\n"
    "end\n";

Test(verify, operators_without_axioms) {
  ir_ruleset rs;
  parse_rules(softmax_rules, &rs);
  verify_opts o = {2000};
  verify_ctx *c = verify_new(&o);
  cr_assert(c);
  verify_result res;
  base_diag d;
  cr_assert_eq(verify_prove(c, &rs.rules[0], &res, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(res.status, IR_RULE_UNPROVEN);
  cr_expect(strstr(res.reason, "unsupported operator softmax"), "%s",
            res.reason);
  for (int i = 1; i < rs.n; i++) {
    cr_assert_eq(verify_prove(c, &rs.rules[i], &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status, IR_RULE_PROVEN, "%s: %s", rs.rules[i].id,
                 res.reason);
    cr_expect(in_core(&res, "ewadd_comm"));
  }
  verify_free(c);
  ir_ruleset_free(&rs);
}

/* Llama's rotate_half, concat(neg(x[..., 8:]), x[..., :8]), moved through
 * the head transpose [0,2,1,3] in small steps (docs/notes/results.md,
 * 2026-11-30): "ok" rules must be proven, "no" rules (halves not swapped,
 * the other half, concat's inputs swapped, the moved axis's other range)
 * must not. */
#define RH_V "input v: [1,16,4,16]\n"
#define RH_X "x = transpose(v) perm=[0,2,1,3]\n"
#define RH_HI(o, t, r) o " = slice(" t ") starts=[0,0,0,8] ends=" r "\n"
#define RH_LO(o, t, r) o " = slice(" t ") starts=[0,0,0,0] ends=" r "\n"
#define RH_XR "[1,4,16,16]" /* x's whole range, last axis to the end */
#define RH_XH "[1,4,16,8]"  /* x's lower half */
#define RH_VR "[1,16,4,16]"
#define RH_VH "[1,16,4,8]"
/* The whole fold, pass_fold_rotate_half's: rotate_half of q =
 * transpose(reshape(matmul(h, w))) is the projection by w's columns rotated
 * per head. */
#define RH_FOLD_IN "input a: [1,16,64]\ninput w: [64,64]\n"
#define RH_FOLD_SRC                                                            \
  RH_FOLD_IN "p = matmul(a, w)\nv = reshape(p) shape=[1,16,4,16]\n" RH_X       \
      RH_HI("hi", "x", RH_XR) "n = neg(hi)\n" RH_LO(                           \
          "lo", "x", RH_XH) "o = concat(n, lo) axis=3\noutput o\n"
#define RH_FOLD_DST                                                            \
  "p = matmul(a, w2)\nv = reshape(p) shape=[1,16,4,16]\n"                      \
  "o = transpose(v) perm=[0,2,1,3]\noutput o\nend\n"
static const char *rotate_half_rules =
    "rule ok_slice_transpose unverified\nsrc:\n" RH_V RH_X RH_HI("o", "x", RH_XR) "output o\ndst:\n" RH_V RH_HI(
        "s", "v",
        RH_VR) "o = transpose(s) perm=[0,2,1,3]\noutput o\nend\n"
               "rule ok_neg_transpose unverified\nsrc:\ninput a: [1,16,4,8]\n"
               "t = transpose(a) perm=[0,2,1,3]\no = neg(t)\noutput o\n"
               "dst:\ninput a: [1,16,4,8]\nn = neg(a)\no = transpose(n) "
               "perm=[0,2,1,3]\n"
               "output o\nend\n"
               "rule ok_rotate_half_transpose unverified\nsrc:\n" RH_V RH_X
                   RH_HI("h", "x", RH_XR) "n = neg(h)\n" RH_LO(
                       "l", "x",
                       RH_XH) "o = concat(n, l) axis=3\noutput o\ndst:\n" RH_V
                       RH_HI("h", "v", RH_VR) "n = neg(h)\n" RH_LO(
                           "l", "v",
                           RH_VH) "c = concat(n, l) axis=3\no = transpose(c) "
                                  "perm=[0,2,1,3]\noutput o\nend\n"
                                  "rule ok_halves_split unverified\nsrc:\n" RH_V
                                      RH_LO("l", "v", RH_VH) RH_HI(
                                          "h", "v",
                                          RH_VR) "output l\noutput "
                                                 "h\ndst:\n" RH_V
                                                 "l, h = split(v) axis=3 "
                                                 "sizes=[8,8]\noutput "
                                                 "l\noutput h\nend\n"
                                                 "rule ok_moved_axis "
                                                 "unverified\nsrc:\n" RH_V RH_X
                                                 "o = slice(x) "
                                                 "starts=[0,1,0,0] "
                                                 "ends=[1,3,16,16]\noutput "
                                                 "o\ndst:\n" RH_V
                                                 "s = slice(v) "
                                                 "starts=[0,0,1,0] "
                                                 "ends=[1,16,3,16]\n"
                                                 "o = transpose(s) "
                                                 "perm=[0,2,1,3]\noutput "
                                                 "o\nend\n"
                                                 "rule no_halves_kept "
                                                 "unverified\nsrc:\n" RH_V
                                                     RH_X RH_HI("h", "x", RH_XR) "n = neg(h)\n" RH_LO(
                                                         "l", "x",
                                                         RH_XH) "o = concat(n, "
                                                                "l) "
                                                                "axis="
                                                                "3\noutput o\n"
                                                                "dst:\n" RH_V
                                                                    RH_LO("l", "v", RH_VH) "n = neg(l)\n" RH_HI(
                                                                        "h",
                                                                        "v",
                                                                        RH_VR) "c = concat(n, h) axis=3\no = transpose(c) perm=[0,2,1,3]\noutput o\nend\n"
                                                                               "rule no_other_half unverified\nsrc:\n" RH_V RH_LO(
                                                                                   "o",
                                                                                   "v",
                                                                                   RH_VH) "output o\ndst:\n" RH_V
                                                                                          "l, h = split(v) axis=3 sizes=[8,8]\n"
                                                                                          "output h\nend\n"
                                                                                          "rule no_concat_swapped unverified\nsrc:\ninput a: [1,16,4,8]\n"
                                                                                          "input b: [1,16,4,8]\nta = transpose(a) perm=[0,2,1,3]\n"
                                                                                          "tb = transpose(b) perm=[0,2,1,3]\no = concat(ta, tb) axis=3\noutput o\n"
                                                                                          "dst:\ninput a: [1,16,4,8]\ninput b: [1,16,4,8]\nc = concat(b, a) axis=3\n"
                                                                                          "o = transpose(c) perm=[0,2,1,3]\noutput o\nend\n"
                                                                                          "rule ok_fold_into_weights unverified\nsrc:\n" RH_FOLD_SRC
                                                                                          "dst:\n" RH_FOLD_IN
                                                                                          "w3 = reshape(w) shape=[64,4,16]\n"
                                                                                          "l, u = split(w3) axis=2 sizes=[8,8]\nn = neg(u)\n"
                                                                                          "c = concat(n, l) axis=2\nw2 = reshape(c) shape=[64,64]\n" RH_FOLD_DST
                                                                                          "rule no_fold_lower_negated unverified\nsrc:\n" RH_FOLD_SRC
                                                                                          "dst:\n" RH_FOLD_IN
                                                                                          "w3 = reshape(w) shape=[64,4,16]\n"
                                                                                          "l, u = split(w3) axis=2 sizes=[8,8]\nn = neg(l)\n"
                                                                                          "c = concat(u, n) axis=2\nw2 = reshape(c) shape=[64,64]\n" RH_FOLD_DST
                                                                                          "rule no_fold_other_heads unverified\nsrc:\n" RH_FOLD_SRC
                                                                                          "dst:\n" RH_FOLD_IN
                                                                                          "w3 = reshape(w) shape=[64,2,32]\n"
                                                                                          "l, u = split(w3) axis=2 sizes=[16,16]\nn = neg(u)\n"
                                                                                          "c = concat(n, l) axis=2\nw2 = reshape(c) shape=[64,64]\n" RH_FOLD_DST
                                                                                          "rule no_moved_axis_range unverified\nsrc:\n" RH_V
                                                                                              RH_X
                                                                                          "o = slice(x) starts=[0,1,0,0] ends=[1,3,16,16]\noutput o\ndst:\n" RH_V
                                                                                          "s = slice(v) starts=[0,0,2,0] ends=[1,16,4,16]\n"
                                                                                          "o = transpose(s) perm=[0,2,1,3]\noutput o\nend\n";

Test(verify, rotate_half_steps) { expect_ok_proven(rotate_half_rules); }

typedef struct job {
  const ir_rule *r;
  int proven;
} job;

static void *prove_thread(void *arg) {
  job *j = arg;
  verify_ctx *c = verify_new(NULL);
  if (!c)
    return NULL;
  for (int k = 0; k < 3; k++) {
    verify_result res;
    base_diag d;
    if (verify_prove(c, j->r, &res, &d) == BASE_OK)
      j->proven += res.status == IR_RULE_PROVEN;
  }
  verify_free(c);
  return NULL;
}

Test(verify, two_threads_two_contexts) {
  ir_ruleset rs;
  parse_rules(known_rules, &rs);
  job jobs[2] = {{&rs.rules[0], 0}, {&rs.rules[1], 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, prove_thread, &jobs[i]), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  cr_expect_eq(jobs[0].proven, 3);
  cr_expect_eq(jobs[1].proven, 3);
  ir_ruleset_free(&rs);
}

/* A true rule too large for e-matching in 300 ms: a product of 16 tensors
 * against a permutation of it (the AC closure explodes). */
static char *big_ac_rule(void) {
  static char buf[8192];
  int w = snprintf(buf, sizeof buf, "rule ac unverified\n");
  for (int side = 0; side < 2; side++) {
    w += snprintf(buf + w, sizeof buf - (size_t)w, side ? "dst:\n" : "src:\n");
    for (int i = 0; i < 16; i++)
      w += snprintf(buf + w, sizeof buf - (size_t)w, "input a%d: [2,3]\n", i);
    w += snprintf(buf + w, sizeof buf - (size_t)w, "t0 = ewmul(a0, a%d)\n",
                  side ? 5 : 1);
    for (int i = 2; i < 16; i++)
      w += snprintf(buf + w, sizeof buf - (size_t)w, "t%d = ewmul(t%d, a%d)\n",
                    i - 1, i - 2, side ? i * 5 % 16 : i);
    w += snprintf(buf + w, sizeof buf - (size_t)w, "output t14\n");
  }
  snprintf(buf + w, sizeof buf - (size_t)w, "end\n");
  return buf;
}

Test(verify, timeout_is_reported) {
  ir_ruleset rs;
  parse_rules(big_ac_rule(), &rs);
  verify_opts o = {300};
  verify_ctx *c = verify_new(&o);
  cr_assert(c);
  verify_result res;
  base_diag d;
  cr_assert_eq(verify_prove(c, &rs.rules[0], &res, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(res.status, IR_RULE_UNPROVEN);
  cr_expect(strstr(res.reason, "unknown: timeout"), "%s", res.reason);
  cr_expect_lt(res.ms, 5000, "took %.0f ms", res.ms);
  verify_free(c);
  ir_ruleset_free(&rs);
}

/* The timeout is the context's own watchdog (src/verify/guard.c), not Z3's
 * timer thread: after a check it interrupted, the same context proves the
 * next rule (no interrupt left over), and a context freed right after
 * creation stops its watchdog. */
Test(verify, context_proves_after_a_timeout) {
  ir_ruleset rs, ok;
  parse_rules(big_ac_rule(), &rs);
  parse_rules("rule c proven\nsrc:\ninput a: [2,3]\ninput b: [2,3]\n"
              "c = ewadd(a, b)\noutput c\ndst:\ninput a: [2,3]\n"
              "input b: [2,3]\nc = ewadd(b, a)\noutput c\nend\n",
              &ok);
  verify_opts o = {300};
  verify_ctx *c = verify_new(&o);
  cr_assert(c);
  verify_result res;
  base_diag d;
  cr_assert_eq(verify_prove(c, &rs.rules[0], &res, &d), BASE_OK, "%s", d.msg);
  cr_expect(strstr(res.reason, "unknown: timeout"), "%s", res.reason);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(verify_prove(c, &ok.rules[0], &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status, IR_RULE_PROVEN, "%s", res.reason);
  }
  verify_free(c);
  verify_free(verify_new(&o));
  ir_ruleset_free(&rs);
  ir_ruleset_free(&ok);
}

/* Every operator encodes (none crashes or fails in Z3): every_op.graph
 * against itself is proven, by reflexivity. */
Test(verify, every_operator_encodes) {
  base_diag d;
  const char *path = SUPEROPT_SOURCE_DIR "/tests/data/good/every_op.graph";
  ir_graph *a = ir_parse_file(path, &d), *b = ir_parse_file(path, &d);
  cr_assert(a && b, "%s", d.msg);
  ir_ruleset rs;
  ir_ruleset_init(&rs);
  ir_rule *r = ir_ruleset_add(&rs, "every_op", a, b, &d);
  cr_assert(r, "%s", d.msg);
  verify_ctx *c = verify_new(NULL);
  cr_assert(c);
  verify_result res;
  cr_assert_eq(verify_prove(c, r, &res, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(res.status, IR_RULE_PROVEN, "%s", res.reason);
  verify_free(c);
  ir_ruleset_free(&rs);
}

/* rules/passes.rules (the built-in passes as rules, scripts/gen-pass-rules):
 * every rule in the committed file is re-proven here, from the file's
 * status alone nothing is trusted. */
Test(verify, pass_rules_are_proven) {
  ir_ruleset rs;
  base_diag d;
  const char *path = SUPEROPT_SOURCE_DIR "/rules/passes.rules";
  cr_assert_eq(ir_rules_read_file(path, &rs, &d), BASE_OK, "%s:%d: %s", path,
               d.line, d.msg);
  cr_assert_gt(rs.n, 0);
  verify_ctx *c = verify_new(NULL);
  cr_assert(c);
  int fuse = 0, merge = 0;
  for (int i = 0; i < rs.n; i++) {
    verify_result res;
    cr_assert_eq(verify_prove(c, &rs.rules[i], &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status, IR_RULE_PROVEN, "%s: %s", rs.rules[i].id,
                 res.reason);
    cr_expect_eq(rs.rules[i].status, IR_RULE_PROVEN, "%s not marked proven",
                 rs.rules[i].id);
    fuse += !strncmp(rs.rules[i].id, "pass.fuse.", 10);
    merge += !strncmp(rs.rules[i].id, "pass.merge", 10);
  }
  cr_expect_eq(fuse + merge, rs.n, "a rule that is neither fusion nor merge");
  cr_expect_gt(fuse, 0);
  cr_expect_gt(merge, 0);
  verify_free(c);
  ir_ruleset_free(&rs);
}

/* Planted wrong pass rules, each one near miss of a rule in passes.rules:
 * the prover must refuse them. */
static const char *wrong_pass_rules =
    /* fusion into the wrong activation */
    "rule fuse_wrong_act unverified\n"
    "src:\ninput x: [1,2,6,6]\ninput w: [3,2,3,3]\ninput b: [3]\n"
    "t1 = conv2d(x, w, b)\nt2 = relu(t1)\noutput t2\n"
    "dst:\ninput x: [1,2,6,6]\ninput w: [3,2,3,3]\ninput b: [3]\n"
    "t1 = conv2d(x, w, b) act=sigmoid\noutput t1\n"
    "end\n"
    /* merged with the biases swapped between the siblings */
    "rule merge_swapped_bias unverified\n"
    "src:\ninput x: [1,2,6,6]\ninput w1: [3,2,3,3]\ninput b1: [3]\n"
    "input w2: [3,2,3,3]\ninput b2: [3]\n"
    "y1 = conv2d(x, w1, b1)\ny2 = conv2d(x, w2, b2)\noutput y1\noutput y2\n"
    "dst:\ninput x: [1,2,6,6]\ninput w1: [3,2,3,3]\ninput b1: [3]\n"
    "input w2: [3,2,3,3]\ninput b2: [3]\n"
    "cw = concat(w1, w2) axis=0\ncb = concat(b2, b1) axis=0\n"
    "cy = conv2d(x, cw, cb)\ny1, y2 = split(cy) axis=1 sizes=[3,3]\n"
    "output y1\noutput y2\n"
    "end\n"
    /* merged grouped convolutions (groups 2 mix the siblings' channels) */
    "rule merge_grouped unverified\n"
    "src:\ninput x: [1,4,6,6]\ninput w1: [2,2,3,3]\ninput w2: [2,2,3,3]\n"
    "y1 = conv2d(x, w1) groups=2\ny2 = conv2d(x, w2) groups=2\n"
    "output y1\noutput y2\n"
    "dst:\ninput x: [1,4,6,6]\ninput w1: [2,2,3,3]\ninput w2: [2,2,3,3]\n"
    "cw = concat(w1, w2) axis=0\ncy = conv2d(x, cw) groups=2\n"
    "y1, y2 = split(cy) axis=1 sizes=[2,2]\noutput y1\noutput y2\n"
    "end\n"
    /* batched matmuls with a bias (BERT's q/k/v): biases swapped */
    "rule merge_matmulb_swapped_bias unverified\n"
    "src:\ninput x: [2,3,6]\ninput w1: [6,3]\ninput b1: [3]\n"
    "input w2: [6,3]\ninput b2: [3]\n"
    "y1 = matmul(x, w1, b1)\ny2 = matmul(x, w2, b2)\noutput y1\noutput y2\n"
    "dst:\ninput x: [2,3,6]\ninput w1: [6,3]\ninput b1: [3]\n"
    "input w2: [6,3]\ninput b2: [3]\n"
    "cw = concat(w1, w2) axis=1\ncb = concat(b2, b1) axis=0\n"
    "cy = matmul(x, cw, cb)\ny1, y2 = split(cy) axis=2 sizes=[3,3]\n"
    "output y1\noutput y2\n"
    "end\n"
    /* a batched right operand: true, but outside what matmulb encodes
     * (a 2-D weight), so no proof may cover it */
    "rule merge_matmul_batched_w unverified\n"
    "src:\ninput x: [2,3,6]\ninput w1: [2,6,3]\ninput b1: [3]\n"
    "input w2: [2,6,4]\ninput b2: [4]\n"
    "y1 = matmul(x, w1, b1)\ny2 = matmul(x, w2, b2)\noutput y1\noutput y2\n"
    "dst:\ninput x: [2,3,6]\ninput w1: [2,6,3]\ninput b1: [3]\n"
    "input w2: [2,6,4]\ninput b2: [4]\n"
    "cw = concat(w1, w2) axis=2\ncb = concat(b1, b2) axis=0\n"
    "cy = matmul(x, cw, cb)\ny1, y2 = split(cy) axis=2 sizes=[3,4]\n"
    "output y1\noutput y2\n"
    "end\n"
    /* the enlarge merge (pass.merge2e) with the filters concatenated in
     * the other order than the results */
    "rule merge_enlarge_swapped unverified\n"
    "src:\ninput x: [1,2,6,6]\ninput w1: [3,2,1,1]\ninput w3: [3,2,3,3]\n"
    "y1 = conv2d(x, w1)\ny3 = conv2d(x, w3)\nc = concat(y1, y3) axis=1\n"
    "output c\n"
    "dst:\ninput x: [1,2,6,6]\ninput w1: [3,2,1,1]\ninput w3: [3,2,3,3]\n"
    "we = enlarge(w1) kernel=[3,3]\ncw = concat(w3, we) axis=0\n"
    "c = conv2d(x, cw)\noutput c\n"
    "end\n"
    /* the enlarge merge at stride 2: outside conv_enlarge's stride 1 */
    "rule merge_enlarge_stride2 unverified\n"
    "src:\ninput x: [1,2,6,6]\ninput w1: [3,2,1,1]\ninput w3: [4,2,3,3]\n"
    "y1 = conv2d(x, w1) stride=[2,2]\ny3 = conv2d(x, w3) stride=[2,2]\n"
    "c = concat(y1, y3) axis=1\noutput c\n"
    "dst:\ninput x: [1,2,6,6]\ninput w1: [3,2,1,1]\ninput w3: [4,2,3,3]\n"
    "we = enlarge(w1) kernel=[3,3]\ncw = concat(we, w3) axis=0\n"
    "c = conv2d(x, cw) stride=[2,2]\noutput c\n"
    "end\n"
    /* a biased batched matmul fused into the wrong activation */
    "rule fuse_matmulb_wrong_act unverified\n"
    "src:\ninput x: [2,3,6]\ninput w: [6,4]\ninput b: [4]\n"
    "t1 = matmul(x, w, b)\nt2 = gelu(t1)\noutput t2\n"
    "dst:\ninput x: [2,3,6]\ninput w: [6,4]\ninput b: [4]\n"
    "t1 = matmul(x, w, b) act=tanh\noutput t1\n"
    "end\n";

Test(verify, wrong_pass_rules_are_refused) {
  ir_ruleset rs;
  parse_rules(wrong_pass_rules, &rs);
  verify_opts o = {2000};
  verify_ctx *c = verify_new(&o);
  cr_assert(c);
  for (int i = 0; i < rs.n; i++) {
    verify_result res;
    base_diag d;
    cr_assert_eq(verify_prove(c, &rs.rules[i], &res, &d), BASE_OK, "%s", d.msg);
    cr_expect_eq(res.status, IR_RULE_UNPROVEN, "%s proven", rs.rules[i].id);
  }
  verify_free(c);
  ir_ruleset_free(&rs);
}
