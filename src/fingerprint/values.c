/* values.c: modular evaluation of whole ir_graphs (rules as written, not
 * compact enumerated graphs): the value hash of every tensor, which the
 * prune stage uses to find values both sides of a pair compute, and the
 * node evaluator the normal-form check of imported rules shares.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fp_int.h"

int fp_ir_node(const ir_graph *g, int k, uint32_t **val, uint64_t key) {
  const ir_node *n = &g->nodes[k];
  const ir_shape *ins[IR_MAX_IN];
  const uint32_t *in[IR_MAX_IN];
  ir_shape outs[EN_NSLOTS];
  uint32_t *out[EN_NSLOTS];
  if (n->nout > EN_NSLOTS)
    return -1;
  for (int j = 0; j < n->nin; j++) {
    ins[j] = &g->tensors[n->in[j]].shape;
    if (!(in[j] = val[n->in[j]]))
      return -1;
  }
  for (int j = 0; j < n->nout; j++) {
    outs[j] = g->tensors[n->out[j]].shape;
    int64_t m = ir_shape_numel(&outs[j]);
    if (m > EN_MAX_NUMEL)
      return -1;
    if (!(val[n->out[j]] = base_malloc((size_t)m * 4 + 4)))
      return -2;
    out[j] = val[n->out[j]];
  }
  return fp_kernel(n->op, &n->a, ins, in, n->nin, outs, out, key) ? -1 : 0;
}

/* Residues of a graph input or weight: seeded by its name and shape, so
 * both sides of a rule read the same values. */
static uint32_t *leaf_values(const ir_tensor *t, uint64_t seed) {
  int64_t m = ir_shape_numel(&t->shape);
  if (m > EN_MAX_NUMEL)
    return NULL;
  uint32_t *v = base_malloc((size_t)m * 4 + 4);
  if (v)
    fp_random(v, m, seed, XXH3_64bits(t->name, strlen(t->name)));
  return v;
}

base_status fp_value_hashes(const ir_graph *g, uint64_t seed, uint64_t *h) {
  size_t n = (size_t)g->ntensors + 1;
  uint32_t **val = base_calloc(n, sizeof *val);
  if (!val)
    return BASE_ERR_NOMEM;
  int oom = 0;
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind != IR_T_VALUE) {
      val[i] = leaf_values(&g->tensors[i], seed);
      oom |= !val[i] && ir_shape_numel(&g->tensors[i].shape) <= EN_MAX_NUMEL;
    }
  uint64_t key = XXH3_64bits_withSeed("act", 3, seed);
  for (int k = 0; !oom && k < g->nnodes; k++) /* -1 leaves outputs NULL */
    oom = fp_ir_node(g, k, val, key) == -2;
  for (int i = 0; i < g->ntensors; i++) {
    h[i] = val[i] ? fp_tensor_hash(&g->tensors[i].shape, val[i]) : 0;
    free(val[i]);
  }
  free(val);
  return oom ? BASE_ERR_NOMEM : BASE_OK;
}
