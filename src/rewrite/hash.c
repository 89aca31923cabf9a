/* hash.c: the search's structural hash and per-graph summaries.
 *
 * The search tells new graphs from seen ones by a Merkle hash: a leaf
 * (input or weight) hashes its kind, name and shape; a node output hashes
 * the operator, arity, output slot, parameters and its inputs' hashes; a
 * graph hashes its outputs' hashes in order. Nodes that no output reaches
 * do not count (the rewriter drops them anyway). Every candidate of one
 * search shares the leaves' names, so this identifies graphs as
 * ir_graph_hash does, and it can be computed for a rewrite's result from
 * its parent's hashes without building the result (rewrite.c's probe).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "rewrite_int.h"

uint64_t rewrite_leaf_hash(const ir_tensor *t) {
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  int32_t k[2] = {(int32_t)t->kind, t->shape.rank};
  XXH3_64bits_update(&s, k, sizeof k);
  XXH3_64bits_update(&s, t->shape.dim, sizeof(int64_t) * (size_t)k[1]);
  XXH3_64bits_update(&s, t->name, strlen(t->name));
  return XXH3_64bits_digest(&s);
}

uint64_t rewrite_out_hash(ir_opcode op, const ir_attrs *a, const uint64_t *in,
                          int nin, int slot) {
  struct {
    ir_attrs a;
    int32_t op, nin, slot, pad;
    uint64_t in[IR_MAX_IN];
  } k;
  memset(&k, 0, sizeof k);
  k.a = *a;
  k.op = op;
  k.nin = nin;
  k.slot = slot;
  memcpy(k.in, in, sizeof(uint64_t) * (size_t)nin);
  return XXH3_64bits(&k, sizeof k - sizeof k.in + sizeof(uint64_t) * nin);
}

uint64_t rewrite_outputs_hash(const uint64_t *out, int n) {
  return XXH3_64bits(out, sizeof(uint64_t) * (size_t)n);
}

void rewrite_gsum_free(rewrite_gsum *s) {
  free(s->th);
  free(s->wo);
  free(s->nc);
  free(s->nh);
  free(s->cwo);
  memset(s, 0, sizeof *s);
}

/* Hashes of every tensor of g, in node order (topological). */
static void hash_tensors(const ir_graph *g, uint64_t *th) {
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE)
      th[t] = rewrite_leaf_hash(&g->tensors[t]);
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    uint64_t in[IR_MAX_IN];
    for (int k = 0; k < n->nin; k++)
      in[k] = th[n->in[k]];
    for (int o = 0; o < n->nout; o++)
      th[n->out[o]] = rewrite_out_hash(n->op, &n->a, in, n->nin, o);
  }
}

base_status rewrite_gsum_build(rewrite_gsum *s, const ir_graph *g, cd_cost_fn f,
                               void *u, base_diag *d) {
  memset(s, 0, sizeof *s);
  s->g = g;
  s->f = f;
  s->u = u;
  size_t nt = (size_t)g->ntensors + 1, nn = (size_t)g->nnodes + 1;
  s->th = base_malloc(sizeof(uint64_t) * nt);
  s->nh = base_malloc(sizeof(uint64_t) * nt);
  s->wo = base_calloc(nn, 1);
  s->nc = base_malloc(sizeof(double) * nn);
  s->cwo = base_malloc(nt + nn + 2 * REWRITE_MAX_PTENSORS);
  if (!s->th || !s->nh || !s->wo || !s->nc || !s->cwo) {
    rewrite_gsum_free(s);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  hash_tensors(g, s->th);
  ir_weight_only(g, s->wo);
  for (int i = 0; i < g->nnodes; i++)
    s->nc[i] = NAN; /* costed when first needed */
  uint64_t out[256], *o = g->noutputs <= 256 ? out : NULL;
  if (!o && !(o = base_malloc(sizeof(uint64_t) * (size_t)g->noutputs))) {
    rewrite_gsum_free(s);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  for (int i = 0; i < g->noutputs; i++)
    o[i] = s->th[g->outputs[i]];
  s->hash = rewrite_outputs_hash(o, g->noutputs);
  if (o != out)
    free(o);
  return BASE_OK;
}

base_status rewrite_gsum_node_cost(rewrite_gsum *s, int i, double *cost,
                                   int *estimated, base_diag *d) {
  if (isnan(s->nc[i])) { /* (an estimate is reported when first costed) */
    int e = 0;
    double c = 0;
    base_status st = s->f(s->u, s->g, i, &c, &e, d);
    if (st)
      return st;
    s->nc[i] = c;
    *estimated |= e;
  }
  *cost += s->nc[i];
  return BASE_OK;
}

uint64_t rewrite_graph_shash(const ir_graph *g, base_diag *d, base_status *st) {
  rewrite_gsum s;
  *st = rewrite_gsum_build(&s, g, NULL, NULL, d);
  uint64_t h = s.hash;
  rewrite_gsum_free(&s);
  return h;
}
