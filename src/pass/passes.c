/* passes.c: the built-in passes run before and after the search: common
 * subexpressions, batchnorm folding, activation fusion, nested splits and
 * dead code removal.
 *
 * Batchnorm folding is written in the IR itself, since most weights have no
 * values: for conv y = w*x + b followed by batchnorm(scale, bias, mean, var),
 * with f = scale / sqrt(var + eps) (computed by a batchnorm of ones, so the
 * executor's own formula is reused),
 *   w' = w * reshape(f, [O,1,1,1])
 *   b' = (b - mean) * f + bias    (a batchnorm of b, or of zeros)
 * and y' = conv(x, w', b'). The new nodes read only weights: the cost model
 * counts them as free (they run once, when the weights are loaded).
 */
#include <stdlib.h>
#include <string.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

/* The only reader of node i's single output when that output is not a graph
 * output and is read once, else -1. */
static int sole_reader(const ir_graph *g, const rewrite_index *ix, int i) {
  const ir_node *n = &g->nodes[i];
  if (n->nout != 1)
    return -1;
  int t = n->out[0];
  if (ix->is_output[t] || ix->use_start[t + 1] - ix->use_start[t] != 1)
    return -1;
  return ix->use_node[ix->use_start[t]];
}

/* partner[i] = j: node i is merged with its reader j (by the pass's rule). */
typedef int (*pair_fn)(const ir_graph *g, const ir_node *n, const ir_node *r);

static int32_t *find_pairs(const ir_graph *g, pair_fn ok, const uint8_t *skip,
                           int *count, base_diag *d) {
  rewrite_index ix;
  int32_t *partner = base_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1));
  if (!partner || rewrite_index_build(g, &ix, d)) {
    free(partner);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  *count = 0;
  for (int i = 0; i < g->nnodes; i++)
    partner[i] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    int j = skip && skip[i] ? -1 : sole_reader(g, &ix, i);
    if (j >= 0 && ok(g, &g->nodes[i], &g->nodes[j])) {
      partner[i] = j;
      ++*count;
    }
  }
  rewrite_index_free(&ix);
  return partner;
}

/* ---- activation fusion ------------------------------------------------------
 */

static int fusable(const ir_graph *g, const ir_node *n, const ir_node *r) {
  (void)g;
  return (ir_op(n->op)->flags & IR_OPF_ACT_PARAM) && n->a.act == IR_ACT_NONE &&
         ir_op(r->op)->act != IR_ACT_NONE;
}

ir_graph *pass_fuse_activations(const ir_graph *g, int *count, base_diag *d) {
  return pass_fuse_activations_except(g, NULL, count, d);
}

ir_graph *pass_fuse_activations_except(const ir_graph *g, const uint8_t *leave,
                                       int *count, base_diag *d) {
  rewrite_builder b;
  int32_t *partner = find_pairs(g, fusable, leave, count, d);
  if (!partner || rewrite_build_begin(&b, g, NULL, d)) {
    free(partner);
    return NULL;
  }
  uint8_t *skip = base_calloc((size_t)g->nnodes + 1, 1);
  base_status st = skip ? BASE_OK : BASE_ERR_NOMEM;
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (skip[i])
      continue;
    int j = partner[i];
    if (j < 0) {
      st = rewrite_build_copy(&b, i, NULL);
      continue;
    }
    const ir_node *n = &g->nodes[i], *r = &g->nodes[j];
    ir_attrs a = n->a;
    a.act = ir_op(r->op)->act;
    /* the fused node takes the activation's output name */
    const char *name = g->tensors[r->out[0]].name;
    int32_t in[IR_MAX_IN];
    for (int k = 0; k < n->nin; k++)
      in[k] = b.map[n->in[k]];
    int k = ir_add_node(b.h, n->op, in, n->nin, &a, &name, d);
    if (k < 0) {
      st = d ? d->code : BASE_ERR_INTERNAL;
      break;
    }
    b.map[r->out[0]] = b.h->nodes[k].out[0];
    skip[j] = 1;
  }
  free(skip);
  free(partner);
  return rewrite_build_finish(&b, st);
}

/* ---- batchnorm folding
 * -------------------------------------------------------- */

static int foldable(const ir_graph *g, const ir_node *n, const ir_node *r) {
  (void)g;
  return n->op == IR_OP_CONV2D && n->a.act == IR_ACT_NONE && n->nin <= 3 &&
         r->op == IR_OP_BATCHNORM && r->in[0] == n->out[0];
}

