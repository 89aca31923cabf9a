/* rotary.c: pass_fold_rotate_half (pass.h): rotary embedding's
 * rotate_half folded into the projection's weights.
 *
 * Llama's rotary embedding computes q * cos + rotate_half(q) * sin with
 * rotate_half(q) = concat(-q[..., D/2:], q[..., :D/2]) over each head's D
 * values; both torch exporters write two slices, a neg and a concat of
 * q = transpose(reshape(matmul(h, W))), four kernels for q and four for k
 * each layer. rotate_half only permutes and negates columns of the
 * projection, so
 *   rotate_half(transpose(reshape(matmul(h, W))))
 *     = transpose(reshape(matmul(h, W')))
 * with W' = reshape(concat(-W3[:, :, D/2:], W3[:, :, :D/2]), [K, N]) and
 * W3 = reshape(W, [K, N/D, D]): weight-only nodes (folded once). The new
 * matmul reads h like the other projections, so sibling merging makes it
 * part of the merged QKV matmul, and the rotary's multiply-add is then
 * element-wise alone (one fused kernel). Where: the concat axis and the
 * slices' axis are the last, the slices split it in halves (whole range
 * elsewhere), the neg is of the upper half and first, the transpose keeps
 * the last axis last, the reshape splits the matmul's last axis N into
 * [N/D, D], the matmul has no bias or activation and W [K, N] is a weight
 * or weight-only; the slices and neg are read by the next alone (the
 * concat and no graph output). Each value is a product of the same
 * operands as before, negated or not: the same bits but for the GEMM's
 * blocking.
 *
 * Where the concat is read alone by the rotary sum y = x * cos + r * sin
 * (x the transpose's output, cos and sin of x's rank, each product read by
 * the add alone), the sum is taken before the transpose instead:
 * y = transpose(v * cos' + v' * sin') with v the reshape, v' the rotated
 * one and cos', sin' cos and sin transposed by the inverse permutation
 * (weight-only for the exports' constant tables): one fused kernel and one
 * transpose where there were two transposes and the fused kernel.
 */
#include <stdlib.h>
#include <string.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

/* A site: the concat's other nodes and what the new chain reads. */
typedef struct site {
  int slo, shi, neg;      /* the slices of the lower and upper half, the neg */
  int tr, rs, mm;         /* the transpose, reshape and matmul before them */
  int64_t k, n, heads, d; /* W [k, n]; n = heads * d */
  int mcos, msin, add;    /* x * cos, rotate_half(x) * sin, their sum; or
                             add -1 (the concat alone replaced) */
} site;

static int made_by(const ir_graph *g, int32_t t, ir_opcode op) {
  int n = g->tensors[t].kind == IR_T_VALUE ? g->tensors[t].node : -1;
  return n >= 0 && g->nodes[n].op == op && g->nodes[n].nout == 1 ? n : -1;
}

/* Slice node n of x takes the whole of x but for the last axis, from
 * `from`, half of it long. */
static int half_slice(const ir_graph *g, int n, int32_t x, int64_t from) {
  const ir_node *s = &g->nodes[n];
  const ir_shape *xs = &g->tensors[x].shape, *os = &g->tensors[s->out[0]].shape;
  int r = xs->rank;
  if (s->in[0] != x || s->a.nlist != r || os->rank != r || xs->dim[r - 1] % 2)
    return 0;
  for (int k = 0; k < r; k++) {
    int64_t want = k == r - 1 ? xs->dim[k] / 2 : xs->dim[k];
    if (s->a.list[k] != (k == r - 1 ? from : 0) || os->dim[k] != want)
      return 0;
  }
  return 1;
}

