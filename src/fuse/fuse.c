/* fuse.c: the fusion pass (see fuse.h for the grouping rules).
 *
 * inl[n] says whether node n is inlined into its consumers. Every node that
 * is not inlined but reads an inlined one is a group root: it becomes a
 * fused node whose body is the root's expression tree cut at tensors that
 * are kept (graph inputs, weights, outputs of nodes not inlined). Bodies
 * that overflow the body limits, and groups the cost function refuses,
 * un-inline nodes; the graph is rebuilt until nothing changes (each round
 * inlines fewer nodes, so this ends).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "fuse.h"

#define FAIL INT32_MIN

typedef struct ctx {
  const ir_graph *g;
  unsigned char *inl, *wonly, *fusible;
  unsigned char *rowroot; /* a row reduction over the last axis: may be a
                             group's root (its body's last operator) */
  int *ncons;             /* distinct consumer nodes of each node */
  int *isout;             /* per tensor: a graph output */
  int *share;             /* per node: how many groups contain it */
  int *root_of; /* per node of the built graph: its root in g, or -1 */
  int32_t *map; /* g tensor -> built graph tensor */
} ctx;

/* A body under construction for one root. */
typedef struct bb {
  ir_body_op ops[IR_BODY_MAX_OPS];
  int nops;
  int32_t leaves[IR_MAX_IN];
  int nleaves;
  int memo_node[IR_BODY_MAX_OPS];
  int members[IR_BODY_MAX_OPS];
} bb;

static int32_t expand(ctx *c, bb *b, int n);

static int32_t ref_of(ctx *c, bb *b, int32_t t) {
  int p = c->g->tensors[t].node;
  if (p >= 0 && c->inl[p])
    return expand(c, b, p);
  for (int k = 0; k < b->nleaves; k++)
    if (b->leaves[k] == t)
      return -1 - k;
  if (b->nleaves == IR_MAX_IN)
    return FAIL;
  b->leaves[b->nleaves] = t;
  return -1 - b->nleaves++;
}

/* Appends node n (after its inlined producers); its body index or FAIL. */
static int32_t expand(ctx *c, bb *b, int n) {
  for (int i = 0; i < b->nops; i++)
    if (b->memo_node[i] == n)
      return i;
  const ir_node *nd = &c->g->nodes[n];
  int32_t in[IR_MAX_FIXED_IN];
  if (nd->nin > IR_MAX_FIXED_IN)
    return FAIL;
  for (int k = 0; k < nd->nin; k++)
    if ((in[k] = ref_of(c, b, nd->in[k])) == FAIL)
      return FAIL;
  if (b->nops == IR_BODY_MAX_OPS)
    return FAIL;
  ir_body_op *o = &b->ops[b->nops];
  memset(o, 0, sizeof *o);
  o->op = nd->op;
  o->nin = nd->nin;
  memcpy(o->in, in, sizeof(int32_t) * (size_t)nd->nin);
  o->a = nd->a;
  b->memo_node[b->nops] = n;
  b->members[b->nops] = n;
  return b->nops++;
}

static int is_root(const ctx *c, int n) {
  const ir_node *nd = &c->g->nodes[n];
  if (c->inl[n] || !(c->fusible[n] || c->rowroot[n]))
    return 0;
  for (int k = 0; k < nd->nin; k++) {
    int p = c->g->tensors[nd->in[k]].node;
    if (p >= 0 && c->inl[p])
      return 1;
  }
  return 0;
}

/* Un-inlines the inlined producers of n (a body that does not fit). */
static void cut_inputs(ctx *c, int n) {
  const ir_node *nd = &c->g->nodes[n];
  for (int k = 0; k < nd->nin; k++) {
    int p = c->g->tensors[nd->in[k]].node;
    if (p >= 0)
      c->inl[p] = 0;
  }
}

/* t as a tensor of h; its values copied into h's arena, or where share is
 * set, t's own (h must not outlive them: ir_graph_clone_shared). */
static int copy_tensor(ir_graph *h, const ir_tensor *t, int share,
                       base_diag *d) {
  int i = ir_add_tensor(h, t->name, t->kind, &t->shape, d);
  if (i < 0)
    return -1;
  h->tensors[i].dtype = t->dtype;
  h->tensors[i].line = t->line;
  h->tensors[i].col = t->col;
  if (t->data && share) {
    h->tensors[i].data = t->data;
  } else if (t->data) {
    size_t n = sizeof(float) * (size_t)ir_shape_numel(&t->shape);
    float *p = base_arena_alloc(h->arena, n);
    if (!p) {
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      return -1;
    }
    memcpy(p, t->data, n);
    h->tensors[i].data = p;
  }
  return i;
}

/* Builds the graph for the current inl. *changed is set when a body did
 * not fit (its inputs were cut: build again). */