static int add1(rewrite_builder *b, ir_opcode op, const int32_t *in, int nin,
                const ir_attrs *a, const char *base) {
  int k = rewrite_build_node(b, op, in, nin, a, base);
  return k < 0 ? -1 : b->h->nodes[k].out[0];
}

static ir_attrs shape_attrs(ir_opcode op, int n, int64_t d0, int64_t d1) {
  ir_attrs a;
  ir_attrs_default(op, &a);
  a.nlist = n;
  a.list[0] = d0;
  for (int i = 1; i < n; i++)
    a.list[i] = i == 1 ? d1 : 1;
  return a;
}

/* Emits the folded conv for conv node i and its batchnorm node j. */
static base_status emit_fold(rewrite_builder *b, int i, int j) {
  const ir_graph *g = b->g;
  const ir_node *cv = &g->nodes[i], *bn = &g->nodes[j];
  const char *base = g->tensors[bn->out[0]].name;
  char nm[300];
  int64_t O = g->tensors[cv->in[1]].shape.dim[0];
  int32_t s = b->map[bn->in[1]], bb = b->map[bn->in[2]];
  int32_t mu = b->map[bn->in[3]], v = b->map[bn->in[4]];
  ir_attrs a1 = shape_attrs(IR_OP_CONST_ONES, 1, O, 0);
  ir_attrs a2 = shape_attrs(IR_OP_CONST_ONES, 2, 1, O);
  ir_attrs none, r4 = shape_attrs(IR_OP_RESHAPE, 4, O, 1);
  ir_attrs r1 = shape_attrs(IR_OP_RESHAPE, 1, O, 0);
  ir_attrs r2 = shape_attrs(IR_OP_RESHAPE, 2, 1, O);
  ir_attrs_default(IR_OP_EWADD, &none);
  snprintf(nm, sizeof nm, "%s.fold", base);
  int32_t noin[1] = {0}; /* ir_add_node copies nin = 0 inputs from here */
  int one1 = add1(b, IR_OP_CONST_ONES, noin, 0, &a1, nm);
  int one2 = one1 < 0 ? -1 : add1(b, IR_OP_CONST_ONES, noin, 0, &a2, nm);
  int zin[2] = {one1, one1};
  int zero1 = one2 < 0 ? -1 : add1(b, IR_OP_EWSUB, zin, 2, &none, nm);
  int fin[5] = {one2, s, zero1, zero1, v};
  int f2 = zero1 < 0 ? -1 : add1(b, IR_OP_BATCHNORM, fin, 5, &bn->a, nm);
  int f4 = f2 < 0 ? -1 : add1(b, IR_OP_RESHAPE, &f2, 1, &r4, nm);
  int win[2] = {b->map[cv->in[1]], f4};
  int w = f4 < 0 ? -1 : add1(b, IR_OP_EWMUL, win, 2, &none, nm);
  int xb = -1;
  if (w >= 0 && cv->nin > 2) {
    int bin = b->map[cv->in[2]];
    xb = add1(b, IR_OP_RESHAPE, &bin, 1, &r2, nm);
  } else if (w >= 0) {
    int z2[2] = {one2, one2};
    xb = add1(b, IR_OP_EWSUB, z2, 2, &none, nm);
  }
  int bin5[5] = {xb, s, bb, mu, v};
  int b2 = xb < 0 ? -1 : add1(b, IR_OP_BATCHNORM, bin5, 5, &bn->a, nm);
  int b1 = b2 < 0 ? -1 : add1(b, IR_OP_RESHAPE, &b2, 1, &r1, nm);
  if (b1 < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  int32_t cin[3] = {b->map[cv->in[0]], w, b1};
  int k = ir_add_node(b->h, IR_OP_CONV2D, cin, 3, &cv->a, &base, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  b->map[bn->out[0]] = b->h->nodes[k].out[0];
  return BASE_OK;
}

/* A batchnorm read only by a convolution without padding (MBConv's
 * pre-norm before its 1x1 expansion): every tap of the convolution reads
 * bn(x) = x f + z, f = scale / sqrt(var + eps), z = bias - mean f, so
 *   conv(bn(x), w, b) = conv(x, w * reshape(f, [1,C,1,1]), b + b_z)
 * with b_z = conv(reshape(z, [1,C,1,1]) * ones [1,C,KH,KW], w), the sum of
 * w's taps times z ([1,O,1,1]). With padding the border taps would read 0,
 * not z: left alone. */
static int foldable_before(const ir_graph *g, const ir_node *n,
                           const ir_node *r) {
  int32_t y = n->out[0];
  return n->op == IR_OP_BATCHNORM && r->op == IR_OP_CONV2D && r->in[0] == y &&
         r->in[1] != y && (r->nin < 3 || r->in[2] != y) && r->nin <= 3 &&
         r->a.groups == 1 && !r->a.pad[0] && !r->a.pad[1] && !r->a.pad[2] &&
         !r->a.pad[3] && g->tensors[y].shape.rank == 4 &&
         g->tensors[y].dtype == IR_DT_F32;
}

/* Emits the conv node j reading batchnorm node i's input, folded. */
static base_status emit_fold_before(rewrite_builder *b, int i, int j) {
  const ir_graph *g = b->g;
  const ir_node *bn = &g->nodes[i], *cv = &g->nodes[j];
  const char *base = g->tensors[cv->out[0]].name;
  const ir_shape *ws = &g->tensors[cv->in[1]].shape;
  int64_t O = ws->dim[0], C = ws->dim[1];
  char nm[300];
  snprintf(nm, sizeof nm, "%s.fold", base);
  ir_attrs none, kk, cz = cv->a;
  ir_attrs a1 = shape_attrs(IR_OP_CONST_ONES, 1, C, 0);
  ir_attrs a2 = shape_attrs(IR_OP_CONST_ONES, 2, 1, C);
  ir_attrs r4 = shape_attrs(IR_OP_RESHAPE, 4, 1, C);
  ir_attrs r1 = shape_attrs(IR_OP_RESHAPE, 1, O, 0);
  ir_attrs_default(IR_OP_EWADD, &none);
  kk = shape_attrs(IR_OP_CONST_ONES, 4, 1, C);
  kk.list[2] = ws->dim[2], kk.list[3] = ws->dim[3];
  cz.stride[0] = cz.stride[1] = 1, cz.dilation[0] = cz.dilation[1] = 1;
  cz.act = IR_ACT_NONE;
  int32_t noin[1] = {0}, s = b->map[bn->in[1]], bb = b->map[bn->in[2]];
  int32_t mu = b->map[bn->in[3]], v = b->map[bn->in[4]];
  int one1 = add1(b, IR_OP_CONST_ONES, noin, 0, &a1, nm);
  int one2 = one1 < 0 ? -1 : add1(b, IR_OP_CONST_ONES, noin, 0, &a2, nm);
  int zin[2] = {one1, one1}, z2in[2] = {one2, one2};
  int zero1 = one2 < 0 ? -1 : add1(b, IR_OP_EWSUB, zin, 2, &none, nm);
  int zero2 = zero1 < 0 ? -1 : add1(b, IR_OP_EWSUB, z2in, 2, &none, nm);
  int fin[5] = {one2, s, zero1, zero1, v}, zb[5] = {zero2, s, bb, mu, v};
  int f2 = zero2 < 0 ? -1 : add1(b, IR_OP_BATCHNORM, fin, 5, &bn->a, nm);
  int f4 = f2 < 0 ? -1 : add1(b, IR_OP_RESHAPE, &f2, 1, &r4, nm);
  int win[2] = {b->map[cv->in[1]], f4};
  int w = f4 < 0 ? -1 : add1(b, IR_OP_EWMUL, win, 2, &none, nm);
  int z = w < 0 ? -1 : add1(b, IR_OP_BATCHNORM, zb, 5, &bn->a, nm);
  int z4 = z < 0 ? -1 : add1(b, IR_OP_RESHAPE, &z, 1, &r4, nm);
  int ones = z4 < 0 ? -1 : add1(b, IR_OP_CONST_ONES, noin, 0, &kk, nm);
  int zk[2] = {z4, ones};
  int zt = ones < 0 ? -1 : add1(b, IR_OP_EWMUL, zk, 2, &none, nm);
  int cin[2] = {zt, b->map[cv->in[1]]};
  int c4 = zt < 0 ? -1 : add1(b, IR_OP_CONV2D, cin, 2, &cz, nm);
  int bz = c4 < 0 ? -1 : add1(b, IR_OP_RESHAPE, &c4, 1, &r1, nm);
  if (bz >= 0 && cv->nin > 2) {
    int bs[2] = {b->map[cv->in[2]], bz};
    bz = add1(b, IR_OP_EWADD, bs, 2, &none, nm);
  }
  if (bz < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  int32_t in[3] = {b->map[bn->in[0]], w, bz};
  int k = ir_add_node(b->h, IR_OP_CONV2D, in, 3, &cv->a, &base, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  b->map[cv->out[0]] = b->h->nodes[k].out[0];
  return BASE_OK;
}

/* g with each batchnorm read only by a convolution without padding folded
 * into it (foldable_before). */
static ir_graph *fold_before(const ir_graph *g, int *count, base_diag *d) {
  rewrite_builder b;
  int32_t *partner = find_pairs(g, foldable_before, NULL, count, d);
  if (!partner || rewrite_build_begin(&b, g, NULL, d)) {
    free(partner);
    return NULL;
  }
  base_status st = BASE_OK;
  int32_t *bn_of = base_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1));
  if (!bn_of)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; bn_of && i < g->nnodes; i++)
    bn_of[i] = -1;
  for (int i = 0; bn_of && i < g->nnodes; i++)
    if (partner[i] >= 0)
      bn_of[partner[i]] = i;
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (partner[i] >= 0)
      continue; /* emitted at its convolution, which reads it alone */
    st = bn_of[i] >= 0 ? emit_fold_before(&b, bn_of[i], i)
                       : rewrite_build_copy(&b, i, NULL);
  }
  free(bn_of);
  free(partner);
  return rewrite_build_finish(&b, st);
}

