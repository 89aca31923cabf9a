/* cost.c: the built-in roofline cost model and graph costs.
 *
 * A node costs max(flops / PEAK_FLOPS, bytes / PEAK_BW) plus a launch
 * overhead, in microseconds, with figures of a data-centre GPU: enough to
 * rank rewrites (fewer launches, less traffic, same arithmetic) until a
 * measured cost database (src/costdb/) is plugged in through srch_cost_fn.
 * Weight-only nodes are free: they run once when the weights are loaded.
 */
#include <stdlib.h>
#include <string.h>

#include "srch_int.h"

#define PEAK_FLOPS 15e12 /* FLOP/s */
#define PEAK_BW 900e9    /* bytes/s */
#define LAUNCH_US 2.0    /* per kernel */

static double numel(const ir_graph *g, int t) {
  return (double)ir_shape_numel(&g->tensors[t].shape);
}

static double node_flops(const ir_graph *g, const ir_node *n) {
  double out = numel(g, n->out[0]);
  switch (n->op) {
  case IR_OP_CONV2D: {
    const ir_shape *w = &g->tensors[n->in[1]].shape;
    return 2.0 * out * (double)(w->dim[1] * w->dim[2] * w->dim[3]);
  }
  case IR_OP_MATMUL: {
    const ir_shape *a = &g->tensors[n->in[0]].shape;
    return 2.0 * out * (double)a->dim[a->rank - 1];
  }
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL: return out * n->a.kernel[0] * n->a.kernel[1];
  case IR_OP_GELU:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_BATCHNORM: return 8.0 * out;
  case IR_OP_FUSED: {
    const ir_body *b = ir_body_get(n->a.body);
    return out * (b ? b->nops : 1);
  }
  default: return out;
  }
}

static double node_bytes(const ir_graph *g, const ir_node *n) {
  double b = 0;
  for (int k = 0; k < n->nin; k++)
    b += numel(g, n->in[k]);
  for (int k = 0; k < n->nout; k++)
    b += numel(g, n->out[k]);
  return 4.0 * b;
}

double srch_roofline_cost(void *u, const ir_graph *g, int node,
                          int *estimated) {
  (void)u;
  const ir_node *n = &g->nodes[node];
  if (estimated)
    *estimated = 1;
  if (n->op == IR_OP_SPLIT || n->op == IR_OP_RESHAPE)
    return 0; /* views of their input */
  double f = node_flops(g, n) / PEAK_FLOPS, m = node_bytes(g, n) / PEAK_BW;
  return (f > m ? f : m) * 1e6 + LAUNCH_US;
}

double srch_graph_cost(const ir_graph *g, srch_cost_fn f, void *u,
                       int *estimated) {
  uint8_t small[256], *mask = small;
  if (g->nnodes > (int)sizeof small && !(mask = malloc((size_t)g->nnodes)))
    return 1e300;
  ir_weight_only(g, mask);
  double c = 0;
  int est = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (mask[i])
      continue;
    int e = 0;
    c += f(u, g, i, &e);
    est |= e;
  }
  if (mask != small)
    free(mask);
  if (estimated)
    *estimated = est;
  return c;
}
