/* test_fp.c: fingerprints and candidate pairs: the modular kernels agree
 * with the float reference kernels on small integers; known laws get equal
 * fingerprints and come out as candidate rules (matmul associativity,
 * transpose(transpose(q)) == q, conv over a concat of weights, relu over
 * concat); known non-laws do not (matmul commutativity, relu(a+b) vs
 * relu(a)+relu(b)); output does not depend on the thread count. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "fingerprint/fp.h"
#include "prune/prune.h"

/* ---- modular kernels vs the reference executor ---------------------------
 */

static uint32_t residue(float f) {
  long long v = (long long)(f < 0 ? f - 0.5f : f + 0.5f);
  return (uint32_t)(v < 0 ? (long long)FP_P + v : v);
}

/* Runs node 0 of g (one node over inputs) both ways on integers in
 * [lo, hi]; outputs scaled by scale (avgpool's count) must agree. */
static void agree(const ir_graph *g, int lo, int hi, int scale) {
  base_diag d;
  ex_values *v = ex_values_new(g);
  const ir_node *n = &g->nodes[0];
  const ir_shape *ins[2];
  const uint32_t *in[2];
  uint32_t *out[2];
  ir_shape outs[2];
  uint32_t *res[2] = {NULL, NULL};
  for (int i = 0; i < n->nin; i++) {
    const ir_tensor *t = &g->tensors[n->in[i]];
    int64_t k = ir_shape_numel(&t->shape);
    v->v[n->in[i]] = malloc((size_t)k * sizeof(float));
    res[i] = malloc((size_t)k * sizeof(uint32_t));
    for (int64_t j = 0; j < k; j++) {
      int x = lo + (int)((j * 7 + i * 3 + 1) % (hi - lo + 1));
      v->v[n->in[i]][j] = (float)x;
      res[i][j] = residue((float)x);
    }
    ins[i] = &t->shape, in[i] = res[i];
  }
  ex_options o = {1, 0};
  cr_assert_eq(ex_run(g, v, &o, &d), BASE_OK, "%s", d.msg);
  for (int i = 0; i < n->nout; i++) {
    outs[i] = g->tensors[n->out[i]].shape;
    out[i] = malloc((size_t)ir_shape_numel(&outs[i]) * sizeof(uint32_t));
  }
  cr_assert_eq(fp_kernel(n->op, &n->a, ins, in, n->nin, outs, out, 1), BASE_OK);
  for (int i = 0; i < n->nout; i++) {
    for (int64_t j = 0; j < ir_shape_numel(&outs[i]); j++) {
      uint32_t want = residue(v->v[n->out[i]][j] * (float)scale);
      uint32_t got = (uint32_t)((uint64_t)out[i][j] * scale % FP_P);
      cr_assert_eq(got, want, "%s output %d element %lld: %u vs %u",
                   ir_op(n->op)->name, i, (long long)j, got, want);
    }
    free(out[i]);
  }
  free(res[0]);
  free(res[1]);
  ex_values_free(v);
}

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "%s", d.msg);
  return g;
}

static void kernel_case(const char *text, int lo, int hi, int scale) {
  ir_graph *g = parse(text);
  agree(g, lo, hi, scale);
  ir_graph_free(g);
}

