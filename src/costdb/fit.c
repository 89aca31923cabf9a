/* fit.c: the per-operator cost model fitted on a device's measured rows,
 * and its error on rows held out of the fit (docs/costdb.md, "The fitted
 * model").
 *
 * Each measured row of the device's table is rebuilt as a one-node graph
 * from its signature (cd_sig_graph) and its work counted (cd_node_work).
 * For each operator,
 *
 *   ms = fixed * launches + mem * bytes / bandwidth + flop * flops / peak
 *        + irr * irregular bytes / bandwidth + rows * softmax waves
 *        + side * added launches
 *
 * (peak: the TF32 rate for conv2d/matmul, which the CUDA executor runs in
 * TF32; the flops term only for those, a dense conv2d's those of whole
 * waves of output tiles, a grouped one's at least one wave's (conv_flops);
 * other operators' third term is the bytes beyond the L2 cache;
 * a float32 concat's fixed cost is one a CXK_PARTS (8) inputs; a slice's and
 * gather's bytes what they show; irregular bytes those moved without 16-byte
 * accesses (a half pool's window reads one element at a time), and a dense
 * (or half depthwise) convolution's flops at the FP32 rate where its
 * channels are not 16-byte runs; a softmax's waves of one block a row, or
 * a float32 scalar operand's bytes in the fifth term; an attention's
 * third term the flops of its padded tiles, its fourth those again where
 * its rows are gathered, its fifth its blocks an SM times key tiles
 * (attention_tiles); added launches those
 * of the kernels the executor runs beside the node's own, whose bytes the
 * second term counts: side_work), with fixed > 0 and the rest >= 0,
 * fitted per class (node_class: an operator, conv2d split four ways).
 * Issue 43's fifth round, each for what the kernel does:
 *   - a depthwise conv2d's fifth term its taps: each thread walks its
 *     window serially (conv_taps_ms); a conv2d of one input and one output
 *     channel is depthwise too (the executor's depthwise kernel runs it);
 *   - a dense k x k conv2d's fifth term its main-loop steps, taps x 32
 *     input channels x waves of tiles (conv_steps_ms): a large window over
 *     few pixels costs by its steps;
 *   - a dense conv2d's flops those of whole waves of 128 x 64 output tiles
 *     (conv_waves): a tile past a wave takes a second;
 *   - a 1x1 conv2d's fifth term 1 where it is no plain GEMM (conv_gemm:
 *     strided or padded, cuDNN's engines, not cuBLASLt);
 *   - a float32 conv2d's bias or activation a kernel of its own
 *     (side_work): +1.5-1.8 us measured on every pair with and without;
 *   - a half 1x1's irregular bytes all its bytes where its rows are not
 *     16 bytes (unaligned_rows: no 16-byte accesses in the GEMM);
 *   - a matmul's fifth term 1 where its product has more than one row
 *     (matmul_rows: a vector times a matrix skips the tiled kernels'
 *     fixed cost);
 *   - a half rank-4 transpose to or from channels-last a copy, and a half
 *     transpose's runs 16 bytes of halves (unaligned_transpose);
 * and the sixth round's:
 *   - a float32 pad's fifth term its serial steps, a warp a row walking it
 *     32 elements a step (pad_steps_ms): a few long rows cost by their
 *     length;
 * and the seventh's:
 *   - a float32 1x1 conv2d of fewer output tiles than SMs split along its
 *     reduction (conv_splits): its flops a wave's over its slices,
 * fitted by iteratively reweighted least squares on the relative error
 * (an L1 fit: robust to the odd slow kernel). An operator with too few
 * rows borrows the fit of all rows of its kind (element-wise, movement,
 * ...), then of all rows; fused nodes, never in a table, take the
 * element-wise fit. Views and constants cost 0. Everything is
 * deterministic: rows in signature order, folds by the signature's hash.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cd_int.h"

#define MIN_ROWS 4    /* fewer rows: borrow a pooled fit */
#define IRLS_ITERS 20 /* reweighting rounds of the L1 fit */
#define IRLS_FLOOR 0.01

#define L2_BYTES 50e6 /* the GH100's L2 cache (H100 and H200) */
#define SMS 132.0     /* the GH100's SMs (H100 and H200 alike) */
/* Outputs one wave of a convolution kernel fills: 128 x 64 output tiles
 * on every SM. */
#define WAVE_OUTPUTS (SMS * 128 * 64)

/* A float32 GEMM's reduction slices (split-K) of at least SPLIT_K input
 * channels: conv_splits. */
#define SPLIT_K 512.0

/* A convolution's output tiles (128 pixels x 64 channels), as cuDNN's
 * implicit GEMMs and cuBLASLt tile it. */
static double conv_tiles(const ir_graph *g, const ir_node *nd) {
  const ir_shape *y = &g->tensors[nd->out[0]].shape;
  return ceil((double)(y->dim[0] * y->dim[2] * y->dim[3]) / 128) *
         ceil((double)y->dim[1] / 64);
}

/* Waves of a convolution's output tiles, one tile an SM at a time. */
static double conv_waves(const ir_graph *g, const ir_node *nd) {
  return ceil(conv_tiles(g, nd) / SMS);
}

/* The slices a float32 1x1 convolution's reduction is split into
 * (split-K): a GEMM of fewer output tiles than SMs leaves SMs idle, and
 * cuBLASLt (or cuDNN) splits its reduction over them, as many slices as
 * whole copies of its tiles fit on the SMs, none of fewer than about
 * SPLIT_K channels; 1 where it has a wave of tiles or more, or few
 * channels. Priced by a whole wave of its reduction depth, the H200's
 * 1x1s of 2048 channels over 7 x 7 at batch 1 (8-16 tiles; 8.7-11.5 us
 * measured) were 1.44-1.61x over, which made Inception-v3's unmerged
 * 1x1s of 1280-2048 channels over 8 x 8 dear enough that the search
 * merged them before folding their batch norms (docs/notes/results.md,
 * "The fitted model's seventh round"). Not for half 1x1s: their tables'
 * held-out median of the class 5.9% -> 7.8% (bf16) with it. */
static double conv_splits(const ir_graph *g, const ir_node *nd, int cls) {
  if (cls != CD_CLASS_CONV_1X1 ||
      ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype))
    return 1;
  double c = (double)g->tensors[nd->in[1]].shape.dim[1];
  double s = fmin(floor(SMS / conv_tiles(g, nd)), ceil(c / SPLIT_K));
  return s > 1 ? s : 1;
}

