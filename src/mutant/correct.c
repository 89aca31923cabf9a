/* correct.c: correction of a mutant's wrong boxes, and the float check.
 *
 * A wrong box of output i is recomputed by the conv2d of f that produces
 * output i, on the slice of its input the box's windows read: rows
 * [lo*s - pad_top, (hi-1)*s - pad_top + (kh-1)*dh + 1) clipped to the image,
 * the clipped part becoming explicit padding, so the small conv gives
 * exactly the box. Grouped convs widen the box's channels to whole groups.
 * The result is written into g's output by slicing the output around the
 * box and concatenating, one axis at a time (pure data movement; the only
 * compute added is the box's own), then fused with g's own concats, splits
 * and slices (fusecorr.c). A correction never runs f whole. A matmul of f
 * (matmul-batch) recomputes a box from the box's rows of its left operand
 * and columns of its right one and of its bias.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "mutant_int.h"

/* The box recomputed: conv of f's node nd over slices of its leaves in h.
 * *b may widen (channels to whole groups). Returns the tensor, or -1. */
static int recompute(ir_graph *h, const ir_graph *f, const ir_node *nd,
                     mutant_box *b, base_diag *d) {
  const ir_shape *xs = &f->tensors[nd->in[0]].shape,
                 *ws = &f->tensors[nd->in[1]].shape,
                 *ys = &f->tensors[nd->out[0]].shape;
  ir_attrs a = nd->a;
  int64_t groups = a.groups, og = ys->dim[1] / groups, cg = xs->dim[1] / groups;
  int64_t o0 = b->lo[1] / og * og, o1 = (b->hi[1] + og - 1) / og * og;
  if (groups == 1)
    o0 = b->lo[1], o1 = b->hi[1];
  b->lo[1] = o0, b->hi[1] = o1;
  int64_t xlo[4] = {b->lo[0], groups == 1 ? 0 : o0 / og * cg, 0, 0};
  int64_t xhi[4] = {b->hi[0], groups == 1 ? xs->dim[1] : o1 / og * cg, 0, 0};
  a.groups = groups == 1 ? 1 : (int32_t)((o1 - o0) / og);
  a.padmode = IR_PAD_EXPLICIT;
  for (int ax = 2; ax < 4; ax++) {
    int64_t s = nd->a.stride[ax - 2], dl = nd->a.dilation[ax - 2];
    int64_t r0 = b->lo[ax] * s - nd->a.pad[ax - 2];
    int64_t r1 =
        (b->hi[ax] - 1) * s - nd->a.pad[ax - 2] + (ws->dim[ax] - 1) * dl + 1;
    xlo[ax] = r0 < 0 ? 0 : r0;
    xhi[ax] = r1 > xs->dim[ax] ? xs->dim[ax] : r1;
    if (xlo[ax] >= xhi[ax])
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "mutant: a correction box reads only padding"),
             -1;
    a.pad[ax - 2] = (int32_t)(xlo[ax] - r0);
    a.pad[ax] = (int32_t)(r1 - xhi[ax]);
  }
  int32_t in[3];
  int x = mutant_leaf(h, f, nd->in[0], d);
  in[0] = x < 0 ? -1 : mutant_slice(h, x, xlo, xhi, d);
  for (int j = 1; in[0] >= 0 && j < nd->nin; j++) {
    const ir_shape *s = &f->tensors[nd->in[j]].shape;
    int64_t lo[4] = {o0, 0, 0, 0}, hi[4];
    memcpy(hi, s->dim, sizeof hi);
    hi[0] = o1;
    int t = mutant_leaf(h, f, nd->in[j], d);
    in[j] = t < 0                  ? -1
            : o1 - o0 == s->dim[0] ? t
                                   : mutant_slice(h, t, lo, hi, d);
    if (in[j] < 0)
      return -1;
  }
  if (in[0] < 0)
    return -1;
  return mutant_add(h, IR_OP_CONV2D, in, nd->nin, &a, NULL, d);
}

/* The box recomputed by f's matmul nd (a rank-2 right-hand side, as
 * mutant_correct checks): the box's rows of a (every leading axis sliced
 * as the box, K whole) times the box's columns of b, plus those of the
 * bias. Returns the tensor, or -1. */