Test(fp, kernels_match_reference) {
  kernel_case("input a: [2,4]\ninput b: [4,4]\ny = matmul(a, b)\noutput y\n",
              -3, 3, 1);
  kernel_case("input x: [2,4,5,5]\ninput w: [4,4,3,3]\n"
              "y = conv2d(x, w) pad=same\noutput y\n",
              -3, 3, 1);
  kernel_case("input x: [2,4,5,5]\ninput w: [4,4,1,3]\n"
              "y = conv2d(x, w) pad=same\noutput y\n",
              -3, 3, 1);
  kernel_case("input x: [2,4,5,5]\ninput w: [4,1,3,3]\n"
              "y = conv2d(x, w) pad=same groups=4\noutput y\n",
              -3, 3, 1);
  /* the plane-at-a-time convolution's strides, dilations, uneven pads */
  kernel_case("input x: [2,4,7,6]\ninput w: [6,2,3,2]\n"
              "y = conv2d(x, w) stride=[2,1] dilation=[1,2] pad=[1,0,2,1] "
              "groups=2\noutput y\n",
              -3, 3, 1);
  kernel_case("input a: [4,4]\ninput b: [4,4]\ny = ewadd(a, b)\noutput y\n", -5,
              5, 1);
  kernel_case("input a: [4,4]\ninput b: [4,4]\ny = ewmul(a, b)\noutput y\n", -5,
              5, 1);
  kernel_case("input a: [2,4]\ninput s: []\ny = smul(a, s)\noutput y\n", -5, 5,
              1);
  kernel_case("input a: [2,4]\ninput b: [4,4]\ny = concat(a, b) axis=0\n"
              "output y\n",
              -5, 5, 1);
  kernel_case("input a: [4,4,3,3]\ninput b: [4,1,3,3]\n"
              "y = concat(a, b) axis=1\noutput y\n",
              -5, 5, 1);
  kernel_case("input a: [2,8,5,5]\ny, z = split(a) axis=1 sizes=[3,5]\n"
              "output y, z\n",
              -5, 5, 1);
  kernel_case("input a: [2,4]\ny = transpose(a) perm=[1,0]\noutput y\n", -5, 5,
              1);
  kernel_case("input x: [2,4,5,5]\n"
              "y = avgpool(x) kernel=[3,3] pad=same count_include_pad=1\n"
              "output y\n",
              -5, 5, 9);
  kernel_case("input x: [2,4,5,5]\ny = maxpool(x) kernel=[3,3] pad=same\n"
              "output y\n",
              0, 9, 1);
  kernel_case("input w: [4,4,1,3]\ny = enlarge(w) kernel=[3,3]\noutput y\n", -5,
              5, 1);
}

