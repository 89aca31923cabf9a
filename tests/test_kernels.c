/* test_kernels.c: the CPU reference kernels (src/exec/ref_*.c, gemm.c)
 * against docs/graph-format.md.
 *
 * Every test builds a small graph through the IR API (ir_add_tensor /
 * ir_add_node, so shape inference runs as it does for parsed graphs), fills
 * its inputs with seeded random values or hand-chosen data, runs it with
 * ex_run and compares the result with an independent naive implementation
 * written here straight from the spec (plain loops, double accumulation), or
 * with hand-computed values. Data-movement operators (concat, split,
 * transpose, reshape, pad, slice, enlarge) are compared bit-exactly; the
 * arithmetic ones within |got - want| <= 1e-4 * (1 + |want|).
 * Also covered: the constant operators used by rewrite rules, thread-count
 * independence and the determinism of seeded random values.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "ir/ir.h"

/* ---- harness ------------------------------------------------------------- */

#define TOL 1e-4
#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* An ir_shape from a non-empty list of dimensions. */
#define SH(...) ir_shape_make(NDIMS(__VA_ARGS__), (int64_t[]){__VA_ARGS__})

static const ir_shape SCALAR = {0};

static ir_graph *new_graph(void) {
  ir_graph *g = ir_graph_new("test");
  cr_assert(g != NULL, "ir_graph_new failed");
  return g;
}

/* Adds a graph input; returns its tensor index. */
static int add_input(ir_graph *g, const char *name, ir_shape s) {
  base_diag d = {0};
  int t = ir_add_tensor(g, name, IR_T_INPUT, &s, &d);
  cr_assert(t >= 0, "ir_add_tensor(%s): %s", name, d.msg);
  return t;
}

/* Adds a node (shape inference must accept it); returns the node index. */
static int add_node(ir_graph *g, ir_opcode op, const int32_t *in, int nin,
                    const ir_attrs *a) {
  base_diag d = {0};
  static const int32_t none[1] = {0};
  int k = ir_add_node(g, op, nin ? in : none, nin, a, NULL, &d);
  cr_assert(k >= 0, "ir_add_node(%s): %s", ir_op(op)->name, d.msg);
  return k;
}

static int out_of(const ir_graph *g, int node, int slot) {
  return g->nodes[node].out[slot];
}

/* Marks every output of node as a graph output. */
static void mark_outputs(ir_graph *g, int node) {
  for (int k = 0; k < g->nodes[node].nout; k++)
    cr_assert(ir_add_output(g, out_of(g, node, k), NULL) == BASE_OK);
}

static ir_attrs attrs(ir_opcode op) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  ir_attrs_default(op, &a);
  return a;
}

/* A one-node graph of op over inputs of the given shapes (named x0, x1, ...);
 * *node gets the node index. */
static ir_graph *graph1(ir_opcode op, const ir_attrs *a, int nin,
                        const ir_shape *shapes, int *node) {
  ir_graph *g = new_graph();
  int32_t in[8];
  char name[16];
  for (int i = 0; i < nin; i++) {
    snprintf(name, sizeof name, "x%d", i);
    in[i] = add_input(g, name, shapes[i]);
  }
  *node = add_node(g, op, in, nin, a);
  mark_outputs(g, *node);
  return g;
}

/* Values for g: tensors given by hand first (set_data), then the rest of
 * the inputs seeded random. */
static ex_values *values(const ir_graph *g) {
  ex_values *v = ex_values_new(g);
  cr_assert(v != NULL);
  return v;
}

static void set_data(const ir_graph *g, ex_values *v, int t, const float *src) {
  size_t n = (size_t)ir_shape_numel(&g->tensors[t].shape);
  free(v->v[t]);
  v->v[t] = malloc(sizeof(float) * (n ? n : 1));
  cr_assert(v->v[t] != NULL);
  memcpy(v->v[t], src, sizeof(float) * n);
}

static void fill(const ir_graph *g, ex_values *v, uint64_t seed) {
  base_diag d = {0};
  cr_assert(ex_fill_random(g, v, seed, &d) == BASE_OK, "fill: %s", d.msg);
}

static void run_threads(const ir_graph *g, ex_values *v, int threads) {
  base_diag d = {0};
  ex_options o = {.threads = threads, .keep_all = 1};
  base_status st = ex_run(g, v, &o, &d);
  cr_assert(st == BASE_OK, "ex_run: %s: %s", base_status_name(st), d.msg);
}

static void run(const ir_graph *g, ex_values *v) { run_threads(g, v, 0); }

static void done(ir_graph *g, ex_values *v) {
  ex_values_free(v);
  ir_graph_free(g);
}

static double *dalloc(int64_t n) {
  double *p = calloc((size_t)(n ? n : 1), sizeof(double));
  cr_assert(p != NULL);
  return p;
}

static void expect_shape(const ir_graph *g, int t, ir_shape want) {
  char b1[64], b2[64];
  cr_assert(ir_shape_eq(&g->tensors[t].shape, &want), "shape %s, spec says %s",
            ir_shape_str(&g->tensors[t].shape, b1, sizeof b1),
            ir_shape_str(&want, b2, sizeof b2));
}

/* got[0..n) against want within TOL; reports the first mismatch. */
static void expect_close_tol(const float *got, const double *want, int64_t n,
                             double tol, const char *what) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]);
    if (!(e <= tol * (1.0 + fabs(want[i])))) {
      if (first < 0)
        first = i;
      bad++;
    }
  }
  cr_expect(bad == 0,
            "%s: %lld of %lld elements differ; first at %lld: got %.9g, "
            "want %.9g",
            what, (long long)bad, (long long)n, (long long)first,
            first >= 0 ? (double)got[first] : 0.0,
            first >= 0 ? want[first] : 0.0);
}

static void expect_close(const float *got, const double *want, int64_t n,
                         const char *what) {
  expect_close_tol(got, want, n, TOL, what);
}

/* Bit-exact comparison of float arrays; reports the first difference. */
static void expect_same(const float *got, const float *want, int64_t n,
                        const char *what) {
  int64_t first = -1;
  for (int64_t i = 0; i < n && first < 0; i++)
    if (memcmp(&got[i], &want[i], sizeof(float)))
      first = i;
  cr_expect(first < 0, "%s: element %lld is %.9g, want %.9g", what,
            (long long)first, first >= 0 ? (double)got[first] : 0.0,
            first >= 0 ? (double)want[first] : 0.0);
}

/* No element may be zero everywhere: guards against testing on zeros. */
static void assert_nonzero(const float *x, int64_t n) {
  int64_t nz = 0;
  for (int64_t i = 0; i < n; i++)
    nz += x[i] != 0.0f;
  cr_assert(nz > n / 2, "test data is mostly zero");
}

static double act_ref(int act, double x) {
  switch (act) {
  case IR_ACT_RELU: return x > 0 ? x : 0;
  case IR_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case IR_ACT_TANH: return tanh(x);
  case IR_ACT_GELU: return x / 2 * (1 + erf(x / sqrt(2.0)));
  default: return x;
  }
}

/* ---- naive references ---------------------------------------------------- */

/* One spatial dimension of a window operator, from the spec's padding rules.
 * Explicit padding comes in through lo/hi; same/valid set them. */
static int64_t spec_out_dim(int padmode, int64_t in, int k, int stride, int dil,
                            int *lo, int *hi) {
  int64_t span = (int64_t)dil * (k - 1) + 1;
  if (padmode == IR_PAD_SAME) {
    int64_t out = (in + stride - 1) / stride; /* ceil(in / stride) */
    int64_t total = (out - 1) * stride + span - in;
    if (total < 0)
      total = 0;
    *lo = (int)(total / 2);
    *hi = (int)(total - *lo);
    return out;
  }
  if (padmode == IR_PAD_VALID)
    *lo = *hi = 0;
  return (in + *lo + *hi - span) / stride + 1;
}

typedef struct conv_spec {
  int64_t x[4], w[4]; /* NCHW, OIHW */
  int bias;
  int stride[2], dil[2];
  int padmode;
  int pad[4]; /* explicit: top, left, bottom, right */
  int groups, act;
} conv_spec;

/* Direct 7-deep loop nest. pads t,l resolved by the caller. */
static void conv_ref(const conv_spec *c, const float *x, const float *w,
                     const float *b, int pt, int pl, int64_t oh, int64_t ow,
                     double *out) {
  int64_t N = c->x[0], C = c->x[1], H = c->x[2], W = c->x[3];
  int64_t O = c->w[0], Cg = c->w[1], KH = c->w[2], KW = c->w[3];
  int64_t Og = O / c->groups;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xo = 0; xo < ow; xo++) {
          int64_t grp = o / Og;
          double acc = b ? b[o] : 0.0;
          for (int64_t ci = 0; ci < Cg; ci++)
            for (int64_t ky = 0; ky < KH; ky++)
              for (int64_t kx = 0; kx < KW; kx++) {
                int64_t iy = y * c->stride[0] - pt + ky * c->dil[0];
                int64_t ix = xo * c->stride[1] - pl + kx * c->dil[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                  continue;
                int64_t cin = grp * Cg + ci;
                acc += (double)x[((n * C + cin) * H + iy) * W + ix] *
                       w[((o * Cg + ci) * KH + ky) * KW + kx];
              }
          out[((n * O + o) * oh + y) * ow + xo] = act_ref(c->act, acc);
        }
}

/* Builds conv2d per c, checks the output shape against the spec (and against
 * want_h/want_w, hand-computed, when non-zero), runs and compares. */
static void check_conv(const conv_spec *c, int64_t want_h, int64_t want_w) {
  ir_attrs a = attrs(IR_OP_CONV2D);
  a.stride[0] = c->stride[0] ? c->stride[0] : 1;
  a.stride[1] = c->stride[1] ? c->stride[1] : 1;
  a.dilation[0] = c->dil[0] ? c->dil[0] : 1;
  a.dilation[1] = c->dil[1] ? c->dil[1] : 1;
  a.padmode = c->padmode;
  memcpy(a.pad, c->pad, sizeof a.pad);
  a.groups = c->groups ? c->groups : 1;
  a.act = c->act;
  conv_spec s = *c;
  s.stride[0] = a.stride[0], s.stride[1] = a.stride[1];
  s.dil[0] = a.dilation[0], s.dil[1] = a.dilation[1];
  s.groups = a.groups;

  int pt = c->pad[0], pl = c->pad[1], pb = c->pad[2], pr = c->pad[3];
  int64_t oh = spec_out_dim(c->padmode, c->x[2], (int)c->w[2], s.stride[0],
                            s.dil[0], &pt, &pb);
  int64_t ow = spec_out_dim(c->padmode, c->x[3], (int)c->w[3], s.stride[1],
                            s.dil[1], &pl, &pr);
  if (want_h)
    cr_assert(oh == want_h && ow == want_w, "test's own shape math: %lldx%lld",
              (long long)oh, (long long)ow);

  ir_shape shapes[3] = {ir_shape_make(4, c->x), ir_shape_make(4, c->w),
                        SH(c->w[0])};
  int node;
  ir_graph *g = graph1(IR_OP_CONV2D, &a, c->bias ? 3 : 2, shapes, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(c->x[0], c->w[0], oh, ow));
  const ir_attrs *na = &g->nodes[node].a;
  cr_expect(na->pad[0] == pt && na->pad[1] == pl && na->pad[2] == pb &&
                na->pad[3] == pr,
            "resolved pads [%d,%d,%d,%d], spec says [%d,%d,%d,%d]", na->pad[0],
            na->pad[1], na->pad[2], na->pad[3], pt, pl, pb, pr);

  ex_values *v = values(g);
  fill(g, v, 42);
  run(g, v);
  int64_t n = ir_shape_numel(&g->tensors[out].shape);
  double *want = dalloc(n);
  conv_ref(&s, v->v[0], v->v[1], c->bias ? v->v[2] : NULL, pt, pl, oh, ow,
           want);
  expect_close(v->v[out], want, n, "conv2d");
  free(want);
  done(g, v);
}

