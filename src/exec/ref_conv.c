/* ref_conv.c: reference kernels of the operators built on windows or matrix
 * products: conv2d, matmul, avgpool, maxpool, global_avgpool and enlarge.
 *
 * conv2d lowers each (batch, group) to one ex_gemm: im2col unrolls the input
 * windows into a [Cg*kh*kw, OH*OW] matrix B (skipped for a 1x1, stride 1,
 * unpadded, undilated conv, whose input already is B), the group's weights
 * [Og, Cg*kh*kw] are A, and C lands directly in the output planes. Threads
 * split either the gemm (one group) or the (batch, group) pairs (several
 * groups, each a small gemm); either way each output element is computed by
 * one thread in a fixed order, so results do not depend on the thread count.
 * A filter zero but at the tap that reads each output's own pixel (a 1x1
 * filter enlarged: one_tap) runs as that 1x1 conv, bit for bit.
 * A depthwise conv (one input channel per group) is computed directly
 * instead, a plane per thread: its gemms would be one row each.
 * Pooling sums run in double over one window at a time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "exec_int.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- conv2d ------------------------------------------------------------- */

/* Sizes of one conv2d call, from its shapes and attributes. */
typedef struct conv_geom {
  int64_t n, c, h, w;     /* input [N,C,H,W] */
  int64_t o, kh, kw;      /* weights [O,C/groups,kh,kw] */
  int64_t oh, ow;         /* output [N,O,OH,OW] */
  int64_t groups, cg, og; /* groups, input and output channels per group */
  int64_t k, p;           /* gemm depth Cg*kh*kw and width OH*OW */
  int64_t sh, sw, dh, dw, pt, pl; /* stride, dilation, top and left pad */
  int pointwise; /* 1x1, stride 1, no pad (dilation moot): no im2col */
} conv_geom;

static conv_geom conv_geom_of(const ir_node *n, const ex_arg *in,
                              const ex_arg *out) {
  const ir_attrs *a = &n->a;
  conv_geom g;
  g.n = in[0].shape.dim[0], g.c = in[0].shape.dim[1];
  g.h = in[0].shape.dim[2], g.w = in[0].shape.dim[3];
  g.o = in[1].shape.dim[0], g.kh = in[1].shape.dim[2];
  g.kw = in[1].shape.dim[3];
  g.oh = out[0].shape.dim[2], g.ow = out[0].shape.dim[3];
  g.groups = a->groups, g.cg = g.c / g.groups, g.og = g.o / g.groups;
  g.k = g.cg * g.kh * g.kw, g.p = g.oh * g.ow;
  g.sh = a->stride[0], g.sw = a->stride[1];
  g.dh = a->dilation[0], g.dw = a->dilation[1];
  g.pt = a->pad[0], g.pl = a->pad[1];
  g.pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 &&
                a->pad[0] == 0 && a->pad[1] == 0 && a->pad[2] == 0 &&
                a->pad[3] == 0;
  return g;
}

/* Output columns [*x0, *x1) whose input column ox * sw + off lies inside
 * [0, w): the part of a row that one kernel column kx (off = kx * dw - pl)
 * reads without padding (*x1 >= *x0). */
static void dw_span(const conv_geom *g, int64_t off, int64_t *x0, int64_t *x1) {
  *x0 = off < 0 ? (-off + g->sw - 1) / g->sw : 0;
  *x1 = g->w - 1 - off < 0 ? 0 : (g->w - 1 - off) / g->sw + 1;
  if (*x1 > g->ow)
    *x1 = g->ow;
  if (*x0 > *x1)
    *x0 = *x1;
}

/* One row of the im2col matrix: input channel plane x at window offset
 * (ky, kx), for every output position: zeros where the window reads
 * padding, the input row's span (dw_span) in between, copied whole for
 * stride 1. */
static void im2col_row(const conv_geom *g, const float *x, int64_t ky,
                       int64_t kx, float *row) {
  int64_t off = kx * g->dw - g->pl, x0, x1;
  dw_span(g, off, &x0, &x1);
  for (int64_t oy = 0; oy < g->oh; oy++) {
    int64_t iy = oy * g->sh - g->pt + ky * g->dh;
    float *r = row + oy * g->ow;
    if (iy < 0 || iy >= g->h) {
      memset(r, 0, (size_t)g->ow * sizeof(float));
      continue;
    }
    const float *xr = x + iy * g->w;
    memset(r, 0, (size_t)x0 * sizeof(float));
    if (g->sw == 1)
      memcpy(r + x0, xr + x0 + off, (size_t)(x1 - x0) * sizeof(float));
    else
      for (int64_t ox = x0; ox < x1; ox++)
        r[ox] = xr[ox * g->sw + off];
    memset(r + x1, 0, (size_t)(g->ow - x1) * sizeof(float));
  }
}

