/* kern.h: the launchers of the CUDA kernels in kern/, callable from C.
 *
 * Each launcher enqueues one or two kernels on a stream and returns the
 * launch status (cudaGetLastError). Index math is 64-bit throughout; shapes
 * come from the IR (rank <= 8). Parameter blocks are passed by value.
 */
#ifndef SUPEROPT_CX_KERN_H
#define SUPEROPT_CX_KERN_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CXK_RANK 8 /* IR_MAX_RANK (gpu_int.h checks) */

/* Element-wise unary functions (also the fused activations): one per
 * ew.def row (CXK_RELU...), then the others. */
enum {
  CXK_ID,
#define EW(ID, ...) CXK_##ID,
#include "../../ir/ew.def"
#undef EW
  CXK_CLIP,
  CXK_NAN,    /* writes NaN (poisoning) */
  CXK_NOT,    /* bool not: 1 where v == 0, else 0 */
  CXK_TRUNC,  /* cast to int64: truncation toward zero */
  CXK_NONZERO /* cast to bool: v != 0 */
};
enum { CXK_ADD, CXK_SUB, CXK_MUL, CXK_DIV, CXK_EQ /* a == b: 1 or 0 */ };

/* A strided walk over `dim`: element (c0..c{r-1}) reads
 * src[soff + sum ci*sst[i]] and writes dst[doff + sum ci*dst[i]]. */
typedef struct cxk_walk {
  int rank;
  int64_t dim[CXK_RANK], sst[CXK_RANK], dst[CXK_RANK];
  int64_t wrap[CXK_RANK]; /* cxk_move_view only: source coordinate (c +
                             wrap) mod dim (a roll); 0 elsewhere */
  int64_t soff, doff;
  int64_t extent; /* elements of the larger of src and dst */
} cxk_walk;

/* Binary broadcast: output dims and each operand's strides (0 broadcast). */
typedef struct cxk_bcast {
  int rank;
  int64_t dim[CXK_RANK], sa[CXK_RANK], sb[CXK_RANK];
} cxk_bcast;

typedef struct cxk_pool {
  int64_t n, c, h, w, oh, ow;
  int kh, kw, sh, sw, pt, pl;
  int is_max, count_include_pad;
  int cl; /* x and y channels-last (NHWC) */
} cxk_pool;

/* Padding: out[dims] = in[coords - before] where inside in, else value;
 * out contiguous, in read with strides ist (all 0: idim's contiguous
 * ones). A negative before crops (a slice of a pad, folded). */
typedef struct cxk_pad {
  int rank;
  int64_t odim[CXK_RANK], idim[CXK_RANK], before[CXK_RANK], ist[CXK_RANK];
  float value;
} cxk_pad;

/* A channels-last convolution's input x [n, h, w, c] as the rows of its
 * GEMM (im2col): row (b, i, j) of n * oh * ow, column (p, q, ch) of
 * kh * kw * c (the KRSC filter's order) holds
 * x[b, i * sh - pt + p * dh, j * sw - pl + q * dw, ch], 0 outside x. */
typedef struct cxk_im2col {
  int64_t n, h, w, c, oh, ow;
  int kh, kw, sh, sw, pt, pl, dh, dw;
} cxk_im2col;

/* reduce: output element j sums in[base(j) + sum over reduced coords]. */
typedef struct cxk_reduce {
  int nkeep, nred;
  int64_t kdim[CXK_RANK], kst[CXK_RANK]; /* kept dims, their input strides */
  int64_t rdim[CXK_RANK], rst[CXK_RANK]; /* reduced dims, input strides */
  int64_t nout, count;
} cxk_reduce;

cudaError_t cxk_unary(cudaStream_t s, int fn, const float *x, float *y,
                      int64_t n, float lo, float hi);
/* where: o[i] = c[.] != 0 ? a[.] : b[.], operands broadcast through their
 * strides (0: broadcast) over the output dims. */
typedef struct cxk_where {
  int rank;
  int64_t dim[CXK_RANK], sc[CXK_RANK], sa[CXK_RANK], sb[CXK_RANK];
} cxk_where_args;
cudaError_t cxk_where(cudaStream_t s, const float *c, const float *a,
                      const float *b, float *o, int64_t n,
                      const cxk_where_args *w);
