/* fusecorr.c: the correction fused with its neighbouring concat and slice
 * nodes (mutant_fuse_moves).
 *
 * mutant_correct writes a recomputed box into g's output by slicing that
 * output around the box and concatenating. When g's output is itself a
 * concat (split-h joins its halves along H) or a slice (concat-w's outputs
 * are slices of the joint conv), those nodes are folded together: a slice of
 * a slice is one slice, a slice of a concat or split that stays inside one
 * piece reads that piece, a concat of a concat along the same axis is one
 * concat, adjacent slices of one tensor inside a concat merge, an identity
 * slice or a one-input concat disappears. All are identities of data
 * movement (exact). What is left of the correction is the box's own small
 * conv over a slice of its input plus one concat that was there anyway, so
 * the correction never costs a second pass over g's output.
 */
#include <stdlib.h>
#include <string.h>

#include "../pass/pass.h"
#include "mutant_int.h"

/* A view of n's tensor src at offset off (shape: the slice's). */
typedef struct view {
  int src;
  int64_t off[IR_MAX_RANK];
} view;

/* Follows src back through slices and through concats and splits whose
 * piece contains the whole window [off, off + shape). */
static void resolve(const ir_graph *n, view *v, const ir_shape *shape) {
  for (;;) {
    int node = n->tensors[v->src].node;
    if (node < 0)
      return;
    const ir_node *nd = &n->nodes[node];
    const ir_shape *xs = &n->tensors[nd->in[0]].shape;
    int r = shape->rank;
    if (nd->op == IR_OP_SLICE) {
      for (int k = 0; k < r; k++)
        if (nd->a.list[k] < 0 || nd->a.list[k] >= xs->dim[k])
          return; /* not normalized: leave it */
      for (int k = 0; k < r; k++)
        v->off[k] += nd->a.list[k];
      v->src = nd->in[0];
    } else if (nd->op == IR_OP_CONCAT) {
      int a = nd->a.axis < 0 ? nd->a.axis + r : nd->a.axis;
      int64_t start = 0, lo = v->off[a], hi = lo + shape->dim[a];
      int piece = -1;
      for (int j = 0; j < nd->nin && piece < 0; j++) {
        int64_t len = n->tensors[nd->in[j]].shape.dim[a];
        if (lo >= start && hi <= start + len)
          piece = j;
        else
          start += len;
      }
      if (piece < 0)
        return;
      v->off[a] -= start;
      v->src = nd->in[piece];
    } else if (nd->op == IR_OP_SPLIT) {
      int a = nd->a.axis < 0 ? nd->a.axis + r : nd->a.axis;
      int64_t start = 0;
      int j = 0;
      while (j < nd->nout && nd->out[j] != v->src)
        start += n->tensors[nd->out[j++]].shape.dim[a];
      v->off[a] += start;
      v->src = nd->in[0];
    } else {
      return;
    }
  }
}

/* The view as an n tensor: src itself when it is the whole of src, else a
 * slice. -1 with d set on error. */
static int materialize(ir_graph *n, const view *v, const ir_shape *shape,
                       base_diag *d) {
  const ir_shape *ss = &n->tensors[v->src].shape;
  int whole = ss->rank == shape->rank;
  int64_t hi[IR_MAX_RANK];
  for (int k = 0; k < shape->rank; k++) {
    hi[k] = v->off[k] + shape->dim[k];
    whole = whole && v->off[k] == 0 && hi[k] == ss->dim[k];
  }
  return whole ? v->src : mutant_slice(n, v->src, v->off, hi, d);
}

/* A slice of h: its input's view, resolved. */
static int fuse_slice(ir_graph *n, int x, const ir_node *nd, const ir_shape *ys,
                      base_diag *d) {
  view v = {x, {0}};
  const ir_shape *xs = &n->tensors[x].shape;
  for (int k = 0; k < ys->rank; k++) {
    if (nd->a.list[k] < 0 || nd->a.list[k] >= xs->dim[k])
      return mutant_add(n, IR_OP_SLICE, &x, 1, &nd->a, NULL, d);
    v.off[k] = nd->a.list[k];
  }
  resolve(n, &v, ys);
  return materialize(n, &v, ys, d);
}

/* A concat of h along axis a over n tensors in[0..nin-1]: inner concats
 * along a flattened, adjacent slices of one tensor merged. */