/* The compute feature of a dense or grouped (not depthwise) convolution:
 * its flops per output times the outputs of its tiles' waves (dense:
 * conv_waves) or of at least one wave (grouped). A kernel with fewer
 * outputs than a wave leaves SMs idle and takes the time of its
 * reduction depth, not of its flops (docs/costdb.md, "The fitted model":
 * a table measured at batch 1 only, the H200's, otherwise extrapolates
 * its small kernels' low throughput to large ones; its grouped rows,
 * ResNeXt's at batch 1, all take 12-14 us and fitted on plain flops gave
 * a constant 13.5 us for any size), and one a tile past a wave takes a
 * second (the mutants' 1x1s of 140-224 tiles at batch 16 were 2.0-2.1x
 * under); a float32 1x1 of less than a wave, split along its reduction,
 * a wave's over its slices (conv_splits). */
static double conv_flops(const ir_graph *g, int node, int cls,
                         const cd_work *w) {
  const ir_node *nd = &g->nodes[node];
  double out = (double)ir_shape_numel(&g->tensors[nd->out[0]].shape);
  if (!(out > 0))
    return w->flops;
  double per = w->flops / out;
  if (cls == CD_CLASS_CONV_GROUPED)
    return fmax(w->flops, per * WAVE_OUTPUTS);
  double splits = conv_splits(g, nd, cls);
  return splits > 1 ? per * WAVE_OUTPUTS / splits
                    : per * conv_waves(g, nd) * WAVE_OUTPUTS;
}

/* Whether operand shape b, broadcast to the output shape o (aligned on
 * the right), is read in runs that are not a multiple of 4 elements: its
 * run is the trailing axes of o it varies along (size-1 axes of o left
 * out), 1 when it repeats along the innermost one. [C,1,1,1] over
 * [C,K,1,1] (runs of 1) or [1,H,1,49,49] over [B,H,W,49,49] (2401) take
 * the general broadcast kernel (src/gpu/kern/kew.cu), an index division
 * per axis per element and no float4; [N] over [B,S,N] (a suffix),
 * [B,1,S,S] over [B,H,S,S] (runs of S^2), an operand laid out like o and
 * a scalar take the vector or scalar paths. (Counting the scalar path,
 * one float a thread, as irregular too made the fit worse: 22 -> 37 rows
 * beyond 2x on the H200.) */
static int unaligned_broadcast(const ir_shape *b, const ir_shape *o) {
  int64_t nb = ir_shape_numel(b);
  if (nb == 1 || nb == ir_shape_numel(o))
    return 0;
  int64_t run = 1;
  for (int d = o->rank - 1; d >= 0; d--) {
    int k = d - (o->rank - b->rank);
    int64_t bd = k >= 0 ? b->dim[k] : 1;
    if (o->dim[d] == 1)
      continue;
    if (bd == 1)
      break;
    run *= bd;
  }
  return run % 4 != 0;
}

/* Whether a slice's contiguous run (the trailing axes it keeps whole and
 * the innermost one it cuts) or the run's start is not a multiple of 4
 * elements: no 16-byte vector loads and stores, a read split over two
 * cache lines at each row's ends. */
static int unaligned_slice(const ir_graph *g, const ir_node *nd) {
  const ir_shape *x = &g->tensors[nd->in[0]].shape;
  const ir_shape *y = &g->tensors[nd->out[0]].shape;
  int64_t run = 1, start = 0;
  for (int d = x->rank - 1; d >= 0; d--) {
    start += nd->a.list[d] * run;
    run *= y->dim[d];
    if (y->dim[d] != x->dim[d])
      break;
  }
  return run % 4 != 0 || start % 4 != 0;
}

/* Whether a transpose's contiguous run (the trailing axes it leaves in
 * place, size-1 axes left out; 1 if it moves the innermost axis) is not
 * 16 bytes (4 floats, 8 halves): [16,C,14,14] perm=[1,2,0,3] copies runs
 * of 14 floats, [M,N] perm=[1,0] strides its reads or its writes. A half
 * rank-4 transpose to or from channels-last (perm [0,2,3,1] or [0,3,1,2])
 * is taken to run as the network runs it (the half tables were timed in
 * the network's layout): on a channels-last tensor, a contiguous copy
 * (plan/layout.c; [16,96,56,56] perm=[0,2,3,1] 4.2 us in bf16, 16.5 as a
 * float32 transpose). */
static int unaligned_transpose(const ir_graph *g, const ir_node *nd) {
  const ir_shape *x = &g->tensors[nd->in[0]].shape;
  const int64_t *perm = nd->a.list;
  int half = ir_dtype_is_half((ir_dtype)g->tensors[nd->in[0]].dtype);
  if (half && x->rank == 4 && perm[0] == 0 &&
      ((perm[1] == 2 && perm[2] == 3 && perm[3] == 1) ||
       (perm[1] == 3 && perm[2] == 1 && perm[3] == 2)))
    return 0;
  int64_t run = 1;
  for (int i = x->rank - 1, j = x->rank - 1;; i--, j--) {
    while (i >= 0 && x->dim[i] == 1)
      i--;
    while (j >= 0 && x->dim[perm[j]] == 1)
      j--;
    if (i < 0 || j < 0 || perm[j] != i)
      break;
    run *= x->dim[i];
  }
  return run % (half ? 8 : 4) != 0;
}

/* The run of a concat's input k: its axes from the concat's in, in the
 * order of its bytes. A half rank-4 concat along the channels is taken to
 * run channels-last, as the network runs the convolutions' outputs it
 * joins (the half tables of 2026-11-30 were timed in the network's
 * layout): its run is the channels (NASNet's 11, 22, 44). */
static int64_t concat_run(const ir_graph *g, const ir_node *nd, int k) {
  const ir_tensor *t = &g->tensors[nd->in[k]];
  const ir_shape *x = &t->shape;
  int ax = nd->a.axis < 0 ? nd->a.axis + x->rank : nd->a.axis;
  if (ir_dtype_is_half((ir_dtype)t->dtype) && x->rank == 4 && ax == 1 &&
      x->dim[2] * x->dim[3] > 1)
    return x->dim[1];
  int64_t run = 1;
  for (int d = ax; d < x->rank; d++)
    run *= x->dim[d];
  return run;
}

/* Whether one of a concat's inputs has a run that is not a multiple of 16
 * bytes (4 floats, 8 halves): [16,C,14,14] and [16,C,14,14] along axis 3
 * copies runs of 14 floats. */
static int unaligned_concat(const ir_graph *g, const ir_node *nd) {
  int per16 = ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype) ? 8 : 4;
  for (int k = 0; k < nd->nin; k++)
    if (concat_run(g, nd, k) % per16 != 0)
      return 1;
  return 0;
}

/* Whether a float32 batch norm takes kew.cu's scalar kernel: timed NCHW
 * (as the float32 tables were), its 16-byte kernel needs each channel's
 * plane (H x W) a multiple of 4 floats; Inception's 147 x 147, NASNet's
 * 111 x 111, ResNet's 7 x 7 are not. (Half rows: their vector kernel
 * needs NCHW planes of 8, which channels-last never gives; not counted.) */