static ir_graph *build(ctx *c, int *changed, base_diag *d) {
  const ir_graph *g = c->g;
  ir_graph *h = ir_graph_new(g->name);
  if (!h) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  memset(c->share, 0, sizeof(int) * (size_t)g->nnodes);
  *changed = 0;
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE &&
        (c->map[t] = copy_tensor(h, &g->tensors[t], 0, d)) < 0)
      goto fail;
  for (int n = 0; n < g->nnodes; n++) {
    const ir_node *nd = &g->nodes[n];
    if (c->inl[n])
      continue;
    const char *outs[IR_MAX_LIST];
    for (int k = 0; k < nd->nout; k++)
      outs[k] = g->tensors[nd->out[k]].name;
    int node;
    if (is_root(c, n)) {
      bb b;
      b.nops = b.nleaves = 0;
      if (expand(c, &b, n) == FAIL) {
        cut_inputs(c, n);
        *changed = 1;
        continue; /* this graph is thrown away */
      }
      const ir_body *body = ir_body_intern(b.nleaves, b.nops, b.ops, d);
      if (!body)
        goto fail;
      int32_t in[IR_MAX_IN];
      for (int k = 0; k < b.nleaves; k++)
        in[k] = c->map[b.leaves[k]];
      ir_attrs a;
      ir_attrs_default(IR_OP_FUSED, &a);
      a.body = body->id;
      node = ir_add_node(h, IR_OP_FUSED, in, b.nleaves, &a, outs, d);
      if (node >= 0)
        for (int i = 0; i < b.nops; i++)
          c->share[b.members[i]]++;
    } else {
      int32_t in[IR_MAX_IN];
      for (int k = 0; k < nd->nin; k++)
        in[k] = c->map[nd->in[k]];
      node = ir_add_node(h, nd->op, in, nd->nin, &nd->a, outs, d);
    }
    if (node < 0) {
      if (*changed) /* a cut body left a hole: rebuild */
        break;
      goto fail;
    }
    h->nodes[node].line = nd->line;
    h->nodes[node].col = nd->col;
    c->root_of[node] = is_root(c, n) ? n : -1;
    for (int k = 0; k < nd->nout; k++)
      c->map[nd->out[k]] = h->nodes[node].out[k];
  }
  if (*changed)
    return h;
  for (int i = 0; i < g->noutputs; i++)
    if (ir_add_output(h, c->map[g->outputs[i]], d))
      goto fail;
  return h;
fail:
  ir_graph_free(h);
  return NULL;
}

/* Refuses groups whose fused node costs at least what it replaces, and
 * counts them in *rejected; fails with the cost function's error. */
static base_status reject_costly(ctx *c, const ir_graph *h,
                                 const fuse_options *o, int *rejected,
                                 base_diag *d) {
  *rejected = 0;
  for (int i = 0; i < h->nnodes; i++) {
    int r = c->root_of[i];
    if (r < 0 || h->nodes[i].op != IR_OP_FUSED)
      continue;
    bb b;
    b.nops = b.nleaves = 0;
    if (expand(c, &b, r) == FAIL)
      continue;
    double before = 0, x, after;
    base_status st;
    for (int k = 0; k < b.nops; k++) {
      int n = b.members[k];
      if ((st = o->cost(o->cost_u, c->g, n, &x, NULL, d)))
        return st;
      before += x / (c->share[n] ? c->share[n] : 1);
    }
    if ((st = o->cost(o->cost_u, h, i, &after, NULL, d)))
      return st;
    if (after < before)
      continue;
    cut_inputs(c, r);
    (*rejected)++;
  }
  return BASE_OK;
}

/* The cost function summed over g's nodes that are not weight-only. */
static base_status sum_cost(const ir_graph *g, const fuse_options *o,
                            double *sum, base_diag *d) {
  return cd_sum_cost(g, o->cost, o->cost_u, sum, NULL, d);
}

/* A row reduction over the last axis of its input (ir_body_row_op). */
static int row_last_axis(const ir_graph *g, const ir_node *nd) {
  if (!ir_body_row_op(nd->op) || nd->nout != 1 ||
      (nd->op == IR_OP_LAYERNORM && nd->nin > 3) ||     /* (an xb: lower.h) */
      (nd->op == IR_OP_LAYERNORM && ir_ln_rms(&nd->a))) /* (its own kernel) */
    return 0;
  int last = g->tensors[nd->in[0]].shape.rank - 1;
  if (nd->op == IR_OP_REDUCE_MEAN)
    return nd->a.nlist == 1 && nd->a.list[0] == last;
  return nd->a.axis == last;
}

/* Whether node n is an ewadd that the CUDA executor folds into the
 * convolution or matmul computing one operand as a residual epilogue (with
 * a following relu): that producer has no activation, the add alone reads
 * its result, the other operand has the add's shape and exists before the
 * producer runs (src/gpu/plan.c, residual_fold). Inlining such an add into a
 * fused node would cost a full extra pass over the tensor (measured on an
 * H100 at batch 16: wide_resnet50_2 2.676 ms fused, 2.493 ms folded). */
static int residual_epilogue(const ctx *c, int n) {
  const ir_graph *g = c->g;
  const ir_node *nd = &g->nodes[n];
  if (nd->op != IR_OP_EWADD || nd->nin != 2 || nd->in[0] == nd->in[1])
    return 0;
  const ir_shape *o = &g->tensors[nd->out[0]].shape;
  for (int k = 0; k < 2; k++) {
    const ir_tensor *x = &g->tensors[nd->in[k]],
                    *r = &g->tensors[nd->in[1 - k]];
    if (x->kind != IR_T_VALUE || c->wonly[x->node])
      continue;
    const ir_node *p = &g->nodes[x->node];
    if ((p->op == IR_OP_CONV2D || p->op == IR_OP_MATMUL) &&
        p->a.act == IR_ACT_NONE && c->ncons[x->node] == 1 &&
        ir_shape_eq(&x->shape, o) && ir_shape_eq(&r->shape, o) &&
        (r->kind != IR_T_VALUE || r->node < x->node))
      return 1;
  }
  return 0;
}

