/* test_lower_chain.c: move nodes (ops.def `move`) and the lower stage's
 * movement-chain family (src/fuse/lower_chain.c).
 *
 * A move node prints and parses back, computes what its program's
 * operators compute (checked against index arithmetic written out here),
 * refuses programs with other operators, and is priced as one copy. A
 * Swin-like block (pad to a window multiple, cyclic shift as slices and
 * concats, window partition, a matmul, window reverse, the shift back,
 * the crop) lowers to two move nodes computing the same outputs bit for
 * bit, and unfuses to plain operators again. Chains of one kernel and
 * views, and groups a tensor read outside would cut, stay as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb/costdb.h"
#include "lower_util.h"
#include "maxvit_block.h"

/* Each of the n texts lowered with no movement chain made, its operators
 * as they were. */
static void expect_no_chains(const char *const *texts, size_t n) {
  for (size_t k = 0; k < n; k++) {
    lower_stats st;
    ir_graph *g, *h = lu_parse_lower(texts[k], &g, &st);
    cr_assert_eq(st.chains, 0, "text %zu", k);
    cr_assert_eq(h->nnodes, g->nnodes);
    ir_graph_free(g), ir_graph_free(h);
  }
}

static const char roll_text[] =
    "input x: [2,3,4]\n"
    "y = move(x) { t0 = transpose($0) perm=[0,2,1]; t1 = pad(t0) "
    "pads=[0,1,0,0,0,1] value=2; t2 = slice(t1) starts=[0,0,0] "
    "ends=[2,5,3]; t3 = slice(t1) starts=[0,0,3] ends=[2,5,4]; t4 = "
    "concat(t3, t2) axis=2 }\n"
    "output y\n";

Test(lower_chain, move_round_trip_and_values) {
  ir_graph *g = lu_parse(roll_text);
  cr_assert_eq(g->nnodes, 1);
  cr_assert_eq(g->nodes[0].op, IR_OP_MOVE);
  const ir_shape *ys = &g->tensors[g->outputs[0]].shape;
  cr_assert(ys->rank == 3 && ys->dim[0] == 2 && ys->dim[1] == 5 &&
            ys->dim[2] == 4);
  free(lu_round_trip(g));
  /* y[b,i,0] is the pad value (column 3 of the padded tensor);
   * y[b,i,j] = i >= 1 ? x[b,j-1,i-1] : 2 */
  ex_values *v = lu_run_as(g, g);
  const float *x = v->v[ir_find_tensor(g, "x")], *y = v->v[g->outputs[0]];
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 4; j++) {
        float want = j == 0 || i == 0 ? 2.0f : x[(b * 3 + j - 1) * 4 + i - 1];
        cr_assert_eq(y[(b * 5 + i) * 4 + j], want, "y[%d,%d,%d]", b, i, j);
      }
  ir_graph *u = lu_unfused(g, g, 0);
  cr_assert_eq(u->nnodes, 5);
  cr_assert_eq(lu_count_op(u, IR_OP_MOVE), 0);
  ex_values_free(v);
  ir_graph_free(g), ir_graph_free(u);
}

/* Move programs and whether each is one strided walk of its input
 * (ir_move_walk): MaxViT's q of a qkv projection (the heads' merge into
 * the batch not a view, but a walk), its window partition and
 * departition (odd sizes 7 and 49), size-1 dimensions around a split, a
 * merge across a transpose, a merge after a slice, a slice of a merged
 * run in whole blocks, Swin's cyclic shift (a roll: x[s:] then x[:s]) of
 * two axes and a transpose after it, its patch merging (four stepped
 * slices concatenated: offsets on a 2 x 2 grid); not a reshape that ends a
 * dimension inside a walk dimension it does not divide, a slice across
 * such a run, a pad, a roll split by a reshape after it (Swin's shift then
 * window partition) or before it (the reverse), a concat whose offsets are
 * on no grid. */
