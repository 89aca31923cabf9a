/* lower_se.c: the lower stage's se family (lower.h): squeeze-and-excitation
 * chains become se nodes, channel shuffles concat_shuffle nodes (ops.def,
 * docs/graph-format.md). The CUDA executor runs each as one kernel
 * (kern/kse.cu, kern/kmove.cu's k_shuffle); these are the conditions its
 * planner used to fold them privately.
 *
 * Squeeze-and-excitation:
 *     p = global_avgpool(x)                    [N, C, 1, 1]
 *     h = conv2d(p, w1 [R, C, 1, 1], b1?)      act none, relu or sigmoid
 *     s = conv2d(h, w2 [C2, R, 1, 1], b2?)     act none, relu or sigmoid
 *    (s = clip(s) min max                      where s's act is none)
 * becomes s = se(x, w1, w2, b1, b2) act act2 min max. p and h (and the
 * unclipped s) must be read by the next node alone (no graph output), the
 * pool not computed from weights alone, the convolutions unpadded and
 * ungrouped with nothing else in their parameters, b2 only with b1, and
 * the kernel must hold the sizes: at most SE_MAX_WEIGHTS floats in the two
 * filters (above it the GEMMs win, measured on an H200: MobileNet-V3 batch
 * 16 0.768 ms with every chain folded, 0.750 ms without its four of 115k
 * to 461k floats), C + R within the kernel's 48 KiB of shared memory, N
 * at most 65535. $SUPEROPT_SE=0 turns it off, $SUPEROPT_SE_MAXW sets the
 * limit (A/B timings).
 *
 * Channel shuffle (ShuffleNet V2's block end):
 *     k = concat(a, b, ...) axis=1             [N, C, H, W]
 *     r = reshape(k) [N, g, C/g, H, W]
 *     t = transpose(r) perm=[0,2,1,3,4]
 *     y = reshape(t) [N, C, H, W]
 * with k, r and t each read by the next node alone (no graph output), at
 * most SE_PARTS inputs, becomes y = concat_shuffle(a, b, ...) groups=g
 * starts=[0] ends=[C]; where y is no graph output and every reader of it
 * is a channel slice (at most SE_PARTS of them), the slices become the
 * node's outputs (starts and ends their channel ranges).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

#define SE_MAX_WEIGHTS 100000
#define SE_SMEM_FLOATS (48 * 1024 / 4) /* kse.cu's shared memory */
#define SE_THREADS 1024                /* its widest block */
#define SE_PARTS 8 /* parts of the shuffle kernel (kern.h CXK_PARTS) */

typedef struct se_ctx {
  const ir_graph *g;
  int *reads;           /* ir_read_counts */
  unsigned char *wonly; /* ir_weight_only */
  /* per node: 0 copied, 1 dropped (folded into a lowered node), 2 the
   * lowered node's place */
  unsigned char *role;
  int *head; /* role 2: the chain's first node (the pool or the concat) */
  int *last; /* per head: the chain's last node (the SE's s, the shuffle's
                y) */
  int *outs; /* per head: the shuffle's slices, SE_PARTS each, -1 ended */
  long long max_weights;
} se_ctx;

static const ir_shape *shp(const se_ctx *c, int t) {
  return &c->g->tensors[t].shape;
}

/* The node that alone reads t (no graph output), or -1. */
static int sole_reader(const se_ctx *c, int t) {
  if (c->reads[t] != 1)
    return -1;
  for (int i = c->g->tensors[t].node + 1; i < c->g->nnodes; i++)
    for (int k = 0; k < c->g->nodes[i].nin; k++)
      if (c->g->nodes[i].in[k] == t)
        return i;
  return -1;
}

/* Is node i an unpadded, ungrouped 1x1 convolution of x ([N, C, 1, 1]) to
 * [N, O, 1, 1], with nothing in its parameters but an activation the kernel
 * runs (stride and dilation do nothing on a 1x1 image)? clip_ok: also
 * act=clip (lower_epi.c's form of a clip after it: the se node's bounds). */