Test(fp, constants_match_reference) {
  const char *texts[] = {
      "y = const_iconv() shape=[4,4,3,3]\noutput y\n",
      "y = const_iconv() shape=[4,1,3,1]\noutput y\n",
      "y = const_imm() shape=[4,4]\noutput y\n",
      "y = const_ones() shape=[2,4]\noutput y\n",
      "y = const_pool() shape=[4,1,3,3]\noutput y\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    kernel_case(texts[i], 0, 0, 1);
}

/* relu is a random function: not the identity, consistent, keyed. */
Test(fp, relu_is_a_keyed_function) {
  cr_expect_eq(fp_act(IR_ACT_RELU, 1, 5), fp_act(IR_ACT_RELU, 1, 5));
  cr_expect_neq(fp_act(IR_ACT_RELU, 1, 5), fp_act(IR_ACT_RELU, 2, 5));
  cr_expect_neq(fp_act(IR_ACT_RELU, 1, 5), 5);
  cr_expect(fp_act(IR_ACT_RELU, 1, 5) < FP_P);
  cr_expect_eq(fp_act(IR_ACT_NONE, 1, 5), 5);
}

/* ---- fingerprints of known laws and non-laws ------------------------------
 */

#define M(c) ((uint8_t)en_input_id(0, (c)-1))
#define Q(c) ((uint8_t)en_input_id(1, (c)-1))
#define X(c) ((uint8_t)en_input_id(2, (c)-1))
#define W(c) ((uint8_t)en_input_id(3, (c)-1))
#define T(i) EN_VNODE(i, 0)

static en_graph graph(int n, const en_node *nodes) {
  en_graph g;
  memset(&g, 0, sizeof g);
  g.nops = (uint8_t)n;
  memcpy(g.n, nodes, (size_t)n * sizeof *nodes);
  return g;
}

static uint64_t fp_of(en_graph g) {
  uint64_t f;
  ir_shape sh[EN_MAX_OPS][EN_NSLOTS];
  cr_assert_eq(en_graph_shapes(&g, sh), 0);
  cr_assert_eq(fp_graph(&g, 1, &f, NULL), BASE_OK);
  return f;
}

#define G(...)                                                                 \
  graph(sizeof((en_node[]){__VA_ARGS__}) / sizeof(en_node),                    \
        (en_node[]){__VA_ARGS__})

Test(fp, laws_have_equal_fingerprints) {
  /* (m1 q1) q2 == m1 (q1 q2), and with the copies renamed: q3 (q1 q2) ==
   * (q3 q1) q2 needs a renaming of the q copies */
  cr_expect_eq(
      fp_of(G({EN_MATMUL, {M(1), Q(1)}, 0}, {EN_MATMUL, {T(0), Q(2)}, 0})),
      fp_of(G({EN_MATMUL, {Q(1), Q(2)}, 0}, {EN_MATMUL, {M(1), T(0)}, 0})));
  cr_expect_eq(
      fp_of(G({EN_MATMUL, {Q(1), Q(2)}, 0}, {EN_MATMUL, {Q(3), T(0)}, 0})),
      fp_of(G({EN_MATMUL, {Q(1), Q(2)}, 0}, {EN_MATMUL, {T(0), Q(3)}, 0})));
  en_graph q1 = {0};
  q1.root = Q(1);
  cr_expect_eq(
      fp_of(G({EN_TRANSPOSE, {Q(1), 0}, 0}, {EN_TRANSPOSE, {T(0), 0}, 0})),
      fp_of(q1));
  /* conv(x, concat0(w1, w2)) == concat1(conv(x, w1), conv(x, w2)) */
  cr_expect_eq(
      fp_of(G({EN_CONCAT0, {W(1), W(2)}, 0}, {EN_CONV_RELU, {X(1), T(0)}, 0})),
      fp_of(G({EN_CONV_RELU, {X(1), W(1)}, 0}, {EN_CONV_RELU, {X(1), W(2)}, 0},
              {EN_CONCAT1, {T(0), T(1)}, 0})));
  /* relu(concat(q1, q2)) == concat(relu(q1), relu(q2)) */
  cr_expect_eq(fp_of(G({EN_CONCAT0, {Q(1), Q(2)}, 0}, {EN_RELU, {T(0), 0}, 0})),
               fp_of(G({EN_RELU, {Q(1), 0}, 0}, {EN_RELU, {Q(2), 0}, 0},
                       {EN_CONCAT0, {T(0), T(1)}, 0})));
  /* a two-output graph matches whatever its output order */
  cr_expect_eq(fp_of(G({EN_RELU, {M(1), 0}, 0}, {EN_TRANSPOSE, {M(1), 0}, 0})),
               fp_of(G({EN_TRANSPOSE, {M(1), 0}, 0}, {EN_RELU, {M(1), 0}, 0})));
}

Test(fp, non_laws_differ) {
  /* relu(q1 + q2) vs relu(q1) + relu(q2) */
  cr_expect_neq(fp_of(G({EN_EWADD, {Q(1), Q(2)}, 0}, {EN_RELU, {T(0), 0}, 0})),
                fp_of(G({EN_RELU, {Q(1), 0}, 0}, {EN_RELU, {Q(2), 0}, 0},
                        {EN_EWADD, {T(0), T(1)}, 0})));
  /* relu(relu(q)) vs relu(q): not a law for every element-wise function */
  cr_expect_neq(fp_of(G({EN_RELU, {Q(1), 0}, 0}, {EN_RELU, {T(0), 0}, 0})),
                fp_of(G({EN_RELU, {Q(1), 0}, 0})));
  /* relu(q1 q2) vs relu(q1) q2 */
  cr_expect_neq(
      fp_of(G({EN_MATMUL, {Q(1), Q(2)}, 0}, {EN_RELU, {T(0), 0}, 0})),
      fp_of(G({EN_RELU, {Q(1), 0}, 0}, {EN_MATMUL, {T(0), Q(2)}, 0})));
  /* q1 * q2 vs q1 + q2 */
  cr_expect_neq(fp_of(G({EN_EWMUL, {Q(1), Q(2)}, 0})),
                fp_of(G({EN_EWADD, {Q(1), Q(2)}, 0})));
}

/* ---- candidates -----------------------------------------------------------
 */

static ir_ruleset run_mode(const char *ops, int max_ops, int threads,
                           fp_pairs mode, fp_filter f, fp_stats *st) {
  en_config c = {0};
  ir_ruleset rs;
  char err[512];
  base_diag d;
  c.max_ops = max_ops;
  c.threads = threads;
  cr_assert_eq(en_ops_parse(ops, &c.ops, err, sizeof err), BASE_OK, "%s", err);
  ir_ruleset_init(&rs);
  cr_assert_eq(fp_candidates(&c, mode, f, NULL, &rs, st, &d), BASE_OK, "%s",
               d.msg);
  return rs;
}

static ir_ruleset run_candidates(const char *ops, int max_ops, int threads,
                                 fp_stats *st) {
  ir_ruleset rs = run_mode(ops, max_ops, threads, FP_PAIRS_ALL, NULL, st);
  cr_expect_eq(st->pairs,
               st->rules + st->rej_seed + st->rej_float + st->rej_inputs);
  return rs;
}

static int count_op(const ir_graph *g, ir_opcode op) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    n += g->nodes[i].op == op;
  return n;
}