static const struct {
  const char *text;
  int walk;
} walk_cases[] = {
    {"input x: [2,4,49,12]\ny = move(x) { t0 = slice($0) starts=[0,0,0,4] "
     "ends=[2,4,49,8]; t1 = reshape(t0) shape=[2,4,49,2,2]; t2 = "
     "transpose(t1) perm=[0,1,3,2,4]; t3 = reshape(t2) shape=[16,49,2] }\n"
     "output y\n",
     1},
    {"input x: [2,3,14,14]\ny = move(x) { t0 = reshape($0) "
     "shape=[2,3,2,7,2,7]; t1 = transpose(t0) perm=[0,2,4,3,5,1]; t2 = "
     "reshape(t1) shape=[2,4,49,3] }\noutput y\n",
     1},
    {"input x: [2,4,49,3]\ny = move(x) { t0 = reshape($0) "
     "shape=[2,2,2,7,7,3]; t1 = transpose(t0) perm=[0,5,1,3,2,4]; t2 = "
     "reshape(t1) shape=[2,3,14,14] }\noutput y\n",
     1},
    {"input x: [1,6,1,4]\ny = move(x) { t0 = slice($0) starts=[0,1,0,1] "
     "ends=[1,5,1,4]; t1 = reshape(t0) shape=[2,1,2,3,1] }\noutput y\n",
     1},
    {"input x: [4,6]\ny = move(x) { t0 = transpose($0) perm=[1,0]; t1 = "
     "reshape(t0) shape=[3,8] }\noutput y\n",
     1},
    {"input x: [4,6]\ny = move(x) { t0 = slice($0) starts=[0,1] "
     "ends=[4,4]; t1 = reshape(t0) shape=[12] }\noutput y\n",
     1},
    {"input x: [4,6]\ny = move(x) { t0 = transpose($0) perm=[1,0]; t1 = "
     "reshape(t0) shape=[24]; t2 = slice(t1) starts=[8] ends=[20] }\n"
     "output y\n",
     1},
    {"input x: [6,4]\ny = move(x) { t0 = transpose($0) perm=[1,0]; t1 = "
     "reshape(t0) shape=[3,8] }\noutput y\n",
     0},
    {"input x: [4,6]\ny = move(x) { t0 = transpose($0) perm=[1,0]; t1 = "
     "reshape(t0) shape=[24]; t2 = slice(t1) starts=[3] ends=[10] }\n"
     "output y\n",
     0},
    {"input x: [4,6]\ny = move(x) { t0 = pad($0) pads=[0,1,0,0]; t1 = "
     "transpose(t0) perm=[1,0] }\noutput y\n",
     0},
    {roll_text, 0},
    /* Swin's shift by 1 of a [1,4,6,2] map: a walk (two axes wrapped) */
    {"input x: [1,4,6,2]\ny = move(x) { t0 = slice($0) starts=[0,1,0,0] "
     "ends=[1,4,6,2]; t1 = slice($0) starts=[0,0,0,0] ends=[1,1,6,2]; t2 = "
     "concat(t0, t1) axis=1; t3 = slice(t2) starts=[0,0,1,0] ends=[1,4,6,2]; "
     "t4 = slice(t2) starts=[0,0,0,0] ends=[1,4,1,2]; t5 = concat(t3, t4) "
     "axis=2; t6 = transpose(t5) perm=[0,2,1,3] }\noutput y\n",
     1},
    /* the shift, then a window partition splitting the rolled axes */
    {"input x: [1,4,6,2]\ny = move(x) { t0 = slice($0) starts=[0,1,0,0] "
     "ends=[1,4,6,2]; t1 = slice($0) starts=[0,0,0,0] ends=[1,1,6,2]; t2 = "
     "concat(t0, t1) axis=1; t3 = reshape(t2) shape=[1,2,2,6,2]; t4 = "
     "transpose(t3) perm=[0,1,3,2,4] }\noutput y\n",
     0},
    /* a window reverse, then the shift back over the merged axis */
    {"input x: [1,2,2,6,2]\ny = move(x) { t0 = transpose($0) "
     "perm=[0,1,3,2,4]; t1 = reshape(t0) shape=[1,4,6,2]; t2 = slice(t1) "
     "starts=[0,3,0,0] ends=[1,4,6,2]; t3 = slice(t1) starts=[0,0,0,0] "
     "ends=[1,3,6,2]; t4 = concat(t2, t3) axis=1 }\noutput y\n",
     0},
    /* Swin's patch merging: x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2],
       x[1::2, 1::2] along channels */
    {"input x: [1,4,6,3]\ny = move(x) { t0 = reshape($0) shape=[1,2,2,6,3]; "
     "t1 = slice(t0) starts=[0,0,0,0,0] ends=[1,2,1,6,3]; t2 = reshape(t1) "
     "shape=[1,2,6,3]; t3 = slice(t0) starts=[0,0,1,0,0] ends=[1,2,2,6,3]; "
     "t4 = reshape(t3) shape=[1,2,6,3]; t5 = reshape(t2) shape=[1,2,3,2,3]; "
     "t6 = slice(t5) starts=[0,0,0,0,0] ends=[1,2,3,1,3]; t7 = reshape(t6) "
     "shape=[1,2,3,3]; t8 = reshape(t4) shape=[1,2,3,2,3]; t9 = slice(t8) "
     "starts=[0,0,0,0,0] ends=[1,2,3,1,3]; t10 = reshape(t9) "
     "shape=[1,2,3,3]; t11 = slice(t5) starts=[0,0,0,1,0] "
     "ends=[1,2,3,2,3]; t12 = reshape(t11) shape=[1,2,3,3]; t13 = "
     "slice(t8) starts=[0,0,0,1,0] ends=[1,2,3,2,3]; t14 = reshape(t13) "
     "shape=[1,2,3,3]; t15 = concat(t7, t10, t12, t14) axis=3 }\n"
     "output y\n",
     1},
    /* a roll of the innermost axis by 3 */
    {"input x: [5,10]\ny = move(x) { t0 = slice($0) starts=[0,3] "
     "ends=[5,10]; t1 = slice($0) starts=[0,0] ends=[5,3]; t2 = concat(t0, "
     "t1) axis=1 }\noutput y\n",
     1},
    /* three parts at offsets 0, 1, 3: no grid */
    {"input x: [4,6]\ny = move(x) { t0 = slice($0) starts=[0,0] "
     "ends=[4,2]; t1 = slice($0) starts=[0,1] ends=[4,3]; t2 = slice($0) "
     "starts=[0,3] ends=[4,5]; t3 = concat(t0, t1, t2) axis=0 }\n"
     "output y\n",
     0},
    /* MaxViT's window reverse then grid partition (grid_text below): 6 = 2
       x 3 regrouped as 3 x 2 */
    {"input x: [2,4,9,4]\ny = move(x) { t0 = reshape($0) "
     "shape=[2,2,2,3,3,4]; t1 = transpose(t0) perm=[0,5,1,3,2,4]; t2 = "
     "reshape(t1) shape=[2,4,6,6]; t3 = reshape(t2) shape=[2,4,3,2,3,2]; "
     "t4 = transpose(t3) perm=[0,2,4,3,5,1]; t5 = reshape(t4) "
     "shape=[2,9,4,4]; t6 = transpose(t5) perm=[0,2,1,3] }\noutput y\n",
     0},
    /* the window reverse written channels-last ($SUPEROPT_MOVE_CL=1: the
       program run/move.c runs, a transpose [0,2,3,1] after it) */
    {"input x: [2,4,9,4]\ny = move(x) { t0 = reshape($0) "
     "shape=[2,2,2,3,3,4]; t1 = transpose(t0) perm=[0,5,1,3,2,4]; t2 = "
     "reshape(t1) shape=[2,4,6,6]; t3 = transpose(t2) perm=[0,2,3,1] }\n"
     "output y\n",
     1},
    /* its two halves: the window reverse, then the grid partition */
    {"input x: [2,4,9,4]\ny = move(x) { t0 = reshape($0) "
     "shape=[2,2,2,3,3,4]; t1 = transpose(t0) perm=[0,5,1,3,2,4]; t2 = "
     "reshape(t1) shape=[2,4,6,6] }\noutput y\n",
     1},
    {"input x: [2,4,6,6]\ny = move(x) { t0 = reshape($0) "
     "shape=[2,4,3,2,3,2]; t1 = transpose(t0) perm=[0,2,4,3,5,1]; t2 = "
     "reshape(t1) shape=[2,9,4,4]; t3 = transpose(t2) perm=[0,2,1,3] }\n"
     "output y\n",
     1},
};

