/* optimize.c: api_optimize: the same pipeline as `superopt optimize`
 * (rules from the data directory, costs from the cost database with the
 * checked-in tables, calibrated roofline estimates for unmeasured shapes,
 * srch_optimize, the end-to-end check on the CPU executor). */
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "../search/search.h"
#include "api_int.h"

#define CHECK_TOL 1e-4

void api_optimize_options_default(api_optimize_options *o) {
  srch_options so;
  srch_options_default(&so);
  memset(o, 0, sizeof *o);
  o->device = "h100";
  o->alpha = so.alpha;
  o->budget = so.budget;
  o->patience = so.patience;
  o->max_depth = so.max_depth;
  o->time_limit = so.time_limit;
  o->check = 1;
}

typedef struct cost_ctx {
  cd_db *db;
  const cd_device *dev;
  double scale[IR_NOPS]; /* estimate multiplier per operator */
} cost_ctx;

/* A node's cost in microseconds: measured, else the scaled estimate. */
static double node_cost(void *u, const ir_graph *g, int node, int *estimated) {
  cost_ctx *c = u;
  double ms;
  int est = 1;
  base_diag d;
  if (cd_node_cost(c->db, c->dev, g, node, &ms, &est, &d) != BASE_OK)
    return 1e12;
  if (estimated)
    *estimated = est;
  return 1000 * ms * (est ? c->scale[g->nodes[node].op] : 1);
}

/* As `superopt optimize`: per operator with measured nodes in g, estimates
 * are scaled by sum(measured) / sum(estimated) over those nodes, so that a
 * graph mixing both does not favour rewrites into unmeasured shapes. */
static void calibrate(cost_ctx *c, const ir_graph *g) {
  double m[IR_NOPS] = {0}, e[IR_NOPS] = {0};
  unsigned char *wo = calloc((size_t)g->nnodes + 1, 1);
  for (int o = 0; o < IR_NOPS; o++)
    c->scale[o] = 1;
  if (!wo)
    return;
  ir_weight_only(g, wo);
  for (int i = 0; i < g->nnodes; i++) {
    double ms, x = cd_estimate(c->dev, g, i);
    int est = 1;
    base_diag d;
    if (wo[i] || x <= 0 ||
        cd_node_cost(c->db, c->dev, g, i, &ms, &est, &d) != BASE_OK || est)
      continue;
    m[g->nodes[i].op] += ms;
    e[g->nodes[i].op] += x;
  }
  free(wo);
  for (int o = 0; o < IR_NOPS; o++)
    if (e[o] > 0)
      c->scale[o] = m[o] / e[o];
}

/* Opens the cost database with the installed tables. */
static api_code open_costs(const api_optimize_options *o, cost_ctx *c,
                           api_error *err) {
  char path[4096], tables[4096];
  base_diag d;
  api_code rc;
  if (!(c->dev = cd_device_find(o->device ? o->device : "h100", &d)))
    return api_fail(err, API_ERR_USAGE, "%s", d.msg);
  if ((rc = api_data_path("costdb", tables, sizeof tables, err)))
    return rc;
  if (!o->db && cd_default_path(path, sizeof path, &d))
    return api_fail_diag(err, &d);
  if (!(c->db = cd_open(o->db ? o->db : path, &d)))
    return api_fail_diag(err, &d);
  if (cd_set_tables(c->db, tables, &d)) {
    cd_close(c->db);
    return api_fail_diag(err, &d);
  }
  return API_OK;
}

static api_code load_rules(const api_optimize_options *o, ir_ruleset *rs,
                           srch_rules **out, api_error *err) {
  char path[4096];
  base_diag d;
  api_code rc;
  if (!o->rules &&
      (rc = api_data_path("rules/default.rules", path, sizeof path, err)))
    return rc;
  if (ir_rules_read_file(o->rules ? o->rules : path, rs, &d))
    return api_fail_diag(err, &d);
  if (!(*out = srch_rules_compile(rs, SRCH_BOTH, o->allow_unproven, &d))) {
    snprintf(d.file, sizeof d.file, "%.255s", o->rules ? o->rules : path);
    ir_ruleset_free(rs);
    return api_fail_diag(err, &d);
  }
  return API_OK;
}

