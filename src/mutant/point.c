/* point.c: the modular evaluator one position at a time, for the box
 * analysis of graphs made of convolutions over layout operators.
 *
 * The box analysis reads f and g only at the corners of its cells, a few
 * dozen positions of outputs with millions (PET evaluates only the corners'
 * receptive fields likewise). For a graph whose nodes are conv2d, matmul,
 * ewadd, pad, slice, concat, split, reshape and transpose, and where no
 * conv2d or matmul reads (through any path) the output of another, the value at
 * one position is computed on demand: layout operators map the index back to
 * their input, a conv2d sums its window over its input and weight positions,
 * leaves are the residues mutant_eval gives them (fp_random's stream for the
 * tensor's name, element by element). The result is the residue mutant_eval
 * computes at that position, exactly (the tests compare them everywhere),
 * at the cost of one window per conv instead of whole tensors.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../fingerprint/fp.h"
#include "mutant_int.h"

/* fp_random's generator (kernels.c), for one element. */
static uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t ravel(const ir_shape *s, const int64_t *idx) {
  int64_t j = 0;
  for (int k = 0; k < s->rank; k++)
    j = j * s->dim[k] + idx[k];
  return j;
}

static int point_op(ir_opcode op) {
  switch (op) {
  case IR_OP_CONV2D:
  case IR_OP_PAD:
  case IR_OP_SLICE:
  case IR_OP_CONCAT:
  case IR_OP_SPLIT:
  case IR_OP_RESHAPE:
  case IR_OP_TRANSPOSE:
  case IR_OP_MATMUL:
  case IR_OP_EWADD: return 1;
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
#include "../ir/ew_cases.h"
  case IR_OP_CLIP:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_ENLARGE:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: break;
  }
  return 0;
}

int mutant_point_ok(const ir_graph *g) {
  /* after[t]: tensor t is, or is computed from, a conv2d's output */
  uint8_t *after = base_calloc((size_t)g->ntensors + 1, 1);
  int ok = after != NULL; /* out of memory: the whole-tensor evaluator */
  for (int k = 0; ok && k < g->nnodes; k++) {
    const ir_node *nd = &g->nodes[k];
    ok = point_op(nd->op) && !(nd->op == IR_OP_PAD && nd->a.value != 0.0f) &&
         !((nd->op == IR_OP_CONCAT || nd->op == IR_OP_SPLIT) &&
           nd->a.act != IR_ACT_NONE); /* (the lower stage's) */
    int prod = nd->op == IR_OP_CONV2D || nd->op == IR_OP_MATMUL, any = prod;
    if (ok && nd->op == IR_OP_MATMUL) /* a [...,M,K] x b [K,N] or batched */
      ok = nd->nin <= 3 && (g->tensors[nd->in[1]].shape.rank == 2 ||
                            g->tensors[nd->in[1]].shape.rank ==
                                g->tensors[nd->in[0]].shape.rank);
    if (ok && nd->op == IR_OP_EWADD)
      ok = nd->a.act == IR_ACT_NONE;
    for (int j = 0; ok && j < nd->nin; j++) {
      ok = !(prod && after[nd->in[j]]); /* products of products */
      any |= after[nd->in[j]];
    }
    for (int j = 0; ok && j < nd->nout; j++)
      after[nd->out[j]] = (uint8_t)any;
  }
  free(after);
  return ok;
}

static uint32_t value(const mutant_pt *c, int t, const int64_t *idx);

/* x mod FP_P = 2^31 - 1 for any x, without a division (2^31 = 1 mod p):
 * the same residue as x % FP_P. */
static uint32_t mod_p(uint64_t x) {
  x = (x & FP_P) + (x >> 31); /* < 2^34 */
  x = (x & FP_P) + (x >> 31); /* < 2^31 + 8 */
  return (uint32_t)(x >= FP_P ? x - FP_P : x);
}

/* value(c, t, idx) for an operand of a product: a computed tensor's
 * residues are kept once found (a window reads each position of its input
 * up to kh * kw times, and neighbouring corners overlap: CSRNet's dilated
 * mutants at batch 16 read 115M positions of an 8.4M-element input through
 * pad, reshape, transpose and reshape each time). The same residues. */