/* col[Cg*kh*kw, OH*OW] from the Cg channel planes starting at x. */
static void im2col(const conv_geom *g, const float *x, float *col, int par) {
  int64_t khw = g->kh * g->kw;
  (void)par;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (par && g->k * g->p >= EX_PAR_MIN)
#endif
  for (int64_t r = 0; r < g->k; r++) {
    const float *plane = x + r / khw * g->h * g->w;
    int64_t ky = r % khw / g->kw, kx = r % g->kw;
    im2col_row(g, plane, ky, kx, col + r * g->p);
  }
}

/* Output planes of group gi of batch b = weights x (im2col of the input).
 * col is scratch of g->k * g->p floats (unused when pointwise). */
static void conv_pair(const conv_geom *g, const float *x, const float *w,
                      float *y, int64_t b, int64_t gi, float *col, int par) {
  const float *xs = x + (b * g->c + gi * g->cg) * g->h * g->w;
  const float *bm = xs;
  if (!g->pointwise) {
    im2col(g, xs, col, par);
    bm = col;
  }
  float *ys = y + (b * g->o + gi * g->og) * g->p;
  ex_gemm(g->og, g->p, g->k, w + gi * g->og * g->k, g->k, bm, g->p, ys, g->p,
          0);
}

/* One group: pairs in order, threads inside im2col and the gemm. */
static base_status conv_serial(const conv_geom *g, const float *x,
                               const float *w, float *y) {
  float *col = NULL;
  if (!g->pointwise) {
    col = base_malloc((size_t)(g->k * g->p) * sizeof(float));
    if (!col)
      return BASE_ERR_NOMEM;
  }
  for (int64_t b = 0; b < g->n; b++)
    for (int64_t gi = 0; gi < g->groups; gi++)
      conv_pair(g, x, w, y, b, gi, col, 1);
  free(col);
  return BASE_OK;
}

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static int thread_num(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* Several groups: threads take whole (batch, group) pairs, each with its
 * own im2col scratch; the gemm inside runs on its thread alone. */
static base_status conv_pairs_parallel(const conv_geom *g, const float *x,
                                       const float *w, float *y) {
  int nt = max_threads();
  size_t per = g->pointwise ? 0 : (size_t)(g->k * g->p);
  float *col = NULL;
  if (per) {
    col = base_malloc((size_t)nt * per * sizeof(float));
    if (!col)
      return BASE_ERR_NOMEM;
  }
  int64_t npairs = g->n * g->groups;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt)
#endif
  for (int64_t i = 0; i < npairs; i++) {
    float *mine = col ? col + (size_t)thread_num() * per : NULL;
    conv_pair(g, x, w, y, i / g->groups, i % g->groups, mine, 0);
  }
  free(col);
  return BASE_OK;
}

/* One output plane of a depthwise conv: plane x correlated with the
 * kh x kw kernel w. Each element sums its window in (ky, kx) order, as the
 * gemm would, padding left out; rows run contiguously for stride 1. */
static void dw_plane(const conv_geom *g, const float *x, const float *w,
                     float *y) {
  memset(y, 0, (size_t)g->p * sizeof(float));
  for (int64_t oy = 0; oy < g->oh; oy++) {
    float *yr = y + oy * g->ow;
    for (int64_t ky = 0; ky < g->kh; ky++) {
      int64_t iy = oy * g->sh - g->pt + ky * g->dh;
      if (iy < 0 || iy >= g->h)
        continue;
      const float *xr = x + iy * g->w;
      for (int64_t kx = 0; kx < g->kw; kx++) {
        int64_t off = kx * g->dw - g->pl, x0, x1;
        float wv = w[ky * g->kw + kx];
        dw_span(g, off, &x0, &x1);
        if (g->sw == 1)
          for (int64_t ox = x0; ox < x1; ox++)
            yr[ox] += wv * xr[ox + off];
        else
          for (int64_t ox = x0; ox < x1; ox++)
            yr[ox] += wv * xr[ox * g->sw + off];
      }
    }
  }
}

/* Depthwise (Cg = 1, any Og): output plane (b, o) from input plane
 * (b, o / Og) and o's kernel, a plane per thread. */
static void conv_depthwise(const conv_geom *g, const float *x, const float *w,
                           float *y) {
  int64_t planes = g->n * g->o, khw = g->kh * g->kw;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (planes * g->p * khw >= EX_PAR_MIN)
#endif
  for (int64_t pl = 0; pl < planes; pl++) {
    int64_t b = pl / g->o, o = pl % g->o;
    dw_plane(g, x + (b * g->c + o / g->og) * g->h * g->w, w + o * khw,
             y + pl * g->p);
  }
}

