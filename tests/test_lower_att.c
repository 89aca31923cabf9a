/* test_lower_att.c: attention's row layout (heads=, docs/graph-format.md)
 * and the lower stage's attention family (src/fuse/lower_att.c).
 *
 * A ViT-like block (one packed QKV projection, reshaped, transposed and
 * split; q and k scaled by a scalar each), a torchvision-like one
 * (sequence-first rows, batch 2) and a BERT-like one (separate
 * projections, a scale and a mask): the moves around attention go, the
 * node reads the projections' rows, the CPU executor computes the same
 * outputs, the graph prints and parses back the same; MaxViT's (heads
 * merged into the batch, a relative-position bias), also through the
 * fusion pass as optimize runs it. An intermediate
 * another node reads stays; a result read otherwise than through the
 * transpose leaves the node alone; malformed layouts are refused.
 */
#include <stdio.h>
#include <string.h>

#include "costdb/costdb.h"
#include "fuse/fuse.h"
#include "lower_util.h"

/* [B=2,S=5,C=8]: 2 heads of 4, packed q|k|v, DeiT's export. */
static const char vit[] =
    "input x: [2,5,8]\n"
    "weight w: [8,24]\nweight bq: [24]\nweight c: [1]\nweight wo: [8,8]\n"
    "qkv = matmul(x, w, bq)\n"
    "r = reshape(qkv) shape=[2,5,3,2,4]\n"
    "t = transpose(r) perm=[2,0,3,1,4]\n"
    "s0, s1, s2 = split(t) axis=0 sizes=[1,1,1]\n"
    "q = reshape(s0) shape=[2,2,5,4]\n"
    "k = reshape(s1) shape=[2,2,5,4]\n"
    "v = reshape(s2) shape=[2,2,5,4]\n"
    "kt = transpose(k) perm=[0,1,3,2]\n"
    "qs = ewmul(q, c)\n"
    "ks = ewmul(kt, c)\n"
    "y = attention(qs, ks, v)\n"
    "yt = transpose(y) perm=[0,2,1,3]\n"
    "yr = reshape(yt) shape=[2,5,8]\n"
    "out = matmul(yr, wo)\n"
    "output out\n";

Test(lower_att, vit_packed_qkv) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(vit, &g, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_SPLIT), 0);
  cr_assert_lt(h->nnodes, g->nnodes - 8, "%d -> %d nodes", g->nnodes,
               h->nnodes);
  const ir_node *a = lu_node(h, "yr", IR_OP_ATTENTION, -1);
  cr_assert_eq(a->in[0], ir_find_tensor(h, "qkv"));
  cr_assert_eq(a->in[1], a->in[0]);
  cr_assert_eq(a->nin, 4); /* the scalars' product as s */
  cr_assert_eq(a->a.groups, 2);
  cr_assert_eq(a->a.list[1], 8);
  cr_assert_eq(a->a.list[2], 16);
  lu_same_outputs(g, h, 1e-5);
  char *p1 = ir_print(h);
  cr_assert(strstr(p1, "heads=2 cols=[0,8,16] hdim=[4,4]"), "%s", p1);
  ir_graph *k = lu_parse(p1);
  char *p2 = ir_print(k);
  cr_assert_str_eq(p1, p2);
  lu_same_outputs(g, k, 1e-5);
  free(p1), free(p2);
  ir_graph_free(k), ir_graph_free(h), ir_graph_free(g);
}

