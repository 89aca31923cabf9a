/* lower_att.c: the lower stage's attention family (lower.h): an attention
 * node reads q, k and v where their projection wrote them and writes its
 * result where the next matmul reads it (the row layout, heads= in
 * docs/graph-format.md), the transposes, reshapes, slices and splits
 * between them gone.
 *
 * Conditions:
 *   - the node in today's layout, q, k, v and its result of rank 4, not
 *     computed from weights alone;
 *   - its result read by one transpose perm=[0,2,1,3] alone ([B,S,H,E]):
 *     the node writes [B,S,H*E]; a reshape to that shape reading the
 *     transpose alone goes too, else the transpose becomes a reshape (a
 *     view) of the rows;
 *   - each of q, k and v, followed back through reshape, transpose, slice
 *     and split (each of which only renumbers elements), is a strided view
 *     of one tensor X whose rows ([B,S] or, with seqfirst, [S,B] of them)
 *     hold the heads' columns side by side: the element strides say so,
 *     checked step by step so that no index ever carries into another
 *     dimension (exact, whatever the shapes); a reshape of X to [B,S,C]
 *     is added where X has another shape;
 *   - q and k may each pass one multiplication by a scalar (numel 1) on the
 *     way (ViT's and DeiT's q * c and k * c), when the node has no s: s
 *     becomes their product, q k scaled after the product instead of
 *     before (the same value but for rounding);
 *   - the nodes passed on the way go only when nothing else reads them
 *     (other readers keep them).
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

/* A strided view of tensor base: element [i0..i3] at off + sum i_l st[l]
 * of base's contiguous storage. */
typedef struct view {
  int32_t base;
  int64_t off, dim[4], st[4];
  int32_t scale; /* a scalar passed on the way, or -1 */
} view;

/* One node's rewrite. */
typedef struct att_fit {
  int32_t x[3];   /* the tensors q, k, v read */
  int64_t col[3]; /* their column offsets */
  int32_t scale[2];
  int sf;              /* seqfirst */
  int64_t h, d, e;     /* heads and their widths */
  int32_t tr, rs, out; /* result transpose, reshape (or -1), its name */
  int32_t line_node;   /* the attention node */
} att_fit;

typedef struct plan {
  const ir_graph *g;
  int *reads;
  unsigned char *wonly;
  int32_t *reader;     /* per tensor: its one reader node, or -1 */
  att_fit *fit;        /* per node: the fits, by att_of */
  int32_t *att_of;     /* per node: its fit index, or -1 */
  unsigned char *gone; /* per node */
  unsigned char *cand; /* per node: passed by a view chain */
  int nfit;
} plan;

static void contiguous(const ir_shape *s, int64_t *cs) {
  int64_t m = 1;
  for (int k = s->rank - 1; k >= 0; k--)
    cs[k] = m, m *= s->dim[k];
}

/* v seen through node p (a transpose, slice or split; output slot o):
 * v's strides split into p's output dimensions without a carry, then
 * those dimensions mapped onto p's input. 0 where they do not split. */
static int through_move(const ir_graph *g, const ir_node *p, int o, view *v) {
  const ir_shape *ys = &g->tensors[p->out[o]].shape;
  const ir_shape *xs = &g->tensors[p->in[0]].shape;
  int r = ys->rank;
  int64_t cy[IR_MAX_RANK], cx[IR_MAX_RANK], ok[IR_MAX_RANK], ext[IR_MAX_RANK];
  int64_t start[IR_MAX_RANK] = {0}, c[4];
  int kl[4], src[IR_MAX_RANK];
  contiguous(ys, cy), contiguous(xs, cx);
  for (int k = 0; k < r; k++)
    ok[k] = v->off / cy[k] % ys->dim[k], ext[k] = 0, src[k] = k;
  if (p->op == IR_OP_TRANSPOSE)
    for (int k = 0; k < r; k++)
      src[k] = (int)p->a.list[k];
  else if (p->op == IR_OP_SLICE)
    for (int k = 0; k < r; k++)
      start[k] = p->a.list[k];
  else if (p->a.axis < 0 || p->a.axis >= r)
    return 0;
  else /* split */
    for (int j = 0; j < o; j++)
      start[p->a.axis] += p->a.list[j];
  for (int l = 0; l < 4; l++) {
    kl[l] = -1, c[l] = 0;
    if (v->dim[l] == 1)
      continue;
    for (int k = 0; k < r && kl[l] < 0; k++) /* the outermost it fits */
      if (ys->dim[k] > 1 && cy[k] <= v->st[l])
        kl[l] = k;
    if (kl[l] < 0 || v->st[l] % cy[kl[l]])
      return 0;
    c[l] = v->st[l] / cy[kl[l]];
    ext[kl[l]] += (v->dim[l] - 1) * c[l];
  }
  int64_t off = 0;
  for (int k = 0; k < r; k++) {
    if (ok[k] + ext[k] >= ys->dim[k])
      return 0;
    off += (ok[k] + start[src[k]]) * cx[src[k]];
  }
  for (int l = 0; l < 4; l++)
    v->st[l] = kl[l] < 0 ? 0 : c[l] * cx[src[kl[l]]];
  v->off = off;
  v->base = p->in[0];
  return 1;
}

