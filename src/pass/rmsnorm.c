/* rmsnorm.c: pass_form_rmsnorm (pass.h): RMSNorm written as primitives
 * made one layernorm rms=1.
 *
 * Both torch exporters write Llama's RMSNorm, x * rsqrt(mean(x^2) + eps) *
 * w, as Pow (imported as ewmul(x, x)), ReduceMean over the last axis,
 * Add eps, Sqrt, Reciprocal or Div(1, .) (imported as ewdiv(1, .)), Mul by
 * x, Mul by the weight: the fuser makes that two kernels (the reduction,
 * then the element-wise rest) where one row kernel reads x once. The chain
 *   q = ewmul(x, x); m = reduce_mean(q) axes=[r-1] keepdims=1;
 *   a = ewadd(m, eps); s = sqrt(a); i = ewdiv(one, s); y = ewmul(x, i)
 *   [; z = ewmul(y, w)]
 * (operands of the adds and multiplies in either order; eps a weight of one
 * element >= 0, one a weight whose elements are all 1; w of shape [x's last
 * dim]; each intermediate read by the next alone and no graph output)
 * becomes layernorm(x[, w]) axis=r-1 eps=eps rms=1, named as z (or y). The
 * CPU executor computes the row in double, so results move by rounding
 * only.
 */
#include <stdlib.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

/* The node computing tensor t with operator op and one output, else -1. */
static int made_by(const ir_graph *g, int32_t t, ir_opcode op) {
  int n = g->tensors[t].kind == IR_T_VALUE ? g->tensors[t].node : -1;
  return n >= 0 && g->nodes[n].op == op && g->nodes[n].nout == 1 ? n : -1;
}

/* Weight t has known float32 values; *v its first, 1 when all are v. */
static int const_all(const ir_graph *g, int32_t t, float *v) {
  const ir_tensor *w = &g->tensors[t];
  if (w->kind != IR_T_WEIGHT || !w->data || w->dtype != IR_DT_F32)
    return 0;
  int64_t n = ir_shape_numel(&w->shape);
  const float *f = w->data;
  for (int64_t k = 1; k < n; k++)
    if (f[k] != f[0])
      return 0;
  *v = f[0];
  return n > 0;
}

/* The other input of binary node n (not t); -1 when both are t. */
static int32_t other(const ir_node *n, int32_t t) {
  if (n->in[0] == n->in[1])
    return -1;
  return n->in[0] == t ? n->in[1] : n->in[0];
}

/* Node i (the ewmul y = x * inv) ends an RMSNorm: its x into *x, eps into
 * *eps and the nodes q, m, a, s, inv into c[]; 1 when it does. */
static int chain(const ir_graph *g, const rewrite_index *ix, int i, int32_t *x,
                 float *eps, int *c) {
  const ir_node *y = &g->nodes[i];
  if (y->op != IR_OP_EWMUL || y->nin != 2 || y->in[0] == y->in[1])
    return 0;
  for (int side = 0; side < 2; side++) {
    int32_t inv = y->in[side], xx = y->in[1 - side];
    int di = made_by(g, inv, IR_OP_EWDIV), s = -1, a = -1, m = -1, q = -1;
    float one = 0;
    if (di < 0 || rewrite_sole_reader(ix, inv) != i ||
        !const_all(g, g->nodes[di].in[0], &one) || one != 1.0f)
      continue;
    if ((s = made_by(g, g->nodes[di].in[1], IR_OP_SQRT)) < 0 ||
        rewrite_sole_reader(ix, g->nodes[s].out[0]) != di)
      continue;
    if ((a = made_by(g, g->nodes[s].in[0], IR_OP_EWADD)) < 0 ||
        rewrite_sole_reader(ix, g->nodes[a].out[0]) != s)
      continue;
    const ir_node *an = &g->nodes[a];
    int ms = made_by(g, an->in[0], IR_OP_REDUCE_MEAN) >= 0 ? 0 : 1;
    int32_t e = an->in[1 - ms];
    if ((m = made_by(g, an->in[ms], IR_OP_REDUCE_MEAN)) < 0 ||
        rewrite_sole_reader(ix, an->in[ms]) != a || !const_all(g, e, eps) ||
        *eps < 0 || ir_shape_numel(&g->tensors[e].shape) != 1)
      continue;
    const ir_node *mn = &g->nodes[m];
    const ir_shape *xs = &g->tensors[xx].shape;
    if (mn->a.nlist != 1 || mn->a.list[0] != xs->rank - 1 || !mn->a.keepdims ||
        (q = made_by(g, mn->in[0], IR_OP_EWMUL)) < 0 ||
        rewrite_sole_reader(ix, mn->in[0]) != m)
      continue;
    const ir_node *qn = &g->nodes[q];
    if (qn->in[0] != xx || qn->in[1] != xx ||
        g->tensors[xx].dtype != IR_DT_F32 ||
        !ir_shape_eq(xs, &g->tensors[y->out[0]].shape))
      continue;
    *x = xx;
    c[0] = q, c[1] = m, c[2] = a, c[3] = s, c[4] = di;
    return 1;
  }
  return 0;
}

