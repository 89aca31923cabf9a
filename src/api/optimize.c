/* optimize.c: api_optimize: the same pipeline as `superopt optimize`
 * (rules from the data directory, costs from the cost database with the
 * checked-in tables, a fitted per-operator model for unmeasured shapes,
 * mutant_optimize: the search with mutants joining it region by region,
 * the end-to-end check on the CPU executor): the cost model
 * is costdb's cd_model, as the CLI's. */
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "../exec/exec.h"
#include "../mutant/mutant.h"
#include "../pass/pass.h"
#include "../rewrite/rewrite.h"
#include "../search/search.h"
#include "api_int.h"

#define CHECK_TOL 1e-4

void api_optimize_options_default(api_optimize_options *o) {
  if (!o)
    return;
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
  o->mutants = 1;
}

typedef struct cost_ctx {
  cd_db *db;
  const cd_device *dev;
  cd_model model; /* what `superopt optimize` searches with */
} cost_ctx;

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
                           rewrite_rules **out, api_error *err) {
  char path[4096];
  base_diag d;
  api_code rc;
  if (!o->rules &&
      (rc = api_data_path("rules/default.rules", path, sizeof path, err)))
    return rc;
  if (ir_rules_read_file(o->rules ? o->rules : path, rs, &d))
    return api_fail_diag(err, &d);
  if (!(*out =
            rewrite_rules_compile(rs, REWRITE_BOTH, o->allow_unproven, &d))) {
    snprintf(d.file, sizeof d.file, "%.255s", o->rules ? o->rules : path);
    ir_ruleset_free(rs);
    return api_fail_diag(err, &d);
  }
  return API_OK;
}

static void fill_report(api_report *r, const ir_graph *g, const ir_graph *h,
                        const srch_stats *st, const rewrite_rules *rules) {
  memset(r, 0, sizeof *r);
  r->cost_before_us = st->cost_before;
  r->cost_after_us = st->cost_after;
  r->estimated = st->estimated;
  r->nodes_before = g->nnodes;
  r->nodes_after = h->nnodes;
  r->rules = rewrite_rules_count(rules);
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
                       const rewrite_rules *rules, cost_ctx *c, ir_graph **out,
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
  so.fuse_k = 0; /* api_optimize does not fuse */
  cd_model_init(&c->model, c->db, c->dev);
  if (cd_model_fit(&c->model, &d))
    return api_fail_diag(err, &d);
  so.cost = cd_model_cost;
  so.cost_u = &c->model;
  mutant_apply_stats ms;
  ir_graph *h = mutant_optimize(g, rules, &so, o->mutants ? MUTANT_ALL : 0, 1,
                                &st, &ms, &d);
  if (h) {
    fill_report(rep, g, h, &st, rules);
    rep->mutants_applied = ms.napplied;
    for (int i = 0; i < ms.napplied; i++)
      rep->mutants_saved_us += ms.applied[i].ms_before - ms.applied[i].ms_after;
  }
  mutant_apply_stats_free(&ms);
  srch_stats_free(&st);
  if (!h)
    return api_fail_diag(err, &d);
  int moved = 0; /* the executor's node order, as optimize's */
  if (pass_order_apply(&h, &moved, &d)) {
    ir_graph_free(h);
    return api_fail_diag(err, &d);
  }
  double e = 0;
  if (o->check && ex_check(g, h, 1, &e, &d)) {
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

/* The ranges of `superopt optimize`'s options (src/cli/cmd_optimize.c),
 * with the API's own "none" values (max_depth -1, time_limit <= 0, batch
 * 0); flags are 0 or 1. */
static api_code check_options(const api_optimize_options *o, api_error *err) {
  const char *bad = NULL;
  if (!(o->alpha >= 0.5 && o->alpha <= 100))
    bad = "alpha must be in [0.5, 100]";
  else if (o->budget < 0 || o->budget > 1000000000)
    bad = "budget must be 0..1000000000";
  else if (o->patience < 0 || o->patience > 1000000000)
    bad = "patience must be 0..1000000000";
  else if (o->max_depth < -1 || o->max_depth > 1000000)
    bad = "max_depth must be -1 (unlimited) or 0..1000000";
  else if (!(o->time_limit <= 1e6)) /* also NaN */
    bad = "time_limit must be at most 1e6 seconds (<= 0: none)";
  else if (o->batch < 0 || o->batch > 1000000)
    bad = "batch must be 0 (keep) or 1..1000000";
  else if ((o->check | o->allow_unproven | o->mutants) & ~1)
    bad = "check, allow_unproven and mutants must be 0 or 1";
  return bad ? api_fail(err, API_ERR_USAGE, "api_optimize: %s", bad) : API_OK;
}

api_code api_optimize(const api_graph *g, const api_optimize_options *o,
                      api_graph **out, api_report *rep, api_error *err) {
  api_optimize_options def;
  api_report local;
  api_code rc;
  if (!g || !out)
    return api_fail(err, API_ERR_USAGE, "api_optimize: NULL argument");
  if (!o) {
    api_optimize_options_default(&def);
    o = &def;
  }
  if ((rc = check_options(o, err)))
    return rc;
  cost_ctx c;
  ir_ruleset rs;
  rewrite_rules *rules = NULL;
  ir_ruleset_init(&rs);
  rc = open_costs(o, &c, err);
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
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
  cd_close(c.db);
  return rc ? rc : api_wrap(h, out, err);
}