/* a [...,M,K] x b [K,N] or [...,K,N] (+ bias [N]), then act. */
static void matmul_ref(const float *a, const ir_shape *as, const float *b,
                       const ir_shape *bs, const float *bias, int act,
                       double *out) {
  int r = as->rank;
  int64_t M = as->dim[r - 2], K = as->dim[r - 1], N = bs->dim[bs->rank - 1];
  int64_t batch = 1;
  for (int i = 0; i < r - 2; i++)
    batch *= as->dim[i];
  int shared = bs->rank == 2;
  for (int64_t t = 0; t < batch; t++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = bias ? bias[j] : 0.0;
        for (int64_t k = 0; k < K; k++)
          acc += (double)a[(t * M + i) * K + k] *
                 b[((shared ? 0 : t) * K + k) * N + j];
        out[(t * M + i) * N + j] = act_ref(act, acc);
      }
}

static void check_matmul(ir_shape as, ir_shape bs, int bias, int act) {
  ir_attrs a = attrs(IR_OP_MATMUL);
  a.act = act;
  ir_shape shapes[3] = {as, bs, SH(bs.dim[bs.rank - 1])};
  int node;
  ir_graph *g = graph1(IR_OP_MATMUL, &a, bias ? 3 : 2, shapes, &node);
  int out = out_of(g, node, 0);
  ir_shape os = as;
  os.dim[os.rank - 1] = bs.dim[bs.rank - 1];
  expect_shape(g, out, os);
  ex_values *v = values(g);
  fill(g, v, 7);
  run(g, v);
  int64_t n = ir_shape_numel(&os);
  double *want = dalloc(n);
  matmul_ref(v->v[0], &as, v->v[1], &bs, bias ? v->v[2] : NULL, act, want);
  expect_close(v->v[out], want, n, "matmul");
  free(want);
  done(g, v);
}

/* ---- conv2d -------------------------------------------------------------- */

Test(conv2d, odd_sizes_groups) {
  /* same, kw=2: width total 1 -> left 0, right 1 */
  conv_spec c = {.x = {2, 6, 9, 7}, .w = {4, 3, 3, 2}, .groups = 2};
  check_conv(&c, 9, 7);
}

Test(conv2d, stride_2x3) {
  conv_spec c = {
      .x = {2, 6, 9, 7}, .w = {4, 3, 3, 2}, .groups = 2, .stride = {2, 3}};
  check_conv(&c, 5, 3); /* ceil(9/2), ceil(7/3) */
}

Test(conv2d, dilation_2x1) {
  conv_spec c = {.x = {2, 6, 9, 7},
                 .w = {4, 6, 3, 2},
                 .dil = {2, 1},
                 .padmode = IR_PAD_VALID};
  check_conv(&c, 5, 6); /* 9-4, 7-1 */
}

Test(conv2d, explicit_pads) {
  conv_spec c = {.x = {2, 6, 9, 7},
                 .w = {4, 3, 3, 2},
                 .groups = 2,
                 .padmode = IR_PAD_EXPLICIT,
                 .pad = {1, 0, 2, 1}};
  check_conv(&c, 10, 7); /* 9+3-2, 7+1-1 */
}

Test(conv2d, stride_dilation_explicit_pads) {
  conv_spec c = {.x = {2, 6, 9, 7},
                 .w = {4, 3, 3, 2},
                 .groups = 2,
                 .stride = {2, 3},
                 .dil = {2, 1},
                 .padmode = IR_PAD_EXPLICIT,
                 .pad = {1, 0, 2, 1}};
  check_conv(&c, 4, 3); /* (9+3-5)/2+1, (7+1-2)/3+1 */
}

Test(conv2d, same_stride2_shape) {
  /* H: out 4, total 3*2+3-8 = 1 -> [0,1]; W: out 4, total 3*2+4-7 = 3 ->
   * [1,2]: asymmetric padding on both axes */
  conv_spec c = {.x = {1, 3, 8, 7}, .w = {2, 3, 3, 4}, .stride = {2, 2}};
  check_conv(&c, 4, 4);
}

Test(conv2d, same_stride2_no_padding_needed) {
  /* 1x1 kernel, stride 2 on 5: out 3, total (3-1)*2+1-5 = 0 */
  conv_spec c = {.x = {1, 4, 5, 6}, .w = {3, 4, 1, 1}, .stride = {2, 2}};
  check_conv(&c, 3, 3);
}

Test(conv2d, same_stride2_dilated) {
  /* H: out 4, total 3*2 + 2*2+1 - 7 = 4 -> [2,2]; W: out 3, total
   * 2*2+5-6 = 3 -> [1,2] */
  conv_spec c = {
      .x = {1, 2, 7, 6}, .w = {3, 2, 3, 3}, .stride = {2, 2}, .dil = {2, 2}};
  check_conv(&c, 4, 3);
}

Test(conv2d, valid) {
  conv_spec c = {.x = {2, 3, 8, 6},
                 .w = {5, 3, 3, 2},
                 .stride = {1, 2},
                 .padmode = IR_PAD_VALID};
  check_conv(&c, 6, 3);
}

Test(conv2d, depthwise) {
  conv_spec c = {.x = {2, 5, 7, 6}, .w = {5, 1, 3, 3}, .groups = 5};
  check_conv(&c, 7, 6);
}

Test(conv2d, depthwise_multiplier2) {
  conv_spec c = {
      .x = {1, 5, 7, 6}, .w = {10, 1, 3, 3}, .groups = 5, .stride = {2, 1}};
  check_conv(&c, 4, 6);
}

/* The direct depthwise kernel's edges: stride, dilation and uneven pads
 * (padding wider than the kernel's reach on one side), a 7x7 kernel. */
Test(conv2d, depthwise_stride_dilation_pads) {
  conv_spec c = {.x = {2, 3, 11, 9},
                 .w = {6, 1, 3, 2},
                 .groups = 3,
                 .stride = {2, 3},
                 .dil = {2, 3},
                 .padmode = IR_PAD_EXPLICIT,
                 .pad = {3, 1, 0, 4},
                 .bias = 1};
  check_conv(&c, 5, 4); /* (11+3-5)/2+1, (9+5-4)/3+1 */
}

Test(conv2d, depthwise_7x7) {
  conv_spec c = {.x = {1, 4, 9, 10},
                 .w = {4, 1, 7, 7},
                 .groups = 4,
                 .padmode = IR_PAD_EXPLICIT,
                 .pad = {3, 3, 3, 3},
                 .act = IR_ACT_GELU};
  check_conv(&c, 9, 10);
}

Test(conv2d, one_by_one) {
  conv_spec c = {.x = {2, 8, 5, 5}, .w = {6, 8, 1, 1}};
  check_conv(&c, 5, 5);
}

Test(conv2d, bias) {
  conv_spec c = {.x = {2, 4, 6, 6}, .w = {5, 4, 3, 3}, .bias = 1};
  check_conv(&c, 6, 6);
}

Test(conv2d, larger_than_a_block) {
  conv_spec c = {.x = {2, 16, 13, 11}, .w = {33, 16, 3, 3}, .bias = 1};
  check_conv(&c, 13, 11);
}

Test(conv2d, act_relu) {
  conv_spec c = {
      .x = {1, 4, 5, 5}, .w = {3, 4, 3, 3}, .bias = 1, .act = IR_ACT_RELU};
  check_conv(&c, 5, 5);
}

Test(conv2d, act_sigmoid) {
  conv_spec c = {
      .x = {1, 4, 5, 5}, .w = {3, 4, 3, 3}, .bias = 1, .act = IR_ACT_SIGMOID};
  check_conv(&c, 5, 5);
}

Test(conv2d, act_tanh) {
  conv_spec c = {
      .x = {1, 4, 5, 5}, .w = {3, 4, 3, 3}, .bias = 1, .act = IR_ACT_TANH};
  check_conv(&c, 5, 5);
}

Test(conv2d, act_gelu) {
  conv_spec c = {
      .x = {1, 4, 5, 5}, .w = {3, 4, 3, 3}, .bias = 1, .act = IR_ACT_GELU};
  check_conv(&c, 5, 5);
}

Test(conv2d, hand_computed) {
  /* x = 1..9 in a 3x3, w = [[1,0],[0,-1]] valid: out[i][j] = x[i][j] -
   * x[i+1][j+1] = -4 everywhere, + bias 0.5; with w2 = all 0.5: half the
   * sum of each 2x2 window, + bias -1. */
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float w[8] = {1, 0, 0, -1, 0.5f, 0.5f, 0.5f, 0.5f};
  float b[2] = {0.5f, -1};
  ir_attrs a = attrs(IR_OP_CONV2D);
  a.padmode = IR_PAD_VALID;
  ir_shape shapes[3] = {SH(1, 1, 3, 3), SH(2, 1, 2, 2), SH(2)};
  int node;
  ir_graph *g = graph1(IR_OP_CONV2D, &a, 3, shapes, &node);
  ex_values *v = values(g);
  set_data(g, v, 0, x);
  set_data(g, v, 1, w);
  set_data(g, v, 2, b);
  run(g, v);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(1, 2, 2, 2));
  double want[8] = {-3.5, -3.5, -3.5, -3.5, 5, 7, 11, 13};
  expect_close(v->v[out], want, 8, "conv2d by hand");
  done(g, v);
}

/* ---- matmul -------------------------------------------------------------- */

Test(matmul, odd_2d) { check_matmul(SH(37, 53), SH(53, 29), 0, IR_ACT_NONE); }

Test(matmul, larger_than_a_block) {
  check_matmul(SH(130, 300), SH(300, 70), 0, IR_ACT_NONE);
}

/* Large enough for the BLAS build's larger tiles (m >= 1024, n >= 3072),
 * with edge tiles on both sides. */
