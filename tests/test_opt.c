/* test_opt.c: the optimize pipeline (src/opt, opt_run): its stages in
 * order, the graph after each, the counts with the pass rules, progress,
 * an error from the caller's callback, a failed rules file, several rules
 * files read as one set, a broken rule read only when the search meets its
 * operators; opt_run_from. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opt/opt.h"

#define RULES SUPEROPT_SOURCE_DIR "/tests/data/rules/"
#define PASSES SUPEROPT_SOURCE_DIR "/rules/passes.rules"

/* Two 1x1 convolutions of one input, one followed by a relu: a pass rule
 * fuses the relu (then the siblings differ in act= and stay apart). */
static const char two_convs[] = "input x: [1,8,6,6]\n"
                                "weight a: [8,8,1,1]\n"
                                "weight b: [8,8,1,1]\n"
                                "ya = conv2d(x, a)\n"
                                "ra = relu(ya)\n"
                                "yb = conv2d(x, b)\n"
                                "output ra, yb\n";

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "parse: %s", d.msg);
  return g;
}

typedef struct seen {
  int after[OPT_NSTAGES]; /* order of the after calls, 1-based */
  int nafter;
  int nodes[OPT_NSTAGES];
  int regions;    /* progress calls inside the search */
  int stop_after; /* -1, else fail after this stage */
} seen;

static base_status after(void *u, opt_stage k, const ir_graph *g,
                         const opt_report *r, base_diag *d) {
  seen *s = u;
  (void)r;
  s->after[k] = ++s->nafter;
  s->nodes[k] = g->nnodes;
  if ((int)k == s->stop_after)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "stopped after %s",
                         opt_stage_name(k));
  return BASE_OK;
}

static void progress(void *u, const opt_progress *p) {
  seen *s = u;
  if (p->stage == OPT_SEARCH && p->nregions) {
    cr_assert(p->region >= 0 && p->region < p->nregions);
    cr_assert(p->pass >= 0 && p->pass < p->npasses);
    s->regions++;
  }
  cr_assert_geq(p->elapsed, 0);
}

static void options(opt_options *o, cd_model *m, seen *s) {
  opt_options_default(o);
  cd_model_init(m, NULL, NULL); /* roofline estimates */
  o->cost = m;
  o->rules = RULES "basic.rules";
  o->pass_rules = PASSES;
  o->after = after;
  o->after_u = s;
  o->progress = progress;
  o->progress_u = s;
  memset(s, 0, sizeof *s);
  s->stop_after = -1;
}

