/* rules.c: rule generation and rule export in the embedding API:
 * api_gen_rules runs gen_rules (src/gen), the pipeline of `superopt
 * gen-rules`, with its options checked as the CLI checks them
 * (gen_options_check); api_export_rules and api_export_rules_mem run
 * ruleio_export / ruleio_export_mem (src/ruleio), as `superopt
 * export-rules`. */
#include <stdlib.h>
#include <string.h>

#include "../gen/gen.h"
#include "../ruleio/ruleio.h"
#include "api_int.h"

void api_gen_options_default(api_gen_options *o) {
  if (!o)
    return;
  memset(o, 0, sizeof *o);
  o->max_ops = 3;
  o->z3_timeout_ms = 10000;
}

/* The ranges of gen-rules' flags (src/cli/cmd_rules.c) that the library
 * does not check itself. */
static api_code check_gen(const api_gen_options *o, fp_pairs *pairs,
                          api_error *err) {
  static const char fn[] = "api_gen_rules";
  const char *p = o->pairs ? o->pairs : "spanning";
  if (!strcmp(p, "spanning"))
    *pairs = FP_PAIRS_SPANNING;
  else if (!strcmp(p, "smallest"))
    *pairs = FP_PAIRS_SMALLEST;
  else if (!strcmp(p, "all"))
    *pairs = FP_PAIRS_ALL;
  else
    return api_fail(err, API_ERR_USAGE,
                    "%s: pairs must be spanning, smallest or all, not '%s'", fn,
                    p);
  if (o->threads < 0 || o->threads > 1024)
    return api_fail(err, API_ERR_USAGE, "%s: threads must be 0..1024", fn);
  if (o->z3_timeout_ms < 1 || o->z3_timeout_ms > 3600000)
    return api_fail(err, API_ERR_USAGE, "%s: z3_timeout_ms must be 1..3600000",
                    fn);
  if (o->split < 0 || o->split > 256)
    return api_fail(err, API_ERR_USAGE, "%s: split must be 0..256", fn);
  if ((o->keep_unproven | o->no_normal_form) & ~1)
    return api_fail(err, API_ERR_USAGE,
                    "%s: keep_unproven and no_normal_form must be 0 or 1", fn);
  return API_OK;
}

static void fill_gen(api_gen_report *rep, const gen_stats *st) {
  memset(rep, 0, sizeof *rep);
  rep->graphs = st->fp.graphs;
  rep->buckets = st->fp.buckets;
  rep->pairs = st->fp.pairs;
  rep->pruned = st->pr.out;
  rep->proven = st->proven;
  rep->unproven = st->unproven;
  rep->written = st->written;
  rep->seconds = st->t_fp + st->t_pr + st->t_vf;
}

api_code api_gen_rules(const api_gen_options *o, const char *output,
                       api_gen_report *rep, api_error *err) {
  api_gen_options def;
  if (!output)
    return api_fail(err, API_ERR_USAGE, "api_gen_rules: NULL output");
  if (!o) {
    api_gen_options_default(&def);
    o = &def;
  }
  gen_options g = {0};
  api_code rc = check_gen(o, &g.pairs, err);
  if (rc)
    return rc;
  g.max_ops = o->max_ops;
  g.ops = o->ops;
  g.threads = o->threads;
  g.z3_timeout_ms = (unsigned)o->z3_timeout_ms;
  g.keep_unproven = o->keep_unproven;
  g.no_normal_form = o->no_normal_form;
  g.output = output;
  g.checkpoint = o->checkpoint;
  g.split = o->split;
  g.progress = o->progress;
  g.u = o->progress_u;
  base_diag d = {0};
  if (gen_options_check(&g, &d))
    return api_fail(err, API_ERR_USAGE, "api_gen_rules: %s", d.msg);
  gen_stats st;
  if (gen_rules(&g, &st, &d))
    rc = api_fail_diag(err, &d);
  else if (rep)
    fill_gen(rep, &st);
  gen_stats_free(&st);
  return rc ? rc : api_ok(err);
}

/* The format, one export-rules writes; else API_ERR_USAGE. */
static api_code export_format(const char *format, ruleio_format *f,
                              api_error *err) {
  int k = format ? ruleio_format_lookup(format) : -1;
  if (k != RULEIO_TASO_PB && k != RULEIO_TENSAT && k != RULEIO_JSON &&
      k != RULEIO_TENSAT_MULTI)
    return api_fail(err, API_ERR_USAGE,
                    "api_export_rules: format must be taso-pb, tensat, "
                    "tensat-multi or json, not '%s'",
                    format ? format : "(null)");
  *f = (ruleio_format)k;
  return API_OK;
}

static void fill_rules(api_rules_export_report *rep, const ruleio_stats *st) {
  memset(rep, 0, sizeof *rep);
  rep->exported = st->done;
  rep->not_proven = st->filtered;
  rep->duplicates = st->by_kind[RULEIO_SKIP_DUPLICATE];
  rep->other_format = st->by_kind[RULEIO_SKIP_OTHER_FORMAT];
  rep->unsupported = st->by_kind[RULEIO_SKIP_UNSUPPORTED];
}

/* Reads rules and exports them to output, or into *data when output is
 * NULL. */
static api_code export_rules(const char *rules, const char *format, int all,
                             const char *output, void **data, size_t *len,
                             api_rules_export_report *rep, api_error *err) {
  ruleio_format f = RULEIO_JSON;
  api_code rc = export_format(format, &f, err);
  if (rc)
    return rc;
  if (all != 0 && all != 1)
    return api_fail(err, API_ERR_USAGE, "api_export_rules: all must be 0 or 1");
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  char *bytes = NULL;
  size_t n = 0;
  int flags = all ? RULEIO_EXPORT_ALL : 0;
  ruleio_stats_init(&st);
  base_status s = ir_rules_read_file(rules, &rs, &d);
  if (s == BASE_OK)
    s = output ? ruleio_export(&rs, f, flags, output, &st, &d)
               : ruleio_export_mem(&rs, f, flags, &bytes, &n, &st, &d);
  ir_ruleset_free(&rs); /* also after a failed read, as the CLI */
  if (s)
    rc = api_fail_diag(err, &d);
  else if (rep)
    fill_rules(rep, &st);
  ruleio_stats_free(&st);
  if (!rc && !output) {
    *data = bytes;
    *len = n;
  }
  return rc ? rc : api_ok(err);
}

api_code api_export_rules(const char *rules, const char *format, int all,
                          const char *output, api_rules_export_report *rep,
                          api_error *err) {
  if (!rules || !format || !output)
    return api_fail(err, API_ERR_USAGE, "api_export_rules: NULL argument");
  return export_rules(rules, format, all, output, NULL, NULL, rep, err);
}

api_code api_export_rules_mem(const char *rules, const char *format, int all,
                              void **data, size_t *len,
                              api_rules_export_report *rep, api_error *err) {
  if (!rules || !format || !data || !len)
    return api_fail(err, API_ERR_USAGE, "api_export_rules_mem: NULL argument");
  return export_rules(rules, format, all, NULL, data, len, rep, err);
}