static int init(ctx *c, const ir_graph *g) {
  size_t nn = (size_t)g->nnodes + 1, nt = (size_t)g->ntensors + 1;
  c->g = g;
  c->inl = base_calloc(nn, 1);
  c->wonly = base_calloc(nn, 1);
  c->fusible = base_calloc(nn, 1);
  c->rowroot = base_calloc(nn, 1);
  c->ncons = base_calloc(nn, sizeof(int));
  c->share = base_calloc(nn, sizeof(int));
  c->root_of = base_calloc(nn, sizeof(int));
  c->isout = base_calloc(nt, sizeof(int));
  c->map = base_calloc(nt, sizeof(int32_t));
  if (!c->inl || !c->wonly || !c->fusible || !c->rowroot || !c->ncons ||
      !c->share || !c->root_of || !c->isout || !c->map)
    return -1;
  ir_weight_only(g, c->wonly);
  for (int i = 0; i < g->noutputs; i++)
    c->isout[g->outputs[i]] = 1;
  for (int n = 0; n < g->nnodes; n++) {
    const ir_node *nd = &g->nodes[n];
    c->fusible[n] = ir_body_op_ok(nd->op) && nd->nout == 1 && !c->wonly[n];
    c->rowroot[n] = row_last_axis(g, nd) && !c->wonly[n];
    for (int k = 0; k < nd->nin; k++) { /* distinct producers */
      int p = g->tensors[nd->in[k]].node, seen = 0;
      for (int j = 0; j < k; j++)
        seen |= g->tensors[nd->in[j]].node == p;
      if (p >= 0 && !seen)
        c->ncons[p]++;
    }
  }
  /* inline: element-wise, all consumers element-wise, not an output */
  int *allfus = base_calloc(nn, sizeof(int));
  if (!allfus)
    return -1;
  for (int n = 0; n < g->nnodes; n++)
    allfus[n] = 1;
  for (int n = 0; n < g->nnodes; n++) {
    const ir_node *nd = &g->nodes[n];
    for (int k = 0; k < nd->nin; k++) { /* a row root takes its x only */
      int p = g->tensors[nd->in[k]].node;
      if (p >= 0 && !c->fusible[n] && !(c->rowroot[n] && k == 0))
        allfus[p] = 0;
    }
  }
  for (int n = 0; n < g->nnodes; n++) {
    const ir_node *nd = &g->nodes[n];
    if (!c->fusible[n] || !allfus[n] || c->ncons[n] == 0 ||
        c->isout[nd->out[0]] || residual_epilogue(c, n))
      continue;
    if (c->ncons[n] == 1) {
      c->inl[n] = 1;
      continue;
    }
    double out = (double)ir_shape_numel(&g->tensors[nd->out[0]].shape);
    double in = 0;
    for (int k = 0; k < nd->nin; k++)
      in += (double)ir_shape_numel(&g->tensors[nd->in[k]].shape);
    double keep = out * (1 + c->ncons[n]), recompute = in * c->ncons[n];
    c->inl[n] = recompute < keep;
  }
  free(allfus);
  return 0;
}

/* ---- attention ---------------------------------------------------------
 *
 * matmul(q, k) -> [scale] -> [ewadd(., b)] -> softmax over the last axis ->
 * [guard] -> matmul(., v) becomes attention(q, k, v[, s[, b]]) guard=0|1:
 * the scores never reach memory. The scale is smul(., s) or ewmul by a
 * scalar []; b broadcasts to the scores without growing them (a padding or
 * causal mask, a relative-position bias); the guard is what PyTorch's SDPA
 * exports after the softmax, where(not(equal(p, p)), 0, p) (a row masked
 * everywhere gives 0, not NaN). q and k may each come through an ewmul by
 * a scalar [] (SDPA's sqrt(scale) on both): those scalars join s, through
 * weight-only ewmul nodes computed once at load. Each link is read by the
 * next alone and is no graph output; the matmuls have no bias or
 * activation and q, k, v one rank (a batched k); d and e (q's and v's last
 * dimensions) at most FUSE_ATT_MAX_DIM, what the CUDA kernel takes, and d,
 * e and the keys at least 1. Without the q and k scalars the attention
 * node computes exactly these operators (ex_ref_attention), so like a
 * fused node it needs no rule; with them it computes (c1 c2 s) (q k) for
 * (c1 q)(c2 k) s, equal up to rounding (the end-to-end check covers it). */

/* The parts of one chain: nodes (-1: absent) and the tensors they bring. */
typedef struct att_parts {
  int mm, scale, add, softmax, eq, not_, where, qmul, kmul;
  int r1, add2, r2;   /* Swin's shifted windows: reshape, ewadd(., m),
                         reshape back between the bias and the softmax */
  int32_t m;          /* that mask (-1: none) */
  int ra, rb;         /* MaxViT's einsums: the scores reshaped (ra) before
                         the bias and softmax, the probabilities back (rb) */
  int32_t q, k, s, b; /* q, k as the scores matmul reads them (before the
                         scalars), s the scale (-1: none), b the bias (-1) */
  int32_t qs, ks;     /* the q and k scalars (-1: none) */
} att_parts;

/* The parts' nodes, for marking. */
static int att_nodes(const att_parts *a, int out[14]) {
  int all[14] = {a->mm,   a->scale, a->add,  a->softmax, a->eq,
                 a->not_, a->where, a->qmul, a->kmul,    a->r1,
                 a->add2, a->r2,    a->ra,   a->rb};
  int n = 0;
  for (int i = 0; i < 14; i++)
    if (all[i] >= 0)
      out[n++] = all[i];
  return n;
}

/* The producer of t when it is a node of the chain's kind: not weight-only,
 * t read by one node alone and no graph output; else -1. */