static void fill_report(api_report *r, const ir_graph *g, const ir_graph *h,
                        const srch_stats *st, const srch_rules *rules) {
  memset(r, 0, sizeof *r);
  r->cost_before_us = st->cost_before;
  r->cost_after_us = st->cost_after;
  r->estimated = st->estimated;
  r->nodes_before = g->nnodes;
  r->nodes_after = h->nnodes;
  r->rules = srch_rules_count(rules);
  for (int i = 0; i < st->nrules; i++)
    r->rules_applied += st->applied_fw[i] + st->applied_bw[i];
  r->expanded = st->expanded;
  r->bn_folded = st->bn_folded;
  r->acts_fused = st->acts_fused;
  r->merged = st->merged;
  r->seconds = st->seconds;
  r->max_rel_error = -1;
}

/* The search proper, on a graph already rebatched. */
static api_code search(const ir_graph *g, const api_optimize_options *o,
                       const srch_rules *rules, cost_ctx *c, ir_graph **out,
                       api_report *rep, api_error *err) {
  srch_options so;
  srch_stats st;
  base_diag d;
  srch_options_default(&so);
  so.alpha = o->alpha;
  so.budget = o->budget;
  so.patience = o->patience;
  so.max_depth = o->max_depth;
  so.time_limit = o->time_limit;
  so.cost = node_cost;
  so.cost_u = c;
  calibrate(c, g);
  ir_graph *h = srch_optimize(g, rules, &so, &st, &d);
  if (h)
    fill_report(rep, g, h, &st, rules);
  srch_stats_free(&st);
  if (!h)
    return api_fail_diag(err, &d);
  double e = 0;
  if (o->check && srch_check(g, h, 1, &e, &d)) {
    ir_graph_free(h);
    return api_fail_diag(err, &d);
  }
  if (o->check && !(e <= CHECK_TOL)) {
    ir_graph_free(h);
    return api_fail(err, API_ERR_INTERNAL,
                    "the optimized graph's outputs differ from the "
                    "original's (relative error %.3g > %g)",
                    e, CHECK_TOL);
  }
  rep->max_rel_error = o->check ? e : -1;
  *out = h;
  return API_OK;
}

api_code api_optimize(const api_graph *g, const api_optimize_options *o,
                      api_graph **out, api_report *rep, api_error *err) {
  api_optimize_options def;
  api_report local;
  if (!g || !out)
    return api_fail(err, API_ERR_USAGE, "api_optimize: NULL argument");
  if (!o) {
    api_optimize_options_default(&def);
    o = &def;
  }
  if (!(o->alpha >= 0.5 && o->alpha <= 100) || o->budget < 0 || o->batch < 0)
    return api_fail(err, API_ERR_USAGE,
                    "api_optimize: alpha must be in [0.5, 100], budget and "
                    "batch >= 0");
  cost_ctx c;
  ir_ruleset rs;
  srch_rules *rules = NULL;
  ir_ruleset_init(&rs);
  api_code rc = open_costs(o, &c, err);
  if (rc)
    return rc;
  if ((rc = load_rules(o, &rs, &rules, err))) {
    cd_close(c.db);
    return rc;
  }
  const ir_graph *src = g->g;
  ir_graph *rebatched = NULL, *h = NULL;
  base_diag d;
  if (o->batch > 0 && ir_rebatch(src, o->batch, &rebatched, &d))
    rc = api_fail_diag(err, &d);
  if (!rc)
    rc = search(rebatched ? rebatched : src, o, rules, &c, &h,
                rep ? rep : &local, err);
  ir_graph_free(rebatched);
  srch_rules_free(rules);
  ir_ruleset_free(&rs);
  cd_close(c.db);
  return rc ? rc : api_wrap(h, out, err);
}
