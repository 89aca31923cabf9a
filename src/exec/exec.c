/* exec.c: the CPU executor's driver: kernel dispatch, value buffers, seeded
 * random inputs and weights, and running a graph node by node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "exec.h"
#include "exec_int.h"

static const ex_kernel kernels[IR_NOPS] = {
#define OP(ID, name, inputs, params, ...) [IR_OP_##ID] = ex_ref_##name,
#include "../ir/ops.def"
#undef OP
};

ex_kernel ex_kernel_of(ir_opcode op) {
  return (unsigned)op < IR_NOPS ? kernels[op] : NULL;
}

ex_values *ex_values_new(const ir_graph *g) {
  ex_values *v = base_calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->n = g->ntensors;
  v->v = base_calloc((size_t)g->ntensors + 1, sizeof(float *));
  if (!v->v) {
    free(v);
    return NULL;
  }
  return v;
}

void ex_values_free(ex_values *v) {
  if (!v)
    return;
  for (int i = 0; i < v->n; i++)
    free(v->v[i]);
  free(v->v);
  free(v);
}

/* ---- random values ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

/* Element i depends on (seed, key, i) alone, so the threads, each taking
 * a range of i, give the same values as one thread. */
void ex_random_fill(float *dst, int64_t n, uint64_t seed, uint64_t key,
                    float lo, float hi) {
  uint64_t base = splitmix64(seed ^ splitmix64(key));
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= EX_PAR_MIN)
#endif
  for (int64_t i = 0; i < n; i++) {
    /* 24 random bits -> [0,1) exactly representable in float */
    float u =
        (float)(splitmix64(base + (uint64_t)i) >> 40) * (1.0f / 16777216.0f);
    dst[i] = lo + (hi - lo) * u;
  }
}

/* Fan-in of a weight read by op: I*kh*kw for a conv kernel [O,I,kh,kw]
 * (an se node's filters too), K for a matmul operand [...,K,N]. */
static float fan_in(ir_opcode op, const ir_shape *s) {
  if ((op == IR_OP_CONV2D || op == IR_OP_SE) && s->rank == 4)
    return (float)(s->dim[1] * s->dim[2] * s->dim[3]);
  return s->rank >= 2 ? (float)s->dim[s->rank - 2] : 1.0f;
}

/* How a weight is drawn: the hint of the first hinted input slot among its
 * readers, in node order. A reader that is a weight-only node with an
 * unhinted slot and an output of the weight's rank (w * folded scale,
 * weights concatenated for a merged matmul, an enlarged kernel), or a
 * weight-only reshape (a kernel [O,I,kh,kw] read by a product as
 * [O,I*kh*kw]: ViT's patch embedding as a matmul), passes on the hint of
 * the slots its result feeds, followed up to 8 such steps; *op is the
 * operator whose slot decided, *at the shape it reads there, and *viewed
 * says a reshape was passed. All readers are asked, not only the first, so
 * that a rewrite that puts a view or a fused node before a weight's
 * convolution (an optimized graph) draws the values the original drew. */
static ir_init_hint weight_hint_at(const ir_graph *g, int t, int rank,
                                   const unsigned char *wonly, ir_opcode *op,
                                   const ir_shape **at, int *viewed,
                                   int depth) {
  for (int i = 0; depth < 8 && i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->nin; k++) {
      if (n->in[k] != t)
        continue;
      ir_init_hint h = ir_node_in_hint(n, k, op);
      if (h != IR_INIT_UNIFORM) {
        *at = &g->tensors[t].shape;
        return h;
      }
      int view = n->op == IR_OP_RESHAPE, out = n->out[0];
      if (!wonly || n->nout != 1 || !wonly[i] ||
          (!view && g->tensors[out].shape.rank != rank))
        continue;
      int seen = *viewed;
      *viewed |= view;
      h = weight_hint_at(g, out, g->tensors[out].shape.rank, wonly, op, at,
                         viewed, depth + 1);
      if (h != IR_INIT_UNIFORM)
        return h;
      *viewed = seen;
    }
  }
  *op = IR_OP_RELU;
  return IR_INIT_UNIFORM;
}

