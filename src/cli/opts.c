/* opts.c: the commands' option tables at work. A command declares its
 * options once, as a table of cli_opt rows (cli.h: name, argument, help,
 * target); from that table this file builds the getopt_long parser
 * (cli_parse_opts) and the option list of its --help (cli_print_usage), so
 * what a command accepts and what its help says cannot drift apart.
 *
 * Errors are usage errors (exit 1) with one message naming the option and
 * the hint "(see 'superopt CMD --help')": an unknown option, a missing
 * value, a value that is not a number, out of its range or not one of the
 * choices. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_OPTS 48 /* rows of the largest table, headings included */

/* The row of table t that getopt_long's return value ch stands for: long
 * options return 256 + their row, short ones their letter. */
static const cli_opt *row_of(const cli_opt *t, int ch) {
  if (ch >= 256)
    return &t[ch - 256];
  for (; t->kind != CLI_OPT_END; t++)
    if (t->letter && t->letter == ch)
      return t;
  return NULL;
}

/* The option as the user spelt it, for messages: "--seed", "-o" (an
 * abbreviation is named in full). */
static const char *spelling(const cli_opt *r, int ch, char *buf, size_t n) {
  if (ch < 256)
    snprintf(buf, n, "-%c", ch);
  else
    snprintf(buf, n, "--%s", r->name);
  return buf;
}

/* The index of word w in "a|b|c", or -1. */
static int choice_index(const char *choices, const char *w) {
  size_t len = strlen(w);
  int i = 0;
  for (const char *p = choices;; i++) {
    size_t k = strcspn(p, "|");
    if (k == len && !strncmp(p, w, len))
      return i;
    if (!p[k])
      return -1;
    p += k + 1;
  }
}

/* "a|b|c" as "a, b or c" into buf. */
static const char *choice_list(const char *choices, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (const char *p = choices; *p && len < n;) {
    size_t k = strcspn(p, "|");
    const char *sep = p == choices ? "" : p[k] ? ", " : " or ";
    len += (size_t)snprintf(buf + len, n - len, "%s%.*s", sep, (int)k, p);
    p += p[k] ? k + 1 : k;
  }
  return buf;
}

/* Applies value v of row r (spelt opt) to the options struct o; 0, or -1
 * after writing the message into msg. */
static int apply(const cli_opt *r, const char *opt, const char *v, void *o,
                 char *msg, size_t n) {
  char *field = (char *)o + r->off, *end, list[256];
  long long k;
  double x;
  switch (r->kind) {
  case CLI_OPT_FLAG: *(int *)field = (int)r->lo; return 0;
  case CLI_OPT_STR: *(const char **)field = v; return 0;
  case CLI_OPT_CALL: return r->set((char *)o + r->off, v, msg, n);
  case CLI_OPT_CHOICE:
    if ((k = choice_index(r->choices, v)) < 0) {
      snprintf(msg, n, "%s must be %s, not '%s'", opt,
               choice_list(r->choices, list, sizeof list), v);
      return -1;
    }
    *(int *)field = (int)k;
    return 0;
  case CLI_OPT_INT:
  case CLI_OPT_U64:
    if ((k = cli_parse_count(v)) < 0) {
      snprintf(msg, n, "bad value '%s' for %s: expected a whole number", v,
               opt);
      return -1;
    }
    if (r->kind == CLI_OPT_U64) {
      *(uint64_t *)field = (uint64_t)k;
      return 0;
    }
    if ((double)k < r->lo || (double)k > r->hi) {
      snprintf(msg, n, "%s must be %.0f..%.0f, not '%s'", opt, r->lo, r->hi, v);
      return -1;
    }
    *(int *)field = (int)k;
    return 0;
  case CLI_OPT_DOUBLE:
    errno = 0;
    x = strtod(v, &end);
    if (errno || end == v || *end) {
      snprintf(msg, n, "bad value '%s' for %s: expected a number", v, opt);
      return -1;
    }
    if (!(x >= r->lo && x <= r->hi)) {
      snprintf(msg, n, "%s must be %g..%g, not '%s'", opt, r->lo, r->hi, v);
      return -1;
    }
    *(double *)field = x;
    return 0;
  case CLI_OPT_END:
  case CLI_OPT_HEADING: break;
  }
  snprintf(msg, n, "%s: internal error: not an option", opt);
  return -1;
}

