/* ops.c: each operator on the GPU: preparation at plan time (cuDNN and
 * cuBLASLt descriptors, algorithm choice, scratch size) and enqueueing at
 * run time (one or a few launches on the context's stream).
 *
 * Convolution is cuDNN (fused bias + ReLU through
 * cudnnConvolutionBiasActivationForward, other activations and lone biases
 * through one extra kernel; asymmetric "same" padding is materialised into
 * scratch first, since cuDNN pads symmetrically), or where faster the
 * executor's depthwise kernel or a cuBLASLt GEMM (over the input's im2col
 * patches unless 1x1). Matmul is cuBLASLt on the
 * row-major product seen as its column-major transpose, with the bias/ReLU
 * epilogue where it applies. Everything else is a kernel of kernels.cu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

static const ir_shape *shp(const gpu_plan *p, int t) {
  return &p->g->tensors[t].shape;
}

static void strides_of(const ir_shape *s, int64_t st[CXK_RANK]) {
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->dim[i];
  }
}

/* Input k of node n: its bytes, or their copy in the node's layout. */
#define IN(p, n, k) gpu_in((p), (int)((n) - (p)->g->nodes), (k))
#define STEP(p, n) (&(p)->steps[(n) - (p)->g->nodes])

/* The kernel of each unary element-wise operator (CXK_ID: none). */
static const int unary_fn[IR_NOPS] = {
    [IR_OP_RELU] = CXK_RELU, [IR_OP_SIGMOID] = CXK_SIGMOID,
    [IR_OP_TANH] = CXK_TANH, [IR_OP_GELU] = CXK_GELU,
    [IR_OP_ERF] = CXK_ERF,   [IR_OP_SQRT] = CXK_SQRT,
    [IR_OP_CLIP] = CXK_CLIP};

/* An activation's kernel: that of the operator computing it (ops.def). */
static int act_fn(int act) {
  int op = ir_act_op((ir_act)act);
  return op < 0 ? CXK_ID : unary_fn[op];
}

int gpu_effective_act(const ir_node *n, const gpu_step *s) {
  return n->a.act == IR_ACT_NONE && s->fuse_relu ? IR_ACT_RELU : n->a.act;
}

/* The element-wise function a convolution's epilogue applies: its
 * activation, a folded relu, or a folded clip (s->clip_lo, s->clip_hi). */
static int epilogue_fn(const ir_node *n, const gpu_step *s) {
  return s->fuse_clip ? CXK_CLIP : act_fn(gpu_effective_act(n, s));
}

/* ---- convolution --------------------------------------------------------- */

static base_status conv_descs(gpu_plan *p, const ir_node *n, int cl,
                              gpu_conv *cv, gpu_conv_key *k, base_diag *d) {
  const ir_shape *x = shp(p, n->in[0]), *w = shp(p, n->in[1]);
  const ir_shape *y = shp(p, n->out[0]);
  const int32_t *pd = n->a.pad;
  int64_t h = x->dim[2], wd = x->dim[3];
  int ph = pd[0], pw = pd[1];
  cv->prepad = pd[0] != pd[2] || pd[1] != pd[3];
  if (cv->prepad) {
    cxk_pad *q = &cv->pad;
    *q = (cxk_pad){.rank = 4, .value = 0.0f};
    for (int i = 0; i < 4; i++)
      q->idim[i] = q->odim[i] = x->dim[i];
    q->odim[2] = h += pd[0] + pd[2];
    q->odim[3] = wd += pd[1] + pd[3];
    q->before[2] = pd[0];
    q->before[3] = pd[1];
    if (cl) { /* the same padding over the bytes' (n, h, w, c) order */
      int64_t id[4] = {x->dim[0], x->dim[2], x->dim[3], x->dim[1]};
      int64_t od[4] = {x->dim[0], h, wd, x->dim[1]};
      memcpy(q->idim, id, sizeof id), memcpy(q->odim, od, sizeof od);
      q->before[1] = pd[0], q->before[2] = pd[1], q->before[3] = 0;
    }
    ph = pw = 0;
  }
  *k = (gpu_conv_key){x->dim[0],
                      x->dim[1],
                      h,
                      wd,
                      w->dim[0],
                      w->dim[2],
                      w->dim[3],
                      {ph, pw},
                      {n->a.stride[0], n->a.stride[1]},
                      {n->a.dilation[0], n->a.dilation[1]},
                      n->a.groups,
                      p->ctx->opt.fp32_strict,
                      cl,
                      0,
                      0,
                      0.0f};
  cudnnTensorFormat_t fmt = cl ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  GPU_DNN(d, cudnnCreateTensorDescriptor(&cv->x));
  GPU_DNN(d, cudnnCreateTensorDescriptor(&cv->y));
  GPU_DNN(d, cudnnCreateFilterDescriptor(&cv->w));
  GPU_DNN(d, cudnnCreateConvolutionDescriptor(&cv->conv));
  GPU_DNN(d, cudnnSetTensor4dDescriptor(cv->x, fmt, CUDNN_DATA_FLOAT, (int)k->n,
                                        (int)k->c, (int)h, (int)wd));
  GPU_DNN(d, cudnnSetTensor4dDescriptor(cv->y, fmt, CUDNN_DATA_FLOAT,
                                        (int)y->dim[0], (int)y->dim[1],
                                        (int)y->dim[2], (int)y->dim[3]));
  GPU_DNN(d, cudnnSetFilter4dDescriptor(cv->w, CUDNN_DATA_FLOAT, fmt,
                                        (int)w->dim[0], (int)w->dim[1],
                                        (int)w->dim[2], (int)w->dim[3]));
  GPU_DNN(d, cudnnSetConvolution2dDescriptor(
                 cv->conv, ph, pw, n->a.stride[0], n->a.stride[1],
                 n->a.dilation[0], n->a.dilation[1], CUDNN_CROSS_CORRELATION,
                 CUDNN_DATA_FLOAT));
  GPU_DNN(d, cudnnSetConvolutionGroupCount(cv->conv, n->a.groups));
  GPU_DNN(d, cudnnSetConvolutionMathType(
                 cv->conv, k->strict ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
  int dims[4];
  GPU_DNN(d, cudnnGetConvolutionNdForwardOutputDim(cv->conv, cv->x, cv->w, 4,
                                                   dims));
  for (int i = 0; i < 4; i++)
    if (dims[i] != y->dim[i])
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "cuDNN's output shape of conv2d (line %d) differs "
                           "from the IR's in dimension %d (%d vs %lld)",
                           n->line, i, dims[i], (long long)y->dim[i]);
  return BASE_OK;
}

static base_status conv_gemm_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                                     const gpu_conv_choice *ch, base_diag *d);

/* Whether the convolution's epilogue is one kconv.cu adds in the kernel:
 * a bias or relu or clip, and no residual (conv_enqueue's "alone"). 0: no;
 * 1: bias and relu, which the legacy cuDNN path fuses too (only its graph
 * API runs them as a kernel of their own); 2: any other (a kernel of their
 * own for either path). gpu_conv_key.ep. */
