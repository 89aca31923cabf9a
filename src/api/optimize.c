/* optimize.c: api_optimize: the optimize pipeline of src/opt (opt_run), the
 * one `superopt optimize` runs, with the CLI's defaults: rules from
 * $SUPEROPT_RULES or the data folder's default.rules and extended.rules, no
 * pass (API_PASSES_NONE), costs from the cost database with the checked-in
 * tables, mutants, fusion, the node order and the end-to-end check. For the
 * same graph and options both write the same graph and report the same
 * counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "../opt/opt.h"
#include "api_int.h"

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
  o->fuse = 1;
  o->passes = API_PASSES_NONE;
  o->region_size = so.region_nodes;
  o->merge = so.merge;
  o->fuse_candidates = so.fuse_k;
}

/* Opens the cost database with the installed tables. */
static api_code open_costs(const api_optimize_options *o, cd_db **db,
                           const cd_device **dev, api_error *err) {
  char path[4096], tables[4096];
  base_diag d;
  api_code rc;
  if (!(*dev = cd_device_find(o->device ? o->device : "h100", &d)))
    return api_fail(err, API_ERR_USAGE, "%s", d.msg);
  if ((rc = api_data_path("costdb", tables, sizeof tables, err)))
    return rc;
  if (!o->db && cd_default_path(path, sizeof path, &d))
    return api_fail_diag(err, &d);
  if (!(*db = cd_open(o->db ? o->db : path, &d)))
    return api_fail_diag(err, &d);
  if (cd_set_tables(*db, tables, &d)) {
    cd_close(*db);
    return api_fail_diag(err, &d);
  }
  return API_OK;
}

/* The data folder's default.rules and extended.rules, as one list of
 * rules files (opt_rules_load's). */
static api_code default_rules(char *rules, size_t n, api_error *err) {
  char def[4096], ext[4096];
  api_code rc = api_data_path("rules/default.rules", def, sizeof def, err);
  if (!rc)
    rc = api_data_path("rules/extended.rules", ext, sizeof ext, err);
  if (!rc && (strchr(def, OPT_RULES_SEP) || strchr(ext, OPT_RULES_SEP)))
    return api_fail(err, API_ERR_INPUT,
                    "the data folder's path %s has a ':', which separates "
                    "rules files; set rules, or $SUPEROPT_DATA",
                    strchr(def, OPT_RULES_SEP) ? def : ext);
  if (!rc && (size_t)snprintf(rules, n, "%s%c%s", def, OPT_RULES_SEP, ext) >= n)
    return api_fail(err, API_ERR_INPUT, "the rules files' paths are too long");
  return rc;
}

/* The files the pipeline reads: the rules (o->rules, else
 * $SUPEROPT_RULES, else the data folder's two, as the CLI) and the pass
 * rules (with API_PASSES_RULES). */
static api_code rule_paths(const api_optimize_options *o, char *rules,
                           char *passes, size_t n, api_error *err) {
  const char *env = getenv("SUPEROPT_RULES");
  const char *given = o->rules ? o->rules : env && *env ? env : NULL;
  api_code rc = API_OK;
  passes[0] = '\0';
  if (o->no_rules)
    rules[0] = '\0';
  else if (!given)
    rc = default_rules(rules, n, err);
  else if ((size_t)snprintf(rules, n, "%s", given) >= n)
    rc = api_fail(err, API_ERR_USAGE,
                  "api_optimize: the rules files' paths are longer than %zu "
                  "bytes",
                  n - 1);
  if (!rc && o->passes == API_PASSES_RULES)
    rc = api_data_path("rules/passes.rules", passes, n, err);
  return rc;
}

typedef struct progress_ctx {
  const api_optimize_options *o;
} progress_ctx;

static void progress(void *u, const opt_progress *p) {
  const api_optimize_options *o = ((progress_ctx *)u)->o;
  o->progress(o->progress_u, opt_stage_name(p->stage), p->region, p->nregions,
              p->elapsed);
}