/* y[b, o, :, :] += bias[o] for every output plane. */
static void add_channel_bias(float *y, const float *bias, int64_t n, int64_t c,
                             int64_t len) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n * c * len >= EX_PAR_MIN)
#endif
  for (int64_t pl = 0; pl < n * c; pl++) {
    float bv = bias[pl % c], *p = y + pl * len;
    for (int64_t i = 0; i < len; i++)
      p[i] += bv;
  }
}

/* y += r, element by element: a residual input (conv2d's and matmul's
 * fourth), added before the activation. */
static void add_residual(float *y, const float *r, int64_t n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= EX_PAR_MIN)
#endif
  for (int64_t i = 0; i < n; i++)
    y[i] += r[i];
}

/* act=clip: y clamped to [lo, hi] as clip computes it (ref_ew.c). */
static void clamp(float *y, int64_t n, float lo, float hi) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= EX_PAR_MIN)
#endif
  for (int64_t i = 0; i < n; i++) {
    float v = y[i] < lo ? lo : y[i];
    y[i] = v > hi ? hi : v;
  }
}

/* A filter zero but at the one tap that reads each output position's own
 * input pixel (stride 1, that tap's offset the padding, the output the
 * input's size): TASO's enlarge of a 1x1 filter (r00041 and the merges
 * that enlarge). Its [O, Cg] values at that tap in *out (the caller frees
 * them), to run as the 1x1 conv it equals: the same gemm on the same
 * operands, so the same bits as the conv before the enlarge, where im2col
 * would sum the same non-zero terms in another order (the check's float32
 * comparisons then saw rounding). 0 when the filter is no such one (or
 * out of memory: the conv then runs as written). */
static int one_tap(const conv_geom *g, const float *w, float **out) {
  int64_t khw = g->kh * g->kw;
  if (khw == 1 || g->sh != 1 || g->sw != 1 || g->oh != g->h || g->ow != g->w ||
      g->pt % g->dh || g->pl % g->dw)
    return 0;
  int64_t ky = g->pt / g->dh, kx = g->pl / g->dw, at = ky * g->kw + kx;
  if (ky >= g->kh || kx >= g->kw)
    return 0;
  int64_t rows = g->o * g->cg;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t t = 0; t < khw; t++)
      if (t != at && w[r * khw + t] != 0.0f)
        return 0;
  float *c = base_malloc((size_t)rows * sizeof *c);
  if (!c)
    return 0;
  for (int64_t r = 0; r < rows; r++)
    c[r] = w[r * khw + at];
  *out = c;
  return 1;
}

base_status ex_ref_conv2d(const ir_node *n, const ex_arg *in, ex_arg *out) {
  conv_geom g = conv_geom_of(n, in, out);
  base_status st = BASE_OK;
  const float *w = in[1].data;
  float *w1 = NULL;
  if (!(g.groups > 1 && g.cg == 1) && one_tap(&g, w, &w1)) {
    g.kh = g.kw = 1, g.k = g.cg, g.pt = g.pl = 0, g.pointwise = 1;
    w = w1;
  }
  if (g.groups > 1 && g.cg == 1)
    conv_depthwise(&g, in[0].data, w, out[0].data);
  else if (g.groups > 1)
    st = conv_pairs_parallel(&g, in[0].data, w, out[0].data);
  else
    st = conv_serial(&g, in[0].data, w, out[0].data);
  free(w1);
  if (st != BASE_OK)
    return st;
  if (n->nin > 2)
    add_channel_bias(out[0].data, in[2].data, g.n, g.o, g.p);
  if (n->nin > 3)
    add_residual(out[0].data, in[3].data, ir_shape_numel(&out[0].shape));
  if (n->a.act == IR_ACT_CLIP)
    clamp(out[0].data, ir_shape_numel(&out[0].shape), n->a.lo, n->a.hi);
  else
    ex_activate(out[0].data, ir_shape_numel(&out[0].shape), n->a.act);
  return BASE_OK;
}

/* ---- matmul ------------------------------------------------------------- */

/* Batched product with b of a's rank: one gemm per batch. Small products
 * are spread over threads by batch, large ones by the gemm itself. */
