/* pipeline.c: opt_run, the optimize pipeline as a list of stage calls
 * (opt_run_from: from a stage after the search on)
 *
 *   rules -> batch -> costs -> passes -> search -> splits -> prune ->
 *   reprove -> dtype -> fuse -> lower -> check
 *
 * Each stage takes the current graph and replaces it (ir_graph_replace:
 * the new graph owns its weight values); after each, the caller's `after`
 * callback sees the graph as it stands. `superopt optimize`, api_optimize,
 * `experiment candidates` and everything above them call it; the list of
 * stages is written here only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "../pass/pass.h"
#include "opt.h"

typedef struct stage_row {
  const char *name, *about;
} stage_row;

static const stage_row stage_rows[OPT_NSTAGES] = {
    {"rules", "read the rules and pass rules, compile them"},
    {"batch", "rebatch the model (--batch)"},
    {"costs", "fit the cost model on the device's measured rows"},
    {"passes", "common subexpressions, batchnorm and scale folding, the "
               "hand-written passes, the pass rules' whole-graph search"},
    {"search", "the search region by region, with the mutants that pay"},
    {"splits", "activation fusion (--passes hand), nested splits folded"},
    {"prune", "identities the search left (an identity conv) and dead code "
              "removed"},
    {"reprove", "every applied rule proven again; without any that is not, "
                "the stages from costs again"},
    {"dtype", "to the half type: --dtype, or a half model's own, searched "
              "in float32"},
    {"fuse", "element-wise and attention fusion (not with --no-fuse or an "
             ".onnx output)"},
    {"lower", "the executor's folds made graph nodes, shortcuts before the "
              "chains they join (with fuse)"},
    {"check", "the end-to-end check on the CPU executor (not with "
              "--no-check)"},
};

const char *opt_stage_name(int s) {
  return s >= 0 && s < OPT_NSTAGES ? stage_rows[s].name : NULL;
}

const char *opt_stage_about(int s) {
  return s >= 0 && s < OPT_NSTAGES ? stage_rows[s].about : NULL;
}

int opt_stage_find(const char *name) {
  for (int s = 0; s < OPT_NSTAGES; s++)
    if (!strcmp(stage_rows[s].name, name))
      return s;
  return -1;
}

void opt_options_default(opt_options *o) {
  memset(o, 0, sizeof *o);
  srch_options_default(&o->so);
  o->mutants = MUTANT_ALL;
  o->fuse = 1;
  o->check = 1;
}

/* ---- rules
 * ------------------------------------------------------------------ */

/* Moves the rules of `other` in front of rs's (front) or after them (both
 * read from files: each file's ids are unique; across files opt_rules_load
 * checks them). other is left empty. */
static base_status splice_rules(ir_ruleset *rs, ir_ruleset *other, int front,
                                base_diag *d) {
  int n = rs->n + other->n;
  ir_rule *r = base_malloc(sizeof *r * ((size_t)n + 1));
  if (!r)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  const ir_ruleset *a = front ? other : rs, *b = front ? rs : other;
  if (a->n) /* an empty set may have no array (memcpy wants one) */
    memcpy(r, a->rules, sizeof *r * (size_t)a->n);
  if (b->n)
    memcpy(r + a->n, b->rules, sizeof *r * (size_t)b->n);
  free(rs->rules);
  rs->rules = r;
  rs->n = rs->cap = n;
  other->n = 0; /* its rules now belong to rs */
  return BASE_OK;
}

/* Reads pass_rules in front of out->rs and compiles them alone, forward. */
static base_status load_pass_rules(const char *path, opt_rules *out,
                                   base_diag *d) {
  ir_ruleset ps;
  ir_ruleset_init(&ps);
  base_status s = ir_rules_read_file(path, &ps, d);
  int np = ps.n;
  if (!s)
    s = splice_rules(&out->rs, &ps, 1, d);
  ir_ruleset_free(&ps);
  if (s)
    return s;
  out->npass = np;
  out->passview = (ir_ruleset){out->rs.rules, np, np};
  if (!(out->pass =
            rewrite_rules_compile(&out->passview, REWRITE_FORWARD, 0, d))) {
    snprintf(d->file, sizeof d->file, "%s", path);
    return d->code;
  }
  return BASE_OK;
}