static int att_link(const ir_graph *g, const int *reads,
                    const unsigned char *wonly, int32_t t, int nreaders) {
  int p = g->tensors[t].node;
  return p >= 0 && !wonly[p] && reads[t] == nreaders ? p : -1;
}

/* Whether t is a scalar [] (a scale) of the float type of tensor like
 * (float32, or a half graph's type: its smul reads a half scale). */
static int att_scalar(const ir_graph *g, int32_t t, int32_t like) {
  return g->tensors[t].shape.rank == 0 &&
         g->tensors[t].dtype == g->tensors[like].dtype &&
         ir_dtype_is_float((ir_dtype)g->tensors[t].dtype);
}

/* Whether node p is x * c with c a scalar [] (smul, or ewmul either way
 * round) and x of p's shape: *x and *c. */
static int att_scaled(const ir_graph *g, int p, int32_t *x, int32_t *c) {
  const ir_node *nd = &g->nodes[p];
  if (nd->op != IR_OP_SMUL && nd->op != IR_OP_EWMUL)
    return 0;
  for (int k = 0; k < 2; k++) {
    int32_t a = nd->in[k], s = nd->in[1 - k];
    if ((nd->op == IR_OP_EWMUL || k == 0) && att_scalar(g, s, nd->out[0]) &&
        ir_shape_eq(&g->tensors[a].shape, &g->tensors[nd->out[0]].shape)) {
      *x = a, *c = s;
      return 1;
    }
  }
  return 0;
}

/* Whether weight t holds known values, all 0 (of any float type: a half
 * weight's values are held in float32 slots). */
static int att_zero(const ir_graph *g, int32_t t) {
  const ir_tensor *w = &g->tensors[t];
  if (w->kind != IR_T_WEIGHT || !w->data ||
      !ir_dtype_is_float((ir_dtype)w->dtype))
    return 0;
  int64_t n = ir_shape_numel(&w->shape);
  for (int64_t i = 0; i < n; i++)
    if (w->data[i] != 0.0f)
      return 0;
  return n >= 1;
}

/* The guard's where(not(equal(p, p)), 0, p) ending at node w: the softmax
 * output p into *p, its nodes into a. */
static int att_guard(const ir_graph *g, const int *reads,
                     const unsigned char *wonly, int w, att_parts *a,
                     int32_t *p) {
  const ir_node *wn = &g->nodes[w];
  if (wn->op != IR_OP_WHERE || !att_zero(g, wn->in[1]))
    return 0;
  int nt = att_link(g, reads, wonly, wn->in[0], 1);
  if (nt < 0 || g->nodes[nt].op != IR_OP_NOT)
    return 0;
  int eq = att_link(g, reads, wonly, g->nodes[nt].in[0], 1);
  if (eq < 0 || g->nodes[eq].op != IR_OP_EQUAL ||
      g->nodes[eq].in[0] != g->nodes[eq].in[1] ||
      g->nodes[eq].in[0] != wn->in[2] ||
      !ir_shape_eq(&g->tensors[wn->in[2]].shape, &g->tensors[wn->out[0]].shape))
    return 0;
  a->where = w, a->not_ = nt, a->eq = eq;
  *p = wn->in[2];
  return 1;
}

/* Whether b broadcasts to the scores [..., S, T] without growing them and
 * (gpu) the GPU reads it (src/gpu/run/att.c: the dimensions before the
 * last three folded into one, along which b broadcasts along all or none;
 * a dimension b lacks broadcasts). */
static int att_bias_ok(const ir_shape *b, const ir_shape *sc, int gpu) {
  int r = sc->rank, lead_b = 0, lead_full = 0;
  if (b->rank > r)
    return 0;
  for (int i = 0; i < b->rank; i++) {
    int j = r - b->rank + i;
    if (b->dim[i] != 1 && b->dim[i] != sc->dim[j])
      return 0;
  }
  for (int j = 0; j < r - 3; j++) {
    int i = j - (r - b->rank);
    if (sc->dim[j] > 1)
      i < 0 || b->dim[i] == 1 ? lead_b++ : lead_full++;
  }
  return !gpu || !lead_b || !lead_full;
}

/* Swin's shifted windows between the bias and the softmax (t, its
 * input): reshape(ewadd(reshape(x), m)) with x and the result of one shape
 * (the scores') and m broadcasting to the middle one without growing it.
 * Sets a's r1, add2, r2 and m and *t to x where found. */
static void att_windows(const ir_graph *g, const int *reads,
                        const unsigned char *wonly, int32_t *t, att_parts *a) {
  int r2 = att_link(g, reads, wonly, *t, 1);
  if (r2 < 0 || g->nodes[r2].op != IR_OP_RESHAPE)
    return;
  int ad = att_link(g, reads, wonly, g->nodes[r2].in[0], 1);
  if (ad < 0 || g->nodes[ad].op != IR_OP_EWADD)
    return;
  const ir_node *nd = &g->nodes[ad];
  const ir_shape *mid = &g->tensors[nd->out[0]].shape;
  for (int k = 0; k < 2; k++) {
    int r1 = att_link(g, reads, wonly, nd->in[k], 1);
    const ir_tensor *m = &g->tensors[nd->in[1 - k]];
    if (r1 < 0 || g->nodes[r1].op != IR_OP_RESHAPE ||
        !ir_shape_eq(&g->tensors[nd->in[k]].shape, mid) ||
        m->dtype != g->tensors[nd->out[0]].dtype ||
        !att_bias_ok(&m->shape, mid, 0) ||
        !ir_shape_eq(&g->tensors[g->nodes[r1].in[0]].shape,
                     &g->tensors[*t].shape))
      continue;
    a->r1 = r1, a->add2 = ad, a->r2 = r2, a->m = nd->in[1 - k];
    *t = g->nodes[r1].in[0];
    return;
  }
}

