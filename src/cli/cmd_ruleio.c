/* cmd_ruleio.c: `superopt import-rules` (TASO text or .pb -> rule file) and
 * `superopt export-rules` (rule file -> TASO .pb, Tensat text or JSON).
 * Both print their counts, skipped rules grouped by reason, to stderr. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ruleio/ruleio.h"
#include "cli.h"

/* Prints "verb N rules" and each reason with (up to 12 of) its positions. */
static void print_stats(const char *verb, const char *unit,
                        const ruleio_stats *st) {
  fprintf(stderr, "%s %d rules", verb, st->done);
  if (st->filtered)
    fprintf(stderr, ", %d not proven left out (--all exports them)",
            st->filtered);
  fprintf(stderr, "; %d unsupported\n", st->skipped);
  for (int i = 0; i < st->nreasons; i++) {
    const ruleio_reason *r = &st->reasons[i];
    fprintf(stderr, "  %4d  %s (%s", r->count, r->what, unit);
    for (int j = 0; j < r->count && j < 12; j++)
      fprintf(stderr, "%s%d", j ? ", " : " ", r->where[j]);
    fprintf(stderr, "%s)\n", r->count > 12 ? ", ..." : "");
  }
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* Parses "-o OUT", "--format F" and "--all" (when allowed). */
static int parse_opts(const cli_command *c, int argc, char **argv,
                      const char **out, const char **format, int *all) {
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"format", required_argument, 0, 'f'},
                                       {"all", no_argument, 0, 'a'},
                                       {0, 0, 0, 0}};
  int ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (ch == 'o')
      *out = optarg;
    else if (ch == 'f')
      *format = optarg;
    else if (ch == 'a' && all)
      *all = 1;
    else
      return cli_usage_error(c, "unknown or incomplete option '%s'",
                             argv[optind - 1]);
  }
  if (argc - optind != 1 || !*out)
    return cli_usage_error(c, "expected one input file and -o OUT");
  return CLI_OK;
}

int cli_import_rules(const cli_command *c, int argc, char **argv) {
  const char *out = NULL, *format = NULL;
  int rc = parse_opts(c, argc, argv, &out, &format, NULL);
  if (rc)
    return rc;
  const char *in = argv[optind];
  int f = format                  ? ruleio_format_lookup(format)
          : ends_with(in, ".pb")  ? RULEIO_TASO_PB
          : ends_with(in, ".txt") ? RULEIO_TASO_TEXT
                                  : -1;
  if (f != RULEIO_TASO_TEXT && f != RULEIO_TASO_PB)
    return cli_usage_error(c,
                           format ? "cannot import format '%s' "
                                    "(taso-text or taso-pb)"
                                  : "cannot tell the format of '%s': give "
                                    "--format taso-text|taso-pb",
                           format ? format : in);
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  ruleio_stats_init(&st);
  base_status s = f == RULEIO_TASO_TEXT
                      ? ruleio_import_taso_text(in, &rs, &st, &d)
                      : ruleio_import_taso_pb(in, &rs, &st, &d);
  if (s == BASE_OK) {
    char header[600];
    snprintf(header, sizeof header,
             "# imported from %s by superopt "
             "import-rules (%s)\n",
             in, ruleio_format_name((ruleio_format)f));
    s = ir_rules_write_file(&rs, header, out, &d);
  }
  if (s == BASE_OK)
    print_stats("imported", f == RULEIO_TASO_TEXT ? "lines" : "rules", &st);
  else
    rc = cli_report(&d);
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
  return rc;
}

int cli_export_rules(const cli_command *c, int argc, char **argv) {
  const char *out = NULL, *format = NULL;
  int all = 0;
  int rc = parse_opts(c, argc, argv, &out, &format, &all);
  if (rc)
    return rc;
  int f = format ? ruleio_format_lookup(format) : -1;
  if (f != RULEIO_TASO_PB && f != RULEIO_TENSAT && f != RULEIO_JSON &&
      f != RULEIO_TENSAT_MULTI)
    return cli_usage_error(
        c, "--format must be taso-pb, tensat, tensat-multi or json");
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  ruleio_stats_init(&st);
  base_status s = ir_rules_read_file(argv[optind], &rs, &d);
  if (s == BASE_OK)
    s = ruleio_export(&rs, (ruleio_format)f, all ? RULEIO_EXPORT_ALL : 0, out,
                      &st, &d);
  if (s == BASE_OK)
    print_stats("exported", "rules", &st);
  else
    rc = cli_report(&d);
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
  return rc;
}
