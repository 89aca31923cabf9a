/* half.c: how each node of a half-precision graph (f16, bf16 tensors:
 * docs/half.md) runs on the GPU. Natively in its type: convolutions
 * (cuDNN, kconv.cu, cuBLASLt), matmuls (cuBLASLt), fused nodes (NVRTC),
 * attention (katt.cu's kernels, every operand of one type), the
 * element-wise operators, casts to float types, gather and the moves (reshape,
 * transpose, slice, concat, split, pad, enlarge: khalf.cu; a move node's
 * program: kmprog.cu; concat_shuffle: kmove.cu), pooling, mean reductions,
 * softmax and layer norm (kred.cu) and batch norm (kew.cu), float32 sums and
 * statistics inside. Every other operator is staged: its half inputs are
 * converted into float32 copies in the node's scratch, the float32 kernels run
 * on the copies (the tensors' pointers swapped for the copies' while the node
 * is enqueued) and its half outputs are converted back. The values are those a
 * native kernel computes, since every kernel computes in float32 and a half
 * result is rounded once as it is stored (a conversion from half to float32 is
 * exact); the cost is two more passes over the node's tensors.
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

static int is_half_t(const ir_graph *g, int t) {
  return gpu_dt_of(g, t) != CXK_F32;
}

static int touches_half(const ir_graph *g, const ir_node *n) {
  for (int k = 0; k < n->nin; k++)
    if (is_half_t(g, n->in[k]))
      return 1;
  for (int k = 0; k < n->nout; k++)
    if (is_half_t(g, n->out[k]))
      return 1;
  return 0;
}

/* Every input and output of n of the one element type of its output. */
static int one_type(const ir_graph *g, const ir_node *n) {
  int dt = gpu_dt_of(g, n->out[0]);
  for (int k = 0; k < n->nin; k++)
    if (gpu_dt_of(g, n->in[k]) != dt)
      return 0;
  for (int k = 0; k < n->nout; k++)
    if (gpu_dt_of(g, n->out[k]) != dt)
      return 0;
  return 1;
}

/* The operators whose launchers take the element type from their
 * tensors (one_type) and run a kernel of their own in it. */
static int typed(const ir_graph *g, const ir_node *n) {
  switch (n->op) {
  case IR_OP_CONV2D:
  case IR_OP_MATMUL:
  case IR_OP_ATTENTION: /* of one type (else staged: gpu_half_mode) */
  case IR_OP_FUSED:
  case IR_OP_EWADD:
  case IR_OP_EWSUB:
  case IR_OP_EWMUL:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
#include "../../ir/ew_cases.h"
  case IR_OP_CLIP:
  case IR_OP_RESHAPE:
  case IR_OP_TRANSPOSE:
  case IR_OP_SLICE:
  case IR_OP_CONCAT:
  case IR_OP_SPLIT:
  case IR_OP_PAD:
  case IR_OP_ENLARGE:
  case IR_OP_MOVE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_BATCHNORM:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM: return 1;
  case IR_OP_CAST: /* to a float type (from int64 or bool too: held as
                      float32); to int64 or bool: staged */
    return ir_dtype_is_float(g->tensors[n->out[0]].dtype);
  case IR_OP_GATHER: /* the table's and the output's type alike; the
                        indices (int64, held as float32) as they are */
    return gpu_dt_of(g, n->in[0]) == gpu_dt_of(g, n->out[0]);
  default: return 0;
  }
}

int gpu_half_mode(const gpu_plan *p, int i, base_diag *d) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  if (!touches_half(g, n))
    return 1;
  if (!typed(g, n) || (n->op == IR_OP_ATTENTION && !one_type(g, n)))
    return 2; /* the float32 kernels on float32 copies */
  if (n->op == IR_OP_CAST || n->op == IR_OP_GATHER || one_type(g, n))
    return 1;
  /* mixed types, which the IR's type rule forbids: the launcher would
   * read every operand as its output's type */
  base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                "node '%s' (%s): the CUDA executor runs it in half "
                "precision only with every float input and output of one "
                "type",
                g->tensors[n->out[0]].name, ir_op(n->op)->name);
  return 0;
}