static void matmul_batched(int64_t batch, int64_t m, int64_t nn, int64_t k,
                           const float *a, const float *b, float *y) {
#ifdef _OPENMP
  int par = batch > 1 && m * nn * k < EX_PAR_MIN * 4;
#pragma omp parallel for schedule(static) if (par)
#endif
  for (int64_t i = 0; i < batch; i++)
    ex_gemm(m, nn, k, a + i * m * k, k, b + i * k * nn, nn, y + i * m * nn, nn,
            0);
}

/* y[r, :] += bias for each of the rows rows of nn. */
static void add_row_bias(float *y, const float *bias, int64_t rows,
                         int64_t nn) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * nn >= EX_PAR_MIN)
#endif
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < nn; j++)
      y[r * nn + j] += bias[j];
}

/* a [...,M,K] x b [K,N] or [...,K,N], + bias [N], + r, then act. */
base_status ex_ref_matmul(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *as = &in[0].shape;
  int64_t m = as->dim[as->rank - 2], k = as->dim[as->rank - 1];
  int64_t nn = ex_last_dim(&out[0].shape);
  int64_t batch = m * k > 0 ? ir_shape_numel(as) / (m * k) : 0;
  float *y = out[0].data;
  if (in[1].shape.rank == 2) /* shared b: the batches stack into rows */
    ex_gemm(batch * m, nn, k, in[0].data, k, in[1].data, nn, y, nn, 0);
  else
    matmul_batched(batch, m, nn, k, in[0].data, in[1].data, y);
  if (n->nin > 2)
    add_row_bias(y, in[2].data, batch * m, nn);
  if (n->nin > 3)
    add_residual(y, in[3].data, batch * m * nn);
  ex_activate(y, batch * m * nn, n->a.act);
  return BASE_OK;
}

/* ---- pooling ------------------------------------------------------------ */

/* Window geometry of a pool: kernel, stride, top/left pad, sizes. */
typedef struct pool_geom {
  int64_t kh, kw, sh, sw, pt, pl;
  int64_t h, w, oh, ow, planes;
} pool_geom;

static pool_geom pool_geom_of(const ir_node *n, const ex_arg *in,
                              const ex_arg *out) {
  pool_geom g;
  g.kh = n->a.kernel[0], g.kw = n->a.kernel[1];
  g.sh = n->a.stride[0], g.sw = n->a.stride[1];
  g.pt = n->a.pad[0], g.pl = n->a.pad[1];
  g.h = in[0].shape.dim[2], g.w = in[0].shape.dim[3];
  g.oh = out[0].shape.dim[2], g.ow = out[0].shape.dim[3];
  g.planes = in[0].shape.dim[0] * in[0].shape.dim[1];
  return g;
}

/* The part of window (oy, ox) inside the unpadded input: [y0,y1) x [x0,x1). */
typedef struct window {
  int64_t y0, y1, x0, x1;
} window;

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

static window window_at(const pool_geom *g, int64_t oy, int64_t ox) {
  int64_t y = oy * g->sh - g->pt, x = ox * g->sw - g->pl;
  window r = {clamp64(y, 0, g->h), clamp64(y + g->kh, 0, g->h),
              clamp64(x, 0, g->w), clamp64(x + g->kw, 0, g->w)};
  return r;
}

/* Mean of one window; an all-padding window (count 0, possible only with
 * count_include_pad=0 and pads of a kernel's size) gives 0. */
static float avg_window(const pool_geom *g, const float *x, window r,
                        int include_pad) {
  double sum = 0.0;
  for (int64_t y = r.y0; y < r.y1; y++)
    for (int64_t xx = r.x0; xx < r.x1; xx++)
      sum += x[y * g->w + xx];
  int64_t count = include_pad ? g->kh * g->kw : (r.y1 - r.y0) * (r.x1 - r.x0);
  return count > 0 ? (float)(sum / (double)count) : 0.0f;
}

/* Max of one window, padding excluded; an all-padding window gives 0. */
static float max_window(const pool_geom *g, const float *x, window r) {
  if (r.y0 >= r.y1 || r.x0 >= r.x1)
    return 0.0f;
  float m = x[r.y0 * g->w + r.x0];
  for (int64_t y = r.y0; y < r.y1; y++)
    for (int64_t xx = r.x0; xx < r.x1; xx++)
      m = x[y * g->w + xx] > m ? x[y * g->w + xx] : m;
  return m;
}

/* Pools every plane; is_max selects max, else mean (with include_pad). */
static void pool(const pool_geom *g, const float *x, float *y, int is_max,
                 int include_pad) {
#ifdef _OPENMP
  int par = g->planes * g->h * g->w >= EX_PAR_MIN;
#pragma omp parallel for schedule(static) if (par)
#endif
  for (int64_t p = 0; p < g->planes; p++) {
    const float *xp = x + p * g->h * g->w;
    float *yp = y + p * g->oh * g->ow;
    for (int64_t oy = 0; oy < g->oh; oy++)
      for (int64_t ox = 0; ox < g->ow; ox++) {
        window r = window_at(g, oy, ox);
        yp[oy * g->ow + ox] =
            is_max ? max_window(g, xp, r) : avg_window(g, xp, r, include_pad);
      }
  }
}