/* The chain transpose(reshape(matmul(h, W))) computing x: into c. */
static int projection(const ir_graph *g, const uint8_t *wonly, int32_t x,
                      site *c) {
  int r = g->tensors[x].shape.rank;
  if ((c->tr = made_by(g, x, IR_OP_TRANSPOSE)) < 0 ||
      g->nodes[c->tr].a.list[r - 1] != r - 1)
    return 0;
  int32_t v = g->nodes[c->tr].in[0];
  if ((c->rs = made_by(g, v, IR_OP_RESHAPE)) < 0)
    return 0;
  int32_t p = g->nodes[c->rs].in[0];
  if ((c->mm = made_by(g, p, IR_OP_MATMUL)) < 0)
    return 0;
  const ir_node *m = &g->nodes[c->mm];
  const ir_shape *ps = &g->tensors[p].shape, *vs = &g->tensors[v].shape;
  const ir_tensor *w = &g->tensors[m->in[1]];
  if (m->nin != 2 || m->a.act != IR_ACT_NONE || w->shape.rank != 2 ||
      w->dtype != IR_DT_F32 || w->kind == IR_T_INPUT ||
      (w->kind == IR_T_VALUE && !wonly[w->node]) || vs->rank != ps->rank + 1)
    return 0;
  for (int k = 0; k + 1 < ps->rank; k++)
    if (vs->dim[k] != ps->dim[k])
      return 0;
  c->k = w->shape.dim[0], c->n = w->shape.dim[1];
  c->heads = vs->dim[r - 2], c->d = vs->dim[r - 1];
  return c->heads * c->d == c->n && ps->dim[ps->rank - 1] == c->n;
}

/* Concat node j is rotate_half of a projection: its site into c. */
static int find(const ir_graph *g, const rewrite_index *ix,
                const uint8_t *wonly, int j, site *c) {
  const ir_node *cn = &g->nodes[j];
  if (cn->op != IR_OP_CONCAT || cn->nin != 2 || cn->a.act != IR_ACT_NONE)
    return 0;
  int r = g->tensors[cn->out[0]].shape.rank;
  if (cn->a.axis != r - 1 || (c->neg = made_by(g, cn->in[0], IR_OP_NEG)) < 0 ||
      (c->slo = made_by(g, cn->in[1], IR_OP_SLICE)) < 0 ||
      (c->shi = made_by(g, g->nodes[c->neg].in[0], IR_OP_SLICE)) < 0 ||
      rewrite_sole_reader(ix, cn->in[0]) != j ||
      rewrite_sole_reader(ix, cn->in[1]) != j ||
      rewrite_sole_reader(ix, g->nodes[c->neg].in[0]) != c->neg)
    return 0;
  int32_t x = g->nodes[c->slo].in[0];
  int64_t d = g->tensors[x].shape.dim[r - 1];
  return g->tensors[x].dtype == IR_DT_F32 && half_slice(g, c->slo, x, 0) &&
         half_slice(g, c->shi, x, d / 2) && projection(g, wonly, x, c);
}

/* The other input of binary node n (not t), -1 when both are t. */
static int32_t other(const ir_node *n, int32_t t) {
  return n->in[0] == n->in[1] ? -1 : n->in[0] == t ? n->in[1] : n->in[0];
}

/* Tensor t (x's shape) computed by an ewmul that add node y alone reads:
 * that ewmul, else -1. */
static int scaled(const ir_graph *g, const rewrite_index *ix, int32_t t,
                  int32_t x, int y) {
  int m = made_by(g, t, IR_OP_EWMUL);
  return m >= 0 && rewrite_sole_reader(ix, t) == y &&
                 ir_shape_eq(&g->tensors[t].shape, &g->tensors[x].shape)
             ? m
             : -1;
}

/* The rotary sum y = x * cos + rotate_half(x) * sin around site c (concat
 * j, x the transpose's output): sets c->mcos, c->msin, c->add; 0 when the
 * concat is read otherwise. */