int cli_parse_opts(const cli_command *c, int argc, char **argv, void *o) {
  static const cli_opt none[] = {CLI_END};
  const cli_opt *t = c->opts ? c->opts : none;
  struct option lo[MAX_OPTS + 1];
  char shorts[2 * MAX_OPTS + 2] = ":"; /* ':': a missing value returns ':' */
  int nl = 0, ns = 1;
  for (int i = 0; t[i].kind != CLI_OPT_END; i++) {
    if (t[i].kind == CLI_OPT_HEADING)
      continue;
    if (nl == MAX_OPTS) /* a programming error, caught by any test */
      return cli_usage_error(c, "internal error: more than %d options",
                             MAX_OPTS);
    int has_arg = t[i].arg ? required_argument : no_argument;
    lo[nl++] = (struct option){t[i].name, has_arg, NULL, 256 + i};
    if (t[i].letter) {
      shorts[ns++] = t[i].letter;
      if (t[i].arg)
        shorts[ns++] = ':';
    }
  }
  lo[nl] = (struct option){0, 0, 0, 0};
  shorts[ns] = 0;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1;) {
    /* what the user typed: getopt_long has moved past it */
    const char *typed = argv[optind - 1];
    if (ch == ':')
      return cli_usage_error(c, "option '%s' needs a value", typed);
    const cli_opt *r = row_of(t, ch);
    if (ch == '?' || !r)
      return cli_usage_error(c, "unknown option '%s'", typed);
    char opt[64], msg[512];
    if (apply(r, spelling(r, ch, opt, sizeof opt), optarg, o, msg, sizeof msg))
      return cli_usage_error(c, "%s", msg);
  }
  return CLI_OK;
}

/* ---- help ---------------------------------------------------------------- */

#define HELP_COL 24 /* the column where an option's help starts, at most */

/* "-o, --output OUT" of row r into buf; its length. */
static int left_part(const cli_opt *r, char *buf, size_t n) {
  char letter[8] = "";
  if (r->letter)
    snprintf(letter, sizeof letter, "-%c, ", r->letter);
  return snprintf(buf, n, "%s--%s%s%s", letter, r->name, r->arg ? " " : "",
                  r->arg ? r->arg : "");
}

/* Writes one row: "  " and its left part, padded to col, then its help's
 * lines, each following line indented to col; the help starts on the next
 * line when the left part is too long. */
static void print_row(FILE *f, const cli_opt *r, int col) {
  char left[128];
  int w = left_part(r, left, sizeof left);
  if (2 + w + 2 > col)
    fprintf(f, "  %s\n%*s", left, col, "");
  else
    fprintf(f, "  %s%*s", left, col - 2 - w, "");
  for (const char *h = r->help;;) {
    size_t k = strcspn(h, "\n");
    fprintf(f, "%.*s\n", (int)k, h);
    if (!h[k] || !h[k + 1])
      break;
    h += k + 1;
    fprintf(f, "%*s", col, "");
  }
}

void cli_print_usage(const cli_command *c, FILE *f) {
  fprintf(f, "usage: superopt %s\n\n%s", c->synopsis, c->about);
  int col = 0, any = 0;
  for (const cli_opt *r = c->opts; r && r->kind != CLI_OPT_END; r++) {
    char left[128];
    if (r->kind == CLI_OPT_HEADING || !r->help)
      continue;
    int w = left_part(r, left, sizeof left);
    any = 1;
    if (2 + w + 2 > col && 2 + w + 2 <= HELP_COL)
      col = 2 + w + 2;
  }
  if (any)
    fprintf(f, "\noptions:\n");
  for (const cli_opt *r = c->opts; any && r->kind != CLI_OPT_END; r++)
    if (r->kind == CLI_OPT_HEADING)
      fprintf(f, "\n%s\n", r->name);
    else if (r->help)
      print_row(f, r, col);
  if (c->notes)
    fprintf(f, "\n%s", c->notes);
}