static ir_graph *fold_after(const ir_graph *g, int *count, base_diag *d) {
  rewrite_builder b;
  int32_t *partner = find_pairs(g, foldable, NULL, count, d);
  if (!partner || rewrite_build_begin(&b, g, NULL, d)) {
    free(partner);
    return NULL;
  }
  int32_t *conv_of = base_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1));
  base_status st = conv_of ? BASE_OK : BASE_ERR_NOMEM;
  for (int i = 0; conv_of && i < g->nnodes; i++)
    conv_of[i] = -1;
  for (int i = 0; conv_of && i < g->nnodes; i++)
    if (partner[i] >= 0)
      conv_of[partner[i]] = i;
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (partner[i] >= 0)
      continue; /* emitted at its batchnorm, whose inputs are all ready */
    st = conv_of[i] >= 0 ? emit_fold(&b, conv_of[i], i)
                         : rewrite_build_copy(&b, i, NULL);
  }
  free(conv_of);
  free(partner);
  return rewrite_build_finish(&b, st);
}

ir_graph *pass_fold_batchnorm(const ir_graph *g, int *count, base_diag *d) {
  int after = 0, before = 0;
  ir_graph *h = fold_after(g, &after, d);
  ir_graph *k = h ? fold_before(h, &before, d) : NULL;
  ir_graph_free(h);
  *count = after + before;
  return k;
}