Test(opt, stages_in_order_with_counts) {
  ir_graph *g = parse(two_convs), *h = NULL;
  opt_options o;
  cd_model m;
  seen s;
  options(&o, &m, &s);
  opt_report r;
  base_diag d;
  cr_assert_eq(opt_run(g, &o, &h, &r, &d), BASE_OK, "%s", d.msg);
  for (int k = 0; k < OPT_NSTAGES; k++)
    cr_assert_eq(s.after[k], k + 1, "stage %s called %d-th", opt_stage_name(k),
                 s.after[k]);
  cr_assert_eq(s.nodes[OPT_RULES], 3); /* the model as given */
  cr_assert_eq(s.nodes[OPT_CHECK], h->nnodes);
  cr_assert_gt(s.regions, 0);
  cr_assert(!r.ran[OPT_BATCH] && r.ran[OPT_SEARCH] && r.ran[OPT_CHECK]);
  cr_assert_leq(r.check.worst, 1);
  /* the pass rule that fused the relu is counted as a fused activation
   * (the hand-written pass left the site to it) */
  cr_assert_gt(r.rules.npass, 0);
  cr_assert_eq(r.search.acts_fused, 0);
  cr_assert_eq(r.acts_fused_by_rules, 1);
  cr_assert_eq(r.acts_fused, 1);
  cr_assert_eq(r.merged, r.merged_by_rules);
  cr_assert_eq(r.pass_rules_applied,
               r.acts_fused_by_rules + r.acts_unfused + r.merged_by_rules);
  cr_assert_geq(r.rules_applied, r.pass_rules_applied);
  cr_assert_eq(r.nodes_after, h->nnodes);
  opt_report_free(&r);
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(opt, callback_error_stops_the_pipeline) {
  ir_graph *g = parse(two_convs), *h = NULL;
  opt_options o;
  cd_model m;
  seen s;
  options(&o, &m, &s);
  s.stop_after = OPT_SEARCH;
  opt_report r;
  base_diag d;
  cr_assert_eq(opt_run(g, &o, &h, &r, &d), BASE_ERR_IO);
  cr_assert_null(h);
  cr_assert_str_eq(d.msg, "stopped after search");
  cr_assert_eq(s.nafter, OPT_SEARCH + 1);
  cr_assert(!r.ran[OPT_FUSE] && !r.ran[OPT_CHECK]);
  opt_report_free(&r);
  ir_graph_free(g);
}

Test(opt, unproven_rules_refused_with_their_file) {
  ir_graph *g = parse(two_convs), *h = NULL;
  opt_options o;
  cd_model m;
  seen s;
  options(&o, &m, &s);
  o.rules = RULES "unproven.rules";
  opt_report r;
  base_diag d;
  cr_assert_neq(opt_run(g, &o, &h, &r, &d), BASE_OK);
  cr_assert_null(h);
  cr_assert(strstr(d.file, "unproven.rules"), "file '%s'", d.file);
  cr_assert_eq(s.nafter, 0);
  opt_report_free(&r);
  ir_graph_free(g);
}

/* Several rules files (paths separated by ':', as `optimize --rules A
 * --rules B` and the default pair default.rules and extended.rules give
 * them): read in order into one set, the pass rules in front, each file's
 * count kept; an unproven rule's error names its own file. */
Test(opt, rules_files_read_in_order_as_one_set) {
  opt_rules rl;
  base_diag d;
  cr_assert_eq(opt_rules_load(RULES "basic.rules:" RULES "foldmerge.rules",
                              PASSES, 0, &rl, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_eq(rl.nfiles, 2);
  cr_assert_str_eq(rl.files[0], RULES "basic.rules");
  cr_assert_str_eq(rl.files[1], RULES "foldmerge.rules");
  cr_assert_eq(rl.file_rules[0], 8);
  cr_assert_eq(rl.file_rules[1], 3);
  cr_assert_eq(rl.rs.n, rl.npass + 11);
  cr_assert_gt(rl.npass, 0);
  cr_assert_str_eq(rl.rs.rules[rl.npass].id, "merge_conv1x1");
  cr_assert_str_eq(rl.rs.rules[rl.npass + 8].id, "e00458");
  cr_assert(rl.all && rl.pass);
  opt_rules_free(&rl);
  cr_assert_neq(opt_rules_load(RULES "foldmerge.rules:" RULES "unproven.rules",
                               NULL, 0, &rl, &d),
                BASE_OK);
  cr_assert_str_eq(d.file, RULES "unproven.rules");
  cr_assert(strstr(d.msg, "only proven rules are used"), "%s", d.msg);
  opt_rules_free(&rl);
}

/* Writes basic.rules, then more, to a new file named from the mkstemp
 * template path (the caller removes it). */
static void basic_copy(char *path, const char *more) {
  size_t len;
  base_diag d;
  char *basic = base_read_file(RULES "basic.rules", &len, &d);
  cr_assert(basic, "%s", d.msg);
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  FILE *f = fdopen(fd, "w");
  cr_assert(f);
  fputs(basic, f);
  fputs(more, f);
  fclose(f);
  free(basic);
}

/* The files are one set, as if concatenated: an id in two of them is an
 * error naming both (each file's own ids are unique already); a file given
 * twice, an empty path and a missing file are errors naming them. */
Test(opt, rules_files_refused_with_a_clear_message) {
  base_diag d;
  char path[] = "/tmp/superopt_copy_XXXXXX";
  basic_copy(path, "");
  char list[256];
  snprintf(list, sizeof list, "%s:%s", RULES "basic.rules", path);
  opt_rules rl;
  cr_assert_eq(opt_rules_load(list, NULL, 0, &rl, &d), BASE_ERR_SYNTAX);
  cr_assert_str_eq(d.file, path);
  cr_assert(strstr(d.msg, "rule id 'ewadd_comm' is already that of the rule "
                          "at " RULES "basic.rules:"),
            "%s", d.msg);
  opt_rules_free(&rl);
  remove(path);
  const char *bad[][2] = {
      {RULES "basic.rules:" RULES "basic.rules", "given twice"},
      {RULES "basic.rules:", "an empty path in the rules files"},
      {RULES "basic.rules:" RULES "missing.rules", "missing.rules"}};
  for (int i = 0; i < 3; i++) {
    cr_assert_neq(opt_rules_load(bad[i][0], NULL, 0, &rl, &d), BASE_OK);
    cr_assert(strstr(d.msg, bad[i][1]), "'%s': %s", bad[i][0], d.msg);
    opt_rules_free(&rl);
  }
}

/* after: keeps a copy of the graph the search left */
static base_status keep_searched(void *u, opt_stage k, const ir_graph *g,
                                 const opt_report *r, base_diag *d) {
  (void)r;
  (void)d;
  if (k == OPT_SEARCH)
    cr_assert(*(ir_graph **)u = ir_graph_clone(g));
  return BASE_OK;
}

/* The stages from splits on, run on the graph the search left (what
 * `experiment candidates` does with a candidate), give what opt_run gives,
 * the dtype stage included; the stages before are not run, and a start
 * the stages need the rules or the search's state for is refused. */
Test(opt, run_from_splits_is_the_rest_of_the_pipeline) {
  ir_graph *g = parse(two_convs), *h = NULL, *searched = NULL, *h2 = NULL;
  opt_options o;
  cd_model m;
  seen s;
  options(&o, &m, &s);
  o.dtype = IR_DT_F16;
  o.after = keep_searched;
  o.after_u = &searched;
  opt_report r;
  base_diag d;
  cr_assert_eq(opt_run(g, &o, &h, &r, &d), BASE_OK, "%s", d.msg);
  cr_assert(searched && r.ran[OPT_DTYPE]);
  opt_rules rl; /* what the rules stage gives the splits stage */
  cr_assert_eq(opt_rules_load(NULL, PASSES, 0, &rl, &d), BASE_OK, "%s", d.msg);
  opt_options o2 = o; /* the cost model as the costs stage fitted it */
  o2.so.pass_rules = rl.pass;
  o2.after = after;
  o2.after_u = &s;
  memset(&s, 0, sizeof s);
  s.stop_after = -1;
  opt_report r2;
  cr_assert_eq(opt_run_from(OPT_SPLITS, searched, &o2, &h2, &r2, &d), BASE_OK,
               "%s", d.msg);
  for (int k = 0; k < OPT_NSTAGES; k++)
    cr_assert_eq(s.after[k], k < OPT_SPLITS ? 0 : k - OPT_SPLITS + 1,
                 "stage %s called %d-th", opt_stage_name(k), s.after[k]);
  cr_assert(r2.ran[OPT_DTYPE] && r2.ran[OPT_FUSE] && r2.ran[OPT_CHECK]);
  cr_assert(!r2.ran[OPT_RULES] && !r2.ran[OPT_SEARCH] && !r2.ran[OPT_REPROVE]);
  char *want = ir_print(h), *got = ir_print(h2);
  cr_assert(want && got);
  cr_assert_str_eq(got, want);
  free(want);
  free(got);
  opt_report_free(&r2);
  ir_graph_free(h2);
  h2 = NULL;
  const opt_stage refused[] = {OPT_BATCH, OPT_COSTS, OPT_PASSES, OPT_SEARCH,
                               OPT_NSTAGES};
  for (int i = 0; i < 5; i++) {
    cr_assert_eq(opt_run_from(refused[i], g, &o2, &h2, &r2, &d),
                 BASE_ERR_PARAM);
    cr_assert_null(h2);
    opt_report_free(&r2);
  }
  cr_assert(strstr(d.msg, "begins at 'rules' or at a stage from 'splits'"),
            "%s", d.msg);
  opt_rules_free(&rl);
  opt_report_free(&r);
  ir_graph_free(searched);
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(opt, stage_names) {
  for (int k = 0; k < OPT_NSTAGES; k++) {
    cr_assert_eq(opt_stage_find(opt_stage_name(k)), k);
    cr_assert(opt_stage_about(k));
  }
  cr_assert_eq(opt_stage_find("lowering"), -1);
  cr_assert_null(opt_stage_name(OPT_NSTAGES));
}

/* The rules file is read lazily (docs/search.md): a rule whose graphs do
 * not check is an error only once a searched graph has every operator of
 * one of its sides; then the error names the rules file and the line. */
Test(opt, a_broken_rule_is_read_when_the_search_meets_it) {
  static const char broken[] = "\nrule broken proven\n"
                               "src:\n"
                               "input a: [1,8,6,6]\n"
                               "t: [3] = erf(a)\n"
                               "output t\n"
                               "dst:\n"
                               "input a: [1,8,6,6]\n"
                               "output a\n"
                               "end\n";
  base_diag d;
  char path[] = "/tmp/superopt_broken_XXXXXX";
  basic_copy(path, broken);
  ir_ruleset rs;
  cr_assert_neq(ir_rules_read_file(path, &rs, &d), BASE_OK);
  int line = d.line; /* where reading it whole fails: "t: [3] = erf(a)" */
  cr_assert_gt(line, 0);
  static const char with_erf[] = "input x: [1,8,6,6]\n"
                                 "weight a: [8,8,1,1]\n"
                                 "ya = conv2d(x, a)\n"
                                 "e = erf(ya)\n"
                                 "output e\n";
  const char *models[] = {two_convs, with_erf};
  for (int i = 0; i < 2; i++) {
    ir_graph *g = parse(models[i]), *h = NULL;
    opt_options o;
    cd_model m;
    seen s;
    options(&o, &m, &s);
    o.rules = path;
    opt_report r;
    base_status st = opt_run(g, &o, &h, &r, &d);
    if (!i) { /* no erf: the broken rule is never parsed */
      cr_assert_eq(st, BASE_OK, "%s", d.msg);
    } else {
      cr_assert_neq(st, BASE_OK);
      cr_assert_null(h);
      cr_assert_str_eq(d.file, path);
      cr_assert_eq(d.line, line, "line %d: %s", d.line, d.msg);
      cr_assert(s.after[OPT_RULES] && !s.after[OPT_SEARCH]);
    }
    opt_report_free(&r);
    ir_graph_free(h);
    ir_graph_free(g);
  }
  remove(path);
}
