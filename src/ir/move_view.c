/* move_view.c: a move program (ir.h, ops.def `move`) as one strided walk
 * of its input, where its operators allow (ir_move_walk). The walk keeps
 * the current tensor's elements in row-major order as a list of walk
 * dimensions, each with its stride in the input, every tensor dimension a
 * run of them: a transpose reorders the runs, a slice shifts the offset
 * (a run of several walk dimensions only in whole inner blocks), and a
 * reshape regroups the list, splitting a walk dimension where a new
 * dimension ends inside it (exact where the sizes divide; else no walk).
 * Two concats are walks too: a roll (concat of x[s:D] and x[0:s] along one
 * axis, Swin's cyclic shift) wraps a walk dimension, its coordinate read
 * as (c + shift) mod size (a wrapped dimension is never split, sliced or
 * merged), and parts that are one walk at offsets on a grid (Swin's patch
 * merging: x[0::2, 0::2], x[1::2, 0::2], ... concatenated) become outer
 * dimensions of the axis's run, one per grid axis. The CUDA executor runs
 * such a program as a strided copy (src/gpu/run/move.c).
 */
#include <string.h>

#include "ir_int.h"

#define MV_MAX 32 /* walk dimensions while composing */

/* The walk: n dimensions (row-major) of sizes wd and input strides ws,
 * tensor dimension t the walk dimensions [g[t], g[t+1]). */
typedef struct mv_walk {
  int n, rank;
  int64_t wd[MV_MAX], ws[MV_MAX], wr[MV_MAX], off; /* wr: a roll's shift */
  int g[IR_MAX_RANK + 1];
} mv_walk;

/* Regroups the walk as tensor shape s (the same elements in the same
 * order); 0 where a dimension of s ends inside a walk dimension that its
 * size does not divide. */
static int mv_reshape(mv_walk *w, const ir_shape *s) {
  int64_t nd[MV_MAX], ns[MV_MAX], nr[MV_MAX];
  int cnt[IR_MAX_RANK], m = 0, j = w->n - 1;
  int64_t rem = j >= 0 ? w->wd[j] : 1, cst = j >= 0 ? w->ws[j] : 0;
  for (int t = s->rank - 1; t >= 0; t--) { /* built innermost first */
    int64_t need = s->dim[t];
    cnt[t] = 0;
    while (need > 1) {
      if (rem == 1) {
        if (--j < 0)
          return 0;
        rem = w->wd[j], cst = w->ws[j];
        continue;
      }
      if (m == MV_MAX)
        return 0;
      int64_t take = need % rem == 0 ? rem : rem % need == 0 ? need : 0;
      if (!take || (w->wr[j] && take != w->wd[j]))
        return 0;
      nd[m] = take, ns[m] = cst, nr[m++] = w->wr[j], cnt[t]++;
      need /= take, rem /= take, cst *= take;
    }
  }
  w->n = m, w->rank = s->rank;
  for (int k = 0; k < m; k++) /* back to outermost first */
    w->wd[k] = nd[m - 1 - k], w->ws[k] = ns[m - 1 - k],
    w->wr[k] = nr[m - 1 - k];
  w->g[0] = 0;
  for (int t = 0; t < s->rank; t++)
    w->g[t + 1] = w->g[t] + cnt[t];
  return 1;
}

static int mv_transpose(mv_walk *w, const int64_t *perm) {
  mv_walk o = *w;
  w->n = 0;
  for (int t = 0; t < o.rank; t++) {
    int p = (int)perm[t];
    w->g[t] = w->n;
    for (int k = o.g[p]; k < o.g[p + 1]; k++, w->n++)
      w->wd[w->n] = o.wd[k], w->ws[w->n] = o.ws[k], w->wr[w->n] = o.wr[k];
  }
  w->g[o.rank] = w->n;
  return 1;
}

/* Slice of tensor dimension t from start, size to (of its size from):
 * the outermost walk dimension of its run, in whole blocks of the rest. */
static int mv_slice_dim(mv_walk *w, int t, int64_t start, int64_t to,
                        int64_t from) {
  if (start == 0 && to == from)
    return 1;
  int first = w->g[t];
  while (first + 1 < w->g[t + 1] && w->wd[first] == 1)
    first++;
  int64_t inner = 1;
  for (int k = first + 1; k < w->g[t + 1]; k++)
    inner *= w->wd[k];
  if (first == w->g[t + 1] || start % inner || to % inner || w->wr[first])
    return 0;
  w->off += start / inner * w->ws[first];
  w->wd[first] = to / inner;
  return 1;
}