Test(matmul, large_tiles) {
  check_matmul(SH(1030, 16), SH(16, 3080), 1, IR_ACT_NONE);
}

Test(matmul, vector_shapes) {
  check_matmul(SH(1, 17), SH(17, 1), 0, IR_ACT_NONE);
  check_matmul(SH(9, 1), SH(1, 5), 0, IR_ACT_NONE);
}

Test(matmul, batched_3d) { check_matmul(SH(3, 7, 11), SH(3, 11, 5), 0, 0); }

Test(matmul, batched_4d) {
  check_matmul(SH(2, 3, 5, 6), SH(2, 3, 6, 4), 1, IR_ACT_TANH);
}

Test(matmul, shared_2d_b) { check_matmul(SH(4, 6, 9), SH(9, 13), 0, 0); }

Test(matmul, bias_relu) { check_matmul(SH(5, 17), SH(17, 10), 1, IR_ACT_RELU); }

Test(matmul, bias_sigmoid) {
  check_matmul(SH(5, 17), SH(17, 10), 1, IR_ACT_SIGMOID);
}

Test(matmul, bias_gelu_batched) {
  check_matmul(SH(2, 6, 33), SH(33, 19), 1, IR_ACT_GELU);
}

Test(matmul, hand_computed) {
  float av[6] = {1, 2, 3, 4, 5, 6};     /* [2,3] */
  float bv[6] = {1, -1, 0, 2, 3, 0.5f}; /* [3,2] */
  float bias[2] = {10, -10};
  int node;
  ir_attrs a = attrs(IR_OP_MATMUL);
  ir_shape shapes[3] = {SH(2, 3), SH(3, 2), SH(2)};
  ir_graph *g = graph1(IR_OP_MATMUL, &a, 3, shapes, &node);
  ex_values *v = values(g);
  set_data(g, v, 0, av);
  set_data(g, v, 1, bv);
  set_data(g, v, 2, bias);
  run(g, v);
  /* [1+0+9, -1+4+1.5] = [10, 4.5]; [4+0+18, -4+10+3] = [22, 9] */
  double want[4] = {20, -5.5, 32, -1};
  expect_close(v->v[out_of(g, node, 0)], want, 4, "matmul by hand");
  done(g, v);
}

/* ---- element-wise binary ------------------------------------------------- */

/* NumPy broadcast of a and b (aligned at the last dimension). */
static ir_shape bcast_shape(const ir_shape *a, const ir_shape *b) {
  ir_shape o;
  memset(&o, 0, sizeof o);
  o.rank = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < o.rank; i++) {
    int ia = i - (o.rank - a->rank), ib = i - (o.rank - b->rank);
    int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
    o.dim[i] = da > db ? da : db;
  }
  return o;
}

/* Flat index into s of output multi-index idx (rank orank), broadcasting. */
static int64_t bcast_index(const ir_shape *s, const int64_t *idx, int orank) {
  int64_t f = 0;
  for (int i = 0; i < s->rank; i++) {
    int j = i + orank - s->rank;
    f = f * s->dim[i] + (s->dim[i] == 1 ? 0 : idx[j]);
  }
  return f;
}

static double binop(ir_opcode op, double x, double y) {
  switch (op) {
  case IR_OP_EWADD: return x + y;
  case IR_OP_EWSUB: return x - y;
  case IR_OP_EWMUL: return x * y;
  case IR_OP_EWDIV: return x / y;
  default: return NAN;
  }
}

/* Divisors away from zero: |b| in [0.5, 1.5). */
static void away_from_zero(float *b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    b[i] = b[i] < 0 ? b[i] - 0.5f : b[i] + 0.5f;
}

static void check_binary(ir_opcode op, ir_shape as, ir_shape bs) {
  ir_attrs a = attrs(op);
  ir_shape shapes[2] = {as, bs};
  int node;
  ir_graph *g = graph1(op, &a, 2, shapes, &node);
  int out = out_of(g, node, 0);
  ir_shape os = bcast_shape(&as, &bs);
  expect_shape(g, out, os);
  ex_values *v = values(g);
  fill(g, v, 3);
  if (op == IR_OP_EWDIV)
    away_from_zero(v->v[1], ir_shape_numel(&bs));
  run(g, v);
  int64_t n = ir_shape_numel(&os), idx[IR_MAX_RANK];
  double *want = dalloc(n);
  for (int64_t f = 0; f < n; f++) {
    int64_t r = f;
    for (int i = os.rank - 1; i >= 0; i--)
      idx[i] = r % os.dim[i], r /= os.dim[i];
    want[f] = binop(op, v->v[0][bcast_index(&as, idx, os.rank)],
                    v->v[1][bcast_index(&bs, idx, os.rank)]);
  }
  char what[64];
  snprintf(what, sizeof what, "%s", ir_op(op)->name);
  expect_close(v->v[out], want, n, what);
  free(want);
  done(g, v);
}

static void check_binary_all(ir_opcode op) {
  check_binary(op, SH(2, 3, 4), SH(2, 3, 4));
  check_binary(op, SH(2, 3, 4), SH(4));
  check_binary(op, SH(4), SH(2, 3, 4));
  check_binary(op, SH(2, 1, 4), SH(3, 1));
  check_binary(op, SH(3, 1), SH(2, 1, 4));
  check_binary(op, SH(2, 3, 4), SCALAR);
  check_binary(op, SCALAR, SH(2, 3));
  check_binary(op, SH(5, 1, 3, 1), SH(1, 4, 1, 2));
}

Test(elementwise, ewadd) { check_binary_all(IR_OP_EWADD); }
Test(elementwise, ewsub) { check_binary_all(IR_OP_EWSUB); }
Test(elementwise, ewmul) { check_binary_all(IR_OP_EWMUL); }
Test(elementwise, ewdiv) { check_binary_all(IR_OP_EWDIV); }

/* a op b in float, element by element (the four-lane and scalar loops of
 * ref_ew.c must both give exactly this). */
static float binop_f(ir_opcode op, float x, float y) {
  switch (op) {
  case IR_OP_EWADD: return x + y;
  case IR_OP_EWSUB: return x - y;
  case IR_OP_EWMUL: return x * y;
  default: return x / y;
  }
}

/* Rows of 7 (a four-lane block and a tail of 3): contiguous operands, a
 * row broadcast, a scalar on either side; results bit for bit. */
Test(elementwise, lanes_and_tails_exact) {
  ir_opcode ops[4] = {IR_OP_EWADD, IR_OP_EWSUB, IR_OP_EWMUL, IR_OP_EWDIV};
  ir_shape pairs[4][2] = {{SH(3, 7), SH(3, 7)},
                          {SH(3, 7), SH(7)},
                          {SH(3, 7), SCALAR},
                          {SCALAR, SH(3, 7)}};
  for (int k = 0; k < 4; k++)
    for (int p = 0; p < 4; p++) {
      ir_attrs a = attrs(ops[k]);
      int node;
      ir_graph *g = graph1(ops[k], &a, 2, pairs[p], &node);
      ex_values *v = values(g);
      fill(g, v, 5 + (uint64_t)p);
      away_from_zero(v->v[1], ir_shape_numel(&pairs[p][1]));
      run(g, v);
      float want[21];
      int64_t nb = ir_shape_numel(&pairs[p][1]);
      for (int64_t i = 0; i < 21; i++) {
        float x = ir_shape_numel(&pairs[p][0]) == 1 ? v->v[0][0] : v->v[0][i];
        want[i] = binop_f(ops[k], x, v->v[1][i % nb]);
      }
      expect_same(v->v[out_of(g, node, 0)], want, 21, ir_op(ops[k])->name);
      done(g, v);
    }
}

/* Each ew.def row's expression element by element, in this file's plain
 * loop (the reference for ex_ew_apply's simd loops). */
#define EW(ID, name, c, ...)                                                   \
  static float ref_##name(float x) { return c; }
#include "ir/ew.def"
#undef EW

static float (*const ew_refs[IR_NOPS])(float) = {
#define EW(ID, name, ...) [IR_OP_##ID] = ref_##name,
#include "ir/ew.def"
#undef EW
};

/* Every ew.def operator over special values (NaN, infinities, zeros of
 * both signs, subnormals, huge values) and 70000 random ones (threads,
 * lanes and a tail of 3): exactly the expression's value, bit for bit. */
Test(elementwise, unary_loops_exact) {
  enum { N = 70003 };
  static const float special[] = {NAN,    -NAN,   INFINITY, -INFINITY, 0.0f,
                                  -0.0f,  1e-45f, -1e-45f,  1e-38f,    3e38f,
                                  -3e38f, 1.0f,   -1.0f,    88.7f,     -104.0f};
  int ns = (int)(sizeof special / sizeof special[0]);
  float *x = malloc(sizeof(float) * N), *got = malloc(sizeof(float) * N),
        *want = malloc(sizeof(float) * N);
  cr_assert(x && got && want);
  ex_random_fill(x, N, 3, 4, -20.0f, 20.0f);
  memcpy(x, special, sizeof special);
  for (int op = 0; op < IR_NOPS; op++) {
    if (!ew_refs[op])
      continue;
    cr_assert_eq(ex_ew_apply((ir_opcode)op, x, got, N), BASE_OK);
    for (int i = 0; i < N; i++)
      want[i] = ew_refs[op](x[i]);
    expect_same(got, want, N, ir_op((ir_opcode)op)->name);
    cr_assert_eq(ex_ew_apply((ir_opcode)op, x + 1, got, ns - 1), BASE_OK);
    expect_same(got, want + 1, ns - 1, ir_op((ir_opcode)op)->name);
  }
  free(x);
  free(got);
  free(want);
}

Test(elementwise, ewsub_ewdiv_order_by_hand) {
  /* a - b and a / b, not b - a: [2,1] op [2] -> [2,2] */
  float av[2] = {6, 9}, bv[2] = {2, 3};
  ir_opcode ops[2] = {IR_OP_EWSUB, IR_OP_EWDIV};
  double want[2][4] = {{4, 3, 7, 6}, {3, 2, 4.5, 3}};
  for (int k = 0; k < 2; k++) {
    ir_attrs a = attrs(ops[k]);
    ir_shape shapes[2] = {SH(2, 1), SH(2)};
    int node;
    ir_graph *g = graph1(ops[k], &a, 2, shapes, &node);
    ex_values *v = values(g);
    set_data(g, v, 0, av);
    set_data(g, v, 1, bv);
    run(g, v);
    expect_close(v->v[out_of(g, node, 0)], want[k], 4, ir_op(ops[k])->name);
    done(g, v);
  }
}