/* torchvision's MultiheadAttention: rows [S,B,3C], batch 2. */
static const char seqfirst[] = "input x: [5,2,8]\n"
                               "weight w: [8,24]\nweight wo: [8,8]\n"
                               "qkv = matmul(x, w)\n"
                               "r = reshape(qkv) shape=[5,2,3,8]\n"
                               "t = transpose(r) perm=[2,0,1,3]\n"
                               "a0 = slice(t) starts=[0,0,0,0] ends=[1,5,2,8]\n"
                               "a1 = slice(t) starts=[1,0,0,0] ends=[2,5,2,8]\n"
                               "a2 = slice(t) starts=[2,0,0,0] ends=[3,5,2,8]\n"
                               "q0 = reshape(a0) shape=[5,4,4]\n"
                               "k0 = reshape(a1) shape=[5,4,4]\n"
                               "v0 = reshape(a2) shape=[5,4,4]\n"
                               "q1 = transpose(q0) perm=[1,0,2]\n"
                               "k1 = transpose(k0) perm=[1,2,0]\n"
                               "v1 = transpose(v0) perm=[1,0,2]\n"
                               "q = reshape(q1) shape=[2,2,5,4]\n"
                               "k = reshape(k1) shape=[2,2,4,5]\n"
                               "v = reshape(v1) shape=[2,2,5,4]\n"
                               "y = attention(q, k, v)\n"
                               "yt = transpose(y) perm=[0,2,1,3]\n"
                               "yr = reshape(yt) shape=[2,5,8]\n"
                               "out = matmul(yr, wo)\n"
                               "output out\n";

Test(lower_att, torchvision_seqfirst_rows) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(seqfirst, &g, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_SLICE), 0);
  const ir_node *a = lu_node(h, "yr", IR_OP_ATTENTION, -1);
  cr_assert_eq(a->a.axis, 1, "seqfirst");
  cr_assert_eq(a->in[0], ir_find_tensor(h, "qkv"));
  lu_same_outputs(g, h, 0); /* the same products, bit for bit */
  ir_graph_free(h), ir_graph_free(g);
}

/* BERT: separate projections, a scale and a padding mask. */
static const char bert[] =
    "input x: [2,5,8]\ninput m: [2,1,1,5]\n"
    "weight wq: [8,8]\nweight wk: [8,8]\nweight wv: [8,8]\nweight sc: []\n"
    "weight wo: [8,8]\n"
    "pq = matmul(x, wq)\npk = matmul(x, wk)\npv = matmul(x, wv)\n"
    "rq = reshape(pq) shape=[2,5,2,4]\n"
    "rk = reshape(pk) shape=[2,5,2,4]\n"
    "rv = reshape(pv) shape=[2,5,2,4]\n"
    "q = transpose(rq) perm=[0,2,1,3]\n"
    "k = transpose(rk) perm=[0,2,3,1]\n"
    "v = transpose(rv) perm=[0,2,1,3]\n"
    "y = attention(q, k, v, sc, m) guard=1\n"
    "yt = transpose(y) perm=[0,2,1,3]\n"
    "yr = reshape(yt) shape=[2,5,8]\n"
    "out = matmul(yr, wo)\n"
    "output out\n";

