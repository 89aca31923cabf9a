/* move_view.c: a move program (ir.h, ops.def `move`) as one strided walk
 * of its input, where its operators allow (ir_move_walk). The walk keeps
 * the current tensor's elements in row-major order as a list of walk
 * dimensions, each with its stride in the input, every tensor dimension a
 * run of them: a transpose reorders the runs, a slice shifts the offset
 * (a run of several walk dimensions only in whole inner blocks), and a
 * reshape regroups the list, splitting a walk dimension where a new
 * dimension ends inside it (exact where the sizes divide; else no walk).
 * The CUDA executor runs such a program as a strided copy
 * (src/gpu/run/move.c).
 */
#include <string.h>

#include "ir_int.h"

#define MV_MAX 32 /* walk dimensions while composing */

/* The walk: n dimensions (row-major) of sizes wd and input strides ws,
 * tensor dimension t the walk dimensions [g[t], g[t+1]). */
typedef struct mv_walk {
  int n, rank;
  int64_t wd[MV_MAX], ws[MV_MAX], off;
  int g[IR_MAX_RANK + 1];
} mv_walk;

/* Regroups the walk as tensor shape s (the same elements in the same
 * order); 0 where a dimension of s ends inside a walk dimension that its
 * size does not divide. */
static int mv_reshape(mv_walk *w, const ir_shape *s) {
  int64_t nd[MV_MAX], ns[MV_MAX];
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
      if (!take)
        return 0;
      nd[m] = take, ns[m++] = cst, cnt[t]++;
      need /= take, rem /= take, cst *= take;
    }
  }
  w->n = m, w->rank = s->rank;
  for (int k = 0; k < m; k++) /* back to outermost first */
    w->wd[k] = nd[m - 1 - k], w->ws[k] = ns[m - 1 - k];
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
    for (int k = o.g[p]; k < o.g[p + 1]; k++)
      w->wd[w->n] = o.wd[k], w->ws[w->n++] = o.ws[k];
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
  if (first == w->g[t + 1] || start % inner || to % inner)
    return 0;
  w->off += start / inner * w->ws[first];
  w->wd[first] = to / inner;
  return 1;
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

int ir_move_walk(const ir_body *b, const ir_shape *x, const int64_t *xst,
                 int *rank, int64_t *dim, int64_t *st, int64_t *off) {
  ir_shape sh[IR_BODY_MAX_OPS];
  if (!b || b->nops < 1 || ir_body_shapes(b, &x, sh, NULL) ||
      ir_shape_numel(x) == 0)
    return 0;
  int path[IR_BODY_MAX_OPS], np = 0;
  for (int k = b->nops - 1; k >= 0; k = b->ops[k].in[0]) {
    if (np == IR_BODY_MAX_OPS || b->ops[k].nin != 1)
      return 0;
    path[np++] = k;
  }
  mv_walk w = {.n = x->rank, .rank = x->rank, .off = 0};
  for (int d = 0; d < x->rank; d++)
    w.wd[d] = x->dim[d], w.ws[d] = xst[d], w.g[d] = d;
  w.g[x->rank] = x->rank;
  while (np > 0) {
    int k = path[--np];
    const ir_shape *in = b->ops[k].in[0] < 0 ? x : &sh[b->ops[k].in[0]];
    if (!mv_apply(&w, &b->ops[k], in, &sh[k]))
      return 0;
  }
  /* size-1 dimensions dropped, neighbours contiguous in the input merged */
  int m = 0;
  for (int k = 0; k < w.n; k++) {
    if (w.wd[k] == 1)
      continue;
    if (m > 0 && st[m - 1] == w.wd[k] * w.ws[k]) {
      dim[m - 1] *= w.wd[k], st[m - 1] = w.ws[k];
      continue;
    }
    if (m == IR_MAX_RANK)
      return 0;
    dim[m] = w.wd[k], st[m++] = w.ws[k];
  }
  if (m == 0)
    dim[0] = 1, st[0] = 1, m = 1;
  *rank = m, *off = w.off;
  return 1;
}