base_status gpu_half_stage_prepare(gpu_plan *p, int i, base_diag *d) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  gpu_step *s = &p->steps[i];
  int m = gpu_half_mode(p, i, d);
  if (m != 2)
    return m ? BASE_OK : BASE_ERR_PARAM;
  int nt = n->nin + n->nout;
  s->stage_off = base_malloc((size_t)nt * sizeof *s->stage_off);
  s->stage_keep = base_calloc((size_t)nt, sizeof *s->stage_keep);
  if (!s->stage_off || !s->stage_keep)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int k = 0; k < nt; k++) {
    int t = k < n->nin ? n->in[k] : n->out[k - n->nin];
    s->stage_off[k] = (size_t)-1;
    if (!is_half_t(g, t))
      continue;
    size_t at = (s->scratch_bytes + 255) / 256 * 256;
    s->stage_off[k] = at;
    s->scratch_bytes =
        at + sizeof(float) * (size_t)ir_shape_numel(&g->tensors[t].shape);
  }
  return BASE_OK;
}

static int tensor_k(const ir_node *n, int k) {
  return k < n->nin ? n->in[k] : n->out[k - n->nin];
}

static float *copy_k(const gpu_step *s, int k) {
  return (float *)((char *)s->scratch + s->stage_off[k]);
}

void gpu_half_swap(gpu_plan *p, int i) {
  const ir_node *n = &p->g->nodes[i];
  gpu_step *s = &p->steps[i];
  for (int k = 0; s->stage_off && k < n->nin + n->nout; k++)
    if (s->stage_off[k] != (size_t)-1) {
      int t = tensor_k(n, k);
      s->stage_keep[k] = p->ptr[t];
      p->ptr[t] = copy_k(s, k);
    }
}

/* In reverse: a tensor read twice gets its own pointer back last. */
void gpu_half_unswap(gpu_plan *p, int i) {
  const ir_node *n = &p->g->nodes[i];
  gpu_step *s = &p->steps[i];
  for (int k = n->nin + n->nout - 1; s->stage_off && k >= 0; k--)
    if (s->stage_off[k] != (size_t)-1)
      p->ptr[tensor_k(n, k)] = s->stage_keep[k];
}

cudaError_t gpu_half_stage_in(gpu_plan *p, int i) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  const gpu_step *s = &p->steps[i];
  if (!s->stage_off)
    return cudaSuccess;
  for (int k = 0; k < n->nin; k++) /* all converted before any swap */
    if (s->stage_off[k] != (size_t)-1) {
      int t = n->in[k];
      cudaError_t e =
          cxk_convert(p->ctx->stream, p->ptr[t], gpu_dt_of(g, t), copy_k(s, k),
                      CXK_F32, ir_shape_numel(&g->tensors[t].shape));
      if (e != cudaSuccess)
        return e;
    }
  gpu_half_swap(p, i);
  return cudaSuccess;
}

cudaError_t gpu_half_stage_out(gpu_plan *p, int i) {
  const ir_graph *g = p->g;
  const ir_node *n = &g->nodes[i];
  const gpu_step *s = &p->steps[i];
  if (!s->stage_off)
    return cudaSuccess;
  gpu_half_unswap(p, i);
  for (int k = 0; k < n->nout; k++)
    if (s->stage_off[n->nin + k] != (size_t)-1) {
      int t = n->out[k];
      cudaError_t e =
          cxk_convert(p->ctx->stream, copy_k(s, n->nin + k), CXK_F32, p->ptr[t],
                      gpu_dt_of(g, t), ir_shape_numel(&g->tensors[t].shape));
      if (e != cudaSuccess)
        return e;
    }
  return cudaSuccess;
}

cudaError_t gpu_pad_half(cudaStream_t st, int dt, const void *x, void *y,
                         const cxk_pad *q) {
  int64_t total = 1, in = 1, dst[CXK_RANK], src[CXK_RANK];
  for (int i = q->rank - 1; i >= 0; i--) {
    dst[i] = total;
    total *= q->odim[i];
    src[i] = in;
    in *= q->idim[i];
  }
  cudaError_t e = cxk_fill_dt(st, dt, y, total, q->value);
  cxk_walk w = {.rank = q->rank, .extent = total};
  int64_t any = 1;
  for (int i = 0; i < q->rank; i++) { /* x's part inside y, per axis */
    int64_t lo = q->before[i] < 0 ? -q->before[i] : 0;
    int64_t hi = q->odim[i] - q->before[i];
    hi = hi < q->idim[i] ? hi : q->idim[i];
    w.dim[i] = hi > lo ? hi - lo : 0;
    any = any && w.dim[i] > 0;
    w.sst[i] = src[i];
    w.dst[i] = dst[i];
    w.soff += lo * src[i];
    w.doff += (lo + q->before[i]) * dst[i];
  }
  return e != cudaSuccess || !any ? e : cxk_copy16(st, x, y, &w);
}