Test(elementwise, smul) {
  ir_attrs a = attrs(IR_OP_SMUL);
  ir_shape shapes[2] = {SH(3, 5, 7), SCALAR};
  int node;
  ir_graph *g = graph1(IR_OP_SMUL, &a, 2, shapes, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(3, 5, 7));
  ex_values *v = values(g);
  float s = -2.75f;
  set_data(g, v, 1, &s);
  fill(g, v, 5);
  run(g, v);
  double want[105];
  for (int i = 0; i < 105; i++)
    want[i] = (double)v->v[0][i] * s;
  expect_close(v->v[out], want, 105, "smul");
  done(g, v);
}

/* ---- element-wise unary at hand-chosen points ---------------------------- */

#define NPTS 8
static const float PTS[NPTS] = {-2, -1, -0.5f, 0, 0.5f, 1, 2, 7.5f};

/* Runs op over PTS; returns the malloc'd output. */
static float *unary(ir_opcode op, const ir_attrs *a) {
  ir_shape s = SH(NPTS);
  int node;
  ir_graph *g = graph1(op, a, 1, &s, &node);
  ex_values *v = values(g);
  set_data(g, v, 0, PTS);
  run(g, v);
  float *r = malloc(sizeof(float) * NPTS);
  cr_assert(r != NULL);
  memcpy(r, v->v[out_of(g, node, 0)], sizeof(float) * NPTS);
  done(g, v);
  return r;
}

/* Hand values within 1e-6, and the formula over PTS. */
static void check_unary(ir_opcode op, int act, const double *hand) {
  ir_attrs a = attrs(op);
  float *r = unary(op, &a);
  expect_close_tol(r, hand, NPTS, 1e-6, ir_op(op)->name);
  double want[NPTS];
  for (int i = 0; i < NPTS; i++)
    want[i] = act_ref(act, PTS[i]);
  expect_close_tol(r, want, NPTS, 1e-6, ir_op(op)->name);
  free(r);
}

Test(unary, relu) {
  ir_attrs a = attrs(IR_OP_RELU);
  float *r = unary(IR_OP_RELU, &a);
  float want[NPTS] = {0, 0, 0, 0, 0.5f, 1, 2, 7.5f};
  expect_same(r, want, NPTS, "relu");
  free(r);
}

Test(unary, sigmoid) {
  double hand[NPTS] = {0.11920292202, 0.26894142137, 0.37754066880,
                       0.5,           0.62245933120, 0.73105857863,
                       0.88079707798, 0.99944722136};
  check_unary(IR_OP_SIGMOID, IR_ACT_SIGMOID, hand);
}

Test(unary, sigmoid_of_zero_is_half) {
  ir_attrs a = attrs(IR_OP_SIGMOID);
  float *r = unary(IR_OP_SIGMOID, &a);
  cr_expect(r[3] == 0.5f, "sigmoid(0) = %.9g", (double)r[3]);
  free(r);
}

Test(unary, tanh) {
  double hand[NPTS] = {
      -0.96402758008, -0.76159415596, -0.46211715726, 0,
      0.46211715726,  0.76159415596,  0.96402758008,  0.99999938819};
  check_unary(IR_OP_TANH, IR_ACT_TANH, hand);
}

Test(unary, gelu) {
  double hand[NPTS] = {-0.04550026390, -0.15865525393, -0.15426876720, 0,
                       0.34573123280,  0.84134474607,  1.95449973610,  7.5};
  check_unary(IR_OP_GELU, IR_ACT_GELU, hand);
  ir_attrs a = attrs(IR_OP_GELU);
  float *r = unary(IR_OP_GELU, &a);
  cr_expect(fabs(r[5] - 0.8413447) < 1e-6, "gelu(1) = %.9g", (double)r[5]);
  free(r);
}

/* neg, exp, log, cos, sin (ew.def rows, issue 41): hand values (libm in
 * double), relative 1e-6; log of x <= 0: -inf at 0, NaN below. */
static void check_hand(ir_opcode op, const double *hand) {
  ir_attrs a = attrs(op);
  float *r = unary(op, &a);
  for (int i = 0; i < NPTS; i++) {
    double w = hand[i], got = r[i];
    if (isnan(w))
      cr_expect(isnan(got), "%s(%g) = %.9g, want NaN", ir_op(op)->name,
                (double)PTS[i], got);
    else if (isinf(w))
      cr_expect(got == w, "%s(%g) = %.9g, want %g", ir_op(op)->name,
                (double)PTS[i], got, w);
    else
      cr_expect(fabs(got - w) <= 1e-6 * (1 + fabs(w)),
                "%s(%g) = %.9g, want %.9g", ir_op(op)->name, (double)PTS[i],
                got, w);
  }
  free(r);
}

Test(unary, neg) {
  double hand[NPTS] = {2, 1, 0.5, 0, -0.5, -1, -2, -7.5};
  check_hand(IR_OP_NEG, hand);
}

Test(unary, exp) {
  double hand[NPTS] = {
      0.13533528324, 0.36787944117, 0.60653065971, 1,
      1.6487212707,  2.7182818285,  7.3890560989,  1808.0424145};
  check_hand(IR_OP_EXP, hand);
}

Test(unary, log) {
  double hand[NPTS] = {
      NAN, NAN, NAN, -INFINITY, -0.69314718056, 0, 0.69314718056, 2.0149030205};
  check_hand(IR_OP_LOG, hand);
}

Test(unary, cos) {
  double hand[NPTS] = {
      -0.41614683655, 0.54030230587, 0.87758256189,  1,
      0.87758256189,  0.54030230587, -0.41614683655, 0.34663531784};
  check_hand(IR_OP_COS, hand);
}

Test(unary, sin) {
  double hand[NPTS] = {
      -0.90929742683, -0.84147098481, -0.4794255386, 0,
      0.4794255386,   0.84147098481,  0.90929742683, 0.93799997677};
  check_hand(IR_OP_SIN, hand);
}

Test(unary, clip) {
  ir_attrs a = attrs(IR_OP_CLIP);
  a.lo = 0, a.hi = 6;
  float *r = unary(IR_OP_CLIP, &a);
  float want[NPTS] = {0, 0, 0, 0, 0.5f, 1, 2, 6};
  expect_same(r, want, NPTS, "clip [0,6]");
  free(r);
  a.lo = -0.75f, a.hi = 1.25f;
  r = unary(IR_OP_CLIP, &a);
  float want2[NPTS] = {-0.75f, -0.75f, -0.5f, 0, 0.5f, 1, 1.25f, 1.25f};
  expect_same(r, want2, NPTS, "clip [-0.75,1.25]");
  free(r);
}

Test(unary, random_data_vs_formula) {
  ir_opcode ops[4] = {IR_OP_RELU, IR_OP_SIGMOID, IR_OP_TANH, IR_OP_GELU};
  int acts[4] = {IR_ACT_RELU, IR_ACT_SIGMOID, IR_ACT_TANH, IR_ACT_GELU};
  for (int k = 0; k < 4; k++) {
    ir_attrs a = attrs(ops[k]);
    ir_shape s = SH(3, 4, 5);
    int node;
    ir_graph *g = graph1(ops[k], &a, 1, &s, &node);
    ex_values *v = values(g);
    fill(g, v, 11);
    for (int i = 0; i < 60; i++)
      v->v[0][i] *= 4; /* [-4, 4) */
    run(g, v);
    double want[60];
    for (int i = 0; i < 60; i++)
      want[i] = act_ref(acts[k], v->v[0][i]);
    expect_close(v->v[out_of(g, node, 0)], want, 60, ir_op(ops[k])->name);
    done(g, v);
  }
}

/* ---- concat / split ------------------------------------------------------ */

Test(shape_ops, concat_split_roundtrip_axis1) {
  ir_graph *g = new_graph();
  int32_t in[3] = {add_input(g, "a", SH(2, 3, 4)),
                   add_input(g, "b", SH(2, 5, 4)),
                   add_input(g, "c", SH(2, 1, 4))};
  ir_attrs a = attrs(IR_OP_CONCAT);
  a.axis = 1;
  int cat = add_node(g, IR_OP_CONCAT, in, 3, &a);
  int32_t ct = out_of(g, cat, 0);
  expect_shape(g, ct, SH(2, 9, 4));
  ir_attrs s = attrs(IR_OP_SPLIT);
  s.axis = 1;
  s.nlist = 3, s.list[0] = 3, s.list[1] = 5, s.list[2] = 1;
  int sp = add_node(g, IR_OP_SPLIT, &ct, 1, &s);
  cr_assert_eq(g->nodes[sp].nout, 3);
  mark_outputs(g, sp);
  ex_values *v = values(g);
  fill(g, v, 9);
  assert_nonzero(v->v[in[1]], 40);
  run(g, v);
  int64_t sizes[3] = {24, 40, 8};
  for (int k = 0; k < 3; k++) {
    expect_shape(g, out_of(g, sp, k), g->tensors[in[k]].shape);
    expect_same(v->v[out_of(g, sp, k)], v->v[in[k]], sizes[k], "split(concat)");
  }
  /* concat itself by index math: out[n][c][k] */
  int64_t bad = 0;
  for (int n = 0; n < 2; n++)
    for (int c = 0; c < 9; c++)
      for (int k = 0; k < 4; k++) {
        float got = v->v[ct][(n * 9 + c) * 4 + k], want;
        if (c < 3)
          want = v->v[in[0]][(n * 3 + c) * 4 + k];
        else if (c < 8)
          want = v->v[in[1]][(n * 5 + c - 3) * 4 + k];
        else
          want = v->v[in[2]][n * 4 + k];
        bad += memcmp(&got, &want, sizeof got) != 0;
      }
  cr_expect(bad == 0, "concat axis 1: %lld elements wrong", (long long)bad);
  done(g, v);
}

Test(shape_ops, concat_axis0) {
  ir_attrs a = attrs(IR_OP_CONCAT);
  a.axis = 0;
  ir_shape shapes[3] = {SH(2, 3), SH(1, 3), SH(3, 3)};
  int node;
  ir_graph *g = graph1(IR_OP_CONCAT, &a, 3, shapes, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(6, 3));
  ex_values *v = values(g);
  fill(g, v, 1);
  run(g, v);
  float want[18];
  memcpy(want, v->v[0], sizeof(float) * 6);
  memcpy(want + 6, v->v[1], sizeof(float) * 3);
  memcpy(want + 9, v->v[2], sizeof(float) * 9);
  expect_same(v->v[out], want, 18, "concat axis 0");
  done(g, v);
}

Test(shape_ops, concat_last_axis) {
  for (int neg = 0; neg < 2; neg++) {
    ir_attrs a = attrs(IR_OP_CONCAT);
    a.axis = neg ? -1 : 2;
    ir_shape shapes[2] = {SH(2, 3, 2), SH(2, 3, 3)};
    int node;
    ir_graph *g = graph1(IR_OP_CONCAT, &a, 2, shapes, &node);
    int out = out_of(g, node, 0);
    expect_shape(g, out, SH(2, 3, 5));
    ex_values *v = values(g);
    fill(g, v, 2);
    run(g, v);
    float want[30];
    for (int r = 0; r < 6; r++)
      for (int k = 0; k < 5; k++)
        want[r * 5 + k] = k < 2 ? v->v[0][r * 2 + k] : v->v[1][r * 3 + k - 2];
    expect_same(v->v[out], want, 30, neg ? "concat axis -1" : "concat axis 2");
    done(g, v);
  }
}