static int unaligned_batchnorm(const ir_graph *g, const ir_node *nd) {
  const ir_tensor *x = &g->tensors[nd->in[0]];
  if (ir_dtype_is_half((ir_dtype)x->dtype) || x->shape.rank != 4)
    return 0;
  return x->shape.dim[2] * x->shape.dim[3] % 4 != 0;
}

/* Whether a dense convolution's input channels are not a multiple of 16
 * bytes (4 floats, 8 halves): the tensor-core kernels' implicit GEMM reads
 * its reduction in 16-byte runs of channels, so cuDNN runs such a layer
 * (an RGB stem, ViT's 16x16 patch embedding, a mutant's 11 channels) on
 * the CUDA cores, at the FP32 rate: up to 4.7x slower than its flops at
 * the TF32 rate said (docs/costdb.md, "The fitted model"). Half stems of
 * at most 4 channels have had the executor's own tensor-core kernel since
 * (src/gpu/kern/ksmallk.cu, where it times faster); the h200-bf16 table
 * predates it. */
static int unaligned_channels(const ir_graph *g, const ir_node *nd) {
  const ir_tensor *x = &g->tensors[nd->in[0]];
  int per16 = ir_dtype_is_half((ir_dtype)x->dtype) ? 8 : 4;
  return x->shape.dim[1] % per16 != 0;
}

/* Whether a half 1x1 convolution, the GEMM y[P,O] = x[P,C] w[O,C]^T
 * channels-last, has rows of x or y that are not 16 bytes long (C or O
 * not a multiple of 8): no 16-byte accesses, its bytes moved a few at a
 * time (NASNet's 1x1s to 11 channels at batch 16: 2.1-3.7x under in
 * bf16, priced by their flops at the FP32 rate as the dense kernels'). */
static int unaligned_rows(const ir_graph *g, const ir_node *nd) {
  const ir_shape *y = &g->tensors[nd->out[0]].shape;
  return unaligned_channels(g, nd) || y->dim[1] % 8 != 0;
}

/* Waves of one block a row (ms: 1 us a wave of one block on each SM) of a
 * softmax over the innermost axis: the float32 kernel gives each row a
 * block (src/gpu/kern/kred.cu, k_softmax_rows), whose reductions' barriers
 * take about as long at 49 elements as at 128, so Swin's windows (rows of
 * 49) cost by their rows, not their bytes. The half kernel packs rows of a
 * multiple of 8 up to 2048 elements several a block (k_softmax8): 0 there,
 * and along another axis. */
static double softmax_waves_ms(const ir_graph *g, const ir_node *nd) {
  const ir_tensor *x = &g->tensors[nd->in[0]];
  int axis = nd->a.axis < 0 ? nd->a.axis + x->shape.rank : nd->a.axis;
  if (axis != x->shape.rank - 1)
    return 0;
  int64_t len = x->shape.dim[axis];
  if (len <= 0 ||
      (ir_dtype_is_half((ir_dtype)x->dtype) && len % 8 == 0 && len <= 2048))
    return 0;
  return 1e-3 * (double)(ir_shape_numel(&x->shape) / len) / SMS;
}

/* Whether a 1x1 convolution is the plain GEMM y[P,O] = x[P,C] w[O,C]^T
 * (stride 1, unpadded), which the executor may run on cuBLASLt
 * (run/conv.c, gemm_shape); a strided or padded one runs on cuDNN's
 * engines, at a fixed cost of their own (the H200's strided 1x1s at
 * batch 1 were 1.4-2.0x under, priced as GEMMs). */
static int conv_gemm(const ir_node *nd) {
  const int32_t *pd = nd->a.pad;
  return nd->a.stride[0] == 1 && nd->a.stride[1] == 1 && !pd[0] && !pd[1] &&
         !pd[2] && !pd[3];
}

/* The main-loop steps of a dense k x k convolution as an implicit GEMM
 * runs it (in thousands: the coefficient reads as us a step): each output
 * tile of 128 pixels x 64 channels walks the filter tap by tap, 32 input
 * channels a step, and the tiles run 132 (one an SM) at a time. A
 * large window over few pixels costs by its steps, not its flops: the
 * mutants' 7x7 convolutions of 128-192 channels over 17 x 17 pixels at
 * batch 1 (6-9 tiles, 196-294 steps) took 75-122 us where a 3x3 of 1056
 * channels over 7 x 7 (297 steps) took 30. */
static double conv_steps_ms(const ir_graph *g, const ir_node *nd) {
  const ir_shape *w = &g->tensors[nd->in[1]].shape;
  return 1e-3 * (double)(w->dim[2] * w->dim[3]) * ceil((double)w->dim[1] / 32) *
         conv_waves(g, nd);
}

/* The rows of a matmul's product, its batch axes included (a's elements
 * over its last axis). One row, a vector times a matrix, runs on
 * cuBLASLt's kernels for a single row, without the tiled kernels' fixed
 * cost, which the fifth term (1e-3 where there are more rows: its
 * coefficient in us) carries: the H200's [1,K] x [K,N] took 2.1-3.5 us
 * against 3.3-4 for small tiled products, [1,128] x [128,128] 2.01x over
 * priced by one fixed cost. */
static double matmul_rows(const ir_graph *g, const ir_node *nd) {
  const ir_shape *a = &g->tensors[nd->in[0]].shape;
  return a->rank < 1 || a->dim[a->rank - 1] <= 0
             ? 0
             : (double)ir_shape_numel(a) / (double)a->dim[a->rank - 1];
}

/* A depthwise convolution's taps (kh x kw, in thousands: the coefficient
 * reads as us a tap): kconv.cu's k_dwconv (and cuDNN's) has each thread
 * walk its window serially, loads and FMAs, so that a small layer costs
 * by its window, not its bytes or flops (the H200's at batch 1: 3x3 about
 * 2.2 us, 5x5 4.7, 7x7 7.0, whatever their channels). */
static double conv_taps_ms(const ir_graph *g, const ir_node *nd) {
  const ir_shape *w = &g->tensors[nd->in[1]].shape;
  return 1e-3 * (double)(w->dim[2] * w->dim[3]);
}

/* Attention as kflash.cu runs it: blocks of 64 query rows, each
 * streaming the keys in tiles of 64 (32 where d or e is 128 in float32).
 * *flops gets the flops of the padded tiles (Swin's windows of 49 rows and
 * keys fill 59% of a 64 x 64 tile); the result is the blocks an SM (up to
 * 3 run at once, but each tile's latency is what a lone block pays) times
 * the key tiles, in thousands (the coefficient reads as us a tile, as
 * softmax's waves). *gather: whether a row of q, k or v is not contiguous
 * (k as [b,h,d,t], the transposed keys of a head layout): staged by
 * 4-byte copies instead of 16-byte ones. 0 where the geometry cannot be
 * read. */