/* The scalar operand of an ewmul (the other's shape its result's), or -1. */
static int scalar_of(const ir_graph *g, const ir_node *p, int *other) {
  for (int k = 0; k < 2; k++) {
    const ir_tensor *c = &g->tensors[p->in[k]];
    if (ir_shape_numel(&c->shape) == 1 &&
        ir_shape_eq(&g->tensors[p->in[!k]].shape,
                    &g->tensors[p->out[0]].shape)) {
      *other = p->in[!k];
      return p->in[k];
    }
  }
  return -1;
}

/* Follows tensor t (shape [4]) back through the moves (and, where scale,
 * one scalar product) to the first other producer. */
static view trace(plan *pl, int32_t t, int scale, int mark) {
  const ir_graph *g = pl->g;
  view v = {t, 0, {0}, {0}, -1};
  const ir_shape *s = &g->tensors[t].shape;
  for (int l = 0; l < 4; l++)
    v.dim[l] = s->dim[l];
  contiguous(s, v.st);
  for (;;) {
    const ir_tensor *b = &g->tensors[v.base];
    if (b->kind != IR_T_VALUE || pl->wonly[b->node])
      return v;
    const ir_node *p = &g->nodes[b->node];
    view nx = v;
    int other;
    if (p->op == IR_OP_RESHAPE) {
      nx.base = p->in[0];
    } else if (p->op == IR_OP_TRANSPOSE || p->op == IR_OP_SLICE ||
               p->op == IR_OP_SPLIT) {
      if (!through_move(g, p, b->slot, &nx))
        return v;
    } else if (p->op == IR_OP_EWMUL && scale && v.scale < 0 &&
               (nx.scale = scalar_of(g, p, &other)) >= 0) {
      nx.base = other;
    } else {
      return v;
    }
    if (mark)
      pl->cand[b->node] = 1;
    v = nx;
  }
}

/* Whether view v (dims [b, h, r, c], c the head's columns) is rows of its
 * base with heads side by side: sets *col; bit 0 of the result: [B,R,C]
 * rows, bit 1: [R,B,C]. */
static int rows_fit(const ir_graph *g, const view *v, int64_t *col) {
  const ir_shape *x = &g->tensors[v->base].shape;
  if (x->rank < 1)
    return 0;
  int64_t cc = x->dim[x->rank - 1], n = ir_shape_numel(x);
  int64_t b = v->dim[0], h = v->dim[1], r = v->dim[2], w = v->dim[3];
  if ((w > 1 && v->st[3] != 1) || (h > 1 && v->st[1] != w) || v->off >= cc ||
      v->off + h * w > cc || n != b * r * cc)
    return 0;
  *col = v->off;
  int64_t sb = v->st[0], sr = v->st[2];
  int fit = 0;
  if ((b == 1 || sb == r * cc) && (r == 1 || sr == cc))
    fit |= 1;
  if ((b == 1 || sb == cc) && (r == 1 || sr == b * cc))
    fit |= 2;
  return fit;
}