/* ---- dead code
 * ------------------------------------------------------------------- */

ir_graph *pass_prune_dead(const ir_graph *g, int *count, base_diag *d) {
  uint8_t *live = base_calloc((size_t)g->ntensors + 1, 1);
  uint8_t *keep = base_calloc((size_t)g->nnodes + 1, 1);
  rewrite_builder b;
  ir_graph *h = NULL;
  *count = 0;
  if (!live || !keep) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->noutputs; i++)
    live[g->outputs[i]] = 1;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const ir_node *n = &g->nodes[i];
    for (int o = 0; o < n->nout; o++)
      keep[i] |= live[n->out[o]];
    for (int k = 0; keep[i] && k < n->nin; k++)
      live[n->in[k]] = 1;
    *count += !keep[i];
  }
  if (rewrite_build_begin(&b, g, live, d))
    goto out;
  for (int i = 0; i < g->nnodes; i++)
    if (keep[i] && rewrite_build_copy(&b, i, NULL)) {
      rewrite_build_abort(&b);
      goto out;
    }
  h = rewrite_build_end(&b);
out:
  free(live);
  free(keep);
  return h;
}

/* ---- common subexpressions
 * ----------------------------------------------------------- */

/* A node as CSE compares it: operator, parameters, inputs (h's tensors). */
typedef struct cse_node {
  ir_opcode op;
  int nin, nout;
  const int32_t *in;
  const ir_attrs *a;
} cse_node;

