/* model.c: the optimizer's cost model: a node's measured cost on a device
 * from the database, else the per-operator model fitted on the device's
 * measured rows (fit.c), else the roofline estimate, in microseconds (a
 * cd_cost_fn). An optional hook sees every unmeasured node first (optimize
 * --measure measures it there; --emit-signatures notes it).
 */
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

base_status cd_model_cost(void *u, const ir_graph *g, int node, double *cost,
                          int *estimated, base_diag *d) {
  const cd_model *m = u;
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