Test(lower_att, bert_separate_projections) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(bert, &g, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_RESHAPE), 0);
  cr_assert_eq(h->nnodes, g->nnodes - 8);
  const ir_node *a = lu_producer(h, "yr");
  cr_assert_eq(a->in[0], ir_find_tensor(h, "pq"));
  cr_assert_eq(a->in[1], ir_find_tensor(h, "pk"));
  cr_assert_eq(a->in[2], ir_find_tensor(h, "pv"));
  cr_assert_eq(a->nin, 5);
  cr_assert_eq(a->a.keepdims, 1);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* A node already in the row layout (the twelfth tier's rules make it)
 * reading the parts of a split of one projection's rows (v, k, q: the
 * sibling merges' order): it reads the projection in place at those
 * columns and the split goes; another reader keeps the split. */
static const char rows_split[] =
    "input x: [2,5,8]\ninput m: [2,1,1,5]\n"
    "weight w: [8,24]\nweight sc: []\nweight wo: [8,8]\n"
    "p = matmul(x, w)\n"
    "v, k, q = split(p) axis=2 sizes=[8,8,8]\n"
    "y = attention(q, k, v, sc, m) guard=1 heads=2 cols=[0,0,0] hdim=[4,4]\n"
    "out = matmul(y, wo)\n"
    "output out\n";

Test(lower_att, row_node_reads_split_parts_in_place) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(rows_split, &g, &st);
  cr_assert_eq(lu_count_op(h, IR_OP_SPLIT), 0);
  const ir_node *a = lu_producer(h, "y");
  for (int k = 0; k < 3; k++)
    cr_assert_eq(a->in[k], ir_find_tensor(h, "p"));
  cr_assert(a->a.list[0] == 16 && a->a.list[1] == 8 && a->a.list[2] == 0);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
  char text[1024];
  snprintf(text, sizeof text, "%s", rows_split);
  char *o = strstr(text, "output out");
  snprintf(o, sizeof text - (size_t)(o - text), "output out, k\n");
  h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(lu_count_op(h, IR_OP_SPLIT), 1, "k is read: the split stays");
  cr_assert_eq(lu_producer(h, "y")->in[0], ir_find_tensor(h, "p"));
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* Llama as the rotary pass and fusion leave it ([B=2,S=5], 2 heads of 4):
 * one merged projection writes q, k, v and q and k rotated (rotate_half in
 * the weights), split; the rotary sum q * cos + rot(q) * sin is a fused
 * node over [B,S,H,D] (the position tables [1,S,1,D] broadcast over batch
 * and heads), transposed to [B,H,S,D] after; k once more; the causal mask
 * [B,1,S,S] and SDPA's guard. */
static const char llama[] =
    "input x: [2,5,16]\n"
    "weight w: [16,40]\nweight cs: [1,5,1,4]\nweight sn: [1,5,1,4]\n"
    "weight sc: []\nweight m: [2,1,5,5]\nweight wo: [8,8]\n"
    "p = matmul(x, w)\n"
    "pq, pk, pv, rq, rk = split(p) axis=2 sizes=[8,8,8,8,8]\n"
    "qr = reshape(pq) shape=[2,5,2,4]\nkr = reshape(pk) shape=[2,5,2,4]\n"
    "vr = reshape(pv) shape=[2,5,2,4]\nrqr = reshape(rq) shape=[2,5,2,4]\n"
    "rkr = reshape(rk) shape=[2,5,2,4]\n"
    "fq = fused(qr, cs, rqr, sn) { t0 = ewmul($0, $1); t1 = ewmul($2, $3); "
    "t2 = ewadd(t0, t1) }\n"
    "fk = fused(kr, cs, rkr, sn) { t0 = ewmul($0, $1); t1 = ewmul($2, $3); "
    "t2 = ewadd(t0, t1) }\n"
    "q = transpose(fq) perm=[0,2,1,3]\n"
    "k0 = transpose(fk) perm=[0,2,1,3]\n"
    "k = transpose(k0) perm=[0,1,3,2]\n"
    "v = transpose(vr) perm=[0,2,1,3]\n"
    "y = attention(q, k, v, sc, m) guard=1\n"
    "yt = transpose(y) perm=[0,2,1,3]\n"
    "yr = reshape(yt) shape=[2,5,8]\n"
    "out = matmul(yr, wo)\n"
    "output out\n";

/* The rotary's output [B,S,H,D] holds the rows [B,S,H*D]: the node reads
 * q and k there (a reshape, a view) and v in the projection's rows; the
 * transposes go, the mask stays. */
Test(lower_att, llama_rotary_rows) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(llama, &g, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_FUSED), 2);
  const ir_node *a = lu_producer(h, "yr");
  cr_assert_eq(a->op, IR_OP_ATTENTION);
  cr_assert_eq(a->a.groups, 2);
  cr_assert_eq(a->a.list[0], 0);
  cr_assert_eq(a->a.list[1], 0);
  cr_assert_eq(a->a.list[2], 16);
  cr_assert_eq(a->in[2], ir_find_tensor(h, "p"));
  const char *qk[2] = {"fq", "fk"};
  for (int k = 0; k < 2; k++) { /* [2,5,2,4] read as the rows [2,5,8] */
    const ir_tensor *t = &h->tensors[a->in[k]];
    cr_assert(t->shape.rank == 3 && t->shape.dim[2] == 8);
    cr_assert_eq(h->nodes[t->node].op, IR_OP_RESHAPE);
    cr_assert_eq(h->nodes[t->node].in[0], ir_find_tensor(h, qk[k]));
  }
  cr_assert_eq(a->nin, 5);
  cr_assert_eq(a->in[4], ir_find_tensor(h, "m"));
  cr_assert_eq(a->a.keepdims, 1);
  lu_same_outputs(g, h, 0);
  char *p1 = ir_print(h);
  ir_graph *k = lu_parse(p1);
  lu_same_outputs(g, k, 0);
  free(p1);
  ir_graph_free(k), ir_graph_free(h), ir_graph_free(g);
}

