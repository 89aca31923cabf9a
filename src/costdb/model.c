/* model.c: the optimizer's cost model: a node's measured cost on a device
 * from the database, else the per-operator model fitted on the device's
 * measured rows (fit.c), else the roofline estimate, in microseconds (a
 * cd_cost_fn). An optional hook sees every unmeasured node first (optimize
 * --measure measures it there; --emit-signatures notes it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_int.h"

static int has_rows(cd_db *db, const cd_device *dev);

void cd_model_init(cd_model *m, cd_db *db, const cd_device *dev) {
  memset(m, 0, sizeof *m);
  m->db = db;
  m->dev = dev ? dev : cd_device_at(0);
}

/* *f fitted on dev's rows in db; *fitted 1 where it is. */
static base_status fit_device(cd_db *db, const cd_device *dev, cd_fit *f,
                              int *fitted, base_diag *d) {
  cd_sample *s = NULL;
  int n = 0;
  base_status st = db ? cd_samples(db, dev, &s, &n, NULL, d) : BASE_OK;
  if (!st)
    st = cd_fit_samples(s, n, NULL, f, d);
  free(s);
  *fitted = st == BASE_OK;
  return st;
}

base_status cd_model_fit(cd_model *m, base_diag *d) {
  base_status st = fit_device(m->db, m->dev, &m->fit, &m->fitted, d);
  m->half_fitted = 0;
  if (!st && m->db && m->half_dev && has_rows(m->db, m->half_dev))
    st = fit_device(m->db, m->half_dev, &m->half_fit, &m->half_fitted, d);
  return st;
}

static base_status half_cost(const cd_model *m, const ir_graph *g, int node,
                             double *cost, int *estimated, int *done,
                             base_diag *d);

/* Whether node's output is f16 or bf16. */
static int half_node(const ir_graph *g, int node) {
  const ir_node *nd = &g->nodes[node];
  return nd->nout > 0 &&
         ir_dtype_is_half((ir_dtype)g->tensors[nd->out[0]].dtype);
}

/* Node `node` of g (float32: a graph of the search) as the graph converted
 * to the half type t holds it: a one-node graph of its inputs (kinds,
 * shapes, types, known values) converted by ir_graph_to_dtype, the node's
 * index there in *at. NULL where it cannot stand alone (its shape rule
 * fails there) or out of memory: the caller prices it as it is. */
static ir_graph *half_view(const ir_graph *g, int node, ir_dtype t, int *at) {
  const ir_node *nd = &g->nodes[node];
  ir_graph *h = ir_graph_new("half"), *c = NULL;
  int32_t *in = base_malloc(sizeof *in * ((size_t)nd->nin + 1));
  base_diag d = {0};
  int ok = h && in, n = -1;
  for (int k = 0; ok && k < nd->nin; k++) {
    const ir_tensor *x = &g->tensors[nd->in[k]];
    char name[16];
    snprintf(name, sizeof name, "i%d", k);
    in[k] = ir_add_tensor(h, name,
                          x->kind == IR_T_WEIGHT ? IR_T_WEIGHT : IR_T_INPUT,
                          &x->shape, &d);
    if ((ok = in[k] >= 0)) {
      h->tensors[in[k]].dtype = x->dtype;
      h->tensors[in[k]].data = x->data;
    }
  }
  if (ok && (n = ir_add_node(h, nd->op, in, nd->nin, &nd->a, NULL, &d)) < 0)
    ok = 0;
  for (int k = 0; ok && k < h->nodes[n].nout; k++)
    ok = ir_add_output(h, h->nodes[n].out[k], &d) == BASE_OK;
  if (ok && (c = ir_graph_to_dtype(h, t, &d)))
    for (int i = 0; i < c->nnodes; i++)
      if (c->nodes[i].op == nd->op)
        *at = i;
  free(in);
  ir_graph_free(h);
  return c;
}

/* The device whose rates price node's roofline: m's half device for a
 * half node (tensor cores at the half rate), else m's. */
static const cd_device *rate_device(const cd_model *m, const ir_graph *g,
                                    int node) {
  return m && m->half_dev && half_node(g, node) ? m->half_dev
         : m                                    ? m->dev
                                                : cd_device_at(0);
}