/* The hint of weight t, its deciding operator in *op and in *fan the shape
 * whose fan-in counts: the weight's own, or, past a reshape, the one its
 * deciding reader reads. */
static ir_init_hint weight_hint(const ir_graph *g, int t,
                                const unsigned char *wonly, ir_opcode *op,
                                const ir_shape **fan) {
  const ir_shape *at = NULL;
  int viewed = 0;
  ir_init_hint h = weight_hint_at(g, t, g->tensors[t].shape.rank, wonly, op,
                                  &at, &viewed, 0);
  *fan = viewed && at ? at : &g->tensors[t].shape;
  return h;
}

/* Seeded random integers for an int64 or bool tensor: indices in range of
 * every gather that reads t as its indices (the smallest such dimension),
 * else 0 or 1 (masks). */
static void fill_ints(const ir_graph *g, int t, float *dst, int64_t n,
                      uint64_t seed, uint64_t key) {
  int64_t bound = 0;
  for (int i = 0; g->tensors[t].dtype == IR_DT_I64 && i < g->nnodes; i++) {
    const ir_node *m = &g->nodes[i];
    if (m->op == IR_OP_GATHER && m->in[1] == t) {
      int64_t dim = g->tensors[m->in[0]].shape.dim[m->a.axis];
      bound = bound && bound < dim ? bound : dim;
    }
  }
  bound = bound > 0 ? bound : 2;
  if (bound > IR_I64_EXACT)
    bound = IR_I64_EXACT;
  ex_random_fill(dst, n, seed, key, 0.0f, 1.0f);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = (int64_t)(dst[i] * (float)bound);
    dst[i] = (float)(v < bound ? v : bound - 1);
  }
}

/* scale multiplies every float value drawn (ex_fill_random_scaled) but
 * those of gains: fan-in weights (convolution kernels, matmul weights),
 * whose 1/sqrt(fan-in) keeps a deep network's activations from growing at
 * every layer, and positive ones (batchnorm and layernorm scales and
 * variances, divisors), which would multiply them by sqrt(scale) at every
 * batchnorm. Inputs, biases, means and the other weights are scaled: they
 * offset every layer's activations by about the scale. */
static void fill_tensor(const ir_graph *g, int t, float *dst, uint64_t seed,
                        float scale, const unsigned char *wonly) {
  const ir_tensor *x = &g->tensors[t];
  int64_t n = ir_shape_numel(&x->shape);
  uint64_t key = XXH3_64bits(x->name, strlen(x->name));
  if (!ir_dtype_is_float((ir_dtype)x->dtype)) {
    fill_ints(g, t, dst, n, seed, key);
    return;
  }
  ir_opcode op = IR_OP_RELU;
  const ir_shape *fan = &x->shape;
  ir_init_hint h = x->kind == IR_T_WEIGHT ? weight_hint(g, t, wonly, &op, &fan)
                                          : IR_INIT_UNIFORM;
  float s = h == IR_INIT_FAN ? 1.0f / sqrtf(fan_in(op, fan)) : 1.0f;
  switch (h) {
  case IR_INIT_POS: ex_random_fill(dst, n, seed, key, 0.5f, 1.5f); break;
  case IR_INIT_SMALL: ex_random_fill(dst, n, seed, key, -0.1f, 0.1f); break;
  default: ex_random_fill(dst, n, seed, key, -s, s); break;
  }
  int gain = h == IR_INIT_FAN || h == IR_INIT_POS;
  for (int64_t i = 0; !gain && scale != 1.0f && i < n; i++)
    dst[i] *= scale;
}

base_status ex_fill_random(const ir_graph *g, ex_values *v, uint64_t seed,
                           base_diag *d) {
  return ex_fill_random_scaled(g, v, seed, 1.0f, d);
}