static int squeeze_conv(const se_ctx *c, int i, int x, int clip_ok) {
  const ir_node *n = &c->g->nodes[i];
  if (n->op != IR_OP_CONV2D || n->in[0] != x || n->nin > 3 || c->wonly[i])
    return 0;
  ir_attrs want;
  ir_attrs_default(IR_OP_CONV2D, &want);
  memcpy(want.stride, n->a.stride, sizeof want.stride);
  memcpy(want.dilation, n->a.dilation, sizeof want.dilation);
  want.padmode = n->a.padmode;
  want.act = n->a.act;
  int clip = clip_ok && n->a.act == IR_ACT_CLIP;
  if (clip)
    want.lo = n->a.lo, want.hi = n->a.hi;
  if (memcmp(&want, &n->a, sizeof want) != 0 ||
      (n->a.act != IR_ACT_NONE && n->a.act != IR_ACT_RELU &&
       n->a.act != IR_ACT_SIGMOID && !clip))
    return 0;
  const ir_shape *xs = shp(c, x), *w = shp(c, n->in[1]);
  return w->dim[2] == 1 && w->dim[3] == 1 && xs->dim[2] == 1 && xs->dim[3] == 1;
}

/* Do the kernel's sizes hold the chain (kse.cu se_plan, cxk_se_ok)? */
static int se_fits(const se_ctx *c, const ir_shape *x, int64_t r, int64_t c2) {
  int64_t n = x->dim[0], ch = x->dim[1], hw = x->dim[2] * x->dim[3];
  int64_t tmp = ch <= SE_THREADS / 2 ? SE_THREADS / ch * ch : 0;
  return n >= 1 && n <= 65535 && n * ch * hw <= INT32_MAX &&
         n * c2 <= INT32_MAX && 2 * ch + 2 * r + tmp <= SE_SMEM_FLOATS &&
         r * ch + c2 * r <= c->max_weights;
}

/* The SE chain from pool j: its convolutions in f[0..1] and the clip (or
 * -1) in f[2]; 0 when there is none. */
static int se_chain(const se_ctx *c, int j, int f[3]) {
  const ir_graph *g = c->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_GLOBAL_AVGPOOL || c->wonly[j])
    return 0;
  f[0] = sole_reader(c, n->out[0]);
  if (f[0] < 0 || !squeeze_conv(c, f[0], n->out[0], 0))
    return 0;
  f[1] = sole_reader(c, g->nodes[f[0]].out[0]);
  if (f[1] < 0 || !squeeze_conv(c, f[1], g->nodes[f[0]].out[0], 1))
    return 0;
  if (g->nodes[f[0]].nin < 3 && g->nodes[f[1]].nin == 3)
    return 0; /* b2 without b1 */
  f[2] = -1;
  int s = g->nodes[f[1]].out[0], q = sole_reader(c, s);
  if (q >= 0 && g->nodes[q].op == IR_OP_CLIP &&
      g->nodes[f[1]].a.act == IR_ACT_NONE)
    f[2] = q;
  return se_fits(c, shp(c, n->in[0]), shp(c, g->nodes[f[0]].in[1])->dim[0],
                 shp(c, g->nodes[f[1]].in[1])->dim[0]);
}

/* Is node i a slice of y ([N, C, H, W]) keeping all but a channel range? */
static int channel_slice(const se_ctx *c, int i, int y) {
  const ir_node *n = &c->g->nodes[i];
  if (n->op != IR_OP_SLICE || n->in[0] != y || n->a.nlist != 4)
    return 0;
  const ir_shape *ys = shp(c, y), *os = shp(c, n->out[0]);
  return n->a.list[0] == 0 && n->a.list[2] == 0 && n->a.list[3] == 0 &&
         os->dim[0] == ys->dim[0] && os->dim[2] == ys->dim[2] &&
         os->dim[3] == ys->dim[3];
}

/* The shuffle after concat j: y's node (the last reshape) and the chain's
 * nodes in m[0..2], its group count in *gr; -1 when there is none. */