/* gather: y[(q*nidx + i)*inner + r] = x[(q*dim + idx[i])*inner + r] (idx
 * held as floats; negative counts from the end; out of range gives NaN). */
cudaError_t cxk_gather(cudaStream_t s, const float *x, const float *idx,
                       float *y, int64_t outer, int64_t nidx, int64_t dim,
                       int64_t inner);
/* y[i] = act(y[i] + bias[(i / inner) % c]) in place; bias may be NULL;
 * lo, hi: CXK_CLIP's bounds (ignored by the others). */
cudaError_t cxk_bias_act(cudaStream_t s, float *y, const float *bias, int64_t n,
                         int64_t c, int64_t inner, int act, float lo, float hi);
/* y[i] = act((y[i] + bias[(i / inner) % c]) + res[j]) in place: the
 * residual epilogue of a convolution; bias and res may be NULL. rmode 0: res
 * in y's layout (j = i); 1: y NHWC and res NCHW; 2: y NCHW and res NHWC (y of
 * logical dims (n / (c h w), c, h, w)). */
cudaError_t cxk_bias_res_act(cudaStream_t s, float *y, const float *bias,
                             const float *res, int64_t n, int64_t c,
                             int64_t inner, int act, float lo, float hi,
                             int rmode, int64_t h, int64_t w);
cudaError_t cxk_fill(cudaStream_t s, float *y, int64_t n, float v);
/* o = a op b (then ReLU if relu); bc NULL when a, b and o all have n
 * elements. */
cudaError_t cxk_binary(cudaStream_t s, int op, const float *a, const float *b,
                       float *o, int64_t n, const cxk_bcast *bc, int relu);
/* dst[...] = src[...] along the walk (kmove.cu: dimensions merged first,
 * then float4 rows, a tiled transpose or one thread per element). */
cudaError_t cxk_copy(cudaStream_t s, const float *src, float *dst,
                     const cxk_walk *w);
/* Orders the dimensions by destination stride, drops those of size 1 and
 * merges neighbours contiguous in both. */
void cxk_walk_simplify(cxk_walk *w);
/* Concat: rows of the whole are part 0's w[0] floats, then part 1's, ...
 * (np parts, `rows` rows), through a relu when relu != 0; split is the
 * reverse: part k to dst[k] and its relu to rdst[k] (rdst may be NULL),
 * each where not NULL. CXK_PARTS parts a launch. */
#define CXK_PARTS 8
cudaError_t cxk_concat(cudaStream_t s, float *dst, const float *const *src,
                       const int64_t *w, int np, int relu, int64_t rows);
cudaError_t cxk_split(cudaStream_t s, const float *src, float *const *dst,
                      float *const *rdst, const int64_t *w, int np,
                      int64_t rows);
/* Channel shuffle (ShuffleNet) of a concat along channels: the concat of
 * the inputs, viewed as [n, g, c / g, h, w] and transposed to
 * [n, c / g, g, h, w]; result channel j * g + i is concat channel
 * i * (c / g) + j. Output o receives the result's channels [out_lo[o],
 * out_hi[o]) (a slice of it, or all of it). Tensors are logically
 * [n, channels, h, w] in any layout: strides of (n, c, h, w) in in_st and
 * out_st. Input k holds concat channels [in_c0[k], in_c0[k + 1]). A
 * move: every tensor of one element type, float32 or (half) 2-byte. */
typedef struct cxk_shuffle_args {
  int nin, nout, g;
  int half; /* 2-byte elements (f16, bf16: moved as bits), else float32 */
  int64_t n, c, h, w;
  const void *in[CXK_PARTS];
  int64_t in_c0[CXK_PARTS + 1];
  int64_t in_st[CXK_PARTS][4];
  void *out[CXK_PARTS];
  int64_t out_lo[CXK_PARTS], out_hi[CXK_PARTS];
  int64_t out_st[CXK_PARTS][4];
} cxk_shuffle_args;
cudaError_t cxk_shuffle(cudaStream_t s, const cxk_shuffle_args *a);
cudaError_t cxk_im2col_rows(cudaStream_t s, const float *x, float *y,
                            const cxk_im2col *a);
