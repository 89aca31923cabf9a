/* layout.c: channels-last (NHWC) execution of convolution chains.
 *
 * cuDNN's TF32 tensor-core convolutions work in NHWC: handed NCHW tensors
 * they transpose internally, and at batch 1 a ResNet-18 convolution costs
 * 1.6x its channels-last time (scripts/conv-study.py on an H100: 467 vs
 * 293 us for the network's convolutions). Logical shapes stay NCHW in the
 * IR; only the bytes of a tensor change order.
 *
 * The choice, node by node in topological order:
 *   - a convolution runs channels-last unless its output must be NCHW;
 *   - an element-wise, batch-norm, fused, pooling, concat, concat_shuffle,
 *     split, pad, slice, se or spatial reduction node runs channels-last
 *     when one of its rank-4 inputs is (a slice writes through strides in
 * either layout);
 *   - a transpose [0,3,1,2] (images back from [N,H,W,C]) writes
 *     channels-last; it and a transpose [0,2,3,1] of a channels-last
 *     tensor then only rename bytes and become views
 *     (gpu_layout_views);
 *   - every other node (matmul, reshape, other transposes, softmax,
 *     layer norm, constants) and every weight-only node runs NCHW;
 *     transpose and slice read their input in either layout.
 * A node's rank-4 outputs with H * W > 1 take its layout (a reduction's
 * output is NCHW). Tensors with H * W == 1 are the same bytes in both
 * layouts and always count as NCHW. Graph inputs, weights and graph outputs
 * are NCHW; so is every tensor a view (reshape) reads and every
 * convolution filter, and a node producing one runs NCHW. Where a node needs an
 * input in the other layout, it converts it into its own scratch first
 * (gpu_layout_conversions): at the network's boundaries only, e.g. the input
 * image. Binary element-wise nodes, reductions and fused nodes (their generated
 * kernels, run/fused.c) read any mix of layouts through strides instead, as do
 * transpose and slice (a transpose [0,2,3,1] of a channels-last tensor is a
 * copy). Convolution filters are converted to KRSC once, when weights are
 * uploaded (run/conv.c). A concat_shuffle node runs in the layout its
 * inputs suggest, reads them and writes its outputs through strides. A
 * move node reads its input through strides and writes NCHW; with
 * ir_move_cl() (on unless $SUPEROPT_MOVE_CL=0) it writes channels-last where
 * its output is spatial, not pinned, and read by a convolution, directly or
 * through one channels-last-capable node (move_mode: MaxViT's
 * departitions before each MBConv's first 1x1 convolution and its residual
 * add; run/move.c appends the transpose [0,2,3,1] to the program it runs):
 * MaxViT-T bf16 on an H200 3.10 -> 2.41 ms at batch 16 (2026-11-30, with
 * lower_chain.c's moves). opt.nchw turns all of this off.
 * gpu_plan_new_given (measure.c, unless $SUPEROPT_MEASURE_LAYOUT=node)
 * hands the layout in instead: a node
 * measured alone runs in the layout the whole graph runs it, its graph
 * inputs and outputs in the whole graph's layout of those tensors.
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

static const ir_shape *shp(const gpu_plan *p, int t) {
  return &p->g->tensors[t].shape;
}

/* Rank 4 with more than one spatial position: NHWC and NCHW differ. */
static int spatial(const ir_shape *s) {
  return s->rank == 4 && s->dim[2] * s->dim[3] > 1;
}

/* Nodes that can run channels-last: the element-wise operators (ops.def's
 * IR_OPF_BODY: an output element from the same element of each input, in
 * any layout; batch norm's kernel finds the channel in either), fused
 * nodes, convolutions, pooling, concat, split, pad and spatial reductions. A
 * new operator runs NCHW until it is listed here. */
