/* mm.c: a matmul on the GPU: cuBLASLt on the row-major product seen as
 * its column-major transpose, with the bias/ReLU epilogue where it
 * applies (also a convolution's GEMM, conv.c), and the batched matmuls
 * that read or write through transposes (gpu_smm, cuBLAS's pointer-array
 * batched GEMM).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

void gpu_mm_free(gpu_mm *m) {
  if (!m)
    return;
  if (m->la)
    cublasLtMatrixLayoutDestroy(m->la);
  if (m->lb)
    cublasLtMatrixLayoutDestroy(m->lb);
  if (m->lc)
    cublasLtMatrixLayoutDestroy(m->lc);
  if (m->desc)
    cublasLtMatmulDescDestroy(m->desc);
  cudaFree(m->wt);
  free(m);
}

/* ---- matmul ---------------------------------------------------------------
 * Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T: cuBLASLt's
 * "A" is our b (N x K, ld N), its "B" our a (K x M, ld K), D is N x M. */

/* transa: our b is stored N-major instead (K x N, ld K; a convolution's
 * filter [O, kh*kw*C]) and cuBLASLt transposes it. */
/* cuBLASLt's type of elements of type dt (CXK_*). */
static cudaDataType_t lt_type(int dt) {
  return dt == CXK_F16 ? CUDA_R_16F : dt == CXK_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static base_status mm_layouts(gpu_mm *m, int64_t mm, int64_t nn, int64_t kk,
                              int64_t batch, int transa, base_diag *d) {
  cudaDataType_t ty = lt_type(m->dt); /* A, B, C and D alike */
  GPU_BLAS(d, transa ? cublasLtMatrixLayoutCreate(&m->la, ty, (uint64_t)kk,
                                                  (uint64_t)nn, kk)
                     : cublasLtMatrixLayoutCreate(&m->la, ty, (uint64_t)nn,
                                                  (uint64_t)kk, nn));
  GPU_BLAS(d, cublasLtMatrixLayoutCreate(&m->lb, ty, (uint64_t)kk, (uint64_t)mm,
                                         kk));
  GPU_BLAS(d, cublasLtMatrixLayoutCreate(&m->lc, ty, (uint64_t)nn, (uint64_t)mm,
                                         nn));
  if (batch == 1)
    return BASE_OK;
  int32_t b32 = (int32_t)batch;
  int64_t sa = kk * nn, sb = mm * kk, sc = mm * nn;
  cublasLtMatrixLayout_t l[3] = {m->la, m->lb, m->lc};
  int64_t st[3] = {sa, sb, sc};
  for (int i = 0; i < 3; i++) {
    GPU_BLAS(d,
             cublasLtMatrixLayoutSetAttribute(
                 l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b32, sizeof b32));
    GPU_BLAS(d, cublasLtMatrixLayoutSetAttribute(
                    l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st[i],
                    sizeof st[i]));
  }
  return BASE_OK;
}

/* The bias node n's matmul adds, or NULL. */
static const float *mm_bias_ptr(const gpu_plan *p, const ir_node *n) {
  return n->nin >= 3 ? p->ptr[n->in[2]] : NULL;
}

/* cuBLASLt's epilogue for bias and act; what it cannot do is left to
 * cxk_bias_act (post_bias, post_act). A relu after a folded residual (C)
 * runs there too. GELU in the epilogue is cuBLASLt's tanh approximation,
 * not the graph's exact erf: only with opt.fast_gelu. */
static cublasLtEpilogue_t mm_epilogue(gpu_mm *m, const gpu_options *opt,
                                      const gpu_step *s, int bias, int act,
                                      int64_t batch) {
  int relu = act == IR_ACT_RELU && !s->res;
  int gelu = act == IR_ACT_GELU && opt->fast_gelu && !s->res;
  m->act = act;
  m->post_bias = bias && batch > 1;
  m->post_act = act != IR_ACT_NONE && !((relu || gelu) && !m->post_bias);
  if (m->post_bias)
    return CUBLASLT_EPILOGUE_DEFAULT;
  if (bias)
    return relu   ? CUBLASLT_EPILOGUE_RELU_BIAS
           : gelu ? CUBLASLT_EPILOGUE_GELU_BIAS
                  : CUBLASLT_EPILOGUE_BIAS;
  return relu   ? CUBLASLT_EPILOGUE_RELU
         : gelu ? CUBLASLT_EPILOGUE_GELU
                : CUBLASLT_EPILOGUE_DEFAULT;
}

static int ep_has_bias(cublasLtEpilogue_t ep) {
  return ep == CUBLASLT_EPILOGUE_BIAS || ep == CUBLASLT_EPILOGUE_RELU_BIAS ||
         ep == CUBLASLT_EPILOGUE_GELU_BIAS;
}

/* m's descriptor (precision, epilogue ep, a placeholder bias pointer for
 * the heuristic: the real one is set per run) and layouts, and the key its
 * algorithm is chosen by (gpu_mm_choose; beta: C is read, D = A B + C). */
base_status gpu_mm_setup(gpu_plan *p, gpu_mm *m, cublasLtEpilogue_t ep,
                         int64_t mm, int64_t nn, int64_t kk, int64_t batch,
                         int transa, int beta, gpu_mm_key *key, base_diag *d) {
  /* half operands: float32 accumulation on the tensor cores (TF32 is a
   * float32 operands' mode); alpha and beta float32 either way */
  cublasComputeType_t ct = p->ctx->opt.fp32_strict || m->dt != CXK_F32
                               ? CUBLAS_COMPUTE_32F
                               : CUBLAS_COMPUTE_32F_FAST_TF32;
  GPU_BLAS(d, cublasLtMatmulDescCreate(&m->desc, ct, CUDA_R_32F));
  if (transa) {
    cublasOperation_t tr = CUBLAS_OP_T;
    GPU_BLAS(d, cublasLtMatmulDescSetAttribute(
                    m->desc, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr));
  }
  GPU_BLAS(d, cublasLtMatmulDescSetAttribute(
                  m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
  if (ep_has_bias(ep)) {
    const void *bp = (const void *)(uintptr_t)256;
    GPU_BLAS(d,
             cublasLtMatmulDescSetAttribute(
                 m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    if (m->dt != CXK_F32) { /* the bias vector: a weight of D's type */
      cudaDataType_t bt = lt_type(m->dt);
      GPU_BLAS(
          d, cublasLtMatmulDescSetAttribute(
                 m->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
  }
  *key = (gpu_mm_key){mm,
                      nn,
                      kk,
                      batch,
                      (int32_t)ep,
                      ep_has_bias(ep),
                      p->ctx->opt.fp32_strict,
                      transa,
                      beta,
                      m->dt};
  return mm_layouts(m, mm, nn, kk, batch, transa, d);
}

/* ---- matmuls through transposes (gpu_smm) ---------------------------------
 * cuBLAS's pointer-array batched GEMM, one matrix a (d0, d1): a row-major
 * operand of strides (rs, cs) is a column-major matrix cuBLAS reads as is
 * when cs = 1 (ld rs) or transposed when rs = 1 (ld cs). As for cuBLASLt,
 * row-major c = a b is column-major c^T = b^T a^T. */

base_status gpu_smm_alloc(gpu_smm *m, base_diag *d) {
  size_t nb = (size_t)(m->d0 * m->d1);
  GPU_CUDA(d, cudaMalloc((void **)&m->parr, 3 * nb * sizeof(void *)));
  return BASE_OK;
}

static base_status smm_prepare(gpu_step *s, base_diag *d) {
  return gpu_smm_alloc(s->smm, d);
}

/* m's pointer arrays for c = a b. */
base_status gpu_smm_pointers(gpu_smm *m, const float *a, const float *b,
                             float *c, base_diag *d) {
  size_t nb = (size_t)(m->d0 * m->d1);
  const float *base[3] = {b, a, c};
  const int k[3] = {1, 0, 2}; /* cuBLAS's A is our b, its B our a */
  const void **h = base_malloc(3 * nb * sizeof *h);
  if (!h)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int q = 0; q < 3; q++)
    for (size_t b = 0; b < nb; b++) {
      int64_t i0 = (int64_t)b / m->d1, i1 = (int64_t)b % m->d1;
      h[q * nb + b] = base[q] + (k[q] < 2 ? m->off[k[q]] : 0) +
                      i0 * m->st[k[q]][0] + i1 * m->st[k[q]][1];
    }
  cudaError_t e =
      cudaMemcpy(m->parr, h, 3 * nb * sizeof *h, cudaMemcpyHostToDevice);
  free(h);
  GPU_CUDA(d, e);
  return BASE_OK;
}

base_status gpu_smm_bind(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  return gpu_smm_pointers(p->steps[i].smm, IN(p, n, 0), IN(p, n, 1),
                          p->ptr[n->out[0]], d);
}

int gpu_smm_layout(const int64_t *st, int64_t rows, int64_t cols, int *ld) {
  int dummy;
  ld = ld ? ld : &dummy;
  if (st[3] == 1 && st[2] >= cols && st[2] <= INT32_MAX) {
    *ld = (int)st[2];
    return 1;
  }
  if (st[2] == 1 && st[3] >= rows && st[3] <= INT32_MAX) {
    *ld = (int)st[3];
    return 2;
  }
  return 0;
}

/* cuBLAS's operation and leading dimension for strides st of a rows x cols
 * row-major operand (gpu_smm_layout: 1 as is, 2 transposed). */
static cublasOperation_t smm_op(const int64_t *st, int64_t rows, int64_t cols,
                                int *ld) {
  return gpu_smm_layout(st, rows, cols, ld) == 2 ? CUBLAS_OP_T : CUBLAS_OP_N;
}

base_status gpu_smm_run(gpu_ctx *c, const gpu_smm *m, base_diag *d) {
  size_t nb = (size_t)(m->d0 * m->d1);
  int lda, ldb, ldc = (int)m->st[2][2];
  cublasOperation_t oa = smm_op(m->st[1], m->k, m->n, &lda),
                    ob = smm_op(m->st[0], m->m, m->k, &ldb);
  const float one = 1.0f, zero = 0.0f;
  cublasComputeType_t ct =
      c->opt.fp32_strict ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
  GPU_BLAS(d, cublasGemmBatchedEx(c->blas, oa, ob, (int)m->n, (int)m->m,
                                  (int)m->k, &one, m->parr, CUDA_R_32F, lda,
                                  m->parr + nb, CUDA_R_32F, ldb, &zero,
                                  (void *const *)(m->parr + 2 * nb), CUDA_R_32F,
                                  ldc, (int)nb, ct, CUBLAS_GEMM_DEFAULT));
  return BASE_OK;
}

static base_status smm_enqueue(gpu_plan *p, const gpu_step *s, base_diag *d) {
  return gpu_smm_run(p->ctx, s->smm, d);
}

/* kwg.cu in place of cuBLASLt and the epilogue kernel (gpu_wg_choose)
 * for a product by a constant rank-2 weight: its transposed copy made
 * here and filled at upload (gpu_mm_fill_wt), the descriptors bound with
 * the pointers (gpu_mm_bind). */
static base_status mm_wg(gpu_plan *p, const ir_node *n, gpu_mm *m,
                         const gpu_mm_key *key, base_diag *d) {
  const ir_tensor *w = &p->g->tensors[n->in[1]]; /* as conv.c's filter */
  int fixed =
      w->kind == IR_T_WEIGHT || (w->kind == IR_T_VALUE && p->wonly[w->node]);
  if (!fixed || w->shape.rank != 2)
    return BASE_OK;
  int fn = act_fn(m->act), var = gpu_wg_choose(p->ctx, key, m, fn);
  if (var < 0)
    return BASE_OK;
  GPU_CUDA(d, cudaMalloc((void **)&m->wt,
                         sizeof(float) * (size_t)(key->n * key->k)));
  m->wg_var = var, m->wg_fn = fn;
  m->wg.m = key->m, m->wg.n = key->n, m->wg.k = key->k;
  return BASE_OK;
}

base_status gpu_mm_bind(gpu_plan *p, int i, base_diag *d) {
  (void)d;
  gpu_mm *m = p->steps[i].mm;
  const ir_node *n = &p->g->nodes[i];
  const gpu_step *s = &p->steps[i];
  uintptr_t at = (uintptr_t)IN(p, n, 0) | (uintptr_t)p->ptr[n->out[0]] |
                 (uintptr_t)mm_bias_ptr(p, n) |
                 (uintptr_t)(s->res ? p->ptr[s->res - 1] : NULL);
  if ((at & 15) || !cxk_wg_prepare(&m->wg, IN(p, n, 0), m->wt, m->wg.m, m->wg.n,
                                   m->wg.k, m->wg_var))
    m->wg_var = -1; /* cuBLASLt after all: its algorithm is chosen */
  return BASE_OK;
}

cudaError_t gpu_mm_fill_wt(gpu_plan *p, int i) {
  const gpu_mm *m = p->steps[i].mm;
  return gpu_transpose2(p->ctx->stream, p->ptr[p->g->nodes[i].in[1]], m->wt,
                        m->wg.k, m->wg.n);
}

base_status gpu_mm_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                           base_diag *d) {
  if (s->smm)
    return smm_prepare(s, d);
  gpu_mm *m = s->mm = base_calloc(1, sizeof *m);
  if (!m)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  m->wg_var = -1;
  const ir_shape *a = shp(p, n->in[0]), *b = shp(p, n->in[1]);
  int64_t kk = a->dim[a->rank - 1], nn = b->dim[b->rank - 1];
  int64_t mm = a->dim[a->rank - 2], batch = 1;
  if (b->rank == 2)
    mm = ir_shape_numel(a) / kk; /* shared b: fold the batch into M */
  else
    batch = ir_shape_numel(a) / (mm * kk);
  m->n = nn;
  m->count = ir_shape_numel(shp(p, n->out[0]));
  m->dt = gpu_dt_of(p->g, n->out[0]); /* a, b, bias and residual alike */
  cublasLtEpilogue_t ep =
      mm_epilogue(m, &p->ctx->opt, s, n->nin >= 3, n->a.act, batch);
  gpu_mm_key key;
  /* a folded residual is read as C */
  base_status st =
      gpu_mm_setup(p, m, ep, mm, nn, kk, batch, 0, s->res != 0, &key, d);
  if (!st)
    st = gpu_mm_choose(p->ctx, &key, m, d);
  return st ? st : mm_wg(p, n, m, &key, d);
}

base_status gpu_mm_enqueue(gpu_plan *p, const ir_node *n, gpu_step *s,
                           base_diag *d) {
  if (s->smm)
    return smm_enqueue(p, s, d);
  gpu_mm *m = s->mm;
  gpu_ctx *c = p->ctx;
  const float *bias = mm_bias_ptr(p, n);
  float *y = p->ptr[n->out[0]];
  if (m->wg_var >= 0) {
    GPU_CUDA(d, cxk_wg_mm(c->stream, &m->wg, bias,
                          s->res ? p->ptr[s->res - 1] : NULL, y, m->wg_fn));
    return BASE_OK;
  }
  if (bias && !m->post_bias)
    GPU_BLAS(
        d, cublasLtMatmulDescSetAttribute(
               m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  /* a folded residual add: D = A B + 1 * C with C the residual */
  const float one = 1.0f, zero = 0.0f;
  const float *cc = s->res ? p->ptr[s->res - 1] : y;
  GPU_BLAS(d,
           cublasLtMatmul(c->lt, m->desc, &one, IN(p, n, 1), m->la, IN(p, n, 0),
                          m->lb, s->res ? &one : &zero, cc, m->lc, y, m->lc,
                          &m->algo, gpu_step_ws(p, n), m->ws, c->stream));
  if ((m->post_bias || m->post_act) && m->dt != CXK_F32)
    GPU_CUDA(d, cxk_bias_res_act_dt(
                    c->stream, m->dt, y, m->post_bias ? bias : NULL, NULL,
                    m->count, m->n, 1, m->post_act ? act_fn(m->act) : CXK_ID,
                    0.0f, 0.0f, 0, 1, 1));
  else if (m->post_bias || m->post_act)
    GPU_CUDA(d, cxk_bias_act(c->stream, y, m->post_bias ? bias : NULL, m->count,
                             m->n, 1, m->post_act ? act_fn(m->act) : CXK_ID,
                             0.0f, 0.0f));
  return BASE_OK;
}