/* Move node n of g (its input contiguous) as ir_move_walk's walk. */
static int walk_of(const ir_graph *g, const ir_node *n, int *rank, int64_t *dim,
                   int64_t *st, int64_t *wrap, int64_t *off) {
  const ir_shape *xs = &g->tensors[n->in[0]].shape;
  int64_t xst[IR_MAX_RANK];
  for (int d = xs->rank - 1, s = 1; d >= 0; s *= (int)xs->dim[d--])
    xst[d] = s;
  return ir_move_walk(ir_body_get(n->a.body), xs, xst, rank, dim, st, wrap,
                      off);
}

/* Each case's walk, where it has one, read from x gives the CPU
 * executor's result bit for bit. */
Test(lower_chain, move_walk_matches_program) {
  for (size_t c = 0; c < sizeof walk_cases / sizeof walk_cases[0]; c++) {
    ir_graph *g = lu_parse(walk_cases[c].text);
    const ir_node *n = &g->nodes[0];
    int64_t dim[IR_MAX_RANK], st[IR_MAX_RANK], wrap[IR_MAX_RANK], off = -1;
    int rank = 0, walk = walk_of(g, n, &rank, dim, st, wrap, &off);
    cr_assert_eq(walk, walk_cases[c].walk, "case %zu", c);
    if (!walk) {
      ir_graph_free(g);
      continue;
    }
    int64_t total = 1;
    for (int d = 0; d < rank; d++)
      total *= dim[d];
    const ir_shape *ys = &g->tensors[g->outputs[0]].shape;
    cr_assert_eq(total, ir_shape_numel(ys), "case %zu", c);
    ex_values *v = lu_run_as(g, g);
    const float *x = v->v[n->in[0]], *y = v->v[g->outputs[0]];
    for (int64_t i = 0; i < total; i++) {
      int64_t o = off, r = i;
      for (int d = rank - 1; d >= 0; d--)
        o += (r % dim[d] + wrap[d]) % dim[d] * st[d], r /= dim[d];
      cr_assert_eq(y[i], x[o], "case %zu, element %lld", c, (long long)i);
    }
    ex_values_free(v);
    ir_graph_free(g);
  }
}