static int own_epilogue(const ir_node *n, const gpu_step *s) {
  int fn = epilogue_fn(n, s);
  int bias = n->nin == 3 && !s->bias_moved;
  if (s->res || !(bias || fn != CXK_ID) ||
      !(fn == CXK_ID || fn == CXK_RELU || fn == CXK_CLIP))
    return 0;
  return bias && fn == CXK_RELU ? 1 : 2;
}

/* The epilogue cuDNN's fusion engines may compute with the convolution
 * (gpu_conv_key.fep): a bias, a residual add (channels-last like the
 * result), relu or a clip from 0, channels-last only (the engines'
 * layout); 0 where the epilogue is none or another. */
static int fused_epilogue(const gpu_plan *p, const ir_node *n,
                          const gpu_step *s, float *hi) {
  int fn = epilogue_fn(n, s);
  int fep = n->nin == 3 && !s->bias_moved ? GPU_FEP_BIAS : 0;
  if (!s->cl || (s->res && !gpu_is_cl(p, s->res - 1)))
    return 0;
  if (s->res)
    fep |= GPU_FEP_ADD;
  if (fn == CXK_RELU)
    fep |= GPU_FEP_RELU;
  else if (fn == CXK_CLIP && s->clip_lo == 0.0f && s->clip_hi > 0.0f) {
    fep |= GPU_FEP_CLIP;
    *hi = s->clip_hi;
  } else if (fn != CXK_ID)
    return 0;
  return fep;
}