/* The scores' producer chain from t (the softmax's input): [ewadd(., b)],
 * [scale], matmul(q, k) with q and k through their scalars. */
static int att_scores(const ir_graph *g, const int *reads,
                      const unsigned char *wonly, int32_t t, int r,
                      att_parts *a) {
  att_windows(g, reads, wonly, &t, a);
  int p = att_link(g, reads, wonly, t, 1);
  if (p >= 0 && g->nodes[p].op == IR_OP_EWADD) {
    const ir_node *nd = &g->nodes[p];
    for (int k = 0; k < 2 && a->add < 0; k++) {
      int x = att_link(g, reads, wonly, nd->in[k], 1);
      const ir_shape *bs = &g->tensors[nd->in[1 - k]].shape;
      int view = a->rb >= 0; /* the scores come through a reshape */
      if (x >= 0 && g->tensors[nd->in[1 - k]].dtype == g->tensors[t].dtype &&
          ir_shape_eq(&g->tensors[nd->in[k]].shape,
                      &g->tensors[nd->out[0]].shape) &&
          att_bias_ok(bs, &g->tensors[nd->out[0]].shape, !view) &&
          (view ? g->nodes[x].op == IR_OP_RESHAPE &&
                      ir_shape_eq(&g->tensors[g->nodes[x].in[0]].shape,
                                  &g->tensors[g->nodes[a->rb].out[0]].shape)
                : g->nodes[x].op == IR_OP_MATMUL ||
                      att_scaled(g, x, &(int32_t){0}, &(int32_t){0})))
        a->add = p, a->b = nd->in[1 - k], t = nd->in[k];
    }
    if (a->add < 0)
      return 0;
    p = att_link(g, reads, wonly, t, 1);
    if (a->rb >= 0) { /* the reshape checked above */
      a->ra = p, t = g->nodes[p].in[0];
      p = att_link(g, reads, wonly, t, 1);
    }
  }
  int32_t x;
  if (p >= 0 && att_scaled(g, p, &x, &a->s)) {
    a->scale = p;
    p = att_link(g, reads, wonly, x, 1);
  }
  if (p < 0)
    return 0;
  const ir_node *mm = &g->nodes[p];
  if (mm->op != IR_OP_MATMUL || mm->nin != 2 || mm->a.act != IR_ACT_NONE ||
      g->tensors[mm->in[0]].shape.rank != r ||
      g->tensors[mm->in[1]].shape.rank != r)
    return 0;
  a->mm = p, a->q = mm->in[0], a->k = mm->in[1];
  /* half too (until 2026-11-30 a half chain kept the scalars' nodes: the
   * product rounds once where the chain rounds q and k each, and a sharp
   * softmax's large scores moved past the half check's tolerance; the
   * check's second test now holds such a node to float32 and to the
   * model's own half copy, docs/half.md): Llama's two [B,H,S,D] products
   * a layer, each a kernel of its own on the GPU */
  int32_t c;
  int qm = att_link(g, reads, wonly, a->q, 1);
  if (qm >= 0 && g->nodes[qm].op == IR_OP_EWMUL && att_scaled(g, qm, &x, &c))
    a->qmul = qm, a->q = x, a->qs = c;
  int km = att_link(g, reads, wonly, a->k, 1);
  if (km >= 0 && km != qm && g->nodes[km].op == IR_OP_EWMUL &&
      att_scaled(g, km, &x, &c))
    a->kmul = km, a->k = x, a->ks = c;
  return 1;
}

/* Whether t is a weight or computed from weights only. */
static int att_const(const ir_graph *g, const unsigned char *wonly, int32_t t) {
  const ir_tensor *x = &g->tensors[t];
  return x->kind == IR_T_WEIGHT || (x->kind == IR_T_VALUE && wonly[x->node]);
}

/* The chain ending at node n (the second matmul) into *a, or 0. reads:
 * ir_read_counts (per input slot). */