cudaError_t cxk_pad_nd(cudaStream_t s, const float *x, float *y,
                       const cxk_pad *p);
/* A move node's program (ops.def `move`), compiled on the host: output
 * element i walks back from step `last` to the source, each step mapping
 * its output coordinates to its input's: slice adds a[d] (the starts); pad
 * subtracts a[d] (the befores; outside idim: the value, done); transpose
 * puts coordinate d at a[d] (the perm); reshape re-splits the linear index
 * from odim to idim; concat along `axis` takes the part k whose end a[k]
 * is past the coordinate and goes on to next[k]. next[] < 0: the source,
 * read through sst (its strides in its layout). vec: elements a thread
 * moves along the innermost output dimension (1, 2 or 4; the host checks
 * that every step keeps such groups contiguous and aligned). */
#define CXK_MSTEPS 16
enum {
  CXK_MV_SLICE,
  CXK_MV_PAD,
  CXK_MV_TRANSPOSE,
  CXK_MV_RESHAPE,
  CXK_MV_CONCAT
};
typedef struct cxk_mstep {
  int32_t kind, rank, irank, axis, nparts, pad_;
  int32_t next[CXK_RANK];
  int32_t odim[CXK_RANK], idim[CXK_RANK], a[CXK_RANK];
  float value;
} cxk_mstep;
typedef struct cxk_move_args {
  int32_t nsteps, last, srank, vec;
  int64_t n;      /* output elements */
  int64_t extent; /* the largest step's elements, and past the farthest
                     source offset: 32-bit indices below 2^31 */
  int64_t sst[CXK_RANK];
  cxk_mstep step[CXK_MSTEPS];
} cxk_move_args;
/* x and y of element type dt (CXK_*). */
cudaError_t cxk_move(cudaStream_t s, int dt, const void *x, void *y,
                     const cxk_move_args *a);
/* A move program that is one strided walk of its input (ir_move_walk):
 * y, contiguous (w->dst its strides, w->doff 0), from x read through
 * w->sst from w->soff, each coordinate rolled by w->wrap; elements of
 * esize bytes (4 or 2), moved as bits.
 * cudaErrorNotSupported, launching nothing, where an offset or the count
 * does not fit 32-bit indices (run the program with cxk_move then). */
cudaError_t cxk_move_view(cudaStream_t s, int esize, const void *x, void *y,
                          const cxk_walk *w);
cudaError_t cxk_batchnorm(cudaStream_t s, const float *x, const float *scale,
                          const float *bias, const float *mean,
                          const float *var, float *y, int64_t n, int64_t c,
                          int64_t inner, float eps, int relu);
cudaError_t cxk_pool2d(cudaStream_t s, const float *x, float *y,
                       const cxk_pool *p);
/* Mean over the reduced dimensions. A reduction over a strided dimension
 * (channels-last global_avgpool) may split its rows into partial sums:
 * cxk_reduce_scratch(r) floats of scratch (0: none needed). */
int64_t cxk_reduce_scratch(const cxk_reduce *r);
cudaError_t cxk_reduce_mean(cudaStream_t s, const float *x, float *y,
                            const cxk_reduce *r, float *scratch);
/* Softmax of x viewed as [outer, len, inner] along len. */
cudaError_t cxk_softmax(cudaStream_t s, const float *x, float *y, int64_t outer,
                        int64_t len, int64_t inner);
/* Attention, y = softmax(s * q k + b) v (katt.cu): per (d0, d1) batch q
 * [s, d], k [d, t], v [t, e] -> y [s, e], each read or written through its
 * strides st[q, k, v, y][4] over [d0, d1, rows, cols]; scale: a device
 * scalar, NULL for 1; bias: NULL for none, else read through its strides
 * bst over [d0, d1, rows (s), cols (t)] (0 where it broadcasts); guard: a
 * row whose scores are all -inf gives 0 (else NaN, as softmax does). d and
 * e at most CXK_ATT_MAX_DIM (cxk_attention_ok). rw: 0 the TF32
 * tensor-core kernel (t at most cxk_attention_tc_t()), else the fp32
 * kernel (any t, two query rows a warp). */