/* The counts of the CLI's lines that the first fields do not hold. */
static void fill_more(api_report *r, const opt_report *x) {
  const srch_stats *st = &x->search;
  const mutant_apply_stats *m = &x->mutants;
  r->rules_read = x->rules.rs.n;
  r->cse = st->cse;
  r->scales_folded = st->scales_folded;
  r->acts_fused_by_rules = x->acts_fused_by_rules;
  r->merged_by_rules = x->merged_by_rules;
  r->splits_merged = st->splits_merged;
  r->generated = st->generated;
  r->duplicates = st->duplicates;
  r->rejected = st->rejected;
  r->queue_peak = st->queue_peak;
  r->regions = st->regions;
  r->stopped_by_patience = st->stopped_by_patience;
  r->fuse_chosen = st->fuse_chosen;
  r->stopped_by_time = st->stopped_by_time;
  r->inst_proven = x->inst_proven;
  r->inst_refused = x->inst_refused;
  r->mutants_considered = m->considered;
  r->mutants_not_cheaper = m->not_cheaper;
  r->mutants_overlapping = m->overlapping;
  r->mutants_refused = m->refused;
  r->mutants_unmeasured = m->unmeasured;
  r->fuse_recomputed = x->fusion.recomputed;
  r->fuse_rejected = x->fusion.rejected;
  r->fuse_peeled = x->fusion.peeled;
  r->fuse_cost_before_us = x->fusion.cost_before;
  r->fuse_cost_after_us = x->fusion.cost_after;
  r->rules_unproven = x->reproof.unproven;
  r->check_rounds = x->ran[OPT_CHECK] ? x->check.rounds : 0;
  r->check_compared = x->ran[OPT_CHECK] ? x->check.compared : 0;
  r->check_worst = x->ran[OPT_CHECK] ? x->check.worst : -1;
  r->moves_removed = st->moves_removed;
  r->rmsnorms = st->rmsnorms;
  r->rotates_folded = st->rotates_folded;
  r->identities_dropped = st->identities;
  r->lower_epilogues = x->lowering.epilogues;
  r->lower_moves = x->lowering.moves;
  r->lower_se = x->lowering.se;
  r->lower_shuffles = x->lowering.shuffles;
  r->row_attention = x->lowering.attention;
  r->move_nodes = x->lowering.chains;
  r->move_node_ops = x->lowering.chain_ops;
  r->patch_embeddings = x->lowering.patches;
}

static void fill_report(api_report *r, const opt_report *x) {
  const srch_stats *st = &x->search;
  memset(r, 0, sizeof *r);
  r->cost_before_us = st->cost_before;
  r->cost_unfused_us = st->cost_after;
  r->cost_after_us = x->ran[OPT_FUSE] ? x->fusion.cost_after : st->cost_after;
  r->estimated = st->estimated;
  r->nodes_before = x->nodes_before;
  r->nodes_after = x->nodes_after;
  r->rules = x->directions;
  r->rules_applied = x->rules_applied;
  r->pass_rules_applied = x->pass_rules_applied;
  r->expanded = st->expanded;
  r->bn_folded = st->bn_folded;
  r->acts_fused = x->acts_fused;
  r->acts_unfused = x->acts_unfused;
  r->merged = x->merged;
  r->seconds = st->seconds;
  r->max_rel_error = x->max_rel_error;
  r->mutants_applied = x->mutants.napplied;
  for (int i = 0; i < x->mutants.napplied; i++)
    r->mutants_saved_us +=
        x->mutants.applied[i].ms_before - x->mutants.applied[i].ms_after;
  r->fused_nodes = x->fusion.groups;
  r->attention_nodes = x->fusion.attention;
  r->fused_ops = x->fusion.fused_ops;
  r->moved = x->lowering.shortcuts;
  r->rules_seconds = x->seconds[OPT_RULES];
  r->fuse_seconds = x->seconds[OPT_FUSE];
  r->check_seconds = x->seconds[OPT_CHECK];
  r->rules_reproved = x->reproof.reproved;
  r->rules_demoted = x->reproof.ndemoted;
  fill_more(r, x);
}

