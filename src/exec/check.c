/* check.c: the end-to-end check of an optimization: run the original and
 * the optimized graph on the CPU reference executor with the same inputs
 * and weights, and measure how far their outputs are apart.
 *
 * The optimized graph's inputs and weights are copied from the original's
 * by name (rather than drawn again), because a weight's random values
 * depend on its first reader, which rewrites may change.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

static base_status share_leaves(const ir_graph *a, const ex_values *va,
                                const ir_graph *b, ex_values *vb,
                                base_diag *d) {
  for (int t = 0; t < b->ntensors; t++) {
    const ir_tensor *x = &b->tensors[t];
    if (x->kind == IR_T_VALUE)
      continue;
    int s = ir_find_tensor(a, x->name);
    if (s < 0 || a->tensors[s].kind == IR_T_VALUE ||
        !ir_shape_eq(&a->tensors[s].shape, &x->shape)) {
      if (x->data)
        continue; /* known values: ex_fill_random copies them */
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "optimized graph reads '%s', which the original "
                           "graph has not as an input or weight of that shape",
                           x->name);
    }
    size_t n = sizeof(float) * (size_t)ir_shape_numel(&x->shape);
    if (!(vb->v[t] = base_malloc(n)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    memcpy(vb->v[t], va->v[s], n);
  }
  return BASE_OK;
}

static double output_error(const float *x, const float *y, int64_t n) {
  double scale = 0, diff = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)x[i] - (double)y[i]);
    if (fabs(x[i]) > scale)
      scale = fabs(x[i]);
    if (e > diff || isnan(e))
      diff = isnan(e) ? INFINITY : e;
  }
  if (diff == 0)
    return 0;
  return scale > 0 ? diff / scale : INFINITY;
}

static base_status compare(const ir_graph *a, const ex_values *va,
                           const ir_graph *b, const ex_values *vb,
                           double *max_err, base_diag *d) {
  char s1[64], s2[64];
  *max_err = 0;
  for (int i = 0; i < a->noutputs; i++) {
    const ir_shape *sa = &a->tensors[a->outputs[i]].shape;
    const ir_shape *sb = &b->tensors[b->outputs[i]].shape;
    if (!ir_shape_eq(sa, sb))
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "output %d is %s in the original, %s optimized",
                           i + 1, ir_shape_str(sa, s1, sizeof s1),
                           ir_shape_str(sb, s2, sizeof s2));
    double e = output_error(va->v[a->outputs[i]], vb->v[b->outputs[i]],
                            ir_shape_numel(sa));
    if (e > *max_err || isnan(e))
      *max_err = e;
  }
  return BASE_OK;
}

base_status ex_check(const ir_graph *a, const ir_graph *b, uint64_t seed,
                     double *max_err, base_diag *d) {
  if (a->noutputs != b->noutputs)
    return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                         "the original has %d outputs, the optimized graph %d",
                         a->noutputs, b->noutputs);
  ex_values *va = ex_values_new(a), *vb = ex_values_new(b);
  ex_options eo = {0, 0};
  base_status st =
      va && vb ? BASE_OK
               : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = ex_fill_random(a, va, seed, d);
  if (!st)
    st = share_leaves(a, va, b, vb, d);
  if (!st)
    st = ex_fill_random(b, vb, seed, d);
  if (!st)
    st = ex_run(a, va, &eo, d);
  if (!st)
    st = ex_run(b, vb, &eo, d);
  if (!st)
    st = compare(a, va, b, vb, max_err, d);
  ex_values_free(va);
  ex_values_free(vb);
  return st;
}