/* q must be the rotary's rows with the heads side by side: read through a
 * reshape to [B,H,S,D] (each head's tokens a block of the storage, not
 * the rows) the node is left alone, and computes the same. */
Test(lower_att, llama_heads_not_in_rows_stay) {
  static const char from[] = "q = transpose(fq) perm=[0,2,1,3]\n";
  static const char to[] = "q = reshape(fq) shape=[2,2,5,4]\n";
  char text[4096];
  const char *p = strstr(llama, from);
  cr_assert(p);
  snprintf(text, sizeof text, "%.*s%s%s", (int)(p - llama), llama, to,
           p + strlen(from));
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.attention, 0);
  cr_assert_eq(lu_producer(h, "yr")->op, IR_OP_RESHAPE);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

Test(lower_att, other_readers_keep_their_tensors) {
  char text[2048];
  snprintf(text, sizeof text, "%s", bert);
  /* q's transpose is a graph output too, the result's transpose read by
   * another node than the reshape: both stay (the transpose as a view) */
  char *o = strstr(text, "output out\n");
  snprintf(o, sizeof text - (size_t)(o - text),
           "output out\noutput q\nz = relu(yt)\noutput z\n");
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 1); /* q's */
  cr_assert_eq(lu_producer(h, "yt")->op, IR_OP_RESHAPE);
  cr_assert_eq(lu_producer(h, "q")->op, IR_OP_TRANSPOSE);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

Test(lower_att, result_read_directly_stays) {
  char text[2048];
  snprintf(text, sizeof text, "%s", bert);
  char *o = strstr(text, "output out\n");
  snprintf(o, sizeof text - (size_t)(o - text), "output out\noutput y\n");
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.attention, 0);
  cr_assert_eq(h->nnodes, g->nnodes);
  ir_graph_free(h), ir_graph_free(g);
}

Test(lower_att, malformed_row_layouts_refused) {
  static const char head[] =
      "input a: [2,5,24]\ninput b: [2,2,5,4]\n"
      "input c: [5,24]\ninput m: [2,2,5,5]\ninput s: []\n";
  char t[512];
  snprintf(t, sizeof t,
           "%sy = attention(a, a, a) heads=2 cols=[0,8,20] hdim=[4,4]\n"
           "output y\n",
           head);
  lu_refused(t, "cols[2]=20");
  snprintf(t, sizeof t,
           "%sy = attention(a, a, a) heads=2 hdim=[4,4]\noutput y\n", head);
  lu_refused(t, "cols=[q,k,v]");
  snprintf(t, sizeof t,
           "%sy = attention(c, c, c) heads=2 cols=[0,8,16] hdim=[4,4]\n"
           "output y\n",
           head);
  lu_refused(t, "rows [B,S,C]");
  /* rows of rank 4 ([2,2,5,4]: one batch of 4) are rows; a bias that does
   * not broadcast along their leading dimensions is refused */
  snprintf(t, sizeof t,
           "%sy = attention(b, b, b, s, m) heads=2 cols=[0,0,0] hdim=[2,2]\n"
           "output y\n",
           head);
  lu_refused(t, "leading dimensions");
  snprintf(t, sizeof t, "%sy = attention(b, b, b) seqfirst=1\noutput y\n",
           head);
  lu_refused(t, "need heads");
}