/* k's view [b, h, d, t] as [b, h, t, d]. */
static view k_rows(view v) {
  int64_t d = v.dim[2], s = v.st[2];
  v.dim[2] = v.dim[3], v.st[2] = v.st[3];
  v.dim[3] = d, v.st[3] = s;
  return v;
}

/* The result side of attention node i: its transpose and reshape. */
static int fit_result(plan *pl, const ir_node *n, att_fit *f) {
  const ir_graph *g = pl->g;
  int y = n->out[0];
  f->tr = pl->reader[y], f->rs = -1;
  if (f->tr < 0 || pl->reads[y] != 1)
    return 0;
  const ir_node *t = &g->nodes[f->tr];
  static const int64_t want[4] = {0, 2, 1, 3};
  if (t->op != IR_OP_TRANSPOSE || memcmp(t->a.list, want, sizeof want) ||
      pl->wonly[f->tr])
    return 0;
  const ir_shape *ys = &g->tensors[y].shape;
  int tt = t->out[0], rd = pl->reader[tt];
  ir_shape rows = {3, {ys->dim[0], ys->dim[2], ys->dim[1] * ys->dim[3]}};
  if (rd >= 0 && pl->reads[tt] == 1 && g->nodes[rd].op == IR_OP_RESHAPE &&
      ir_shape_eq(&g->tensors[g->nodes[rd].out[0]].shape, &rows))
    f->rs = rd;
  f->out = f->rs >= 0 ? g->nodes[rd].out[0] : -1;
  return 1;
}

/* Whether attention node i lowers; fills f. */
static int fit_node(plan *pl, int i, att_fit *f) {
  const ir_graph *g = pl->g;
  const ir_node *n = &g->nodes[i];
  if (n->op != IR_OP_ATTENTION || n->a.groups > 0 || pl->wonly[i] ||
      g->tensors[n->out[0]].shape.rank != 4)
    return 0;
  for (int k = 0; k < 3; k++)
    if (g->tensors[n->in[k]].shape.rank != 4)
      return 0;
  if (!fit_result(pl, n, f))
    return 0;
  int fits = 3;
  for (int pass = 0; pass < 2; pass++) { /* with the scales, then without */
    int scale = pass == 0 && n->nin == 3;
    fits = 3;
    view v[3];
    for (int k = 0; k < 3; k++) {
      v[k] = trace(pl, n->in[k], scale && k < 2, 0);
      view rv = k == 1 ? k_rows(v[k]) : v[k];
      fits &= rows_fit(g, &rv, &f->col[k]);
      f->x[k] = v[k].base;
    }
    if (!fits && pass == 0 && (v[0].scale >= 0 || v[1].scale >= 0))
      continue;
    if (!fits)
      return 0;
    f->scale[0] = v[0].scale, f->scale[1] = v[1].scale;
    for (int k = 0; k < 3; k++)
      trace(pl, n->in[k], scale && k < 2, 1);
    break;
  }
  const ir_shape *q = &g->tensors[n->in[0]].shape;
  f->h = q->dim[1], f->d = q->dim[3];
  f->e = g->tensors[n->in[2]].shape.dim[3];
  /* seqfirst where X is stored [S,B,C] already (no reshape), else rows */
  const ir_shape *x = &g->tensors[f->x[0]].shape;
  int sq = fits & 2 && x->rank == 3 && x->dim[0] == q->dim[2] &&
           x->dim[1] == q->dim[0];
  f->sf = !(fits & 1) || sq;
  f->line_node = i;
  return 1;
}

/* A name "<base>.<what>" used by neither g nor h. */
static const char *fresh(const ir_graph *g, const ir_graph *h, const char *base,
                         const char *what, char *buf, size_t n) {
  snprintf(buf, n, "%s.%s", base, what);
  for (int k = 1; ir_find_tensor(g, buf) >= 0 || ir_find_tensor(h, buf) >= 0;
       k++)
    snprintf(buf, n, "%s.%s%d", base, what, k);
  return buf;
}