/* Reads the file path (of the list `list`) lazily after out->rs's rules
 * and records it. */
static base_status load_rule_file(const char *path, const char *list,
                                  opt_rules *out, base_diag *d) {
  if (!*path)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "an empty path in the rules files '%s' (paths "
                         "separated by '%c')",
                         list, OPT_RULES_SEP);
  if (out->nfiles == OPT_MAX_RULE_FILES)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "more than %d rules files in '%s'", OPT_MAX_RULE_FILES,
                         list);
  for (int k = 0; k < out->nfiles; k++)
    if (!strcmp(out->files[k], path))
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "the rules file %s is given twice", path);
  ir_ruleset one;
  base_status s = ir_rules_read_file_lazy(path, &one, d);
  if (!s && !(out->files[out->nfiles] = base_strdup(path)))
    s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!s) {
    out->file_rules[out->nfiles++] = one.n;
    s = splice_rules(&out->rs, &one, 0, d);
  }
  ir_ruleset_free(&one);
  return s;
}

/* The file rule i of out->rs was read from (the pass rules': pass_rules). */
static const char *file_of(const opt_rules *out, int i,
                           const char *pass_rules) {
  if (i < out->npass)
    return pass_rules;
  i -= out->npass;
  for (int k = 0; k < out->nfiles; k++) {
    if (i < out->file_rules[k])
      return out->files[k];
    i -= out->file_rules[k];
  }
  return "";
}

static int by_id(const void *a, const void *b) {
  const ir_rule *x = *(ir_rule *const *)a, *y = *(ir_rule *const *)b;
  int c = strcmp(x->id, y->id);
  return c ? c : (x > y) - (x < y); /* ties: in reading order */
}

/* Ids unique across the files, as in one file (each file's own are): an
 * id in two files is an error naming both. */
static base_status unique_ids(const opt_rules *out, base_diag *d) {
  int n = out->rs.n - out->npass;
  if (out->nfiles < 2 || n < 2)
    return BASE_OK;
  ir_rule **v = base_malloc(sizeof *v * (size_t)n);
  if (!v)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < n; i++)
    v[i] = &out->rs.rules[out->npass + i];
  qsort(v, (size_t)n, sizeof *v, by_id);
  base_status s = BASE_OK;
  for (int i = 1; i < n && !s; i++)
    if (!strcmp(v[i - 1]->id, v[i]->id)) {
      const ir_rule *a = v[i - 1], *b = v[i];
      s = base_diag_set(
          d, BASE_ERR_SYNTAX, b->line, 1,
          "rule id '%s' is already that of the rule at %s:%d: an id may "
          "appear once in all the rules files (they are read as one set)",
          b->id, file_of(out, (int)(a - out->rs.rules), NULL), a->line);
      snprintf(d->file, sizeof d->file, "%s",
               file_of(out, (int)(b - out->rs.rules), NULL));
    }
  free(v);
  return s;
}

/* Reads the rules files of list in order (the paths between its ':'). */
static base_status load_rule_files(const char *list, opt_rules *out,
                                   base_diag *d) {
  char *copy = base_strdup(list);
  if (!copy)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status s = BASE_OK;
  for (char *p = copy, *end; !s; p = end + 1) {
    end = strchr(p, OPT_RULES_SEP);
    if (end)
      *end = '\0';
    s = load_rule_file(p, list, out, d);
    if (!end)
      break;
  }
  free(copy);
  return s ? s : unique_ids(out, d);
}

