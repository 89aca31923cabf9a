/* cmd_ruleio.c: `superopt import-rules` (TASO text or .pb -> rule file) and
 * `superopt export-rules` (rule file -> TASO .pb, Tensat text or JSON).
 * Both print their counts, skipped rules grouped by reason, to stderr. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ruleio/ruleio.h"
#include "cli.h"

/* Prints "verb N rules", the counts of rules left out by kind, and each
 * reason with (up to 12 of) its positions. */
static void print_stats(const char *verb, const char *unit,
                        const ruleio_stats *st) {
  const int *k = st->by_kind;
  fprintf(stderr, "%s %d rules", verb, st->done);
  if (st->filtered)
    fprintf(stderr, ", %d not proven left out (--all exports them)",
            st->filtered);
  if (k[RULEIO_SKIP_DUPLICATE])
    fprintf(stderr, ", %d duplicates left out", k[RULEIO_SKIP_DUPLICATE]);
  if (k[RULEIO_SKIP_OTHER_FORMAT])
    fprintf(stderr, ", %d for the other Tensat format left out",
            k[RULEIO_SKIP_OTHER_FORMAT]);
  fprintf(stderr, "; %d unsupported\n", k[RULEIO_SKIP_UNSUPPORTED]);
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

typedef struct ruleio_opts {
  const char *out, *format;
  int all;
} ruleio_opts;

#define T ruleio_opts
static const cli_opt import_table[] = {
    CLI_STR(T, "output", 'o', out, "OUT", "the rule file to write (required)"),
    CLI_STR(T, "format", 0, format, "F",
            "taso-text or taso-pb (default: from the extension,\n"
            ".txt or .pb)"),
    CLI_END};
static const cli_opt export_table[] = {
    CLI_STR(T, "output", 'o', out, "OUT",
            "the file to write, or - for stdout (required)"),
    CLI_STR(T, "format", 0, format, "F",
            "taso-pb, tensat, tensat-multi or json (required)"),
    CLI_FLAG(T, "all", all, 1, "also the rules not proven"), CLI_END};
#undef T

/* Parses the options and checks for one input file and -o. */
static int parse_opts(const cli_command *c, int argc, char **argv,
                      ruleio_opts *o) {
  *o = (ruleio_opts){0};
  int rc = cli_parse_opts(c, argc, argv, o);
  if (rc)
    return rc;
  if (argc - optind != 1 || !o->out)
    return cli_usage_error(c, "expected one input file and -o OUT");
  return CLI_OK;
}

static int import_rules(const cli_command *c, int argc, char **argv) {
  ruleio_opts o;
  int rc = parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  const char *out = o.out, *format = o.format;
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

const cli_command cli_cmd_import_rules = {
    "import-rules",
    "import TASO's rules (text or .pb) as a rule file",
    "import-rules FILE -o OUT.rules [options]",
    "Reads TASO's substitutions (taso_rules.txt: one 'LHS == RHS' a line;\n"
    "graph_subst.pb: GraphSubst.RuleCollection) and writes them, unverified,\n"
    "as a rule file, atomically. The format comes from the extension (.txt,\n"
    ".pb) unless given. Prints the counts, unsupported rules by reason, to\n"
    "stderr. See docs/interop.md.\n",
    import_table,
    NULL,
    import_rules};

/* Exports to the file out atomically, or to stdout when out is "-" (main.c
 * checks that stdout took it all: exit 2 and a message if not). */
static base_status export_to(const ir_ruleset *rs, ruleio_format f, int flags,
                             const char *out, ruleio_stats *st, base_diag *d) {
  if (strcmp(out, "-"))
    return ruleio_export(rs, f, flags, out, st, d);
  char *data;
  size_t len;
  base_status s = ruleio_export_mem(rs, f, flags, &data, &len, st, d);
  if (s != BASE_OK)
    return s;
  fwrite(data, 1, len, stdout); /* a failed write is main.c's to report */
  free(data);
  return s;
}

static int export_rules(const cli_command *c, int argc, char **argv) {
  ruleio_opts o;
  int rc = parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  const char *out = o.out, *format = o.format;
  int all = o.all;
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
    s = export_to(&rs, (ruleio_format)f, all ? RULEIO_EXPORT_ALL : 0, out, &st,
                  &d);
  if (s == BASE_OK)
    print_stats("exported", "rules", &st);
  else
    rc = cli_report(&d);
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
  return rc;
}

const cli_command cli_cmd_export_rules = {
    "export-rules",
    "export proven rules as TASO .pb, Tensat text or JSON",
    "export-rules RULES --format taso-pb|tensat|tensat-multi|json -o OUT\n"
    "       [--all]",
    "Writes the proven rules of RULES (every rule with --all) atomically to\n"
    "OUT (stdout when OUT is -) as TASO's GraphSubst.RuleCollection,\n"
    "Tensat's rewrite text, or JSON. Rules left out are counted on stderr\n"
    "by kind (duplicates, rules the other Tensat format writes, rules the\n"
    "format cannot express) and by reason. See docs/interop.md.\n",
    export_table,
    NULL,
    export_rules};