static uint64_t cse_key(const cse_node *n) {
  uint64_t in[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++)
    in[k] = (uint64_t)n->in[k];
  return rewrite_out_hash(n->op, n->a, in, n->nin, n->nout);
}

static int cse_same(const ir_node *a, const cse_node *b) {
  return a->op == b->op && a->nin == b->nin && a->nout == b->nout &&
         !memcmp(a->in, b->in, sizeof(int32_t) * (size_t)a->nin) &&
         !memcmp(&a->a, b->a, sizeof a->a);
}

/* The node of h equal to n, or -1; *slot: where n's index goes if added. */
static int cse_find(const ir_graph *h, const int32_t *tab, int cap,
                    const cse_node *n, int *slot) {
  for (int s = (int)(cse_key(n) & (uint64_t)(cap - 1));;
       s = (s + 1) & (cap - 1)) {
    if (tab[s] < 0) {
      *slot = s;
      return -1;
    }
    if (cse_same(&h->nodes[tab[s]], n))
      return tab[s];
  }
}

/* Copies node i unless an equal node is in h already (then maps its
 * outputs to that node's). Nodes computing graph outputs are kept, so the
 * outputs keep their names. */
static base_status cse_node_copy(rewrite_builder *b, int i, int32_t *tab,
                                 int cap, const uint8_t *out, int *count) {
  const ir_node *n = &b->g->nodes[i];
  int32_t in[IR_MAX_IN];
  int keep = 0, slot = -1;
  for (int k = 0; k < n->nin; k++)
    in[k] = b->map[n->in[k]];
  for (int o = 0; o < n->nout; o++)
    keep |= out[n->out[o]];
  cse_node c = {n->op, n->nin, n->nout, in, &n->a};
  int j = cse_find(b->h, tab, cap, &c, &slot);
  if (j >= 0 && !keep) {
    for (int o = 0; o < n->nout; o++)
      b->map[n->out[o]] = b->h->nodes[j].out[o];
    ++*count;
    return BASE_OK;
  }
  base_status st = rewrite_build_copy(b, i, NULL);
  if (!st && j < 0)
    tab[slot] = b->h->nnodes - 1;
  return st;
}