base_status ex_fill_random_scaled(const ir_graph *g, ex_values *v,
                                  uint64_t seed, float scale, base_diag *d) {
  return ex_fill_random_as(g, v, seed, scale, 0, d);
}

/* Whether weight t of g is one ex_fill_random_as draws with redraw: known
 * float data read as a fan-in weight (wonly: ir_weight_only's marks). */
static int redraws(const ir_graph *g, int t, const unsigned char *wonly) {
  const ir_tensor *x = &g->tensors[t];
  ir_opcode op;
  const ir_shape *fan;
  return x->kind == IR_T_WEIGHT && x->data &&
         ir_dtype_is_float((ir_dtype)x->dtype) &&
         weight_hint(g, t, wonly, &op, &fan) == IR_INIT_FAN;
}

base_status ex_fill_random_as(const ir_graph *g, ex_values *v, uint64_t seed,
                              float scale, int redraw, base_diag *d) {
  unsigned char *wonly = base_malloc((size_t)g->nnodes + 1);
  if (!wonly)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ir_weight_only(g, wonly);
  for (int t = 0; t < g->ntensors; t++) {
    const ir_tensor *x = &g->tensors[t];
    if (x->kind == IR_T_VALUE || v->v[t])
      continue;
    size_t n = (size_t)ir_shape_numel(&x->shape);
    v->v[t] = base_malloc(sizeof(float) * n);
    if (!v->v[t]) {
      free(wonly);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory for '%s'",
                           x->name);
    }
    if (x->data && !(redraw && redraws(g, t, wonly)))
      memcpy(v->v[t], x->data, sizeof(float) * n);
    else
      fill_tensor(g, t, v->v[t], seed, scale, wonly);
    /* a half tensor holds values of its type (ir.h, half precision) */
    ir_dtype_round_n(v->v[t], (int64_t)n, (ir_dtype)x->dtype);
  }
  free(wonly);
  return BASE_OK;
}

/* ---- running ------------------------------------------------------------- */

/* Freed value buffers kept for reuse within one ex_run: large buffers come
 * from mmap and go back to the system on free, so a fresh one per node costs
 * a page fault per 4 KiB on first touch (ViT-B/16 at batch 16: a quarter of
 * a run's CPU time in the kernel). A buffer is reused for a tensor of
 * cap/2 < size <= cap elements (best fit); the pool holds at most POOL_MAX,
 * dropping its smallest when full. Kernels write all of their outputs, so
 * a reused buffer's old contents never show. */
enum { POOL_MAX = 32 };

typedef struct ex_pool {
  float *buf[POOL_MAX];
  size_t cap[POOL_MAX]; /* elements */
  int n;
  size_t *tcap; /* per tensor: elements of its buffer (0: not pooled) */
} ex_pool;

/* A buffer of at least n elements: a pooled one that fits, else new. */
static float *pool_get(ex_pool *p, int t, size_t n) {
  int best = -1;
  for (int i = 0; i < p->n; i++)
    if (p->cap[i] >= n && p->cap[i] / 2 < n &&
        (best < 0 || p->cap[i] < p->cap[best]))
      best = i;
  if (best < 0) {
    p->tcap[t] = n;
    return base_malloc(sizeof(float) * (n > 0 ? n : 1));
  }
  float *b = p->buf[best];
  p->tcap[t] = p->cap[best];
  p->n--;
  p->buf[best] = p->buf[p->n];
  p->cap[best] = p->cap[p->n];
  return b;
}

/* Tensor t's buffer b (allocated by pool_get) back into the pool. */
static void pool_put(ex_pool *p, int t, float *b) {
  size_t cap = p->tcap[t];
  p->tcap[t] = 0;
  if (!b || cap == 0) {
    free(b);
    return;
  }
  if (p->n == POOL_MAX) {
    int small = 0;
    for (int i = 1; i < p->n; i++)
      if (p->cap[i] < p->cap[small])
        small = i;
    if (p->cap[small] >= cap) {
      free(b);
      return;
    }
    free(p->buf[small]);
    p->buf[small] = b;
    p->cap[small] = cap;
    return;
  }
  p->buf[p->n] = b;
  p->cap[p->n++] = cap;
}