static int shuffle_chain(const se_ctx *c, int j, int m[3], int *gr) {
  const ir_graph *g = c->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_CONCAT || n->a.axis != 1 || n->nin > SE_PARTS ||
      c->wonly[j] || shp(c, n->out[0])->rank != 4)
    return -1;
  ir_attrs want;
  ir_attrs_default(IR_OP_CONCAT, &want);
  want.axis = 1;
  if (memcmp(&want, &n->a, sizeof want) != 0)
    return -1; /* a parameter other than the axis: not the plain concat */
  for (int k = 0; k < n->nin; k++)
    if (shp(c, n->in[k])->rank != 4 ||
        !ir_dtype_is_float(g->tensors[n->in[k]].dtype))
      return -1; /* f32, f16, bf16: the kernel moves 4- or 2-byte values */
  const int64_t *d = shp(c, n->out[0])->dim;
  int r1 = sole_reader(c, n->out[0]);
  if (r1 < 0 || g->nodes[r1].op != IR_OP_RESHAPE)
    return -1;
  const ir_shape *rs = shp(c, g->nodes[r1].out[0]);
  if (rs->rank != 5 || rs->dim[0] != d[0] || rs->dim[1] * rs->dim[2] != d[1] ||
      rs->dim[3] != d[2] || rs->dim[4] != d[3] || rs->dim[1] < 1 ||
      rs->dim[1] > 1 << 20)
    return -1;
  int t = sole_reader(c, g->nodes[r1].out[0]);
  static const int64_t perm[5] = {0, 2, 1, 3, 4};
  if (t < 0 || g->nodes[t].op != IR_OP_TRANSPOSE || g->nodes[t].a.nlist != 5 ||
      memcmp(g->nodes[t].a.list, perm, sizeof perm) != 0)
    return -1;
  int r2 = sole_reader(c, g->nodes[t].out[0]);
  if (r2 < 0 || g->nodes[r2].op != IR_OP_RESHAPE ||
      !ir_shape_eq(shp(c, g->nodes[r2].out[0]), shp(c, n->out[0])))
    return -1;
  m[0] = r1, m[1] = t, m[2] = r2;
  *gr = (int)rs->dim[1];
  return r2;
}

/* The slices that alone read y (SE_PARTS at most) into s, -1 ended; 0
 * when anything else reads it (or it is a graph output). */
static int shuffle_slices(const se_ctx *c, int y, int *s) {
  const ir_graph *g = c->g;
  int ns = 0;
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == y)
      return 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      if (g->nodes[i].in[k] == y) {
        if (!channel_slice(c, i, y) || ns == SE_PARTS)
          return 0;
        s[ns++] = i;
        break;
      }
  if (ns < SE_PARTS)
    s[ns] = -1;
  return ns;
}

/* Finds the chains: roles, heads and lasts. */
static void se_find(se_ctx *c, lower_stats *st, int se_on) {
  const ir_graph *g = c->g;
  for (int j = 0; j < g->nnodes; j++) {
    int f[3], m[3], gr, s[SE_PARTS] = {-1};
    if (se_on && se_chain(c, j, f)) {
      int end = f[2] >= 0 ? f[2] : f[1];
      c->role[f[0]] = 1, c->role[f[1]] = 1;
      c->role[end] = 2;
      c->head[end] = j;
      c->role[j] = 1;
      c->last[j] = end;
      st->se++;
      continue;
    }
    int y = shuffle_chain(c, j, m, &gr);
    if (y < 0)
      continue;
    int ns = shuffle_slices(c, g->nodes[y].out[0], s);
    int place = ns ? s[0] : y; /* the first slice: before any reader */
    c->role[j] = 1;
    for (int k = 0; k < 3; k++)
      c->role[m[k]] = 1;
    for (int k = 0; k < ns; k++)
      c->role[s[k]] = 1;
    c->role[place] = 2;
    c->head[place] = j;
    c->last[j] = y;
    memcpy(c->outs + (size_t)j * SE_PARTS, s, sizeof s);
    if (!ns)
      c->outs[(size_t)j * SE_PARTS] = -1;
    st->shuffles++;
  }
}

/* The se node for the chain from pool j into h (map: g's tensors to h's). */
static int se_node(const se_ctx *c, ir_graph *h, const int32_t *map, int j,
                   base_diag *d) {
  const ir_graph *g = c->g;
  int end = c->last[j];
  int f1 = sole_reader(c, g->nodes[j].out[0]);
  int f2 = sole_reader(c, g->nodes[f1].out[0]);
  const ir_node *c1 = &g->nodes[f1], *c2 = &g->nodes[f2];
  int32_t in[5] = {map[g->nodes[j].in[0]], map[c1->in[1]], map[c2->in[1]]};
  int nin = 3;
  if (c1->nin == 3)
    in[nin++] = map[c1->in[2]];
  if (c2->nin == 3)
    in[nin++] = map[c2->in[2]];
  ir_attrs a;
  ir_attrs_default(IR_OP_SE, &a);
  a.groups = c1->a.act;         /* act1 */
  a.axis = c2->a.act;           /* act2 */
  if (c2->a.act == IR_ACT_CLIP) /* a clip lower_epi.c folded into it */
    a.axis = IR_ACT_NONE, a.lo = c2->a.lo, a.hi = c2->a.hi;
  if (end != f2)
    a.lo = g->nodes[end].a.lo, a.hi = g->nodes[end].a.hi;
  const char *name = g->tensors[g->nodes[end].out[0]].name;
  return ir_add_node(h, IR_OP_SE, in, nin, &a, &name, d);
}