/* The pipeline's options from the API's (paths resolved, db open). */
static void pipeline_options(const api_optimize_options *o, const char *rules,
                             const char *passes, cd_model *cost,
                             progress_ctx *pc, opt_options *oo) {
  opt_options_default(oo);
  oo->so.alpha = o->alpha;
  oo->so.budget = o->budget;
  oo->so.patience = o->patience;
  oo->so.max_depth = o->max_depth;
  oo->so.time_limit = o->time_limit;
  oo->so.region_nodes = o->region_size;
  oo->so.merge = o->merge;
  oo->so.fuse_k = o->fuse_candidates;
  oo->rules = rules[0] ? rules : NULL;
  oo->pass_rules = passes[0] ? passes : NULL;
  oo->so.no_passes = o->passes == API_PASSES_NONE;
  oo->allow_unproven = o->allow_unproven;
  oo->mutants = o->mutants ? MUTANT_ALL : 0;
  if (oo->mutants && o->mutants_estimated)
    oo->mutants |= MUTANT_ESTIMATES;
  oo->batch = o->batch;
  oo->dtype = o->dtype ? ir_dtype_lookup(o->dtype, strlen(o->dtype)) : 0;
  oo->fuse = o->fuse;
  oo->check = o->check;
  oo->cost = cost;
  oo->progress = o->progress ? progress : NULL;
  oo->progress_u = pc;
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
  else if (o->region_size < 1 || o->region_size > 100000)
    bad = "region_size must be 1..100000";
  else if (o->fuse_candidates < 0 || o->fuse_candidates > 1000)
    bad = "fuse_candidates must be 0..1000";
  else if ((o->check | o->allow_unproven | o->mutants | o->fuse | o->merge |
            o->mutants_estimated | o->no_rules) &
           ~1)
    bad = "check, allow_unproven, mutants, fuse, merge, mutants_estimated "
          "and no_rules must be 0 or 1";
  else if (o->passes != API_PASSES_NONE && o->passes != API_PASSES_HAND &&
           o->passes != API_PASSES_RULES)
    bad = "passes must be API_PASSES_NONE, API_PASSES_HAND or "
          "API_PASSES_RULES";
  else if (o->no_rules && o->rules)
    bad = "no_rules and rules conflict (as --no-rules and --rules)";
  else if (o->dtype && !ir_dtype_is_half((ir_dtype)ir_dtype_lookup(
                           o->dtype, strlen(o->dtype))))
    bad = "dtype must be NULL, \"f16\" or \"bf16\"";
  return bad ? api_fail(err, API_ERR_USAGE, "api_optimize: %s", bad) : API_OK;
}

api_code api_optimize(const api_graph *g, const api_optimize_options *o,
                      api_graph **out, api_report *rep, api_error *err) {
  api_optimize_options def;
  if (!g || !out)
    return api_fail(err, API_ERR_USAGE, "api_optimize: NULL argument");
  if (!o) {
    api_optimize_options_default(&def);
    o = &def;
  }
  api_code rc = check_options(o, err);
  if (rc)
    return rc;
  char rules[8192], passes[8192];
  cd_db *db = NULL;
  const cd_device *dev = NULL;
  rc = open_costs(o, &db, &dev, err);
  if (rc)
    return rc;
  if ((rc = rule_paths(o, rules, passes, sizeof rules, err))) {
    cd_close(db);
    return rc;
  }
  cd_model cost;
  cd_model_init(&cost, db, dev);
  char half[64]; /* dtype T: the rows measured in T first (docs/costdb.md) */
  if (o->dtype)
    cd_model_set_half(&cost,
                      (ir_dtype)ir_dtype_lookup(o->dtype, strlen(o->dtype)),
                      half, sizeof half);
  progress_ctx pc = {o};
  opt_options oo;
  pipeline_options(o, rules, passes, &cost, &pc, &oo);
  opt_report r;
  ir_graph *h = NULL;
  base_diag d;
  if (opt_run(g->g, &oo, &h, &r, &d))
    rc = d.code == BASE_ERR_INTERNAL && r.ran[OPT_CHECK]
             ? api_fail(err, API_ERR_INTERNAL, "%s", d.msg)
             : api_fail_diag(err, &d);
  else if (rep)
    fill_report(rep, &r);
  opt_report_free(&r);
  cd_close(db);
  return rc ? rc : api_wrap(h, out, err);
}
