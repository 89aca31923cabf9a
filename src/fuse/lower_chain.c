/* lower_chain.c: the lower stage's movement-chain family (lower.h):
 * connected groups of movement operators that re-index one tensor become
 * one move node (ops.def), whose program is those operators in order: the
 * CUDA executor then runs one kernel (src/gpu/run/move.c) in place of a
 * kernel and a round trip through memory each (Swin's cyclic shift, a
 * torch.roll exported as slice+slice+concat per axis, its window
 * partition and reverse, the pad to a window multiple and its crop).
 *
 * A group grows backwards from its last node (its root, taken in reverse
 * node order): the producer of a tensor its members read joins when it is
 * a movement operator (slice, pad, transpose, reshape, concat without
 * act=, ir_move_op_ok) of a tensor of any type (the CUDA kernel moves
 * 4- and 2-byte elements), not weight-only (those run once at load), not
 * in another group, and every reader of that tensor is a member (none is read
 * outside, and no graph output is inside). The group becomes a node when it
 * reads one tensor from outside, has at most IR_MOVE_MAX_OPS members, and at
 * least two of them launch a kernel (a reshape, or a transpose that keeps the
 * order, is a view: a chain of one kernel and views stays as it is, priced the
 * same; but with ir_move_cl() (on unless $SUPEROPT_MOVE_CL=0) one kernel is
 * enough where a reshape reads the group's source, a rank-4 image a
 * convolution writes, or the group's result is one a convolution reads:
 * one_kernel_ok), and not all of them are transposes: the CUDA planner runs
 * a transpose between layouts as a view of a tensor it keeps channels-last
 * (ConvNeXt's permutes around each downsampling layer norm, a transpose
 * pair that composes to the identity, ran as two views; as a move node it
 * was a copy kernel, 0.16 ms of 1.84 at batch 16 on the H200). A group
 * that is no strided walk of its input (ir_move_walk) but a chain of two
 * that are becomes two move nodes (walk_cut): the executor runs a walk as
 * a strided copy, anything else a thread an element through every step.
 * Semantics are preserved by construction: the move's reference kernel
 * runs the same operators.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct plan {
  const ir_graph *g;
  int *reads;           /* per tensor (ir_read_counts) */
  int *inside;          /* per tensor: reads by the members being grown */
  unsigned char *wonly; /* per node */
  int32_t *group;       /* per node: its group's root, or -1 */
  const ir_body **prog; /* per node (a root): its program */
  int32_t *src;         /* per node (a root): the tensor it reads */
  int32_t mem[IR_MOVE_MAX_OPS + 1];
  int nmem;
} plan;

static int movable(const plan *p, int i) {
  const ir_node *n = &p->g->nodes[i];
  return ir_move_op_ok(n->op) && !p->wonly[i] && p->group[i] < 0 &&
         (n->op != IR_OP_CONCAT ||
          (n->a.act == IR_ACT_NONE && n->nin <= IR_MAX_FIXED_IN));
}

static int member(const plan *p, int i) {
  for (int k = 0; k < p->nmem; k++)
    if (p->mem[k] == i)
      return 1;
  return 0;
}

/* Adds node i to the members; its reads counted. 0 when full. */
static int add_member(plan *p, int i) {
  if (p->nmem == IR_MOVE_MAX_OPS)
    return 0;
  p->mem[p->nmem++] = i;
  const ir_node *n = &p->g->nodes[i];
  for (int k = 0; k < n->nin; k++)
    p->inside[n->in[k]]++;
  return 1;
}

/* One sweep over the members' inputs: producers that join. */
static int grow_once(plan *p) {
  const ir_graph *g = p->g;
  int grew = 0;
  for (int m = 0; m < p->nmem; m++) {
    const ir_node *n = &g->nodes[p->mem[m]];
    for (int k = 0; k < n->nin; k++) {
      int t = n->in[k], j = g->tensors[t].node;
      if (g->tensors[t].kind != IR_T_VALUE || j < 0 || member(p, j) ||
          !movable(p, j) || p->inside[t] != p->reads[t])
        continue;
      if (!add_member(p, j))
        return grew;
      grew = 1;
    }
  }
  return grew;
}

