/* se.c: squeeze-and-excitation's squeeze as one kernel.
 *
 *     p = global_avgpool(x)                  [N, C, 1, 1]
 *     h = conv2d(p, w1 [R, C, 1, 1], b1)     act1: none, relu or sigmoid
 *     s = conv2d(h, w2 [C2, R, 1, 1], b2)    act2: those or a folded clip
 *
 * Run node by node that is five launches at batch 1 (the pool's partial
 * sums and their sum, two GEMMs, the bias and sigmoid), each a few
 * hundred floats of work: in a CUDA-graph replay each still costs 1 to
 * 2 us. Folded, the pool's step runs kse.cu's kernel, which writes s (p
 * and h stay in its shared memory), and the two convolutions run nothing
 * (nor are they prepared: no algorithm search). The fold requires p and h each
 * read by the next node alone (neither a graph output), unpadded 1x1
 * convolutions without groups on 1x1 images, filters and biases that are
 * weights or computed from weights only (they exist before the pool runs), and
 * no residual add folded into either. s may have any readers. Values: the same
 * sums and dot products as the nodes', in fp32 (the GEMMs may use TF32); the
 * end-to-end check compares against the CPU reference. Chains with large
 * filters stay node by node (SE_MAX_WEIGHTS, measured). $SUPEROPT_SE=0
 * turns the fold off (A/B timings, tests).
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

static const ir_shape *shp(const gpu_plan *p, int t) {
  return &p->g->tensors[t].shape;
}

/* Is node i an unpadded, ungrouped 1x1 convolution of tensor x ([N, C, 1,
 * 1]) to [N, O, 1, 1] with weight-like parameters, nothing folded into it
 * but an activation? */
static int squeeze_conv(const gpu_plan *p, const unsigned char *wonly, int i,
                        int x) {
  const ir_node *n = &p->g->nodes[i];
  const gpu_step *s = &p->steps[i];
  if (n->op != IR_OP_CONV2D || n->in[0] != x || n->a.groups != 1 || wonly[i] ||
      s->view || s->res || s->res_conv)
    return 0;
  for (int k = 0; k < 4; k++)
    if (n->a.pad[k])
      return 0;
  const ir_shape *xs = shp(p, x), *w = shp(p, n->in[1]), *y = shp(p, n->out[0]);
  if (w->rank != 4 || w->dim[1] != xs->dim[1] || w->dim[2] != 1 ||
      w->dim[3] != 1 || y->rank != 4 || y->dim[0] != xs->dim[0] ||
      y->dim[1] != w->dim[0] || y->dim[2] != 1 || y->dim[3] != 1)
    return 0;
  for (int k = 1; k < n->nin; k++)
    if (!gpu_weight_like(p->g, wonly, n->in[k]))
      return 0;
  return 1;
}

/* Chains whose two filters hold more floats than this stay node by node:
 * there the GEMMs win. H200, two runs each: MobileNet-V3 batch 16 0.768 ms
 * with every chain folded, 0.750 ms without its four of 115k to 461k
 * floats; batch 1 0.337 ms either way; RegNet-Y unchanged (0.492 / 1.021
 * ms without its two of 125k and 307k floats; 0.517 / 1.071 ms with a
 * 40k limit). $SUPEROPT_SE_MAXW overrides it. */
#define SE_MAX_WEIGHTS 100000

void gpu_se_fold(gpu_plan *p, const int *reads, const unsigned char *wonly) {
  const char *env = getenv("SUPEROPT_SE"), *mw = getenv("SUPEROPT_SE_MAXW");
  if (env && !strcmp(env, "0"))
    return;
  long long max_weights = mw && *mw ? atoll(mw) : SE_MAX_WEIGHTS;
  const ir_graph *g = p->g;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *n = &g->nodes[j];
    if (n->op != IR_OP_GLOBAL_AVGPOOL || wonly[j] || p->steps[j].view ||
        shp(p, n->in[0])->rank != 4)
      continue;
    int f1 = gpu_sole_reader(p, reads, n->out[0]);
    if (f1 < 0 || !squeeze_conv(p, wonly, f1, n->out[0]))
      continue;
    int f2 = gpu_sole_reader(p, reads, g->nodes[f1].out[0]),
        a1 = gpu_se_act(p, f1);
    if (f2 < 0 || !squeeze_conv(p, wonly, f2, g->nodes[f1].out[0]) || a1 < 0 ||
        a1 == CXK_CLIP || gpu_se_act(p, f2) < 0)
      continue;
    p->steps[j].se = 1 + f2;
    cxk_se a = gpu_se_args(p, j); /* layouts are not known yet: both must run
                                 (channels-last needs more shared memory) */
    cxk_se b = a;
    a.cl = 0, b.cl = 1;
    if (!cxk_se_ok(&a) || !cxk_se_ok(&b) ||
        a.r * a.c + a.c2 * a.r > max_weights) {
      p->steps[j].se = 0;
      continue;
    }
    p->steps[f1].se_by = p->steps[f2].se_by = 1 + j;
  }
}