/* Is some input of node i of g an output of another node? */
static int reads_node(const ir_graph *g, int i, int arg) {
  return g->tensors[g->nodes[i].in[arg]].kind == IR_T_VALUE;
}

/* How many rules of rs satisfy pred(src, dst). */
static int count_rules(const ir_ruleset *rs,
                       int (*pred)(const ir_graph *, const ir_graph *)) {
  int n = 0;
  for (int i = 0; i < rs->n; i++)
    n += pred(rs->rules[i].src, rs->rules[i].dst);
  return n;
}

static int conv_over_concat(const ir_graph *s, const ir_graph *d) {
  return count_op(s, IR_OP_CONV2D) == 2 && count_op(s, IR_OP_CONCAT) == 1 &&
         count_op(d, IR_OP_CONV2D) == 1 && count_op(d, IR_OP_CONCAT) == 1;
}

Test(fp, matmul_associativity_found_commutativity_not) {
  fp_stats st;
  ir_ruleset rs = run_candidates("matmul", 1, 1, &st);
  cr_expect_eq(rs.n, 0, "matmul(q1,q2) vs matmul(q2,q1) is no rule");
  ir_ruleset_free(&rs);
  rs = run_candidates("matmul", 2, 2, &st);
  int assoc = 0;
  for (int i = 0; i < rs.n; i++) {
    const ir_graph *s = rs.rules[i].src, *d = rs.rules[i].dst;
    if (count_op(s, IR_OP_MATMUL) == 2 && count_op(d, IR_OP_MATMUL) == 2 &&
        reads_node(s, 1, 0) != reads_node(d, 1, 0))
      assoc++;
  }
  cr_expect(assoc >= 2, "(m q) q and (q q) q associativity: %d", assoc);
  cr_expect_eq(st.rej_seed, 0);
  cr_expect_eq(st.rej_float, 0);
  ir_ruleset_free(&rs);
}

Test(fp, transpose_involution_found) {
  fp_stats st;
  ir_ruleset rs = run_candidates("transpose", 2, 1, &st);
  int found = 0;
  for (int i = 0; i < rs.n; i++)
    found += rs.rules[i].src->nnodes == 2 && rs.rules[i].dst->nnodes == 0;
  cr_expect_eq(found, 2, "transpose(transpose(m1)) and (q1) == input");
  ir_ruleset_free(&rs);
}