#define CXK_ATT_MAX_DIM 128
typedef struct cxk_att {
  int64_t d0, d1, s, t, d, e;
  int64_t st[4][4];
  int64_t bst[4]; /* the bias's strides */
  int64_t guard;  /* 1: fully masked rows give 0 */
  int64_t dt;     /* the element type of q, k, v, scale, bias and y (CXK_*:
                     0 float32), computed in float32 either way */
} cxk_att;
int cxk_attention_ok(const cxk_att *a);
/* In place: softmax(s * x + b) of rows of len floats (s a device scalar,
 * NULL for 1), a warp a row; bias (NULL: none) as cxk_attention reads it,
 * row r being row r % a->s of batch r / a->s, and a->guard as there (a
 * NULL: no bias, no guard). */
cudaError_t cxk_scaled_softmax(cudaStream_t st, float *x, int64_t rows,
                               int64_t len, const float *scale,
                               const float *bias, const cxk_att *a);
int cxk_attention_tc_t(void);
cudaError_t cxk_attention(cudaStream_t st, const void *q, const void *k,
                          const void *v, const void *scale, const void *bias,
                          void *y, const cxk_att *a, int rw);
/* The same attention by the flash kernel (kflash.cu): tensor cores
 * (mma.sync, sm_80 on; the caller checks the device), TF32 for float32,
 * f16 and bf16 operands with float32 sums for a->dt CXK_F16 and
 * CXK_BF16; 64 query rows a block, the keys streamed through shared
 * memory with an online softmax; any t; operands (of type a->dt), scale,
 * bias and guard as cxk_attention.
 * cxk_flash_ok: whether it takes a's sizes; cxk_flash_runs_here: whether
 * the current device runs code built for sm_80 or later (a build for sm_75
 * alone JIT-compiles the kernel's trap on any device). */
int cxk_flash_ok(const cxk_att *a);
int cxk_flash_runs_here(void);
/* Which operands it copies 16 bytes at a time (bits 1 q, 2 k, 4 v, 8 y):
 * the rest element by element (logs, tests). */
int cxk_flash_vec(const void *q, const void *k, const void *v, const void *y,
                  const cxk_att *a);
cudaError_t cxk_flash(cudaStream_t st, const void *q, const void *k,
                      const void *v, const void *scale, const void *bias,
                      void *y, const cxk_att *a);
/* Layer norm of rows of len floats; xb (NULL: none): a vector of len
 * added to every row as it is loaded; rms: not centred (RMSNorm, x /
 * sqrt(mean(x^2) + eps)). */
cudaError_t cxk_layernorm(cudaStream_t s, const float *x, const float *xb,
                          const float *gamma, const float *beta, float *y,
                          int64_t rows, int64_t len, float eps, int rms);
/* Depthwise convolution, channels-last x [n,h,w,c] and y [n,oh,ow,c],
 * filter [k,k,c] (transposed from [c,1,k,k]), k = kh = kw of 3, 5 or 7,
 * stride 1 or 2 (both axes), padding pt (top and bottom) and pl (left and
 * right), in one of cxk_dwconv_variants() thread shapes (var); kconv.cu.
 * The epilogue: bias, then fn: CXK_ID, CXK_RELU or CXK_CLIP (lo, hi).
 * cxk_dwconv_ok: the geometry is one it runs, and c a multiple of the channels
 * a thread of variant var computes. dt: the element type of x, w, bias and
 * y (CXK_*, 0 float32), summed in float32 either way. */
typedef struct cxk_dw {
  int64_t n, c, h, w, oh, ow;
  int kh, kw, pt, pl, stride;
  int var;
  int fn;
  float lo, hi;
  int dt;
} cxk_dw;
int cxk_dwconv_ok(const cxk_dw *p);
int cxk_dwconv_variants(void);
/* bias: [c] added to every output (after the sum), or NULL. */
cudaError_t cxk_dwconv(cudaStream_t s, const void *x, const void *w,
                       const void *bias, void *y, const cxk_dw *p);
