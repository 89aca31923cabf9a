/* lower_att.c: the lower stage's attention family (lower.h): an attention
 * node reads q, k and v where their projection wrote them and writes its
 * result where the next matmul reads it (the row layout, heads= in
 * docs/graph-format.md), the transposes, reshapes, slices and splits
 * between them gone.
 *
 * Conditions:
 *   - the node in today's layout, of rank 3 or more (its leading
 *     dimensions the batch: [B,H] as BERT's, or [B*G*H] as MaxViT's
 *     windows and heads merged), not computed from weights alone;
 *   - each of q, k and v, followed back through reshape, transpose, slice
 *     and split (each of which only renumbers elements), is a strided view
 *     of one tensor X whose rows ([B,S] or, with seqfirst, [S,B] of them)
 *     hold the heads' columns side by side: the element strides say so,
 *     checked step by step so that no index ever carries into another
 *     dimension (a dimension spanning several whole ones splits into
 *     sub-dimensions there; exact, whatever the shapes); the heads are the
 *     batch's innermost walk (stride D in q), the rest one walk of rows; X's
 *     storage is taken as B*S rows whatever its shape (Llama's rotary sum
 *     over [B,S,H,D]), and a reshape of X to [B,S,C] is added where X has
 *     another shape;
 *   - its result, followed forward through reshapes and transposes each
 *     read by the next alone, reaches a tensor holding the rows [B,S,H*E]
 *     (the furthest one is taken: the node writes the rows, a reshape of
 *     them gives that tensor, the moves on the way go);
 *   - its bias, followed back through a reshape of the whole scores and a
 *     product with ones (the broadcast the fusion pass makes at load),
 *     broadcasts to [B,H,S,T] along all or none of each group's
 *     dimensions;
 *   - q and k may each pass one multiplication by a scalar (numel 1) on the
 *     way (ViT's and DeiT's q * c and k * c, MaxViT's k * c): s becomes
 *     their product (with the node's s), q k scaled after the product
 *     instead of before (the same value but for rounding);
 *   - the nodes passed on the way go only when nothing else reads them
 *     (other readers keep them).
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

/* The most sub-dimensions a view holds (each of the node's dimensions
 * split where it spans several of a tensor's). */
#define VMAX 16

/* A strided view of tensor base: the node's element [i0, ..., i(r-1)] at
 * off + sum over the sub-dimensions l of j_l st[l] of base's contiguous
 * storage, where the sub-dimensions of the node's dimension grp[l] (in
 * order, outermost first) number its index i_grp row-major (j_l below
 * dim[l]). */
typedef struct view {
  int32_t base;
  int64_t off;
  int n;
  int64_t dim[VMAX], st[VMAX];
  signed char grp[VMAX];
  int32_t scale; /* a scalar passed on the way, or -1 */
} view;

/* One operand as the row layout reads it: [b, h, rows, cols]. */
typedef struct rows4 {
  int32_t base;
  int64_t off, dim[4], st[4];
} rows4;