/* MaxViT's block attention as the search leaves it ([B=2, G=2 windows,
 * P=3 tokens, C=4], 2 heads of 2): the heads merged into the batch
 * ([B*G*H, P, 2], torchvision's Einsum imported), q, k and v sliced out of
 * the packed rows and transposed, k scaled on the way, the relative
 * position bias [1,H,P,P] broadcast to every window at load, the result
 * transposed back into the rows the merge projection reads. MAXVIT_QKV:
 * q, k and v out of the packed rows qkv, as both MaxViT texts have them. */
#define MAXVIT_QKV                                                             \
  "q0 = slice(qkv) starts=[0,0,0,0] ends=[2,2,3,4]\n"                          \
  "q1 = reshape(q0) shape=[2,2,3,2,2]\n"                                       \
  "q2 = transpose(q1) perm=[0,1,3,2,4]\n"                                      \
  "q = reshape(q2) shape=[8,3,2]\n"                                            \
  "k0 = slice(qkv) starts=[0,0,0,4] ends=[2,2,3,8]\n"                          \
  "k1 = reshape(k0) shape=[2,2,3,2,2]\n"                                       \
  "k2 = transpose(k1) perm=[0,1,3,2,4]\n"                                      \
  "k3 = ewmul(k2, c)\n"                                                        \
  "k4 = transpose(k3) perm=[0,1,2,4,3]\n"                                      \
  "k = reshape(k4) shape=[8,2,3]\n"                                            \
  "v0 = slice(qkv) starts=[0,0,0,8] ends=[2,2,3,12]\n"                         \
  "v1 = reshape(v0) shape=[2,2,3,2,2]\n"                                       \
  "v2 = transpose(v1) perm=[0,1,3,2,4]\n"                                      \
  "v = reshape(v2) shape=[8,3,2]\n"

static const char maxvit[] =
    "input x: [2,2,3,4]\n"
    "weight w: [4,12]\nweight bq: [12]\nweight c: []\nweight pb: [1,2,3,3]\n"
    "weight wo: [4,4]\n"
    "qkv = matmul(x, w, bq)\n" MAXVIT_QKV "one0 = const_ones() shape=[]\n"
    "one1 = const_ones() shape=[2,2,2,3,3]\n"
    "vb0 = ewmul(pb, one1)\n"
    "vb = reshape(vb0) shape=[8,3,3]\n"
    "y = attention(q, k, v, one0, vb)\n"
    "y1 = reshape(y) shape=[2,2,2,3,2]\n"
    "y2 = transpose(y1) perm=[0,1,3,2,4]\n"
    "y3 = reshape(y2) shape=[2,2,3,4]\n"
    "out = matmul(y3, wo)\n"
    "output out\n";

Test(lower_att, maxvit_heads_in_batch) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(maxvit, &g, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_SLICE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_CONST_ONES), 1); /* one0 */
  const ir_node *a =
      lu_producer(h, "y3")->op == IR_OP_RESHAPE
          ? &h->nodes[h->tensors[lu_producer(h, "y3")->in[0]].node]
          : NULL;
  cr_assert(a && a->op == IR_OP_ATTENTION);
  cr_assert_eq(a->a.groups, 2);
  cr_assert_eq(a->a.axis, 0);
  cr_assert_eq(a->a.list[1], 4);
  cr_assert_eq(a->a.list[2], 8);
  const ir_shape *q = &h->tensors[a->in[0]].shape;
  cr_assert(q->rank == 3 && q->dim[0] == 4 && q->dim[1] == 3 &&
            q->dim[2] == 12); /* [B*G, P, 3C]: the packed rows, a view */
  cr_assert_eq(h->nodes[h->tensors[a->in[0]].node].in[0],
               ir_find_tensor(h, "qkv"));
  cr_assert_eq(a->nin, 5);
  const ir_shape *b = &h->tensors[a->in[4]].shape;
  cr_assert(b->rank == 4 && b->dim[0] == 1 && b->dim[1] == 2,
            "the bias broadcast, not the [8,3,3] made at load");
  lu_same_outputs(g, h, 1e-5);
  char *p1 = ir_print(h);
  ir_graph *k = lu_parse(p1);
  lu_same_outputs(g, k, 1e-5);
  free(p1);
  ir_graph_free(k), ir_graph_free(h), ir_graph_free(g);
}