static double attention_tiles(const ir_graph *g, const ir_node *nd,
                              double *flops, int *gather) {
  ir_att_geom a;
  if (ir_att_geom_of(&nd->a, &g->tensors[nd->in[0]].shape,
                     &g->tensors[nd->in[1]].shape, &g->tensors[nd->in[2]].shape,
                     &a))
    return 0;
  int half = ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype);
  int64_t kt = !half && (a.d == 128 || a.e == 128) ? 32 : 64;
  int64_t qb = (a.s + 63) / 64, tiles = (a.t + kt - 1) / kt;
  double blocks = (double)a.b * (double)a.h * (double)qb;
  *flops = blocks * 64 * (double)(tiles * kt) * (double)(2 * a.d + 2 * a.e);
  *gather = a.st[0][3] != 1 || a.st[1][2] != 1 || a.st[2][3] != 1;
  return 1e-3 * ceil(blocks / SMS) * (double)tiles;
}

/* The bytes (in ms at the device's bandwidth) node moves through an
 * irregular access path: a binary element-wise operator with an
 * operand broadcast in unaligned runs, a slice, transpose or concat whose
 * contiguous runs are not 16-byte aligned; else 0 (docs/costdb.md, "The fitted
 * model"). */
static double irregular_ms(const cd_device *dev, const ir_graph *g, int node,
                           double bytes) {
  const ir_node *nd = &g->nodes[node];
  const ir_shape *o = &g->tensors[nd->out[0]].shape;
  int irr = 0;
  if (ir_op(nd->op)->kind == IR_OPK_EW && nd->nin == 2)
    irr = unaligned_broadcast(&g->tensors[nd->in[0]].shape, o) ||
          unaligned_broadcast(&g->tensors[nd->in[1]].shape, o);
  else if (nd->op == IR_OP_SLICE)
    irr = unaligned_slice(g, nd);
  else if (nd->op == IR_OP_TRANSPOSE)
    irr = unaligned_transpose(g, nd);
  else if (nd->op == IR_OP_CONCAT)
    irr = unaligned_concat(g, nd);
  else if (nd->op == IR_OP_BATCHNORM)
    irr = unaligned_batchnorm(g, nd);
  return irr ? 1e3 * bytes / dev->mem_bw : 0;
}

/* Whether a float32 binary element-wise node has a scalar operand (one
 * value) and the other laid out like its output: kew.cu's k_binary_scalar,
 * one float a thread, where the other paths move 16 bytes a thread. */
static int scalar_operand(const ir_graph *g, const ir_node *nd) {
  if (ir_op(nd->op)->kind != IR_OPK_EW || nd->nin != 2 ||
      ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype))
    return 0;
  int64_t o = ir_shape_numel(&g->tensors[nd->out[0]].shape);
  int64_t a = ir_shape_numel(&g->tensors[nd->in[0]].shape);
  int64_t b = ir_shape_numel(&g->tensors[nd->in[1]].shape);
  return o > 1 && ((a == 1 && b == o) || (b == 1 && a == o));
}

/* Bytes of tensor t (as cd_node_work counts them). */
static double tbytes(const ir_graph *g, int t) {
  return (ir_dtype_is_half((ir_dtype)g->tensors[t].dtype) ? 2 : 4) *
         (double)ir_shape_numel(&g->tensors[t].shape);
}

/* The bytes a node moves: cd_node_work's, but a slice or gather reads
 * only the part of its data it shows (and a gather its indices), where
 * cd_node_work counts the whole input (a 160 MB embedding table for a
 * 6 MB gather). */
static double moved_bytes(const ir_graph *g, int node, const cd_work *w) {
  const ir_node *nd = &g->nodes[node];
  double out = tbytes(g, nd->out[0]);
  if (nd->op == IR_OP_SLICE)
    return 2 * out;
  if (nd->op == IR_OP_GATHER)
    return 2 * out + tbytes(g, nd->in[1]);
  return w->bytes;
}

/* Whether a half concat copies its inputs part by part, a launch each,
 * in place of one launch for all (src/gpu/run/step.c, concat_half): the
 * one-launch kernel moves pairs of halves, so every input's run
 * (concat_run) must be even. */
static int half_concat_in_parts(const ir_graph *g, const ir_node *nd) {
  if (!ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype))
    return 0;
  for (int k = 0; k < nd->nin; k++)
    if (concat_run(g, nd, k) % 2)
      return 1;
  return 0;
}

/* The launches and bytes of the kernels the CUDA executor runs for a node
 * besides the one cd_node_work counts, added to *launches and *bytes
 * (docs/costdb.md, "The fitted model"; src/gpu/run/conv.c, step.c):
 *   - a convolution whose padding is asymmetric (NASNet's stride-2
 *     "same" padding, [1,1,2,2]) pads its input into scratch first, as
 *     cuDNN and the executor's own kernels pad symmetrically: a half
 *     input is filled with zeros and copied in (two launches: the padded
 *     bytes written, the input read and written), a float32 one copied
 *     in one launch; the convolution then reads the padded input;
 *   - a half 1x1 convolution (stride 1, unpadded) runs as a cuBLASLt
 *     GEMM, whose epilogue adds a bias and a relu but no other
 *     activation: a clip (ReLU6) or a sigmoid is a kernel of its own over
 *     the output;
 *   - a matmul's activation other than a relu (the graph's gelu is the
 *     exact erf, cuBLASLt's the tanh approximation), or a relu after a
 *     folded residual, is a pass of its own over the output (run/mm.c);
 *   - a concat's activation (act=) is a pass of its own over the output,
 *     but a float32 relu, which the copy applies; a half concat whose
 *     halves do not pair copies each input in a launch of its own;
 *   - a float32 convolution's bias or activation (but a depthwise one's,
 *     which kconv.cu's kernel applies) is a kernel of its own: +1.5-1.8 us
 *     on every pair of the H200's rows with and without (k x k, 1x1,
 *     grouped); its bytes (the output read and written) counted but for a
 *     k x k, whose bytes term stands for its windows' reads (about 850
 *     GB/s fitted): priced at that rate, ConvNeXt's stem at batch 16 was
 *     2.3x over. */