static base_status conv_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                                base_diag *d) {
  gpu_conv *cv = s->conv = base_calloc(1, sizeof *cv);
  if (!cv)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  gpu_conv_key k;
  base_status st = conv_descs(p, n, s->cl, cv, &k, d);
  if (st)
    return st;
  const ir_shape *ws = shp(p, n->in[1]);
  if (s->cl && ws->dim[2] * ws->dim[3] > 1) { /* the filter as KRSC */
    const ir_tensor *w = &p->g->tensors[n->in[1]];
    cv->wcl_static =
        w->kind == IR_T_WEIGHT || (w->kind == IR_T_VALUE && p->wonly[w->node]);
    GPU_CUDA(d, cudaMalloc((void **)&cv->wcl,
                           sizeof(float) * (size_t)ir_shape_numel(ws)));
    cv->wcl_as = *ws;
  }
  int dw = gpu_dw_args(&k, &cv->dw);  /* kconv.cu could run it */
  k.ep = dw ? own_epilogue(n, s) : 0; /* else one key */
  if (!p->ctx->opt.no_fold)
    k.fep = fused_epilogue(p, n, s, &k.hi);
  if (k.fep & ~gpu_conv_fuse_env(NULL)) /* not offered ($SUPEROPT_CONV_FUSE) */
    k.fep = 0, k.hi = 0.0f;
  gpu_conv_choice ch;
  if ((st = gpu_conv_choose(p->ctx, &k, cv->x, cv->w, cv->conv, cv->y, &ch, d)))
    return st;
  cv->algo = ch.algo;
  if (cv->prepad) /* x padded into scratch (but for a GEMM on patches) */
    s->scratch_bytes = sizeof(float) * (size_t)(k.n * k.c * k.h * k.w);
  if (ch.own && dw &&
      (cv->dw.var = ch.own - 1, cxk_dwconv_ok(&cv->dw))) { /* kconv.cu */
    cv->own = 1;
    cv->wcl_as = (ir_shape){.rank = 4, .dim = {1, k.c, k.kh, k.kw}};
    return BASE_OK;
  }
  if ((st = conv_gemm_prepare(p, n, s, &ch, d)) || cv->gemm)
    return st;
  if (ch.plan) { /* graph API engine: bias and activation by cxk_bias_act,
                    or in the plan (fused) */
    cv->plan = ch.plan;
    cv->ws = ch.ws;
    cv->fused = ch.fused;
    return BASE_OK;
  }
  GPU_DNN(d, cudnnSetConvolutionMathType(cv->conv, ch.math));
  GPU_DNN(d, cudnnGetConvolutionForwardWorkspaceSize(p->ctx->dnn, cv->x, cv->w,
                                                     cv->conv, cv->y, cv->algo,
                                                     &cv->ws));
  if (gpu_effective_act(n, s) == IR_ACT_RELU && n->nin == 3 && !s->res) {
    GPU_DNN(d, cudnnCreateTensorDescriptor(&cv->b));
    GPU_DNN(d, cudnnSetTensor4dDescriptor(cv->b, CUDNN_TENSOR_NCHW,
                                          CUDNN_DATA_FLOAT, 1, (int)k.o, 1, 1));
    GPU_DNN(d, cudnnCreateActivationDescriptor(&cv->act));
    GPU_DNN(d, cudnnSetActivationDescriptor(cv->act, CUDNN_ACTIVATION_RELU,
                                            CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  return BASE_OK;
}

static base_status conv_enqueue(gpu_plan *p, const ir_node *n, gpu_step *s,
                                base_diag *d) {
  gpu_conv *cv = s->conv;
  gpu_ctx *c = p->ctx;
  const float *x = IN(p, n, 0), *w = p->ptr[n->in[1]];
  float *y = p->ptr[n->out[0]];
  if (cv->wcl) {
    if (!cv->wcl_static) /* else converted once, at upload */
      GPU_CUDA(d, gpu_convert(c->stream, &cv->wcl_as, w, cv->wcl, 1));
    w = cv->wcl;
  }
  if (cv->prepad && !cv->patches) { /* the patches are padded as copied */
    GPU_CUDA(d, cxk_pad_nd(c->stream, x, s->scratch, &cv->pad));
    x = s->scratch;
  }
  const float one = 1.0f, zero = 0.0f;
  if (cv->gemm) { /* y[P,O] = x[P,C] w[O,C]^T, channels-last */
    gpu_mm *m = cv->gemm;
    if (cv->patches) { /* the patches as rows: [P, kh*kw*C] */
      GPU_CUDA(d, cxk_im2col_rows(c->stream, x, s->scratch, &cv->im2col));
      x = s->scratch;
    }
    const float *bias = p->ptr[n->in[n->nin - 1]];
    if (cv->gemm_ep && n->nin == 3 && !s->bias_moved)
      GPU_BLAS(d, cublasLtMatmulDescSetAttribute(
                      m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                      sizeof bias));
    int rc = cv->gemm_ep && s->res; /* the residual as C */
    const float *cc = rc ? p->ptr[s->res - 1] : y;
    GPU_BLAS(d, cublasLtMatmul(c->lt, m->desc, &one, w, m->la, x, m->lb,
                               rc ? &one : &zero, cc, m->lc, y, m->lc, &m->algo,
                               gpu_step_ws(p, n), m->ws, c->stream));
    if (cv->gemm_ep)
      return BASE_OK;
  } else if (cv->own) { /* with bias and relu or clip, when nothing else
                         * follows */
    const float *b = n->nin == 3 && !s->bias_moved ? p->ptr[n->in[2]] : NULL;
    cxk_dw a = cv->dw;
    a.fn = epilogue_fn(n, s);
    a.lo = s->clip_lo, a.hi = s->clip_hi;
    int alone = !s->res && cxk_dwconv_ok(&a);
    if (!alone)
      a.fn = CXK_ID;
    GPU_CUDA(d, cxk_dwconv(c->stream, x, w, alone ? b : NULL, y, &a));
    if (alone)
      return BASE_OK;
  } else if (cv->plan) {
    /* the key's bias and residual (fused_epilogue) */
    const float *b =
        cv->fused && n->nin == 3 && !s->bias_moved ? p->ptr[n->in[2]] : NULL;
    const float *r = cv->fused && s->res ? p->ptr[s->res - 1] : NULL;
    /* A barrier before a plan that reads a residual, where it is launched
     * directly (gpu_options.no_graph): cuDNN's runtime-compiled fusion
     * engines may start before the kernel in front ends (programmatic
     * dependent launch) and read the residual that kernel is still
     * writing. A memset is no kernel: the fused one waits for everything
     * before it. Captured runs need none: gpu_end_capture makes every edge
     * a full dependency. */
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (r)
      GPU_CUDA(d, cudaStreamIsCapturing(c->stream, &cs));
    if (r && cs == cudaStreamCaptureStatusNone)
      GPU_CUDA(d, cudaMemsetAsync(gpu_step_ws(p, n), 0, 4, c->stream));
    base_status st = gpu_dnn_execute(c, cv->plan, &cv->vp, x, w, y, b, r,
                                     gpu_step_ws(p, n), d);
    if (st || cv->fused)
      return st;
  } else if (cv->act) {
    GPU_DNN(d, cudnnConvolutionBiasActivationForward(
                   c->dnn, &one, cv->x, x, cv->w, w, cv->conv, cv->algo,
                   gpu_step_ws(p, n), cv->ws, &zero, cv->y, y, cv->b,
                   p->ptr[n->in[2]], cv->act, cv->y, y));
    return BASE_OK;
  } else {
    GPU_DNN(d, cudnnConvolutionForward(c->dnn, &one, cv->x, x, cv->w, w,
                                       cv->conv, cv->algo, gpu_step_ws(p, n),
                                       cv->ws, &zero, cv->y, y));
  }
  const ir_shape *ys = shp(p, n->out[0]);
  int fn = epilogue_fn(n, s);
  const float *bias = n->nin == 3 && !s->bias_moved ? p->ptr[n->in[2]] : NULL;
  int64_t inner = s->cl ? 1 : ys->dim[2] * ys->dim[3];
  if (s->res) { /* the residual epilogue: (conv + bias) + res, then act */
    int r = s->res - 1, ycl = gpu_is_cl(p, n->out[0]), rcl = gpu_is_cl(p, r);
    int rmode = ycl == rcl ? 0 : ycl ? 1 : 2;
    GPU_CUDA(d, cxk_bias_res_act(
                    c->stream, y, bias, p->ptr[r], ir_shape_numel(ys),
                    ys->dim[1], ycl ? 1 : ys->dim[2] * ys->dim[3], fn,
                    s->clip_lo, s->clip_hi, rmode, ys->dim[2], ys->dim[3]));
  } else if (bias || fn != CXK_ID)
    GPU_CUDA(d, cxk_bias_act(c->stream, y, bias, ir_shape_numel(ys), ys->dim[1],
                             inner, fn, s->clip_lo, s->clip_hi));
  return BASE_OK;
}

static void mm_free(gpu_mm *m) {
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
  free(m);
}

/* ---- matmul ---------------------------------------------------------------
 * Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T: cuBLASLt's
 * "A" is our b (N x K, ld N), its "B" our a (K x M, ld K), D is N x M. */

/* transa: our b is stored N-major instead (K x N, ld K; a convolution's
 * filter [O, kh*kw*C]) and cuBLASLt transposes it. */
static base_status mm_layouts(gpu_mm *m, int64_t mm, int64_t nn, int64_t kk,
                              int64_t batch, int transa, base_diag *d) {
  GPU_BLAS(d, transa ? cublasLtMatrixLayoutCreate(
                           &m->la, CUDA_R_32F, (uint64_t)kk, (uint64_t)nn, kk)
                     : cublasLtMatrixLayoutCreate(
                           &m->la, CUDA_R_32F, (uint64_t)nn, (uint64_t)kk, nn));
  GPU_BLAS(d, cublasLtMatrixLayoutCreate(&m->lb, CUDA_R_32F, (uint64_t)kk,
                                         (uint64_t)mm, kk));
  GPU_BLAS(d, cublasLtMatrixLayoutCreate(&m->lc, CUDA_R_32F, (uint64_t)nn,
                                         (uint64_t)mm, nn));
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

/* The bias node n's matmul adds: its own, or a folded bias add's. */
static const float *mm_bias_ptr(const gpu_plan *p, const ir_node *n,
                                const gpu_step *s) {
  return n->nin == 3  ? p->ptr[n->in[2]]
         : s->mm_bias ? p->ptr[s->mm_bias - 1]
                      : NULL;
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
static base_status mm_setup(gpu_plan *p, gpu_mm *m, cublasLtEpilogue_t ep,
                            int64_t mm, int64_t nn, int64_t kk, int64_t batch,
                            int transa, int beta, gpu_mm_key *key,
                            base_diag *d) {
  cublasComputeType_t ct = p->ctx->opt.fp32_strict
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
                      0};
  return mm_layouts(m, mm, nn, kk, batch, transa, d);
}

/* ---- matmuls through transposes (gpu_smm) ---------------------------------
 * cuBLAS's pointer-array batched GEMM, one matrix a (d0, d1): a row-major
 * operand of strides (rs, cs) is a column-major matrix cuBLAS reads as is
 * when cs = 1 (ld rs) or transposed when rs = 1 (ld cs). As for cuBLASLt,
 * row-major c = a b is column-major c^T = b^T a^T. */

static base_status smm_alloc(gpu_smm *m, base_diag *d) {
  size_t nb = (size_t)(m->d0 * m->d1);
  GPU_CUDA(d, cudaMalloc((void **)&m->parr, 3 * nb * sizeof(void *)));
  return BASE_OK;
}

static base_status smm_prepare(gpu_step *s, base_diag *d) {
  return smm_alloc(s->smm, d);
}

/* m's pointer arrays for c = a b. */
static base_status smm_bind(gpu_smm *m, const float *a, const float *b,
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
  return smm_bind(p->steps[i].smm, IN(p, n, 0), IN(p, n, 1), p->ptr[n->out[0]],
                  d);
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

static base_status smm_run(gpu_ctx *c, const gpu_smm *m, base_diag *d) {
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
  return smm_run(p->ctx, s->smm, d);
}

static base_status mm_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                              base_diag *d) {
  if (s->smm)
    return smm_prepare(s, d);
  gpu_mm *m = s->mm = base_calloc(1, sizeof *m);
  if (!m)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  const ir_shape *a = shp(p, n->in[0]), *b = shp(p, n->in[1]);
  int64_t kk = a->dim[a->rank - 1], nn = b->dim[b->rank - 1];
  int64_t mm = a->dim[a->rank - 2], batch = 1;
  if (b->rank == 2)
    mm = ir_shape_numel(a) / kk; /* shared b: fold the batch into M */
  else
    batch = ir_shape_numel(a) / (mm * kk);
  m->n = nn;
  m->count = ir_shape_numel(shp(p, n->out[0]));
  cublasLtEpilogue_t ep =
      mm_epilogue(m, &p->ctx->opt, s, n->nin == 3 || s->mm_bias,
                  gpu_effective_act(n, s), batch);
  gpu_mm_key key;
  /* a folded residual is read as C */
  base_status st =
      mm_setup(p, m, ep, mm, nn, kk, batch, 0, s->res != 0, &key, d);
  return st ? st : gpu_mm_choose(p->ctx, &key, m, d);
}

static base_status mm_enqueue(gpu_plan *p, const ir_node *n, gpu_step *s,
                              base_diag *d) {
  if (s->smm)
    return smm_enqueue(p, s, d);
  gpu_mm *m = s->mm;
  gpu_ctx *c = p->ctx;
  const float *bias = mm_bias_ptr(p, n, s);
  float *y = p->ptr[n->out[0]];
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
  if (m->post_bias || m->post_act)
    GPU_CUDA(d, cxk_bias_act(c->stream, y, m->post_bias ? bias : NULL, m->count,
                             m->n, 1, m->post_act ? act_fn(m->act) : CXK_ID,
                             0.0f, 0.0f));
  return BASE_OK;
}

/* ---- convolutions as GEMMs -----------------------------------------------
 * Channels-last (or on 1x1 images, squeeze-and-excitation's, where both
 * layouts are the same bytes), a 1x1 stride-1 unpadded convolution of
 * groups 1 is the row-major product y[P,O] = x[P,C] w[O,C]^T over the
 * P = N*OH*OW pixels. So is any other channels-last convolution of groups
 * 1 once its input is copied into its patches [P, kh*kw*C] (im2col, timed
 * with the GEMM), against the KRSC filter [O, kh*kw*C]: ConvNeXt's 4x4
 * stem and 2x2 downsampling, and the 3x3 convolutions of a batch-1
 * network's last stages, whose few output pixels cuDNN's engines spread
 * over few blocks (ResNet's 3x3 512 -> 512 on 7x7: 13.4 us in cuDNN's best
 * engine, 7.3 us as cuBLASLt's GEMM on an H200, the patches ~2 us).
 * column-major y^T (O x P) = op(A) B with A the filter seen as K x O (ld
 * K) transposed, B = x^T (K x P, ld K). cuDNN serves channel counts that
 * are no multiple of 4 (ShuffleNet's 58, 116, 232) with slow kernels;
 * cuBLASLt does not mind them. Kept only where it times faster than the
 * convolution engine chosen; the epilogue adds the bias, a channels-last
 * residual (as C, beta 1) and a relu when that is all that follows, else
 * the convolution's own epilogue runs. */

#define GPU_PATCHES_MAX ((int64_t)64 << 20) /* bytes of patches, at most */

/* 0: no GEMM; 1: x as it is; 2: x's patches (im2col, a) where they tile
 * the image (kernel = stride, unpadded: space to depth); 3: other
 * patches. */
static int gemm_shape(const gpu_plan *p, const ir_node *n, const gpu_step *s,
                      cxk_im2col *a) {
  const ir_shape *w = shp(p, n->in[1]), *x = shp(p, n->in[0]);
  const ir_shape *y = shp(p, n->out[0]);
  const int32_t *pd = n->a.pad;
  int one_pixel = x->dim[2] * x->dim[3] == 1; /* both layouts: [N, C] */
  int unpadded = !pd[0] && !pd[1] && !pd[2] && !pd[3];
  int plain = unpadded && w->dim[2] == 1 && w->dim[3] == 1 &&
              n->a.stride[0] == 1 && n->a.stride[1] == 1;
  if (n->a.groups != 1 || p->ctx->opt.legacy_conv)
    return 0;
  if ((s->cl || one_pixel) && plain)
    return 1;
  *a = (cxk_im2col){x->dim[0],        x->dim[2],       x->dim[3],
                    x->dim[1],        y->dim[2],       y->dim[3],
                    (int)w->dim[2],   (int)w->dim[3],  n->a.stride[0],
                    n->a.stride[1],   pd[0],           pd[1],
                    n->a.dilation[0], n->a.dilation[1]};
  int64_t bytes =
      4 * y->dim[0] * y->dim[2] * y->dim[3] * w->dim[1] * w->dim[2] * w->dim[3];
  int tiles = unpadded && w->dim[2] == n->a.stride[0] &&
              w->dim[3] == n->a.stride[1] && n->a.dilation[0] == 1 &&
              n->a.dilation[1] == 1;
  return !s->cl || bytes > GPU_PATCHES_MAX ? 0 : tiles ? 2 : 3;
}

/* ch: cuDNN's choice, against which the GEMM is timed: its engine's time,
 * and the epilogue kernel's where it was timed (ch->ep_ms; 0: not), which
 * the GEMM's epilogue may save and a fused plan includes. */
static base_status conv_gemm_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                                     const gpu_conv_choice *ch, base_diag *d) {
  cxk_im2col a;
  int shape = gemm_shape(p, n, s, &a);
  if (!shape)
    return BASE_OK;
  const ir_shape *w = shp(p, n->in[1]), *y = shp(p, n->out[0]);
  int64_t pp = y->dim[0] * y->dim[2] * y->dim[3];
  int64_t cc = w->dim[1] * w->dim[2] * w->dim[3], oo = w->dim[0];
  float copy_ms = 0.0f;
  if (shape >= 2) /* the patches' copy is part of the price */
    copy_ms = gpu_conv_patch_time(p->ctx, &ch->key, &a);
  gpu_mm *m = s->conv->gemm = base_calloc(1, sizeof *m); /* released with
                                                           the step */
  if (!m)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int act = gpu_effective_act(n, s), bias = n->nin == 3 && !s->bias_moved;
  /* a folded residual of y's layout (channels-last: the same [P,O] rows)
   * is cuBLASLt's C (beta 1), added before the bias and the relu:
   * D = relu(A B + C + bias) */
  int res_ok = !s->res || gpu_is_cl(p, s->res - 1);
  int ep_ok =
      res_ok && !s->fuse_clip && (act == IR_ACT_NONE || act == IR_ACT_RELU);
  cublasLtEpilogue_t ep = !ep_ok               ? CUBLASLT_EPILOGUE_DEFAULT
                          : bias && act        ? CUBLASLT_EPILOGUE_RELU_BIAS
                          : bias               ? CUBLASLT_EPILOGUE_BIAS
                          : act == IR_ACT_RELU ? CUBLASLT_EPILOGUE_RELU
                                               : CUBLASLT_EPILOGUE_DEFAULT;
  gpu_mm_key key;
  /* timed reading the residual as C, as it runs */
  base_status st =
      mm_setup(p, m, ep, pp, oo, cc, 1, 1, ep_ok && s->res, &key, d);
  if (st)
    return st;
  /* a GEMM that cannot be timed or is not faster leaves cuDNN's choice;
   * $SUPEROPT_GEMM=always takes it wherever it applies (tests) */
  const char *force = getenv("SUPEROPT_GEMM");
  int always = force && !strcmp(force, "always");
  base_diag ignored;
  int timed = gpu_mm_choose(p->ctx, &key, m, &ignored) == BASE_OK;
  float cudnn_ms = ch->fused ? ch->ms : ch->ms + ch->ep_ms;
  if (p->ctx->tune_log)
    fprintf(stderr,
            "tune: conv2d line %d as GEMM %lldx%lldx%lld: %.4f ms + patches "
            "%.4f ms, against %.4f ms\n",
            n->line, (long long)pp, (long long)oo, (long long)cc,
            timed ? m->ms : -1.0f, copy_ms, cudnn_ms);
  /* on 1x1 images (squeeze-and-excitation) the GEMM unless it times 10%
   * slower: isolated, the two time alike (2 us on an H200), in the network
   * the GEMMs measured faster (RegNet batch 1: 0.601 -> 0.556 ms). On
   * patches of overlapping or padded windows only where it times 20%
   * faster: isolated timings overstate the gain in a network whose
   * branches run side by side (Inception-v3's optimized graph at batch 1
   * on an H200: 0.485 ms with cuDNN's engines, 0.490 with those patches
   * taken at 3% and at 10%, 0.477 at 20%) */
  const ir_shape *x = shp(p, n->in[0]);
  float margin = x->dim[2] * x->dim[3] == 1 && shape == 1 ? 1.1f
                 : shape == 3                             ? 0.8f
                                                          : 0.97f;
  float gemm_ms = m->ms + copy_ms + (ep_ok ? 0.0f : ch->ep_ms);
  int fuse_always; /* $SUPEROPT_CONV_FUSE=always keeps cuDNN's fused plan */
  gpu_conv_fuse_env(&fuse_always);
  if (timed && (always || (m->ms > 0 && gemm_ms < margin * cudnn_ms &&
                           !(fuse_always && ch->fused)))) {
    s->conv->gemm_ep = ep_ok;
    s->conv->ws = m->ws;
    if (shape >= 2) {
      s->conv->patches = 1;
      s->conv->im2col = a;
      s->scratch_bytes = sizeof(float) * (size_t)(pp * cc);
    }
    return BASE_OK;
  }
  mm_free(m);
  s->conv->gemm = NULL;
  return BASE_OK;
}

/* ---- element-wise ---------------------------------------------------------
 */

/* Strides of input t over the output's logical coordinates (0 where t
 * is broadcast), in either layout. */
static void bcast_strides(const gpu_plan *p, int t, const ir_shape *o,
                          int64_t *st) {
  const ir_shape *x = shp(p, t);
  int64_t xs[CXK_RANK];
  gpu_strides(p, t, xs);
  int shift = o->rank - x->rank;
  for (int i = 0; i < o->rank; i++) {
    int xi = i - shift;
    st[i] = xi >= 0 && x->dim[xi] != 1 ? xs[xi] : 0;
  }
}

/* A channels-last output is walked in its bytes' order (n, h, w, c). */
static void to_cl_order(int64_t *v) {
  int64_t c = v[1];
  v[1] = v[2], v[2] = v[3], v[3] = c;
}

static cudaError_t binary(gpu_plan *p, const ir_node *n, int op, int relu) {
  const ir_shape *a = shp(p, n->in[0]), *b = shp(p, n->in[1]);
  const ir_shape *o = shp(p, n->out[0]);
  int64_t cnt = ir_shape_numel(o);
  const float *pa = p->ptr[n->in[0]], *pb = p->ptr[n->in[1]];
  float *po = p->ptr[n->out[0]];
  int ocl = gpu_is_cl(p, n->out[0]);
  if (ir_shape_eq(a, o) && ir_shape_eq(b, o) && gpu_is_cl(p, n->in[0]) == ocl &&
      gpu_is_cl(p, n->in[1]) == ocl)
    return cxk_binary(p->ctx->stream, op, pa, pb, po, cnt, NULL, relu);
  cxk_bcast bc = {.rank = o->rank};
  memcpy(bc.dim, o->dim, sizeof(int64_t) * (size_t)o->rank);
  bcast_strides(p, n->in[0], o, bc.sa);
  bcast_strides(p, n->in[1], o, bc.sb);
  if (ocl) {
    to_cl_order(bc.dim), to_cl_order(bc.sa), to_cl_order(bc.sb);
  }
  return cxk_binary(p->ctx->stream, op, pa, pb, po, cnt, &bc, relu);
}

/* where and gather run in the standard layout (not channels-last). */
static void plain_bcast(const ir_shape *x, const ir_shape *o, int64_t *st) {
  int64_t xs[CXK_RANK];
  strides_of(x, xs);
  for (int i = 0; i < o->rank; i++) {
    int xi = i - (o->rank - x->rank);
    st[i] = xi >= 0 && x->dim[xi] != 1 ? xs[xi] : 0;
  }
}

static cudaError_t where(gpu_plan *p, const ir_node *n) {
  const ir_shape *o = shp(p, n->out[0]);
  cxk_where_args w = {.rank = o->rank};
  memcpy(w.dim, o->dim, sizeof(int64_t) * (size_t)o->rank);
  plain_bcast(shp(p, n->in[0]), o, w.sc);
  plain_bcast(shp(p, n->in[1]), o, w.sa);
  plain_bcast(shp(p, n->in[2]), o, w.sb);
  return cxk_where(p->ctx->stream, IN(p, n, 0), IN(p, n, 1), IN(p, n, 2),
                   p->ptr[n->out[0]], ir_shape_numel(o), &w);
}

static cudaError_t gather_idx(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < n->a.axis; i++)
    outer *= x->dim[i];
  for (int i = n->a.axis + 1; i < x->rank; i++)
    inner *= x->dim[i];
  return cxk_gather(p->ctx->stream, IN(p, n, 0), IN(p, n, 1), p->ptr[n->out[0]],
                    outer, ir_shape_numel(shp(p, n->in[1])), x->dim[n->a.axis],
                    inner);
}

static cudaError_t cast(gpu_plan *p, const ir_node *n) {
  int fn = n->a.groups == IR_DT_I64    ? CXK_TRUNC
           : n->a.groups == IR_DT_BOOL ? CXK_NONZERO
                                       : CXK_ID;
  return cxk_unary(p->ctx->stream, fn, IN(p, n, 0), p->ptr[n->out[0]],
                   ir_shape_numel(shp(p, n->out[0])), 0, 0);
}

static cudaError_t unary(gpu_plan *p, const ir_node *n, int fn) {
  return cxk_unary(p->ctx->stream, fn, IN(p, n, 0), p->ptr[n->out[0]],
                   ir_shape_numel(shp(p, n->out[0])), n->a.lo, n->a.hi);
}

/* ---- data movement --------------------------------------------------------
 */

/* Concat and split move blocks of rows: along `axis`, part k of w[k]
 * positions is `outer` rows of w[k] * inner floats of the whole's rows
 * (kmove.cu: one launch for up to CXK_PARTS parts, float4 where every
 * part allows; cudaMemcpy2DAsync ran far below the bandwidth on the short
 * rows of channels-last tensors). */
static int64_t outer_rows(const ir_shape *s, int axis, int64_t *inner) {
  int64_t outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; i++)
    outer *= s->dim[i];
  for (int i = axis + 1; i < s->rank; i++)
    *inner *= s->dim[i];
  return outer;
}

/* Shape and axis over the bytes' order: (n, h, w, c) when channels-last. */
static ir_shape bytes_order(const gpu_plan *p, const ir_node *n, int t,
                            int *axis) {
  ir_shape s = *shp(p, t);
  if (STEP(p, n)->cl && s.rank == 4) {
    to_cl_order(s.dim);
    static const int pos[4] = {0, 3, 1, 2};
    *axis = pos[n->a.axis];
  }
  return s;
}

static cudaError_t concat(gpu_plan *p, const ir_node *n) {
  int axis = n->a.axis;
  ir_shape os = bytes_order(p, n, n->out[0], &axis);
  int64_t inner, outer = outer_rows(&os, axis, &inner);
  int64_t w[IR_MAX_IN];
  const float *src[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++) {
    w[k] = shp(p, n->in[k])->dim[n->a.axis] * inner;
    src[k] = IN(p, n, k);
  }
  return cxk_concat(p->ctx->stream, p->ptr[n->out[0]], src, w, n->nin,
                    STEP(p, n)->fuse_relu, outer);
}

static cudaError_t split(gpu_plan *p, const ir_node *n) {
  int axis = n->a.axis;
  ir_shape xs = bytes_order(p, n, n->in[0], &axis);
  int64_t inner, outer = outer_rows(&xs, axis, &inner);
  int64_t w[IR_MAX_LIST]; /* split's sizes: one list parameter */
  float *dst[IR_MAX_LIST], *rdst[IR_MAX_LIST];
  const gpu_step *s = STEP(p, n);
  if (n->nout > IR_MAX_LIST)
    return cudaErrorInvalidValue;
  for (int k = 0; k < n->nout; k++) { /* relus folded in (plan.c) */
    w[k] = shp(p, n->out[k])->dim[n->a.axis] * inner;
    dst[k] = s->raw_skip >> k & 1 ? NULL : p->ptr[n->out[k]];
    rdst[k] = s->relu_to[k] ? p->ptr[s->relu_to[k] - 1] : NULL;
  }
  return cxk_split(p->ctx->stream, IN(p, n, 0), dst, rdst, w, n->nout, outer);
}

/* transpose (perm in a.list) or slice (starts in a.list) as one strided
 * copy, input and output in whatever layout they have. */
static cudaError_t gather(gpu_plan *p, const ir_node *n, int is_slice) {
  const ir_shape *x = shp(p, n->in[0]), *o = shp(p, n->out[0]);
  int64_t ist[CXK_RANK];
  gpu_strides(p, n->in[0], ist); /* either layout, in and out (layout.c) */
  cxk_walk w = {.rank = o->rank, .extent = ir_shape_numel(x)};
  memcpy(w.dim, o->dim, sizeof(int64_t) * (size_t)o->rank);
  gpu_strides(p, n->out[0], w.dst);
  for (int i = 0; i < o->rank; i++) {
    w.sst[i] = is_slice ? ist[i] : ist[n->a.list[i]];
    if (is_slice)
      w.soff += n->a.list[i] * ist[i];
  }
  return cxk_copy(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &w);
}

/* pad (before-pads in a.list) or enlarge (centred zero padding), in the
 * step's layout; or a pad and the slice it alone feeds (pad_slice,
 * layout.c): the slice's result, out[q] = x[q + start - before], written
 * in its layout, x read through its strides. */
static cudaError_t pad(gpu_plan *p, const ir_node *n, int is_enlarge) {
  const gpu_step *s = STEP(p, n);
  const ir_node *sl = s->pad_slice ? &p->g->nodes[s->pad_slice - 1] : NULL;
  int y = sl ? sl->out[0] : n->out[0];
  const ir_shape *x = shp(p, n->in[0]), *o = shp(p, y);
  cxk_pad q = {.rank = o->rank, .value = is_enlarge ? 0.0f : n->a.value};
  for (int i = 0; i < o->rank; i++) {
    q.odim[i] = o->dim[i];
    q.idim[i] = x->dim[i];
    q.before[i] = is_enlarge ? (o->dim[i] - x->dim[i]) / 2
                             : n->a.list[i] - (sl ? sl->a.list[i] : 0);
  }
  if (sl)
    gpu_strides(p, n->in[0], q.ist); /* else contiguous in the step's order */
  if ((sl ? p->cl && p->cl[y] : s->cl) && o->rank == 4) { /* NHWC out */
    to_cl_order(q.odim), to_cl_order(q.idim), to_cl_order(q.before);
    to_cl_order(q.ist);
  }
  return cxk_pad_nd(p->ctx->stream, IN(p, n, 0), p->ptr[y], &q);
}

/* ---- pooling, normalisation, reduction ------------------------------------
 */

static cudaError_t pool(gpu_plan *p, const ir_node *n, int is_max) {
  const ir_shape *x = shp(p, n->in[0]), *o = shp(p, n->out[0]);
  cxk_pool q = {x->dim[0],      x->dim[1],
                x->dim[2],      x->dim[3],
                o->dim[2],      o->dim[3],
                n->a.kernel[0], n->a.kernel[1],
                n->a.stride[0], n->a.stride[1],
                n->a.pad[0],    n->a.pad[1],
                is_max,         n->a.count_include_pad,
                STEP(p, n)->cl};
  return cxk_pool2d(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &q);
}

/* The reduction's walk: mean over the axes of a.list (global_avgpool: H
 * and W), in the input's layout. */
static cxk_reduce reduce_args(const gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int red[CXK_RANK] = {0};
  if (n->op == IR_OP_GLOBAL_AVGPOOL)
    red[2] = red[3] = 1;
  else
    for (int i = 0; i < n->a.nlist; i++)
      red[n->a.list[i]] = 1;
  int64_t ist[CXK_RANK];
  gpu_strides(p, n->in[0], ist);
  cxk_reduce r = {.nout = 1, .count = 1};
  for (int i = 0; i < x->rank; i++) {
    if (red[i]) {
      r.rdim[r.nred] = x->dim[i];
      r.rst[r.nred++] = ist[i];
      r.count *= x->dim[i];
    } else {
      r.kdim[r.nkeep] = x->dim[i];
      r.kst[r.nkeep++] = ist[i];
      r.nout *= x->dim[i];
    }
  }
  return r;
}

static cudaError_t reduce_node(gpu_plan *p, const ir_node *n) {
  cxk_reduce r = reduce_args(p, n);
  return cxk_reduce_mean(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &r,
                         STEP(p, n)->scratch);
}

static cudaError_t batchnorm(gpu_plan *p, const ir_node *n, int relu) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t cnt = ir_shape_numel(x), c = x->dim[1];
  int64_t inner = STEP(p, n)->cl ? 1 : cnt / (x->dim[0] * c);
  return cxk_batchnorm(p->ctx->stream, IN(p, n, 0), p->ptr[n->in[1]],
                       p->ptr[n->in[2]], p->ptr[n->in[3]], p->ptr[n->in[4]],
                       p->ptr[n->out[0]], cnt, c, inner, n->a.eps, relu);
}