/* The heads must be the batch's innermost walk in q, k and v alike, and a
 * bias must broadcast along all or none of the windows [B, G] (the batch
 * of the rows): otherwise the node is left alone. */
Test(lower_att, maxvit_mismatches_stay) {
  static const struct {
    const char *from, *to;
    int lowered;
  } cases[] = {
      /* v's heads outside its windows: [H, B*G] */
      {"v2 = transpose(v1) perm=[0,1,3,2,4]",
       "v2 = transpose(v1) perm=[3,0,1,2,4]", 0},
      {"weight pb: [1,2,3,3]", "weight pb: [2,1,3,3]", 0}, /* per window */
      {"weight pb: [1,2,3,3]", "weight pb: [1,1,3,3]", 1}, /* all heads */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[4096];
    snprintf(text, sizeof text, "%s", maxvit);
    char *p = strstr(text, cases[i].from);
    cr_assert(p && strlen(cases[i].from) == strlen(cases[i].to));
    memcpy(p, cases[i].to, strlen(cases[i].to));
    lower_stats st;
    ir_graph *g, *h = lu_parse_lower(text, &g, &st);
    cr_assert_eq(st.attention, cases[i].lowered, "case %zu", i);
    lu_same_outputs(g, h, 1e-5);
    ir_graph_free(h), ir_graph_free(g);
  }
}

/* Cost signatures: today's layout keeps its key (stored measurements),
 * the row layout has its own, and a signature's graph prices the same
 * (roofline: the heads' columns, not the whole rows). */
Test(lower_att, cost_signatures) {
  ir_graph *g = lu_parse(vit);
  ir_graph *h = lu_lower(g, NULL);
  const ir_graph *gs[2] = {g, h};
  for (int k = 0; k < 2; k++) {
    const ir_graph *x = gs[k];
    for (int i = 0; i < x->nnodes; i++) {
      if (x->nodes[i].op != IR_OP_ATTENTION)
        continue;
      char sig[CD_SIG_MAX], back[CD_SIG_MAX];
      cd_node_sig(x, i, sig, sizeof sig);
      cr_assert_eq(strstr(sig, "heads=") != NULL, k, "%s", sig);
      cr_assert_eq(strstr(sig, "cols=") != NULL, k, "%s", sig);
      base_diag d;
      ir_graph *one = cd_sig_graph(sig, &d);
      cr_assert(one, "%s: %s", sig, d.msg);
      cd_node_sig(one, 0, back, sizeof back);
      cr_expect_str_eq(back, sig);
      cd_work a = cd_node_work(x, i), b = cd_node_work(one, 0);
      cr_expect_eq(a.flops, b.flops);
      cr_expect_eq(a.bytes, b.bytes);
      ir_graph_free(one);
    }
  }
  /* the same products and softmax in both layouts; the row layout reads
   * q, k and v (a third of the packed rows each), not the rows thrice */
  int ia = -1, ib = -1;
  for (int i = 0; i < g->nnodes; i++)
    ia = g->nodes[i].op == IR_OP_ATTENTION ? i : ia;
  for (int i = 0; i < h->nnodes; i++)
    ib = h->nodes[i].op == IR_OP_ATTENTION ? i : ib;
  cd_work wa = cd_node_work(g, ia), wb = cd_node_work(h, ib);
  cr_expect_gt(wb.flops, wa.flops); /* + the scale */
  cr_expect_lt(wb.flops, wa.flops * 1.05);
  cr_expect_eq(wb.bytes, wa.bytes + 4); /* + s */
  ir_graph_free(h), ir_graph_free(g);
}

/* The row layout follows a new batch (ir_rebatch: its attributes do not
 * depend on it): BERT-like and sequence-first blocks lowered at batch 2,
 * rebatched to 3, compute what the originals rebatched to 3 compute. */
