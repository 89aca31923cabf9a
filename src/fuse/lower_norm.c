/* lower_norm.c: the lower stage's add+norm family (lower.h): a residual
 * add that a layer norm (or RMSNorm) reads, and that is read elsewhere
 * too, computed with the norm in one addnorm node writing both.
 *
 *   s = ewadd(a, b)                       s, y = addnorm(a, b, g, be)
 *   y = layernorm(s, g, be)       ->      (s still read by the others)
 *
 * Pre-norm blocks (Swin's `x = x + attn(...); y = norm2(x)`, where the
 * window departition between the attention's projection and the add keeps
 * the add out of the matmul's epilogue, lower_epi.c): the add and the norm
 * were two kernels, the norm reading the sum back; one kernel reads a and
 * b once and writes the sum and the norm (torch.compile's fused add +
 * layer norm). Lowered where the add is not weight-only and its sum has
 * another reader or is a graph output (a sum the norm alone reads is the
 * fusion pass's fused node), the norm reads the sum as its x (no xb) and
 * its gamma and beta exist before the add runs (the node takes the add's
 * place), a is the sum's shape and b broadcasts over it as whole rows
 * (ir_shape_addnorm: ViT's position embedding over the batch). With a
 * cost function, only where it prices the node below the add and the norm
 * it replaces. The first norm reading a sum takes it; others read s. */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct norm {
  const ir_graph *g;
  int *reads;
  unsigned char *wonly;
  int32_t *ln;         /* per add node: 1 + the norm node it takes, or 0 */
  int32_t *swap;       /* per add node: b is its first operand */
  unsigned char *gone; /* per norm node: taken by its add */
  unsigned char *nope; /* per add node: refused by the cost function */
} norm;

/* Does addnorm's shape rule take a (the sum's shape) and b with the norm
 * node l's parameters? */
static int shapes_fit(const ir_graph *g, const ir_node *l, int a, int b) {
  const ir_shape *in[4] = {&g->tensors[a].shape, &g->tensors[b].shape};
  for (int k = 1; k < l->nin; k++)
    in[k + 1] = &g->tensors[l->in[k]].shape;
  ir_attrs at = l->a;
  ir_shape out[2];
  base_diag d;
  memset(&d, 0, sizeof d);
  return ir_infer(IR_OP_ADDNORM, &at, in, l->nin + 1, out, &d) == BASE_OK;
}

/* The first layer norm reading tensor s as its x, with no xb and its
 * parameters computed before node j; -1 if none. */
static int norm_reader(const norm *c, int j, int s) {
  const ir_graph *g = c->g;
  for (int i = j + 1; i < g->nnodes; i++) {
    const ir_node *l = &g->nodes[i];
    if (l->op != IR_OP_LAYERNORM || l->in[0] != s || l->nin > 3 || c->gone[i])
      continue;
    int ok = 1;
    for (int k = 1; k < l->nin; k++) {
      const ir_tensor *p = &g->tensors[l->in[k]];
      ok &= l->in[k] != s && (p->kind != IR_T_VALUE || p->node < j);
    }
    if (ok)
      return i;
  }
  return -1;
}

/* Add node j with a norm reading its sum and others too (see the top). */
static int fold_norm(norm *c, int j) {
  const ir_graph *g = c->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_EWADD || n->nin != 2 || c->wonly[j] || c->nope[j])
    return 0;
  int s = n->out[0];
  if (c->reads[s] < 2) /* a graph output counts as a reader */
    return 0;
  const ir_shape *o = &g->tensors[s].shape;
  int l = norm_reader(c, j, s);
  if (l < 0)
    return 0;
  for (int k = 0; k < 2; k++) {
    int a = n->in[k], b = n->in[1 - k];
    if (ir_shape_eq(&g->tensors[a].shape, o) &&
        shapes_fit(g, &g->nodes[l], a, b)) {
      c->ln[j] = 1 + l;
      c->swap[j] = k;
      c->gone[l] = 1;
      return 1;
    }
  }
  return 0;
}