static cudaError_t softmax(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < n->a.axis; i++)
    outer *= x->dim[i];
  for (int i = n->a.axis + 1; i < x->rank; i++)
    inner *= x->dim[i];
  return cxk_softmax(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], outer,
                     x->dim[n->a.axis], inner);
}

static cudaError_t layernorm(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t rows = 1, len = 1;
  for (int i = 0; i < x->rank; i++)
    *(i < n->a.axis ? &rows : &len) *= x->dim[i];
  int xb = STEP(p, n)->ln_bias; /* a convolution's bias, moved here */
  return cxk_layernorm(p->ctx->stream, IN(p, n, 0), xb ? p->ptr[xb - 1] : NULL,
                       n->nin > 1 ? p->ptr[n->in[1]] : NULL,
                       n->nin > 2 ? p->ptr[n->in[2]] : NULL, p->ptr[n->out[0]],
                       rows, len, n->a.eps);
}

/* The packed strides of a rank >= 2 tensor of shape s as cxk_att takes
 * them ([d0, d1, rows, cols]: rank 4 as it is, other ranks with their
 * leading dimensions folded into d1). */
static void att_strides(const ir_shape *s, int64_t st[4]) {
  int r = s->rank;
  st[3] = 1, st[2] = s->dim[r - 1];
  st[1] = st[2] * s->dim[r - 2];
  st[0] = st[1] * (r == 4 ? s->dim[1] : 1);
  for (int i = 0; r != 4 && i < r - 2; i++)
    st[0] *= s->dim[i];
}

