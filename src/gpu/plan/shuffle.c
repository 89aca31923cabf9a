/* shuffle.c: a concat and its channel shuffle as one kernel.
 *
 * ShuffleNet V2 ends every block with
 *     k = concat(a, b) axis=1              [N, C, H, W]
 *     r = reshape(k) [N, g, C/g, H, W]
 *     t = transpose(r) perm=[0,2,1,3,4]    [N, C/g, g, H, W]
 *     y = reshape(t) [N, C, H, W]
 * and the next block cuts y into channel halves with two slices. Run
 * node by node, that is a concat, a strided copy and two more copies, and
 * the reshapes pin the concat to NCHW, so its channels-last inputs are
 * converted too (layout.c): six kernels a block. Inductor does it in one.
 *
 * Folded, the concat's step computes y's channels directly from its inputs
 * (kmove.cu's k_shuffle) and writes them into the outputs of the slices
 * that alone read y (or into y itself where anything else reads it), each
 * in its own layout; the transpose becomes a view (y's bytes are the
 * concat's), the reshapes stay views, and the slices run nothing. The
 * concat's output k and r are then never materialised: nothing else reads
 * them, which the fold requires (each of k, r, t read once, by the next
 * node of the chain, none a graph output). A folded slice's output lives
 * from the concat on (plan.c's lifetimes). Values are unchanged: the
 * kernel computes exactly what the chain computes, element for element.
 */
#include <string.h>

#include "../gpu_int.h"

static const ir_shape *shp(const gpu_plan *p, int t) {
  return &p->g->tensors[t].shape;
}

/* Is node i a slice of y ([N, C, H, W]) keeping everything but a channel
 * range? */
static int channel_slice(const gpu_plan *p, int i, int y) {
  const ir_node *n = &p->g->nodes[i];
  const ir_shape *ys = shp(p, y), *os;
  if (n->op != IR_OP_SLICE || n->in[0] != y || n->a.nlist != 4)
    return 0;
  os = shp(p, n->out[0]);
  return os->rank == 4 && n->a.list[0] == 0 && n->a.list[2] == 0 &&
         n->a.list[3] == 0 && os->dim[0] == ys->dim[0] &&
         os->dim[2] == ys->dim[2] && os->dim[3] == ys->dim[3];
}

/* The chain after concat j: returns y (the shuffled result) and sets *g
 * and the chain's nodes, or returns -1. */
static int chain(const gpu_plan *p, const int *reads,
                 const unsigned char *wonly, int j, int *g, int node[3]) {
  const ir_graph *gr = p->g;
  const ir_node *c = &gr->nodes[j];
  if (c->op != IR_OP_CONCAT || c->a.axis != 1 || c->nin > CXK_PARTS ||
      wonly[j] || c->a.act != IR_ACT_NONE || shp(p, c->out[0])->rank != 4)
    return -1;
  for (int k = 0; k < c->nin; k++)
    if (shp(p, c->in[k])->rank != 4)
      return -1;
  const int64_t *d = shp(p, c->out[0])->dim;
  int r1 = gpu_sole_reader(p, reads, c->out[0]);
  if (r1 < 0 || gr->nodes[r1].op != IR_OP_RESHAPE)
    return -1;
  const ir_shape *rs = shp(p, gr->nodes[r1].out[0]);
  if (rs->rank != 5 || rs->dim[0] != d[0] || rs->dim[1] * rs->dim[2] != d[1] ||
      rs->dim[3] != d[2] || rs->dim[4] != d[3] || rs->dim[1] < 1 ||
      rs->dim[1] > 1 << 20)
    return -1;
  int t = gpu_sole_reader(p, reads, gr->nodes[r1].out[0]);
  const ir_node *tn = t >= 0 ? &gr->nodes[t] : NULL;
  static const int64_t perm[5] = {0, 2, 1, 3, 4};
  if (!tn || tn->op != IR_OP_TRANSPOSE || tn->a.nlist != 5 ||
      memcmp(tn->a.list, perm, sizeof perm) != 0 || p->steps[t].view)
    return -1;
  int r2 = gpu_sole_reader(p, reads, tn->out[0]);
  if (r2 < 0 || gr->nodes[r2].op != IR_OP_RESHAPE ||
      !ir_shape_eq(shp(p, gr->nodes[r2].out[0]), shp(p, c->out[0])))
    return -1;
  *g = (int)rs->dim[1];
  node[0] = r1, node[1] = t, node[2] = r2;
  return gr->nodes[r2].out[0];
}

void gpu_shuffle_fold(gpu_plan *p, const int *reads,
                      const unsigned char *wonly) {
  const ir_graph *g = p->g;
  for (int j = 0; j < g->nnodes; j++) {
    int gg, node[3], y = chain(p, reads, wonly, j, &gg, node);
    if (y < 0)
      continue;
    gpu_step *s = &p->steps[j];
    s->shuffle = gg;
    s->shuf_y = y;
    for (int k = 0; k < 3; k++)
      p->steps[node[k]].shuf_by = 1 + j;
    p->steps[node[1]].view = 1; /* the transpose: the concat writes y */
    p->steps[node[1]].view_in = 0;
    /* the slices that read y, when nothing else does */
    int ns = 0, only = 1;
    for (int i = 0; i < g->noutputs; i++)
      only = only && g->outputs[i] != y;
    for (int i = 0; only && i < g->nnodes; i++)
      for (int k = 0; k < g->nodes[i].nin; k++)
        if (g->nodes[i].in[k] == y) {
          only = channel_slice(p, i, y) && ns < CXK_PARTS;
          if (only)
            s->shuf_out[ns++] = i;
          break;
        }
    if (!only || ns == 0)
      continue;
    s->nshuf_out = ns;
    for (int k = 0; k < ns; k++)
      p->steps[s->shuf_out[k]].shuf_by = 1 + j;
  }
}

int gpu_shuffle_slice(const gpu_plan *p, int i) {
  return p->g->nodes[i].op == IR_OP_SLICE && p->steps[i].shuf_by;
}