ir_graph *pass_cse(const ir_graph *g, int *count, base_diag *d) {
  rewrite_builder b;
  int cap = 64;
  while (cap < 2 * g->nnodes + 2)
    cap *= 2;
  int32_t *tab = base_malloc(sizeof(int32_t) * (size_t)cap);
  uint8_t *out = base_calloc((size_t)g->ntensors + 1, 1);
  *count = 0;
  if (!tab || !out || rewrite_build_begin(&b, g, NULL, d)) {
    free(tab);
    free(out);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  for (int s = 0; s < cap; s++)
    tab[s] = -1;
  for (int i = 0; i < g->noutputs; i++)
    out[g->outputs[i]] = 1;
  base_status st = BASE_OK;
  for (int i = 0; !st && i < g->nnodes; i++)
    st = cse_node_copy(&b, i, tab, cap, out, count);
  free(tab);
  free(out);
  return rewrite_build_finish(&b, st);
}

/* ---- rule cover
 * ------------------------------------------------------------------ */

base_status pass_rule_cover(const ir_graph *g, const rewrite_rules *rules,
                            uint8_t *cover, base_diag *d) {
  rewrite_index ix;
  memset(cover, 0, (size_t)g->nnodes + 1);
  if (!rules)
    return BASE_OK;
  base_status st = rewrite_index_build(g, &ix, d);
  if (st)
    return st;
  for (int k = 0; !st && k < rules->ndirs; k++) {
    const rewrite_dir *dr = &rules->dirs[k];
    if (dr->backward || !rewrite_cpat_may_match(&dr->cp, &ix))
      continue;
    rewrite_matches ms = {0};
    st = rewrite_match_cpat(&dr->cp, g, &ix, &ms, d);
    for (int i = 0; !st && i < ms.n; i++)
      for (int p = 0; p < dr->pat->nnodes; p++)
        cover[ms.m[i].node[p]] = 1;
    rewrite_matches_free(&ms);
  }
  rewrite_index_free(&ix);
  return st;
}

/* ---- scale folding
 * -------------------------------------------------------------
 * A per-channel constant scale of a matmul's columns, through an optional
 * bias add and an optional transpose perm=[0,3,1,2] to images (ConvNeXt's
 * layer scale: s * transpose(matmul(a, W) + b), s [C,1,1]):
 *   (a W + b) diag(s) = a (W diag(s)) + b * s
 * so the multiply goes and the matmul reads W' = W * reshape(s, [C]) and
 * adds b' = b * reshape(s, [C]), weight-only nodes (run once, free to the
 * cost model). Exact in real arithmetic; in floats it moves one rounding,
 * as batchnorm folding does (the end-to-end check covers it). Each node
 * on the chain must have the next as its only reader, and the multiply's
 * result must be no graph output (its name would change). */

typedef struct scale_site {
  int mul, tr, add, mm; /* node indices (tr, add: -1 when absent) */
  int32_t s, bias, w;   /* g's tensors: the scale, the bias (or -1), W */
} scale_site;

/* t is available before node `before` and computed from weights only. */
static int weight_before(const ir_graph *g, const uint8_t *wonly, int32_t t,
                         int before) {
  const ir_tensor *x = &g->tensors[t];
  return x->kind == IR_T_WEIGHT ||
         (x->kind == IR_T_VALUE && wonly[x->node] && x->node < before);
}

/* The single producer of value t read only by node `reader`, or -1. */
static int chain_node(const ir_graph *g, const rewrite_index *ix, int32_t t,
                      int reader) {
  const ir_tensor *x = &g->tensors[t];
  if (x->kind != IR_T_VALUE || sole_reader(g, ix, x->node) != reader)
    return -1;
  return x->node;
}

/* Is node j's multiply a scale site? Fills *st. */
static int scale_site_at(const ir_graph *g, const rewrite_index *ix,
                         const uint8_t *wonly, int j, scale_site *st) {
  const ir_node *m = &g->nodes[j];
  if (m->op != IR_OP_EWMUL || m->nin != 2 || wonly[j] ||
      ix->is_output[m->out[0]])
    return 0;
  const ir_shape *o = &g->tensors[m->out[0]].shape;
  for (int k = 0; k < 2; k++) {
    *st = (scale_site){j, -1, -1, -1, m->in[k], -1, -1};
    int p = chain_node(g, ix, m->in[1 - k], j), axis = o->rank - 1;
    /* the multiply scales, it does not broadcast the operand further */
    if (p < 0 || !ir_shape_eq(o, &g->tensors[m->in[1 - k]].shape))
      continue;
    const ir_node *pn = &g->nodes[p];
    if (pn->op == IR_OP_TRANSPOSE) {
      const int64_t *pm = pn->a.list;
      if (pn->a.nlist != 4 || pm[0] != 0 || pm[1] != 3 || pm[2] != 1 ||
          pm[3] != 2)
        continue;
      st->tr = p;
      axis = 1;
      if ((p = chain_node(g, ix, pn->in[0], p)) < 0)
        continue;
      pn = &g->nodes[p];
    }
    if (pn->op == IR_OP_EWADD && pn->nin == 2) {
      int a = p, q = -1;
      for (int e = 0; e < 2 && q < 0; e++)
        if ((q = chain_node(g, ix, pn->in[e], a)) >= 0)
          st->bias = pn->in[1 - e];
      if (q < 0)
        continue;
      st->add = a;
      p = q;
      pn = &g->nodes[p];
    }
    if (pn->op != IR_OP_MATMUL || pn->nin != 2 || pn->a.act != IR_ACT_NONE ||
        wonly[p])
      continue;
    st->mm = p;
    st->w = pn->in[1];
    const ir_shape *w = &g->tensors[st->w].shape, *s = &g->tensors[st->s].shape;
    int64_t c = w->rank == 2 ? w->dim[1] : -1;
    /* s: C along the output's channel axis, 1 elsewhere */
    int at = s->rank - (o->rank - axis);
    if (c < 1 || o->dim[axis] != c || at < 0 || s->dim[at] != c ||
        ir_shape_numel(s) != c || !weight_before(g, wonly, st->s, p) ||
        !weight_before(g, wonly, st->w, p))
      continue;
    if (st->bias >= 0) { /* a vector along the matmul's columns, there
                            before the matmul (b' is emitted with W') */
      const ir_shape *b = &g->tensors[st->bias].shape;
      if (b->rank < 1 || b->dim[b->rank - 1] != c || ir_shape_numel(b) != c ||
          !weight_before(g, wonly, st->bias, p))
        continue;
    }
    return 1;
  }
  return 0;
}

/* Emits h's reshape(s, [C]) and ewmul(x, it); the product's tensor. */
static int32_t scaled(rewrite_builder *b, int32_t x, int32_t s, int64_t c,
                      const char *base) {
  ir_attrs r1 = shape_attrs(IR_OP_RESHAPE, 1, c, 0), none;
  ir_attrs_default(IR_OP_EWMUL, &none);
  int s1 = add1(b, IR_OP_RESHAPE, &s, 1, &r1, base);
  int32_t in[2] = {x, s1};
  return s1 < 0 ? -1 : add1(b, IR_OP_EWMUL, in, 2, &none, base);
}

/* Copies g's node i reading y in place of g's tensor t. */
static base_status copy_reading(rewrite_builder *b, int i, int32_t t,
                                int32_t y) {
  int32_t was = b->map[t];
  b->map[t] = y;
  base_status st = rewrite_build_copy(b, i, NULL);
  b->map[t] = was;
  return st;
}

ir_graph *pass_fold_scale(const ir_graph *g, int *count, base_diag *d) {
  rewrite_index ix;
  rewrite_builder b;
  *count = 0;
  scale_site *site = base_malloc(sizeof *site * ((size_t)g->nnodes + 1));
  int32_t *role = base_malloc(sizeof *role * ((size_t)g->nnodes + 1));
  uint8_t *wonly = base_calloc((size_t)g->nnodes + 1, 1);
  if (!site || !role || !wonly || rewrite_index_build(g, &ix, d)) {
    free(site), free(role), free(wonly);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  ir_weight_only(g, wonly);
  for (int i = 0; i < g->nnodes; i++)
    role[i] = -1;
  int n = 0;
  for (int j = 0; j < g->nnodes; j++) {
    scale_site st;
    if (!scale_site_at(g, &ix, wonly, j, &st) || role[st.mm] >= 0 ||
        (st.add >= 0 && role[st.add] >= 0))
      continue;
    site[n] = st;
    role[st.mm] = role[j] = n;
    if (st.add >= 0)
      role[st.add] = n;
    n++;
  }
  rewrite_index_free(&ix);
  free(wonly);
  *count = n;
  base_status st = rewrite_build_begin(&b, g, NULL, d);
  if (st) {
    free(site), free(role);
    return NULL;
  }
  int32_t *wq = base_malloc(sizeof *wq * ((size_t)n + 1)); /* W', b' */
  int32_t *bq = base_malloc(sizeof *bq * ((size_t)n + 1));
  if (!wq || !bq)
    st = BASE_ERR_NOMEM;
  for (int i = 0; i < g->nnodes && !st; i++) {
    int r = role[i];
    if (r < 0) {
      st = rewrite_build_copy(&b, i, NULL);
      continue;
    }
    const scale_site *z = &site[r];
    const char *base = g->tensors[g->nodes[z->mul].out[0]].name;
    char nm[300];
    snprintf(nm, sizeof nm, "%s.fold", base);
    int64_t c = g->tensors[z->w].shape.dim[1];
    int32_t s = b.map[z->s];
    if (i == z->mm) { /* W' (and b'), then the matmul on W' */
      wq[r] = scaled(&b, b.map[z->w], s, c, nm);
      bq[r] =
          z->bias < 0 || wq[r] < 0 ? -1 : scaled(&b, b.map[z->bias], s, c, nm);
      st = wq[r] < 0 || (z->bias >= 0 && bq[r] < 0)
               ? (d && d->code ? d->code : BASE_ERR_INTERNAL)
               : copy_reading(&b, i, z->w, wq[r]);
    } else if (i == z->add) {
      st = copy_reading(&b, i, z->bias, bq[r]);
    } else { /* the multiply: its readers read what it scaled */
      const ir_node *m = &g->nodes[i];
      int32_t t = m->in[0] == z->s ? m->in[1] : m->in[0];
      b.map[m->out[0]] = b.map[t];
    }
  }
  free(wq), free(bq), free(site), free(role);
  return rewrite_build_finish(&b, st);
}

/* ---- nested splits
 * ----------------------------------------------------------------- */

/* The split node j's input is one output of another split along the same
 * axis, read by j alone and no graph output: that split's index, else -1. */
static int outer_split(const ir_graph *g, const rewrite_index *ix, int j) {
  const ir_node *s = &g->nodes[j];
  if (s->op != IR_OP_SPLIT)
    return -1;
  int t = s->in[0];
  const ir_tensor *x = &g->tensors[t];
  if (x->kind != IR_T_VALUE || ix->is_output[t] ||
      ix->use_start[t + 1] - ix->use_start[t] != 1)
    return -1;
  const ir_node *o = &g->nodes[x->node];
  return o->op == IR_OP_SPLIT && o->a.axis == s->a.axis &&
                 o->a.act == IR_ACT_NONE && s->a.act == IR_ACT_NONE
             ? x->node
             : -1; /* (act=: the lower stage's, its outputs no parts) */
}

/* Marks in inner[] (the outer split's index, else -1) the splits folded
 * into the split that produces their input: an outer split takes as many
 * as its sizes list holds, and one that folds into another this round
 * takes none (one level a round: an inner split comes after its outer, so
 * inner[i] is known when i's readers are met). Returns how many, -1 on
 * failure. */
static int find_inner(const ir_graph *g, int32_t *inner, base_diag *d) {
  rewrite_index ix;
  int32_t *width = base_calloc((size_t)g->nnodes + 1, sizeof *width);
  if (!width || rewrite_index_build(g, &ix, d)) {
    free(width);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return -1;
  }
  int count = 0;
  for (int j = 0; j < g->nnodes; j++) {
    inner[j] = -1;
    width[j] = g->nodes[j].nout;
  }
  for (int j = 0; j < g->nnodes; j++) {
    int i = outer_split(g, &ix, j);
    if (i < 0 || inner[i] >= 0 || width[i] - 1 + g->nodes[j].nout > IR_MAX_LIST)
      continue;
    inner[j] = i;
    width[i] += g->nodes[j].nout - 1;
    count++;
  }
  free(width);
  rewrite_index_free(&ix);
  return count;
}

/* Emits outer split i with the splits folded into it in place of the
 * outputs they read. */
static base_status emit_splits(rewrite_builder *b, int i,
                               const int32_t *first) {
  const ir_graph *g = b->g;
  const ir_node *o = &g->nodes[i];
  ir_attrs a = o->a;
  const char *names[IR_MAX_LIST] = {0};
  int32_t from[IR_MAX_LIST]; /* the original tensor of each new output */
  int n = 0;
  for (int k = 0; k < o->nout; k++) {
    int j = first[o->out[k]]; /* the split folded in at output k, or -1 */
    const ir_node *s = j >= 0 ? &g->nodes[j] : o;
    int lo = j >= 0 ? 0 : k, hi = j >= 0 ? s->nout : k + 1;
    for (int m = lo; m < hi; m++) {
      a.list[n] = s->a.list[m];
      from[n] = s->out[m];
      names[n++] = g->tensors[s->out[m]].name;
    }
  }
  a.nlist = n;
  int32_t x = b->map[o->in[0]];
  int k = ir_add_node(b->h, IR_OP_SPLIT, &x, 1, &a, names, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  for (int m = 0; m < n; m++)
    b->map[from[m]] = b->h->nodes[k].out[m];
  return BASE_OK;
}

ir_graph *pass_merge_splits(const ir_graph *g, int *count, base_diag *d) {
  int32_t *inner = base_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1));
  int32_t *first = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  rewrite_builder b;
  *count = 0;
  if (!inner || !first) {
    free(inner), free(first);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  int c = find_inner(g, inner, d);
  if (c < 0 || rewrite_build_begin(&b, g, NULL, d)) {
    free(inner), free(first);
    return NULL;
  }
  *count = c;
  for (int t = 0; t < g->ntensors; t++)
    first[t] = -1;
  for (int j = 0; j < g->nnodes; j++)
    if (inner[j] >= 0)
      first[g->nodes[j].in[0]] = j;
  base_status st = BASE_OK;
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (inner[i] >= 0)
      continue;    /* emitted with its outer split */
    int outer = 0; /* some split folds into i */
    for (int k = 0; k < g->nodes[i].nout && !outer; k++)
      outer = first[g->nodes[i].out[k]] >= 0;
    st = outer ? emit_splits(&b, i, first) : rewrite_build_copy(&b, i, NULL);
  }
  free(inner), free(first);
  return rewrite_build_finish(&b, st);
}