/* An attention node's arguments: packed strides unless layout.c set them
 * (reading through transposes and a split); d and e within the kernel's
 * limit. */
static base_status att_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                               base_diag *d) {
  const ir_shape *q = shp(p, n->in[0]), *y = shp(p, n->out[0]);
  int r = q->rank;
  if (!s->att) {
    if (!(s->att = base_calloc(1, sizeof *s->att)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    for (int k = 0; k < 3; k++)
      att_strides(shp(p, n->in[k]), s->att->a.st[k]);
    att_strides(y, s->att->a.st[3]);
  }
  cxk_att *a = &s->att->a;
  a->d0 = r == 4 ? q->dim[0] : 1, a->d1 = r == 4 ? q->dim[1] : 1;
  for (int i = 0; r != 4 && i < r - 2; i++)
    a->d1 *= q->dim[i];
  a->s = q->dim[r - 2], a->d = q->dim[r - 1];
  a->t = shp(p, n->in[1])->dim[r - 1], a->e = y->dim[r - 1];
  if (ir_shape_numel(y) > 0 && !cxk_attention_ok(a))
    return base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                         "attention: the GPU kernel takes q's and v's last "
                         "dimensions up to %d, got %lld and %lld",
                         CXK_ATT_MAX_DIM, (long long)a->d, (long long)a->e);
  gpu_att *t = s->att;
  t->rw = 2;
  if (!p->ctx->opt.fp32_strict && a->t <= cxk_attention_tc_t() &&
      p->ctx->prop.major >= 9)
    t->rw = 0; /* TF32 tensor cores, like the matmuls (sm_90 code) */
  /* the split form: scores [d0, d1, s, t] packed in scratch */
  int64_t sst[4] = {a->d1 * a->s * a->t, a->s * a->t, a->t, 1};
  t->split_ok = gpu_smm_layout(a->st[0], a->s, a->d, NULL) &&
                gpu_smm_layout(a->st[1], a->d, a->t, NULL) &&
                gpu_smm_layout(a->st[2], a->t, a->e, NULL) &&
                gpu_smm_layout(a->st[3], a->s, a->e, NULL) == 1 &&
                ir_shape_numel(y) > 0;
  if (!t->split_ok)
    return BASE_OK;
  for (int k = 0; k < 2; k++) {
    gpu_smm *m = &t->mm[k];
    *m = (gpu_smm){.d0 = a->d0,
                   .d1 = a->d1,
                   .m = a->s,
                   .n = k ? a->e : a->t,
                   .k = k ? a->t : a->d,
                   .off = {k ? 0 : t->off[0], k ? t->off[2] : t->off[1]}};
    memcpy(m->st[0], k ? sst : a->st[0], sizeof sst);
    memcpy(m->st[1], k ? a->st[2] : a->st[1], sizeof sst);
    memcpy(m->st[2], k ? a->st[3] : sst, sizeof sst);
    base_status st = smm_alloc(m, d);
    if (st)
      return st;
  }
  size_t bytes = sizeof(float) * (size_t)(a->d0 * sst[0]);
  if (s->scratch_bytes < bytes)
    s->scratch_bytes = bytes;
  return BASE_OK;
}

/* One run of attention node n in its mode (split or the kernel). */
static base_status att_run(gpu_plan *p, const ir_node *n, const gpu_att *t,
                           int split, base_diag *d) {
  const float *sc = n->nin > 3 ? IN(p, n, 3) : NULL;
  gpu_ctx *c = p->ctx;
  if (split) {
    base_status st = smm_run(c, &t->mm[0], d);
    if (!st)
      GPU_CUDA(d, cxk_scaled_softmax(c->stream, STEP(p, n)->scratch,
                                     t->a.d0 * t->a.d1 * t->a.s, t->a.t, sc));
    return st ? st : smm_run(c, &t->mm[1], d);
  }
  GPU_CUDA(d, cxk_attention(c->stream, IN(p, n, 0) + t->off[0],
                            IN(p, n, 1) + t->off[1], IN(p, n, 2) + t->off[2],
                            sc, p->ptr[n->out[0]], &t->a, t->rw));
  return BASE_OK;
}

typedef struct att_timed {
  gpu_plan *p;
  const ir_node *n;
  int split;
} att_timed;

static int att_timed_run(gpu_ctx *c, const void *u) {
  const att_timed *x = u;
  (void)c;
  return att_run(x->p, x->n, STEP(x->p, x->n)->att, x->split, NULL) != BASE_OK;
}

base_status gpu_att_bind(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  gpu_step *s = &p->steps[i];
  gpu_att *t = s->att;
  if (!t->split_ok)
    return BASE_OK;
  base_status st = smm_bind(&t->mm[0], IN(p, n, 0), IN(p, n, 1), s->scratch, d);
  if (!st)
    st = smm_bind(&t->mm[1], s->scratch, IN(p, n, 2), p->ptr[n->out[0]], d);
  if (st)
    return st;
  const char *env = getenv("SUPEROPT_ATTENTION"); /* tests: one form */
  if (env && (!strcmp(env, "kernel") || !strcmp(env, "split"))) {
    t->split = !strcmp(env, "split");
    return BASE_OK;
  }
  cudaEvent_t e0 = NULL, e1 = NULL;
  if (cudaEventCreate(&e0) != cudaSuccess ||
      cudaEventCreate(&e1) != cudaSuccess) {
    cudaGetLastError();
    t->split = 1; /* untimed: the form node by node */
  } else {
    t->fused_ms =
        gpu_tune_time(p->ctx, att_timed_run, &(att_timed){p, n, 0}, e0, e1);
    t->split_ms =
        gpu_tune_time(p->ctx, att_timed_run, &(att_timed){p, n, 1}, e0, e1);
    t->split = t->split_ms < t->fused_ms;
  }
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
  if (p->ctx->tune_log)
    fprintf(stderr,
            "superopt: attention %s: kernel %.4f ms, split %.4f ms: %s\n",
            p->g->tensors[n->out[0]].name, t->fused_ms, t->split_ms,
            t->split ? "split" : "kernel");
  return BASE_OK;
}

static cudaError_t constant(gpu_plan *p, const ir_node *n) {
  const ir_shape *o = shp(p, n->out[0]);
  float *y = p->ptr[n->out[0]];
  cudaStream_t s = p->ctx->stream;
  if (n->op == IR_OP_CONST_ICONV)
    return cxk_iconv(s, y, o->dim[0], o->dim[1], o->dim[2], o->dim[3]);
  if (n->op == IR_OP_CONST_IMM)
    return cxk_eye(s, y, o->dim[0]);
  return cxk_fill(s, y, ir_shape_numel(o), 1.0f);
}

/* ---- dispatch
 * ---------------------------------------------------------------- */

base_status gpu_step_prepare(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  if (p->steps[i].se_by || p->steps[i].se) /* one kernel (se.c) */
    return BASE_OK;
  if (n->op == IR_OP_CONV2D)
    return conv_prepare(p, n, &p->steps[i], d);
  if (n->op == IR_OP_MATMUL)
    return mm_prepare(p, n, &p->steps[i], d);
  if (n->op == IR_OP_ATTENTION)
    return att_prepare(p, n, &p->steps[i], d);
  if (n->op == IR_OP_GLOBAL_AVGPOOL || n->op == IR_OP_REDUCE_MEAN) {
    cxk_reduce r = reduce_args(p, n); /* partial sums of row slices */
    p->steps[i].scratch_bytes = sizeof(float) * (size_t)cxk_reduce_scratch(&r);
  }
  return BASE_OK;
}

void gpu_step_release(gpu_step *s) {
  if (s->conv) {
    gpu_conv *c = s->conv;
    if (c->x)
      cudnnDestroyTensorDescriptor(c->x);
    if (c->y)
      cudnnDestroyTensorDescriptor(c->y);
    if (c->b)
      cudnnDestroyTensorDescriptor(c->b);
    if (c->w)
      cudnnDestroyFilterDescriptor(c->w);
    if (c->conv)
      cudnnDestroyConvolutionDescriptor(c->conv);
    if (c->act)
      cudnnDestroyActivationDescriptor(c->act);
    if (c->vp.vp)
      cudnnBackendDestroyDescriptor(c->vp.vp);
    cudaFree(c->wcl);
    mm_free(c->gemm);
    free(c);
  }
  mm_free(s->mm);
  if (s->smm) {
    cudaFree(s->smm->parr);
    free(s->smm);
  }
  if (s->att) {
    cudaFree(s->att->mm[0].parr);
    cudaFree(s->att->mm[1].parr);
    free(s->att);
  }
  free(s->cin_off);
  memset(s, 0, sizeof *s);
}

/* Enqueues the kernels of a node that is not conv2d or matmul; *none = 1
 * when there is no kernel for its operator. */
static cudaError_t simple(gpu_plan *p, const ir_node *n, const gpu_step *s,
                          int *none) {
  if (s->view || s->shuf_by || s->slice_by || s->relu_by)
    return cudaSuccess; /* reshape, a relu folded into its producer or
                           written by a split, or a slice written by a
                           folded shuffle (shuffle.c) or by the pad it
                           reads */
  int relu = s->fuse_relu;
  switch (n->op) {
  case IR_OP_EWADD: return binary(p, n, CXK_ADD, relu);
  case IR_OP_EWSUB: return binary(p, n, CXK_SUB, relu);
  case IR_OP_EWMUL:
  case IR_OP_SMUL: return binary(p, n, CXK_MUL, relu);
  case IR_OP_EWDIV: return binary(p, n, CXK_DIV, relu);
  case IR_OP_RELU:
  case IR_OP_SIGMOID:
  case IR_OP_TANH:
  case IR_OP_GELU:
  case IR_OP_ERF:
  case IR_OP_SQRT:
  case IR_OP_CLIP: return unary(p, n, unary_fn[n->op]);
  case IR_OP_CONCAT:
    return s->shuffle ? gpu_shuffle_enqueue(p, (int)(n - p->g->nodes))
                      : concat(p, n);
  case IR_OP_GATHER: return gather_idx(p, n);
  case IR_OP_WHERE: return where(p, n);
  case IR_OP_EQUAL: return binary(p, n, CXK_EQ, 0);
  case IR_OP_NOT: return unary(p, n, CXK_NOT);
  case IR_OP_CAST: return cast(p, n);
  case IR_OP_SPLIT: return split(p, n);
  case IR_OP_TRANSPOSE: return gather(p, n, 0);
  case IR_OP_SLICE: return gather(p, n, 1);
  case IR_OP_PAD: return pad(p, n, 0);
  case IR_OP_ENLARGE: return pad(p, n, 1);
  case IR_OP_AVGPOOL: return pool(p, n, 0);
  case IR_OP_MAXPOOL: return pool(p, n, 1);
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_REDUCE_MEAN: return reduce_node(p, n);
  case IR_OP_BATCHNORM: return batchnorm(p, n, relu);
  case IR_OP_SOFTMAX: return softmax(p, n);
  case IR_OP_LAYERNORM: return layernorm(p, n);
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL: return constant(p, n);
  case IR_OP_RESHAPE: return cudaSuccess; /* a view: its input's bytes */
  case IR_OP_CONV2D:
  case IR_OP_MATMUL:
  case IR_OP_ATTENTION:    /* cuDNN, cuBLASLt, katt.cu: gpu_step_enqueue */
  case IR_OP_FUSED: break; /* generated kernels: gpu_fused_enqueue */
  }
  *none = 1; /* an operator with no kernel here */
  return cudaSuccess;
}

base_status gpu_step_enqueue(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  const gpu_step *s = &p->steps[i];
  base_status st = BASE_OK;
  if (s->se_by) /* written by the pool's kernel */
    return BASE_OK;
  if (s->se) {
    cudaError_t e = gpu_se_enqueue(p, i);
    return e == cudaSuccess
               ? BASE_OK
               : gpu_cuda_fail(d, e, "squeeze-and-excitation kernel");
  }
  for (int k = 0; s->cin_off && k < n->nin; k++)
    if (s->cin_off[k] != (size_t)-1)
      GPU_CUDA(d,
               gpu_convert(p->ctx->stream, shp(p, n->in[k]), p->ptr[n->in[k]],
                           (float *)gpu_in(p, i, k), s->cl));
  if (n->op == IR_OP_CONV2D)
    st = conv_enqueue(p, n, &p->steps[i], d);
  else if (n->op == IR_OP_MATMUL)
    st = mm_enqueue(p, n, &p->steps[i], d);
  else if (n->op == IR_OP_FUSED)
    st = gpu_fused_enqueue(p, n, &p->steps[i], d);
  else if (n->op == IR_OP_ATTENTION)
    st = ir_shape_numel(shp(p, n->out[0])) == 0
             ? BASE_OK
             : att_run(p, n, s->att, s->att->split, d);
  else {
    int none = 0;
    cudaError_t e = simple(p, n, &p->steps[i], &none);
    if (none)
      st = base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "unsupported operator %s on the GPU executor",
                         ir_op(n->op)->name);
    else if (e != cudaSuccess)
      st = gpu_cuda_fail(d, e, ir_op(n->op)->name);
  }
  if (st && d && d->line == 0) {
    d->line = n->line;
    d->col = n->col;
  }
  return st;
}