static void pool_free(ex_pool *p) {
  for (int i = 0; i < p->n; i++)
    free(p->buf[i]);
  free(p->tcap);
}

/* A reshape that is its input's last reader takes the input's buffer
 * instead of copying it (same elements, same order): 1 when it did. */
static int reshape_in_place(const ir_graph *g, const ir_node *n, ex_values *v,
                            ex_pool *pool, const int *uses) {
  if (n->op != IR_OP_RESHAPE || !uses || n->nin != 1 || n->nout != 1)
    return 0;
  int x = n->in[0], y = n->out[0];
  if (uses[x] != 1 || g->tensors[x].kind != IR_T_VALUE || !v->v[x] ||
      pool->tcap[x] == 0)
    return 0;
  pool_put(pool, y, v->v[y]);
  v->v[y] = v->v[x];
  pool->tcap[y] = pool->tcap[x];
  v->v[x] = NULL;
  pool->tcap[x] = 0;
  return 1;
}

static base_status run_node(const ir_graph *g, const ir_node *n, ex_values *v,
                            ex_pool *pool, base_diag *d) {
  ex_arg in[IR_MAX_IN], out[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++) {
    in[k].shape = g->tensors[n->in[k]].shape;
    in[k].data = v->v[n->in[k]];
    if (!in[k].data)
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "input '%s' of %s has no value",
                           g->tensors[n->in[k]].name, ir_op(n->op)->name);
  }
  for (int k = 0; k < n->nout; k++) {
    int t = n->out[k];
    const ir_tensor *x = &g->tensors[t];
    pool_put(pool, t, v->v[t]);
    v->v[t] = pool_get(pool, t, (size_t)ir_shape_numel(&x->shape));
    if (!v->v[t])
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory for '%s'",
                           x->name);
    out[k].shape = x->shape;
    out[k].data = v->v[t];
  }
  base_status st = kernels[n->op](n, in, out);
  if (st)
    return base_diag_set(d, st, 0, 0, "%s failed: %s", ir_op(n->op)->name,
                         st == BASE_ERR_PARAM ? "an index is out of range"
                                              : base_status_name(st));
  for (int k = 0; k < n->nout; k++) /* computed in float32, stored in half */
    ir_dtype_round_n(out[k].data, ir_shape_numel(&out[k].shape),
                     (ir_dtype)g->tensors[n->out[k]].dtype);
  return BASE_OK;
}

base_status ex_run(const ir_graph *g, ex_values *v, const ex_options *o,
                   base_diag *d) {
  int keep = o && o->keep_all;
#ifdef _OPENMP
  if (o && o->threads > 0)
    omp_set_num_threads(o->threads);
#endif
  if (v->n != g->ntensors)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "values do not fit the graph");
  /* remaining reads of each tensor (an output's one more: it survives) */
  int *uses = keep ? NULL : ir_read_counts(g);
  ex_pool pool = {.n = 0};
  pool.tcap = base_calloc((size_t)g->ntensors + 1, sizeof *pool.tcap);
  if ((!keep && !uses) || !pool.tcap) {
    free(uses);
    free(pool.tcap);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  base_status st = BASE_OK;
  for (int i = 0; i < g->nnodes && !st; i++) {
    const ir_node *n = &g->nodes[i];
    if (!reshape_in_place(g, n, v, &pool, uses))
      st = run_node(g, n, v, &pool, d);
    for (int k = 0; uses && k < n->nin; k++) {
      int t = n->in[k];
      if (--uses[t] == 0 && g->tensors[t].kind == IR_T_VALUE) {
        pool_put(&pool, t, v->v[t]);
        v->v[t] = NULL;
      }
    }
  }
  pool_free(&pool);
  free(uses);
  return st;
}