static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  const norm *c = u;
  const ir_node *nd = &g->nodes[i];
  if (c->gone[i])
    return 0; /* its output mapped with its add's */
  if (!c->ln[i])
    return ir_rebuild_copy(h, g, i, map, d) < 0 ? -1 : 0;
  const ir_node *l = &g->nodes[c->ln[i] - 1];
  int32_t in[4] = {map[nd->in[c->swap[i]]], map[nd->in[1 - c->swap[i]]]};
  for (int k = 1; k < l->nin; k++)
    in[k + 1] = map[l->in[k]];
  ir_attrs a;
  ir_attrs_default(IR_OP_ADDNORM, &a);
  a.axis = l->a.axis, a.eps = l->a.eps;
  a.count_include_pad = l->a.count_include_pad; /* rms */
  const char *outs[2] = {g->tensors[nd->out[0]].name,
                         g->tensors[l->out[0]].name};
  int m = ir_add_node(h, IR_OP_ADDNORM, in, l->nin + 1, &a, outs, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = l->line;
  h->nodes[m].col = l->col;
  map[nd->out[0]] = h->nodes[m].out[0];
  map[l->out[0]] = h->nodes[m].out[1];
  return 0;
}

/* The cost of node i of graph x into *c. */
static base_status cost_of(const fuse_options *o, const ir_graph *x, int i,
                           double *c, base_diag *d) {
  int est = 0;
  return o->cost(o->cost_u, x, i, c, &est, d);
}

/* Refuses (nope) every add whose addnorm node in h the cost function does
 * not price below its add and norm in g; *refused counts them. */
static base_status price(norm *c, const ir_graph *h, const fuse_options *o,
                         int *refused, base_diag *d) {
  const ir_graph *g = c->g;
  *refused = 0;
  for (int j = 0; j < g->nnodes; j++) {
    if (!c->ln[j])
      continue;
    int m = ir_find_tensor(h, g->tensors[g->nodes[j].out[0]].name);
    double add = 0, ln = 0, both = 0;
    base_status st;
    if ((st = cost_of(o, g, j, &add, d)) ||
        (st = cost_of(o, g, c->ln[j] - 1, &ln, d)) ||
        (st = cost_of(o, h, h->tensors[m].node, &both, d)))
      return st;
    if (both >= add + ln) {
      c->nope[j] = 1;
      ++*refused;
    }
  }
  return BASE_OK;
}

/* Marks the adds to lower; their count. */
static int plan(norm *c) {
  const ir_graph *g = c->g;
  memset(c->ln, 0, sizeof *c->ln * (size_t)g->nnodes);
  memset(c->gone, 0, (size_t)g->nnodes);
  int folds = 0;
  for (int j = 0; j < g->nnodes; j++)
    folds += fold_norm(c, j);
  return folds;
}

ir_graph *lower_norm(const ir_graph *g, const fuse_options *o, lower_stats *st,
                     base_diag *d) {
  size_t nn = (size_t)g->nnodes + 1;
  norm c = {g,
            ir_read_counts(g),
            base_calloc(nn, 1),
            base_calloc(nn, sizeof(int32_t)),
            base_calloc(nn, sizeof(int32_t)),
            base_calloc(nn, 1),
            base_calloc(nn, 1)};
  ir_graph *h = NULL;
  if (!c.reads || !c.wonly || !c.ln || !c.swap || !c.gone || !c.nope) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  ir_weight_only(g, c.wonly);
  int folds, refused = 1;
  while ((folds = plan(&c)) && refused) {
    h = ir_rebuild(g, rebuild_node, &c, d);
    if (!h || !o || !o->cost)
      break;
    if (price(&c, h, o, &refused, d)) {
      ir_graph_free(h);
      h = NULL;
      goto out;
    }
    if (refused) {
      ir_graph_free(h);
      h = NULL;
    }
  }
  if (!folds)
    h = ir_graph_clone_shared(g);
  if (!h && d && !d->code)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->addnorms += folds;
out:
  free(c.reads), free(c.wonly), free(c.ln), free(c.swap);
  free(c.gone), free(c.nope);
  return h;
}
