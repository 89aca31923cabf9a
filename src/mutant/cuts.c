/* cuts.c: the cut lines of every tensor of a graph, for the box analysis.
 *
 * A tensor's cuts along axis k are the positions p where p-1 and p may be
 * computed differently. Between two cuts, one step along k translates
 * everything the value reads by a fixed offset, so (operators being
 * multi-linear, or element-wise random functions) the value at one
 * position is the value at its neighbour with the inputs renamed: equality
 * of two graphs at one position of a box carries to the whole box.
 * Inputs and weights have no cuts; each operator's rule below adds the
 * lines it introduces (concat, split, slice and pad boundaries) and carries
 * its inputs' lines to its output. A window (conv, pool) carries a line to
 * every output whose taps fall into a different interval of the input,
 * including the image edges (the padding). A reshape matches its axes into
 * groups; a group of merged or split axes goes through its flattened
 * elements, cut at every row of the group's last input axis: sound, and
 * fine-grained only where the reshape actually merges or splits.
 */
#include <stdlib.h>
#include <string.h>

#include "mutant_int.h"

int mutant_cut_add(mutant_cuts *c, int k, int64_t p, int64_t dim) {
  if (p <= 0 || p >= dim)
    return 0;
  int n = c->n[k];
  if ((n & (n - 1)) == 0 || n == 0) { /* grow at powers of two */
    int64_t *v = base_realloc(c->c[k], sizeof *v * (size_t)(n ? 2 * n : 4));
    if (!v)
      return -1;
    c->c[k] = v;
  }
  c->c[k][c->n[k]++] = p;
  return 0;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void mutant_cut_norm(mutant_cuts *c) {
  for (int k = 0; k < IR_MAX_RANK; k++) {
    if (c->n[k] < 2)
      continue;
    qsort(c->c[k], (size_t)c->n[k], sizeof(int64_t), cmp64);
    int m = 1;
    for (int i = 1; i < c->n[k]; i++)
      if (c->c[k][i] != c->c[k][m - 1])
        c->c[k][m++] = c->c[k][i];
    c->n[k] = m;
  }
}

void mutant_cuts_free(mutant_cuts *c, int n) {
  if (!c)
    return;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < IR_MAX_RANK; k++)
      free(c[i].c[k]);
  free(c);
}

/* Adds src's cuts along axis ks, shifted by off, to dst's axis kd. */
static int carry(mutant_cuts *dst, int kd, const mutant_cuts *src, int ks,
                 int64_t off, int64_t dim) {
  for (int i = 0; i < src->n[ks]; i++)
    if (mutant_cut_add(dst, kd, src->c[ks][i] + off, dim))
      return -1;
  return 0;
}

/* Broadcast (aligned from the right): input axis cuts carry where the
 * input dimension equals the output's. */
static int carry_bcast(mutant_cuts *dst, const ir_shape *os,
                       const mutant_cuts *src, const ir_shape *is) {
  for (int k = 0; k < is->rank && k < os->rank; k++) {
    int ki = is->rank - 1 - k, ko = os->rank - 1 - k;
    if (is->dim[ki] == os->dim[ko] && carry(dst, ko, src, ki, 0, os->dim[ko]))
      return -1;
  }
  return 0;
}

/* Interval of input position p among cuts c[0..n-1] of an axis of size
 * dim: -1 before the start (padding), n+1 past the end. */