static void side_work(const ir_graph *g, const ir_node *nd, int cls,
                      double *launches, double *bytes) {
  int half = ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype);
  double out = tbytes(g, nd->out[0]);
  if (nd->op == IR_OP_CONV2D) {
    const int32_t *pd = nd->a.pad;
    if (pd[0] != pd[2] || pd[1] != pd[3]) {
      const ir_shape *x = &g->tensors[nd->in[0]].shape;
      double padded = (half ? 2 : 4) * (double)x->dim[0] * (double)x->dim[1] *
                      (double)(x->dim[2] + pd[0] + pd[2]) *
                      (double)(x->dim[3] + pd[1] + pd[3]);
      *launches += half ? 2 : 1;
      *bytes += 2 * padded + (half ? tbytes(g, nd->in[0]) : 0);
    }
    if (!half && cls != CD_CLASS_CONV_DEPTHWISE &&
        (nd->nin >= 3 || nd->a.act != IR_ACT_NONE)) {
      *launches += 1;
      *bytes += cls == IR_OP_CONV2D ? 0 : 2 * out;
    }
    int gemm = cls == CD_CLASS_CONV_1X1 && conv_gemm(nd);
    if (gemm && half && nd->a.act != IR_ACT_NONE && nd->a.act != IR_ACT_RELU) {
      *launches += 1;
      *bytes += 2 * out;
    }
  } else if (nd->op == IR_OP_MATMUL) {
    int res = nd->nin >= 4; /* a folded residual, cuBLASLt's C */
    if (nd->a.act != IR_ACT_NONE && (nd->a.act != IR_ACT_RELU || res)) {
      *launches += 1;
      *bytes += 2 * out;
    }
  } else if (nd->op == IR_OP_CONCAT) {
    if (nd->a.act != IR_ACT_NONE && (half || nd->a.act != IR_ACT_RELU)) {
      *launches += 1;
      *bytes += 2 * out;
    }
    if (half_concat_in_parts(g, nd))
      *launches += nd->nin - 1;
  }
}

/* The window reads (in ms at the device's bandwidth) of a half pooling
 * kernel that reads each window element of each output apart: kred.cu's
 * scalar kernel (k_pool) runs a half channels-last pool whose channels
 * are not a multiple of 8 (NASNet's 11, 22, 44; taken channels-last, as
 * the network runs it), where its 16-byte kernel takes 8 channels a
 * thread. 0 otherwise. The same kernel runs every NCHW float32 pool, but
 * the H200's float32 rows (batch 1, 2-3 us each) cannot price its window
 * reads: fitted on them, 1046 GB/s priced Inception-v3's average pools at
 * batch 16 at about 190 us each (the H100's rows, at batch 16: 4 TB/s). */
static double pool_scalar_ms(const cd_device *dev, const ir_graph *g,
                             const ir_node *nd) {
  const ir_tensor *x = &g->tensors[nd->in[0]];
  if (!ir_dtype_is_half((ir_dtype)x->dtype) || x->shape.dim[1] % 8 == 0)
    return 0;
  double win = (double)nd->a.kernel[0] * nd->a.kernel[1];
  return 1e3 * win * tbytes(g, nd->out[0]) / dev->mem_bw;
}

/* The serial steps of a float32 pad or enlarge whose output rows (its
 * last dimension) are at least 32 elements: kpad.cu's k_pad_rows gives
 * each row a warp, whose lanes walk it 32 elements a step, one load and
 * store each, and the rows run 8448 warps (64 an SM) at a time; in
 * thousands (the coefficient reads as us a step). A few long rows cost by
 * their length, not their bytes: the mutants' pads of nothing over
 * [1,H,W,C] tensors of 301 KB each took 3.3 us at rows of 96, 3.6 at 192,
 * 4.4 at 384 and 6.2 at 768 (2.6x under priced by bytes). 0 for half
 * ones (a fill, then a 16-byte copy: run/half.c) and shorter rows (an
 * element a thread). */
static double pad_steps_ms(const ir_graph *g, const ir_node *nd) {
  const ir_tensor *y = &g->tensors[nd->out[0]];
  const ir_shape *o = &y->shape;
  if (ir_dtype_is_half((ir_dtype)y->dtype) || o->rank < 2)
    return 0;
  int64_t ol = o->dim[o->rank - 1];
  if (ol < 32)
    return 0;
  double rows = (double)(ir_shape_numel(o) / ol);
  return 1e-3 * ceil(rows / (SMS * 64)) * ceil((double)ol / 32);
}

/* The fifth feature of node nd of class cls: a depthwise convolution's
 * taps, a k x k one's main-loop steps, a 1x1's flag of no plain GEMM, a
 * matmul's of more than one row, a softmax's waves of one block a row,
 * else a float32 scalar operand's bytes (mem_ms, the second feature) or 0
 * (attention's: features()). */
static double fifth_feature(const ir_graph *g, const ir_node *nd, int cls,
                            double mem_ms) {
  switch (cls) {
  case CD_CLASS_CONV_DEPTHWISE: return conv_taps_ms(g, nd);
  case CD_CLASS_CONV_1X1: return 1e-3 * !conv_gemm(nd);
  case IR_OP_CONV2D: return conv_steps_ms(g, nd);
  case IR_OP_MATMUL: return 1e-3 * (matmul_rows(g, nd) > 1);
  case IR_OP_SOFTMAX: return softmax_waves_ms(g, nd);
  case IR_OP_PAD:
  case IR_OP_ENLARGE: return pad_steps_ms(g, nd);
  default: return scalar_operand(g, nd) ? mem_ms : 0;
  }
}

/* Features of node (of class cls, work w) on dev: launches (a float32
 * concat's times its inputs), memory time (with the added kernels'
 * bytes), compute time at peak (or the time of the bytes beyond the L2),
 * the time of the bytes moved through an irregular path (of a half pool: its
 * window reads through the scalar kernel; of a dense convolution, or a
 * half depthwise one, whose channels are not 16-byte runs: its flops at
 * the FP32 rate, in place of the TF32 term; of a half 1x1 whose rows are
 * not 16 bytes: its bytes), a softmax's waves of one block a row, a
 * depthwise convolution's taps, a k x k one's main-loop steps, a 1x1
 * one's or a matmul's flag (no plain GEMM; more than one row) or a
 * float32 scalar operand's bytes, in ms (so coefficients are
 * dimensionless multipliers, or us a unit), and the added kernels'
 * launches (side_work). */