static int cl_capable(ir_opcode op) {
  return ir_body_op_ok(op) || op == IR_OP_FUSED || op == IR_OP_CONV2D ||
         op == IR_OP_AVGPOOL || op == IR_OP_MAXPOOL ||
         op == IR_OP_GLOBAL_AVGPOOL || op == IR_OP_REDUCE_MEAN ||
         op == IR_OP_CONCAT || op == IR_OP_SPLIT || op == IR_OP_PAD ||
         op == IR_OP_SLICE || op == IR_OP_SE || op == IR_OP_CONCAT_SHUFFLE;
}

/* Is n a rank-4 transpose with perm=[a,b,c,d]? */
static int perm4(const ir_node *n, int a, int b, int c, int d) {
  const int64_t *p = n->a.list;
  return n->op == IR_OP_TRANSPOSE && n->a.nlist == 4 && p[0] == a &&
         p[1] == b && p[2] == c && p[3] == d;
}

/* transpose perm=[0,3,1,2]: [N,H,W,C] to [N,C,H,W] (ConvNeXt's and the
 * vision transformers' permute back to images). Its channels-last output
 * is its input's bytes: a plain copy in place of a transpose, and the
 * convolutions after it need no conversion. */
static int to_images(const ir_node *n) { return perm4(n, 0, 3, 1, 2); }

/* Inputs read through strides in any layout: never converted (transpose
 * and slice walk their input and output through gpu_strides, run/step.c, so a
 * transpose [0,2,3,1] of a channels-last tensor is a plain copy). */
static int reads_strided(ir_opcode op) {
  return op == IR_OP_EWADD || op == IR_OP_EWSUB || op == IR_OP_EWMUL ||
         op == IR_OP_EWDIV || op == IR_OP_SMUL || op == IR_OP_GLOBAL_AVGPOOL ||
         op == IR_OP_REDUCE_MEAN || op == IR_OP_FUSED ||
         op == IR_OP_TRANSPOSE || op == IR_OP_SLICE || op == IR_OP_SE ||
         op == IR_OP_CONCAT_SHUFFLE || op == IR_OP_MOVE;
}

/* Does node n's output layout follow its mode (not a reduction's)? */
static int output_follows(ir_opcode op) {
  return op != IR_OP_GLOBAL_AVGPOOL && op != IR_OP_REDUCE_MEAN &&
         op != IR_OP_SE;
}

/* Does a convolution read tensor t (not as its filter), or, depth > 0, a
 * channels-last-capable node (not a reduction, not a move) whose spatial
 * output, not pinned, one does? */
static int conv_reads(const gpu_plan *p, int t, int depth,
                      const unsigned char *must) {
  const ir_graph *g = p->g;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *r = &g->nodes[j];
    int reads = 0;
    for (int k = 0; k < r->nin; k++)
      reads |= r->in[k] == t && !(r->op == IR_OP_CONV2D && k == 1);
    if (!reads || p->wonly[j])
      continue;
    if (r->op == IR_OP_CONV2D)
      return 1;
    if (depth < 1 || !cl_capable(r->op) || !output_follows(r->op))
      continue;
    for (int k = 0; k < r->nout; k++)
      if (spatial(shp(p, r->out[k])) && !must[p->root[r->out[k]]] &&
          conv_reads(p, r->out[k], depth - 1, must))
        return 1;
  }
  return 0;
}

/* A move node's layout (ir_move_cl(); its output not pinned, node_mode):
 * channels-last where its output is spatial and a convolution reads it
 * (conv_reads, one node between them at most), and its program has room
 * for the transpose run/move.c appends (the step walk's CXK_MSTEPS steps);
 * its input is read through strides in either layout, so its mode follows
 * its readers, not its input (a window partition of a channels-last
 * convolution's output, rows for a layer norm, stays NCHW). */
static int move_mode(const gpu_plan *p, const ir_node *n,
                     const unsigned char *must) {
  const ir_body *b = ir_body_get(n->a.body);
  return b && b->nops < CXK_MSTEPS && spatial(shp(p, n->out[0])) &&
         conv_reads(p, n->out[0], 1, must);
}

