/* model.c: the optimizer's cost model: a node's measured cost on a device
 * from the database, else the per-operator model fitted on the device's
 * measured rows (fit.c), else the roofline estimate, in microseconds (a
 * cd_cost_fn). An optional hook sees every unmeasured node first (optimize
 * --measure measures it there; --emit-signatures notes it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"

void cd_model_init(cd_model *m, cd_db *db, const cd_device *dev) {
  memset(m, 0, sizeof *m);
  m->db = db;
  m->dev = dev ? dev : cd_device_at(0);
}

base_status cd_model_fit(cd_model *m, base_diag *d) {
  cd_sample *s = NULL;
  int n = 0;
  base_status st = m->db ? cd_samples(m->db, m->dev, &s, &n, NULL, d) : BASE_OK;
  if (!st)
    st = cd_fit_samples(s, n, NULL, &m->fit, d);
  free(s);
  m->fitted = st == BASE_OK;
  return st;
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
  st = model_cost(m, h, 0, cost, estimated, d);
  if (!st) {
    double extra = cd_estimate(m->dev, g, node) - cd_estimate(m->dev, h, 0);
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
  if (est && m->fitted)
    ms = cd_fit_predict(&m->fit, m->dev, g, node);
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
  double roof = 1000 * cd_estimate(m ? m->dev : cd_device_at(0), g, node);
  if (roof > *cost)
    *cost = roof;
  return BASE_OK;
}