base_status opt_rules_load(const char *rules, const char *pass_rules,
                           int allow_unproven, opt_rules *out, base_diag *d) {
  memset(out, 0, sizeof *out);
  ir_ruleset_init(&out->rs);
  /* lazily: a rule is parsed when the search first meets its operators */
  base_status s = rules ? load_rule_files(rules, out, d) : BASE_OK;
  if (!s && pass_rules)
    s = load_pass_rules(pass_rules, out, d);
  if (s)
    return s;
  out->all = rewrite_rules_compile(&out->rs, REWRITE_BOTH, allow_unproven, d);
  if (!out->all && !allow_unproven) { /* a rule not proven: its file */
    int i = 0;
    while (i < out->rs.n && out->rs.rules[i].status == IR_RULE_PROVEN)
      i++;
    snprintf(d->file, sizeof d->file, "%s", file_of(out, i, pass_rules));
  }
  if (!out->all)
    return d->code;
  return BASE_OK;
}

void opt_rules_free(opt_rules *r) {
  rewrite_rules_free(r->all);
  rewrite_rules_free(r->pass);
  ir_ruleset_free(&r->rs);
  for (int k = 0; k < r->nfiles; k++)
    free(r->files[k]);
  memset(r, 0, sizeof *r);
}

/* ---- the stages
 * ------------------------------------------------------------- */

typedef struct run {
  const opt_options *o;
  opt_report *r;
  srch_options so;  /* o->so with the cost model, pass rules and hooks */
  mutant_search ms; /* the mutants in the search (o->mutants) */
  const ir_graph *g;
  ir_graph *orig; /* g rebatched (NULL: g), in float32: where the search
                     starts (again) */
  ir_graph *ref;  /* the half reference the check compares to (NULL: orig) */
  ir_graph *wide; /* a half result before its dtype stage, for the check's
                     second test (NULL: the dtype stage did not run) */
  ir_dtype half;  /* the result's half type; IR_DT_F32: none */
  ir_graph *cur;  /* the graph as it stands (NULL: g) */
  int restart;    /* > 0: the next stage to run (a rule was demoted) */
  double t0;
  base_diag *d;
} run;

static const ir_graph *current(const run *p) { return p->cur ? p->cur : p->g; }

/* Replaces the current graph by next (NULL: the stage failed, d set).
 * own: next already owns its weight values (a clone); else it may share
 * the current graph's, and takes copies first (ir_graph_replace). */
static base_status advance(run *p, ir_graph *next, int own, const char *what) {
  if (!next)
    return p->d->code ? p->d->code : BASE_ERR_INTERNAL;
  base_status s = BASE_OK;
  if (own || !p->cur) { /* p->g outlives the run: sharing with it is fine */
    ir_graph_free(p->cur);
    p->cur = next;
  } else {
    s = ir_graph_replace(&p->cur, next, p->d);
  }
  return s ? s : ir_check_invariants(p->cur, what, p->d);
}

static base_status do_rules(run *p) {
  const opt_options *o = p->o;
  opt_rules *rl = &p->r->rules;
  base_status s =
      opt_rules_load(o->rules, o->pass_rules, o->allow_unproven, rl, p->d);
  if (s)
    return s;
  p->so.pass_rules = rl->pass;
  p->r->directions = rewrite_rules_count(rl->all);
  p->r->ran[OPT_RULES] = 1;
  return BASE_OK;
}

/* A half result: the reference in the half type (the model as it is, or
 * converted), the search's start the model in float32. */
static base_status half_start(run *p) {
  const ir_graph *m = p->orig ? p->orig : p->g;
  int own = ir_graph_float_type(m) == p->half;
  p->ref = own ? ir_graph_clone(m) : ir_graph_to_dtype(m, p->half, p->d);
  ir_graph *wide = p->ref ? ir_graph_to_f32(m, p->d) : NULL;
  if (!wide)
    return p->d->code ? p->d->code : BASE_ERR_NOMEM;
  ir_graph_free(p->orig);
  p->orig = wide;
  return advance(p, ir_graph_clone(wide), 1, "float32");
}

static base_status do_batch(run *p) {
  if (p->o->batch > 0) {
    ir_graph *h = NULL;
    base_status s = ir_rebatch(p->g, p->o->batch, &h, p->d);
    if (s)
      return s;
    p->orig = h;
    p->r->ran[OPT_BATCH] = 1;
    if ((s = advance(p, ir_graph_clone(h), 1, "rebatch")))
      return s;
  }
  return p->half != IR_DT_F32 ? half_start(p) : BASE_OK;
}

