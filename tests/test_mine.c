/* test_mine.c: rules mined from graphs (gen_mine, `gen-rules --mine`).
 * From a block written as an exporter writes it, the miner finds and
 * proves the exact GELU written out == gelu, RMSNorm written out ==
 * layernorm rms=1 with the block's eps, the guarded attention == one
 * attention node guard=1, and, over a default-layout attention between
 * head splits, the row layout with the heads' scale made a free input;
 * from the same blocks with a wrong constant (GELU's 0.5 as 0.6, the
 * heads split into the wrong order) it finds none of them; a masked
 * row layout also gives its mask-free twin; the fold form merges a
 * convolution into the one whose residual it is and folds a batchnorm
 * into the 1x1 convolution after it (not through a relu, not into a
 * padded 3x3 one) and sinks the transpose after a product into the one
 * before it (not one that moves its columns); bad options write nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/gen.h"

static void scratch_file(char *out) {
  strcpy(out, "/tmp/test_mine_XXXXXX");
  int fd = mkstemp(out);
  cr_assert(fd >= 0);
  close(fd);
}

/* The graph of text with each weight named in names[i] holding vals[i]
 * (scalar constants, as an import leaves them). */
static ir_graph *graph_with(const char *text, const char *const *names,
                            const float *vals, int n) {
  base_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "%s", d.msg);
  for (int i = 0; i < n; i++) {
    int t = ir_find_tensor(g, names[i]);
    cr_assert(t >= 0, "no %s", names[i]);
    g->tensors[t].data = &vals[i];
  }
  return g;
}

/* A matmul, the exact GELU as five operators and three constants, then
 * RMSNorm as seven (eps 1e-6). k3 is GELU's 0.5. */
static const char *const block = "graph block\n"
                                 "input x: [2,5,8]\n"
                                 "input g1: [8]\n"
                                 "weight w: [8,8]\n"
                                 "weight k1: []\n"
                                 "weight k2: []\n"
                                 "weight k3: []\n"
                                 "weight e1: []\n"
                                 "weight one1: []\n"
                                 "h: [2,5,8] = matmul(x, w)\n"
                                 "d: [2,5,8] = ewdiv(h, k1)\n"
                                 "e: [2,5,8] = erf(d)\n"
                                 "a: [2,5,8] = ewadd(e, k2)\n"
                                 "m: [2,5,8] = ewmul(h, a)\n"
                                 "y: [2,5,8] = ewmul(m, k3)\n"
                                 "s2: [2,5,8] = ewmul(y, y)\n"
                                 "mu: [2,5,1] = reduce_mean(s2) axes=[2]\n"
                                 "me: [2,5,1] = ewadd(mu, e1)\n"
                                 "sq: [2,5,1] = sqrt(me)\n"
                                 "iv: [2,5,1] = ewdiv(one1, sq)\n"
                                 "n1: [2,5,8] = ewmul(y, iv)\n"
                                 "n2: [2,5,8] = ewmul(g1, n1)\n"
                                 "output n2\n";
static const char *const block_names[] = {"k1", "k2", "k3", "e1", "one1"};

/* BERT's attention core: scores, mask, softmax, the NaN guard, values. */
static const char *const guarded = "graph guarded\n"
                                   "input q: [1,3,5,4]\n"
                                   "input k: [1,3,4,6]\n"
                                   "input v: [1,3,6,4]\n"
                                   "input mask: [1,1,5,6]\n"
                                   "weight z: []\n"
                                   "s: [1,3,5,6] = matmul(q, k)\n"
                                   "b: [1,3,5,6] = ewadd(s, mask)\n"
                                   "p: [1,3,5,6] = softmax(b) axis=3\n"
                                   "eq: bool[1,3,5,6] = equal(p, p)\n"
                                   "nn: bool[1,3,5,6] = not(eq)\n"
                                   "pg: [1,3,5,6] = where(nn, z, p)\n"
                                   "o: [1,3,5,4] = matmul(pg, v)\n"
                                   "output o\n";

/* Three rows [1,5,12] split into 3 heads of 4, q scaled by c, a
 * default-layout attention scaled by c again (and biased by X), merged
 * back (what the first round's rules leave of BERT's self-attention); V:
 * v's heads, ending in the tensor named vh. */