static int node_mode(const gpu_plan *p, int i, const unsigned char *must) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  int move = n->op == IR_OP_MOVE && ir_move_cl(); /* moves channels-last */
  if (p->wonly[i] || !(cl_capable(n->op) || to_images(n) || move))
    return 0;
  for (int k = 0; k < n->nout; k++)
    if (output_follows(n->op) && spatial(shp(p, n->out[k])) &&
        must[p->root[n->out[k]]])
      return 0;
  if (to_images(n))
    return spatial(shp(p, n->out[0]));
  if (move)
    return move_mode(p, n, must);
  if (n->op == IR_OP_CONV2D)
    return spatial(shp(p, n->out[0])) || spatial(shp(p, n->in[0]));
  for (int k = 0; k < n->nin; k++)
    if (p->cl[n->in[k]])
      return 1;
  return 0;
}

/* The tensors a kernel reads as NCHW whatever the layouts around it:
 * convolution filters and reshapes' inputs (gpu_layout_pins less the
 * graph outputs). */
static void kernel_pins(const gpu_plan *p, unsigned char *pin) {
  const ir_graph *g = p->g;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    if (n->op == IR_OP_CONV2D && n->nin > 1) /* filters are read as KCRS */
      pin[n->in[1]] = 1;
    if (n->op == IR_OP_RESHAPE)
      pin[n->in[0]] = 1;
  }
}

void gpu_layout_pins(const gpu_plan *p, unsigned char *pin) {
  for (int i = 0; i < p->g->noutputs; i++)
    pin[p->g->outputs[i]] = 1;
  kernel_pins(p, pin);
}

/* The layout handed in (gpu_plan_new_given): each node's mode and each
 * spatial tensor's layout as given, graph inputs and outputs included and
 * none pinned NCHW but what a kernel reads as NCHW (must: kernel_pins).
 * A weight-only node takes its given mode too: measure.c's one-node graph
 * holds its node's computed inputs as weights, which makes the node
 * weight-only there and not in the whole graph. */
static void assign_given(gpu_plan *p, const unsigned char *must) {
  const ir_graph *g = p->g;
  const gpu_layout_given *l = p->given;
  for (int i = 0; i < g->nnodes; i++)
    p->steps[i].cl = l->mode[i];
  for (int t = 0; t < g->ntensors; t++)
    p->cl[t] = l->cl[t] && !must[t] && spatial(shp(p, t));
}

