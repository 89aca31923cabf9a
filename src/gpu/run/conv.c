/* conv.c: a convolution on the GPU: cuDNN (fused bias + ReLU through
 * cudnnConvolutionBiasActivationForward, other activations and lone
 * biases through one extra kernel; asymmetric "same" padding is
 * materialised into scratch first, since cuDNN pads symmetrically), or
 * where faster the executor's depthwise kernel, its small-K tensor-core
 * kernel (ksmallk.cu: half stems and low-K pointwise convolutions) or a
 * cuBLASLt GEMM (over the input's im2col patches unless 1x1). The engine
 * is chosen by tune/conv.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

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
                      (int16_t)cl,
                      (int16_t)gpu_dt_of(p->g, n->out[0]),
                      0,
                      0,
                      0.0f};
  cudnnTensorFormat_t fmt = cl ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  /* half tensors: float32 accumulation (cuDNN's pseudo-half configuration)
   * on the tensor cores */
  cudnnDataType_t ty = k->dtype == CXK_F16    ? CUDNN_DATA_HALF
                       : k->dtype == CXK_BF16 ? CUDNN_DATA_BFLOAT16
                                              : CUDNN_DATA_FLOAT;
  cudnnMathType_t math = k->dtype != CXK_F32 ? CUDNN_TENSOR_OP_MATH
                         : k->strict         ? CUDNN_FMA_MATH
                                             : CUDNN_DEFAULT_MATH;
  GPU_DNN(d, cudnnCreateTensorDescriptor(&cv->x));
  GPU_DNN(d, cudnnCreateTensorDescriptor(&cv->y));
  GPU_DNN(d, cudnnCreateFilterDescriptor(&cv->w));
  GPU_DNN(d, cudnnCreateConvolutionDescriptor(&cv->conv));
  GPU_DNN(d, cudnnSetTensor4dDescriptor(cv->x, fmt, ty, (int)k->n, (int)k->c,
                                        (int)h, (int)wd));
  GPU_DNN(d, cudnnSetTensor4dDescriptor(cv->y, fmt, ty, (int)y->dim[0],
                                        (int)y->dim[1], (int)y->dim[2],
                                        (int)y->dim[3]));
  GPU_DNN(d, cudnnSetFilter4dDescriptor(cv->w, ty, fmt, (int)w->dim[0],
                                        (int)w->dim[1], (int)w->dim[2],
                                        (int)w->dim[3]));
  GPU_DNN(d, cudnnSetConvolution2dDescriptor(
                 cv->conv, ph, pw, n->a.stride[0], n->a.stride[1],
                 n->a.dilation[0], n->a.dilation[1], CUDNN_CROSS_CORRELATION,
                 CUDNN_DATA_FLOAT));
  GPU_DNN(d, cudnnSetConvolutionGroupCount(cv->conv, n->a.groups));
  GPU_DNN(d, cudnnSetConvolutionMathType(cv->conv, math));
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
  int bias = n->nin >= 3;
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
  int fep = n->nin >= 3 ? GPU_FEP_BIAS : 0;
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

/* gpu_conv_key.ep for a convolution ksmallk.cu may run (a half stem or
 * low-K pointwise one of groups 1, channels-last, its epilogue bias, a
 * channels-last residual and relu or a clip): GPU_SK_ON, the epilogue's
 * GPU_FEP_* bits, and GPU_SK_NCHW where a stem reads an NCHW x (the
 * network's input image) as it is, without the layout's conversion; 0
 * where it may not (k: the key but for ep). */