Test(lower_chain, move_refuses_other_operators) {
  lu_refused("input x: [2,3]\ny = move(x) { t0 = relu($0) }\noutput y\n",
             "relu cannot be part of a move program");
  lu_refused("input x: [2,3]\ninput z: [2,3]\ny = move(x, z) { t0 = "
             "concat($0, $1) axis=0 }\noutput y\n",
             "move: 2 inputs (expected 1)");
  lu_refused("input x: [2,3]\ny = move(x)\noutput y\n",
             "'{' starting the move program");
}

/* One copy: the output written, at most as many input elements read. */
Test(lower_chain, move_priced_as_one_copy) {
  ir_graph *g = lu_parse(roll_text);
  cd_work w = cd_node_work(g, 0);
  cr_assert_eq(w.bytes, 4.0 * (40 + 24));
  cr_assert_eq(w.flops, 0);
  ir_graph_free(g);
}

/* Swin's shifted window attention without the attention: x [1,7,7,4],
 * windows of 4 x 4, shift 2. */
static const char swin_text[] =
    "input x: [1,7,7,4]\nweight w: [4,4]\n"
    "p = pad(x) pads=[0,0,0,0,0,1,1,0]\n"
    "a1 = slice(p) starts=[0,2,0,0] ends=[1,8,8,4]\n"
    "a2 = slice(p) starts=[0,0,0,0] ends=[1,2,8,4]\n"
    "r1 = concat(a1, a2) axis=1\n"
    "b1 = slice(r1) starts=[0,0,2,0] ends=[1,8,8,4]\n"
    "b2 = slice(r1) starts=[0,0,0,0] ends=[1,8,2,4]\n"
    "r2 = concat(b1, b2) axis=2\n"
    "w1 = reshape(r2) shape=[1,2,4,2,4,4]\n"
    "w2 = transpose(w1) perm=[0,1,3,2,4,5]\n"
    "w3 = reshape(w2) shape=[4,16,4]\n"
    "m = matmul(w3, w)\n"
    "v1 = reshape(m) shape=[1,2,2,4,4,4]\n"
    "v2 = transpose(v1) perm=[0,1,3,2,4,5]\n"
    "v3 = reshape(v2) shape=[1,8,8,4]\n"
    "c1 = slice(v3) starts=[0,6,0,0] ends=[1,8,8,4]\n"
    "c2 = slice(v3) starts=[0,0,0,0] ends=[1,6,8,4]\n"
    "u1 = concat(c1, c2) axis=1\n"
    "d1 = slice(u1) starts=[0,0,6,0] ends=[1,8,8,4]\n"
    "d2 = slice(u1) starts=[0,0,0,0] ends=[1,8,6,4]\n"
    "u2 = concat(d1, d2) axis=2\n"
    "y0 = slice(u2) starts=[0,0,0,0] ends=[1,7,7,4]\n"
    "y = ewadd(x, y0)\n"
    "output y\n";