Test(fp, conv_over_concat_found) {
  fp_stats st;
  ir_ruleset rs = run_candidates("conv2d,concat", 3, 2, &st);
  cr_expect(count_rules(&rs, conv_over_concat) > 0,
            "conv over a concat of weights");
  cr_expect_eq(st.rej_float, 0);
  ir_ruleset_free(&rs);
}

Test(fp, relu_concat_found_relu_add_not) {
  fp_stats st;
  ir_ruleset rs = run_candidates("relu,concat,ewadd", 3, 1, &st);
  int found = 0;
  for (int i = 0; i < rs.n; i++) {
    const ir_graph *s = rs.rules[i].src, *d = rs.rules[i].dst;
    found += count_op(s, IR_OP_RELU) == 2 && count_op(s, IR_OP_CONCAT) == 1 &&
             count_op(d, IR_OP_RELU) == 1 && count_op(d, IR_OP_CONCAT) == 1;
    cr_expect(!(count_op(s, IR_OP_RELU) == 2 && count_op(s, IR_OP_EWADD) == 1 &&
                count_op(d, IR_OP_RELU) == 1 && count_op(d, IR_OP_EWADD) == 1 &&
                s->nnodes == 3 && d->nnodes == 2),
              "rule %s: relu(a+b) == relu(a)+relu(b)?", rs.rules[i].id);
  }
  cr_expect(found > 0, "relu over concat");
  ir_ruleset_free(&rs);
}

Test(fp, deterministic_over_threads) {
  fp_stats s1, s2;
  ir_ruleset a = run_candidates(
      "matmul,ewadd,ewmul,relu,transpose,concat,split,smul", 2, 1, &s1);
  ir_ruleset b = run_candidates(
      "matmul,ewadd,ewmul,relu,transpose,concat,split,smul", 2, 2, &s2);
  char *pa = ir_rules_print(&a, NULL), *pb = ir_rules_print(&b, NULL);
  cr_assert(pa && pb);
  cr_expect(a.n > 10);
  cr_expect_str_eq(pa, pb);
  cr_expect_eq(s1.graphs, s2.graphs);
  cr_expect_eq(s1.buckets, s2.buckets);
  free(pa);
  free(pb);
  ir_ruleset_free(&a);
  ir_ruleset_free(&b);
}

/* ---- spanning pairs --------------------------------------------------------
 */

/* The filter gen-rules uses: redundant on its own, or a common context.
 * The value hashes it is given are fp_value_hashes' own. */
static int span_filter(void *u, const ir_rule *r, fp_vals *v) {
  uint64_t vs[64], vd[64];
  const uint64_t *gs, *gd;
  (void)u;
  cr_assert(r->src->ntensors <= 64 && r->dst->ntensors <= 64);
  cr_assert_eq(fp_value_hashes(r->src, 1, vs), BASE_OK);
  cr_assert_eq(fp_value_hashes(r->dst, 1, vd), BASE_OK);
  cr_assert_eq(fp_vals_get(v, &gs, &gd), BASE_OK);
  for (int i = 0; i < r->src->ntensors; i++)
    cr_assert_eq(gs[i], vs[i], "src tensor %d: value hash %#llx, not %#llx", i,
                 (unsigned long long)gs[i], (unsigned long long)vs[i]);
  for (int i = 0; i < r->dst->ntensors; i++)
    cr_assert_eq(gd[i], vd[i], "dst tensor %d: value hash %#llx, not %#llx", i,
                 (unsigned long long)gd[i], (unsigned long long)vd[i]);
  pr_kind k;
  cr_assert_eq(pr_redundant(r, &k), BASE_OK);
  if (k != PR_KEEP)
    return (int)k;
  int cc = 0;
  cr_assert_eq(pr_has_common_context(r, vs, vd, &cc), BASE_OK);
  return cc ? PR_COMMON_CONTEXT : PR_KEEP;
}

