/* lower_patch.c: the lower stage's patch family (lower.h): a vision
 * transformer's patch embedding, a convolution whose kernel is its stride,
 * as a matmul over the patches.
 *
 *   c = conv2d(x [N,C,H,W], w [O,C,k,l], b?) stride=[k,l] pad=0
 *   r = reshape(c) shape=[N,O,P]                 (P = H/k * W/l)
 *   t = transpose(r) perm=[0,2,1]            ->  p = move(x) { patches }
 *                                                t = matmul(p, wt, b?)
 *
 * The patches [N,P,C*k*l] are one strided walk of x (a move node: reshape
 * to [N,C,H/k,k,W/l,l], transpose to [N,H/k,W/l,C,k,l], reshape), wt =
 * transpose(reshape(w) [O,C*k*l]) a weight-only pair run once, and the
 * matmul writes the sequence-first rows t names: t[n,p,o] = sum over
 * (c,a,b) of x[n,c,i k + a,j l + b] w[o,c,a,b] (+ b[o]), p = i W/l + j,
 * exactly what the convolution, reshape and transpose computed. ViT-B/16's
 * conv_proj ([16,3,224,224], 16 x 16 by 16) ran on cuDNN's NCHW engine in
 * 174 us in bf16 at batch 16 on an H200, a GEMM's FLOPs in ~5 us.
 * Lowered where the convolution (no activation or residual, groups and
 * dilation 1, no padding, k or l above 1, H and W multiples of them) is
 * read by the reshape alone and the reshape by the transpose alone, its
 * weight a weight of the graph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct pt {
  const ir_graph *g;
  int *reads;
  unsigned char *wonly;
  int32_t *conv;       /* per node: the transpose's convolution, or -1 */
  unsigned char *gone; /* per node: the convolution or reshape, replaced */
  int32_t *patch;      /* per node (a convolution): its patches in h, wt */
} pt;

static int only_reader(const pt *s, int32_t t, int node, ir_opcode op) {
  const ir_tensor *x = &s->g->tensors[t];
  return x->kind == IR_T_VALUE && x->node == node && s->reads[t] == 1 &&
         s->g->nodes[node].op == op && !s->wonly[node];
}

/* Transpose node j, the last of the pattern: its convolution, or -1. */
static int patch_conv(const pt *s, int j) {
  const ir_graph *g = s->g;
  const ir_node *tn = &g->nodes[j];
  if (tn->op != IR_OP_TRANSPOSE || s->wonly[j] || tn->a.nlist != 3 ||
      tn->a.list[0] != 0 || tn->a.list[1] != 2 || tn->a.list[2] != 1)
    return -1;
  int r = g->tensors[tn->in[0]].node;
  if (r < 0 || !only_reader(s, tn->in[0], r, IR_OP_RESHAPE))
    return -1;
  const ir_node *rn = &g->nodes[r];
  int c = g->tensors[rn->in[0]].node;
  if (c < 0 || !only_reader(s, rn->in[0], c, IR_OP_CONV2D))
    return -1;
  const ir_node *cn = &g->nodes[c];
  const ir_shape *x = &g->tensors[cn->in[0]].shape;
  const ir_shape *w = &g->tensors[cn->in[1]].shape;
  const ir_shape *y = &g->tensors[cn->out[0]].shape;
  const ir_shape *rs = &g->tensors[rn->out[0]].shape;
  const ir_attrs *a = &cn->a;
  if (cn->nin > 3 || a->act != IR_ACT_NONE || a->groups != 1 ||
      g->tensors[cn->in[1]].kind != IR_T_WEIGHT || x->rank != 4 ||
      w->rank != 4 || a->dilation[0] != 1 || a->dilation[1] != 1 ||
      a->stride[0] != w->dim[2] || a->stride[1] != w->dim[3] ||
      w->dim[2] * w->dim[3] < 2 || x->dim[2] % w->dim[2] ||
      x->dim[3] % w->dim[3])
    return -1;
  for (int k = 0; k < 4; k++)
    if (a->pad[k])
      return -1;
  if (rs->rank != 3 || rs->dim[0] != y->dim[0] || rs->dim[1] != y->dim[1] ||
      rs->dim[2] != y->dim[2] * y->dim[3])
    return -1;
  return c;
}

/* One-input node op(x) named name at cn's place in h: its output, or -1
 * with d set. */