static int rotary_sum(const ir_graph *g, const rewrite_index *ix, int j,
                      site *c) {
  int32_t r = g->nodes[j].out[0], x = g->nodes[c->tr].out[0];
  int rank = g->tensors[x].shape.rank;
  int b = rewrite_sole_reader(ix, r);
  if (b < 0 || g->nodes[b].op != IR_OP_EWMUL || other(&g->nodes[b], r) < 0)
    return 0;
  int y = rewrite_sole_reader(ix, g->nodes[b].out[0]);
  if (y < 0 || g->nodes[y].op != IR_OP_EWADD)
    return 0;
  int32_t at = other(&g->nodes[y], g->nodes[b].out[0]);
  int a = at < 0 ? -1 : scaled(g, ix, at, x, y);
  if (a < 0 || (g->nodes[a].in[0] != x && g->nodes[a].in[1] != x) ||
      other(&g->nodes[a], x) < 0 ||
      scaled(g, ix, g->nodes[b].out[0], x, y) != b ||
      !ir_shape_eq(&g->tensors[g->nodes[y].out[0]].shape, &g->tensors[x].shape))
    return 0;
  int32_t cs = other(&g->nodes[a], x), sn = other(&g->nodes[b], r);
  if (g->tensors[cs].shape.rank != rank || g->tensors[sn].shape.rank != rank)
    return 0;
  c->mcos = a, c->msin = b, c->add = y;
  return 1;
}

/* A node op(in) with attributes a, output named from base; its output. */
static int32_t add(rewrite_builder *b, ir_opcode op, const int32_t *in, int nin,
                   const ir_attrs *a, const char *base) {
  int k = rewrite_build_node(b, op, in, nin, a, base);
  return k < 0 ? -1 : b->h->nodes[k].out[0];
}

/* W' = reshape(concat(neg(W3[:, :, d/2:]), W3[:, :, :d/2]), [k, n]). */
static int32_t rotated_weight(rewrite_builder *b, const site *c,
                              const char *base) {
  const ir_node *m = &b->g->nodes[c->mm];
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = 3, a.list[0] = c->k, a.list[1] = c->heads, a.list[2] = c->d;
  int32_t w = b->map[m->in[1]];
  int32_t w3 = add(b, IR_OP_RESHAPE, &w, 1, &a, base);
  ir_attrs s;
  ir_attrs_default(IR_OP_SLICE, &s);
  s.nlist = s.nlist2 = 3;
  s.list2[0] = c->k, s.list2[1] = c->heads, s.list2[2] = c->d;
  s.list[2] = c->d / 2;
  int32_t hi = w3 < 0 ? -1 : add(b, IR_OP_SLICE, &w3, 1, &s, base);
  s.list[2] = 0, s.list2[2] = c->d / 2;
  int32_t lo = hi < 0 ? -1 : add(b, IR_OP_SLICE, &w3, 1, &s, base);
  ir_attrs none;
  ir_attrs_default(IR_OP_NEG, &none);
  int32_t ng = lo < 0 ? -1 : add(b, IR_OP_NEG, &hi, 1, &none, base);
  ir_attrs ca;
  ir_attrs_default(IR_OP_CONCAT, &ca);
  ca.axis = 2;
  int32_t parts[2] = {ng, lo};
  int32_t cat = ng < 0 ? -1 : add(b, IR_OP_CONCAT, parts, 2, &ca, base);
  a.nlist = 2, a.list[0] = c->k, a.list[1] = c->n, a.list[2] = 0;
  return cat < 0 ? -1 : add(b, IR_OP_RESHAPE, &cat, 1, &a, base);
}

/* transpose(t) by the inverse of permutation p (rank r): t as it
 * broadcasts against the tensor p was applied to. */
static int32_t unpermuted(rewrite_builder *b, int32_t t, const ir_attrs *p,
                          const char *base) {
  ir_attrs a = *p;
  for (int k = 0; k < p->nlist; k++)
    a.list[p->list[k]] = k;
  return add(b, IR_OP_TRANSPOSE, &t, 1, &a, base);
}

/* The rotary sum of site c on the projections before the transpose:
 * transpose(v * cos' + v' * sin'), cos' and sin' cos and sin transposed
 * back; its output (the transpose's input), or -1. */
