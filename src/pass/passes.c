/* passes.c: the built-in passes run before and after the search: common
 * subexpressions, batchnorm folding, activation fusion and dead code removal.
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
  return n->op == IR_OP_CONV2D && n->a.act == IR_ACT_NONE &&
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

ir_graph *pass_fold_batchnorm(const ir_graph *g, int *count, base_diag *d) {
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