static ir_ruleset run_spanning(const char *ops, int max_ops, int threads,
                               fp_stats *st) {
  return run_mode(ops, max_ops, threads, FP_PAIRS_SPANNING, span_filter, st);
}

static int distinct_inputs(const ir_graph *g) {
  int n = 0;
  for (int i = 0; i < g->ntensors; i++)
    n += g->tensors[i].kind == IR_T_INPUT;
  return n;
}

/* (q1+q2)+q3 == (q1+q3)+q2 relates a graph to its own renaming: found as
 * symmetric variants. The three groupings of each class of three copies
 * (m q x w h v) are joined by two rules. */
static int three_input_assoc(const ir_graph *s, const ir_graph *d) {
  return count_op(s, IR_OP_EWADD) == 2 && count_op(d, IR_OP_EWADD) == 2 &&
         distinct_inputs(s) == 3;
}

Test(fp, spanning_finds_symmetric_variants) {
  fp_stats st;
  ir_ruleset rs = run_spanning("ewadd", 2, 2, &st);
  int three = count_rules(&rs, three_input_assoc);
  cr_expect_eq(three, 12, "two 3-input associativities per class: %d", three);
  ir_ruleset_free(&rs);
}

static int conv_relu_fused(const ir_graph *s, const ir_graph *d) {
  return s->nnodes == 2 && d->nnodes == 1 && count_op(s, IR_OP_RELU) == 1 &&
         d->nodes[0].a.act == IR_ACT_RELU;
}

/* Kruskal order: relu(conv(x, w)) == conv(x, w, act=relu) stays a rule
 * although 3-operator members (via identity kernels) also connect it. */
Test(fp, spanning_keeps_small_rules) {
  fp_stats st;
  ir_ruleset rs = run_spanning("conv2d,relu,const_iconv", 3, 2, &st);
  int act = count_rules(&rs, conv_relu_fused);
  cr_expect_eq(act, 4, "conv+relu fusion for each kernel class: %d", act);
  cr_expect_gt(st.span_joined, 0);
  ir_ruleset_free(&rs);
}

Test(fp, spanning_deterministic_over_threads) {
  fp_stats s1, s2;
  ir_ruleset a = run_spanning("matmul,ewadd,relu,concat,split", 3, 1, &s1);
  ir_ruleset b = run_spanning("matmul,ewadd,relu,concat,split", 3, 2, &s2);
  char *pa = ir_rules_print(&a, NULL), *pb = ir_rules_print(&b, NULL);
  cr_assert(pa && pb);
  cr_expect_gt(a.n, 10);
  cr_expect_str_eq(pa, pb);
  cr_expect_eq(s1.span_joined, s2.span_joined);
  free(pa);
  free(pb);
  ir_ruleset_free(&a);
  ir_ruleset_free(&b);
}

/* Every rule re-parses from its text and survives a float check of its own
 * (the verifier's input must be well-formed). */
Test(fp, rules_round_trip) {
  fp_stats st;
  ir_ruleset rs = run_candidates("ewadd,ewmul,smul,relu", 2, 2, &st), back;
  char *text = ir_rules_print(&rs, "# test");
  base_diag d;
  cr_assert(text);
  cr_assert_eq(ir_rules_parse(text, strlen(text), "rules", &back, &d), BASE_OK,
               "%s:%d: %s", d.file, d.line, d.msg);
  cr_expect_eq(back.n, rs.n);
  for (int i = 0; i < rs.n; i++)
    cr_expect_eq(rs.rules[i].status, IR_RULE_UNVERIFIED);
  free(text);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&back);
}

/* ---- normal-form pruning --------------------------------------------------
 */

/* Does g read the result of transpose(transpose(...)) inside (not as an
 * output)? That value is its argument: not in normal form. */