/* The concat_shuffle node for the chain from concat j into h. */
static int shuffle_node(const se_ctx *c, ir_graph *h, const int32_t *map, int j,
                        base_diag *d) {
  const ir_graph *g = c->g;
  const ir_node *n = &g->nodes[j];
  const int *s = c->outs + (size_t)j * SE_PARTS;
  int y = g->nodes[c->last[j]].out[0];
  int32_t in[SE_PARTS];
  for (int k = 0; k < n->nin; k++)
    in[k] = map[n->in[k]];
  ir_attrs a;
  ir_attrs_default(IR_OP_CONCAT_SHUFFLE, &a);
  a.groups = (int32_t)shp(c, g->nodes[c->last[j]].in[0])->dim[2];
  const char *names[SE_PARTS];
  int no = 0;
  for (; no < SE_PARTS && s[no] >= 0; no++) {
    const ir_node *sl = &g->nodes[s[no]];
    a.list[no] = sl->a.list[1];
    a.list2[no] = sl->a.list[1] + shp(c, sl->out[0])->dim[1];
    names[no] = g->tensors[sl->out[0]].name;
  }
  if (!no) {
    a.list[0] = 0, a.list2[0] = shp(c, y)->dim[1];
    names[no++] = g->tensors[y].name;
  }
  a.nlist = a.nlist2 = no;
  return ir_add_node(h, IR_OP_CONCAT_SHUFFLE, in, n->nin, &a, names, d);
}

/* ir_rebuild's step: node i of g, or the lowered node of the chain it
 * ends (at the chain head's position), or nothing (inside a chain). */
static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  const se_ctx *c = u;
  const ir_node *nd = &g->nodes[i];
  if (c->role[i] == 1)
    return 0;
  if (c->role[i] != 2)
    return ir_rebuild_copy(h, g, i, map, d);
  int j = c->head[i];
  const ir_node *hd = &g->nodes[j];
  int node = hd->op == IR_OP_GLOBAL_AVGPOOL ? se_node(c, h, map, j, d)
                                            : shuffle_node(c, h, map, j, d);
  if (node < 0)
    return -1;
  if (hd->op == IR_OP_GLOBAL_AVGPOOL) {
    map[nd->out[0]] = h->nodes[node].out[0];
  } else {
    const int *s = c->outs + (size_t)j * SE_PARTS;
    int y = g->nodes[c->last[j]].out[0];
    for (int k = 0; k < h->nodes[node].nout; k++)
      map[s[0] < 0 ? y : g->nodes[s[k]].out[0]] = h->nodes[node].out[k];
  }
  h->nodes[node].line = hd->line; /* the chain head's position */
  h->nodes[node].col = hd->col;
  return 0;
}

ir_graph *lower_se(const ir_graph *g, lower_stats *st, base_diag *d) {
  const char *env = getenv("SUPEROPT_SE"), *mw = getenv("SUPEROPT_SE_MAXW");
  size_t nn = (size_t)g->nnodes + 1;
  se_ctx c = {.g = g,
              .reads = ir_read_counts(g),
              .wonly = base_calloc(nn, 1),
              .role = base_calloc(nn, 1),
              .head = base_calloc(nn, sizeof(int)),
              .last = base_calloc(nn, sizeof(int)),
              .outs = base_calloc(nn * SE_PARTS, sizeof(int)),
              .max_weights = mw && *mw ? atoll(mw) : SE_MAX_WEIGHTS};
  ir_graph *h = NULL;
  if (!c.reads || !c.wonly || !c.role || !c.head || !c.last || !c.outs) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto done;
  }
  ir_weight_only(g, c.wonly);
  lower_stats found = {0};
  se_find(&c, &found, !(env && !strcmp(env, "0")));
  if (found.se + found.shuffles == 0)
    h = ir_graph_clone_shared(g);
  else
    h = ir_rebuild(g, rebuild_node, &c, d);
  if (!h && found.se + found.shuffles == 0)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->se += found.se, st->shuffles += found.shuffles;
done:
  free(c.reads), free(c.wonly), free(c.role), free(c.head), free(c.last);
  free(c.outs);
  return h;
}