static base_status do_dtype(run *p) {
  if (p->half == IR_DT_F32)
    return BASE_OK;
  p->r->ran[OPT_DTYPE] = 1;
  ir_graph *h = ir_graph_to_dtype(current(p), p->half, p->d);
  if (h && p->o->check && p->cur) { /* kept for the check's second test */
    ir_graph_free(p->wide);
    p->wide = p->cur;
    p->cur = NULL;
  }
  return advance(p, h, 1, "dtype");
}

static base_status do_costs(run *p) {
  base_status s = cd_model_fit(p->o->cost, p->d);
  if (!s)
    s = srch_begin(current(p), p->r->rules.all, &p->so, &p->r->search, p->d);
  p->r->ran[OPT_COSTS] = !s;
  return s;
}

static base_status do_passes(run *p) {
  p->r->ran[OPT_PASSES] = 1;
  return advance(p, srch_run_passes(current(p), &p->so, &p->r->search, p->d), 1,
                 "the passes");
}

static base_status do_search(run *p) {
  p->r->ran[OPT_SEARCH] = 1;
  base_status s = advance(p,
                          srch_run_regions(current(p), p->r->rules.all, &p->so,
                                           &p->r->search, p->d),
                          1, "the search");
  /* the rules are loaded as the search meets their operators */
  p->r->directions = rewrite_rules_count(p->r->rules.all);
  return s;
}

static base_status do_splits(run *p) {
  p->r->ran[OPT_SPLITS] = 1;
  return advance(p, srch_run_splits(current(p), &p->so, &p->r->search, p->d), 1,
                 "merge splits");
}

/* Counts rule uses in the result, those of pass rules by kind. */
static void count_rules(opt_report *r) {
  const srch_stats *st = &r->search;
  for (int i = 0; i < st->nrules; i++) {
    int f = st->applied_fw[i], b = st->applied_bw[i];
    r->rules_applied += f + b;
    if (i >= r->rules.npass)
      continue;
    const char *id = r->rules.rs.rules[i].id;
    r->pass_rules_applied += f + b;
    if (!strncmp(id, "pass.fuse.", 10)) {
      r->acts_fused_by_rules += f;
      r->acts_unfused += b;
    } else if (!strncmp(id, "pass.merge", 10)) {
      r->merged_by_rules += f;
    }
  }
  r->acts_fused = st->acts_fused + r->acts_fused_by_rules;
  r->merged = st->merged + r->merged_by_rules;
  if (r->rules.all) /* none when the pipeline began after the rules */
    rewrite_rules_instance_counts(r->rules.all, &r->inst_proven,
                                  &r->inst_refused);
}

static base_status do_prune(run *p) {
  int dead = 0;
  base_status s = advance(
      p, pass_drop_identities(current(p), &p->r->search.identities, p->d), 0,
      "drop identities");
  if (!s)
    s = advance(p, pass_prune_dead(current(p), &dead, p->d), 0, "prune dead");
  if (!s)
    s = srch_end(current(p), &p->so, &p->r->search, p->d);
  if (!s)
    count_rules(p->r);
  p->r->ran[OPT_PRUNE] = !s;
  return s;
}

static base_status do_fuse(run *p) {
  if (!p->o->fuse)
    return BASE_OK;
  fuse_options fo = {cd_model_cost, p->o->cost};
  p->r->ran[OPT_FUSE] = 1;
  return advance(p, fuse_graph(current(p), &fo, &p->r->fusion, p->d), 0,
                 "fusion");
}

static base_status do_lower(run *p) {
  if (!p->o->fuse)
    return BASE_OK;
  p->r->ran[OPT_LOWER] = 1;
  return advance(p, lower_graph(current(p), &p->r->lowering, p->d), 0, "lower");
}

/* Proves again every rule the result applied (rewrite_reprove). When one
 * labelled proven is not proven, it is demoted (off in the rules and pass
 * rules) and the stages from costs run again on the model as the batch
 * stage left it: the result may have built on the false rule. */
