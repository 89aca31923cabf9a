/* run.h: the launchers' private helpers and the operator families' entry
 * points (src/gpu/run/ only): step.c dispatches each node to conv.c,
 * mm.c, att.c or its own element-wise, data-movement and reduction
 * launchers.
 */
#ifndef SUPEROPT_GPU_RUN_H
#define SUPEROPT_GPU_RUN_H

#include "../gpu_int.h"

static inline const ir_shape *shp(const gpu_plan *p, int t) {
  return &p->g->tensors[t].shape;
}

static inline void strides_of(const ir_shape *s, int64_t st[CXK_RANK]) {
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->dim[i];
  }
}

/* Input k of node n: its bytes, or their copy in the node's layout. */
#define IN(p, n, k) gpu_in((p), (int)((n) - (p)->g->nodes), (k))
#define STEP(p, n) (&(p)->steps[(n) - (p)->g->nodes])

/* The kernel function of each unary element-wise operator: every ew.def
 * row's and clip's (CXK_ID, 0: an operator that is neither). */
static const int unary_fn[IR_NOPS] = {
#define EW(ID, ...) [IR_OP_##ID] = CXK_##ID,
#include "../../ir/ew.def"
#undef EW
    [IR_OP_CLIP] = CXK_CLIP};

/* An activation's kernel: that of the operator computing it (ops.def). */
static inline int act_fn(int act) {
  int op = ir_act_op((ir_act)act);
  return op < 0 ? CXK_ID : unary_fn[op];
}

/* The element-wise function a convolution's epilogue applies: its
 * activation (act=; for act=clip the bounds s->clip_lo, s->clip_hi). */
static inline int epilogue_fn(const ir_node *n, const gpu_step *s) {
  return s->fuse_clip ? CXK_CLIP : act_fn(n->a.act);
}

/* cxk_pad_nd for a half x and y of type dt (run/half.c): y filled with
 * the pad's value, then the part of x inside y copied (before < 0
 * crops); x contiguous (q->ist all 0). */
cudaError_t gpu_pad_half(cudaStream_t st, int dt, const void *x, void *y,
                         const cxk_pad *q);

/* The operator families (their definitions say more): a convolution
 * (conv.c), a matmul (mm.c) and an attention node (att.c), prepared at
 * plan time and enqueued at run time. */
base_status gpu_conv_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                             base_diag *d);
base_status gpu_conv_enqueue(gpu_plan *p, const ir_node *n, gpu_step *s,
                             base_diag *d);
base_status gpu_mm_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                           base_diag *d);
base_status gpu_mm_enqueue(gpu_plan *p, const ir_node *n, gpu_step *s,
                           base_diag *d);
base_status gpu_att_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                            base_diag *d);
base_status gpu_att_run(gpu_plan *p, const ir_node *n, const gpu_att *t,
                        int form, base_diag *d);
/* cuBLASLt's descriptors for a matmul (also a convolution's GEMM) and
 * their release (mm.c). */
base_status gpu_mm_setup(gpu_plan *p, gpu_mm *m, cublasLtEpilogue_t ep,
                         int64_t mm, int64_t nn, int64_t kk, int64_t batch,
                         int transa, int beta, gpu_mm_key *key, base_diag *d);
void gpu_mm_free(gpu_mm *m);
/* A gpu_smm's pointer arrays: made, filled, and the batched GEMM run
 * (mm.c; also attention's split form). */
base_status gpu_smm_alloc(gpu_smm *m, base_diag *d);
base_status gpu_smm_pointers(gpu_smm *m, const float *a, const float *b,
                             float *c, base_diag *d);
base_status gpu_smm_run(gpu_ctx *c, const gpu_smm *m, base_diag *d);

#endif
