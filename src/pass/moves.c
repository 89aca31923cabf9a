/* moves.c: pass_simplify_moves (pass.h): movement operators that move
 * nothing dropped, and transposes of transposes composed into one.
 *
 * Identity moves come from exporters that write the general case: Swin-T's
 * window padding to a multiple of 7 (pads all 0 at 56x56) and its crop back
 * (slices of the full range), transposes by the identity permutation,
 * reshapes to the same shape, concats of one input (Llama's key/value cache
 * concatenation with no past: one copy kernel each). Each is dropped and its
 * readers read its input. A transpose read only by another transpose (torch's
 * MultiheadAttention transposes k to [B*H,S,D], then SDPA transposes it
 * again to [B*H,D,S]) is folded into that one: for y = transpose(x, p) and
 * z = transpose(y, q), z = transpose(x, r) with r[k] = p[q[k]] (dropped
 * when r is the identity). Graph outputs keep their nodes (and names).
 *
 * A transpose of a matmul's rows is sunk into the transpose before it:
 * torch's MultiheadAttention writes SDPA's [B,H,S,D] as [S,B,H,D], reshapes
 * to [S*B,E] for out_proj, reshapes back to [S,B,E] and transposes to
 * [B,S,E]; the matmul maps each row alone, so the rows may be produced in
 * [B,S] order directly: transpose(A, p'), p'[k] = p[q[k]] for the rows'
 * dims (p the first transpose's, q the last's), the same reshape and
 * matmul, and a reshape to the last transpose's shape (sink_chain has the
 * conditions).
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
  uint8_t *sunk;  /* per node: 1 in a chain rebuilt at its last transpose,
                     2 that transpose (sink_chain) */
  int *chain;     /* per node ending a chain: its other nodes (4) */
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

/* Node n, a conv2d, convolves with an identity kernel (const_iconv,
 * [C,C,kh,kw] with the 1 at the centre tap) centred by its pads, with no
 * bias, residual, activation, groups, stride or dilation: its output is
 * its input. The search builds one when it rewrites an add as a conv over
 * a concat (r00711 backward) and folds the concat back (r00764): Llama's
 * rotary sum kept such a conv, one launch a layer, priced cheaper than
 * the add by the roofline it was searched under. */
static int identity_conv(const ir_graph *g, const ir_node *n) {
  const ir_attrs *a = &n->a;
  int32_t p = g->tensors[n->in[1]].node;
  if (n->nin != 2 || p < 0 || g->nodes[p].op != IR_OP_CONST_ICONV ||
      a->act != IR_ACT_NONE || a->groups != 1)
    return 0;
  const ir_shape *w = &g->tensors[n->in[1]].shape;
  int64_t kh = w->dim[2], kw = w->dim[3];
  return w->dim[0] == w->dim[1] && kh % 2 && kw % 2 && a->stride[0] == 1 &&
         a->stride[1] == 1 && a->dilation[0] == 1 && a->dilation[1] == 1 &&
         a->pad[0] == kh / 2 && a->pad[2] == kh / 2 && a->pad[1] == kw / 2 &&
         a->pad[3] == kw / 2;
}

/* Node n moves nothing: its output equals its input. */
static int moves_nothing(const ir_graph *g, const ir_node *n) {
  int same = 0;
  switch (n->op) {
  case IR_OP_CONV2D: same = identity_conv(g, n); break;
  case IR_OP_TRANSPOSE: same = identity_perm(n->a.list, n->a.nlist); break;
  case IR_OP_RESHAPE:
  case IR_OP_SLICE: /* in range and of the same shape: the whole input */
    same = 1;
    break;
  case IR_OP_PAD: same = all_zero(n->a.list, n->a.nlist); break;
  case IR_OP_CONCAT: same = n->nin == 1 && n->a.act == IR_ACT_NONE; break;
  default: return 0;
  }
  const ir_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out[0]];
  return same && n->nout == 1 && x->dtype == y->dtype &&
         ir_shape_eq(&x->shape, &y->shape);
}

static int is_output(const moves *m, int32_t t) { return m->ix.is_output[t]; }

/* The node reading tensor t alone (t no graph output), else -1. */
static int sole_reader(const moves *m, int32_t t) {
  if (is_output(m, t) || m->ix.use_start[t + 1] - m->ix.use_start[t] != 1)
    return -1;
  return m->ix.use_node[m->ix.use_start[t]];
}