/* Node `node` of g, a lowered convolution or matmul (src/fuse/lower.h: a
 * residual input, act=clip), as a one-node graph of its plain form: no
 * residual, no activation. NULL on out of memory. */
static ir_graph *plain_form(const ir_graph *g, int node, base_diag *d) {
  const ir_node *nd = &g->nodes[node];
  ir_graph *h = ir_graph_new("plain");
  int32_t in[3];
  int nin = nd->nin < 3 ? nd->nin : 3, ok = h != NULL;
  for (int k = 0; ok && k < nin; k++) {
    const ir_tensor *t = &g->tensors[nd->in[k]];
    char name[16];
    snprintf(name, sizeof name, "i%d", k);
    in[k] = ir_add_tensor(h, name, k ? IR_T_WEIGHT : IR_T_INPUT, &t->shape, d);
    ok = in[k] >= 0;
  }
  ir_attrs a = nd->a;
  a.act = IR_ACT_NONE;
  a.lo = a.hi = 0;
  const char *out = "y";
  if (ok && ir_add_node(h, nd->op, in, nin, &a, &out, d) < 0)
    ok = 0;
  if (!ok)
    ir_graph_free(h);
  return ok ? h : NULL;
}

static base_status model_cost(const cd_model *m, const ir_graph *g, int node,
                              double *cost, int *estimated, base_diag *d);

/* A lowered convolution or matmul without a measurement of its own: its
 * plain form's cost (measured where that is) plus what the roofline adds
 * for the residual read and the activation, no add kernel of their own.
 * *done 0: not such a node, or measured as it is. */
static base_status lowered_cost(const cd_model *m, const ir_graph *g, int node,
                                double *cost, int *estimated, int *done,
                                base_diag *d) {
  const ir_node *nd = &g->nodes[node];
  *done = 0;
  if ((nd->op != IR_OP_CONV2D && nd->op != IR_OP_MATMUL) ||
      (nd->nin < 4 && nd->a.act != IR_ACT_CLIP))
    return BASE_OK;
  double ms = 0;
  int est = 1;
  base_status st = cd_node_cost(m->db, m->dev, g, node, &ms, &est, d);
  if (st || !est)
    return st;
  ir_graph *h = plain_form(g, node, d);
  if (!h)
    return d && d->code
               ? d->code
               : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int half = 0; /* the plain form's row in the half type first */
  if (m->half_dev)
    st = half_cost(m, h, 0, cost, estimated, &half, d);
  if (!st && !half)
    st = model_cost(m, h, 0, cost, estimated, d);
  if (!st) {
    const cd_device *r = rate_device(m, g, node);
    double extra = cd_estimate(r, g, node) - cd_estimate(r, h, 0);
    *cost += 1000 * (extra > 0 ? extra : 0);
    *done = 1;
  }
  ir_graph_free(h);
  return st;
}

/* The device "<m's device>-<t>", or NULL. */
static const cd_device *half_device(const cd_model *m, ir_dtype t) {
  char want[64];
  snprintf(want, sizeof want, "%s-%s", m->dev->name, ir_dtype_name(t));
  for (int i = 0; ir_dtype_is_half(t) && i < cd_ndevices(); i++)
    if (!strcmp(cd_device_at(i)->name, want))
      return cd_device_at(i);
  return NULL;
}

/* Whether db holds rows of dev (its table imported first); 0 on errors. */
static int has_rows(cd_db *db, const cd_device *dev) {
  cd_stat st[32];
  int n = 0;
  base_diag d = {0};
  if (!db || !dev || cd_sync_tables(db, dev, &d) ||
      cd_stats(db, st, 32, &n, &d))
    return 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(st[i].device, dev->name))
      return st[i].rows > 0;
  return 0;
}

void cd_model_set_half(cd_model *m, ir_dtype t, char *name, size_t n) {
  m->half_dev = half_device(m, t);
  m->half = m->half_as = m->half_dev ? t : IR_DT_F32;
  ir_dtype u = t == IR_DT_F16 ? IR_DT_BF16 : IR_DT_F16;
  const cd_device *other = half_device(m, u);
  if (m->db && m->half_dev && !has_rows(m->db, m->half_dev) &&
      has_rows(m->db, other))
    m->half_dev = other, m->half_as = u;
  snprintf(name, n, "%s", m->half_dev ? m->half_dev->name : "");
}