static double total_bytes(const ir_graph *g) {
  double b = 0;
  for (int i = 0; i < g->nnodes; i++)
    b += cd_node_work(g, i).bytes;
  return b;
}

Test(lower_chain, swin_block_collapses) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(swin_text, &g, &st);
  cr_assert_eq(g->nnodes, 22);
  cr_assert_eq(h->nnodes, 4, "%d nodes", h->nnodes);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 2);
  cr_assert_eq(st.chains, 2);
  cr_assert_eq(st.chain_ops, 20);
  cr_assert_eq(lu_producer(h, "w3")->op, IR_OP_MOVE);
  cr_assert_eq(lu_producer(h, "y0")->op, IR_OP_MOVE);
  cr_assert_eq(lu_producer(h, "y")->op, IR_OP_EWADD);
  cr_assert_lt(total_bytes(h), total_bytes(g) / 3);
  lu_same_outputs(g, h, 0);
  free(lu_round_trip(h));
  ir_graph *u = lu_unfused(g, h, 0);
  cr_assert_eq(lu_count_op(u, IR_OP_MOVE), 0);
  cr_assert_eq(u->nnodes, 22);
  ir_graph_free(g), ir_graph_free(h), ir_graph_free(u);
}

/* A chain of f16 tensors collapses as a float32 one does (the CUDA
 * executor's move kernel copies 2-byte elements too), computing the same
 * values. */
Test(lower_chain, half_chain_collapses) {
  lower_stats st;
  ir_graph *g,
      *h = lu_parse_lower("input x: f16[2,3,4]\na = transpose(x) perm=[0,2,1]\n"
                          "b = slice(a) starts=[0,1,0] ends=[2,3,3]\n"
                          "c = pad(b) pads=[0,0,0,0,1,0] value=0.3\noutput c\n",
                          &g, &st);
  cr_assert_eq(st.chains, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 1);
  lu_same_outputs(g, h, 0);
  ir_graph_free(g), ir_graph_free(h);
}

/* MaxViT-T's window reverse followed by its grid partition (at a small
 * size: 2 x 2 windows of 3 x 3 pixels to an image of 6 x 6, then a grid
 * of 2 x 2 cells of 3 x 3): as one program no strided walk (6 = 2 x 3 regrouped
 * as 3 x 2: the CUDA executor would walk every step per element), so two move
 * nodes, each a strided walk of what it reads, computing the same values. */
static const char grid_text[] =
    "input x: [2,4,9,4]\nt0 = reshape(x) shape=[2,2,2,3,3,4]\n"
    "t1 = transpose(t0) perm=[0,5,1,3,2,4]\nt2 = reshape(t1) shape=[2,4,6,6]\n"
    "t3 = reshape(t2) shape=[2,4,3,2,3,2]\n"
    "t4 = transpose(t3) perm=[0,2,4,3,5,1]\nt5 = reshape(t4) shape=[2,9,4,4]\n"
    "y = transpose(t5) perm=[0,2,1,3]\nz = relu(y)\noutput z\n";

/* Asserts that every move node of h is a strided walk of its contiguous
 * input; returns how many of them wrap `wrapped` dimensions (rolls). */
static int walks_wrapping(const ir_graph *h, int wrapped) {
  int hits = 0;
  for (int i = 0; i < h->nnodes; i++) {
    const ir_node *n = &h->nodes[i];
    if (n->op != IR_OP_MOVE)
      continue;
    int64_t dim[IR_MAX_RANK], wst[IR_MAX_RANK], wrap[IR_MAX_RANK], off;
    int rank, w = 0;
    cr_assert(walk_of(h, n, &rank, dim, wst, wrap, &off),
              "move %s is no strided walk", h->tensors[n->out[0]].name);
    for (int d = 0; d < rank; d++)
      w += wrap[d] != 0;
    hits += w == wrapped;
  }
  return hits;
}

Test(lower_chain, grid_partition_splits_into_two_walks) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(grid_text, &g, &st);
  cr_assert_eq(st.chains, 2);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 2);
  cr_assert_eq(walks_wrapping(h, 0), 2, "no roll");
  lu_same_outputs(g, h, 0);
  ir_graph_free(g), ir_graph_free(h);
}