/* The ewmul z reading y (node i's output) alone with a weight vector w of
 * x's last dimension: z's node, w into *w; else -1. */
static int scale(const ir_graph *g, const rewrite_index *ix, int i, int32_t x,
                 int32_t *w) {
  int32_t y = g->nodes[i].out[0];
  int z = rewrite_sole_reader(ix, y);
  if (z < 0 || g->nodes[z].op != IR_OP_EWMUL || g->nodes[z].nin != 2 ||
      (*w = other(&g->nodes[z], y)) < 0)
    return -1;
  const ir_tensor *wt = &g->tensors[*w];
  const ir_shape *xs = &g->tensors[x].shape;
  return wt->dtype == IR_DT_F32 && wt->shape.rank == 1 &&
                 wt->shape.dim[0] == xs->dim[xs->rank - 1] &&
                 ir_shape_eq(xs, &g->tensors[g->nodes[z].out[0]].shape)
             ? z
             : -1;
}

/* Emits layernorm(x[, w]) rms=1 for the RMSNorm whose last node is z,
 * named as z's output. */
static base_status emit(rewrite_builder *b, int z, int32_t x, int32_t w,
                        float eps) {
  const ir_graph *g = b->g;
  const ir_node *zn = &g->nodes[z];
  ir_attrs a;
  ir_attrs_default(IR_OP_LAYERNORM, &a);
  a.axis = g->tensors[x].shape.rank - 1;
  a.eps = eps;
  a.count_include_pad = 1; /* rms (ir_ln_rms) */
  int32_t in[2] = {b->map[x], w >= 0 ? b->map[w] : -1};
  const char *name = g->tensors[zn->out[0]].name;
  int k =
      ir_add_node(b->h, IR_OP_LAYERNORM, in, w >= 0 ? 2 : 1, &a, &name, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  b->h->nodes[k].line = zn->line, b->h->nodes[k].col = zn->col;
  b->map[zn->out[0]] = b->h->nodes[k].out[0];
  return BASE_OK;
}

ir_graph *pass_form_rmsnorm(const ir_graph *g, int *count, base_diag *d) {
  rewrite_index ix;
  size_t n = (size_t)g->nnodes + 1;
  int *role = base_malloc(sizeof(int) * n); /* -1 copied, -2 dropped, -3
                                               emitted, >= 0: see below */
  int32_t *xs = base_malloc(sizeof(int32_t) * n),
          *ws = base_malloc(sizeof(int32_t) * n);
  float *eps = base_malloc(sizeof(float) * n);
  rewrite_builder b;
  *count = 0;
  if (!role || !xs || !ws || !eps || rewrite_index_build(g, &ix, d)) {
    free(role), free(xs), free(ws), free(eps);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  for (int i = 0; i < g->nnodes; i++)
    role[i] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    int32_t x, w = -1;
    float e;
    int c[5];
    if (role[i] != -1 || !chain(g, &ix, i, &x, &e, c))
      continue;
    int z = scale(g, &ix, i, x, &w);
    for (int k = 0; k < 5; k++)
      role[c[k]] = -2;
    if (z >= 0)
      role[i] = -2;
    else
      z = i, w = -1;
    role[z] = -3, xs[z] = x, ws[z] = w, eps[z] = e;
    ++*count;
  }
  rewrite_index_free(&ix);
  base_status st = rewrite_build_begin(&b, g, NULL, d);
  if (st) {
    free(role), free(xs), free(ws), free(eps);
    return NULL;
  }
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (role[i] == -3)
      st = emit(&b, i, xs[i], ws[i], eps[i]);
    else if (role[i] == -1)
      st = rewrite_build_copy(&b, i, NULL);
  }
  free(role), free(xs), free(ws), free(eps);
  return rewrite_build_finish(&b, st);
}
