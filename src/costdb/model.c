/* model.c: the optimizer's cost model: a node's measured cost on a device
 * from the database, else the device's roofline estimate scaled by its
 * operator's calibration factor, in microseconds (a cd_cost_fn).
 *
 * Roofline estimates are optimistic next to measurements (launch and
 * library overheads), so a graph mixing both would favour rewrites into
 * unmeasured shapes. cd_model_calibrate scales, for each operator with
 * measured nodes in the input graph, every estimate by sum(measured) /
 * sum(estimated) over those nodes (docs/search.md, "Costs"); fused
 * nodes, never in the input graph, take the factor of all its measured
 * element-wise nodes.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb.h"

void cd_model_init(cd_model *m, cd_db *db, const cd_device *dev) {
  memset(m, 0, sizeof *m);
  m->db = db;
  m->dev = dev ? dev : cd_device_at(0);
  for (int o = 0; o < IR_NOPS; o++)
    m->scale[o] = 1;
}

base_status cd_model_calibrate(cd_model *m, const ir_graph *g, base_diag *d) {
  double ms_sum[IR_NOPS] = {0}, est_sum[IR_NOPS] = {0};
  for (int o = 0; o < IR_NOPS; o++) {
    m->scale[o] = 1;
    m->calibrated[o] = 0;
  }
  unsigned char *wo = base_calloc((size_t)g->nnodes + 1, 1);
  if (!wo)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ir_weight_only(g, wo);
  base_status st = BASE_OK;
  for (int i = 0; i < g->nnodes && st == BASE_OK; i++) {
    double ms, x = cd_estimate(m->dev, g, i);
    int est = 1;
    if (wo[i] || x <= 0)
      continue;
    st = cd_node_cost(m->db, m->dev, g, i, &ms, &est, d);
    if (st != BASE_ERR_NOMEM && st != BASE_OK)
      st = BASE_OK; /* e.g. an overlong signature: not calibrated on */
    if (st != BASE_OK || est)
      continue;
    ms_sum[g->nodes[i].op] += ms;
    est_sum[g->nodes[i].op] += x;
    if (ir_body_op_ok(g->nodes[i].op)) { /* fused nodes: never measured */
      ms_sum[IR_OP_FUSED] += ms;         /* before fusion, so they take */
      est_sum[IR_OP_FUSED] += x;         /* the element-wise kernels' */
    }
  }
  free(wo);
  if (st != BASE_OK)
    return st;
  for (int o = 0; o < IR_NOPS; o++)
    if (est_sum[o] > 0) {
      m->scale[o] = ms_sum[o] / est_sum[o];
      m->calibrated[o] = 1;
    }
  return BASE_OK;
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
  if (estimated)
    *estimated = est;
  *cost = 1000 * ms * (est ? m->scale[g->nodes[node].op] : 1);
  return BASE_OK;
}