static int64_t wrap_at(const int64_t *wrap, int k) {
  return wrap ? wrap[k] : 0;
}

/* Operator o of the program (input shape in, result shape s). */
static int mv_apply(mv_walk *w, const ir_body_op *o, const ir_shape *in,
                    const ir_shape *s) {
  switch (o->op) {
  case IR_OP_SLICE:
    for (int t = 0; t < s->rank; t++)
      if (!mv_slice_dim(w, t, o->a.list[t], s->dim[t], in->dim[t]))
        return 0;
    return 1;
  case IR_OP_TRANSPOSE: return mv_transpose(w, o->a.list);
  case IR_OP_RESHAPE: return mv_reshape(w, s);
  default: return 0; /* pad, concat: not one walk */
  }
}

/* Rolls tensor dimension t of size D by sh: its one walk dimension longer
 * than 1 wraps sh further. */
static int mv_roll(mv_walk *w, int t, int64_t sh, int64_t D) {
  int at = -1;
  for (int k = w->g[t]; k < w->g[t + 1]; k++)
    if (w->wd[k] > 1) {
      if (at >= 0)
        return 0;
      at = k;
    }
  if (at < 0 || w->wd[at] != D)
    return 0;
  w->wr[at] = (w->wr[at] + sh) % D;
  return 1;
}

/* Offsets o[0..k) (o[0] = 0) as a grid, outermost axis first: o[j] =
 * sum of its coordinates times the axes' strides; *ng axes. */
static int mv_grid(const int64_t *o, int k, int64_t *gd, int64_t *gs, int *ng) {
  if (k == 1)
    return 1;
  for (int r = 2; r <= k; r++) {
    int ok = k % r == 0;
    for (int j = 0; ok && j < k; j++)
      ok = o[j] == (j % r) * o[1] + o[j - j % r];
    if (!ok)
      continue;
    int64_t sub[IR_MAX_FIXED_IN];
    for (int j = 0; j < k / r; j++)
      sub[j] = o[j * r];
    if (*ng == MV_MAX || !mv_grid(sub, k / r, gd, gs, ng))
      return 0;
    gd[*ng] = r, gs[(*ng)++] = o[1];
    return 1;
  }
  return 0;
}

typedef struct mv_prog {
  const ir_body *b;
  const ir_shape *x, *sh;
  const int64_t *xst;
} mv_prog;

static int mv_of(const mv_prog *p, int k, mv_walk *w, int depth);

/* Whether concat o is a roll: x[s:D] then x[0:s] along its axis a, two
 * slices of one tensor alike on every other axis; then w the walk of the
 * rolled tensor. */
static int mv_as_roll(const mv_prog *p, const ir_body_op *o, int a, mv_walk *w,
                      int depth) {
  if (o->nin != 2 || o->in[0] < 0 || o->in[1] < 0)
    return 0;
  const ir_body_op *u = &p->b->ops[o->in[0]], *v = &p->b->ops[o->in[1]];
  const ir_shape *us = &p->sh[o->in[0]], *vs = &p->sh[o->in[1]];
  if (u->op != IR_OP_SLICE || v->op != IR_OP_SLICE || u->in[0] != v->in[0])
    return 0;
  const ir_shape *q = u->in[0] < 0 ? p->x : &p->sh[u->in[0]];
  int64_t D = q->dim[a], sh = u->a.list[a];
  for (int t = 0; t < q->rank; t++)
    if (t != a && (u->a.list[t] != v->a.list[t] || us->dim[t] != vs->dim[t]))
      return 0;
  if (sh <= 0 || sh >= D || us->dim[a] != D - sh || v->a.list[a] != 0 ||
      vs->dim[a] != sh)
    return 0;
  ir_body_op whole = *u; /* u's slice with axis a whole */
  ir_shape ws = *us;
  whole.a.list[a] = 0, ws.dim[a] = D;
  return mv_of(p, u->in[0], w, depth + 1) && mv_apply(w, &whole, q, &ws) &&
         mv_roll(w, a, sh, D);
}

/* Concat o (result shape s) along a: a roll, or parts of one shape whose
 * walks differ only in their offsets, those on a grid. */