Test(shape_ops, split_axis0_and_last) {
  /* [4,6] split axis 0 [1,3]; then axis 1 [2,4] of the second part */
  ir_graph *g = new_graph();
  int32_t x = add_input(g, "x", SH(4, 6));
  ir_attrs s = attrs(IR_OP_SPLIT);
  s.axis = 0, s.nlist = 2, s.list[0] = 1, s.list[1] = 3;
  int n0 = add_node(g, IR_OP_SPLIT, &x, 1, &s);
  int32_t p1 = out_of(g, n0, 1);
  s.axis = -1, s.list[0] = 2, s.list[1] = 4;
  int n1 = add_node(g, IR_OP_SPLIT, &p1, 1, &s);
  mark_outputs(g, n0);
  mark_outputs(g, n1);
  ex_values *v = values(g);
  fill(g, v, 4);
  run(g, v);
  const float *xv = v->v[x];
  expect_same(v->v[out_of(g, n0, 0)], xv, 6, "split axis 0 part 0");
  expect_same(v->v[p1], xv + 6, 18, "split axis 0 part 1");
  float l[6], r[12];
  for (int i = 0; i < 3; i++) {
    memcpy(l + i * 2, xv + (i + 1) * 6, sizeof(float) * 2);
    memcpy(r + i * 4, xv + (i + 1) * 6 + 2, sizeof(float) * 4);
  }
  expect_shape(g, out_of(g, n1, 0), SH(3, 2));
  expect_same(v->v[out_of(g, n1, 0)], l, 6, "split axis -1 part 0");
  expect_same(v->v[out_of(g, n1, 1)], r, 12, "split axis -1 part 1");
  done(g, v);
}

/* ---- transpose / reshape / pad / slice ----------------------------------- */

Test(shape_ops, transpose_inverse_is_identity) {
  int64_t perm[4] = {1, 3, 0, 2}, inv[4];
  for (int i = 0; i < 4; i++)
    inv[perm[i]] = i;
  ir_graph *g = new_graph();
  int32_t x = add_input(g, "x", SH(2, 3, 4, 5));
  ir_attrs a = attrs(IR_OP_TRANSPOSE);
  a.nlist = 4;
  memcpy(a.list, perm, sizeof perm);
  int n0 = add_node(g, IR_OP_TRANSPOSE, &x, 1, &a);
  int32_t t = out_of(g, n0, 0);
  expect_shape(g, t, SH(3, 5, 2, 4));
  memcpy(a.list, inv, sizeof inv);
  int n1 = add_node(g, IR_OP_TRANSPOSE, &t, 1, &a);
  mark_outputs(g, n1);
  ex_values *v = values(g);
  fill(g, v, 6);
  run(g, v);
  expect_shape(g, out_of(g, n1, 0), SH(2, 3, 4, 5));
  expect_same(v->v[out_of(g, n1, 0)], v->v[x], 120, "transpose o transpose^-1");
  done(g, v);
}

Test(shape_ops, transpose_3d_201) {
  ir_attrs a = attrs(IR_OP_TRANSPOSE);
  a.nlist = 3, a.list[0] = 2, a.list[1] = 0, a.list[2] = 1;
  ir_shape s = SH(2, 3, 4);
  int node;
  ir_graph *g = graph1(IR_OP_TRANSPOSE, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(4, 2, 3)); /* out.dim[i] = x.dim[perm[i]] */
  ex_values *v = values(g);
  fill(g, v, 8);
  run(g, v);
  float want[24];
  for (int i = 0; i < 4; i++)     /* x axis 2 */
    for (int j = 0; j < 2; j++)   /* x axis 0 */
      for (int k = 0; k < 3; k++) /* x axis 1 */
        want[(i * 2 + j) * 3 + k] = v->v[0][(j * 3 + k) * 4 + i];
  expect_same(v->v[out], want, 24, "transpose [2,0,1]");
  done(g, v);
}

/* The last two axes swapped (by blocks of 32 in ref_shape.c): sizes
 * across block edges, with and without leading axes, element by element. */
Test(shape_ops, transpose_last_two_blocked) {
  ir_shape shapes[3] = {SH(70, 33), SH(3, 5, 65, 37), SH(1, 31)};
  for (int c = 0; c < 3; c++) {
    const ir_shape *s = &shapes[c];
    int r = s->rank;
    ir_attrs a = attrs(IR_OP_TRANSPOSE);
    a.nlist = r;
    for (int i = 0; i < r; i++)
      a.list[i] = i;
    a.list[r - 2] = r - 1, a.list[r - 1] = r - 2;
    int node;
    ir_graph *g = graph1(IR_OP_TRANSPOSE, &a, 1, s, &node);
    ex_values *v = values(g);
    fill(g, v, 9);
    run(g, v);
    int64_t R = s->dim[r - 2], C = s->dim[r - 1], n = ir_shape_numel(s);
    float *want = malloc(sizeof(float) * (size_t)n);
    cr_assert(want);
    for (int64_t b = 0; b < n / (R * C); b++)
      for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
          want[b * R * C + j * R + i] = v->v[0][b * R * C + i * C + j];
    expect_same(v->v[out_of(g, node, 0)], want, n, "transpose last two");
    free(want);
    done(g, v);
  }
}

Test(shape_ops, reshape_keeps_data) {
  ir_attrs a = attrs(IR_OP_RESHAPE);
  a.nlist = 2, a.list[0] = 4, a.list[1] = -1;
  ir_shape s = SH(2, 3, 4);
  int node;
  ir_graph *g = graph1(IR_OP_RESHAPE, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(4, 6));
  ex_values *v = values(g);
  fill(g, v, 10);
  run(g, v);
  expect_same(v->v[out], v->v[0], 24, "reshape");
  done(g, v);
}

Test(shape_ops, pad_2d_by_hand) {
  /* x [2,3] = 1..6, pads [b0=1, b1=0, e0=2, e1=3], value 2.5 -> [5,6] */
  ir_attrs a = attrs(IR_OP_PAD);
  a.nlist = 4, a.list[0] = 1, a.list[1] = 0, a.list[2] = 2, a.list[3] = 3;
  a.value = 2.5f;
  ir_shape s = SH(2, 3);
  int node;
  ir_graph *g = graph1(IR_OP_PAD, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(5, 6));
  ex_values *v = values(g);
  float x[6] = {1, 2, 3, 4, 5, 6};
  set_data(g, v, 0, x);
  run(g, v);
  const float P = 2.5f;
  float want[30] = {P, P, P, P, P, P, /* before row */
                    1, 2, 3, P, P, P, /* */
                    4, 5, 6, P, P, P, /* */
                    P, P, P, P, P, P, /* after rows */
                    P, P, P, P, P, P};
  expect_same(v->v[out], want, 30, "pad");
  done(g, v);
}

Test(shape_ops, pad_3d_vs_index_math) {
  /* x [2,3,4], pads before [0,2,1], after [1,0,2], value -1 -> [3,5,7] */
  ir_attrs a = attrs(IR_OP_PAD);
  int64_t pads[6] = {0, 2, 1, 1, 0, 2};
  a.nlist = 6;
  memcpy(a.list, pads, sizeof pads);
  a.value = -1;
  ir_shape s = SH(2, 3, 4);
  int node;
  ir_graph *g = graph1(IR_OP_PAD, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(3, 5, 7));
  ex_values *v = values(g);
  fill(g, v, 12);
  run(g, v);
  float want[105];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 7; k++) {
        int xi = i - 0, xj = j - 2, xk = k - 1;
        int in = xi >= 0 && xi < 2 && xj >= 0 && xj < 3 && xk >= 0 && xk < 4;
        want[(i * 5 + j) * 7 + k] =
            in ? v->v[0][(xi * 3 + xj) * 4 + xk] : -1.0f;
      }
  expect_same(v->v[out], want, 105, "pad 3-D");
  done(g, v);
}

Test(shape_ops, slice_vs_index_math) {
  /* x [4,5,6], starts [1,0,2], ends [3,5,5] -> [2,5,3] */
  ir_attrs a = attrs(IR_OP_SLICE);
  a.nlist = 3, a.list[0] = 1, a.list[1] = 0, a.list[2] = 2;
  a.nlist2 = 3, a.list2[0] = 3, a.list2[1] = 5, a.list2[2] = 5;
  ir_shape s = SH(4, 5, 6);
  int node;
  ir_graph *g = graph1(IR_OP_SLICE, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(2, 5, 3));
  ex_values *v = values(g);
  fill(g, v, 13);
  run(g, v);
  float want[30];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 3; k++)
        want[(i * 5 + j) * 3 + k] = v->v[0][((i + 1) * 5 + j) * 6 + k + 2];
  expect_same(v->v[out], want, 30, "slice");
  done(g, v);
}

/* ---- pooling ------------------------------------------------------------- */

static float *pool_1to9(ir_opcode op, int cip) {
  ir_attrs a = attrs(op);
  a.kernel[0] = a.kernel[1] = 3;
  a.stride[0] = a.stride[1] = 1;
  a.padmode = IR_PAD_EXPLICIT;
  a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
  if (op == IR_OP_AVGPOOL)
    a.count_include_pad = cip;
  ir_shape s = SH(1, 1, 3, 3);
  int node;
  ir_graph *g = graph1(op, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(1, 1, 3, 3));
  ex_values *v = values(g);
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  set_data(g, v, 0, x);
  run(g, v);
  float *r = malloc(sizeof(float) * 9);
  cr_assert(r != NULL);
  memcpy(r, v->v[out], sizeof(float) * 9);
  done(g, v);
  return r;
}