Test(lower_att, rebatch) {
  const char *texts[2] = {bert, vit};
  for (int k = 0; k < 2; k++) {
    ir_graph *g = lu_parse(texts[k]);
    ir_graph *h = lu_lower(g, NULL);
    ir_graph *g3, *h3;
    base_diag d;
    cr_assert_eq(ir_rebatch(g, 3, &g3, &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(ir_rebatch(h, 3, &h3, &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(lu_count_op(h3, IR_OP_TRANSPOSE), 0);
    cr_assert_eq(h3->tensors[h3->outputs[0]].shape.dim[0], 3);
    lu_same_outputs(g3, h3, k ? 1e-5 : 0);
    ir_graph_free(h3), ir_graph_free(g3), ir_graph_free(h), ir_graph_free(g);
  }
}

/* Swin's windows in the lower stage's forms, at batch 1: a move node
 * shifts the image and cuts it into 4 windows of 4 tokens ([1*4, 4, 8]
 * rows), a row-layout attention adds a per-window bias [4,2,4,4], a move
 * puts the windows back. */
static const char swin[] =
    "input x: [1,4,4,8]\n"
    "weight w: [8,24]\nweight s: []\nweight bias: [4,2,4,4]\n"
    "r = move(x) { t0 = slice($0) starts=[0,1,0,0] ends=[1,4,4,8]; "
    "t1 = slice($0) starts=[0,0,0,0] ends=[1,1,4,8]; "
    "t2 = concat(t0, t1) axis=1; t3 = reshape(t2) shape=[1,2,2,2,2,8]; "
    "t4 = transpose(t3) perm=[0,1,3,2,4,5]; t5 = reshape(t4) shape=[4,4,8] }\n"
    "qkv = matmul(r, w)\n"
    "a = attention(qkv, qkv, qkv, s, bias) heads=2 cols=[0,8,16] hdim=[4,4]\n"
    "y = move(a) { t0 = reshape($0) shape=[1,2,2,2,2,8]; "
    "t1 = transpose(t0) perm=[0,1,3,2,4,5]; t2 = reshape(t1) "
    "shape=[1,4,4,8] }\n"
    "output y\n";

/* Each sample of h (g rebatched) run alone through g, weights shared:
 * the same output, element for element within 1e-6 of its magnitude. */
static void same_per_sample(const ir_graph *g, const ir_graph *h, int b) {
  base_diag d;
  ex_values *vh = ex_values_new(h);
  cr_assert_eq(ex_fill_random(h, vh, 7, &d), BASE_OK, "%s", d.msg);
  ex_options o = {1, 0};
  cr_assert_eq(ex_run(h, vh, &o, &d), BASE_OK, "%s", d.msg);
  int xh = ir_find_tensor(h, "x"), yh = h->outputs[0], yg = g->outputs[0];
  int64_t nx = ir_shape_numel(&g->tensors[ir_find_tensor(g, "x")].shape);
  int64_t ny = ir_shape_numel(&g->tensors[yg].shape);
  for (int i = 0; i < b; i++) {
    ex_values *vg = ex_values_new(g);
    for (int t = 0; t < g->ntensors; t++) {
      if (g->tensors[t].kind == IR_T_VALUE)
        continue;
      int u = ir_find_tensor(h, g->tensors[t].name);
      int64_t n = ir_shape_numel(&g->tensors[t].shape);
      vg->v[t] = malloc(sizeof(float) * (size_t)n);
      memcpy(vg->v[t], vh->v[u] + (u == xh ? i * nx : 0),
             sizeof(float) * (size_t)n);
    }
    cr_assert_eq(ex_run(g, vg, &o, &d), BASE_OK, "%s", d.msg);
    double mag = 0;
    for (int64_t k = 0; k < ny; k++)
      mag = fmax(mag, fabs(vg->v[yg][k]));
    cr_assert_gt(mag, 0);
    for (int64_t k = 0; k < ny; k++)
      cr_assert_leq(fabs(vg->v[yg][k] - vh->v[yh][i * ny + k]), 1e-6 * mag,
                    "sample %d [%lld]", i, (long long)k);
    ex_values_free(vg);
  }
  ex_values_free(vh);
}

/* Swin's windows rebatch (issue 41's move nodes and row layout): the
 * moves' programs take the new batch in axis 0, the windows' bias is
 * repeated for each sample, and every sample computes what batch 1 does
 * on it. A move that transposes axis 0 is refused, named. */
Test(lower_att, rebatch_windows) {
  ir_graph *g = lu_parse(swin), *h;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 2, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 2);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "qkv")].shape.dim[0], 8);
  cr_assert_eq(h->tensors[h->outputs[0]].shape.dim[0], 2);
  same_per_sample(g, h, 2);
  ir_graph_free(h), ir_graph_free(g);
  g = lu_parse("input x: [1,4,4,8]\n"
               "y = move(x) { t0 = reshape($0) shape=[4,4,8]; "
               "t1 = transpose(t0) perm=[1,0,2] }\noutput y\n");
  cr_assert_eq(ir_rebatch(g, 2, &h, &d), BASE_ERR_SHAPE);
  cr_assert_str_eq(d.msg, "cannot rebatch move 'y': program operator 2 "
                          "(transpose) transposes axis 0");
  ir_graph_free(g);
}