/* A view launches no kernel (roofline.c prices it 0). */
static int launches(const ir_graph *g, int i) {
  const ir_node *n = &g->nodes[i];
  return n->op != IR_OP_RESHAPE &&
         !(n->op == IR_OP_TRANSPOSE && ir_node_is_view(g, n));
}

/* The one tensor the members read from outside, or -1 (none or several);
 * *kernels: members that launch one. */
static int32_t outside_input(const plan *p, int *kernels) {
  const ir_graph *g = p->g;
  int32_t x = -1;
  *kernels = 0;
  for (int m = 0; m < p->nmem; m++) {
    const ir_node *n = &g->nodes[p->mem[m]];
    *kernels += launches(g, p->mem[m]);
    for (int k = 0; k < n->nin; k++) {
      int j = g->tensors[n->in[k]].node;
      if (j >= 0 && member(p, j))
        continue;
      if (x >= 0 && x != n->in[k])
        return -1;
      x = n->in[k];
    }
  }
  return x;
}

static int by_index(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Members mem[from, to) (sorted: the graph's order is topological) as a
 * program; what they read from outside that range is its $0. */
static const ir_body *program(const plan *p, int from, int to, base_diag *d) {
  const ir_graph *g = p->g;
  ir_body_op ops[IR_MOVE_MAX_OPS];
  memset(ops, 0, sizeof ops);
  for (int m = from; m < to; m++) {
    const ir_node *n = &g->nodes[p->mem[m]];
    ir_body_op *o = &ops[m - from];
    o->op = n->op;
    o->nin = n->nin;
    o->a = n->a;
    for (int k = 0; k < n->nin; k++) {
      int j = g->tensors[n->in[k]].node, at = -1;
      for (int q = from; j >= 0 && q < m; q++)
        at = p->mem[q] == j ? q - from : at;
      o->in[k] = at; /* -1: $0 */
    }
  }
  return ir_move_intern(to - from, ops, d);
}

/* Whether program b is one strided walk (ir_move_walk) of an input of
 * shape x laid out contiguously. */
static int is_walk(const ir_body *b, const ir_shape *x) {
  int64_t st[IR_MAX_RANK], s = 1, dim[IR_MAX_RANK], wst[IR_MAX_RANK],
                           wrap[IR_MAX_RANK], off;
  int rank;
  for (int k = x->rank - 1; k >= 0; k--)
    st[k] = s, s *= x->dim[k];
  return ir_move_walk(b, x, st, &rank, dim, wst, wrap, &off);
}

/* Whether members mem[cut+1, nmem) read nothing of mem[0, cut] but the
 * output of mem[cut] (so mem[0, cut] is a program ending there). */
static int cut_ok(const plan *p, int cut) {
  const ir_graph *g = p->g;
  int32_t mid = g->nodes[p->mem[cut]].out[0];
  for (int m = cut + 1; m < p->nmem; m++) {
    const ir_node *n = &g->nodes[p->mem[m]];
    for (int k = 0; k < n->nin; k++) {
      int j = g->tensors[n->in[k]].node;
      for (int q = 0; q <= cut; q++)
        if (p->mem[q] == j && n->in[k] != mid)
          return 0;
      if (n->in[k] != mid && (j < 0 || !member(p, j)))
        return 0; /* the suffix reads only mid and itself */
    }
  }
  return 1;
}

/* Where a program that is no strided walk splits into two that are: no
 * pad among the members, mem[0, cut] a program ending at mem[cut] whose
 * output is all mem[cut+1, nmem) read from before them (cut_ok), each
 * part a walk of what it reads (a roll is one: Swin's shift before its
 * window partition, the reverse before the shift back). The CUDA executor runs
 * a walk as a strided copy at memory speed and any other program as a
 * step walk, an element a thread through every step's coordinates
 * (MaxViT-T's grid partition after its window reverse regroups 56 = 8 x 7
 * as 7 x 8: 171 us in bf16 at batch 16 for a [16,64,49,64] tensor, two
 * strided copies of 6 MB each). The latest cut that works; -1: none. */
static int walk_cut(const plan *p, const ir_body *whole, int32_t x,
                    base_diag *d) {
  const ir_graph *g = p->g;
  if (p->nmem < 3 || is_walk(whole, &g->tensors[x].shape))
    return -1;
  for (int m = 0; m < p->nmem; m++)
    if (g->nodes[p->mem[m]].op == IR_OP_PAD)
      return -1;
  for (int cut = p->nmem - 2; cut >= 0; cut--) {
    if (!cut_ok(p, cut))
      continue;
    const ir_body *a = program(p, 0, cut + 1, d);
    const ir_body *b = program(p, cut + 1, p->nmem, d);
    if (!a || !b)
      return -2;
    int32_t mid = g->nodes[p->mem[cut]].out[0];
    if (is_walk(a, &g->tensors[x].shape) && is_walk(b, &g->tensors[mid].shape))
      return cut;
  }
  return -1;
}

/* Members mem[from, to) as one group reading tensor x, rooted at the last:
 * made where they are at least two and one launches a kernel (else left
 * as they are). 1 made, 0 not, -1 error. */
static int make_group(plan *p, int from, int to, int32_t x, base_diag *d) {
  int kernels = 0;
  for (int m = from; m < to; m++)
    kernels += launches(p->g, p->mem[m]);
  if (to - from < 2 || kernels < 1)
    return 0;
  const ir_body *b = program(p, from, to, d);
  if (!b)
    return -1;
  int r = p->mem[to - 1];
  p->prog[r] = b;
  p->src[r] = x;
  for (int m = from; m < to; m++)
    p->group[p->mem[m]] = r;
  return 1;
}

/* Whether a convolution writes tensor x or reads tensor y (as its x). */
static int conv_side(const plan *p, int32_t x, int32_t y) {
  const ir_graph *g = p->g;
  int j = g->tensors[x].node;
  if (j >= 0 && g->nodes[j].op == IR_OP_CONV2D)
    return 1;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_CONV2D && g->nodes[i].in[0] == y)
      return 1;
  return 0;
}

/* ir_move_cl() (on unless $SUPEROPT_MOVE_CL=0; set it for `optimize` and
 * `run` alike, so that the graph written is the graph run): a group of one
 * kernel and views becomes a move node where a reshape among the members reads
 * its source x, a rank-4 tensor with H * W > 1, and a convolution writes x or
 * reads the group's result (an image either way: conv_side). The CUDA planner
 * keeps every tensor a reshape (a view) reads NCHW, and so its producer:
 * MaxViT's window partition (reshape, transpose, reshape) of each MBConv's
 * output kept that 1x1 convolution and its residual add NCHW in cuDNN; a
 * move node reads its input in either layout, and writes channels-last
 * where a convolution reads its output (the departitions). A group whose
 * kernel reads x itself (ConvNeXt's permute [0,2,3,1], a view of a
 * channels-last tensor for the planner) pins nothing and stays as it is;
 * so does Swin's window partition of a layer norm's [N,H,W,C] rows for a
 * matmul (one copy either way, and below 2^19 elements the move's strided
 * copy is the slower one, docs/cuda.md). */
static int one_kernel_ok(const plan *p, int32_t x, int r) {
  const ir_shape *s = &p->g->tensors[x].shape;
  if (!ir_move_cl() || s->rank != 4 || s->dim[2] * s->dim[3] <= 1)
    return 0;
  for (int m = 0; m < p->nmem; m++) {
    const ir_node *n = &p->g->nodes[p->mem[m]];
    if (n->op == IR_OP_RESHAPE && n->in[0] == x)
      return conv_side(p, x, p->g->nodes[r].out[0]);
  }
  return 0;
}

/* The group rooted at node r, made when it qualifies; -1 on error. */
static int try_root(plan *p, int r, base_diag *d) {
  p->nmem = 0;
  add_member(p, r);
  while (grow_once(p))
    ;
  int kernels, made = 0, others = 0;
  int32_t x = outside_input(p, &kernels);
  for (int m = 0; m < p->nmem; m++)
    others += p->g->nodes[p->mem[m]].op != IR_OP_TRANSPOSE;
  if (x >= 0 && p->nmem > 1 && others > 0 &&
      (kernels >= 2 || (kernels == 1 && one_kernel_ok(p, x, r)))) {
    qsort(p->mem, (size_t)p->nmem, sizeof *p->mem, by_index);
    const ir_body *b = program(p, 0, p->nmem, d);
    int cut = b ? walk_cut(p, b, x, d) : -2;
    if (cut < -1)
      return -1;
    if (cut < 0) /* one move node */
      made = make_group(p, 0, p->nmem, x, d);
    else { /* two strided walks */
      int a = make_group(p, 0, cut + 1, x, d);
      int c =
          make_group(p, cut + 1, p->nmem, p->g->nodes[p->mem[cut]].out[0], d);
      made = a < 0 || c < 0 ? -1 : a + c;
    }
    if (made < 0)
      return -1;
  }
  for (int m = 0; m < p->nmem; m++) { /* the counts back to zero */
    const ir_node *n = &p->g->nodes[p->mem[m]];
    for (int k = 0; k < n->nin; k++)
      p->inside[n->in[k]] = 0;
  }
  return made;
}

/* ir_rebuild's step: a root as its move node, its members gone. */
static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int n,
                        int32_t *map, base_diag *d) {
  const plan *p = u;
  if (p->group[n] < 0)
    return ir_rebuild_copy(h, g, n, map, d);
  if (p->group[n] != n)
    return 0;
  ir_attrs a;
  ir_attrs_default(IR_OP_MOVE, &a);
  a.body = p->prog[n]->id;
  int32_t in = map[p->src[n]];
  return lower_emit(h, g, n, IR_OP_MOVE, &in, 1, &a, map, d);
}