static int recompute_matmul(ir_graph *h, const ir_graph *f, const ir_node *nd,
                            const mutant_box *b, base_diag *d) {
  const ir_shape *as = &f->tensors[nd->in[0]].shape,
                 *bs = &f->tensors[nd->in[1]].shape;
  int r = as->rank;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
  memcpy(lo, b->lo, sizeof lo);
  memcpy(hi, b->hi, sizeof hi);
  lo[r - 1] = 0, hi[r - 1] = as->dim[r - 1];
  int32_t in[3];
  int x = mutant_leaf(h, f, nd->in[0], d);
  in[0] = x < 0 ? -1 : mutant_slice(h, x, lo, hi, d);
  int64_t wl[2] = {0, b->lo[r - 1]}, wh[2] = {bs->dim[0], b->hi[r - 1]};
  int w = in[0] < 0 ? -1 : mutant_leaf(h, f, nd->in[1], d);
  in[1] = w < 0 ? -1 : mutant_slice(h, w, wl, wh, d);
  if (in[1] >= 0 && nd->nin == 3) {
    int c = mutant_leaf(h, f, nd->in[2], d);
    in[2] = c < 0 ? -1 : mutant_slice(h, c, wl + 1, wh + 1, d);
  }
  for (int j = 0; j < nd->nin; j++)
    if (in[j] < 0)
      return -1;
  return mutant_add(h, IR_OP_MATMUL, in, nd->nin, &nd->a, NULL, d);
}

/* m with box b replaced by p: around the box, axis by axis from the last,
 * the parts of m before and after it are concatenated to p. */
static int replace(ir_graph *h, int m, const mutant_box *b, int p,
                   base_diag *d) {
  const ir_shape s = h->tensors[m].shape; /* h->tensors grows below */
  int r = s.rank;
  for (int a = r - 1; a >= 0 && p >= 0; a--) {
    if (b->lo[a] == 0 && b->hi[a] == s.dim[a])
      continue;
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    int32_t parts[3];
    int n = 0;
    for (int k = 0; k < r; k++) {
      lo[k] = k < a ? b->lo[k] : 0;
      hi[k] = k < a ? b->hi[k] : s.dim[k];
    }
    if (b->lo[a] > 0) {
      hi[a] = b->lo[a];
      if ((parts[n++] = mutant_slice(h, m, lo, hi, d)) < 0)
        return -1;
    }
    parts[n++] = p;
    if (b->hi[a] < s.dim[a]) {
      lo[a] = b->hi[a], hi[a] = s.dim[a];
      if ((parts[n++] = mutant_slice(h, m, lo, hi, d)) < 0)
        return -1;
    }
    p = mutant_concat(h, parts, n, a, NULL, d);
  }
  return p;
}

base_status mutant_correct(const ir_graph *f, const ir_graph *g,
                           const mutant_box *wrong, int nwrong, ir_graph **out,
                           base_diag *d) {
  ir_graph *h = ir_graph_clone(g);
  int32_t *cur = base_calloc((size_t)g->noutputs + 1, sizeof *cur);
  base_status st = h && cur ? BASE_OK : BASE_ERR_NOMEM;
  if (st)
    base_diag_set(d, st, 0, 0, "out of memory");
  for (int i = 0; !st && i < g->noutputs; i++)
    cur[i] = h->outputs[i];
  for (int i = 0; !st && i < nwrong; i++) {
    mutant_box b = wrong[i];
    if (b.out < 0 || b.out >= f->noutputs || f->noutputs != g->noutputs) {
      st = base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "mutant: box %d names no output", i);
      break;
    }
    const ir_shape *ys = &f->tensors[f->outputs[b.out]].shape;
    int in_range = 1;
    for (int k = 0; k < ys->rank; k++)
      in_range &= 0 <= b.lo[k] && b.lo[k] < b.hi[k] && b.hi[k] <= ys->dim[k];
    if (!in_range) {
      st = base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "mutant: box %d is empty or outside output %d", i,
                         b.out);
      break;
    }
    int node = f->tensors[f->outputs[b.out]].node;
    const ir_node *nd = node >= 0 ? &f->nodes[node] : NULL;
    int mm = nd && nd->op == IR_OP_MATMUL && nd->nin <= 3 &&
             f->tensors[nd->in[1]].shape.rank == 2;
    int leaves = nd && (nd->op == IR_OP_CONV2D || mm);
    for (int j = 0; leaves && j < nd->nin; j++)
      leaves = f->tensors[nd->in[j]].kind != IR_T_VALUE;
    if (!leaves) {
      st = base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "mutant: output %d of f is not a conv2d (or a matmul "
                         "by a rank-2 right-hand side) over inputs and "
                         "weights; no correction rule",
                         b.out);
      break;
    }
    int p = mm ? recompute_matmul(h, f, nd, &b, d) : recompute(h, f, nd, &b, d);
    if (p < 0 || (cur[b.out] = replace(h, cur[b.out], &b, p, d)) < 0)
      st = d->code ? d->code : BASE_ERR_INTERNAL;
  }
  if (!st) {
    memcpy(h->outputs, cur, sizeof *cur * (size_t)g->noutputs);
    st = ir_graph_validate(h, d);
  }
  free(cur);
  ir_graph *fused = NULL;
  if (!st)
    st = mutant_fuse_moves(h, &fused, d);
  ir_graph_free(h);
  if (st)
    return st;
  *out = fused;
  return BASE_OK;
}

