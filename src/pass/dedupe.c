/* dedupe.c: small weights of equal values made one tensor.
 *
 * Exporters write each layer's constants anew: BERT's every layer builds
 * its additive mask where(mask, 0, -inf) from its own two scalar
 * constants, so common-subexpression elimination (which compares inputs
 * by tensor) keeps one mask node a layer, one launch each. Weights of at
 * most PASS_DEDUPE_MAX elements with known values, of one type and shape
 * and bitwise equal values, are made the first of them; pass_cse then
 * merges the nodes that read them.
 */
#include <stdlib.h>
#include <string.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

#define PASS_DEDUPE_MAX 16

/* Whether weight t is small with known values. */
static int small(const ir_tensor *t) {
  return t->kind == IR_T_WEIGHT && t->data &&
         ir_shape_numel(&t->shape) <= PASS_DEDUPE_MAX;
}

static int same(const ir_tensor *a, const ir_tensor *b) {
  return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) &&
         !memcmp(a->data, b->data,
                 sizeof(float) * (size_t)ir_shape_numel(&a->shape));
}

ir_graph *pass_dedupe_weights(const ir_graph *g, int *count, base_diag *d) {
  int32_t *first = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  int32_t *seen = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  uint8_t *used = base_malloc((size_t)g->ntensors + 1);
  rewrite_builder b;
  int nseen = 0;
  *count = 0;
  if (!first || !seen || !used) {
    free(first), free(seen), free(used);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  for (int t = 0; t < g->ntensors; t++) {
    first[t] = t, used[t] = 1;
    if (!small(&g->tensors[t]))
      continue;
    for (int k = 0; k < nseen && first[t] == t; k++)
      if (same(&g->tensors[seen[k]], &g->tensors[t]))
        first[t] = seen[k], used[t] = 0, ++*count;
    if (first[t] == t)
      seen[nseen++] = t;
  }
  free(seen);
  base_status st = rewrite_build_begin(&b, g, used, d);
  if (st) {
    free(first), free(used);
    return NULL;
  }
  for (int t = 0; t < g->ntensors; t++)
    if (first[t] != t)
      b.map[t] = b.map[first[t]];
  for (int i = 0; i < g->nnodes && !st; i++)
    st = rewrite_build_copy(&b, i, NULL);
  free(first), free(used);
  return rewrite_build_finish(&b, st);
}