ir_graph *lower_chain(const ir_graph *g, lower_stats *st, base_diag *d) {
  size_t nt = (size_t)g->ntensors + 1, nn = (size_t)g->nnodes + 1;
  plan p = {.g = g,
            .reads = ir_read_counts(g),
            .inside = base_calloc(nt, sizeof(int)),
            .wonly = base_calloc(nn, 1),
            .group = base_malloc(nn * sizeof(int32_t)),
            .prog = base_calloc(nn, sizeof(const ir_body *)),
            .src = base_calloc(nn, sizeof(int32_t))};
  ir_graph *h = NULL;
  int made = 0, ops = 0;
  if (!p.reads || !p.inside || !p.wonly || !p.group || !p.prog || !p.src) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  memset(p.group, 0xff, nn * sizeof(int32_t));
  ir_weight_only(g, p.wonly);
  for (int r = g->nnodes - 1; r >= 0; r--) {
    if (!movable(&p, r))
      continue;
    int k = try_root(&p, r, d);
    if (k < 0)
      goto out;
    made += k;
    ops += k ? p.nmem : 0;
  }
  h = made ? ir_rebuild(g, rebuild_node, &p, d) : ir_graph_clone_shared(g);
  if (!h && !made)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st) {
    st->chains += made;
    st->chain_ops += ops;
  }
out:
  free(p.reads), free(p.inside), free(p.wonly), free(p.group);
  free(p.prog), free(p.src);
  return h;
}