static int mv_concat(const mv_prog *p, const ir_body_op *o, const ir_shape *s,
                     mv_walk *w, int depth) {
  int a = o->a.axis < 0 ? o->a.axis + s->rank : o->a.axis;
  if (a < 0 || a >= s->rank)
    return 0;
  if (mv_as_roll(p, o, a, w, depth))
    return 1;
  int64_t off[IR_MAX_FIXED_IN], gd[MV_MAX], gs[MV_MAX];
  const ir_shape *s0 = o->in[0] < 0 ? p->x : &p->sh[o->in[0]];
  for (int j = 0; j < o->nin; j++) {
    mv_walk pj;
    const ir_shape *sj = o->in[j] < 0 ? p->x : &p->sh[o->in[j]];
    if (sj->rank != s0->rank ||
        memcmp(sj->dim, s0->dim, sizeof(int64_t) * (size_t)s0->rank) ||
        !mv_of(p, o->in[j], j ? &pj : w, depth + 1))
      return 0;
    if (j && (pj.n != w->n || pj.rank != w->rank ||
              memcmp(pj.g, w->g, sizeof(int) * (size_t)(w->rank + 1)) ||
              memcmp(pj.wd, w->wd, sizeof(int64_t) * (size_t)w->n) ||
              memcmp(pj.ws, w->ws, sizeof(int64_t) * (size_t)w->n) ||
              memcmp(pj.wr, w->wr, sizeof(int64_t) * (size_t)w->n)))
      return 0;
    off[j] = (j ? pj.off : w->off) - w->off;
  }
  int ng = 0;
  if (!mv_grid(off, o->nin, gd, gs, &ng) || w->n + ng > MV_MAX)
    return 0;
  int at = w->g[a]; /* the grid's axes outermost in a's run */
  memmove(&w->wd[at + ng], &w->wd[at], sizeof(int64_t) * (size_t)(w->n - at));
  memmove(&w->ws[at + ng], &w->ws[at], sizeof(int64_t) * (size_t)(w->n - at));
  memmove(&w->wr[at + ng], &w->wr[at], sizeof(int64_t) * (size_t)(w->n - at));
  for (int k = 0; k < ng; k++)
    w->wd[at + k] = gd[k], w->ws[at + k] = gs[k], w->wr[at + k] = 0;
  w->n += ng;
  for (int t = a + 1; t <= w->rank; t++)
    w->g[t] += ng;
  return 1;
}

/* The walk of the program's operator k (-1: $0). */
static int mv_of(const mv_prog *p, int k, mv_walk *w, int depth) {
  if (depth > IR_BODY_MAX_OPS)
    return 0;
  if (k < 0) {
    memset(w, 0, sizeof *w);
    w->n = w->rank = p->x->rank;
    for (int d = 0; d < p->x->rank; d++)
      w->wd[d] = p->x->dim[d], w->ws[d] = p->xst[d], w->g[d] = d;
    w->g[p->x->rank] = p->x->rank;
    return 1;
  }
  const ir_body_op *o = &p->b->ops[k];
  if (o->op == IR_OP_CONCAT)
    return mv_concat(p, o, &p->sh[k], w, depth);
  const ir_shape *in = o->in[0] < 0 ? p->x : &p->sh[o->in[0]];
  return o->nin == 1 && mv_of(p, o->in[0], w, depth + 1) &&
         mv_apply(w, o, in, &p->sh[k]);
}

int ir_move_walk(const ir_body *b, const ir_shape *x, const int64_t *xst,
                 int *rank, int64_t *dim, int64_t *st, int64_t *wrap,
                 int64_t *off) {
  ir_shape sh[IR_BODY_MAX_OPS];
  if (!b || b->nops < 1 || ir_body_shapes(b, &x, sh, NULL) ||
      ir_shape_numel(x) == 0)
    return 0;
  mv_prog p = {b, x, sh, xst};
  mv_walk w;
  if (!mv_of(&p, b->nops - 1, &w, 0))
    return 0;
  /* size-1 dimensions dropped, neighbours contiguous in the input merged
   * (wrapped ones kept apart) */
  int m = 0;
  for (int k = 0; k < w.n; k++) {
    if (w.wd[k] == 1)
      continue;
    if (w.wr[k] && !wrap)
      return 0;
    if (m > 0 && !w.wr[k] && !wrap_at(wrap, m - 1) &&
        st[m - 1] == w.wd[k] * w.ws[k]) {
      dim[m - 1] *= w.wd[k], st[m - 1] = w.ws[k];
      continue;
    }
    if (m == IR_MAX_RANK)
      return 0;
    if (wrap)
      wrap[m] = w.wr[k];
    dim[m] = w.wd[k], st[m++] = w.ws[k];
  }
  if (m == 0) {
    dim[0] = 1, st[0] = 1, m = 1;
    if (wrap)
      wrap[0] = 0;
  }
  *rank = m, *off = w.off;
  return 1;
}