static int att_chain(const ir_graph *g, const int *reads,
                     const unsigned char *wonly, int n, att_parts *a) {
  const ir_node *c = &g->nodes[n];
  *a = (att_parts){-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                   -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  if (c->op != IR_OP_MATMUL || c->nin != 2 || c->a.act != IR_ACT_NONE ||
      wonly[n])
    return 0;
  int r = g->tensors[c->in[0]].shape.rank;
  if (g->tensors[c->in[1]].shape.rank != r)
    return 0;
  int32_t t = c->in[0];
  int w = att_link(g, reads, wonly, t, 1);
  if (w >= 0 && g->nodes[w].op == IR_OP_WHERE &&
      !att_guard(g, reads, wonly, w, a, &t))
    return 0;
  int rb = att_link(g, reads, wonly, t, 1), rs = r; /* the softmax's rank */
  if (a->where < 0 && rb >= 0 && g->nodes[rb].op == IR_OP_RESHAPE) {
    const ir_shape *x = &g->tensors[g->nodes[rb].in[0]].shape;
    if (x->dim[x->rank - 1] != g->tensors[t].shape.dim[r - 1])
      return 0; /* rows of the softmax other than the scores' */
    a->rb = rb, t = g->nodes[rb].in[0], rs = x->rank;
  }
  /* read by the guard three times: equal(p, p) and where */
  int sm = att_link(g, reads, wonly, t, a->where >= 0 ? 3 : 1);
  if (sm < 0 || g->nodes[sm].op != IR_OP_SOFTMAX ||
      g->nodes[sm].a.axis != rs - 1)
    return 0;
  a->softmax = sm;
  if (!att_scores(g, reads, wonly, g->nodes[sm].in[0], r, a) ||
      (a->m >= 0 && a->b < 0) || /* the windows' mask: after a bias only */
      (a->rb >= 0 && (a->ra < 0 || !att_const(g, wonly, a->b))))
    return 0; /* the views: around a bias computed once only (expanded to
                 the scores' shape, at load) */
  const ir_shape *q = &g->tensors[a->q].shape;
  const ir_shape *v = &g->tensors[c->in[1]].shape;
  const ir_shape *k = &g->tensors[a->k].shape;
  return q->dim[r - 1] >= 1 && q->dim[r - 1] <= FUSE_ATT_MAX_DIM &&
         v->dim[r - 1] >= 1 && v->dim[r - 1] <= FUSE_ATT_MAX_DIM &&
         k->dim[r - 1] >= 1;
}

/* Node op(in) a in h named "<out>.<tag><i>" (a fresh name); its output
 * tensor, or -2. */
static int32_t att_add(ir_graph *h, ir_opcode op, const int32_t *in, int nin,
                       const ir_attrs *a, const char *out, const char *tag,
                       int i, base_diag *d) {
  char name[512];
  snprintf(name, sizeof name, "%s.%s%d", out, tag, i);
  for (int u = 0; ir_find_tensor(h, name) >= 0; u++)
    snprintf(name, sizeof name, "%s.%s%d_%d", out, tag, i, u);
  const char *nm = name;
  int node = ir_add_node(h, op, in, nin, a, &nm, d);
  return node < 0 ? -2 : h->nodes[node].out[0];
}

/* t1 * t2 in h (either -1: the other; both: -1) as a new ewmul named
 * "<out>.scale<i>"; -2 on failure. */
static int32_t att_mul(ir_graph *h, int32_t t1, int32_t t2, const char *out,
                       int i, base_diag *d) {
  if (t1 < 0 || t2 < 0)
    return t1 < 0 ? t2 : t1;
  ir_attrs a;
  ir_attrs_default(IR_OP_EWMUL, &a);
  return att_add(h, IR_OP_EWMUL, (int32_t[]){t1, t2}, 2, &a, out, "scale", i,
                 d);
}

/* A const_ones of shape s in h, of float type dt (constants are float32:
 * a half one through a cast, exact); its tensor or -2. */
static int32_t att_ones(ir_graph *h, const ir_shape *s, ir_dtype dt,
                        const char *out, int i, base_diag *d) {
  ir_attrs o;
  ir_attrs_default(IR_OP_CONST_ONES, &o);
  o.nlist = s->rank;
  for (int k = 0; k < s->rank; k++)
    o.list[k] = s->dim[k];
  int32_t t = att_add(h, IR_OP_CONST_ONES, NULL, 0, &o, out, "one", i, d);
  if (t < 0 || dt == IR_DT_F32)
    return t;
  ir_attrs_default(IR_OP_CAST, &o);
  o.groups = (int32_t)dt; /* cast's `to` (params.def) */
  return att_add(h, IR_OP_CAST, &t, 1, &o, out, "onecast", i, d);
}

/* b broadcast to shape S in h: ewmul(b, ones(S)) (nodes "<out>.<tag>0"
 * and the ones, of b's type); its tensor or -2. */
static int32_t att_spread(ir_graph *h, int32_t b, const ir_shape *S,
                          const char *out, const char *tag, base_diag *d) {
  int32_t ones = att_ones(h, S, (ir_dtype)h->tensors[b].dtype, out, 1, d);
  ir_attrs at;
  ir_attrs_default(IR_OP_EWMUL, &at);
  return ones < 0 ? -2
                  : att_add(h, IR_OP_EWMUL, (int32_t[]){b, ones}, 2, &at, out,
                            tag, 0, d);
}

/* The windows' bias and mask as one bias of the scores' shape P:
 * reshape(ewadd(reshape(b * ones(P)) to Q, m)) to P (Q: the windowed
 * shape), nodes of h that run once at load where b and m are weights;
 * its tensor or -2. */
static int32_t att_window_bias(ir_graph *h, const ir_graph *g,
                               const att_parts *a, const int32_t *map,
                               const char *out, base_diag *d) {
  const ir_node *r1 = &g->nodes[a->r1];
  const ir_shape *P = &g->tensors[r1->in[0]].shape;
  const ir_shape *Q = &g->tensors[r1->out[0]].shape;
  ir_attrs at;
  int32_t t = att_spread(h, map[a->b], P, out, "wbias", d);
  for (int step = 0; step < 3 && t >= 0; step++) {
    const ir_shape *to = step == 0 ? Q : P;
    if (step == 1) {
      ir_attrs_default(IR_OP_EWADD, &at);
      t = att_add(h, IR_OP_EWADD, (int32_t[]){t, map[a->m]}, 2, &at, out,
                  "wbias", 2, d);
      continue;
    }
    ir_attrs_default(IR_OP_RESHAPE, &at);
    at.nlist = to->rank;
    for (int k = 0; k < to->rank; k++)
      at.list[k] = to->dim[k];
    t = att_add(h, IR_OP_RESHAPE, &t, 1, &at, out, "wbias", 1 + 2 * step, d);
  }
  return t;
}

/* MaxViT's bias, added to the scores reshaped to Q, as a bias of the
 * scores' shape P: reshape(b * ones(Q)) to P (run once at load where b is
 * a weight); its tensor or -2. */
static int32_t att_view_bias(ir_graph *h, const ir_graph *g, const att_parts *a,
                             const int32_t *map, const char *out,
                             base_diag *d) {
  const ir_node *ra = &g->nodes[a->ra];
  const ir_shape *P = &g->tensors[ra->in[0]].shape;
  const ir_shape *Q = &g->tensors[ra->out[0]].shape;
  ir_attrs at;
  int32_t t = att_spread(h, map[a->b], Q, out, "vbias", d);
  if (t < 0)
    return -2;
  ir_attrs_default(IR_OP_RESHAPE, &at);
  at.nlist = P->rank;
  for (int k = 0; k < P->rank; k++)
    at.list[k] = P->dim[k];
  return att_add(h, IR_OP_RESHAPE, &t, 1, &at, out, "vbias", 1, d);
}

/* Chain a's attention node in h (node lines: nd's, the second matmul),
 * its output named out; the node, or -1. */
static int att_emit(ir_graph *h, const ir_graph *g, const ir_node *nd,
                    const att_parts *a, const int32_t *map, const char *out,
                    base_diag *d) {
  int32_t s = -1;
  int32_t sc[3] = {a->qs, a->ks, a->s};
  for (int i = 0; i < 3; i++)
    if (sc[i] >= 0 && (s = att_mul(h, s, map[sc[i]], out, i, d)) == -2)
      return -1;
  int32_t in[5] = {map[a->q], map[a->k], map[nd->in[1]], s, -1};
  int nin = s >= 0 ? 4 : 3;
  if (a->b >= 0) {
    if (s < 0 &&
        (s = att_ones(h, &(ir_shape){0}, (ir_dtype)h->tensors[in[0]].dtype, out,
                      0, d)) < 0)
      return -1; /* b needs s: a scale of 1 */
    in[3] = s;
    in[4] = a->m >= 0    ? att_window_bias(h, g, a, map, out, d)
            : a->ra >= 0 ? att_view_bias(h, g, a, map, out, d)
                         : map[a->b];
    if (in[4] < 0)
      return -1;
    nin = 5;
  }
  ir_attrs at;
  ir_attrs_default(IR_OP_ATTENTION, &at);
  at.keepdims = a->where >= 0; /* guard */
  return ir_add_node(h, IR_OP_ATTENTION, in, nin, &at, &out, d);
}

/* g with the chains whose end node e has want[e] set made attention
 * nodes (node lines kept: the second matmul's); *made counts them. Its
 * weight values are g's (fuse_graph copies them into its result). */
static ir_graph *att_build(const ir_graph *g, const int *end_of,
                           const unsigned char *want, const att_parts *parts,
                           int *helpers, int *made, base_diag *d) {
  ir_graph *h = ir_graph_new(g->name);
  int32_t *map = base_calloc((size_t)g->ntensors + 1, sizeof *map);
  *made = 0;
  if (!h || !map) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto fail;
  }
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE &&
        (map[t] = copy_tensor(h, &g->tensors[t], 1, d)) < 0)
      goto fail;
  for (int n = 0; n < g->nnodes; n++) {
    const ir_node *nd = &g->nodes[n];
    if (end_of[n] >= 0 && want[end_of[n]])
      continue; /* inside a chain that becomes attention */
    const char *outs[IR_MAX_LIST];
    for (int k = 0; k < nd->nout; k++)
      outs[k] = g->tensors[nd->out[k]].name;
    int32_t in[IR_MAX_IN];
    int node;
    if (want[n]) {
      helpers[n] = h->nnodes; /* its scale's and bias's nodes from here */
      node = att_emit(h, g, nd, &parts[n], map, outs[0], d);
      ++*made;
    } else {
      for (int k = 0; k < nd->nin; k++)
        in[k] = map[nd->in[k]];
      node = ir_add_node(h, nd->op, in, nd->nin, &nd->a, outs, d);
    }
    if (node < 0)
      goto fail;
    h->nodes[node].line = nd->line;
    h->nodes[node].col = nd->col;
    for (int k = 0; k < nd->nout; k++)
      map[nd->out[k]] = h->nodes[node].out[k];
  }
  for (int i = 0; i < g->noutputs; i++)
    if (ir_add_output(h, map[g->outputs[i]], d))
      goto fail;
  free(map);
  return h;