/* Transpose i is read only by a transpose (and is no graph output). */
static int folds_into_reader(const ir_graph *g, const moves *m, int i) {
  const ir_node *n = &g->nodes[i];
  int r = n->op == IR_OP_TRANSPOSE ? sole_reader(m, n->out[0]) : -1;
  return r >= 0 && g->nodes[r].op == IR_OP_TRANSPOSE;
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

/* ---- a transpose sunk through a matmul ---------------------------------- */

static const ir_shape *shape_of(const ir_graph *g, int32_t t) {
  return &g->tensors[t].shape;
}

/* The chain sunk at transpose i: T = transpose(A, p) -> R1 = reshape to
 * [M, N] (N: T's dims j.. multiplied) -> Y = matmul(R1, W[, b]) (W rank 2)
 * -> R2 = reshape to T's dims ..j and N' -> i = transpose(R2, q), q[j] = j
 * (the rows permuted, the columns kept), each read only by the next. Sets
 * c[0..3] to T, R1, Y, R2; 0 when i ends no such chain. */
static int sink_chain(const ir_graph *g, const moves *m, int i, int *c) {
  const ir_node *t2 = &g->nodes[i];
  if (t2->op != IR_OP_TRANSPOSE || m->taken[i])
    return 0;
  int r2 = g->tensors[t2->in[0]].node;
  if (r2 < 0 || g->nodes[r2].op != IR_OP_RESHAPE)
    return 0;
  int y = g->tensors[g->nodes[r2].in[0]].node;
  if (y < 0 || g->nodes[y].op != IR_OP_MATMUL || g->nodes[y].nin > 3 ||
      shape_of(g, g->nodes[y].in[1])->rank != 2)
    return 0;
  int r1 = g->tensors[g->nodes[y].in[0]].node;
  if (r1 < 0 || g->nodes[r1].op != IR_OP_RESHAPE)
    return 0;
  int t = g->tensors[g->nodes[r1].in[0]].node;
  if (t < 0 || g->nodes[t].op != IR_OP_TRANSPOSE)
    return 0;
  int32_t a = g->nodes[t].in[0];
  if (g->tensors[a].node >= 0 && m->taken[g->tensors[a].node])
    return 0;
  c[0] = t, c[1] = r1, c[2] = y, c[3] = r2;
  for (int k = 0; k < 4; k++)
    if (sole_reader(m, g->nodes[c[k]].out[0]) != (k < 3 ? c[k + 1] : i))
      return 0;
  const ir_shape *ts = shape_of(g, g->nodes[t].out[0]);
  const ir_shape *s1 = shape_of(g, g->nodes[r1].out[0]);
  const ir_shape *s2 = shape_of(g, g->nodes[r2].out[0]);
  int j = s2->rank - 1;
  if (s1->rank != 2 || j < 1 || j >= ts->rank || t2->a.list[j] != j)
    return 0;
  int64_t n = 1;
  for (int k = j; k < ts->rank; k++)
    n *= ts->dim[k];
  for (int k = 0; k < j; k++)
    if (s2->dim[k] != ts->dim[k])
      return 0;
  return n == s1->dim[1] && !identity_perm(t2->a.list, s2->rank);
}

/* A node of op on in (h's tensors), its output named as g's tensor t;
 * its h tensor, or -1. */
static int32_t add_as(moves *m, ir_opcode op, const int32_t *in, int nin,
                      const ir_attrs *a, int32_t t) {
  const char *name = m->b.g->tensors[t].name;
  int k = ir_add_node(m->b.h, op, in, nin, a, &name, m->b.d);
  return k < 0 ? -1 : m->b.h->nodes[k].out[0];
}

static ir_attrs list_attrs(const int64_t *v, int n) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.nlist = n;
  memcpy(a.list, v, sizeof(int64_t) * (size_t)n);
  return a;
}

/* The chain c ending at transpose i rebuilt: A transposed by p' (p'[k] =
 * p[q[k]] for the rows' dims, p[k] for the columns'; none when the
 * identity), reshaped to [M, N], the matmul, reshaped to i's shape. */