static int32_t sum_before(rewrite_builder *b, const site *c, int32_t vr,
                          const char *name) {
  const ir_graph *g = b->g;
  const ir_node *tr = &g->nodes[c->tr], *mc = &g->nodes[c->mcos],
                *ms = &g->nodes[c->msin];
  int32_t x = tr->out[0], r = ms->in[0] == x ? ms->in[1] : ms->in[0];
  int32_t cs = mc->in[0] == x ? mc->in[1] : mc->in[0];
  int32_t sn = ms->in[0] == r ? ms->in[1] : ms->in[0];
  int32_t cv = unpermuted(b, b->map[cs], &tr->a, name);
  int32_t sv = cv < 0 ? -1 : unpermuted(b, b->map[sn], &tr->a, name);
  ir_attrs a;
  ir_attrs_default(IR_OP_EWMUL, &a);
  int32_t in1[2] = {b->map[tr->in[0]], cv}, in2[2] = {vr, sv};
  int32_t p = sv < 0 ? -1 : add(b, IR_OP_EWMUL, in1, 2, &a, name);
  int32_t q = p < 0 ? -1 : add(b, IR_OP_EWMUL, in2, 2, &a, name);
  ir_attrs_default(IR_OP_EWADD, &a);
  int32_t pq[2] = {p, q};
  return q < 0 ? -1 : add(b, IR_OP_EWADD, pq, 2, &a, name);
}

/* Emits site c at node j (its concat, or its rotary sum's add):
 * matmul(h, W') and the reshape, then the transpose named as the concat's
 * output, or the rotary sum before the transpose named as the add's. */
static base_status emit(rewrite_builder *b, int j, const site *c) {
  const ir_graph *g = b->g;
  const char *name = g->tensors[g->nodes[j].out[0]].name;
  const ir_node *m = &g->nodes[c->mm], *rs = &g->nodes[c->rs],
                *tr = &g->nodes[c->tr];
  int32_t w = rotated_weight(b, c, name);
  int32_t in[2] = {b->map[m->in[0]], w};
  int32_t p = w < 0 ? -1 : add(b, IR_OP_MATMUL, in, 2, &m->a, name);
  int32_t v = p < 0 ? -1 : add(b, IR_OP_RESHAPE, &p, 1, &rs->a, name);
  if (v >= 0 && c->add >= 0)
    v = sum_before(b, c, v, name);
  int k = v < 0
              ? -1
              : ir_add_node(b->h, IR_OP_TRANSPOSE, &v, 1, &tr->a, &name, b->d);
  if (k < 0)
    return b->d && b->d->code ? b->d->code : BASE_ERR_NOMEM;
  b->h->nodes[k].line = g->nodes[j].line, b->h->nodes[k].col = g->nodes[j].col;
  b->map[g->nodes[j].out[0]] = b->h->nodes[k].out[0];
  return BASE_OK;
}

ir_graph *pass_fold_rotate_half(const ir_graph *g, int *count, base_diag *d) {
  rewrite_index ix;
  size_t n = (size_t)g->nnodes + 1;
  int *role = base_malloc(sizeof(int) * n); /* -1 copied, -2 dropped, >= 0
                                               emits that site */
  site *sites = base_malloc(sizeof(site) * n);
  uint8_t *wonly = base_calloc(n, 1);
  rewrite_builder b;
  *count = 0;
  if (!role || !sites || !wonly || rewrite_index_build(g, &ix, d)) {
    free(role), free(sites), free(wonly);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  ir_weight_only(g, wonly);
  for (int i = 0; i < g->nnodes; i++)
    role[i] = -1;
  for (int j = 0; j < g->nnodes; j++) {
    site *c = &sites[j];
    if (!find(g, &ix, wonly, j, c))
      continue;
    role[c->slo] = role[c->shi] = role[c->neg] = -2;
    role[j] = j;
    if (rotary_sum(g, &ix, j, c))
      role[j] = role[c->mcos] = role[c->msin] = -2, role[c->add] = j;
    else
      c->add = -1;
    ++*count;
  }
  rewrite_index_free(&ix);
  base_status st = rewrite_build_begin(&b, g, NULL, d);
  if (st) {
    free(role), free(sites), free(wonly);
    return NULL;
  }
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (role[i] >= 0)
      st = emit(&b, i, &sites[role[i]]);
    else if (role[i] == -1)
      st = rewrite_build_copy(&b, i, NULL);
  }
  free(role), free(sites), free(wonly);
  return rewrite_build_finish(&b, st);
}