static uint32_t operand(const mutant_pt *c, int t, const int64_t *idx) {
  const ir_tensor *x = &c->g->tensors[t];
  if (x->kind != IR_T_VALUE || !c->cache)
    return value(c, t, idx);
  uint32_t *v = c->cache[t];
  size_t n = (size_t)ir_shape_numel(&x->shape) * sizeof *v;
  if (!v && *c->cache_bytes + n <= MUTANT_PT_CACHE_BYTES &&
      (v = c->cache[t] = base_calloc(n / sizeof *v, sizeof *v)))
    *c->cache_bytes += n;
  if (!v)
    return value(c, t, idx);
  int64_t j = ravel(&x->shape, idx);
  if (!v[j])
    v[j] = value(c, t, idx) + 1;
  return v[j] - 1;
}

static uint32_t conv_value(const mutant_pt *c, const ir_node *nd,
                           const int64_t *idx) {
  const ir_graph *g = c->g;
  const ir_shape *xs = &g->tensors[nd->in[0]].shape,
                 *ws = &g->tensors[nd->in[1]].shape;
  const ir_attrs *a = &nd->a;
  int64_t cg = ws->dim[1], kh = ws->dim[2], kw = ws->dim[3];
  int64_t og = ws->dim[0] / a->groups, oc = idx[1], c0 = oc / og * cg;
  int64_t y0 = idx[2] * a->stride[0] - a->pad[0];
  int64_t x0 = idx[3] * a->stride[1] - a->pad[1];
  uint64_t acc = 0;
  for (int64_t ci = 0; ci < cg; ci++)
    for (int64_t ky = 0; ky < kh; ky++) {
      int64_t y = y0 + ky * a->dilation[0];
      if (y < 0 || y >= xs->dim[2])
        continue;
      for (int64_t kx = 0; kx < kw; kx++) {
        int64_t x = x0 + kx * a->dilation[1];
        if (x < 0 || x >= xs->dim[3])
          continue;
        int64_t xi[4] = {idx[0], c0 + ci, y, x}, wi[4] = {oc, ci, ky, kx};
        /* a sum of residues < 2^31: no overflow below 2^33 terms */
        acc += mod_p((uint64_t)operand(c, nd->in[0], xi) *
                     operand(c, nd->in[1], wi));
      }
    }
  if (nd->nin == 3) {
    int64_t bi[1] = {oc};
    acc += value(c, nd->in[2], bi);
  }
  return fp_act(a->act, c->key, mod_p(acc));
}

/* a [..., M, K] x b [K, N] (or b with a's batch axes) at idx, plus the
 * bias, then the activation (as fp_kernel's matmul). */
static uint32_t matmul_value(const mutant_pt *c, const ir_node *nd,
                             const int64_t *idx) {
  const ir_graph *g = c->g;
  const ir_shape *as = &g->tensors[nd->in[0]].shape,
                 *bs = &g->tensors[nd->in[1]].shape;
  int r = as->rank;
  int64_t ai[IR_MAX_RANK], bi[IR_MAX_RANK];
  memcpy(ai, idx, sizeof *ai * (size_t)r);
  memcpy(bi, idx + r - bs->rank, sizeof *bi * (size_t)bs->rank);
  uint64_t acc = 0;
  for (int64_t k = 0; k < as->dim[r - 1]; k++) {
    ai[r - 1] = k, bi[bs->rank - 2] = k;
    acc +=
        mod_p((uint64_t)operand(c, nd->in[0], ai) * operand(c, nd->in[1], bi));
  }
  if (nd->nin == 3)
    acc += value(c, nd->in[2], idx + r - 1);
  return fp_act(nd->a.act, c->key, mod_p(acc));
}

/* The sum of the inputs at idx, broadcast from the right. */
static uint32_t add_value(const mutant_pt *c, const ir_node *nd,
                          const int64_t *idx, int r) {
  uint64_t acc = 0;
  for (int j = 0; j < nd->nin; j++) {
    const ir_shape *s = &c->g->tensors[nd->in[j]].shape;
    int64_t src[IR_MAX_RANK];
    for (int k = 0; k < s->rank; k++)
      src[k] = s->dim[k] == 1 ? 0 : idx[r - s->rank + k];
    acc = (acc + value(c, nd->in[j], src)) % FP_P;
  }
  return (uint32_t)acc;
}