/* One node's rewrite. */
typedef struct att_fit {
  int32_t x[3];   /* the tensors q, k, v read */
  int64_t col[3]; /* their column offsets */
  int32_t scale[2];
  int sf;              /* seqfirst */
  int64_t bb, h, s, t; /* batch, heads, q's and k's rows */
  int64_t d, e;        /* the heads' widths */
  int32_t out;         /* the tensor the rows become (its name) */
  int32_t bsrc;        /* the bias read (or -1) */
  ir_shape bshape;     /* its shape as the node reads it */
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

/* v, a view over the contiguous storage of shape fr, made a view over
 * that of shape to, where dimension k of fr is dimension map[k] of to,
 * starting at start[k] there: each sub-dimension's strides fall in one
 * dimension of fr without a carry, or it splits into several that do (a
 * dimension spanning whole dimensions of fr); 0 where neither. */
static int remap(view *v, const ir_shape *fr, const ir_shape *to,
                 const int *map, const int64_t *start) {
  int r = fr->rank;
  int64_t cf[IR_MAX_RANK], ct[IR_MAX_RANK], ok[IR_MAX_RANK], ext[IR_MAX_RANK];
  contiguous(fr, cf), contiguous(to, ct);
  for (int k = 0; k < r; k++)
    ok[k] = v->off / cf[k] % fr->dim[k], ext[k] = 0;
  view w = *v;
  w.n = 0;
  for (int l = 0; l < v->n; l++) {
    int64_t e = v->dim[l], s = v->st[l], pe[VMAX], pc[VMAX];
    int pk[VMAX], np = 0; /* its parts, innermost first */
    while (e > 1) {
      int k = -1;
      for (int j = 0; j < r && k < 0; j++) /* the outermost it fits */
        if (fr->dim[j] > 1 && cf[j] <= s)
          k = j;
      if (k < 0 || s % cf[k] || np == VMAX)
        return 0;
      int64_t c = s / cf[k], m = fr->dim[k] / c;
      if (ok[k] + ext[k] + (e - 1) * c < fr->dim[k])
        m = e; /* the rest fits in dimension k */
      else if (ok[k] || ext[k] || fr->dim[k] % c || m < 2 || e % m)
        return 0;
      pe[np] = m, pc[np] = c, pk[np++] = k;
      ext[k] += (m - 1) * c;
      e /= m, s *= m;
    }
    if (w.n + np > VMAX)
      return 0;
    for (int j = np - 1; j >= 0; j--, w.n++)
      w.dim[w.n] = pe[j], w.st[w.n] = pc[j] * ct[map[pk[j]]],
      w.grp[w.n] = v->grp[l];
  }
  w.off = 0;
  for (int k = 0; k < r; k++)
    w.off += (ok[k] + start[k]) * ct[map[k]];
  *v = w;
  return 1;
}

/* v seen through node p (a transpose, slice or split; output slot o):
 * a view of p's input. 0 where its strides do not map. */
static int through_move(const ir_graph *g, const ir_node *p, int o, view *v) {
  const ir_shape *ys = &g->tensors[p->out[o]].shape;
  const ir_shape *xs = &g->tensors[p->in[0]].shape;
  int r = ys->rank, map[IR_MAX_RANK];
  int64_t start[IR_MAX_RANK] = {0};
  for (int k = 0; k < r; k++)
    map[k] = k;
  if (p->op == IR_OP_TRANSPOSE)
    for (int k = 0; k < r; k++)
      map[k] = (int)p->a.list[k];
  else if (p->op == IR_OP_SLICE)
    for (int k = 0; k < r; k++)
      start[k] = p->a.list[k];
  else if (p->a.axis < 0 || p->a.axis >= r)
    return 0;
  else /* split */
    for (int j = 0; j < o; j++)
      start[p->a.axis] += p->a.list[j];
  if (!remap(v, ys, xs, map, start))
    return 0;
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

/* Tensor t's contiguous view, its dimensions numbered in order. */
static view view_of(const ir_graph *g, int32_t t) {
  const ir_shape *s = &g->tensors[t].shape;
  view v = {.base = t, .n = s->rank, .scale = -1};
  contiguous(s, v.st);
  for (int l = 0; l < s->rank; l++)
    v.dim[l] = s->dim[l], v.grp[l] = (signed char)l;
  return v;
}

/* Follows tensor t back through the moves (and, where scale, one scalar
 * product) to the first other producer. */
static view trace(plan *pl, int32_t t, int scale, int mark) {
  const ir_graph *g = pl->g;
  view v = view_of(g, t);
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

/* Sub-dimensions of v's groups [g0, g1) in order, merged where one
 * strided walk: n of them into e[] and s[]. */
static int collect(const view *v, int g0, int g1, int64_t *e, int64_t *s) {
  int n = 0;
  for (int l = 0; l < v->n; l++) {
    if (v->grp[l] < g0 || v->grp[l] >= g1 || v->dim[l] == 1)
      continue;
    if (n && s[n - 1] == v->st[l] * v->dim[l])
      e[n - 1] *= v->dim[l], s[n - 1] = v->st[l];
    else
      e[n] = v->dim[l], s[n++] = v->st[l];
  }
  return n;
}

/* The heads of q's view (rank r, head width w): the innermost of its
 * leading (batch) dimensions' walks where it steps by w, else 1. */
static int64_t heads_of(const view *v, int r, int64_t w) {
  int64_t e[VMAX], s[VMAX];
  int n = collect(v, 0, r - 2, e, s);
  return n && s[n - 1] == w ? e[n - 1] : 1;
}

/* v (rank r) as [b, h, rows, cols] with h heads, the rows and columns its
 * groups rg and cg; 0 where the leading dimensions are not one walk of b
 * outside one of h, or rows or columns not one walk each. */
static int as_rows4(const view *v, int r, int64_t h, int rg, int cg, rows4 *o) {
  int64_t be[VMAX], bs[VMAX], re[VMAX], rs[VMAX], ce[VMAX], cs[VMAX];
  int nb = collect(v, 0, r - 2, be, bs);
  int nr = collect(v, rg, rg + 1, re, rs), nc = collect(v, cg, cg + 1, ce, cs);
  int64_t sh = 0;
  if (nr > 1 || nc > 1)
    return 0;
  if (h > 1) {
    if (!nb || be[nb - 1] % h)
      return 0;
    sh = bs[nb - 1];
    if ((be[nb - 1] /= h) == 1)
      nb--;
    else
      bs[nb - 1] *= h;
  }
  if (nb > 1)
    return 0;
  *o = (rows4){v->base,
               v->off,
               {nb ? be[0] : 1, h, nr ? re[0] : 1, nc ? ce[0] : 1},
               {nb ? bs[0] : 0, sh, nr ? rs[0] : 0, nc ? cs[0] : 0}};
  return 1;
}

/* Whether view v (dims [b, h, r, c], c the head's columns) is rows of its
 * base with heads side by side: sets *col; bit 0 of the result: [B,R,C]
 * rows, bit 1: [R,B,C]. The rows are the base's storage in b * r equal
 * parts, whatever its shape (Llama's rotary output [B,S,H,D] holds the
 * rows [B,S,H*D]). */
static int rows_fit(const ir_graph *g, const rows4 *v, int64_t *col) {
  int64_t n = ir_shape_numel(&g->tensors[v->base].shape);
  int64_t b = v->dim[0], h = v->dim[1], r = v->dim[2], w = v->dim[3];
  if (n % (b * r))
    return 0;
  int64_t cc = n / (b * r);
  if ((w > 1 && v->st[3] != 1) || (h > 1 && v->st[1] != w) || v->off >= cc ||
      v->off + h * w > cc)
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

/* Whether the result's view v (groups b, h, s, e) is the rows [b, s, h*e]
 * of its base. */
static int rows_out(const view *v, const att_fit *f) {
  const int64_t want[4] = {f->s * f->h * f->e, f->e, f->h * f->e, 1};
  if (v->off)
    return 0;
  for (int k = 0; k < 4; k++) {
    int64_t e[VMAX], s[VMAX];
    int n = collect(v, k, k + 1, e, s);
    if (n > 1 || (n && s[0] != want[k]))
      return 0;
  }
  return 1;
}

/* The result side of attention node n: the tensor f->out furthest along
 * the reshapes and transposes reading it (each read by the next alone)
 * that holds the rows [b, s, h*e]; 0 where none does. */
static int fit_result(plan *pl, const ir_node *n, att_fit *f) {
  const ir_graph *g = pl->g;
  int32_t t = n->out[0];
  view v = {.base = t, .n = 4, .scale = -1};
  const int64_t dim[4] = {f->bb, f->h, f->s, f->e};
  for (int k = 0; k < 4; k++)
    v.dim[k] = dim[k], v.grp[k] = (signed char)k;
  v.st[3] = 1, v.st[2] = f->e, v.st[1] = f->s * f->e, v.st[0] = v.st[1] * f->h;
  f->out = rows_out(&v, f) ? t : -1;
  for (;;) {
    int rd = pl->reader[t];
    if (rd < 0 || pl->reads[t] != 1 || pl->wonly[rd])
      break;
    const ir_node *p = &g->nodes[rd];
    const ir_shape *xs = &g->tensors[t].shape;
    if (p->op == IR_OP_TRANSPOSE) {
      int map[IR_MAX_RANK];
      int64_t start[IR_MAX_RANK] = {0};
      for (int j = 0; j < xs->rank; j++)
        map[p->a.list[j]] = j;
      if (!remap(&v, xs, &g->tensors[p->out[0]].shape, map, start))
        break;
    } else if (p->op != IR_OP_RESHAPE) {
      break;
    }
    t = v.base = p->out[0];
    if (rows_out(&v, f))
      f->out = t;
  }
  return f->out >= 0;
}

/* Whether the bias b of a node whose scores are sc broadcasts to
 * [bb, h, S, T] once its leading dimensions are grouped as bb then h:
 * followed back through a reshape of the whole scores and a product with
 * ones (the broadcast made at load), sets f->bsrc and f->bshape. */
static int fit_bias(plan *pl, int32_t b, const ir_shape *sc, att_fit *f) {
  const ir_graph *g = pl->g;
  ir_shape full = *sc;
  int32_t t = b;
  for (;;) { /* t broadcasts to full */
    const ir_tensor *x = &g->tensors[t];
    if (x->kind != IR_T_VALUE || !ir_shape_eq(&x->shape, &full))
      break;
    const ir_node *p = &g->nodes[x->node];
    int other;
    if (p->op == IR_OP_RESHAPE) {
      full = g->tensors[p->in[0]].shape;
      t = p->in[0];
    } else if (p->op == IR_OP_EWMUL) {
      int ones = -1;
      for (int k = 0; k < 2 && ones < 0; k++) {
        const ir_tensor *o = &g->tensors[p->in[k]];
        if (o->kind == IR_T_VALUE && g->nodes[o->node].op == IR_OP_CONST_ONES &&
            ir_shape_eq(&o->shape, &full))
          ones = o->node, other = p->in[!k];
      }
      if (ones < 0)
        break;
      pl->cand[ones] = 1;
      t = other;
    } else {
      break;
    }
    pl->cand[x->node] = 1;
  }
  const ir_shape *bs = &g->tensors[t].shape;
  int r = full.rank, lead = r - 2, hb = lead;
  if (r < 2 || full.dim[r - 2] != f->s || full.dim[r - 1] != f->t ||
      bs->rank > r)
    return 0;
  for (int64_t p = 1; p < f->h && hb > 0;) /* the heads: inner dimensions */
    p *= full.dim[--hb];
  int64_t got = 1;
  for (int j = hb; j < lead; j++)
    got *= full.dim[j];
  if (got != f->h)
    return 0;
  int grp[IR_MAX_RANK], use[4] = {0, 0, 0, 0}, bc[4] = {0, 0, 0, 0};
  for (int j = 0; j < r; j++) {
    grp[j] = j < hb ? 0 : j < lead ? 1 : j - lead + 2;
    int i = j - (r - bs->rank);
    if (full.dim[j] == 1)
      continue;
    if (i >= 0 && bs->dim[i] != 1)
      use[grp[j]] = 1;
    else
      bc[grp[j]] = 1;
  }
  const int64_t want[4] = {f->bb, f->h, f->s, f->t};
  f->bshape = (ir_shape){4, {1, 1, 1, 1}};
  for (int k = 0; k < 4; k++) {
    if (use[k] && bc[k])
      return 0; /* broadcast along some of a group's dimensions only */
    if (use[k])
      f->bshape.dim[k] = want[k];
  }
  f->bsrc = t;
  return ir_shape_numel(&f->bshape) == ir_shape_numel(bs);
}

/* Whether attention node i lowers; fills f. */
static int fit_node(plan *pl, int i, att_fit *f) {
  const ir_graph *g = pl->g;
  const ir_node *n = &g->nodes[i];
  int r = g->tensors[n->out[0]].shape.rank;
  if (n->op != IR_OP_ATTENTION || n->a.groups > 0 || pl->wonly[i] || r < 3 ||
      pl->reads[n->out[0]] != 1)
    return 0;
  const ir_shape *q = &g->tensors[n->in[0]].shape;
  f->s = q->dim[r - 2], f->d = q->dim[r - 1];
  f->t = g->tensors[n->in[1]].shape.dim[r - 1];
  f->e = g->tensors[n->in[2]].shape.dim[r - 1];
  int fits = 3;
  for (int pass = 0; pass < 2; pass++) { /* with the scales, then without */
    int scale = pass == 0;
    fits = 3;
    view v[3];
    for (int k = 0; k < 3; k++)
      v[k] = trace(pl, n->in[k], scale && k < 2, 0);
    f->h = heads_of(&v[0], r, f->d);
    f->bb = ir_shape_numel(q) / (f->s * f->d * f->h);
    for (int k = 0; k < 3; k++) {
      rows4 rv; /* k [.., D, T]: its rows are its last dimension */
      fits &= as_rows4(&v[k], r, f->h, k == 1 ? r - 1 : r - 2,
                       k == 1 ? r - 2 : r - 1, &rv)
                  ? rows_fit(g, &rv, &f->col[k])
                  : 0;
      f->x[k] = v[k].base;
    }
    if (!fits && pass == 0 && (v[0].scale >= 0 || v[1].scale >= 0))
      continue;
    if (!fits)
      return 0;
    f->scale[0] = v[0].scale, f->scale[1] = v[1].scale;
    break;
  }
  f->bsrc = -1;
  if (!fit_result(pl, n, f))
    return 0;
  if (n->nin == 5) {
    ir_shape sc = *q;
    sc.dim[r - 1] = f->t;
    if (!fit_bias(pl, n->in[4], &sc, f))
      return 0;
  }
  for (int k = 0; k < 3; k++)
    trace(pl, n->in[k], f->scale[k < 2 ? k : 0] >= 0 && k < 2, 1);
  /* seqfirst where X is stored [S,B,C] already (no reshape), else rows */
  const ir_shape *x = &g->tensors[f->x[0]].shape;
  int sq = fits & 2 && x->rank == 3 && x->dim[0] == f->s && x->dim[1] == f->bb;
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

/* The new s: the product of the node's s and the scalars passed (as []),
 * or -1; -2 on failure. */
static int emit_scale(ir_graph *h, const ir_graph *g, const ir_node *n,
                      const att_fit *f, const int32_t *map, base_diag *d) {
  int32_t s[3];
  int ns = 0, qs = -1;
  const char *y = g->tensors[n->out[0]].name;
  if (n->nin >= 4)
    s[ns++] = map[n->in[3]];
  for (int k = 0; k < 2; k++) {
    if (f->scale[k] < 0)
      continue;
    if (k && qs >= 0 && f->scale[0] == f->scale[1]) /* one scalar, squared */
      s[ns] = s[qs];
    else if (h->tensors[(s[ns] = map[f->scale[k]])].shape.rank != 0)
      s[ns] = add_reshape(h, g, n, s[ns], NULL, 0, y, "scalar", d);
    if (s[ns] < 0)
      return -2;
    if (!k)
      qs = ns;
    ns++;
  }
  ir_attrs a;
  ir_attrs_default(IR_OP_EWMUL, &a);
  for (int k = 1; k < ns; k++)
    if ((s[0] = add(h, g, n, IR_OP_EWMUL, (int32_t[]){s[0], s[k]}, 2, &a, y,
                    "scale", d)) < 0)
      return -2;
  return ns ? s[0] : -1;
}

/* Emits attention node n in the row layout (f); 0 or -1. */
static int emit_att(const plan *pl, ir_graph *h, const ir_node *n,
                    const att_fit *f, int32_t *map, base_diag *d) {
  const ir_graph *g = pl->g;
  int32_t in[5];
  for (int j = 0; j < 3; j++) {
    const ir_tensor *x = &g->tensors[f->x[j]];
    int64_t r = j ? f->t : f->s;
    int64_t want[3] = {f->sf ? r : f->bb, f->sf ? f->bb : r,
                       ir_shape_numel(&x->shape) / (f->bb * r)};
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
  if (f->bsrc >= 0) {
    const ir_tensor *b = &g->tensors[f->bsrc];
    in[nin] = map[f->bsrc];
    if (!ir_shape_eq(&b->shape, &f->bshape) &&
        (in[nin] = add_reshape(h, g, n, in[nin], f->bshape.dim, 4, b->name,
                               "heads", d)) < 0)
      return -1;
    nin++;
  }
  ir_attrs a = n->a;
  a.groups = (int32_t)f->h, a.axis = f->sf;
  a.nlist2 = 2, a.list2[0] = f->d, a.list2[1] = f->e;
  a.nlist = 3;
  memcpy(a.list, f->col, sizeof f->col);
  const ir_tensor *o = &g->tensors[f->out];
  ir_shape rows = {3, {f->bb, f->s, f->h * f->e}};
  int same = ir_shape_eq(&o->shape, &rows);
  char buf[512];
  const char *nm =
      same ? o->name : fresh(g, h, o->name, "rows", buf, sizeof buf);
  int m = ir_add_node(h, IR_OP_ATTENTION, in, nin, &a, &nm, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = n->line, h->nodes[m].col = n->col;
  int32_t y = h->nodes[m].out[0];
  if (!same) { /* the tensor the rows become, a view of them */
    ir_attrs ra;
    ir_attrs_default(IR_OP_RESHAPE, &ra);
    ra.nlist = o->shape.rank;
    memcpy(ra.list, o->shape.dim, sizeof(int64_t) * (size_t)o->shape.rank);
    nm = o->name;
    if ((m = ir_add_node(h, IR_OP_RESHAPE, &y, 1, &ra, &nm, d)) < 0)
      return -1;
    h->nodes[m].line = n->line, h->nodes[m].col = n->col;
  }
  map[f->out] = h->nodes[m].out[0];
  return 0;
}

/* ir_rebuild's step. */
static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  const plan *pl = u;
  if (pl->gone[i])
    return 0;
  if (pl->att_of[i] >= 0)
    return emit_att(pl, h, &g->nodes[i], &pl->fit[pl->att_of[i]], map, d);
  return ir_rebuild_copy(h, g, i, map, d) < 0 ? -1 : 0;
}

/* Marks gone the moves from each attention node's result to the rows, and
 * the nodes passed on the way to its operands that nothing reads any
 * more. */
static void sweep(plan *pl) {
  const ir_graph *g = pl->g;
  for (int j = 0; j < pl->nfit; j++) {
    const att_fit *f = &pl->fit[j];
    const ir_node *n = &g->nodes[f->line_node];
    for (int k = 0; k < 3; k++)
      pl->reads[n->in[k]]--, pl->reads[f->x[k]]++;
    if (f->bsrc >= 0)
      pl->reads[n->in[4]]--, pl->reads[f->bsrc]++;
    for (int t = n->out[0]; t != f->out;) {
      int rd = pl->reader[t];
      pl->gone[rd] = 1;
      t = g->nodes[rd].out[0];
    }
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

/* ---- row-layout nodes reading a split's parts ---------------------------
 *
 * A node already in the row layout (heads=: the twelfth tier's rules make
 * them, docs/generation.md) may read q, k or v as a part of a split of its
 * rows along their last axis (Llama's merged projection split in five,
 * the rules' rows form on BERT's merged q, k and v): it reads the split's
 * input in place instead, its column offset moved by the part's, and the
 * split goes when nothing else reads its parts. */

/* Split part t of g along the last axis of rows [B,S,C]: its split node,
 * its column offset in *off; -1 otherwise. */
static int split_part(const ir_graph *g, int32_t t, int64_t *off) {
  int p = g->tensors[t].node;
  if (p < 0 || g->nodes[p].op != IR_OP_SPLIT)
    return -1;
  const ir_node *s = &g->nodes[p];
  const ir_shape *x = &g->tensors[s->in[0]].shape;
  if (x->rank != 3 || (s->a.axis != 2 && s->a.axis != -1) || s->a.act)
    return -1;
  *off = 0;
  for (int o = 0; o < s->nout && s->out[o] != t; o++)
    *off += g->tensors[s->out[o]].shape.dim[2];
  return p;
}

typedef struct rows_plan {
  int *reads;          /* per tensor: readers left */
  unsigned char *gone; /* per node: a split nothing reads any more */
} rows_plan;

static int rows_node(const ir_node *n) {
  return n->op == IR_OP_ATTENTION && n->a.groups > 0 && !n->a.axis &&
         n->a.nlist == 3;
}

static int rows_step(void *u, ir_graph *h, const ir_graph *g, int i,
                     int32_t *map, base_diag *d) {
  const rows_plan *pl = u;
  const ir_node *n = &g->nodes[i];
  if (pl->gone[i])
    return 0;
  if (!rows_node(n))
    return ir_rebuild_copy(h, g, i, map, d) < 0 ? -1 : 0;
  int32_t in[IR_MAX_IN];
  ir_attrs a = n->a;
  for (int k = 0; k < n->nin; k++) {
    int64_t off;
    int p = k < 3 ? split_part(g, n->in[k], &off) : -1;
    in[k] = map[p >= 0 ? g->nodes[p].in[0] : n->in[k]];
    if (p >= 0)
      a.list[k] += off;
  }
  return lower_emit(h, g, i, n->op, in, n->nin, &a, map, d);
}

ir_graph *lower_rows(const ir_graph *g, lower_stats *st, base_diag *d) {
  rows_plan p = {ir_read_counts(g), base_calloc((size_t)g->nnodes + 1, 1)};
  ir_graph *h = NULL;
  int moved = 0;
  if (!p.reads || !p.gone) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    for (int k = 0; rows_node(n) && k < 3; k++) {
      int64_t off;
      int s = split_part(g, n->in[k], &off);
      if (s >= 0)
        p.reads[n->in[k]]--, p.reads[g->nodes[s].in[0]]++, moved++;
    }
  }
  for (int i = 0; moved && i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int dead = n->op == IR_OP_SPLIT;
    for (int k = 0; dead && k < n->nout; k++)
      dead = p.reads[n->out[k]] == 0;
    p.gone[i] = (unsigned char)dead;
  }
  h = moved ? ir_rebuild(g, rows_step, &p, d) : ir_graph_clone_shared(g);
  if (!h && !moved)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->moves += moved;
out:
  free(p.reads), free(p.gone);
  return h;
}