static int reads_double_transpose(const ir_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    for (int j = 0; j < n->nin; j++) {
      const ir_tensor *t = &g->tensors[n->in[j]];
      if (t->kind != IR_T_VALUE || g->nodes[t->node].op != IR_OP_TRANSPOSE)
        continue;
      const ir_tensor *u = &g->tensors[g->nodes[t->node].in[0]];
      if (u->kind == IR_T_VALUE && g->nodes[u->node].op == IR_OP_TRANSPOSE)
        return 1;
    }
  }
  return 0;
}

static int count_double_transpose_reads(const ir_ruleset *rs) {
  int n = 0;
  for (int i = 0; i < rs->n; i++)
    n += reads_double_transpose(rs->rules[i].src) +
         reads_double_transpose(rs->rules[i].dst);
  return n;
}

static ir_ruleset candidates_nf(int keep_non_normal, fp_stats *st) {
  en_config c = {0};
  ir_ruleset rs;
  char err[512];
  base_diag d;
  c.max_ops = 3;
  c.threads = 2;
  c.keep_non_normal = keep_non_normal;
  cr_assert_eq(en_ops_parse("matmul,transpose", &c.ops, err, sizeof err),
               BASE_OK, "%s", err);
  ir_ruleset_init(&rs);
  cr_assert_eq(fp_candidates(&c, FP_PAIRS_SMALLEST, NULL, NULL, &rs, st, &d),
               BASE_OK, "%s", d.msg);
  return rs;
}

Test(fp, normal_form_pruning) {
  fp_stats with, without;
  ir_ruleset a = candidates_nf(0, &with), b = candidates_nf(1, &without);
  /* matmul(m1, transpose(transpose(q1))) is enumerated and paired only
   * without the pruning */
  cr_expect_gt(count_double_transpose_reads(&b), 0);
  cr_expect_eq(count_double_transpose_reads(&a), 0);
  cr_expect_gt(with.nf_values, 0);
  cr_expect_eq(without.nf_values, 0);
  cr_expect_lt(with.graphs, without.graphs);
  cr_expect_lt(with.pairs, without.pairs);
  /* known laws are still found: transpose(transpose(q1)) == q1 and
   * transpose(m1 q1) == transpose(q1) transpose(m1) */
  int invol = 0, tmm = 0;
  for (int i = 0; i < a.n; i++) {
    const ir_graph *s = a.rules[i].src, *d = a.rules[i].dst;
    invol +=
        s->nnodes == 2 && count_op(s, IR_OP_TRANSPOSE) == 2 && d->nnodes == 0;
    tmm += s->nnodes == 3 && count_op(s, IR_OP_TRANSPOSE) == 2 &&
           count_op(s, IR_OP_MATMUL) == 1 && d->nnodes == 2 &&
           count_op(d, IR_OP_TRANSPOSE) == 1;
  }
  cr_expect_gt(invol, 0, "transpose(transpose(q)) == q");
  cr_expect_gt(tmm, 0, "transpose of a matmul");
  ir_ruleset_free(&a);
  ir_ruleset_free(&b);
}

static const char *nf_rules = "rule a unverified\n"
                              "src:\n"
                              "input m1: [2,4]\n"
                              "input q1: [4,4]\n"
                              "t0: [4,4] = transpose(q1) perm=[1,0]\n"
                              "t1: [4,4] = transpose(t0) perm=[1,0]\n"
                              "t2: [2,4] = matmul(m1, t1)\n"
                              "output t2\n"
                              "dst:\n"
                              "input m1: [2,4]\n"
                              "input q1: [4,4]\n"
                              "t0: [2,4] = matmul(m1, q1)\n"
                              "output t0\n"
                              "end\n"
                              "rule b unverified\n"
                              "src:\n"
                              "input q1: [4,4]\n"
                              "input q2: [4,4]\n"
                              "t0: [4,4] = matmul(q1, q2)\n"
                              "t1: [4,4] = transpose(t0) perm=[1,0]\n"
                              "output t1\n"
                              "dst:\n"
                              "input q1: [4,4]\n"
                              "input q2: [4,4]\n"
                              "t0: [4,4] = transpose(q2) perm=[1,0]\n"
                              "t1: [4,4] = transpose(q1) perm=[1,0]\n"
                              "t2: [4,4] = matmul(t0, t1)\n"
                              "output t2\n"
                              "end\n";