#define ROWS(V, X)                                                             \
  "graph rows\n"                                                               \
  "input xq: [1,5,12]\n"                                                       \
  "input xk: [1,5,12]\n"                                                       \
  "input xv: [1,5,12]\n"                                                       \
  "weight c: []\n"                                                             \
  "q1: [1,5,3,4] = reshape(xq) shape=[1,5,3,4]\n"                              \
  "q2: [1,3,5,4] = transpose(q1) perm=[0,2,1,3]\n"                             \
  "q3: [1,3,5,4] = ewmul(q2, c)\n"                                             \
  "k1: [1,5,3,4] = reshape(xk) shape=[1,5,3,4]\n"                              \
  "k2: [1,3,4,5] = transpose(k1) perm=[0,2,3,1]\n" V                           \
  "a: [1,3,5,4] = attention(q3, k2, vh, c" X ")\n"                             \
  "a2: [1,5,3,4] = transpose(a) perm=[0,2,1,3]\n"                              \
  "y: [1,5,12] = reshape(a2) shape=[1,5,12]\n"                                 \
  "output y\n"
#define VHEADS                                                                 \
  "v1: [1,5,3,4] = reshape(xv) shape=[1,5,3,4]\n"                              \
  "vh: [1,3,5,4] = transpose(v1) perm=[0,2,1,3]\n"
static const char *const rows = ROWS(VHEADS, "");
/* the same with a mask [1,1,5,5] added to the scores */
static const char *const masked = ROWS(VHEADS "input m: [1,1,5,5]\n", ", m");
/* v's heads scrambled (split 4 x 3, then read as 3 x 4): not a row
 * layout */
static const char *const scrambled =
    ROWS("v1: [1,5,4,3] = reshape(xv) shape=[1,5,4,3]\n"
         "v2: [1,4,5,3] = transpose(v1) perm=[0,2,1,3]\n"
         "vh: [1,3,5,4] = reshape(v2) shape=[1,3,5,4]\n",
         "");

