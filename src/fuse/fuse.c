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
      (nd->op == IR_OP_LAYERNORM && nd->nin > 3)) /* (an xb: lower.h) */
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
 * matmul(q, k) -> [smul(., s)] -> softmax over the last axis -> matmul(.,
 * v) becomes attention(q, k, v[, s]): the scores never reach memory. Each
 * link is read by the next alone and is no graph output; the matmuls have
 * no bias or activation and q, k, v one rank (a batched k); d and e (q's
 * and v's last dimensions) at most FUSE_ATT_MAX_DIM, what the CUDA
 * kernel takes, and d, e and the keys at least 1. The attention node computes
 * exactly these operators (ex_ref_attention), so like a fused node it needs no
 * rule. */

/* The chain ending at node n (the second matmul), or 0: its scores
 * matmul, smul (-1: none) and softmax in m[0..2]. reads: ir_read_counts
 * (a link read by the next node alone and no graph output: 1). */
static int att_chain(const ir_graph *g, const int *reads,
                     const unsigned char *wonly, int n, int m[3]) {
  const ir_node *c = &g->nodes[n];
  if (c->op != IR_OP_MATMUL || c->nin != 2 || c->a.act != IR_ACT_NONE ||
      wonly[n])
    return 0;
  int r = g->tensors[c->in[0]].shape.rank;
  if (g->tensors[c->in[1]].shape.rank != r)
    return 0;
  int t = c->in[0];
  for (int k = 2; k >= 0; k--) { /* softmax, smul, scores matmul */
    int p = g->tensors[t].node;
    if (p < 0 || wonly[p] || reads[t] != 1)
      return 0;
    const ir_node *nd = &g->nodes[p];
    if (k == 2 && (nd->op != IR_OP_SOFTMAX || nd->a.axis != r - 1))
      return 0;
    if (k == 1 && nd->op != IR_OP_SMUL) {
      m[1] = -1; /* no scale: this is the scores matmul */
      k = 0;
    }
    if (k == 0 &&
        (nd->op != IR_OP_MATMUL || nd->nin != 2 || nd->a.act != IR_ACT_NONE ||
         g->tensors[nd->in[0]].shape.rank != r ||
         g->tensors[nd->in[1]].shape.rank != r))
      return 0;
    m[k] = p;
    t = nd->in[0];
  }
  const ir_shape *q = &g->tensors[g->nodes[m[0]].in[0]].shape;
  const ir_shape *v = &g->tensors[c->in[1]].shape;
  const ir_shape *k = &g->tensors[g->nodes[m[0]].in[1]].shape;
  return q->dim[r - 1] >= 1 && q->dim[r - 1] <= FUSE_ATT_MAX_DIM &&
         v->dim[r - 1] >= 1 && v->dim[r - 1] <= FUSE_ATT_MAX_DIM &&
         k->dim[r - 1] >= 1;
}

/* g with the chains whose end node e has want[e] set made attention
 * nodes (node lines kept: the second matmul's); *made counts them. Its
 * weight values are g's (fuse_graph copies them into its result). */
static ir_graph *att_build(const ir_graph *g, const int *end_of,
                           const unsigned char *want, int *made, base_diag *d) {
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
      const ir_node *mm = NULL, *sm = NULL;
      for (int j = 0; j < n; j++)
        if (end_of[j] == n && g->nodes[j].op == IR_OP_MATMUL)
          mm = &g->nodes[j];
        else if (end_of[j] == n && g->nodes[j].op == IR_OP_SMUL)
          sm = &g->nodes[j];
      int nin = sm ? 4 : 3;
      in[0] = map[mm->in[0]], in[1] = map[mm->in[1]], in[2] = map[nd->in[1]];
      if (sm)
        in[3] = map[sm->in[1]];
      ir_attrs a;
      ir_attrs_default(IR_OP_ATTENTION, &a);
      node = ir_add_node(h, IR_OP_ATTENTION, in, nin, &a, outs, d);
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
  ir_graph *h = NULL;
  base_status st = BASE_OK;
  int any = 0;
  *made = 0;
  if (!end_of || !reads || !want || !wonly) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  ir_weight_only(g, wonly);
  for (int n = 0; n < g->nnodes; n++)
    end_of[n] = -1;
  for (int n = 0; n < g->nnodes; n++) {
    int m[3];
    if (!att_chain(g, reads, wonly, n, m))
      continue;
    int taken = 0; /* a link of an earlier chain (a crafted graph) */
    for (int k = 0; k < 3; k++)
      taken |= m[k] >= 0 && (want[m[k]] || end_of[m[k]] >= 0);
    if (taken)
      continue;
    want[n] = 1, any = 1;
    for (int k = 0; k < 3; k++)
      if (m[k] >= 0)
        end_of[m[k]] = n;
  }
  for (int round = 0; any && round < 2; round++) {
    if (!(h = att_build(g, end_of, want, made, d))) {
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
  free(end_of), free(reads), free(want), free(wonly);
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

ir_graph *fuse_graph(const ir_graph *g, const fuse_options *o, fuse_stats *st,
                     base_diag *d) {
  fuse_stats local;
  if (!st)
    st = &local;
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