static int32_t add1(ir_graph *h, ir_opcode op, int32_t x, const ir_attrs *a,
                    const char *name, const ir_node *cn, base_diag *d) {
  int m = ir_add_node(h, op, &x, 1, a, &name, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = cn->line, h->nodes[m].col = cn->col;
  return h->nodes[m].out[0];
}

/* The patches of node c's input (a move node) and its weight as [K, O]
 * (reshape, transpose), added to h under c's output name's derivatives. */
static int emit_patches(pt *s, ir_graph *h, int c, const int32_t *map,
                        base_diag *d) {
  const ir_graph *g = s->g;
  const ir_node *cn = &g->nodes[c];
  const ir_shape *x = &g->tensors[cn->in[0]].shape;
  const ir_shape *w = &g->tensors[cn->in[1]].shape;
  int64_t n = x->dim[0], C = x->dim[1], k = w->dim[2], l = w->dim[3];
  int64_t hp = x->dim[2] / k, wp = x->dim[3] / l, K = C * k * l;
  const char *base = g->tensors[cn->out[0]].name;
  char nm[3][256];
  snprintf(nm[0], sizeof nm[0], "%.200s.patches", base);
  snprintf(nm[1], sizeof nm[1], "%.200s.w2", base);
  snprintf(nm[2], sizeof nm[2], "%.200s.wt", base);
  ir_body_op ops[3];
  memset(ops, 0, sizeof ops);
  const int64_t s0[] = {n, C, hp, k, wp, l}, perm[] = {0, 2, 4, 1, 3, 5},
                s2[] = {n, hp * wp, K};
  const int64_t *lists[] = {s0, perm, s2};
  const int lens[] = {6, 6, 3};
  const ir_opcode opc[] = {IR_OP_RESHAPE, IR_OP_TRANSPOSE, IR_OP_RESHAPE};
  for (int i = 0; i < 3; i++) {
    ir_attrs_default(opc[i], &ops[i].a);
    ops[i].op = opc[i], ops[i].nin = 1, ops[i].in[0] = i - 1;
    ops[i].a.nlist = lens[i];
    memcpy(ops[i].a.list, lists[i], sizeof(int64_t) * (size_t)lens[i]);
  }
  const ir_body *b = ir_move_intern(3, ops, d);
  if (!b)
    return -1;
  ir_attrs a;
  ir_attrs_default(IR_OP_MOVE, &a);
  a.body = b->id;
  int32_t pt = add1(h, IR_OP_MOVE, map[cn->in[0]], &a, nm[0], cn, d);
  if (pt < 0)
    return -1;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = 2, a.list[0] = w->dim[0], a.list[1] = K;
  int32_t w2 = add1(h, IR_OP_RESHAPE, map[cn->in[1]], &a, nm[1], cn, d);
  if (w2 < 0)
    return -1;
  ir_attrs_default(IR_OP_TRANSPOSE, &a);
  a.nlist = 2, a.list[0] = 1, a.list[1] = 0;
  int32_t wt = add1(h, IR_OP_TRANSPOSE, w2, &a, nm[2], cn, d);
  if (wt < 0)
    return -1;
  s->patch[2 * c] = pt, s->patch[2 * c + 1] = wt;
  return 0;
}

static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  pt *s = u;
  const ir_node *nd = &g->nodes[i];
  if (s->gone[i] && nd->op == IR_OP_CONV2D)
    return emit_patches(s, h, i, map, d);
  if (s->gone[i])
    return 0;
  int c = s->conv[i];
  if (c < 0)
    return ir_rebuild_copy(h, g, i, map, d) < 0 ? -1 : 0;
  const ir_node *cn = &g->nodes[c];
  int32_t in[3] = {s->patch[2 * c], s->patch[2 * c + 1], -1};
  int nin = 2;
  if (cn->nin == 3)
    in[nin++] = map[cn->in[2]];
  ir_attrs a;
  ir_attrs_default(IR_OP_MATMUL, &a);
  return lower_emit(h, g, i, IR_OP_MATMUL, in, nin, &a, map, d);
}

ir_graph *lower_patch(const ir_graph *g, lower_stats *st, base_diag *d) {
  size_t nn = (size_t)g->nnodes + 1;
  pt s = {g,
          ir_read_counts(g),
          base_calloc(nn, 1),
          base_malloc(nn * sizeof(int32_t)),
          base_calloc(nn, 1),
          base_calloc(2 * nn, sizeof(int32_t))};
  ir_graph *h = NULL;
  if (!s.reads || !s.wonly || !s.conv || !s.gone || !s.patch) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  ir_weight_only(g, s.wonly);
  int made = 0;
  for (int j = 0; j < g->nnodes; j++) {
    int c = s.conv[j] = patch_conv(&s, j);
    if (c < 0)
      continue;
    s.gone[c] = 1;
    s.gone[g->tensors[g->nodes[j].in[0]].node] = 1;
    made++;
  }
  h = made ? ir_rebuild(g, rebuild_node, &s, d) : ir_graph_clone_shared(g);
  if (!h && !made)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->patches += made;
out:
  free(s.reads), free(s.wonly), free(s.conv), free(s.gone), free(s.patch);
  return h;
}