/* The table finds the non-normal intermediate of rule a (transpose of a
 * transpose, read by the matmul), and none in rule b. */
Test(fp, normal_form_table) {
  en_config c = {0};
  char err[512];
  base_diag d;
  ir_ruleset rs;
  fp_nf *t = NULL;
  int red = -1;
  c.threads = 1;
  cr_assert_eq(en_ops_parse("transpose,matmul", &c.ops, err, sizeof err),
               BASE_OK, "%s", err);
  cr_assert_eq(fp_nf_build(&c, 2, &t, &d), BASE_OK, "%s", d.msg);
  cr_expect_gt(fp_nf_count(t), EN_NINPUT_IDS / 2);
  cr_assert_eq(ir_rules_parse(nf_rules, strlen(nf_rules), "nf", &rs, &d),
               BASE_OK, "%d: %s", d.line, d.msg);
  cr_assert_eq(rs.n, 2);
  cr_assert_eq(fp_nf_rule_redundant(t, &rs.rules[0], &red, &d), BASE_OK);
  cr_expect_eq(red, 1, "matmul(m1, transpose(transpose(q1)))");
  cr_assert_eq(fp_nf_rule_redundant(t, &rs.rules[1], &red, &d), BASE_OK);
  cr_expect_eq(red, 0, "transpose(q1 q2) == transpose(q2) transpose(q1)");
  ir_ruleset_free(&rs);
  fp_nf_free(t);
}

/* ---- fp_comm_agree: a failure on one rank names it on every rank ---------
 * A fake communicator of 3 ranks (this process is rank 0) whose peers
 * report: rank 1 fine, rank 2 the error in fake_peer. */
static base_diag fake_peer;

static base_status fake_allgatherv(void *u, const void *send, size_t n,
                                   void **recv, size_t *recvn, base_diag *d) {
  (void)u, (void)d;
  char *r = calloc(3, n);
  cr_assert(r && n == sizeof(base_diag));
  memcpy(r, send, n);               /* rank 0: this process */
  memcpy(r + 2 * n, &fake_peer, n); /* rank 2; rank 1 zero: ok */
  recvn[0] = recvn[1] = recvn[2] = n;
  *recv = r;
  return BASE_OK;
}

Test(fp, comm_agree_names_the_failing_rank) {
  fp_comm c = {0, 3, NULL, fake_allgatherv, NULL};
  base_diag d = {0};
  memset(&fake_peer, 0, sizeof fake_peer);
  cr_assert_eq(fp_comm_agree(&c, BASE_OK, &d), BASE_OK);
  base_diag_set(&fake_peer, BASE_ERR_NOMEM, 0, 0, "out of memory");
  cr_assert_eq(fp_comm_agree(&c, BASE_OK, &d), BASE_ERR_NOMEM);
  cr_assert_str_eq(d.msg, "rank 2: out of memory");
  /* the lowest failing rank wins: this one */
  base_diag_set(&d, BASE_ERR_IO, 0, 0, "cannot write");
  cr_assert_eq(fp_comm_agree(&c, BASE_ERR_IO, &d), BASE_ERR_IO);
  cr_assert_str_eq(d.msg, "rank 0: cannot write");
  /* one process: its own status */
  cr_assert_eq(fp_comm_agree(NULL, BASE_ERR_IO, &d), BASE_ERR_IO);
}