static base_status do_reprove(run *p) {
  opt_report *r = p->r;
  int demoted = 0;
  if (!r->rules.all) /* begun after the search: no rule applied here */
    return BASE_OK;
  base_status s = rewrite_reprove(&r->reproof, r->rules.all, r->rules.pass,
                                  r->search.applied_fw, r->search.applied_bw,
                                  &demoted, p->d);
  r->ran[OPT_REPROVE] = !s;
  if (s || !demoted)
    return s;
  ir_graph_free(p->cur);
  p->cur = p->orig ? ir_graph_clone(p->orig) : NULL;
  if (p->orig && !p->cur)
    return base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  srch_stats_free(&r->search);
  mutant_apply_stats_free(&r->mutants);
  memset(&r->search, 0, sizeof r->search);
  memset(&r->mutants, 0, sizeof r->mutants);
  r->rules_applied = r->pass_rules_applied = 0;
  r->acts_fused = r->acts_fused_by_rules = r->acts_unfused = 0;
  r->merged = r->merged_by_rules = 0;
  p->restart = OPT_COSTS;
  return BASE_OK;
}

/* A half result that failed the check: its second test
 * (ex_check_half_second), when the float32 model and the result before
 * its dtype stage are at hand; r->half_second says what it found. */
static base_status half_second(run *p, const ir_graph *ref) {
  const ir_graph *f = p->orig ? p->orig : p->g;
  if (!p->wide || ir_graph_float_type(f) != IR_DT_F32)
    return BASE_OK;
  ex_half_second *h = &p->r->half_second;
  base_status s = ex_check_half_second(f, p->wide, ref, current(p),
                                       &p->r->check_opts, h, p->d);
  p->r->half_second_ran = !s;
  return s;
}

static base_status do_check(run *p) {
  if (!p->o->check)
    return BASE_OK;
  const ir_graph *ref = p->ref ? p->ref : p->orig ? p->orig : p->g;
  ex_check_result *c = &p->r->check;
  base_status s = ex_check_rounds(ref, current(p), &p->r->check_opts, c, p->d);
  if (s)
    return s;
  p->r->max_rel_error = c->max_err;
  p->r->ran[OPT_CHECK] = 1;
  if (!(c->worst <= 1) && p->half != IR_DT_F32 && (s = half_second(p, ref)))
    return s;
  const ex_half_second *h = &p->r->half_second;
  if (c->worst <= 1 || (p->r->half_second_ran && h->pass))
    return BASE_OK;
  char more[400] = "";
  if (p->r->half_second_ran && !(h->wide.worst <= 1))
    snprintf(more, sizeof more,
             "; before its dtype stage, in float32, %.3g times float32's "
             "tolerance (seed %llu, scale %g)",
             h->wide.worst, (unsigned long long)h->wide.seed, h->wide.scale);
  else if (p->r->half_second_ran) {
    char e[200];
    ex_half_second_rounds(h, e, sizeof e);
    snprintf(more, sizeof more,
             "; its relative L2 error against the float32 model per round %s "
             "(the model's own %s copy's in brackets), in round %d over %g "
             "times the largest of those so far and over %.3g",
             e, ir_dtype_name(p->half), h->round + 1, EX_HALF_REF_K, h->tol);
  }
  return base_diag_set(
      p->d, BASE_ERR_INTERNAL, 0, 0,
      "the optimized graph's outputs differ from the original's: output "
      "%d element %lld is %.9g, not %.9g (seed %llu, scale %g: %.3g times "
      "the tolerance)%s",
      c->output + 1, (long long)c->index, c->vb, c->va,
      (unsigned long long)c->seed, c->scale, c->worst, more);
}

typedef base_status (*stage_fn)(run *p);
static const stage_fn stage_fns[OPT_NSTAGES] = {
    do_rules, do_batch,   do_costs, do_passes, do_search, do_splits,
    do_prune, do_reprove, do_dtype, do_fuse,   do_lower,  do_check,
};