/* Swin's shift and window partition, then the window reverse and the shift
 * back, on a map the windows divide (8 x 8, windows of 4, shift 3; no pad):
 * each a roll and a walk that no one walk makes, so each group is cut into
 * two moves, every one a strided walk (the rolls with wrapped axes). */
static const char shift_text[] =
    "input x: [1,8,8,4]\n"
    "weight w: [4,4]\n"
    "a1 = slice(x) starts=[0,3,0,0] ends=[1,8,8,4]\n"
    "a2 = slice(x) starts=[0,0,0,0] ends=[1,3,8,4]\n"
    "r1 = concat(a1, a2) axis=1\n"
    "b1 = slice(r1) starts=[0,0,3,0] ends=[1,8,8,4]\n"
    "b2 = slice(r1) starts=[0,0,0,0] ends=[1,8,3,4]\n"
    "r2 = concat(b1, b2) axis=2\n"
    "w1 = reshape(r2) shape=[1,2,4,2,4,4]\n"
    "w2 = transpose(w1) perm=[0,1,3,2,4,5]\n"
    "w3 = reshape(w2) shape=[4,16,4]\n"
    "m = matmul(w3, w)\n"
    "v1 = reshape(m) shape=[1,2,2,4,4,4]\n"
    "v2 = transpose(v1) perm=[0,1,3,2,4,5]\n"
    "v3 = reshape(v2) shape=[1,8,8,4]\n"
    "c1 = slice(v3) starts=[0,5,0,0] ends=[1,8,8,4]\n"
    "c2 = slice(v3) starts=[0,0,0,0] ends=[1,5,8,4]\n"
    "u1 = concat(c1, c2) axis=1\n"
    "d1 = slice(u1) starts=[0,0,5,0] ends=[1,8,8,4]\n"
    "d2 = slice(u1) starts=[0,0,0,0] ends=[1,8,5,4]\n"
    "u2 = concat(d1, d2) axis=2\n"
    "y = ewadd(x, u2)\n"
    "output y\n";

Test(lower_chain, swin_shift_splits_into_roll_and_walk) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(shift_text, &g, &st);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 4, "%d moves",
               lu_count_op(h, IR_OP_MOVE));
  cr_assert_eq(walks_wrapping(h, 2), 2, "two rolls of two axes each");
  lu_same_outputs(g, h, 0);
  ir_graph_free(g), ir_graph_free(h);
}

/* Left alone: one kernel and a view; a chain whose middle tensor is also
 * a graph output (the group stops there: what is left has one kernel); a
 * chain of transposes only. */
Test(lower_chain, short_or_cut_chains_stay) {
  static const char *const texts[] = {
      "input x: [2,3,4]\na = reshape(x) shape=[6,4]\n"
      "b = transpose(a) perm=[1,0]\noutput b\n",
      "input x: [2,3,4]\na = transpose(x) perm=[0,2,1]\n"
      "b = slice(a) starts=[0,1,0] ends=[2,3,3]\noutput a, b\n",
      /* transposes only (ConvNeXt's permutes around a layer norm): the
         CUDA planner runs them as views of a channels-last tensor */
      "input x: [2,3,4,5]\na = transpose(x) perm=[0,3,1,2]\n"
      "b = transpose(a) perm=[0,2,3,1]\nc = relu(b)\noutput c\n",
  };
  expect_no_chains(texts, sizeof texts / sizeof *texts);
}

/* ir_move_cl() (the default): the window partition and departition, one
 * kernel each with a reshape reading a rank-4 image (or window rows), become
 * move nodes computing the same values bit for bit; with
 * $SUPEROPT_MOVE_CL=0 they stay. */