/* Window sums of 1..9 in a 3x3 with a 3x3 window and padding 1. */
static const double SUMS[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
static const double COUNTS[9] = {4, 6, 4, 6, 9, 6, 4, 6, 4};

Test(pooling, avgpool_count_include_pad_1) {
  float *r = pool_1to9(IR_OP_AVGPOOL, 1);
  double want[9];
  for (int i = 0; i < 9; i++)
    want[i] = SUMS[i] / 9; /* corner 12/9 = 1.3333 */
  expect_close_tol(r, want, 9, 1e-6, "avgpool count_include_pad=1");
  free(r);
}

Test(pooling, avgpool_count_include_pad_0) {
  float *r = pool_1to9(IR_OP_AVGPOOL, 0);
  double want[9] = {3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7};
  for (int i = 0; i < 9; i++)
    cr_assert(fabs(SUMS[i] / COUNTS[i] - want[i]) < 1e-12); /* own math */
  expect_close_tol(r, want, 9, 1e-6, "avgpool count_include_pad=0");
  free(r);
}

Test(pooling, maxpool_by_hand) {
  float *r = pool_1to9(IR_OP_MAXPOOL, 0);
  float want[9] = {5, 6, 6, 8, 9, 9, 8, 9, 9};
  expect_same(r, want, 9, "maxpool 1..9");
  free(r);
}

/* Naive pooling; pads top/left given. */
static void pool_ref(int is_max, int cip, const float *x, const ir_shape *xs,
                     int kh, int kw, int sh, int sw, int pt, int pl, int64_t oh,
                     int64_t ow, double *out) {
  int64_t NC = xs->dim[0] * xs->dim[1], H = xs->dim[2], W = xs->dim[3];
  for (int64_t p = 0; p < NC; p++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t xo = 0; xo < ow; xo++) {
        double sum = 0, mx = -INFINITY;
        int cnt = 0;
        for (int ky = 0; ky < kh; ky++)
          for (int kx = 0; kx < kw; kx++) {
            int64_t iy = y * sh - pt + ky, ix = xo * sw - pl + kx;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
              continue;
            double val = x[(p * H + iy) * W + ix];
            sum += val, cnt++;
            mx = val > mx ? val : mx;
          }
        out[(p * oh + y) * ow + xo] = is_max ? mx : sum / (cip ? kh * kw : cnt);
      }
}

static void check_pool(ir_opcode op, int cip, ir_shape xs, int kh, int kw,
                       int sh, int sw, int padmode, const int *pads,
                       int negate) {
  ir_attrs a = attrs(op);
  a.kernel[0] = kh, a.kernel[1] = kw;
  a.stride[0] = sh, a.stride[1] = sw;
  a.padmode = padmode;
  int pt = 0, pl = 0, pb = 0, pr = 0;
  if (pads) {
    memcpy(a.pad, pads, sizeof a.pad);
    pt = pads[0], pl = pads[1], pb = pads[2], pr = pads[3];
  }
  if (op == IR_OP_AVGPOOL)
    a.count_include_pad = cip;
  int64_t oh = spec_out_dim(padmode, xs.dim[2], kh, sh, 1, &pt, &pb);
  int64_t ow = spec_out_dim(padmode, xs.dim[3], kw, sw, 1, &pl, &pr);
  int node;
  ir_graph *g = graph1(op, &a, 1, &xs, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(xs.dim[0], xs.dim[1], oh, ow));
  ex_values *v = values(g);
  fill(g, v, 14);
  int64_t nx = ir_shape_numel(&xs);
  if (negate) /* all inputs in [-2, -0.5): zero padding would win */
    for (int64_t i = 0; i < nx; i++)
      v->v[0][i] = -1.25f - 0.75f * v->v[0][i];
  run(g, v);
  int64_t n = ir_shape_numel(&g->tensors[out].shape);
  double *want = dalloc(n);
  pool_ref(op == IR_OP_MAXPOOL, cip, v->v[0], &xs, kh, kw, sh, sw, pt, pl, oh,
           ow, want);
  expect_close(v->v[out], want, n, ir_op(op)->name);
  if (negate)
    for (int64_t i = 0; i < n; i++)
      cr_assert(v->v[out][i] < 0, "padding won: out[%lld] = %g", (long long)i,
                (double)v->v[out][i]);
  free(want);
  done(g, v);
}

Test(pooling, maxpool_padding_never_wins) {
  int pads[4] = {1, 1, 1, 1};
  check_pool(IR_OP_MAXPOOL, 0, SH(1, 2, 4, 5), 3, 3, 1, 1, IR_PAD_EXPLICIT,
             pads, 1);
  /* same, stride 2 on 5x5: bottom/right windows cover 1 row/col of data */
  check_pool(IR_OP_MAXPOOL, 0, SH(2, 3, 5, 5), 2, 2, 2, 2, IR_PAD_SAME, NULL,
             1);
  int pads2[4] = {2, 0, 0, 2};
  check_pool(IR_OP_MAXPOOL, 0, SH(1, 1, 3, 3), 3, 3, 1, 1, IR_PAD_EXPLICIT,
             pads2, 1);
}

Test(pooling, maxpool_random) {
  check_pool(IR_OP_MAXPOOL, 0, SH(2, 3, 8, 7), 3, 2, 2, 2, IR_PAD_VALID, NULL,
             0);
}

Test(pooling, avgpool_same_stride2_random) {
  /* H 7: out 4, total 2 -> [1,1]; W 8: out 4, total 1 -> [0,1] */
  check_pool(IR_OP_AVGPOOL, 1, SH(2, 3, 7, 8), 3, 3, 2, 2, IR_PAD_SAME, NULL,
             0);
  check_pool(IR_OP_AVGPOOL, 0, SH(2, 3, 7, 8), 3, 3, 2, 2, IR_PAD_SAME, NULL,
             0);
}

Test(pooling, avgpool_valid_and_explicit) {
  check_pool(IR_OP_AVGPOOL, 1, SH(1, 4, 6, 9), 2, 3, 2, 3, IR_PAD_VALID, NULL,
             0);
  int pads[4] = {0, 2, 1, 0};
  check_pool(IR_OP_AVGPOOL, 0, SH(1, 2, 5, 6), 2, 3, 1, 2, IR_PAD_EXPLICIT,
             pads, 0);
  check_pool(IR_OP_AVGPOOL, 1, SH(1, 2, 5, 6), 2, 3, 1, 2, IR_PAD_EXPLICIT,
             pads, 0);
}

Test(pooling, global_avgpool) {
  ir_attrs a = attrs(IR_OP_GLOBAL_AVGPOOL);
  ir_shape s = SH(2, 3, 5, 7);
  int node;
  ir_graph *g = graph1(IR_OP_GLOBAL_AVGPOOL, &a, 1, &s, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, SH(2, 3, 1, 1));
  ex_values *v = values(g);
  fill(g, v, 15);
  run(g, v);
  double want[6];
  for (int p = 0; p < 6; p++) {
    double sum = 0;
    for (int i = 0; i < 35; i++)
      sum += v->v[0][p * 35 + i];
    want[p] = sum / 35;
  }
  expect_close(v->v[out], want, 6, "global_avgpool");
  done(g, v);
}

/* ---- enlarge ------------------------------------------------------------- */

static void check_enlarge(ir_shape ws, int kh, int kw) {
  ir_attrs a = attrs(IR_OP_ENLARGE);
  a.kernel[0] = kh, a.kernel[1] = kw;
  int node;
  ir_graph *g = graph1(IR_OP_ENLARGE, &a, 1, &ws, &node);
  int out = out_of(g, node, 0);
  int64_t O = ws.dim[0], I = ws.dim[1], h = ws.dim[2], w = ws.dim[3];
  expect_shape(g, out, SH(O, I, kh, kw));
  ex_values *v = values(g);
  fill(g, v, 16);
  assert_nonzero(v->v[0], O * I * h * w);
  run(g, v);
  int64_t oy = (kh - h) / 2, ox = (kw - w) / 2, n = O * I * kh * kw;
  float *want = calloc((size_t)n, sizeof(float));
  cr_assert(want != NULL);
  for (int64_t p = 0; p < O * I; p++)
    for (int64_t y = 0; y < h; y++)
      for (int64_t x = 0; x < w; x++)
        want[(p * kh + y + oy) * kw + x + ox] = v->v[0][(p * h + y) * w + x];
  expect_same(v->v[out], want, n, "enlarge");
  free(want);
  done(g, v);
}

Test(enlarge, one_by_three_to_three_by_three) {
  check_enlarge(SH(2, 3, 1, 3), 3, 3); /* data in row 1 */
}

Test(enlarge, three_to_five_centred) {
  check_enlarge(SH(2, 2, 3, 3), 5, 5); /* data at rows/cols 1..3 */
}

Test(enlarge, by_hand) {
  /* w [1,1,1,1] = 7 -> [1,1,3,3]: only the centre is 7 */
  ir_attrs a = attrs(IR_OP_ENLARGE);
  a.kernel[0] = a.kernel[1] = 3;
  ir_shape s = SH(1, 1, 1, 1);
  int node;
  ir_graph *g = graph1(IR_OP_ENLARGE, &a, 1, &s, &node);
  ex_values *v = values(g);
  float seven = 7;
  set_data(g, v, 0, &seven);
  run(g, v);
  float want[9] = {0, 0, 0, 0, 7, 0, 0, 0, 0};
  expect_same(v->v[out_of(g, node, 0)], want, 9, "enlarge 1x1 -> 3x3");
  done(g, v);
}

/* ---- normalisation ------------------------------------------------------- */

static void check_batchnorm(ir_shape xs, float eps) {
  ir_attrs a = attrs(IR_OP_BATCHNORM);
  a.eps = eps;
  int64_t C = xs.dim[1];
  ir_shape shapes[5] = {xs, SH(C), SH(C), SH(C), SH(C)};
  int node;
  ir_graph *g = graph1(IR_OP_BATCHNORM, &a, 5, shapes, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, xs);
  ex_values *v = values(g);
  fill(g, v, 17);
  for (int64_t c = 0; c < C; c++) /* var in [0.01, 1.01): eps matters */
    v->v[4][c] = 0.01f + fabsf(v->v[4][c]);
  run(g, v);
  int64_t n = ir_shape_numel(&xs), inner = n / (xs.dim[0] * C);
  double *want = dalloc(n);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = (i / inner) % C;
    want[i] = (v->v[0][i] - (double)v->v[3][c]) /
                  sqrt((double)v->v[4][c] + (double)eps) * v->v[1][c] +
              v->v[2][c];
  }
  expect_close(v->v[out], want, n, "batchnorm");
  free(want);
  done(g, v);
}

Test(normalise, batchnorm_4d) { check_batchnorm(SH(2, 3, 4, 5), 1e-5f); }
Test(normalise, batchnorm_3d_big_eps) { check_batchnorm(SH(2, 4, 6), 0.5f); }
Test(normalise, batchnorm_2d) { check_batchnorm(SH(3, 5), 1e-3f); }

/* Softmax of x along axis (normalised). */
static void softmax_ref(const float *x, const ir_shape *s, int axis,
                        double *out) {
  int64_t outer = 1, len = s->dim[axis], inner = 1;
  for (int i = 0; i < axis; i++)
    outer *= s->dim[i];
  for (int i = axis + 1; i < s->rank; i++)
    inner *= s->dim[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < inner; k++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len; j++)
        mx = fmax(mx, x[(o * len + j) * inner + k]);
      for (int64_t j = 0; j < len; j++)
        sum += exp(x[(o * len + j) * inner + k] - mx);
      for (int64_t j = 0; j < len; j++)
        out[(o * len + j) * inner + k] =
            exp(x[(o * len + j) * inner + k] - mx) / sum;
    }
}