/* Adds op(in) a named "<base>.<what>" to h: its output tensor, or -1. */
static int add(ir_graph *h, const ir_graph *g, const ir_node *at, ir_opcode op,
               const int32_t *in, int nin, const ir_attrs *a, const char *base,
               const char *what, base_diag *d) {
  char buf[512];
  const char *nm = fresh(g, h, base, what, buf, sizeof buf);
  int m = ir_add_node(h, op, in, nin, a, &nm, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = at->line, h->nodes[m].col = at->col;
  return h->nodes[m].out[0];
}

static int add_reshape(ir_graph *h, const ir_graph *g, const ir_node *at,
                       int32_t x, const int64_t *dims, int rank,
                       const char *base, const char *what, base_diag *d) {
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = rank;
  if (rank) /* [] (a scalar): no dimensions */
    memcpy(a.list, dims, sizeof(int64_t) * (size_t)rank);
  return add(h, g, at, IR_OP_RESHAPE, &x, 1, &a, base, what, d);
}

/* The new s: the product of the scalars passed (as []), or -1. */
static int emit_scale(ir_graph *h, const ir_graph *g, const ir_node *n,
                      const att_fit *f, const int32_t *map, base_diag *d) {
  int32_t s[2];
  int ns = 0;
  const char *y = g->tensors[n->out[0]].name;
  for (int k = 0; k < 2; k++) {
    if (f->scale[k] < 0)
      continue;
    s[ns] = map[f->scale[k]];
    if (k && ns && f->scale[0] == f->scale[1]) { /* one scalar, squared */
      s[ns] = s[0];
    } else if (h->tensors[s[ns]].shape.rank != 0)
      s[ns] = add_reshape(h, g, n, s[ns], NULL, 0, y, "scalar", d);
    if (s[ns++] < 0)
      return -2;
  }
  if (ns < 2)
    return ns ? s[0] : -1;
  ir_attrs a;
  ir_attrs_default(IR_OP_EWMUL, &a);
  int t = add(h, g, n, IR_OP_EWMUL, s, 2, &a, y, "scale", d);
  return t < 0 ? -2 : t;
}

/* Emits attention node n in the row layout (f); 0 or -1. */
static int emit_att(const plan *pl, ir_graph *h, const ir_node *n,
                    const att_fit *f, int32_t *map, base_diag *d) {
  const ir_graph *g = pl->g;
  const ir_shape *q = &g->tensors[n->in[0]].shape;
  const ir_shape *k = &g->tensors[n->in[1]].shape;
  int64_t b = q->dim[0];
  int32_t in[5];
  for (int j = 0; j < 3; j++) {
    const ir_tensor *x = &g->tensors[f->x[j]];
    int64_t r = j ? k->dim[3] : q->dim[2];
    int64_t want[3] = {f->sf ? r : b, f->sf ? b : r,
                       x->shape.dim[x->shape.rank - 1]};
    ir_shape ws = {3, {want[0], want[1], want[2]}};
    in[j] = map[f->x[j]];
    for (int p = 0; p < j && !ir_shape_eq(&x->shape, &ws); p++)
      if (f->x[p] == f->x[j]) /* the reshape made for an earlier operand */
        in[j] = in[p];
    if (!ir_shape_eq(&h->tensors[in[j]].shape, &ws) &&
        (in[j] = add_reshape(h, g, n, in[j], want, 3, x->name, "rows", d)) < 0)
      return -1;
  }
  int nin = 3, s = emit_scale(h, g, n, f, map, d);
  if (s == -2)
    return -1;
  if (s >= 0)
    in[nin++] = s;
  for (int j = 3; j < n->nin; j++)
    in[nin++] = map[n->in[j]];
  ir_attrs a = n->a;
  a.groups = (int32_t)f->h, a.axis = f->sf;
  a.nlist2 = 2, a.list2[0] = f->d, a.list2[1] = f->e;
  a.nlist = 3;
  memcpy(a.list, f->col, sizeof f->col);
  char buf[512];
  const char *nm = f->out >= 0 ? g->tensors[f->out].name
                               : fresh(g, h, g->tensors[n->out[0]].name, "rows",
                                       buf, sizeof buf);
  int m = ir_add_node(h, IR_OP_ATTENTION, in, nin, &a, &nm, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = n->line, h->nodes[m].col = n->col;
  /* the transpose's place: its result from the rows (a view) */
  map[n->out[0]] = h->nodes[m].out[0];
  if (f->out >= 0)
    map[f->out] = h->nodes[m].out[0];
  return 0;
}

/* ir_rebuild's step. */
static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  const plan *pl = u;
  const ir_node *n = &g->nodes[i];
  if (pl->gone[i])
    return 0;
  if (pl->att_of[i] >= 0)
    return emit_att(pl, h, n, &pl->fit[pl->att_of[i]], map, d);
  for (int j = 0; j < pl->nfit; j++) { /* a transpose kept as a view */
    const att_fit *f = &pl->fit[j];
    if (f->tr != i)
      continue;
    const ir_shape *t = &g->tensors[n->out[0]].shape;
    const char *nm = g->tensors[n->out[0]].name;
    ir_attrs a;
    ir_attrs_default(IR_OP_RESHAPE, &a);
    a.nlist = t->rank;
    memcpy(a.list, t->dim, sizeof(int64_t) * (size_t)t->rank);
    int32_t x = map[n->in[0]];
    int m = ir_add_node(h, IR_OP_RESHAPE, &x, 1, &a, &nm, d);
    if (m < 0)
      return -1;
    h->nodes[m].line = n->line, h->nodes[m].col = n->col;
    map[n->out[0]] = h->nodes[m].out[0];
    return 0;
  }
  return ir_rebuild_copy(h, g, i, map, d) < 0 ? -1 : 0;
}

/* Marks gone the attention nodes' result transposes and reshapes, and the
 * nodes passed on the way that nothing reads any more. */
static void sweep(plan *pl) {
  const ir_graph *g = pl->g;
  for (int j = 0; j < pl->nfit; j++) {
    const att_fit *f = &pl->fit[j];
    const ir_node *n = &g->nodes[f->line_node];
    for (int k = 0; k < 3; k++)
      pl->reads[n->in[k]]--, pl->reads[f->x[k]]++;
    if (f->rs >= 0)
      pl->gone[f->tr] = pl->gone[f->rs] = 1;
    for (int k = 0; k < 2; k++) /* the scalars now read by the scale */
      if (f->scale[k] >= 0)
        pl->reads[f->scale[k]]++;
  }
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const ir_node *n = &g->nodes[i];
    int dead = pl->cand[i];
    for (int k = 0; dead && k < n->nout; k++)
      dead = pl->reads[n->out[k]] == 0;
    if (!dead)
      continue;
    pl->gone[i] = 1;
    for (int k = 0; k < n->nin; k++)
      pl->reads[n->in[k]]--;
  }
}