/* MaxViT's lowered block follows a new batch: its bias [1,H,P,P] stays
 * broadcast (the original's, made [B*G*H,P,P] at load, cannot rebatch),
 * and each half of batch 4 computes what batch 2 computes on it. */
Test(lower_att, rebatch_maxvit) {
  ir_graph *g = lu_parse(maxvit);
  ir_graph *h = lu_lower(g, NULL), *h4;
  base_diag d;
  cr_assert_eq(ir_rebatch(h, 4, &h4, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(h4->tensors[h4->outputs[0]].shape.dim[0], 4);
  same_per_sample(h, h4, 2);
  ir_graph_free(h4), ir_graph_free(h), ir_graph_free(g);
}

/* The whole path as optimize runs it on MaxViT's export: the Einsum
 * import's unfused chain (scores reshaped to [B,G,H,P,P] for the bias,
 * softmax, reshaped back) made one attention node by fuse_graph (its bias
 * broadcast at load), then lowered: the row layout reads the packed rows
 * and the bias [1,H,P,P] itself, and computes the chain's outputs. */
Test(lower_att, maxvit_fused_then_lowered) {
  static const char chain[] =
      "input x: [2,2,3,4]\n"
      "weight w: [4,12]\nweight c: []\nweight pb: [1,2,3,3]\n"
      "weight wo: [4,4]\n"
      "qkv = matmul(x, w)\n" MAXVIT_QKV "s = matmul(q, k)\n"
      "s5 = reshape(s) shape=[2,2,2,3,3]\n"
      "sb = ewadd(s5, pb)\n"
      "p = softmax(sb) axis=4\n"
      "p3 = reshape(p) shape=[8,3,3]\n"
      "o = matmul(p3, v)\n"
      "o1 = reshape(o) shape=[2,2,2,3,2]\n"
      "o2 = transpose(o1) perm=[0,1,3,2,4]\n"
      "o3 = reshape(o2) shape=[2,2,3,4]\n"
      "z = matmul(o3, wo)\n"
      "output z\n";
  ir_graph *g = lu_parse(chain);
  base_diag d;
  fuse_stats fs;
  ir_graph *f = fuse_graph(g, NULL, &fs, &d);
  cr_assert(f, "%s", d.msg);
  cr_assert_eq(fs.attention, 1);
  lower_stats st;
  ir_graph *h = lu_lower(f, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 0);
  int found = 0;
  for (int i = 0; i < h->nnodes; i++) {
    const ir_node *a = &h->nodes[i];
    if (a->op != IR_OP_ATTENTION)
      continue;
    found = 1;
    cr_assert_eq(a->a.groups, 2);
    cr_assert_eq(a->nin, 5);
    cr_assert_eq(a->in[4], ir_find_tensor(h, "pb"), "the bias read as is");
  }
  cr_assert(found);
  lu_same_outputs(g, h, 1e-5);
  ir_graph_free(h), ir_graph_free(f), ir_graph_free(g);
}