static void features(const cd_device *dev, const ir_graph *g, int node, int cls,
                     const cd_work *w, double x[CD_NFEAT]) {
  double peak =
      w->matrix && dev->tf32_flops > 0 ? dev->tf32_flops : dev->fp32_flops;
  double flops = cls == IR_OP_CONV2D || cls == CD_CLASS_CONV_GROUPED ||
                         cls == CD_CLASS_CONV_1X1
                     ? conv_flops(g, node, cls, w)
                     : w->flops;
  const ir_node *nd = &g->nodes[node];
  int half = ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype);
  /* a float32 concat is one launch a CXK_PARTS (8) inputs (kmove.cu's
   * cxk_concat); the H200's float32 concat rows measured again with it on
   * 2026-11-30 (those of 2026-11-22 timed a launch an input, about 1.1 us
   * each); the H100's are still those (issue 43; docs/costdb.md). A half
   * concat whose halves do not pair copies part by part: side_work. */
  x[0] = cls == IR_OP_CONCAT && !half ? w->launches * ((nd->nin + 7) / 8)
                                      : w->launches;
  x[5] = 0;
  double bytes = moved_bytes(g, node, w), side = 0;
  side_work(g, nd, cls, &x[5], &side);
  x[1] = 1e3 * (bytes + side) / dev->mem_bw;
  x[2] = w->matrix ? 1e3 * flops / peak
                   : 1e3 * fmax(0, bytes - L2_BYTES) / dev->mem_bw;
  x[3] = nd->op == IR_OP_AVGPOOL || nd->op == IR_OP_MAXPOOL
             ? pool_scalar_ms(dev, g, nd)
             : irregular_ms(dev, g, node, bytes);
  x[4] = fifth_feature(g, nd, cls, x[1]);
  if (nd->op == IR_OP_ATTENTION) { /* the padded tiles' flops, their waves */
    double pf = flops;
    int gather = 0;
    x[4] = attention_tiles(g, nd, &pf, &gather);
    x[2] = 1e3 * pf / peak;
    x[3] = gather ? x[2] : 0;
  }
  if (cls == CD_CLASS_CONV_1X1 && half) /* a GEMM: unaligned rows */
    x[3] = unaligned_rows(g, nd) ? x[1] : 0;
  /* half depthwise convolutions too: kdwt.cu's tiles need channels a
   * multiple of 8 */
  else if ((cls == IR_OP_CONV2D || cls == CD_CLASS_CONV_1X1 ||
            (cls == CD_CLASS_CONV_DEPTHWISE && half)) &&
           dev->fp32_flops > 0 && unaligned_channels(g, nd)) {
    x[2] = 0;
    x[3] = 1e3 * w->flops / dev->fp32_flops;
  }
}

/* The class a node is fitted in: its operator, except that grouped,
 * depthwise (one input channel a group: a per-channel stencil, no
 * matrix product; a convolution of one channel in and one out too,
 * which the executor's depthwise kernel runs: the mutants' were 1.3-2.7x
 * over as k x k ones) and 1x1 convolutions, whose kernels run at very different
 * efficiencies, are classes of their own. */
static int node_class(const ir_graph *g, int node) {
  const ir_node *nd = &g->nodes[node];
  if (nd->op != IR_OP_CONV2D)
    return nd->op;
  const ir_shape *w = &g->tensors[nd->in[1]].shape;
  if (w->dim[1] == 1 && (nd->a.groups > 1 || w->dim[0] == 1))
    return CD_CLASS_CONV_DEPTHWISE; /* groups 1: one channel in and out */
  if (nd->a.groups > 1)
    return CD_CLASS_CONV_GROUPED;
  return w->dim[2] * w->dim[3] == 1 ? CD_CLASS_CONV_1X1 : IR_OP_CONV2D;
}

const char *cd_class_name(int cls) {
  return cls == CD_CLASS_CONV_GROUPED     ? "conv2d/grouped"
         : cls == CD_CLASS_CONV_DEPTHWISE ? "conv2d/depthwise"
         : cls == CD_CLASS_CONV_1X1       ? "conv2d/1x1"
         : cls == IR_OP_CONV2D            ? "conv2d/kxk"
                                          : ir_op((ir_opcode)cls)->name;
}

/* The operator of a class. */
static int class_op(int cls) { return cls >= IR_NOPS ? IR_OP_CONV2D : cls; }

/* ---- the rows -------------------------------------------------------- */

/* The statement reading dev's rows (sig, ms) in signature order; SQLite's
 * status. */
static int device_rows(cd_db *db, const cd_device *dev, sqlite3_stmt **s) {
  int rc = sqlite3_prepare_v2(db->sql,
                              "SELECT sig, ms FROM costs WHERE device = ?1 "
                              "ORDER BY sig",
                              -1, s, NULL);
  if (!rc)
    sqlite3_bind_text(*s, 1, dev->name, -1, SQLITE_STATIC);
  return rc;
}

static base_status read_rows(cd_db *db, const cd_device *dev, cd_sample **out,
                             int *n, int *skipped, base_diag *d) {
  sqlite3_stmt *s;
  if (device_rows(db, dev, &s))
    return cd_sql_err(db, "cost database", d);
  cd_sample *v = NULL;
  int cap = 0, rc;
  base_status st = BASE_OK;
  while (st == BASE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *sig = (const char *)sqlite3_column_text(s, 0);
    double ms = sqlite3_column_double(s, 1);
    base_diag pd;
    if (!sig) { /* NOT NULL column: SQLite ran out of memory */
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      break;
    }
    ir_graph *g = cd_sig_graph(sig, &pd);
    if (!g) { /* a fused body, or a signature this build cannot parse */
      if (pd.code == BASE_ERR_NOMEM)
        st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      (*skipped)++;
      continue;
    }
    cd_work w = cd_node_work(g, 0);
    int op = node_class(g, 0);
    double roof = cd_estimate(dev, g, 0);
    double x[CD_NFEAT];
    features(dev, g, 0, op, &w, x);
    ir_graph_free(g);
    if (!w.launches || !(ms > 0)) { /* a view or a constant: costs 0 */
      (*skipped)++;
      continue;
    }
    if (*n == cap) {
      int nc = cap ? 2 * cap : 256;
      cd_sample *nv = base_realloc(v, (size_t)nc * sizeof *v);
      if (!nv) {
        st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
        break;
      }
      v = nv;
      cap = nc;
    }
    cd_sample *o = &v[(*n)++];
    o->op = op;
    o->ms = ms;
    o->hash = XXH3_64bits(sig, strlen(sig));
    o->roofline = roof;
    memcpy(o->x, x, sizeof x);
  }
  if (st == BASE_OK && rc != SQLITE_DONE)
    st = cd_sql_err(db, "cannot read the costs", d);
  sqlite3_finalize(s);
  if (st) {
    free(v);
    *n = 0;
    v = NULL;
  }
  *out = v;
  return st;
}

base_status cd_samples(cd_db *db, const cd_device *dev, cd_sample **out, int *n,
                       int *skipped, base_diag *d) {
  *out = NULL;
  *n = 0;
  if (skipped)
    *skipped = 0;
  int sk = 0;
  base_status st = cd_sync_tables(db, dev, d);
  if (!st)
    st = read_rows(db, dev, out, n, &sk, d);
  if (skipped)
    *skipped = sk;
  return st;
}

/* ---- weighted least squares with positive coefficients ---------------- */