/* A convolution with a short reduction on the tensor cores (ksmallk.cu;
 * f16 or bf16, float32 sums): the GEMM y[P, O] = A[P, K] w[O, K]^T over
 * the n * oh * ow output pixels, K = kh * kw * c in the KRSC filter's
 * order (w [o, kh, kw, c]); y (and a residual) channels-last [n, oh, ow,
 * o], o a multiple of 8. Either pointwise (cxk_smallk_pointwise: 1x1,
 * stride 1, unpadded, x channels-last, c even and at most 32) or a stem
 * (c at most 4, kh * kw * c at most 160, any kernel and stride, padding
 * pt (top and bottom) and pl (left and right), x channels-last or NCHW
 * (xcl)). The epilogue: (sum + bias) + res, then fn (CXK_ID, CXK_RELU or
 * CXK_CLIP to [lo, hi]); bias and res may be NULL. var: one of
 * cxk_smallk_variants() tiles. Needs sm_80 or later (the caller checks
 * the device: cxk_flash_runs_here). */
typedef struct cxk_sk {
  int64_t n, c, h, w, o, oh, ow;
  int kh, kw, sh, sw, pt, pl;
  int xcl;
  int var;
  int fn;
  float lo, hi;
  int dt;
} cxk_sk;
int cxk_smallk_pointwise(const cxk_sk *p);
int cxk_smallk_ok(const cxk_sk *p);
int cxk_smallk_variants(void);
cudaError_t cxk_smallk(cudaStream_t s, const void *x, const void *w,
                       const void *bias, const void *res, void *y,
                       const cxk_sk *p);
/* A float32 matmul with its epilogue on sm_90a's warpgroup tensor cores
 * (kwg.cu): y [m, n] = fn(a b + bias + res) with TF32 operands and float32
 * sums, a [m, k] row-major, b given transposed (bt [n, k] row-major), bias
 * [n] and res [m, n] optional (NULL), fn CXK_ID, CXK_RELU or CXK_GELU
 * (cxk_wg_fn_ok) applied before the only store. cxk_wg_ok: the shapes it
 * takes (n a multiple of 4, k of 32; pointers 16-byte aligned, the
 * caller's part); cxk_wg_runs_here: 1 where the device is sm_90 and the
 * loaded machine code has the wgmma path. cxk_wg_prepare (0: not taken)
 * fixes a's and bt's addresses and the tiling var (one of
 * cxk_wg_variants()) into w's TMA descriptors; cxk_wg_mm runs it. */
typedef struct cxk_wg {
  uint64_t map[2][16]; /* the CUtensorMap of a, of bt (copied) */
  int64_t m, n, k;
  int var, sms; /* sms: the device's multiprocessors (the grid) */
} cxk_wg;
int cxk_wg_variants(void);
int cxk_wg_ok(int64_t m, int64_t n, int64_t k);
int cxk_wg_fn_ok(int fn);
int cxk_wg_runs_here(void);
int cxk_wg_prepare(cxk_wg *w, const float *a, const float *bt, int64_t m,
                   int64_t n, int64_t k, int var);
cudaError_t cxk_wg_mm(cudaStream_t s, const cxk_wg *w, const float *bias,
                      const float *res, float *y, int fn);
/* Squeeze-and-excitation's squeeze in one kernel (kse.cu): pooled[n, c]
 * = mean over the hw pixels of x (NCHW [n, c, hw], or channels-last [n,
 * hw, c] when cl); h[n, r] = act1(b1[r] + sum_c w1[r, c] pooled[n, c]);
 * y[n, k] = act2(b2[k] + sum_r w2[k, r] h[n, r]). w1 is [r, c], w2 [c2, r]
 * (1x1 convolution filters); b1, b2 may be NULL; act1 is CXK_ID, CXK_RELU
 * or CXK_SIGMOID, act2 one of those or CXK_CLIP (lo2, hi2). */