static int smallk_epilogue(const gpu_plan *p, const ir_node *n,
                           const gpu_step *s, const gpu_conv_key *k,
                           int prepad) {
  int fn = epilogue_fn(n, s);
  if (k->dtype == CXK_F32 || !s->cl || k->groups != 1 ||
      (s->res && !gpu_is_cl(p, s->res - 1)) ||
      (fn != CXK_ID && fn != CXK_RELU && fn != CXK_CLIP))
    return 0;
  gpu_conv_key kk = *k;
  kk.ep = GPU_SK_ON | (n->nin >= 3 ? GPU_FEP_BIAS : 0) |
          (s->res ? GPU_FEP_ADD : 0) |
          (fn == CXK_RELU   ? GPU_FEP_RELU
           : fn == CXK_CLIP ? GPU_FEP_CLIP
                            : 0);
  cxk_sk a;
  if (!gpu_sk_args(&kk, &a))
    return 0;
  if (!prepad && !cxk_smallk_pointwise(&a) && !gpu_is_cl(p, n->in[0]))
    kk.ep |= GPU_SK_NCHW; /* x as it is (an NCHW stem reads as fast) */
  return kk.ep;
}

base_status gpu_conv_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
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
  /* kconv.cu could run it (any float type) */
  int dw = gpu_dw_args(&k, &cv->dw);
  k.ep = dw ? own_epilogue(n, s) /* else one key, or ksmallk.cu's */
            : smallk_epilogue(p, n, s, &k, cv->prepad);
  if (!p->ctx->opt.no_fold) /* half too: half I/O, float32 inside */
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
      (cv->dw.var = ch.own - 1, gpu_dw_ok(&cv->dw))) { /* kconv.cu, kdwt.cu */
    cv->own = 1;
    cv->wcl_as = (ir_shape){.rank = 4, .dim = {1, k.c, k.kh, k.kw}};
    return BASE_OK;
  }
  if (ch.own >= GPU_OWN_SK && gpu_sk_args(&k, &cv->skp) &&
      (cv->skp.var = ch.own - GPU_OWN_SK, cxk_smallk_ok(&cv->skp))) {
    cv->sk = 1; /* ksmallk.cu, unless a GEMM times faster still */
    cv->sk_x_as_is = (k.ep & GPU_SK_NCHW) != 0;
    const char *f = getenv("SUPEROPT_SK"); /* forced (tests): no GEMM */
    if (f && *f && strcmp(f, "off"))
      return BASE_OK;
  }
  if ((st = conv_gemm_prepare(p, n, s, &ch, d)) || cv->gemm) {
    cv->sk = cv->sk_x_as_is = 0;
    return st;
  }
  if (cv->sk)
    return BASE_OK;
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
  if (n->a.act == IR_ACT_RELU && n->nin >= 3 && !s->res &&
      k.dtype == CXK_F32) { /* half: the bias kernel (khalf.cu) */
    GPU_DNN(d, cudnnCreateTensorDescriptor(&cv->b));
    GPU_DNN(d, cudnnSetTensor4dDescriptor(cv->b, CUDNN_TENSOR_NCHW,
                                          CUDNN_DATA_FLOAT, 1, (int)k.o, 1, 1));
    GPU_DNN(d, cudnnCreateActivationDescriptor(&cv->act));
    GPU_DNN(d, cudnnSetActivationDescriptor(cv->act, CUDNN_ACTIVATION_RELU,
                                            CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  return BASE_OK;
}

base_status gpu_conv_enqueue(gpu_plan *p, const ir_node *n, gpu_step *s,
                             base_diag *d) {
  gpu_conv *cv = s->conv;
  gpu_ctx *c = p->ctx;
  const float *x = IN(p, n, 0), *w = p->ptr[n->in[1]];
  float *y = p->ptr[n->out[0]];
  if (cv->wcl) {
    if (!cv->wcl_static) /* else converted once, at upload */
      GPU_CUDA(d, gpu_convert_dt(c->stream, &cv->wcl_as, w, cv->wcl, 1,
                                 gpu_dt_of(p->g, n->in[1])));
    w = cv->wcl;
  }
  int dt = gpu_dt_of(p->g, n->out[0]);
  if (cv->prepad && !cv->patches && dt != CXK_F32) { /* half: zeros, then x
                                                        inside them */
    GPU_CUDA(d, gpu_pad_half(c->stream, dt, x, s->scratch, &cv->pad));
    x = s->scratch;
  } else if (cv->prepad && !cv->patches) { /* the patches are padded as
                                              copied */
    GPU_CUDA(d, cxk_pad_nd(c->stream, x, s->scratch, &cv->pad));
    x = s->scratch;
  }
  const float one = 1.0f, zero = 0.0f;
  if (cv->sk) { /* ksmallk.cu, the whole epilogue in the kernel */
    cxk_sk a = cv->skp;
    a.fn = epilogue_fn(n, s);
    a.lo = s->clip_lo, a.hi = s->clip_hi;
    GPU_CUDA(d,
             cxk_smallk(c->stream, x, w, n->nin >= 3 ? p->ptr[n->in[2]] : NULL,
                        s->res ? p->ptr[s->res - 1] : NULL, y, &a));
    return BASE_OK;
  }
  if (cv->gemm) { /* y[P,O] = x[P,C] w[O,C]^T, channels-last */
    gpu_mm *m = cv->gemm;
    if (cv->patches) { /* the patches as rows: [P, kh*kw*C] */
      GPU_CUDA(d, cxk_im2col_rows(c->stream, x, s->scratch, &cv->im2col));
      x = s->scratch;
    }
    const float *bias = p->ptr[n->in[n->nin > 2 ? 2 : 1]];
    if (cv->gemm_ep && n->nin >= 3)
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
    const float *b = n->nin >= 3 ? p->ptr[n->in[2]] : NULL;
    cxk_dw a = cv->dw;
    a.fn = epilogue_fn(n, s);
    a.lo = s->clip_lo, a.hi = s->clip_hi;
    int alone = !s->res && gpu_dw_ok(&a);
    if (!alone)
      a.fn = CXK_ID;
    GPU_CUDA(d, gpu_dw_run(c->stream, x, w, alone ? b : NULL, y, &a));
    if (alone)
      return BASE_OK;
  } else if (cv->plan) {
    /* the key's bias and residual (fused_epilogue) */
    const float *b = cv->fused && n->nin >= 3 ? p->ptr[n->in[2]] : NULL;
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
  const float *bias = n->nin >= 3 ? p->ptr[n->in[2]] : NULL;
  int64_t inner = s->cl ? 1 : ys->dim[2] * ys->dim[3];
  if (dt != CXK_F32) { /* half: khalf.cu, the residual in either layout */
    int r = s->res - 1, ycl = gpu_is_cl(p, n->out[0]);
    int rmode = !s->res || ycl == gpu_is_cl(p, r) ? 0 : ycl ? 1 : 2;
    if (s->res || bias || fn != CXK_ID)
      GPU_CUDA(d, cxk_bias_res_act_dt(
                      c->stream, dt, y, bias, s->res ? p->ptr[r] : NULL,
                      ir_shape_numel(ys), ys->dim[1], inner, fn, s->clip_lo,
                      s->clip_hi, rmode, ys->dim[2], ys->dim[3]));
  } else if (s->res) { /* the residual epilogue: (conv + bias) + res, then act
                        */
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
    return 1; /* any float type: cuBLASLt in x's */
  if (gpu_dt_of(p->g, n->out[0]) != CXK_F32)
    return 0; /* patches: cxk_im2col_rows copies float32 only */
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
  m->dt = gpu_dt_of(p->g, n->out[0]); /* x, w, y, bias, residual alike */
  int act = n->a.act, bias = n->nin >= 3;
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
      gpu_mm_setup(p, m, ep, pp, oo, cc, 1, 1, ep_ok && s->res, &key, d);
  if (st)
    return st;
  /* a GEMM that cannot be timed or is not faster leaves cuDNN's choice;
   * $SUPEROPT_GEMM=always takes it wherever it applies (tests) */
  const char *force = getenv("SUPEROPT_GEMM");
  int always = force && !strcmp(force, "always");
  base_diag ignored;
  int timed = gpu_mm_choose(p->ctx, &key, m, &ignored) == BASE_OK;
  /* ksmallk.cu's time (ch->own past GPU_OWN_SK) holds its epilogue */
  float cudnn_ms =
      ch->fused || ch->own >= GPU_OWN_SK ? ch->ms : ch->ms + ch->ep_ms;
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
  gpu_mm_free(m);
  s->conv->gemm = NULL;
  return BASE_OK;
}
