/* moves.c: pass_simplify_moves (pass.h): movement operators that move
 * nothing dropped, and transposes of transposes composed into one.
 *
 * Identity moves come from exporters that write the general case: Swin-T's
 * window padding to a multiple of 7 (pads all 0 at 56x56) and its crop back
 * (slices of the full range), transposes by the identity permutation,
 * reshapes to the same shape. Each is dropped and its readers read its
 * input. A transpose read only by another transpose (torch's
 * MultiheadAttention transposes k to [B*H,S,D], then SDPA transposes it
 * again to [B*H,D,S]) is folded into that one: for y = transpose(x, p) and
 * z = transpose(y, q), z = transpose(x, r) with r[k] = p[q[k]] (dropped
 * when r is the identity). Graph outputs keep their nodes (and names).
 */
#include <stdlib.h>
#include <string.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

typedef struct moves {
  rewrite_builder b;
  rewrite_index ix;
  int32_t *base;  /* per tensor: the tensor an absorbed transpose's output
                     reads as once composed (g's index), else -1 */
  int64_t *perm;  /* per tensor: that composed permutation (IR_MAX_RANK) */
  uint8_t *taken; /* per node: a transpose folded into its reader */
} moves;

static int identity_perm(const int64_t *p, int n) {
  for (int k = 0; k < n; k++)
    if (p[k] != k)
      return 0;
  return 1;
}

static int all_zero(const int64_t *v, int n) {
  for (int k = 0; k < n; k++)
    if (v[k])
      return 0;
  return 1;
}

/* Node n moves nothing: its output equals its input. */
static int moves_nothing(const ir_graph *g, const ir_node *n) {
  int same = 0;
  switch (n->op) {
  case IR_OP_TRANSPOSE: same = identity_perm(n->a.list, n->a.nlist); break;
  case IR_OP_RESHAPE:
  case IR_OP_SLICE: /* in range and of the same shape: the whole input */
    same = 1;
    break;
  case IR_OP_PAD: same = all_zero(n->a.list, n->a.nlist); break;
  default: return 0;
  }
  const ir_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out[0]];
  return same && n->nout == 1 && x->dtype == y->dtype &&
         ir_shape_eq(&x->shape, &y->shape);
}

static int is_output(const moves *m, int32_t t) { return m->ix.is_output[t]; }

/* Transpose i is read only by a transpose (and is no graph output). */
static int folds_into_reader(const ir_graph *g, const moves *m, int i) {
  const ir_node *n = &g->nodes[i];
  int t = n->out[0];
  if (n->op != IR_OP_TRANSPOSE || is_output(m, t) ||
      m->ix.use_start[t + 1] - m->ix.use_start[t] != 1)
    return 0;
  return g->nodes[m->ix.use_node[m->ix.use_start[t]]].op == IR_OP_TRANSPOSE;
}

/* Transpose i read as (its base, the composed permutation p): through the
 * absorbed transpose computing its input, if any. */
static int32_t composed(const ir_graph *g, const moves *m, int i, int64_t *p) {
  const ir_node *n = &g->nodes[i];
  int32_t x = n->in[0];
  int rank = n->a.nlist;
  for (int k = 0; k < rank; k++)
    p[k] = m->base[x] < 0 ? n->a.list[k]
                          : m->perm[(size_t)x * IR_MAX_RANK + n->a.list[k]];
  return m->base[x] < 0 ? x : m->base[x];
}

/* Node i into h: dropped (its output mapped to its input), absorbed into
 * its reader, composed with the transpose it reads, or copied. */
static base_status emit(moves *m, int i, int *count) {
  const ir_graph *g = m->b.g;
  const ir_node *n = &g->nodes[i];
  int32_t t = n->out[0];
  if (n->nout == 1 && !is_output(m, t) && moves_nothing(g, n)) {
    m->b.map[t] = m->b.map[n->in[0]];
    ++*count;
    return BASE_OK;
  }
  if (n->op != IR_OP_TRANSPOSE)
    return rewrite_build_copy(&m->b, i, NULL);
  int64_t p[IR_MAX_RANK] = {0};
  int32_t x = composed(g, m, i, p);
  if (m->taken[i]) { /* its reader composes it */
    m->base[t] = x;
    memcpy(&m->perm[(size_t)t * IR_MAX_RANK], p, sizeof p);
    ++*count;
    return BASE_OK;
  }
  if (x == n->in[0])
    return rewrite_build_copy(&m->b, i, NULL);
  if (identity_perm(p, n->a.nlist) && !is_output(m, t)) {
    m->b.map[t] = m->b.map[x];
    ++*count; /* this one goes too */
    return BASE_OK;
  }
  ir_attrs a = n->a;
  memcpy(a.list, p, sizeof(int64_t) * (size_t)n->a.nlist);
  m->b.map[n->in[0]] = m->b.map[x]; /* its sole reader: read as the base */
  return rewrite_build_copy(&m->b, i, &a);
}

static void moves_free(moves *m) {
  free(m->base);
  free(m->perm);
  free(m->taken);
  rewrite_index_free(&m->ix);
}

ir_graph *pass_simplify_moves(const ir_graph *g, int *count, base_diag *d) {
  moves m;
  memset(&m, 0, sizeof m);
  *count = 0;
  size_t nt = (size_t)g->ntensors + 1;
  m.base = base_malloc(sizeof(int32_t) * nt);
  m.perm = base_malloc(sizeof(int64_t) * IR_MAX_RANK * nt);
  m.taken = base_calloc((size_t)g->nnodes + 1, 1);
  if (!m.base || !m.perm || !m.taken || rewrite_index_build(g, &m.ix, d)) {
    moves_free(&m);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  for (size_t t = 0; t < nt; t++)
    m.base[t] = -1;
  for (int i = 0; i < g->nnodes; i++)
    m.taken[i] = (uint8_t)folds_into_reader(g, &m, i);
  base_status st = rewrite_build_begin(&m.b, g, NULL, d);
  if (st) {
    moves_free(&m);
    return NULL;
  }
  for (int i = 0; !st && i < g->nnodes; i++)
    st = emit(&m, i, count);
  moves_free(&m);
  return rewrite_build_finish(&m.b, st);
}