base_status gpu_layout_assign(gpu_plan *p, base_diag *d) {
  const ir_graph *g = p->g;
  p->cl = base_calloc((size_t)g->ntensors + 1, 1);
  unsigned char *must = base_calloc((size_t)g->ntensors + 1, 1);
  if (!p->cl || !must) {
    free(must);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  if (!p->ctx->opt.nchw) {
    if (p->given) /* graph inputs and outputs as given */
      kernel_pins(p, must);
    else
      gpu_layout_pins(p, must);
    for (int t = 0; t < g->ntensors; t++) /* a view pins its root */
      if (must[t])
        must[p->root[t]] = 1;
    for (int i = 0; !p->given && i < g->nnodes; i++) {
      const ir_node *n = &g->nodes[i];
      int m = p->steps[i].cl = node_mode(p, i, must);
      for (int k = 0; k < n->nout; k++) {
        int t = n->out[k];
        p->cl[t] = m && output_follows(n->op) && spatial(shp(p, t));
      }
    }
    if (p->given)
      assign_given(p, must);
    for (int t = 0; t < g->ntensors; t++) /* views share their root's */
      p->cl[t] = p->cl[p->root[t]] && spatial(shp(p, t));
  }
  free(must);
  return BASE_OK;
}

/* Transposes whose output has its input's bytes become views: [0,2,3,1]
 * of a channels-last tensor (plain [N,H,W,C] out), and [0,3,1,2] of a
 * plain [N,H,W,C] tensor written channels-last (to_images). */
int gpu_layout_views(gpu_plan *p) {
  const ir_graph *g = p->g;
  int nv = 0;
  for (int i = 0; p->cl && i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    if (p->steps[i].view || p->wonly[i])
      continue;
    int x = n->in[0], y = n->out[0];
    int to_nhwc = perm4(n, 0, 2, 3, 1) && p->cl[x] && !p->cl[y];
    int to_nchw = to_images(n) && !p->cl[x] && p->cl[y];
    if (to_nhwc || to_nchw) {
      p->steps[i].view = 1;
      nv++;
    }
  }
  return nv;
}

/* Row-major strides of shape s (rank 4). */
static void strides4(const ir_shape *s, int64_t *st) {
  st[3] = 1;
  for (int i = 2; i >= 0; i--)
    st[i] = st[i + 1] * s->dim[i + 1];
}

/* A rank-4 transpose node j whose result has one reader, between plain
 * (not channels-last) tensors, not yet a view: its permutation, or NULL. */
static const int64_t *plain_transpose(const gpu_plan *p, const int *reads,
                                      int j) {
  const ir_graph *g = p->g;
  const ir_node *t = &g->nodes[j];
  if (t->op != IR_OP_TRANSPOSE || t->a.nlist != 4 || p->steps[j].view ||
      p->wonly[j] || reads[t->out[0]] != 1 || p->cl[t->in[0]] ||
      p->cl[t->out[0]] || g->tensors[t->in[0]].kind == IR_T_WEIGHT)
    return NULL;
  return t->a.list;
}

/* BERT's merged Q, K and V: tin, the input of a plain transpose, is the
 * reshape (a view) that splits the last dimension of one output q of a
 * split along the last axis of a plain rank-3 tensor x, and q is read by
 * that reshape alone. tin's element (i0, i1, i2, i3) then lies in x at
 * *off + i0 st[0] + ... + i3 st[3], a column block of x's rows, which a
 * batched matmul can read in place (no copy of q). Returns the split node,
 * or -1. */
static int split_block(const gpu_plan *p, const int *reads, int tin,
                       int64_t st[4], int64_t *off) {
  const ir_graph *g = p->g;
  const ir_tensor *t = &g->tensors[tin];
  if (t->kind != IR_T_VALUE || t->shape.rank != 4 || reads[tin] != 1)
    return -1;
  const ir_node *r = &g->nodes[t->node];
  if (r->op != IR_OP_RESHAPE || !p->steps[t->node].view || reads[r->in[0]] != 1)
    return -1;
  const ir_tensor *q = &g->tensors[r->in[0]];
  if (q->kind != IR_T_VALUE)
    return -1;
  const ir_node *sp = &g->nodes[q->node];
  const ir_shape *xs = shp(p, sp->in[0]), *qs = &q->shape;
  if (sp->op != IR_OP_SPLIT || sp->a.act != IR_ACT_NONE || /* computes */
      p->wonly[q->node] || xs->rank != 3 || sp->a.axis != 2 ||
      p->cl[sp->in[0]] || qs->rank != 3 || t->shape.dim[0] != qs->dim[0] ||
      t->shape.dim[1] != qs->dim[1] ||
      t->shape.dim[2] * t->shape.dim[3] != qs->dim[2])
    return -1;
  *off = 0;
  for (int k = 0; k < sp->nout && sp->out[k] != r->in[0]; k++)
    *off += shp(p, sp->out[k])->dim[2];
  st[0] = xs->dim[1] * xs->dim[2], st[1] = xs->dim[2];
  st[2] = t->shape.dim[3], st[3] = 1;
  return q->node;
}

/* Does node i read and write rank-4 plain tensors that strided_pass can
 * route through transposes: a batched matmul (no bias, no activation) or
 * an attention node? *nop: its operands (2 or 3). */
static int strided_node(const gpu_plan *p, int i, int *nop) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  const gpu_step *s = &p->steps[i];
  if (p->wonly[i] || s->view)
    return 0;
  if (n->op == IR_OP_ATTENTION) {
    *nop = 3;
    for (int k = 0; k < 3; k++)
      if (shp(p, n->in[k])->rank != 4 || p->cl[n->in[k]])
        return 0;
    return shp(p, n->out[0])->rank == 4 && !p->cl[n->out[0]];
  }
  *nop = 2;
  if (n->op != IR_OP_MATMUL || n->nin != 2 || n->a.act != IR_ACT_NONE)
    return 0;
  const ir_shape *a = shp(p, n->in[0]), *b = shp(p, n->in[1]),
                 *y = shp(p, n->out[0]);
  return a->rank == 4 && b->rank == 4 && y->rank == 4 &&
         a->dim[0] == y->dim[0] && b->dim[0] == y->dim[0] &&
         a->dim[1] == y->dim[1] && b->dim[1] == y->dim[1] && !p->cl[n->in[0]] &&
         !p->cl[n->in[1]] && !p->cl[n->out[0]];
}