typedef struct cxk_se {
  int64_t n, c, hw, r, c2;
  int cl, act1, act2;
  float lo2, hi2;
} cxk_se;
/* Whether cxk_se_run runs these sizes and functions: with thread block
 * clusters (Hopper and later) where the device has them, else one block a
 * sample ($SUPEROPT_SE_CLUSTER=0 forces that). */
int cxk_se_ok(const cxk_se *p);
cudaError_t cxk_se_run(cudaStream_t s, const float *x, const float *w1,
                       const float *b1, const float *w2, const float *b2,
                       float *y, const cxk_se *p);
/* Half precision (khalf.cu, docs/half.md): element types, each tensor's
 * bytes of one of them; the kernels below compute in float32 and round
 * once as they store. cxk_dt_size: bytes of an element. */
enum { CXK_F32, CXK_F16, CXK_BF16 };
size_t cxk_dt_size(int dt);
/* y[i] = x[i] converted from type sdt to ddt (any two CXK_F*). */
cudaError_t cxk_convert(cudaStream_t s, const void *x, int sdt, void *y,
                        int ddt, int64_t n);
/* cxk_unary, cxk_binary and cxk_fill on elements of type dt (CXK_F32: the
 * float32 kernels themselves). */
cudaError_t cxk_unary_dt(cudaStream_t s, int dt, int fn, const void *x, void *y,
                         int64_t n, float lo, float hi);
cudaError_t cxk_binary_dt(cudaStream_t s, int dt, int op, const void *a,
                          const void *b, void *o, int64_t n,
                          const cxk_bcast *bc, int relu);
cudaError_t cxk_fill_dt(cudaStream_t s, int dt, void *y, int64_t n, float v);
/* cxk_gather with x and y of type dt (the indices float32 as there). */
cudaError_t cxk_gather_dt(cudaStream_t s, int dt, const void *x,
                          const float *idx, void *y, int64_t outer,
                          int64_t nidx, int64_t dim, int64_t inner);
/* cxk_bias_res_act with y, bias and res of half type dt (bias, res may
 * be NULL; rmode, h, w as there). */
cudaError_t cxk_bias_res_act_dt(cudaStream_t s, int dt, void *y,
                                const void *bias, const void *res, int64_t n,
                                int64_t c, int64_t inner, int act, float lo,
                                float hi, int rmode, int64_t h, int64_t w);
/* cxk_pool2d and cxk_reduce_mean on elements of type dt (half: one
 * thread an output for pooling, the sums in float32; kred.cu). */
cudaError_t cxk_pool2d_dt(cudaStream_t s, int dt, const void *x, void *y,
                          const cxk_pool *p);
cudaError_t cxk_reduce_mean_dt(cudaStream_t s, int dt, const void *x, void *y,
                               const cxk_reduce *r, float *scratch);
/* cxk_copy for elements of 2 bytes (walk offsets and strides in
 * elements; moved as bits, 16 bytes a thread where rows allow, kmove.cu). */
cudaError_t cxk_copy16(cudaStream_t s, const void *src, void *dst,
                       const cxk_walk *w);
/* cxk_softmax, cxk_layernorm (kred.cu) and cxk_batchnorm (kew.cu; p:
 * scale, bias, mean, var) on elements of type dt, every operand of it:
 * half elements read as float32, statistics in float32, one rounding at
 * the store; rows of a multiple of 8 elements 16 bytes a load. */
cudaError_t cxk_softmax_dt(cudaStream_t s, int dt, const void *x, void *y,
                           int64_t outer, int64_t len, int64_t inner);
cudaError_t cxk_layernorm_dt(cudaStream_t s, int dt, const void *x,
                             const void *xb, const void *gamma,
                             const void *beta, void *y, int64_t rows,
                             int64_t len, float eps, int rms);
cudaError_t cxk_batchnorm_dt(cudaStream_t s, int dt, const void *x,
                             const void *const *p, void *y, int64_t n,
                             int64_t c, int64_t inner, float eps, int relu);
/* Identity conv kernel [o,i,kh,kw] and identity matrix [n,n]. */
cudaError_t cxk_iconv(cudaStream_t s, float *y, int64_t o, int64_t i,
                      int64_t kh, int64_t kw);
cudaError_t cxk_eye(cudaStream_t s, float *y, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