static base_status emit_sunk(moves *m, int i, const int *c, int *count) {
  const ir_graph *g = m->b.g;
  const ir_node *t = &g->nodes[c[0]], *y = &g->nodes[c[2]];
  const ir_node *t2 = &g->nodes[i];
  int j = t2->a.nlist - 1, rank = t->a.nlist;
  int64_t p[IR_MAX_RANK] = {0};
  for (int k = 0; k < rank; k++)
    p[k] = k < j ? t->a.list[t2->a.list[k]] : t->a.list[k];
  int32_t x = m->b.map[t->in[0]], in[IR_MAX_IN];
  int made = 2;
  if (!identity_perm(p, rank)) {
    ir_attrs a = list_attrs(p, rank);
    x = add_as(m, IR_OP_TRANSPOSE, &x, 1, &a, t->out[0]);
    made++;
  }
  const ir_shape *s1 = shape_of(g, g->nodes[c[1]].out[0]);
  ir_attrs a1 = list_attrs(s1->dim, s1->rank);
  if (x >= 0)
    x = add_as(m, IR_OP_RESHAPE, &x, 1, &a1, g->nodes[c[1]].out[0]);
  in[0] = x;
  for (int k = 1; k < y->nin; k++)
    in[k] = m->b.map[y->in[k]];
  if (x >= 0)
    x = add_as(m, IR_OP_MATMUL, in, y->nin, &y->a, y->out[0]);
  const ir_shape *so = shape_of(g, t2->out[0]);
  ir_attrs a2 = list_attrs(so->dim, so->rank);
  if (x >= 0)
    x = add_as(m, IR_OP_RESHAPE, &x, 1, &a2, t2->out[0]);
  if (x < 0)
    return m->b.d ? m->b.d->code : BASE_ERR_INTERNAL;
  m->b.map[t2->out[0]] = x;
  *count += 5 - (made + 1);
  return BASE_OK;
}

/* Marks every chain sunk (sunk[], chain[]); chains never share a node. */
static void find_sunk(const ir_graph *g, moves *m) {
  for (int i = 0; i < g->nnodes; i++) {
    int c[4], free_ = 1;
    if (!sink_chain(g, m, i, c))
      continue;
    for (int k = 0; k < 4; k++)
      free_ &= !m->sunk[c[k]];
    if (!free_)
      continue;
    for (int k = 0; k < 4; k++)
      m->sunk[c[k]] = 1;
    memcpy(&m->chain[4 * (size_t)i], c, sizeof c);
    m->sunk[i] = 2;
  }
}

/* Node i into h: dropped (its output mapped to its input), absorbed into
 * its reader, composed with the transpose it reads, or copied. */
static base_status emit(moves *m, int i, int *count) {
  const ir_graph *g = m->b.g;
  const ir_node *n = &g->nodes[i];
  int32_t t = n->out[0];
  if (m->sunk[i])
    return m->sunk[i] == 1 ? BASE_OK : emit_sunk(m, i, &m->chain[4 * i], count);
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
  free(m->sunk);
  free(m->chain);
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
  m.sunk = base_calloc((size_t)g->nnodes + 1, 1);
  m.chain = base_malloc(sizeof(int) * 4 * ((size_t)g->nnodes + 1));
  if (!m.base || !m.perm || !m.taken || !m.sunk || !m.chain ||
      rewrite_index_build(g, &m.ix, d)) {
    moves_free(&m);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  for (size_t t = 0; t < nt; t++)
    m.base[t] = -1;
  for (int i = 0; i < g->nnodes; i++)
    m.taken[i] = (uint8_t)folds_into_reader(g, &m, i);
  find_sunk(g, &m);
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

/* The identities alone (pass.h): no transpose composed or sunk. */
ir_graph *pass_drop_identities(const ir_graph *g, int *count, base_diag *d) {
  rewrite_index ix;
  rewrite_builder b;
  *count = 0;
  if (rewrite_index_build(g, &ix, d))
    return NULL;
  base_status st = rewrite_build_begin(&b, g, NULL, d);
  if (st) {
    rewrite_index_free(&ix);
    return NULL;
  }
  for (int i = 0; !st && i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int32_t t = n->out[0];
    if (n->nout == 1 && !ix.is_output[t] && moves_nothing(g, n)) {
      b.map[t] = b.map[n->in[0]];
      ++*count;
    } else {
      st = rewrite_build_copy(&b, i, NULL);
    }
  }
  rewrite_index_free(&ix);
  return rewrite_build_finish(&b, st);
}