/* Node i's arguments from the strides strided_pass found: a gpu_smm for a
 * matmul (a, b, c), a gpu_att for attention (q, k, v, y). */
static base_status strided_args(gpu_plan *p, int i, int nop, int64_t st[4][4],
                                const int64_t *off, base_diag *d) {
  const ir_graph *g = p->g;
  const ir_shape *y = shp(p, g->nodes[i].out[0]);
  if (nop == 3) {
    gpu_att *t = base_calloc(1, sizeof *t);
    if (!t)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    memcpy(t->a.st, st, sizeof t->a.st);
    memcpy(t->off, off, sizeof t->off);
    p->steps[i].att = t;
    return BASE_OK;
  }
  gpu_smm *m = base_malloc(sizeof *m);
  if (!m)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  *m = (gpu_smm){.d0 = y->dim[0],
                 .d1 = y->dim[1],
                 .m = y->dim[2],
                 .n = y->dim[3],
                 .k = shp(p, g->nodes[i].in[0])->dim[3],
                 .off = {off[0], off[1]}};
  memcpy(m->st, st, sizeof m->st);
  p->steps[i].smm = m;
  return BASE_OK;
}

/* One pass over the matmuls and attention nodes (see
 * gpu_layout_strided_matmuls). dry: only count, in nsplit[j], the outputs
 * of split j that a node could read in place (split_block); else fold,
 * reading in place the outputs of the splits whose every output can be
 * (nsplit[j] == nout), counted in nfold[j], and make those splits views.
 * The two passes see the same operands: the real one changes only the
 * views of transposes and splits, and a transpose split_block accepts
 * reads a reshape, so it is no node's result transpose, and is read once.
 * cuBLAS takes a matmul's operand only where one of its two last axes is
 * contiguous (gpu_smm_layout); the attention kernel takes any strides. */
static base_status strided_pass(gpu_plan *p, const int *reads, int *views,
                                const int *nsplit, int *nfold, int dry,
                                base_diag *d) {
  const ir_graph *g = p->g;
  for (int i = 0; !p->ctx->opt.no_fold && i < g->nnodes; i++) {
    const ir_node *mm = &g->nodes[i];
    int nop;
    if (!strided_node(p, i, &nop))
      continue;
    int att = nop == 3;
    int64_t st[4][4], off[3] = {0, 0, 0};
    int via[4] = {-1, -1, -1, -1}; /* the transposes made views */
    int spl[3] = {-1, -1, -1};     /* the splits read in place */
    for (int k = 0; k < nop; k++) {
      const ir_tensor *x = &g->tensors[mm->in[k]];
      const int64_t *pm =
          x->kind == IR_T_VALUE ? plain_transpose(p, reads, x->node) : NULL;
      if (!pm) {
        strides4(&x->shape, st[k]);
        continue;
      }
      int64_t src[4], o = 0;
      int tin = g->nodes[x->node].in[0];
      int sj = split_block(p, reads, tin, src, &o);
      if (sj < 0 || (!dry && nsplit[sj] != g->nodes[sj].nout))
        strides4(shp(p, tin), src), sj = -1;
      for (int q = 0; q < 4; q++)
        st[k][q] = src[pm[q]];
      if (!att &&
          !gpu_smm_layout(st[k], x->shape.dim[2], x->shape.dim[3], NULL)) {
        strides4(&x->shape, st[k]); /* no matrix layout cuBLAS takes */
      } else {
        via[k] = x->node;
        spl[k] = sj;
        off[k] = sj >= 0 ? o : 0;
      }
    }
    if (dry) {
      for (int k = 0; k < nop; k++)
        if (spl[k] >= 0)
          nfold[spl[k]]++;
      continue;
    }
    const ir_shape *y = shp(p, mm->out[0]);
    strides4(y, st[nop]);
    int r = gpu_sole_reader(p, reads, mm->out[0]); /* the result's transpose */
    const int64_t *pm = r >= 0 ? plain_transpose(p, reads, r) : NULL;
    if (pm) {
      int64_t dst[4], c[4];
      strides4(shp(p, g->nodes[r].out[0]), dst);
      for (int q = 0; q < 4; q++)
        c[pm[q]] = dst[q];
      int ld;
      if (att || gpu_smm_layout(c, y->dim[2], y->dim[3], &ld) == 1) {
        memcpy(st[nop], c, sizeof c);
        via[nop] = r;
      }
    }
    int any = 0;
    for (int k = 0; k <= nop; k++)
      any |= via[k] >= 0;
    if (!any)
      continue;
    base_status e = strided_args(p, i, nop, st, off, d);
    if (e)
      return e;
    for (int k = 0; k <= nop; k++)
      if (via[k] >= 0) {
        p->steps[via[k]].view = 1;
        ++*views;
      }
    for (int k = 0; k < nop; k++) {
      if (spl[k] < 0)
        continue;
      nfold[spl[k]]++;
      if (!p->steps[spl[k]].view) {
        p->steps[spl[k]].view = 1; /* its outputs: x's bytes, read in place */
        ++*views;
      }
    }
  }
  return BASE_OK;
}