Test(lower_chain, move_cl_one_kernel_chains) {
  for (int on = 0; on < 2; on++) {
    if (on) /* unset: on, the default */
      unsetenv("SUPEROPT_MOVE_CL");
    else
      setenv("SUPEROPT_MOVE_CL", "0", 1);
    lower_stats st;
    ir_graph *g, *h = lu_parse_lower(maxvit_block_text, &g, &st);
    cr_assert_eq(st.chains, on ? 2 : 0, "switch %d: %d chains", on, st.chains);
    cr_assert_eq(lu_count_op(h, IR_OP_MOVE), on ? 2 : 0);
    if (on) {
      cr_assert_eq(st.chain_ops, 6);
      cr_assert_eq(lu_producer(h, "p3")->op, IR_OP_MOVE);
      cr_assert_eq(lu_producer(h, "d3")->op, IR_OP_MOVE);
      cr_assert_eq(lu_count_op(h, IR_OP_RESHAPE), 0);
      /* the residual adds folded (src/fuse/lower_epi.c): test_cuda.c's
         checks of each tensor's layout name these */
      cr_assert_eq(lu_producer(h, "r")->op, IR_OP_CONV2D);
      cr_assert_eq(lu_producer(h, "z")->op, IR_OP_CONV2D);
      free(lu_round_trip(h));
    }
    lu_same_outputs(g, h, 0);
    ir_graph_free(g), ir_graph_free(h);
  }
  unsetenv("SUPEROPT_MOVE_CL");
}

/* The same block converted to bf16 and f16 as run --dtype converts a model
 * (test_cuda.c's move_cl_maxvit_block runs these): the same two moves, the
 * tensors it checks by name still there. */
Test(lower_chain, move_cl_half_block) {
  setenv("SUPEROPT_MOVE_CL", "1", 1);
  ir_graph *g = lu_parse(maxvit_block_text);
  for (int ty = 0; ty < 2; ty++) {
    ir_graph *f = lu_to_half(g, ty);
    lower_stats st;
    ir_graph *h = lu_lower(f, &st);
    cr_assert_eq(st.chains, 2, "type %d", ty);
    cr_assert_eq(lu_producer(h, "p3")->op, IR_OP_MOVE);
    cr_assert_eq(lu_producer(h, "d3")->op, IR_OP_MOVE);
    cr_assert_eq(lu_producer(h, "r")->op, IR_OP_CONV2D);
    cr_assert_eq(lu_producer(h, "z")->op, IR_OP_CONV2D);
    cr_assert_geq(ir_find_tensor(h, "s"), 0);
    ir_graph_free(f), ir_graph_free(h);
  }
  ir_graph_free(g);
  unsetenv("SUPEROPT_MOVE_CL");
}

/* With the switch on still left alone: a transpose reading the image
 * itself (ConvNeXt's permute, then a reshape to rows: the CUDA planner's
 * view of channels-last bytes), a chain of one kernel from a rank-3 tensor,
 * one from a rank-4 tensor of one pixel, one with no convolution on either
 * side, and the switch's other values. */
Test(lower_chain, move_cl_leaves_other_chains) {
  static const char *const texts[] = {
      "input x: [2,4,6,6]\nweight w: [8,4,1,1]\nc = conv2d(x, w)\n"
      "t = transpose(c) perm=[0,2,3,1]\nu = reshape(t) shape=[2,36,8]\n"
      "v = relu(u)\noutput v\n",
      "input x: [2,3,4]\na = reshape(x) shape=[6,4]\n"
      "b = transpose(a) perm=[1,0]\noutput b\n",
      "input x: [2,6,1,1]\na = reshape(x) shape=[2,2,3]\n"
      "b = transpose(a) perm=[0,2,1]\noutput b\n",
      /* Swin's window partition of a layer norm's [N,H,W,C] rows for a
         matmul: no convolution on either side */
      "input x: [1,8,8,4]\nweight g: [4]\nweight e: [4]\nweight w: [4,4]\n"
      "l = layernorm(x, g, e) axis=3\n"
      "w1 = reshape(l) shape=[1,2,4,2,4,4]\n"
      "w2 = transpose(w1) perm=[0,1,3,2,4,5]\n"
      "w3 = reshape(w2) shape=[4,16,4]\nm = matmul(w3, w)\noutput m\n",
  };
  setenv("SUPEROPT_MOVE_CL", "1", 1);
  expect_no_chains(texts, sizeof texts / sizeof *texts);
  setenv("SUPEROPT_MOVE_CL", "no", 1); /* only "0" turns it off */
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(maxvit_block_text, &g, &st);
  cr_assert_eq(st.chains, 2);
  ir_graph_free(g), ir_graph_free(h);
  setenv("SUPEROPT_MOVE_CL", "0", 1);
  h = lu_parse_lower(maxvit_block_text, &g, &st);
  cr_assert_eq(st.chains, 0);
  ir_graph_free(g), ir_graph_free(h);
  unsetenv("SUPEROPT_MOVE_CL");
}