static int64_t interval(const int64_t *c, int n, int64_t dim, int64_t p) {
  if (p < 0)
    return -1;
  if (p >= dim)
    return n + 1;
  int lo = 0, hi = n; /* number of cuts <= p */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (c[mid] <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Window axis: output o reads input positions o*s - plo + t*dil,
 * t = 0..k-1; a cut before o where any tap changes interval. */
static int window(mutant_cuts *dst, int kd, const mutant_cuts *src, int ks,
                  int64_t n, int64_t nout, int64_t k, int64_t s, int64_t dil,
                  int64_t plo) {
  for (int64_t o = 1; o < nout; o++)
    for (int64_t t = 0; t < k; t++) {
      int64_t p = o * s - plo + t * dil, q = p - s;
      if (interval(src->c[ks], src->n[ks], n, p) !=
          interval(src->c[ks], src->n[ks], n, q)) {
        if (mutant_cut_add(dst, kd, o, nout))
          return -1;
        break;
      }
    }
  return 0;
}

static int cut_conv(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  const mutant_cuts *x = &cu[nd->in[0]], *w = &cu[nd->in[1]];
  const ir_shape *xs = &g->tensors[nd->in[0]].shape,
                 *ws = &g->tensors[nd->in[1]].shape;
  mutant_cuts *y = &cu[nd->out[0]];
  const ir_shape *ys = &g->tensors[nd->out[0]].shape;
  const ir_attrs *a = &nd->a;
  int64_t og = ys->dim[1] / a->groups;
  if (carry(y, 0, x, 0, 0, ys->dim[0]) || carry(y, 1, w, 0, 0, ys->dim[1]) ||
      (nd->nin > 2 && carry(y, 1, &cu[nd->in[2]], 0, 0, ys->dim[1])))
    return -1;
  for (int64_t o = og; a->groups > 1 && o < ys->dim[1]; o += og)
    if (mutant_cut_add(y, 1, o, ys->dim[1]))
      return -1;
  for (int ax = 2; ax < 4; ax++)
    if (window(y, ax, x, ax, xs->dim[ax], ys->dim[ax], ws->dim[ax],
               a->stride[ax - 2], a->dilation[ax - 2], a->pad[ax - 2]))
      return -1;
  return 0;
}

static int cut_pool(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  const mutant_cuts *x = &cu[nd->in[0]];
  const ir_shape *xs = &g->tensors[nd->in[0]].shape;
  mutant_cuts *y = &cu[nd->out[0]];
  const ir_shape *ys = &g->tensors[nd->out[0]].shape;
  if (carry(y, 0, x, 0, 0, ys->dim[0]) || carry(y, 1, x, 1, 0, ys->dim[1]))
    return -1;
  for (int ax = 2; ax < 4; ax++)
    if (window(y, ax, x, ax, xs->dim[ax], ys->dim[ax], nd->a.kernel[ax - 2],
               nd->a.stride[ax - 2], 1, nd->a.pad[ax - 2]))
      return -1;
  return 0;
}

static int cut_matmul(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  const ir_shape *as = &g->tensors[nd->in[0]].shape,
                 *bs = &g->tensors[nd->in[1]].shape;
  const ir_shape *ys = &g->tensors[nd->out[0]].shape;
  const mutant_cuts *a = &cu[nd->in[0]], *b = &cu[nd->in[1]];
  mutant_cuts *y = &cu[nd->out[0]];
  int r = ys->rank;
  if (carry(y, r - 2, a, as->rank - 2, 0, ys->dim[r - 2]) ||
      carry(y, r - 1, b, bs->rank - 1, 0, ys->dim[r - 1]))
    return -1;
  for (int k = 3; k <= r; k++) { /* leading (batch) axes, broadcast */
    int ko = r - k;
    if (as->rank - k >= 0 && as->dim[as->rank - k] == ys->dim[ko] &&
        carry(y, ko, a, as->rank - k, 0, ys->dim[ko]))
      return -1;
    if (bs->rank - k >= 0 && bs->dim[bs->rank - k] == ys->dim[ko] &&
        carry(y, ko, b, bs->rank - k, 0, ys->dim[ko]))
      return -1;
  }
  if (nd->nin > 2 &&
      carry_bcast(y, ys, &cu[nd->in[2]], &g->tensors[nd->in[2]].shape))
    return -1;
  return 0;
}

static int cut_concat(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  const ir_shape *ys = &g->tensors[nd->out[0]].shape;
  mutant_cuts *y = &cu[nd->out[0]];
  int ax = nd->a.axis;
  int64_t off = 0;
  for (int i = 0; i < nd->nin; i++) {
    const mutant_cuts *x = &cu[nd->in[i]];
    for (int k = 0; k < ys->rank; k++)
      if (carry(y, k, x, k, k == ax ? off : 0, ys->dim[k]))
        return -1;
    if (mutant_cut_add(y, ax, off, ys->dim[ax]))
      return -1;
    off += g->tensors[nd->in[i]].shape.dim[ax];
  }
  return 0;
}

/* Cuts of x restricted to [lo[k], lo[k] + dim[k]) on every axis (slice and
 * split pieces), shifted to start at 0. */
static int restrict_to(mutant_cuts *y, const ir_shape *ys, const mutant_cuts *x,
                       const int64_t *lo) {
  for (int k = 0; k < ys->rank; k++)
    for (int i = 0; i < x->n[k]; i++)
      if (mutant_cut_add(y, k, x->c[k][i] - lo[k], ys->dim[k]))
        return -1;
  return 0;
}

/* Part k's outputs: itself, or its activation, or both (act=, acted=). */
static int cut_split(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  int64_t lo[IR_MAX_RANK] = {0};
  for (int k = 0, j = 0; k < nd->a.nlist; k++) {
    int m = nd->a.nlist2 ? (int)nd->a.list2[k] : nd->a.act != IR_ACT_NONE;
    for (int c = 0; c < (m == 2 ? 2 : 1); c++, j++)
      if (restrict_to(&cu[nd->out[j]], &g->tensors[nd->out[j]].shape,
                      &cu[nd->in[0]], lo))
        return -1;
    lo[nd->a.axis] += nd->a.list[k];
  }
  return 0;
}

static int cut_pad(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  const ir_shape *xs = &g->tensors[nd->in[0]].shape,
                 *ys = &g->tensors[nd->out[0]].shape;
  mutant_cuts *y = &cu[nd->out[0]];
  for (int k = 0; k < ys->rank; k++) {
    int64_t b = nd->a.list[k];
    if (carry(y, k, &cu[nd->in[0]], k, b, ys->dim[k]) ||
        mutant_cut_add(y, k, b, ys->dim[k]) ||
        mutant_cut_add(y, k, b + xs->dim[k], ys->dim[k]))
      return -1;
  }
  return 0;
}

static int cut_transpose(const ir_graph *g, const ir_node *nd,
                         mutant_cuts *cu) {
  const ir_shape *ys = &g->tensors[nd->out[0]].shape;
  for (int k = 0; k < ys->rank; k++)
    if (carry(&cu[nd->out[0]], k, &cu[nd->in[0]], (int)nd->a.list[k], 0,
              ys->dim[k]))
      return -1;
  return 0;
}

/* One group of a reshape: input axes [i0, i1) hold the same elements as
 * output axes [o0, o1). Flatten the group (cut at every row of its last
 * input axis, plus that axis's own cuts in every row), then split the flat
 * axis into the output axes one by one: an axis of size a*b with cuts C
 * becomes an outer axis cut at c/b (and c/b+1 when c is inside a row) and an
 * inner one cut at c%b. */
static int reshape_group(const ir_shape *xs, const mutant_cuts *x, int i0,
                         int i1, const ir_shape *ys, mutant_cuts *y, int o0,
                         int o1) {
  mutant_cuts flat = {{0}, {NULL}}, next;
  int64_t n = 1, row = xs->dim[i1 - 1];
  int rc = 0;
  for (int i = i0; i < i1; i++)
    n *= xs->dim[i];
  for (int64_t m = 0; m < n && !rc; m += row) {
    rc |= mutant_cut_add(&flat, 0, m, n);
    for (int i = 0; i < x->n[i1 - 1] && !rc; i++)
      rc |= mutant_cut_add(&flat, 0, m + x->c[i1 - 1][i], n);
  }
  for (int k = o0; k < o1 - 1 && !rc; k++) {
    int64_t b = n / ys->dim[k];
    memset(&next, 0, sizeof next);
    for (int i = 0; i < flat.n[0] && !rc; i++) {
      int64_t c = flat.c[0][i];
      rc |= mutant_cut_add(y, k, c / b, ys->dim[k]);
      if (c % b)
        rc |= mutant_cut_add(y, k, c / b + 1, ys->dim[k]) |
              mutant_cut_add(&next, 0, c % b, b);
    }
    free(flat.c[0]);
    flat = next;
    mutant_cut_norm(&flat);
    n = b;
  }
  if (!rc)
    rc = carry(y, o1 - 1, &flat, 0, 0, ys->dim[o1 - 1]);
  free(flat.c[0]);
  return rc;
}

/* Reshape: the axes are matched into groups of equal products (size-1 axes
 * alone); an axis kept as is carries its cuts, merged or split axes go
 * through reshape_group. */
static int cut_reshape(const ir_graph *g, const ir_node *nd, mutant_cuts *cu) {
  const ir_shape *xs = &g->tensors[nd->in[0]].shape,
                 *ys = &g->tensors[nd->out[0]].shape;
  const mutant_cuts *x = &cu[nd->in[0]];
  mutant_cuts *y = &cu[nd->out[0]];
  int i = 0, o = 0, rc = 0;
  while (!rc && i < xs->rank && o < ys->rank) {
    if (xs->dim[i] == 1 || ys->dim[o] == 1) { /* no cuts on size-1 axes */
      i += xs->dim[i] == 1, o += ys->dim[o] == 1;
      continue;
    }
    int i1 = i + 1, o1 = o + 1;
    int64_t pi = xs->dim[i], po = ys->dim[o];
    while (pi != po && i1 <= xs->rank && o1 <= ys->rank) {
      if (pi < po && i1 < xs->rank)
        pi *= xs->dim[i1++];
      else if (po < pi && o1 < ys->rank)
        po *= ys->dim[o1++];
      else
        break;
    }
    if (pi != po) /* cannot happen for equal element counts */
      return -1;
    rc = i1 - i == 1 && o1 - o == 1 ? carry(y, o, x, i, 0, ys->dim[o])
                                    : reshape_group(xs, x, i, i1, ys, y, o, o1);
    i = i1, o = o1;
  }
  return rc;
}

static int cut_node(const ir_graph *g, const ir_node *nd, mutant_cuts *cu,
                    base_diag *d) {
  const ir_shape *ys = &g->tensors[nd->out[0]].shape;
  switch (nd->op) {
  case IR_OP_CONV2D: return cut_conv(g, nd, cu);
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL: return cut_pool(g, nd, cu);
  case IR_OP_MATMUL: return cut_matmul(g, nd, cu);
  case IR_OP_CONCAT: return cut_concat(g, nd, cu);
  case IR_OP_SPLIT: return cut_split(g, nd, cu);
  case IR_OP_SLICE:
    return restrict_to(&cu[nd->out[0]], ys, &cu[nd->in[0]], nd->a.list);
  case IR_OP_PAD: return cut_pad(g, nd, cu);
  case IR_OP_TRANSPOSE: return cut_transpose(g, nd, cu);
  case IR_OP_RESHAPE: return cut_reshape(g, nd, cu);
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
#include "../ir/ew_cases.h"
  case IR_OP_CLIP:
    for (int i = 0; i < nd->nin; i++)
      if (carry_bcast(&cu[nd->out[0]], ys, &cu[nd->in[i]],
                      &g->tensors[nd->in[i]].shape))
        return -1;
    return 0;
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_ENLARGE:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: break;
  }
  base_diag_set(d, BASE_ERR_PARAM, nd->line, nd->col,
                "mutant: the box analysis has no cut rule for %s",
                ir_op(nd->op)->name);
  return 1;
}

base_status mutant_cut_graph(const ir_graph *g, mutant_cuts **out,
                             base_diag *d) {
  mutant_cuts *cu = base_calloc((size_t)g->ntensors + 1, sizeof *cu);
  if (!cu)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int k = 0; k < g->nnodes; k++) {
    const ir_node *nd = &g->nodes[k];
    int rc = cut_node(g, nd, cu, d);
    if (rc) {
      mutant_cuts_free(cu, g->ntensors);
      return rc < 0 ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                    : BASE_ERR_PARAM;
    }
    for (int j = 0; j < nd->nout; j++)
      mutant_cut_norm(&cu[nd->out[j]]);
  }
  *out = cu;
  return BASE_OK;
}