static void check_softmax(ir_shape xs, int axis, float scale) {
  ir_attrs a = attrs(IR_OP_SOFTMAX);
  a.axis = axis;
  int node;
  ir_graph *g = graph1(IR_OP_SOFTMAX, &a, 1, &xs, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, xs);
  ex_values *v = values(g);
  fill(g, v, 18);
  int64_t n = ir_shape_numel(&xs);
  for (int64_t i = 0; i < n; i++)
    v->v[0][i] *= scale;
  run(g, v);
  int ax = axis < 0 ? axis + xs.rank : axis;
  double *want = dalloc(n);
  softmax_ref(v->v[0], &xs, ax, want);
  expect_close(v->v[out], want, n, "softmax");
  /* every line along the axis sums to 1 */
  int64_t len = xs.dim[ax], inner = 1;
  for (int i = ax + 1; i < xs.rank; i++)
    inner *= xs.dim[i];
  for (int64_t o = 0; o < n / (len * inner); o++)
    for (int64_t k = 0; k < inner; k++) {
      double sum = 0;
      for (int64_t j = 0; j < len; j++)
        sum += v->v[out][(o * len + j) * inner + k];
      cr_expect(fabs(sum - 1) <= 1e-6, "softmax line (%lld,%lld) sums to %.9g",
                (long long)o, (long long)k, sum);
    }
  free(want);
  done(g, v);
}

Test(normalise, softmax_axis1) { check_softmax(SH(2, 3, 4), 1, 3); }
Test(normalise, softmax_last_axis) { check_softmax(SH(2, 3, 4), -1, 3); }
Test(normalise, softmax_axis0) { check_softmax(SH(5, 2, 3), 0, 3); }

Test(normalise, softmax_large_values_stable) {
  /* inputs up to +-200: exp without subtracting the max overflows */
  check_softmax(SH(3, 7), -1, 200);
}

/* Far below the maximum (the check's large scales) an element's exp is 0
 * exactly, as expf gives it: the line's other values are untouched. */
Test(normalise, softmax_underflow_exact) {
  ir_attrs a = attrs(IR_OP_SOFTMAX);
  ir_shape s = SH(1, 6);
  int node;
  ir_graph *g = graph1(IR_OP_SOFTMAX, &a, 1, &s, &node);
  ex_values *v = values(g);
  float x[6] = {0, -1, -103.5f, -104, -104.5f, -1e30f};
  set_data(g, v, 0, x);
  run(g, v);
  float want[6];
  double sum = 0;
  for (int i = 0; i < 6; i++)
    sum += (want[i] = expf(x[i]));
  for (int i = 0; i < 6; i++)
    want[i] = (float)(want[i] / sum);
  cr_assert(want[2] > 0 && want[4] == 0, "expf's underflow: %g %g", want[2],
            want[4]);
  expect_same(v->v[out_of(g, node, 0)], want, 6, "softmax underflow");
  done(g, v);
}

Test(normalise, softmax_by_hand) {
  ir_attrs a = attrs(IR_OP_SOFTMAX);
  ir_shape s = SH(1, 3);
  int node;
  ir_graph *g = graph1(IR_OP_SOFTMAX, &a, 1, &s, &node);
  ex_values *v = values(g);
  const double ln2 = 0.69314718055994530942;
  float x[3] = {0, (float)ln2, (float)(2 * ln2)}; /* exps ~1:2:4 */
  set_data(g, v, 0, x);
  run(g, v);
  double want[3] = {1.0 / 7, 2.0 / 7, 4.0 / 7}; /* up to float rounding */
  expect_close_tol(v->v[out_of(g, node, 0)], want, 3, 1e-6, "softmax by hand");
  done(g, v);
}

/* Layernorm over axes axis..r-1 (axis normalised), optional gamma/beta. */
static void layernorm_ref(const float *x, const ir_shape *s, int axis,
                          const float *gamma, const float *beta, double eps,
                          double *out) {
  int64_t outer = 1, len = 1;
  for (int i = 0; i < s->rank; i++)
    *(i < axis ? &outer : &len) *= s->dim[i];
  for (int64_t o = 0; o < outer; o++) {
    const float *r = x + o * len;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < len; j++)
      mean += r[j];
    mean /= (double)len;
    for (int64_t j = 0; j < len; j++)
      var += (r[j] - mean) * (r[j] - mean);
    var /= (double)len;
    for (int64_t j = 0; j < len; j++) {
      double y = (r[j] - mean) / sqrt(var + eps);
      out[o * len + j] = y * (gamma ? gamma[j] : 1) + (beta ? beta[j] : 0);
    }
  }
}

static void check_layernorm(ir_shape xs, int axis, int affine) {
  ir_attrs a = attrs(IR_OP_LAYERNORM);
  a.axis = axis;
  int ax = axis < 0 ? axis + xs.rank : axis;
  ir_shape ps;
  memset(&ps, 0, sizeof ps);
  for (int i = ax; i < xs.rank; i++)
    ps.dim[ps.rank++] = xs.dim[i];
  ir_shape shapes[3] = {xs, ps, ps};
  int node;
  ir_graph *g = graph1(IR_OP_LAYERNORM, &a, affine ? 3 : 1, shapes, &node);
  int out = out_of(g, node, 0);
  expect_shape(g, out, xs);
  ex_values *v = values(g);
  fill(g, v, 19);
  int64_t n = ir_shape_numel(&xs), len = ir_shape_numel(&ps);
  for (int64_t i = 0; i < n; i++) /* a non-zero mean per row */
    v->v[0][i] = 2 * v->v[0][i] + (float)(i / len);
  run(g, v);
  double *want = dalloc(n);
  layernorm_ref(v->v[0], &xs, ax, affine ? v->v[1] : NULL,
                affine ? v->v[2] : NULL, a.eps, want);
  expect_close(v->v[out], want, n, "layernorm");
  if (!affine) /* each row: mean 0, variance vin/(vin+eps) ~ 1 */
    for (int64_t o = 0; o < n / len; o++) {
      const float *xr = v->v[0] + o * len, *yr = v->v[out] + o * len;
      double mean = 0, var = 0, xm = 0, vin = 0;
      for (int64_t j = 0; j < len; j++)
        mean += yr[j], xm += xr[j];
      mean /= (double)len, xm /= (double)len;
      for (int64_t j = 0; j < len; j++)
        var += pow(yr[j] - mean, 2), vin += pow(xr[j] - xm, 2);
      var /= (double)len, vin /= (double)len;
      double vwant = vin / (vin + (double)a.eps);
      cr_expect(fabs(mean) < 1e-5 && fabs(var - vwant) < 1e-4 &&
                    fabs(var - 1) < 1e-2,
                "layernorm row %lld: mean %g, variance %g (want %g)",
                (long long)o, mean, var, vwant);
    }
  free(want);
  done(g, v);
}

Test(normalise, layernorm_last_axis) { check_layernorm(SH(2, 3, 4), -1, 0); }
Test(normalise, layernorm_last_axis_affine) {
  check_layernorm(SH(2, 3, 4), -1, 1);
}
Test(normalise, layernorm_axes_1_on) { check_layernorm(SH(2, 3, 4), 1, 0); }
Test(normalise, layernorm_axes_1_on_affine) {
  check_layernorm(SH(2, 3, 4), 1, 1);
}
Test(normalise, layernorm_4d_axis2_affine) {
  check_layernorm(SH(2, 3, 4, 5), 2, 1);
}

/* ---- constants ----------------------------------------------------------- */

/* conv2d(x, const_<op>(kshape)) with pad=same; the graph and values
 * come back through g_out, v_out (the caller frees them).
 * Returns the conv node; *knode gets the constant's node. */
static int conv_with_const(ir_opcode op, ir_shape xs, ir_shape ks, int groups,
                           ir_graph **g_out, ex_values **v_out, int *knode) {
  ir_graph *g = new_graph();
  int32_t in[2];
  in[0] = add_input(g, "x", xs);
  ir_attrs k = attrs(op);
  k.nlist = ks.rank;
  memcpy(k.list, ks.dim, sizeof(int64_t) * (size_t)ks.rank);
  *knode = add_node(g, op, NULL, 0, &k);
  in[1] = out_of(g, *knode, 0);
  expect_shape(g, in[1], ks);
  ir_attrs c = attrs(IR_OP_CONV2D);
  c.padmode = IR_PAD_SAME;
  c.groups = groups;
  int cv = add_node(g, IR_OP_CONV2D, in, 2, &c);
  mark_outputs(g, cv);
  expect_shape(g, out_of(g, cv, 0),
               SH(xs.dim[0], ks.dim[0], xs.dim[2], xs.dim[3]));
  ex_values *v = values(g);
  fill(g, v, 20);
  assert_nonzero(v->v[in[0]], ir_shape_numel(&xs));
  run(g, v);
  *g_out = g, *v_out = v;
  return cv;
}

static void check_iconv(int64_t C, int64_t I, int groups) {
  ir_graph *g;
  ex_values *v;
  int kn;
  ir_shape xs = SH(2, C, 5, 6), ks = SH(C, I, 3, 3);
  int cv = conv_with_const(IR_OP_CONST_ICONV, xs, ks, groups, &g, &v, &kn);
  /* the kernel itself: 1 at [o, o mod I, 1, 1] */
  int64_t nk = C * I * 9;
  float *want = calloc((size_t)nk, sizeof(float));
  cr_assert(want != NULL);
  for (int64_t o = 0; o < C; o++)
    want[((o * I + o % I) * 3 + 1) * 3 + 1] = 1;
  expect_same(v->v[out_of(g, kn, 0)], want, nk, "const_iconv values");
  free(want);
  int64_t n = ir_shape_numel(&xs);
  double *x = dalloc(n);
  for (int64_t i = 0; i < n; i++)
    x[i] = v->v[0][i];
  expect_close_tol(v->v[out_of(g, cv, 0)], x, n, 1e-6, "conv(x, iconv)");
  free(x);
  done(g, v);
}

Test(constants, const_iconv_groups1) { check_iconv(4, 4, 1); }
Test(constants, const_iconv_depthwise) { check_iconv(5, 1, 5); }
Test(constants, const_iconv_grouped) { check_iconv(6, 3, 2); }

Test(constants, const_pool_window_sum) {
  ir_graph *g;
  ex_values *v;
  int kn;
  ir_shape xs = SH(2, 4, 6, 5), ks = SH(4, 1, 3, 3);
  int cv = conv_with_const(IR_OP_CONST_POOL, xs, ks, 4, &g, &v, &kn);
  float ones[36];
  for (int i = 0; i < 36; i++)
    ones[i] = 1;
  expect_same(v->v[out_of(g, kn, 0)], ones, 36, "const_pool values");
  double want[240];
  const float *x = v->v[0];
  for (int p = 0; p < 8; p++)
    for (int y = 0; y < 6; y++)
      for (int xo = 0; xo < 5; xo++) {
        double s = 0;
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++)
            if (y + dy >= 0 && y + dy < 6 && xo + dx >= 0 && xo + dx < 5)
              s += x[(p * 6 + y + dy) * 5 + xo + dx];
        want[(p * 6 + y) * 5 + xo] = s;
      }
  expect_close(v->v[out_of(g, cv, 0)], want, 240, "conv(x, const_pool)");
  done(g, v);
}