base_status gpu_layout_strided_matmuls(gpu_plan *p, const int *reads,
                                       int *views, base_diag *d) {
  int n = p->g->nnodes;
  int *nsplit = base_calloc((size_t)n + 1, sizeof *nsplit);
  int *nfold = base_calloc((size_t)n + 1, sizeof *nfold);
  base_status st = BASE_OK;
  if (!nsplit || !nfold)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = strided_pass(p, reads, views, nsplit, nsplit, 1, d);
  if (!st)
    st = strided_pass(p, reads, views, nsplit, nfold, 0, d);
  /* a split made a view with an output not read in place would leave
   * that output unwritten */
  for (int j = 0; !st && j < n; j++)
    if (nfold[j] && nfold[j] != p->g->nodes[j].nout)
      st = base_diag_set(d, BASE_ERR_INTERNAL, p->g->nodes[j].line, 0,
                         "split read in place by %d of its %d readers",
                         nfold[j], p->g->nodes[j].nout);
  free(nsplit), free(nfold);
  return st;
}

base_status gpu_layout_conversions(gpu_plan *p, base_diag *d) {
  const ir_graph *g = p->g;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    gpu_step *s = &p->steps[i];
    if (s->view || reads_strided(n->op))
      continue;
    for (int k = 0; k < n->nin; k++) {
      int t = n->in[k];
      if (n->op == IR_OP_CONV2D && k > 0)
        break; /* the filter is converted at upload; the bias is 1-D */
      if (n->op == IR_OP_CONV2D && s->conv && s->conv->sk_x_as_is)
        continue; /* ksmallk.cu reads an NCHW x as it is */
      if (!spatial(shp(p, t)) || (int)p->cl[t] == s->cl)
        continue;
      if (!s->cin_off) {
        s->cin_off = base_malloc((size_t)n->nin * sizeof *s->cin_off);
        if (!s->cin_off)
          return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
        memset(s->cin_off, 0xff, (size_t)n->nin * sizeof *s->cin_off);
      }
      size_t at = (s->scratch_bytes + 255) / 256 * 256;
      s->cin_off[k] = at;
      s->scratch_bytes = at + sizeof(float) * (size_t)ir_shape_numel(shp(p, t));
    }
  }
  return BASE_OK;
}