static uint32_t value(const mutant_pt *c, int t, const int64_t *idx) {
  const ir_graph *g = c->g;
  const ir_tensor *x = &g->tensors[t];
  if (x->kind != IR_T_VALUE)
    return mod_p(splitmix(c->base[t] + (uint64_t)ravel(&x->shape, idx)));
  const ir_node *nd = &g->nodes[x->node];
  const ir_shape *xs = &g->tensors[nd->in[0]].shape;
  int r = x->shape.rank;
  int64_t src[IR_MAX_RANK];
  memcpy(src, idx, sizeof *src * (size_t)r);
  switch (nd->op) {
  case IR_OP_CONV2D: return conv_value(c, nd, idx);
  case IR_OP_PAD:
    for (int k = 0; k < r; k++)
      if ((src[k] -= nd->a.list[k]) < 0 || src[k] >= xs->dim[k])
        return 0;
    return value(c, nd->in[0], src);
  case IR_OP_SLICE:
    for (int k = 0; k < r; k++)
      src[k] += nd->a.list[k];
    return value(c, nd->in[0], src);
  case IR_OP_CONCAT: {
    int a = nd->a.axis < 0 ? nd->a.axis + r : nd->a.axis, j = 0;
    while (src[a] >= g->tensors[nd->in[j]].shape.dim[a])
      src[a] -= g->tensors[nd->in[j++]].shape.dim[a];
    return value(c, nd->in[j], src);
  }
  case IR_OP_SPLIT: {
    int a = nd->a.axis < 0 ? nd->a.axis + r : nd->a.axis;
    for (int j = 0; j < nd->nout && nd->out[j] != t; j++)
      src[a] += g->tensors[nd->out[j]].shape.dim[a];
    return value(c, nd->in[0], src);
  }
  case IR_OP_TRANSPOSE:
    for (int k = 0; k < r; k++)
      src[nd->a.list[k]] = idx[k];
    return value(c, nd->in[0], src);
  case IR_OP_RESHAPE:
    mutant_unravel(xs, ravel(&x->shape, idx), src);
    return value(c, nd->in[0], src);
  case IR_OP_MATMUL: return matmul_value(c, nd, idx);
  case IR_OP_EWADD: return add_value(c, nd, idx, r);
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
#include "../ir/ew_cases.h"
  case IR_OP_CLIP:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_ENLARGE:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: break; /* excluded by mutant_point_ok */
  }
  return 0;
}

base_status mutant_pt_init(mutant_pt *c, const ir_graph *g, uint64_t seed,
                           base_diag *d) {
  c->g = g;
  c->key = XXH3_64bits_withSeed("act", 3, seed);
  if (!(c->base = base_calloc((size_t)g->ntensors + 1, sizeof *c->base)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int t = 0; t < g->ntensors; t++) {
    const char *name = g->tensors[t].name;
    c->base[t] = splitmix(seed ^ splitmix(XXH3_64bits(name, strlen(name))));
  }
  /* no cache when out of memory: the same residues, recomputed */
  c->cache = base_calloc((size_t)g->ntensors + 1, sizeof *c->cache);
  c->cache_bytes = base_calloc(1, sizeof *c->cache_bytes);
  if (!c->cache || !c->cache_bytes) {
    free(c->cache);
    free(c->cache_bytes);
    c->cache = NULL;
    c->cache_bytes = NULL;
  }
  return BASE_OK;
}

void mutant_pt_free(mutant_pt *c) {
  for (int t = 0; c->cache && t < c->g->ntensors; t++)
    free(c->cache[t]);
  free(c->cache);
  free(c->cache_bytes);
  free(c->base);
  c->base = NULL;
  c->cache = NULL;
  c->cache_bytes = NULL;
}

uint32_t mutant_point(const mutant_pt *c, int t, const int64_t *idx) {
  return value(c, t, idx);
}