Test(constants, const_imm_matmul_identity) {
  for (int batched = 0; batched < 2; batched++) {
    ir_graph *g = new_graph();
    int32_t in[2];
    ir_shape xs = batched ? SH(2, 5, 7) : SH(5, 7);
    in[0] = add_input(g, "x", xs);
    ir_attrs k = attrs(IR_OP_CONST_IMM);
    k.nlist = 2, k.list[0] = k.list[1] = 7;
    int kn = add_node(g, IR_OP_CONST_IMM, NULL, 0, &k);
    in[1] = out_of(g, kn, 0);
    ir_attrs m = attrs(IR_OP_MATMUL);
    int mm = add_node(g, IR_OP_MATMUL, in, 2, &m);
    mark_outputs(g, mm);
    ex_values *v = values(g);
    fill(g, v, 21);
    run(g, v);
    float eye[49] = {0};
    for (int i = 0; i < 7; i++)
      eye[i * 8] = 1;
    expect_same(v->v[in[1]], eye, 49, "const_imm values");
    int64_t n = ir_shape_numel(&xs);
    double *x = dalloc(n);
    for (int64_t i = 0; i < n; i++)
      x[i] = v->v[in[0]][i];
    expect_shape(g, out_of(g, mm, 0), xs);
    expect_close_tol(v->v[out_of(g, mm, 0)], x, n, 1e-6, "matmul(x, I)");
    free(x);
    done(g, v);
  }
}

Test(constants, const_ones) {
  ir_shape shapes[2] = {SH(2, 3, 4), SH(5)};
  for (int k = 0; k < 2; k++) {
    ir_graph *g = new_graph();
    ir_attrs a = attrs(IR_OP_CONST_ONES);
    a.nlist = shapes[k].rank;
    memcpy(a.list, shapes[k].dim, sizeof(int64_t) * (size_t)a.nlist);
    int node = add_node(g, IR_OP_CONST_ONES, NULL, 0, &a);
    mark_outputs(g, node);
    int out = out_of(g, node, 0);
    expect_shape(g, out, shapes[k]);
    ex_values *v = values(g);
    run(g, v);
    float ones[24];
    for (int i = 0; i < 24; i++)
      ones[i] = 1;
    expect_same(v->v[out], ones, ir_shape_numel(&shapes[k]), "const_ones");
    done(g, v);
  }
}

/* ---- dispatch, threads, random values ------------------------------------ */

Test(exec, every_operator_has_a_kernel) {
  for (int op = 0; op < IR_NOPS; op++)
    cr_expect(ex_kernel_of((ir_opcode)op) != NULL, "no kernel for %s",
              ir_op((ir_opcode)op)->name);
  cr_expect(ex_kernel_of((ir_opcode)IR_NOPS) == NULL);
}

/* Runs g on the same seeded values with 1 and with 2 threads; the output
 * must be bit-identical. */
static void check_threads(ir_graph *g, int node) {
  ex_values *v1 = values(g), *v2 = values(g);
  fill(g, v1, 22);
  fill(g, v2, 22);
  run_threads(g, v1, 1);
  run_threads(g, v2, 2);
  run_threads(g, v2, 2); /* a second run overwrites the output */
  int out = out_of(g, node, 0);
  int64_t n = ir_shape_numel(&g->tensors[out].shape);
  assert_nonzero(v1->v[out], n);
  cr_expect(memcmp(v1->v[out], v2->v[out], sizeof(float) * (size_t)n) == 0,
            "%s: 1 and 2 threads differ", ir_op(g->nodes[node].op)->name);
  ex_values_free(v1);
  ex_values_free(v2);
}

Test(exec, conv2d_thread_count_independent) {
  ir_attrs a = attrs(IR_OP_CONV2D);
  a.act = IR_ACT_GELU;
  ir_shape shapes[3] = {SH(2, 12, 15, 13), SH(24, 12, 3, 3), SH(24)};
  int node;
  ir_graph *g = graph1(IR_OP_CONV2D, &a, 3, shapes, &node);
  check_threads(g, node);
  ir_graph_free(g);
}

Test(exec, depthwise_thread_count_independent) {
  ir_attrs a = attrs(IR_OP_CONV2D);
  a.groups = 16;
  ir_shape shapes[2] = {SH(2, 16, 40, 40), SH(16, 1, 3, 3)};
  int node;
  ir_graph *g = graph1(IR_OP_CONV2D, &a, 2, shapes, &node);
  check_threads(g, node);
  ir_graph_free(g);
}

Test(exec, large_matmul_thread_count_independent) {
  ir_attrs a = attrs(IR_OP_MATMUL);
  ir_shape shapes[2] = {SH(1030, 16), SH(16, 3080)};
  int node;
  ir_graph *g = graph1(IR_OP_MATMUL, &a, 2, shapes, &node);
  check_threads(g, node);
  ir_graph_free(g);
}

Test(exec, matmul_thread_count_independent) {
  ir_attrs a = attrs(IR_OP_MATMUL);
  ir_shape shapes[2] = {SH(130, 300), SH(300, 70)};
  int node;
  ir_graph *g = graph1(IR_OP_MATMUL, &a, 2, shapes, &node);
  check_threads(g, node);
  ir_graph_free(g);
}

Test(exec, fill_random_is_seeded) {
  ir_shape s = SH(4, 64);
  ir_attrs a = attrs(IR_OP_RELU);
  int node;
  ir_graph *g = graph1(IR_OP_RELU, &a, 1, &s, &node);
  ex_values *v1 = values(g), *v2 = values(g), *v3 = values(g);
  fill(g, v1, 1234);
  fill(g, v2, 1234);
  fill(g, v3, 1235);
  cr_expect(memcmp(v1->v[0], v2->v[0], sizeof(float) * 256) == 0,
            "same seed, different values");
  int same = 0;
  for (int i = 0; i < 256; i++) {
    same += v1->v[0][i] == v3->v[0][i];
    cr_assert(v1->v[0][i] >= -1 && v1->v[0][i] < 1, "input outside [-1,1)");
  }
  cr_expect(same < 8, "seeds 1234 and 1235 share %d of 256 values", same);
  assert_nonzero(v1->v[0], 256);
  ex_values_free(v1);
  ex_values_free(v2);
  ex_values_free(v3);
  ir_graph_free(g);
}

Test(exec, fill_random_depends_on_name_not_graph) {
  /* the same input name in two different graphs gets the same values */
  ir_shape s = SH(3, 5);
  ir_attrs r = attrs(IR_OP_RELU), t = attrs(IR_OP_TANH);
  int n1, n2;
  ir_graph *g1 = graph1(IR_OP_RELU, &r, 1, &s, &n1);
  ir_graph *g2 = new_graph();
  add_input(g2, "other", SH(7));
  int32_t x = add_input(g2, "x0", s);
  n2 = add_node(g2, IR_OP_TANH, &x, 1, &t);
  mark_outputs(g2, n2);
  ex_values *v1 = values(g1), *v2 = values(g2);
  fill(g1, v1, 5);
  fill(g2, v2, 5);
  cr_expect(memcmp(v1->v[0], v2->v[x], sizeof(float) * 15) == 0);
  cr_expect(memcmp(v2->v[0], v2->v[x], sizeof(float) * 7) != 0,
            "different names, same values");
  done(g1, v1);
  done(g2, v2);
}

Test(exec, random_fill_range) {
  float buf[1000];
  ex_random_fill(buf, 1000, 3, 4, 0.5f, 1.5f);
  double mean = 0;
  for (int i = 0; i < 1000; i++) {
    cr_assert(buf[i] >= 0.5f && buf[i] < 1.5f, "value %g out of range",
              (double)buf[i]);
    mean += buf[i];
  }
  cr_expect(fabs(mean / 1000 - 1) < 0.05, "mean %g, want ~1", mean / 1000);
}

/* ---- erf, sqrt, reduce_mean --------------------------------------------- */

Test(unary, erf_and_sqrt) {
  ir_attrs a = attrs(IR_OP_ERF);
  float *r = unary(IR_OP_ERF, &a);
  double x[NPTS] = {-2, -1, -0.5, 0, 0.5, 1, 2, 7.5};
  for (int i = 0; i < NPTS; i++)
    cr_expect(fabs(r[i] - erf(x[i])) < 1e-6, "erf(%g) = %.9g", x[i],
              (double)r[i]);
  cr_expect(r[3] == 0.0f && fabs(r[5] - 0.8427007929) < 1e-6);
  free(r);
  int node;
  ir_shape s = SH(4);
  ir_graph *g = graph1(IR_OP_SQRT, &a, 1, &s, &node);
  ex_values *v = values(g);
  float in[4] = {0, 1, 2.25f, 16};
  set_data(g, v, 0, in);
  run(g, v);
  float want[4] = {0, 1, 1.5f, 4};
  expect_same(v->v[out_of(g, node, 0)], want, 4, "sqrt");
  done(g, v);
}

/* reduce_mean over the given axes of a [2,3,4] filled with 0..23. */
static void check_reduce(const int64_t *axes, int naxes, int keep,
                         ir_shape want_shape, const float *want) {
  ir_attrs a = attrs(IR_OP_REDUCE_MEAN);
  a.nlist = naxes;
  memcpy(a.list, axes, sizeof(int64_t) * (size_t)naxes);
  a.keepdims = keep;
  ir_shape s = SH(2, 3, 4);
  int node;
  ir_graph *g = graph1(IR_OP_REDUCE_MEAN, &a, 1, &s, &node);
  ex_values *v = values(g);
  float in[24];
  for (int i = 0; i < 24; i++)
    in[i] = (float)i;
  set_data(g, v, 0, in);
  run(g, v);
  int t = out_of(g, node, 0);
  expect_shape(g, t, want_shape);
  expect_same(v->v[t], want, ir_shape_numel(&want_shape), "reduce_mean");
  done(g, v);
}

Test(reduce_mean, last_axis_keepdims) {
  float want[6] = {1.5f, 5.5f, 9.5f, 13.5f, 17.5f, 21.5f};
  check_reduce((int64_t[]){-1}, 1, 1, SH(2, 3, 1), want);
}

Test(reduce_mean, two_axes_dropped) {
  /* mean over axes 0 and 2 of element [i][j][k] = 12i + 4j + k */
  float want[3] = {7.5f, 11.5f, 15.5f};
  check_reduce((int64_t[]){2, 0}, 2, 0, SH(3), want);
}

Test(reduce_mean, all_axes) {
  float want[1] = {11.5f};
  check_reduce((int64_t[]){0, 1, 2}, 3, 0, ir_shape_make(0, NULL), want);
}