/* Mines g[0..n-1] into a scratch file and reads it into rs. */
static void mine(ir_graph **g, int n, ir_ruleset *rs, gen_mine_stats *st) {
  char out[32];
  scratch_file(out);
  gen_mine_options o = {.depth = GEN_MINE_DEPTH,
                        .threads = 1,
                        .z3_timeout_ms = 10000,
                        .output = out};
  base_diag d = {0};
  cr_assert_eq(gen_mine(&o, (const ir_graph *const *)g, n, st, &d), BASE_OK,
               "%s", d.msg);
  cr_assert_eq(ir_rules_read_file(out, rs, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(st->written, rs->n);
  unlink(out);
}

/* The proven rule whose dst's last node is op (with rms or heads as
 * asked: -1 any), or NULL. */
static const ir_rule *with_dst(const ir_ruleset *rs, ir_opcode op, int param) {
  for (int i = 0; i < rs->n; i++) {
    const ir_graph *g = rs->rules[i].dst;
    const ir_node *n = &g->nodes[g->nnodes - 1];
    int p = op == IR_OP_LAYERNORM   ? n->a.count_include_pad
            : op == IR_OP_ATTENTION ? n->a.groups
                                    : -1;
    if (rs->rules[i].status == IR_RULE_PROVEN && n->op == op &&
        (param < 0 || p == param))
      return &rs->rules[i];
  }
  return NULL;
}

/* Whether input name of r's src is bound by value (to v). */
static int bound(const ir_rule *r, const char *name, float *v) {
  int t = ir_find_tensor(r->src, name);
  cr_assert(t >= 0, "rule %s has no input %s", r->id, name);
  *v = r->src->tensors[t].value;
  return r->src->tensors[t].has_value;
}

Test(mine, finds_gelu_rmsnorm_and_the_guarded_attention, .timeout = 120) {
  static const float kv[] = {1.41421354f, 1.0f, 0.5f, 1e-6f, 1.0f};
  static const float zero = 0.0f;
  static const char *const zn[] = {"z"};
  ir_graph *g[2] = {graph_with(block, block_names, kv, 5),
                    graph_with(guarded, zn, &zero, 1)};
  ir_ruleset rs;
  gen_mine_stats st;
  mine(g, 2, &rs, &st);
  const ir_rule *gelu = with_dst(&rs, IR_OP_GELU, -1);
  const ir_rule *rms = with_dst(&rs, IR_OP_LAYERNORM, 1);
  const ir_rule *att = with_dst(&rs, IR_OP_ATTENTION, 0);
  cr_assert(gelu, "no gelu rule among %d", rs.n);
  cr_expect_eq(gelu->src->nnodes, 5, "gelu's src: %d nodes", gelu->src->nnodes);
  float v;
  cr_expect(bound(gelu, "c1", &v) || bound(gelu, "c3", &v),
            "GELU's constants must stay bound by value");
  cr_assert(rms, "no RMSNorm rule");
  const ir_node *ln = &rms->dst->nodes[rms->dst->nnodes - 1];
  cr_expect_float_eq(ln->a.eps, 1e-6f, 1e-12, "eps %g", ln->a.eps);
  cr_assert(att, "no attention rule");
  cr_expect_eq(att->dst->nodes[att->dst->nnodes - 1].a.keepdims, 1,
               "the guarded form must be guard=1");
  for (int i = 0; i < rs.n; i++) /* guard=0 for the guarded form: refused */
    cr_expect(
        !(rs.rules[i].dst->nodes[rs.rules[i].dst->nnodes - 1].op ==
              IR_OP_ATTENTION &&
          rs.rules[i].src->nnodes == 7 &&
          !rs.rules[i].dst->nodes[rs.rules[i].dst->nnodes - 1].a.keepdims),
        "rule %s: the guarded scores as guard=0", rs.rules[i].id);
  cr_expect_geq(st.candidates, st.agreed);
  cr_expect_geq(st.agreed, st.proven);
  ir_ruleset_free(&rs);
  ir_graph_free(g[0]), ir_graph_free(g[1]);
}

Test(mine, wrong_constant_gives_no_gelu, .timeout = 60) {
  static const float kv[] = {1.41421354f, 1.0f, 0.6f, 1e-6f, 1.0f};
  ir_graph *g = graph_with(block, block_names, kv, 5);
  ir_ruleset rs;
  gen_mine_stats st;
  mine(&g, 1, &rs, &st);
  cr_expect_null(with_dst(&rs, IR_OP_GELU, -1), "a gelu rule from 0.6");
  ir_ruleset_free(&rs);
  ir_graph_free(g);
}

/* The rules mined from a rows graph (its c 0.5) into rs. */
static void mine_rows(const char *text, ir_ruleset *rs) {
  static const float c = 0.5f;
  static const char *const cn[] = {"c"};
  ir_graph *g = graph_with(text, cn, &c, 1);
  gen_mine_stats st;
  mine(&g, 1, rs, &st);
  ir_graph_free(g);
}

Test(mine, row_layout_with_a_free_scale, .timeout = 120) {
  ir_ruleset rs;
  mine_rows(rows, &rs);
  const ir_rule *r = with_dst(&rs, IR_OP_ATTENTION, 3);
  cr_assert(r, "no row-layout rule (heads=3) among %d", rs.n);
  const ir_node *n = &r->dst->nodes[r->dst->nnodes - 1];
  cr_expect(n->a.nlist2 == 2 && n->a.list2[0] == 4 && n->a.list2[1] == 4,
            "hdim [%lld,%lld]", (long long)n->a.list2[0],
            (long long)n->a.list2[1]);
  float v;
  cr_expect(!bound(r, "c1", &v), "the heads' scale must be a free input");
  ir_ruleset_free(&rs);

  mine_rows(scrambled, &rs);
  cr_expect_null(with_dst(&rs, IR_OP_ATTENTION, 3),
                 "a row-layout rule from v's heads read in the wrong order");
  ir_ruleset_free(&rs);
}

/* Whether rs has a proven row-layout rule (heads=3) whose dst attention
 * has nin inputs. */
static int rows_rule_of_arity(const ir_ruleset *rs, int nin) {
  for (int i = 0; i < rs->n; i++) {
    const ir_graph *g = rs->rules[i].dst;
    const ir_node *n = &g->nodes[g->nnodes - 1];
    if (rs->rules[i].status == IR_RULE_PROVEN && n->op == IR_OP_ATTENTION &&
        n->a.groups == 3 && n->nin == nin)
      return 1;
  }
  return 0;
}

/* A row layout mined with a mask also gives its mask-free twin (the mask
 * dropped from both sides, proven again): a network without a mask binds
 * that one. */
Test(mine, masked_row_layout_and_its_mask_free_twin, .timeout = 120) {
  ir_ruleset rs;
  mine_rows(masked, &rs);
  cr_expect(rows_rule_of_arity(&rs, 5), "no masked row-layout rule");
  cr_expect(rows_rule_of_arity(&rs, 4), "no mask-free twin");
  ir_ruleset_free(&rs);
}

/* torch's MultiheadAttention as ViT-B/16 exports it at batch 2:
 * sequence-first rows [S,B,3E] of one packed projection, the head split
 * through a rank-5 transpose and slices of its first axis, q and k scaled
 * by a [1] constant, the heads merged back to [B*S,E] (OUT: the merge's
 * transpose). */
#define MHA(OUT)                                                               \
  "graph mha\ninput x: [5,2,36]\nweight c: [1]\n"                              \
  "t1 = reshape(x) shape=[5,2,3,12]\nt2 = reshape(t1) shape=[1,5,2,3,12]\n"    \
  "t3 = transpose(t2) perm=[3,1,2,0,4]\nt4 = reshape(t3) shape=[3,5,2,12]\n"   \
  "q0 = slice(t4) starts=[0,0,0,0] ends=[1,5,2,12]\n"                          \
  "q1 = reshape(q0) shape=[5,6,4]\nq2 = transpose(q1) perm=[1,0,2]\n"          \
  "q3 = reshape(q2) shape=[2,3,5,4]\nq4 = ewmul(q3, c)\n"                      \
  "k0 = slice(t4) starts=[1,0,0,0] ends=[2,5,2,12]\n"                          \
  "k1 = reshape(k0) shape=[5,6,4]\nk2 = transpose(k1) perm=[1,0,2]\n"          \
  "k3 = transpose(k2) perm=[0,2,1]\nk4 = reshape(k3) shape=[2,3,4,5]\n"        \
  "k5 = ewmul(k4, c)\nv0 = slice(t4) starts=[2,0,0,0] ends=[3,5,2,12]\n"       \
  "v1 = reshape(v0) shape=[5,6,4]\nv2 = transpose(v1) perm=[1,0,2]\n"          \
  "v3 = reshape(v2) shape=[2,3,5,4]\na = attention(q4, k5, v3)\n"              \
  "a2 = transpose(a) perm=" OUT "\ny = reshape(a2) shape=[10,12]\noutput y\n"

/* The proven rule whose dst has a sequence-first row-layout attention
 * (heads=3) over the packed rows, or NULL. */
static const ir_rule *seqfirst_rows(const ir_ruleset *rs) {
  for (int i = 0; i < rs->n; i++)
    for (int k = 0; k < rs->rules[i].dst->nnodes; k++) {
      const ir_node *n = &rs->rules[i].dst->nodes[k];
      if (rs->rules[i].status == IR_RULE_PROVEN && n->op == IR_OP_ATTENTION &&
          n->a.groups == 3 && n->a.axis == 1 && n->a.nlist == 3 &&
          n->a.list[0] == 0 && n->a.list[1] == 12 && n->a.list[2] == 24)
        return &rs->rules[i];
    }
  return NULL;
}

/* The rows form over ViT's head split: the node sequence-first on the
 * packed rows (column offsets each part's), the [1] scale made a scalar,
 * its [B,S,E] result reshaped to the target's [B*S,E]. With the merged
 * rows in sequence order ([S,B,E]'s, which no row-layout node writes),
 * none. */
Test(mine, seqfirst_row_layout_of_a_packed_projection, .timeout = 120) {
  static const float c = 0.5f;
  static const char *const cn[] = {"c"};
  ir_ruleset rs;
  gen_mine_stats st;
  ir_graph *g = graph_with(MHA("[0,2,1,3]"), cn, &c, 1);
  mine(&g, 1, &rs, &st);
  ir_graph_free(g);
  const ir_rule *r = seqfirst_rows(&rs);
  cr_assert(r, "no sequence-first row-layout rule among %d", rs.n);
  const ir_graph *d = r->dst;
  cr_expect_eq(d->nodes[d->nnodes - 1].op, IR_OP_RESHAPE,
               "the [B,S,E] result reshaped to the target's shape");
  ir_ruleset_free(&rs);

  g = graph_with(MHA("[2,0,1,3]"), cn, &c, 1);
  mine(&g, 1, &rs, &st);
  ir_graph_free(g);
  cr_expect_null(seqfirst_rows(&rs), "a row layout of rows in sequence order");
  ir_ruleset_free(&rs);
}

/* Two convolutions, the first the second's residual (NASNet-A's summed
 * branches once the sum is the residual), the second with a relu; ACT1:
 * the first's activation. */
#define MERGE(ACT1)                                                            \
  "graph merge\n"                                                              \
  "input x1: [1,4,5,5]\n"                                                      \
  "input x2: [1,4,5,5]\n"                                                      \
  "weight h1: [6,4,3,3]\n"                                                     \
  "weight h2: [6,4,3,3]\n"                                                     \
  "weight b1: [6]\n"                                                           \
  "weight b2: [6]\n"                                                           \
  "a: [1,6,5,5] = conv2d(x1, h1, b1)" ACT1 "\n"                                \
  "y: [1,6,5,5] = conv2d(x2, h2, b2, a) act=relu\n"                            \
  "output y\n"

/* A batchnorm before a convolution of kernel K (MBConv's pre-norm where
 * K is 1), B: its bias (", c") or none. */
#define PRENORM(K, B)                                                          \
  "graph prenorm\n"                                                            \
  "input x: [1,5,6,7]\n"                                                       \
  "weight s: [5]\n"                                                            \
  "weight b: [5]\n"                                                            \
  "weight m: [5]\n"                                                            \
  "weight v: [5]\n"                                                            \
  "weight w: [3,5," K "," K "]\n"                                              \
  "weight c: [3]\n"                                                            \
  "n: [1,5,6,7] = batchnorm(x, s, b, m, v)\n"                                  \
  "y: [1,3,6,7] = conv2d(n, w" B ")\n"                                         \
  "output y\n"

/* The number of nodes of op in g. */
static int count_op(const ir_graph *g, ir_opcode op) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    n += g->nodes[i].op == op;
  return n;
}

/* The proven rules of text's mining that pass want(rule, a, b). */
static int mined_where(const char *text, int (*want)(const ir_rule *, int, int),
                       int a, int b) {
  ir_graph *g = graph_with(text, NULL, NULL, 0);
  ir_ruleset rs;
  gen_mine_stats st;
  mine(&g, 1, &rs, &st);
  int n = 0;
  for (int i = 0; i < rs.n; i++)
    n += rs.rules[i].status == IR_RULE_PROVEN && want(&rs.rules[i], a, b);
  ir_ruleset_free(&rs);
  ir_graph_free(g);
  return n;
}

/* A rule whose src has two nodes of src_op (one where src_op is not
 * conv2d) and whose dst ends in its only conv2d, reading a node of
 * dst_op. */
static int is_fold(const ir_rule *r, int src_op, int dst_op) {
  const ir_graph *d = r->dst;
  return d->nodes[d->nnodes - 1].op == IR_OP_CONV2D &&
         count_op(d, IR_OP_CONV2D) == 1 && count_op(d, dst_op) > 0 &&
         count_op(r->src, src_op) == (src_op == IR_OP_CONV2D ? 2 : 1);
}

static int folds(const char *text, ir_opcode src_op, ir_opcode dst_op) {
  return mined_where(text, is_fold, (int)src_op, (int)dst_op);
}

/* The fold form finds the merge of a convolution into the one whose
 * residual it is (one convolution over the inputs and filters
 * concatenated, the biases added: e00771), and none where the first has a
 * relu (not linear). */
Test(mine, fold_merges_a_residual_convolution, .timeout = 120) {
  cr_expect_gt(folds(MERGE(""), IR_OP_CONV2D, IR_OP_CONCAT), 0,
               "no merge of the two convolutions");
  cr_expect_eq(folds(MERGE(" act=relu"), IR_OP_CONV2D, IR_OP_CONCAT), 0,
               "a merge through the first one's relu");
}

/* The fold form finds the batchnorm before a 1x1 convolution folded into
 * its filter and bias, with and without the convolution's own bias (e00774,
 * e00773), and not before a 3x3 one (same padding: the border reads the
 * pads, not the batchnorm's shift). */
Test(mine, fold_prenorm_into_a_1x1_convolution, .timeout = 300) {
  cr_expect_gt(folds(PRENORM("1", ", c"), IR_OP_BATCHNORM, IR_OP_BATCHNORM), 0,
               "no batchnorm folded into the 1x1 convolution");
  cr_expect_gt(folds(PRENORM("1", ""), IR_OP_BATCHNORM, IR_OP_BATCHNORM), 0,
               "no batchnorm folded into the bias-free 1x1 convolution");
  cr_expect_eq(folds(PRENORM("3", ", c"), IR_OP_BATCHNORM, IR_OP_BATCHNORM), 0,
               "a batchnorm folded into a padded 3x3 convolution");
}

/* torch's MultiheadAttention out_proj: the heads [B,H,S,D] transposed to
 * [S,B,H,D], rows [S B, H D] times a weight, reshaped to [S,B,N] and
 * transposed to [B,S,N] (PERM: that last transpose). */
#define SINK(PERM, YSHAPE)                                                     \
  "graph sink\n"                                                               \
  "input x: [2,3,4,5]\n"                                                       \
  "weight q: [15,6]\n"                                                         \
  "weight b: [6]\n"                                                            \
  "a: [4,2,3,5] = transpose(x) perm=[2,0,1,3]\n"                               \
  "r: [8,15] = reshape(a) shape=[8,15]\n"                                      \
  "m: [8,6] = matmul(r, q, b)\n"                                               \
  "c: [4,2,6] = reshape(m) shape=[4,2,6]\n"                                    \
  "y: " YSHAPE " = transpose(c) perm=" PERM "\n"                               \
  "output y\n"

/* A rule whose dst has one matmul and no transpose after it (the rows
 * made in the order the transpose wanted), from a src of two. */
static int is_sink(const ir_rule *r, int a, int b) {
  (void)a, (void)b;
  const ir_graph *d = r->dst;
  return count_op(d, IR_OP_MATMUL) == 1 &&
         d->nodes[d->nnodes - 1].op != IR_OP_TRANSPOSE &&
         count_op(r->src, IR_OP_TRANSPOSE) == 2;
}

static int sinks(const char *text) { return mined_where(text, is_sink, 0, 0); }

/* The fold form with moves after its root sinks the transpose after the
 * product into the one before it (e00772), and finds nothing where the
 * transpose after moves the product's columns (no rows' order does). */
Test(mine, fold_sinks_the_rows_transpose, .timeout = 120) {
  cr_expect_gt(sinks(SINK("[1,0,2]", "[2,4,6]")), 0, "no sink");
  cr_expect_eq(sinks(SINK("[2,1,0]", "[6,2,4]")), 0,
               "a sink of a transpose that moves the columns");
}

Test(mine, bad_options_write_nothing) {
  char out[32];
  scratch_file(out);
  unlink(out);
  ir_graph *g = graph_with(guarded, NULL, NULL, 0);
  gen_mine_options o = {.depth = 0, .threads = 1, .output = out};
  gen_mine_stats st;
  base_diag d = {0};
  cr_expect_eq(gen_mine(&o, (const ir_graph *const *)&g, 1, &st, &d),
               BASE_ERR_PARAM);
  cr_expect(strstr(d.msg, "depth"), "%s", d.msg);
  cr_expect_neq(access(out, F_OK), 0, "%s written", out);
  o.depth = GEN_MINE_DEPTH, o.output = NULL;
  cr_expect_eq(gen_mine(&o, (const ir_graph *const *)&g, 1, &st, &d),
               BASE_ERR_PARAM);
  ir_graph_free(g);
}