fail:
  free(map);
  ir_graph_free(h);
  return NULL;
}

/* *out: g with its attention chains made attention nodes where the cost
 * function (if any) prices the node below the chain, *made of them; NULL
 * where there is none. Fails (d set) on out of memory or the cost
 * function's error. */
static base_status fuse_attention(const ir_graph *g, const fuse_options *o,
                                  ir_graph **out, int *made, base_diag *d) {
  int *end_of = base_malloc(sizeof(int) * ((size_t)g->nnodes + 1));
  int *reads = ir_read_counts(g);
  unsigned char *want = base_calloc((size_t)g->nnodes + 1, 1);
  unsigned char *wonly = base_calloc((size_t)g->nnodes + 1, 1);
  att_parts *parts = base_malloc(sizeof *parts * ((size_t)g->nnodes + 1));
  int *helpers = base_calloc((size_t)g->nnodes + 1, sizeof *helpers);
  unsigned char *hw = NULL; /* h's weight-only nodes */
  ir_graph *h = NULL;
  base_status st = BASE_OK;
  int any = 0;
  *made = 0;
  if (!end_of || !reads || !want || !wonly || !parts || !helpers) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  ir_weight_only(g, wonly);
  for (int n = 0; n < g->nnodes; n++)
    end_of[n] = -1;
  for (int n = 0; n < g->nnodes; n++) {
    int m[14];
    if (!att_chain(g, reads, wonly, n, &parts[n]))
      continue;
    int nm = att_nodes(&parts[n], m), taken = 0; /* a link of an earlier
                                                    chain (a crafted graph) */
    for (int k = 0; k < nm; k++)
      taken |= want[m[k]] || end_of[m[k]] >= 0;
    if (taken)
      continue;
    want[n] = 1, any = 1;
    for (int k = 0; k < nm; k++)
      end_of[m[k]] = n;
  }
  for (int round = 0; any && round < 2; round++) {
    if (!(h = att_build(g, end_of, want, parts, helpers, made, d))) {
      st = d ? d->code : BASE_ERR_NOMEM;
      goto out;
    }
    if (!o || !o->cost || round)
      break;
    int refused = 0; /* price each node against its chain: the node of h
                        computing the chain's result (by its name: h may
                        hold attention nodes of g's own too) */
    for (int n = 0; n < g->nnodes; n++) {
      if (!want[n])
        continue;
      int t = ir_find_tensor(h, g->tensors[g->nodes[n].out[0]].name);
      int i = t >= 0 ? h->tensors[t].node : -1;
      if (i < 0 || h->nodes[i].op != IR_OP_ATTENTION) {
        st = base_diag_set(d, BASE_ERR_INTERNAL, g->nodes[n].line, 0,
                           "fusion: attention node of '%s' not found",
                           g->tensors[g->nodes[n].out[0]].name);
        goto out;
      }
      double before = 0, x, after;
      st = o->cost(o->cost_u, h, i, &after, NULL, d);
      if (!hw && !st) {
        if (!(hw = base_calloc((size_t)h->nnodes + 1, 1))) {
          st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
          goto out;
        }
        ir_weight_only(h, hw);
      }
      for (int j = helpers[n]; !st && j < i; j++) /* run every time: the
                                                     bias made of inputs */
        if (!hw[j] && !(st = o->cost(o->cost_u, h, j, &x, NULL, d)))
          after += x;
      for (int j = 0; !st && j <= n; j++)
        if ((j == n || end_of[j] == n) &&
            !(st = o->cost(o->cost_u, g, j, &x, NULL, d)))
          before += x;
      if (st)
        goto out;
      if (after >= before)
        want[n] = 0, refused = 1;
    }
    if (!refused)
      break;
    ir_graph_free(h);
    h = NULL;
  }
out:
  if (st || !*made) {
    ir_graph_free(h);
    h = NULL;
    *made = 0;
  }
  *out = h;
  free(end_of), free(reads), free(want), free(wonly), free(parts);
  free(helpers), free(hw);
  return st;
}