/* ---- splits read in place by fused nodes ----------------------------------
 * Llama's merged q, k, v and rotated projections are split into five
 * [B,S,C] parts that only the rotary sums read (v: the attention node in
 * the row layout reads the merged rows itself), and its gate and up into
 * two that only the SwiGLU product reads: the split's copy (4.5 us a layer
 * at batch 16 in bf16 on an H200 for q, k, v) writes what the fused kernel
 * could read where the matmul wrote it. The fused kernel reads each input
 * through its memory strides (run/fused.c), so a column block of the
 * input's rows serves as is. A split of such a part (the search's merge of
 * three projections, two of them split in two again: `--passes none` on
 * Llama) is read in place too, its blocks at the part's offset in the
 * first split's rows. */

/* The executor's own conditions on a reader (or reshape) j of a split
 * read in place (ir_split_read_in_place): a step run in each replay (not
 * from weights alone), a fused node in its type, a reshape a view of a
 * plain (not channels-last) result. */
static int runs_in_place(const void *u, int j) {
  const gpu_plan *p = u;
  const ir_node *n = &p->g->nodes[j];
  if (p->wonly[j])
    return 0;
  if (n->op == IR_OP_FUSED)
    return gpu_half_mode(p, j, NULL) == 1;
  return n->op != IR_OP_RESHAPE ||
         (p->steps[j].view && !(p->cl && p->cl[n->out[0]]));
}

/* Marks t and the reshapes of it that fused nodes read as the column block
 * at off of rows of width w. */
static void mark_block(gpu_plan *p, int t, int64_t w, int64_t off, int lead,
                       int depth) {
  const ir_graph *g = p->g;
  p->blk[t] = (gpu_colblk){.w = w, .off = off, .lead = lead};
  for (int j = 0; depth > 0 && j < g->nnodes; j++)
    if (g->nodes[j].op == IR_OP_RESHAPE && g->nodes[j].in[0] == t)
      mark_block(p, g->nodes[j].out[0], w, off, lead, depth - 1);
}

/* Split node i read in place (ir_split_read_in_place) as this plan runs
 * it: a step of its own, its input and outputs plain, in its type, x within
 * the fused kernels' 32-bit indices. */
static int fused_split(const gpu_plan *p, int i) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  if (n->op != IR_OP_SPLIT || p->steps[i].view || p->wonly[i] ||
      (p->cl && p->cl[n->in[0]]) || gpu_half_mode(p, i, NULL) != 1)
    return 0;
  for (int k = 0; k < n->nout; k++)
    if (p->cl && p->cl[n->out[k]])
      return 0;
  if (ir_shape_numel(shp(p, n->in[0])) * 8 >= ((int64_t)1 << 31))
    return 0; /* the fused kernels' 32-bit indices reach all of x */
  return ir_split_read_in_place(g, i, runs_in_place, p);
}

base_status gpu_layout_fused_splits(gpu_plan *p, int *views, base_diag *d) {
  const ir_graph *g = p->g;
  const char *env = getenv("SUPEROPT_SPLIT_VIEWS"); /* =0: off (A/B runs) */
  if (p->ctx->opt.no_fold || (env && !strcmp(env, "0")))
    return BASE_OK;
  base_status st = BASE_OK;
  for (int i = 0; !st && i < g->nnodes; i++) {
    if (!fused_split(p, i))
      continue;
    if (!p->blk &&
        !(p->blk = base_calloc((size_t)g->ntensors + 1, sizeof *p->blk))) {
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      break;
    }
    const ir_node *n = &g->nodes[i];
    const ir_shape *x = shp(p, n->in[0]);
    int64_t w = x->dim[x->rank - 1], off = 0;
    const gpu_colblk *in = &p->blk[n->in[0]];
    if (in->w) /* a part of a split read in place (node order: marked
                  before): its parts are blocks of that split's rows */
      w = in->w, off = in->off;
    for (int k = 0; k < n->nout; k++) {
      mark_block(p, n->out[k], w, off, x->rank - 1, 1);
      off += shp(p, n->out[k])->dim[x->rank - 1];
    }
    p->steps[i].view = 1; /* its outputs: x's bytes, read in place */
    ++*views;
  }
  return st;
}