ir_graph *lower_att(const ir_graph *g, lower_stats *st, base_diag *d) {
  size_t nt = (size_t)g->ntensors + 1, nn = (size_t)g->nnodes + 1;
  plan p = {.g = g,
            .reads = ir_read_counts(g),
            .wonly = base_calloc(nn, 1),
            .reader = base_malloc(nt * sizeof(int32_t)),
            .fit = base_malloc(nn * sizeof(att_fit)),
            .att_of = base_malloc(nn * sizeof(int32_t)),
            .gone = base_calloc(nn, 1),
            .cand = base_calloc(nn, 1)};
  ir_graph *h = NULL;
  if (!p.reads || !p.wonly || !p.reader || !p.fit || !p.att_of || !p.gone ||
      !p.cand) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  memset(p.reader, 0xff, nt * sizeof(int32_t));
  memset(p.att_of, 0xff, nn * sizeof(int32_t));
  ir_weight_only(g, p.wonly);
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      p.reader[g->nodes[i].in[k]] = i;
  for (int i = 0; i < g->nnodes; i++)
    if (fit_node(&p, i, &p.fit[p.nfit]))
      p.att_of[i] = p.nfit++;
  sweep(&p);
  h = p.nfit ? ir_rebuild(g, rebuild_node, &p, d) : ir_graph_clone_shared(g);
  if (!h && !p.nfit)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->attention += p.nfit;
out:
  free(p.reads), free(p.wonly), free(p.reader), free(p.fit), free(p.att_of);
  free(p.gone), free(p.cand);
  return h;
}