static void done(ctx *c) {
  free(c->inl);
  free(c->wonly);
  free(c->fusible);
  free(c->rowroot);
  free(c->ncons);
  free(c->share);
  free(c->root_of);
  free(c->isout);
  free(c->map);
}

static ir_graph *fuse_one(const ir_graph *g, const fuse_options *o,
                          fuse_stats *st, base_diag *d) {
  memset(st, 0, sizeof *st);
  ctx c;
  memset(&c, 0, sizeof c);
  ir_graph *h = NULL;
  ir_graph *ga;
  if (fuse_attention(g, o, &ga, &st->attention, d))
    return NULL;
  const ir_graph *g0 = g; /* the costs before: the graph as given */
  if (ga)
    g = ga;
  if (init(&c, g)) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  for (;;) {
    int changed, rejected = 0;
    h = build(&c, &changed, d);
    if (!h)
      goto out;
    if (!changed && o && o->cost && reject_costly(&c, h, o, &rejected, d))
      goto fail;
    st->rejected += rejected;
    if (!changed && !rejected)
      break;
    ir_graph_free(h);
  }
  for (int i = 0; i < h->nnodes; i++)
    st->groups += h->nodes[i].op == IR_OP_FUSED;
  for (int n = 0; n < g->nnodes; n++) {
    st->fused_ops += c.share[n] > 0;
    st->recomputed += c.share[n] > 1;
  }
  if (o && o->cost &&
      (sum_cost(g0, o, &st->cost_before, d) ||
       sum_cost(h, o, &st->cost_after, d)))
    goto fail;
out:
  done(&c);
  ir_graph_free(ga);
  return h;
fail:
  ir_graph_free(h);
  h = NULL;
  goto out;
}

/* g fused as it is, and (with a cost function) g with its products' bias
 * and residual peeled before the layer norms that alone read them
 * (fuse_peel) fused too: the one priced lower, the first on a tie. */
ir_graph *fuse_graph(const ir_graph *g, const fuse_options *o, fuse_stats *st,
                     base_diag *d) {
  fuse_stats local, ps;
  if (!st)
    st = &local;
  ir_graph *h = fuse_one(g, o, st, d);
  if (!h || !o || !o->cost)
    return h;
  int n = 0;
  ir_graph *p = NULL, *hp = NULL;
  if (fuse_peel(g, &p, &n, d) || (p && !(hp = fuse_one(p, o, &ps, d)))) {
    ir_graph_free(p);
    ir_graph_free(h);
    return NULL;
  }
  ir_graph_free(p);
  if (hp && ps.cost_after < st->cost_after) {
    ps.cost_before = st->cost_before; /* the graph as given */
    ps.peeled = n;
    *st = ps;
    ir_graph_free(h);
    return hp;
  }
  ir_graph_free(hp);
  return h;
}