/* ---- progress and the pipeline
 * ---------------------------------------------- */

static void tell(const run *p, opt_stage s, int pass, int npasses, int region,
                 int nregions) {
  if (!p->o->progress)
    return;
  opt_progress pr = {s, pass, npasses, region, nregions, base_now() - p->t0};
  p->o->progress(p->o->progress_u, &pr);
}

static void region_progress(void *u, int pass, int npasses, int region,
                            int nregions) {
  tell(u, OPT_SEARCH, pass, npasses, region, nregions);
}

/* Begun after the batch stage on a float32 g with a half result: the
 * check's reference is g in the half type (as half_start makes it). */
static base_status late_ref(run *p) {
  if (p->half == IR_DT_F32 || !p->o->check ||
      ir_graph_float_type(p->g) == p->half)
    return BASE_OK;
  p->ref = ir_graph_to_dtype(p->g, p->half, p->d);
  return p->ref ? BASE_OK : p->d->code ? p->d->code : BASE_ERR_NOMEM;
}

base_status opt_run_from(opt_stage from, const ir_graph *g,
                         const opt_options *o, ir_graph **out, opt_report *r,
                         base_diag *d) {
  memset(r, 0, sizeof *r);
  ir_ruleset_init(&r->rules.rs);
  r->max_rel_error = -1;
  r->nodes_before = g->nnodes;
  *out = NULL;
  if (from != OPT_RULES && (from < OPT_SPLITS || from >= OPT_NSTAGES))
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "the pipeline begins at 'rules' or at a stage from "
                         "'splits' on, not at '%s'",
                         opt_stage_name(from) ? opt_stage_name(from) : "?");
  run p = {o,    r,         o->so, {0}, g,          NULL, NULL,
           NULL, IR_DT_F32, NULL,  0,   base_now(), d};
  p.half = ir_dtype_is_half((ir_dtype)o->dtype) ? (ir_dtype)o->dtype
                                                : ir_graph_float_type(g);
  p.so.cost = cd_model_cost;
  p.so.cost_u = o->cost;
  p.so.fuse_bound = cd_model_cost_bound;
  if (!o->fuse)
    p.so.fuse_k = 0; /* not fused: the cheapest unfused graph wins */
  p.so.progress = o->progress ? region_progress : NULL;
  p.so.progress_u = &p;
  mutant_search_attach(&p.so, &p.ms, o->mutants, 1, &r->mutants);
  base_status s = from > OPT_BATCH ? late_ref(&p) : BASE_OK;
  double ts = 0;
  ex_check_opts_default(&r->check_opts);
  for (int k = (int)from; !s && k < OPT_NSTAGES; k++) {
    double t = base_now();
    tell(&p, (opt_stage)k, 0, 0, 0, 0);
    s = stage_fns[k](&p);
    r->seconds[k] += base_now() - t;
    ts = 0;
    for (int j = OPT_PASSES; j <= OPT_PRUNE; j++)
      ts += r->seconds[j];
    r->search.seconds = ts;
    if (!s && o->after)
      s = o->after(o->after_u, (opt_stage)k, current(&p), r, d);
    if (p.restart) { /* a rule demoted: again from there */
      k = p.restart - 1;
      p.restart = 0;
    }
  }
  r->nodes_after = current(&p)->nnodes;
  mutant_search_free(&p.ms);
  ir_graph_free(p.orig);
  ir_graph_free(p.ref);
  ir_graph_free(p.wide);
  if (s) {
    ir_graph_free(p.cur);
    return s;
  }
  *out = p.cur;
  return BASE_OK;
}

base_status opt_run(const ir_graph *g, const opt_options *o, ir_graph **out,
                    opt_report *r, base_diag *d) {
  return opt_run_from(OPT_RULES, g, o, out, r, d);
}

void opt_report_free(opt_report *r) {
  rewrite_reproof_free(&r->reproof);
  opt_rules_free(&r->rules);
  srch_stats_free(&r->search);
  mutant_apply_stats_free(&r->mutants);
}