base_status ex_ref_avgpool(const ir_node *n, const ex_arg *in, ex_arg *out) {
  pool_geom g = pool_geom_of(n, in, out);
  pool(&g, in[0].data, out[0].data, 0, n->a.count_include_pad);
  return BASE_OK;
}

base_status ex_ref_maxpool(const ir_node *n, const ex_arg *in, ex_arg *out) {
  pool_geom g = pool_geom_of(n, in, out);
  pool(&g, in[0].data, out[0].data, 1, 0);
  return BASE_OK;
}

/* [N,C,H,W] -> [N,C,1,1]: the mean of each plane. */
base_status ex_ref_global_avgpool(const ir_node *n, const ex_arg *in,
                                  ex_arg *out) {
  (void)n;
  const ir_shape *s = &in[0].shape;
  int64_t planes = s->dim[0] * s->dim[1], len = s->dim[2] * s->dim[3];
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (planes * len >= EX_PAR_MIN)
#endif
  for (int64_t p = 0; p < planes; p++) {
    const float *x = in[0].data + p * len;
    double sum = 0.0;
    for (int64_t i = 0; i < len; i++)
      sum += x[i];
    out[0].data[p] = (float)(sum / (double)len);
  }
  return BASE_OK;
}

/* ---- squeeze-and-excitation ---------------------------------------------- */

/* y = act(b + w v) for a w [rows, len] (b may be NULL). */
static void se_fc(const float *w, const float *b, const float *v, int64_t rows,
                  int64_t len, int act, float *y) {
  for (int64_t r = 0; r < rows; r++) {
    float a = 0.0f;
    for (int64_t j = 0; j < len; j++)
      a += w[r * len + j] * v[j];
    y[r] = a + (b ? b[r] : 0.0f);
  }
  ex_activate(y, rows, act);
}

/* x [N,C,H,W] -> [N,C2,1,1]: per sample the plane means p, h = act(b1 + w1
 * p), y = clip(act2(b2 + w2 h), min, max). */
base_status ex_ref_se(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *s = &in[0].shape;
  int64_t c = s->dim[1], len = s->dim[2] * s->dim[3];
  int64_t r = in[1].shape.dim[0], c2 = in[2].shape.dim[0];
  const float *b1 = n->nin > 3 ? in[3].data : NULL,
              *b2 = n->nin > 4 ? in[4].data : NULL;
  float *buf = base_malloc((size_t)(c + r) * sizeof(float));
  if (!buf)
    return BASE_ERR_NOMEM;
  for (int64_t k = 0; k < s->dim[0]; k++) {
    for (int64_t ch = 0; ch < c; ch++) {
      const float *x = in[0].data + (k * c + ch) * len;
      double sum = 0.0;
      for (int64_t i = 0; i < len; i++)
        sum += x[i];
      buf[ch] = (float)(sum / (double)len);
    }
    float *y = out[0].data + k * c2;
    se_fc(in[1].data, b1, buf, r, c, n->a.groups, buf + c);
    se_fc(in[2].data, b2, buf + c, c2, r, n->a.axis, y);
    for (int64_t o = 0; o < c2; o++) {
      float v = y[o] < n->a.lo ? n->a.lo : y[o];
      y[o] = v > n->a.hi ? n->a.hi : v;
    }
  }
  free(buf);
  return BASE_OK;
}

/* ---- enlarge ------------------------------------------------------------ */

/* w [O,I,h,w] -> [O,I,KH,KW]: w centred in zeros. */
base_status ex_ref_enlarge(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  const ir_shape *s = &in[0].shape, *os = &out[0].shape;
  int64_t planes = s->dim[0] * s->dim[1], h = s->dim[2], w = s->dim[3];
  int64_t kh = os->dim[2], kw = os->dim[3];
  int64_t oy = (kh - h) / 2, ox = (kw - w) / 2;
  memset(out[0].data, 0, (size_t)(planes * kh * kw) * sizeof(float));
  for (int64_t p = 0; p < planes; p++)
    for (int64_t y = 0; y < h; y++)
      memcpy(out[0].data + (p * kh + oy + y) * kw + ox,
             in[0].data + (p * h + y) * w, (size_t)w * sizeof(float));
  return BASE_OK;
}
