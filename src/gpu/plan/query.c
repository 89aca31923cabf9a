/* query.c: what the planning passes ask of the graph and of the plan's
 * steps: whether a tensor is a weight or computed from weights alone, a
 * tensor's only reader, which node's step computes a node (gpu.h's
 * gpu_plan_computed_by) and whether a node runs kernels of its own.
 */
#include "../gpu_int.h"

int gpu_weight_like(const ir_graph *g, const unsigned char *wonly, int t) {
  const ir_tensor *x = &g->tensors[t];
  return x->kind != IR_T_VALUE || wonly[x->node];
}

int gpu_sole_reader(const gpu_plan *p, const int *reads, int t) {
  if (reads[t] != 1) /* graph outputs count: an output read once has none */
    return -1;
  for (int i = 0; i < p->g->nnodes; i++)
    for (int k = 0; k < p->g->nodes[i].nin; k++)
      if (p->g->nodes[i].in[k] == t)
        return i;
  return -1;
}

int gpu_plan_computed_by(const gpu_plan *p, int i) {
  return p->steps[i].view ? -1 : i;
}

int gpu_plan_channels_last(const gpu_plan *p, int t) { return gpu_is_cl(p, t); }

int gpu_plan_runs(const gpu_plan *p, int i) {
  return !p->wonly[i] && gpu_plan_computed_by(p, i) == i;
}