/* Solves the k x k system a x = b (Gaussian elimination, partial pivot);
 * 0 if singular. */
static int solve(int k, double a[CD_NFEAT][CD_NFEAT], double b[CD_NFEAT],
                 double x[CD_NFEAT]) {
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(a[r][c]) > fabs(a[p][c]))
        p = r;
    if (fabs(a[p][c]) < 1e-300)
      return 0;
    for (int j = 0; j < k; j++) {
      double t = a[c][j];
      a[c][j] = a[p][j];
      a[p][j] = t;
    }
    double t = b[c];
    b[c] = b[p];
    b[p] = t;
    for (int r = c + 1; r < k; r++) {
      double f = a[r][c] / a[c][c];
      for (int j = c; j < k; j++)
        a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (int c = k - 1; c >= 0; c--) {
    double s = b[c];
    for (int j = c + 1; j < k; j++)
      s -= a[c][j] * x[j];
    x[c] = s / a[c][c];
  }
  return 1;
}

typedef struct group {
  const cd_sample *s;
  const int *idx; /* rows of the group */
  int n;
  double *w; /* weights per row of the group */
} group;

/* The weighted normal equations of every feature over the group (weights
 * on relative error): g[p][q] = sum w x_p x_q / ms^2, h[p] = sum w x_p ms /
 * ms^2, each entry summed over the rows in order as one subset's system
 * would be, so that a subset's system (wls) is bit for bit the one it
 * would sum itself: one pass over the rows for all 32 subsets (the fit
 * was most of `costdb estimate`'s and optimize's start-up). */
typedef struct normal {
  double g[CD_NFEAT][CD_NFEAT], h[CD_NFEAT];
} normal;

static void normal_of(const group *gr, normal *ne) {
  memset(ne, 0, sizeof *ne);
  for (int i = 0; i < gr->n; i++) {
    const cd_sample *s = &gr->s[gr->idx[i]];
    double wt = gr->w[i] / (s->ms * s->ms);
    for (int p = 0; p < CD_NFEAT; p++) {
      for (int q = 0; q < CD_NFEAT; q++)
        ne->g[p][q] += wt * s->x[p] * s->x[q];
      ne->h[p] += wt * s->x[p] * s->ms;
    }
  }
}

/* Fits the coefficients of the features in mask (bit j: feature j; bit 0
 * always) by weighted least squares on relative error; 0 unless every
 * coefficient comes out positive. */
static int wls(const normal *ne, unsigned mask, double c[CD_NFEAT]) {
  int f[CD_NFEAT], k = 0;
  for (int j = 0; j < CD_NFEAT; j++)
    if (mask >> j & 1)
      f[k++] = j;
  double a[CD_NFEAT][CD_NFEAT] = {{0}}, b[CD_NFEAT] = {0}, x[CD_NFEAT] = {0};
  for (int p = 0; p < k; p++) {
    for (int q = 0; q < k; q++)
      a[p][q] = ne->g[f[p]][f[q]];
    b[p] = ne->h[f[p]];
  }
  if (!solve(k, a, b, x))
    return 0;
  memset(c, 0, CD_NFEAT * sizeof *c);
  for (int p = 0; p < k; p++) {
    if (!(x[p] > 0) || !isfinite(x[p]))
      return 0;
    c[f[p]] = x[p];
  }
  return 1;
}

static double predict(const double c[CD_NFEAT], const double x[CD_NFEAT]) {
  double p = 0;
  for (int j = 0; j < CD_NFEAT; j++)
    p += c[j] * x[j];
  return p;
}

/* Weighted relative squared error of c over the group. */
static double objective(const group *gr, const double c[CD_NFEAT]) {
  double e = 0;
  for (int i = 0; i < gr->n; i++) {
    const cd_sample *s = &gr->s[gr->idx[i]];
    double r = (predict(c, s->x) - s->ms) / s->ms;
    e += gr->w[i] * r * r;
  }
  return e;
}

/* The best positive fit over the feature subsets allowed by `full`. */
static int best_subset(const group *gr, unsigned full, double c[CD_NFEAT]) {
  double best = INFINITY;
  int ok = 0;
  normal ne;
  normal_of(gr, &ne);
  for (unsigned m = 1; m <= full; m += 2) { /* bit 0 (fixed cost) always */
    double t[CD_NFEAT];
    if ((m & full) != m || !wls(&ne, m, t))
      continue;
    double e = objective(gr, t);
    if (e < best) {
      best = e;
      memcpy(c, t, sizeof t);
      ok = 1;
    }
  }
  return ok;
}

/* Fits the group (n >= 1) into c: an L1 fit on relative error by
 * iteratively reweighted least squares; 0 if no positive fit exists. */
static int fit_group(const group *gr, int matrix, double c[CD_NFEAT]) {
  unsigned full = (1u << CD_NFEAT) - 1;
  (void)matrix;
  for (int i = 0; i < gr->n; i++)
    gr->w[i] = 1;
  if (!best_subset(gr, full, c))
    return 0;
  for (int it = 0; it < IRLS_ITERS; it++) {
    for (int i = 0; i < gr->n; i++) {
      const cd_sample *s = &gr->s[gr->idx[i]];
      double r = fabs(predict(c, s->x) - s->ms) / s->ms;
      gr->w[i] = 1 / fmax(r, IRLS_FLOOR);
    }
    double t[CD_NFEAT];
    if (!best_subset(gr, full, t))
      break;
    memcpy(c, t, sizeof t);
  }
  return 1;
}

/* ---- the model ------------------------------------------------------- */

/* Whether a class (an operator, or one of the conv2d subclasses numbered
 * from IR_NOPS on) is a matrix operator. */
static int is_matrix(int cls) {
  return ir_op((ir_opcode)class_op(cls))->kind == IR_OPK_MATRIX;
}

/* The pool an operator borrows from: its kind; fused bodies: element-wise. */
static int pool_kind(int cls) {
  ir_opkind k = ir_op((ir_opcode)class_op(cls))->kind;
  return k == IR_OPK_FUSED ? IR_OPK_EW : (int)k;
}

/* Fits the rows of s selected by `sel` (rows with sel(u, i) true) that
 * belong to `want` (an operator, a kind, or all matrix / all other rows). */
typedef enum { BY_OP, BY_KIND, BY_MATRIX } by;

static int fit_rows(const cd_sample *s, int n, const unsigned char *use,
                    by what, int want, int *idx, double *w, int *rows,
                    double c[CD_NFEAT]) {
  int k = 0, matrix = 0;
  for (int i = 0; i < n; i++) {
    if (use && !use[i])
      continue;
    int in = what == BY_OP     ? s[i].op == want
             : what == BY_KIND ? pool_kind(s[i].op) == want
                               : is_matrix(s[i].op) == want;
    if (in) {
      idx[k++] = i;
      matrix |= is_matrix(s[i].op);
    }
  }
  *rows = k;
  if (k < MIN_ROWS)
    return 0;
  group gr = {s, idx, k, w};
  return fit_group(&gr, matrix, c);
}