/* The largest |a-b| / (1 + |a|) over f's and h's outputs (run in vf, vh)
 * into *worst; NaN counts as the worst. */
static base_status worst_error(const ir_graph *f, const ex_values *vf,
                               const ir_graph *h, const ex_values *vh,
                               double *worst, base_diag *d) {
  *worst = 0;
  for (int i = 0; i < f->noutputs; i++) {
    const ir_shape *s = &f->tensors[f->outputs[i]].shape;
    const float *a = vf->v[f->outputs[i]], *b = vh->v[h->outputs[i]];
    if (!ir_shape_eq(s, &h->tensors[h->outputs[i]].shape))
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "mutant: output %d shapes differ", i);
    for (int64_t j = 0, n = ir_shape_numel(s); j < n; j++) {
      double e = fabs((double)a[j] - b[j]) / (1.0 + fabs((double)a[j]));
      if (!(e <= *worst))
        *worst = isnan(e) ? INFINITY : e;
    }
  }
  return BASE_OK;
}

/* h runs on f's leaves by name but for those holding values of their own
 * (ex_share_leaves: the rule of the end-to-end check); its messages get
 * the module's prefix. */
static base_status share_leaves(const ir_graph *f, const ex_values *vf,
                                const ir_graph *h, ex_values *vh,
                                unsigned char *shared, uint64_t seed,
                                base_diag *d) {
  base_status st = ex_share_leaves(f, vf, h, vh, shared, d);
  if (st && d && st != BASE_ERR_NOMEM) {
    char m[sizeof d->msg];
    memcpy(m, d->msg, sizeof m);
    return base_diag_set(d, st, 0, 0, "mutant: %s", m);
  }
  return st ? st : ex_fill_random(h, vh, seed, d);
}

base_status mutant_float_check(const ir_graph *f, const ir_graph *h,
                               uint64_t seed, double *err, base_diag *d) {
  ex_values *vf = ex_values_new(f), *vh = ex_values_new(h);
  unsigned char *shared = base_calloc((size_t)h->ntensors + 1, 1);
  ex_options o = {0, 0};
  base_status st = vf && vh && shared ? BASE_OK : BASE_ERR_NOMEM;
  if (st)
    base_diag_set(d, st, 0, 0, "out of memory");
  if (!st && f->noutputs != h->noutputs)
    st = base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                       "mutant: the graphs have different output counts");
  if (!st)
    st = ex_fill_random(f, vf, seed, d);
  if (!st)
    st = share_leaves(f, vf, h, vh, shared, seed, d);
  if (!st)
    st = ex_run(f, vf, &o, d);
  if (!st)
    st = ex_run(h, vh, &o, d);
  double worst = 0;
  if (!st)
    st = worst_error(f, vf, h, vh, &worst, d);
  ex_values_free_shared(vh, shared);
  ex_values_free(vf);
  free(shared);
  if (!st)
    *err = worst;
  return st;
}