static int fuse_concat(ir_graph *n, const int32_t *in, int nin, int a,
                       base_diag *d) {
  int32_t flat[IR_MAX_IN];
  int nf = 0;
  for (int j = 0; j < nin; j++) {
    int p = n->tensors[in[j]].node;
    const ir_node *nd = p >= 0 ? &n->nodes[p] : NULL;
    int ax = nd ? (nd->a.axis < 0 ? nd->a.axis + n->tensors[in[j]].shape.rank
                                  : nd->a.axis)
                : -1;
    if (nd && nd->op == IR_OP_CONCAT && ax == a &&
        nf + nd->nin + (nin - j - 1) <= IR_MAX_IN)
      for (int k = 0; k < nd->nin; k++)
        flat[nf++] = nd->in[k];
    else if (nf < IR_MAX_IN)
      flat[nf++] = in[j];
    else
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "mutant: concat too wide"),
             -1;
  }
  /* merge adjacent slices of one source that meet along a */
  int32_t out[IR_MAX_IN];
  int no = 0;
  for (int j = 0; j < nf; j++) {
    if (no > 0) {
      const ir_shape *ps = &n->tensors[out[no - 1]].shape,
                     *cs = &n->tensors[flat[j]].shape;
      view pv = {out[no - 1], {0}}, cv = {flat[j], {0}};
      resolve(n, &pv, ps);
      resolve(n, &cv, cs);
      int same = pv.src == cv.src && pv.off[a] + ps->dim[a] == cv.off[a];
      for (int k = 0; same && k < ps->rank; k++)
        same = k == a || (pv.off[k] == cv.off[k] && ps->dim[k] == cs->dim[k]);
      if (same) {
        ir_shape m = *ps;
        m.dim[a] += cs->dim[a];
        int t = materialize(n, &pv, &m, d);
        if (t < 0)
          return -1;
        out[no - 1] = t;
        continue;
      }
    }
    out[no++] = flat[j];
  }
  return no == 1 ? out[0] : mutant_concat(n, out, no, a, NULL, d);
}

static base_status fuse_nodes(const ir_graph *h, ir_graph *n, int32_t *map,
                              base_diag *d) {
  for (int i = 0; i < h->ntensors; i++)
    if (h->tensors[i].kind != IR_T_VALUE &&
        (map[i] = mutant_leaf(n, h, i, d)) < 0)
      return d->code;
  for (int k = 0; k < h->nnodes; k++) {
    const ir_node *nd = &h->nodes[k];
    int32_t in[IR_MAX_IN];
    for (int j = 0; j < nd->nin; j++)
      in[j] = map[nd->in[j]];
    const ir_shape *ys = &h->tensors[nd->out[0]].shape;
    int t;
    if (nd->op == IR_OP_SLICE) {
      t = fuse_slice(n, in[0], nd, ys, d);
    } else if (nd->op == IR_OP_CONCAT) {
      int a = nd->a.axis < 0 ? nd->a.axis + ys->rank : nd->a.axis;
      t = fuse_concat(n, in, nd->nin, a, d);
    } else {
      int m = ir_add_node(n, nd->op, in, nd->nin, &nd->a, NULL, d);
      if (m < 0)
        return d->code;
      for (int j = 0; j < nd->nout; j++)
        map[nd->out[j]] = n->nodes[m].out[j];
      continue;
    }
    if (t < 0)
      return d->code ? d->code : BASE_ERR_INTERNAL;
    map[nd->out[0]] = t;
  }
  for (int i = 0; i < h->noutputs; i++) {
    base_status st = ir_add_output(n, map[h->outputs[i]], d);
    if (st)
      return st;
  }
  return BASE_OK;
}

base_status mutant_fuse_moves(const ir_graph *h, ir_graph **out, base_diag *d) {
  ir_graph *n = ir_graph_new(h->name);
  int32_t *map = base_malloc(sizeof *map * ((size_t)h->ntensors + 1));
  base_status st = n && map ? BASE_OK : BASE_ERR_NOMEM;
  if (st)
    base_diag_set(d, st, 0, 0, "out of memory");
  if (!st)
    st = fuse_nodes(h, n, map, d);
  free(map);
  ir_graph *p = NULL;
  int dead = 0;
  if (!st && !(p = pass_prune_dead(n, &dead, d)))
    st = d->code ? d->code : BASE_ERR_NOMEM;
  if (!st) /* p shares n's weight values (mutant_leaf's copies) */
    st = ir_graph_own_data(p, d);
  ir_graph_free(n);
  if (!st)
    st = ir_graph_validate(p, d);
  if (st) {
    ir_graph_free(p);
    return st;
  }
  *out = p;
  return BASE_OK;
}