base_status cd_fit_samples(const cd_sample *s, int n, const unsigned char *use,
                           cd_fit *f, base_diag *d) {
  memset(f, 0, sizeof *f);
  int *idx = base_malloc((size_t)(n + 1) * sizeof *idx);
  double *w = base_malloc((size_t)(n + 1) * sizeof *w);
  if (!idx || !w) {
    free(idx);
    free(w);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  for (int i = 0; i < n; i++)
    f->rows += !use || use[i];
  double kind_c[16][CD_NFEAT];
  int kind_ok[16] = {0}, all_ok[2] = {0}, rows;
  double all_c[2][CD_NFEAT];
  for (int m = 0; m < 2; m++)
    all_ok[m] = fit_rows(s, n, use, BY_MATRIX, m, idx, w, &rows, all_c[m]);
  for (int k = 0; k < 16; k++)
    kind_ok[k] = fit_rows(s, n, use, BY_KIND, k, idx, w, &rows, kind_c[k]);
  for (int o = 0; o < CD_NCLASSES; o++) {
    cd_fit_op *p = &f->op[o];
    const double *c = NULL;
    if (fit_rows(s, n, use, BY_OP, o, idx, w, &p->rows, p->c))
      p->from = CD_FIT_OWN;
    else if (kind_ok[pool_kind(o)])
      p->from = CD_FIT_KIND, c = kind_c[pool_kind(o)];
    else if (all_ok[is_matrix(o)])
      p->from = CD_FIT_ALL, c = all_c[is_matrix(o)];
    else
      p->from = CD_FIT_NONE;
    if (c)
      memcpy(p->c, c, sizeof p->c);
  }
  free(idx);
  free(w);
  return BASE_OK;
}

double cd_fit_predict(const cd_fit *f, const cd_device *dev, const ir_graph *g,
                      int node) {
  cd_work w = cd_node_work(g, node);
  if (!w.launches)
    return 0;
  int cls = node_class(g, node);
  const cd_fit_op *p = &f->op[cls];
  if (p->from == CD_FIT_NONE)
    return cd_estimate(dev, g, node);
  double x[CD_NFEAT];
  features(dev, g, node, cls, &w, x);
  return predict(p->c, x);
}

base_status cd_fit_beyond(cd_db *db, const cd_device *dev, const cd_fit *f,
                          double factor,
                          void (*fn)(void *u, const char *sig, int cls,
                                     double ms, double predicted),
                          void *u, int *n, base_diag *d) {
  if (n)
    *n = 0;
  base_status st = cd_sync_tables(db, dev, d);
  if (st)
    return st;
  sqlite3_stmt *s;
  if (device_rows(db, dev, &s))
    return cd_sql_err(db, "cost database", d);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *sig = (const char *)sqlite3_column_text(s, 0);
    double ms = sqlite3_column_double(s, 1);
    base_diag pd;
    ir_graph *g = sig ? cd_sig_graph(sig, &pd) : NULL;
    if (!g) /* a fused body, or a signature this build cannot parse */
      continue;
    double p = cd_fit_predict(f, dev, g, 0);
    int cls = node_class(g, 0);
    ir_graph_free(g);
    if (!(ms > 0) || !(p > 0) || fmax(p / ms, ms / p) <= factor)
      continue;
    if (n)
      (*n)++;
    fn(u, sig, cls, ms, p);
  }
  if (rc != SQLITE_DONE)
    st = cd_sql_err(db, "cannot read the costs", d);
  sqlite3_finalize(s);
  return st;
}

/* ---- held-out error --------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median and 90th percentile (nearest rank) of e[0..n-1], sorted here. */
static cd_fit_err summarize(double *e, int n) {
  cd_fit_err r = {n, 0, 0};
  if (!n)
    return r;
  qsort(e, (size_t)n, sizeof *e, cmp_double);
  r.median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
  int k = (int)ceil(0.9 * n) - 1;
  r.p90 = e[k < 0 ? 0 : k];
  return r;
}

base_status cd_fit_crossval(const cd_sample *s, int n, int folds,
                            cd_fit_report *rep, base_diag *d) {
  memset(rep, 0, sizeof *rep);
  unsigned char *use = base_malloc((size_t)n + 1);
  double *ef = base_malloc(((size_t)n + 1) * sizeof *ef);
  double *es = base_malloc(((size_t)n + 1) * sizeof *es);
  int *op = base_malloc(((size_t)n + 1) * sizeof *op);
  base_status st = BASE_OK;
  if (!use || !ef || !es || !op)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int k = 0;
  for (int fo = 0; fo < folds && !st; fo++) {
    cd_fit f;
    double ms[CD_NCLASSES] = {0}, est[CD_NCLASSES] = {0};
    for (int i = 0; i < n; i++) {
      use[i] = (int)(s[i].hash % (uint64_t)folds) != fo;
      if (use[i]) { /* the old model: one factor per operator */
        ms[class_op(s[i].op)] += s[i].ms;
        est[class_op(s[i].op)] += s[i].roofline;
      }
    }
    if ((st = cd_fit_samples(s, n, use, &f, d)))
      break;
    for (int i = 0; i < n; i++) {
      if (use[i])
        continue;
      const cd_fit_op *p = &f.op[s[i].op];
      double pf =
          p->from == CD_FIT_NONE ? s[i].roofline : predict(p->c, s[i].x);
      int o = class_op(s[i].op);
      double scale = est[o] > 0 ? ms[o] / est[o] : 1;
      ef[k] = fabs(pf - s[i].ms) / s[i].ms;
      es[k] = fabs(scale * s[i].roofline - s[i].ms) / s[i].ms;
      op[k++] = s[i].op;
    }
  }
  if (!st) {
    /* per operator first (summarize sorts in place) */
    double *tf = base_malloc(((size_t)k + 1) * sizeof *tf);
    double *ts = base_malloc(((size_t)k + 1) * sizeof *ts);
    if (!tf || !ts)
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    for (int o = 0; o < CD_NCLASSES && !st; o++) {
      int m = 0;
      for (int i = 0; i < k; i++)
        if (op[i] == o) {
          tf[m] = ef[i];
          ts[m++] = es[i];
        }
      rep->fit_op[o] = summarize(tf, m);
      rep->single_op[o] = summarize(ts, m);
    }
    free(tf);
    free(ts);
    rep->fit = summarize(ef, k);
    rep->single = summarize(es, k);
  }
  free(use);
  free(ef);
  free(es);
  free(op);
  return st;
}