/* The node's row measured in m's half type, when there is one: *done 1. */
static base_status half_cost(const cd_model *m, const ir_graph *g, int node,
                             double *cost, int *estimated, int *done,
                             base_diag *d) {
  double ms = 0;
  int est = 1;
  base_status st =
      cd_node_cost_as(m->db, m->half_dev, g, node, m->half_as, &ms, &est, d);
  *done = !st && !est;
  if (*done) {
    *cost = 1000 * ms;
    if (estimated)
      *estimated = 0;
  }
  return st;
}

base_status cd_model_cost(void *u, const ir_graph *g, int node, double *cost,
                          int *estimated, base_diag *d) {
  const cd_model *m = u;
  int done = 0;
  if (g->nodes[node].op == IR_OP_SPLIT &&
      ir_split_read_in_place(g, node, NULL, NULL)) {
    *cost = 0; /* no copy: the fused kernels read its input in place */
    if (estimated)
      *estimated = 0;
    return BASE_OK;
  }
  if (m && m->db && m->half_dev) {
    base_status st = half_cost(m, g, node, cost, estimated, &done, d);
    if (st || done)
      return st;
  }
  base_status st = m && m->db
                       ? lowered_cost(m, g, node, cost, estimated, &done, d)
                       : BASE_OK;
  return st || done ? st : model_cost(m, g, node, cost, estimated, d);
}

static base_status model_cost(const cd_model *m, const ir_graph *g, int node,
                              double *cost, int *estimated, base_diag *d) {
  if (!m) { /* the first device's (h100) plain estimate */
    if (estimated)
      *estimated = 1;
    *cost = 1000 * cd_estimate(cd_device_at(0), g, node);
    return BASE_OK;
  }
  double ms;
  int est = 1;
  base_status st = cd_node_cost(m->db, m->dev, g, node, &ms, &est, d);
  if (st)
    return st;
  if (est && m->unmeasured && cd_node_work(g, node).launches) {
    char sig[CD_SIG_MAX];
    int measured = 0;
    double got = 0;
    if (cd_node_sig(g, node, sig, sizeof sig) >= sizeof sig)
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "operator signature longer than %d bytes",
                           CD_SIG_MAX);
    if ((st = m->unmeasured(m->unmeasured_u, g, node, sig, &got, &measured, d)))
      return st;
    if (measured) {
      est = 0;
      ms = got;
    }
  }
  if (est && m->half_fitted && half_node(g, node)) {
    ms = cd_fit_predict(&m->half_fit, m->half_dev, g, node);
  } else if (est && m->half_fitted) { /* a float32 node of the search */
    /* memo (building the view costs a graph), by type and device */
    int32_t tag =
        -2 - (int32_t)m->half * 256 - cd_device_index(m->half_dev, NULL) - 1;
    if (!cd_memo_get(m->db, g, node, tag, &ms)) {
      int at = -1;
      ir_graph *c = half_view(g, node, m->half, &at);
      if (c && at >= 0 && half_node(c, at))
        ms = cd_fit_predict(&m->half_fit, m->half_dev, c, at);
      else if (m->fitted)
        ms = cd_fit_predict(&m->fit, m->dev, g, node);
      ir_graph_free(c);
      if ((st = cd_memo_put(m->db, g, node, tag, ms, d)))
        return st;
    }
  } else if (est && m->fitted) {
    ms = cd_fit_predict(&m->fit, m->dev, g, node);
  }
  if (estimated)
    *estimated = est;
  *cost = 1000 * ms;
  return BASE_OK;
}

base_status cd_model_cost_bound(void *u, const ir_graph *g, int node,
                                double *cost, int *estimated, base_diag *d) {
  const cd_model *m = u;
  int est = 0;
  base_status st = cd_model_cost(u, g, node, cost, &est, d);
  if (estimated)
    *estimated = est;
  if (st || !est || g->nodes[node].op != IR_OP_FUSED)
    return st;
  double roof = 1000 * cd_estimate(rate_device(m, g, node), g, node);
  if (roof > *cost)
    *cost = roof;
  return BASE_OK;
}
