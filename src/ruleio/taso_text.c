/* taso_text.c: import of TASO's rule text (taso_rules.txt).
 *
 * Grammar, one rule a line (blanks anywhere between tokens):
 *
 *   rule  := term '==' term
 *   term  := NAME [ '(' arg { ',' arg } ')' ]
 *   arg   := INT | term
 *
 * Known operators and their arguments are listed in `taso_ops` below; a
 * known operator with the wrong arguments is a syntax error, an unknown
 * name is parsed generically and makes the rule unsupported. Blank lines
 * and lines starting with '#' are skipped. Terms are hash-consed, so a
 * subterm written twice becomes one node.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ruleio_int.h"

/* An operator of the text: its kind, integer parameters, then terms. */
typedef struct taso_op {
  const char *name;
  ruleio_tk k;
  int nint, nterm;
  int extra; /* split: which output */
} taso_op;

static const taso_op taso_ops[] = {
    {"conv2d", RT_CONV, 4, 2, 0},     {"poolavg", RT_POOLAVG, 5, 1, 0},
    {"poolmax", RT_POOLMAX, 5, 1, 0}, {"concat", RT_CONCAT, 1, 2, 0},
    {"split_0", RT_SPLIT, 1, 1, 0},   {"split_1", RT_SPLIT, 1, 1, 1},
    {"enlarge", RT_ENLARGE, 2, 1, 0}, {"Iconv", RT_ICONV, 2, 0, 0},
    {"Cpool", RT_CPOOL, 2, 0, 0},     {"Imatmul", RT_IMATMUL, 0, 0, 0},
    {"smul", RT_SMUL, 0, 2, 0},       {"ewadd", RT_EWADD, 0, 2, 0},
    {"ewmul", RT_EWMUL, 0, 2, 0},     {"matmul", RT_MATMUL, 0, 2, 0},
    {"relu", RT_RELU, 0, 1, 0},       {"transpose", RT_TRANSPOSE, 0, 1, 0},
};
#define NTASO_OPS (int)(sizeof taso_ops / sizeof *taso_ops)

enum { T_ERR = -1, T_UNSUP = -2 };

typedef struct tparser {
  const char *s, *end; /* the line */
  const char *p;
  const char *file;
  int lineno;
  ruleio_terms *ts;
  char unsup[128]; /* first reason the rule is unsupported */
  int depth;       /* nesting of the term being parsed */
  base_diag *d;
} tparser;

static int col(const tparser *P, const char *at) {
  return (int)(at - P->s) + 1;
}

static int perr(tparser *P, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int perr(tparser *P, const char *at, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  base_diag_set(P->d, BASE_ERR_SYNTAX, P->lineno, col(P, at), "%s", msg);
  if (P->d) {
    snprintf(P->d->file, sizeof P->d->file, "%s", P->file);
    size_t n = (size_t)(P->end - P->s);
    if (n >= sizeof P->d->src)
      n = sizeof P->d->src - 1;
    memcpy(P->d->src, P->s, n);
    P->d->src[n] = 0;
  }
  return T_ERR;
}

static void skip_blank(tparser *P) {
  while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\r'))
    P->p++;
}

static int accept(tparser *P, char ch) {
  skip_blank(P);
  if (P->p < P->end && *P->p == ch) {
    P->p++;
    return 1;
  }
  return 0;
}

static int is_int_start(const tparser *P) {
  const char *q = P->p;
  if (q < P->end && *q == '-')
    q++;
  return q < P->end && isdigit((unsigned char)*q);
}

static int parse_int(tparser *P, int *v) {
  skip_blank(P);
  const char *at = P->p;
  int neg = 0;
  long x = 0;
  if (P->p < P->end && *P->p == '-')
    neg = 1, P->p++;
  if (P->p >= P->end || !isdigit((unsigned char)*P->p))
    return perr(P, at, "expected an integer");
  while (P->p < P->end && isdigit((unsigned char)*P->p)) {
    x = x * 10 + (*P->p++ - '0');
    if (x > 1000000)
      return perr(P, at, "integer too large");
  }
  *v = (int)(neg ? -x : x);
  return 0;
}

static int parse_term(tparser *P);

/* Arguments of an operator nobody knows: parsed, then dropped. */
static int parse_unknown_args(tparser *P) {
  if (!accept(P, '('))
    return 0;
  do {
    skip_blank(P);
    if (is_int_start(P)) {
      int v;
      if (parse_int(P, &v) < 0)
        return T_ERR;
    } else if (parse_term(P) == T_ERR) {
      return T_ERR;
    }
  } while (accept(P, ','));
  skip_blank(P);
  if (!accept(P, ')'))
    return perr(P, P->p, "expected ',' or ')'");
  return 0;
}

static int unsupported(tparser *P, const char *fmt, const char *name,
                       size_t n) {
  if (!P->unsup[0])
    snprintf(P->unsup, sizeof P->unsup, fmt, (int)n, name);
  return T_UNSUP;
}

/* The arguments of known operator o, into x. */
static int parse_args(tparser *P, const taso_op *o, ruleio_term *x,
                      const char *at) {
  int unsup = 0;
  x->np = o->nint;
  x->nin = o->nterm;
  if (!o->nint && !o->nterm)
    return 0;
  if (!accept(P, '('))
    return perr(P, P->p, "expected '(' after '%s'", o->name);
  for (int i = 0; i < o->nint + o->nterm; i++) {
    if (i && !accept(P, ','))
      return perr(P, P->p, "'%s' takes %d arguments", o->name,
                  o->nint + o->nterm);
    skip_blank(P);
    if (i < o->nint) {
      if (parse_int(P, &x->p[i]) < 0)
        return T_ERR;
      continue;
    }
    int t = parse_term(P);
    if (t == T_ERR)
      return T_ERR;
    unsup |= t == T_UNSUP;
    x->in[i - o->nint] = t;
  }
  if (!accept(P, ')'))
    return perr(P, P->p, "'%s' takes %d arguments: expected ')'", o->name,
                o->nint + o->nterm);
  (void)at;
  return unsup ? T_UNSUP : 0;
}

#define MAX_DEPTH 200

static int parse_term_at(tparser *P);

static int parse_term(tparser *P) {
  if (P->depth >= MAX_DEPTH)
    return perr(P, P->p, "terms nested more than %d deep", MAX_DEPTH);
  P->depth++;
  int t = parse_term_at(P);
  P->depth--;
  return t;
}

static int parse_term_at(tparser *P) {
  skip_blank(P);
  const char *at = P->p;
  while (P->p < P->end && (isalnum((unsigned char)*P->p) || *P->p == '_'))
    P->p++;
  size_t n = (size_t)(P->p - at);
  if (!n)
    return perr(P, at, "expected a term");
  ruleio_term x;
  memset(&x, 0, sizeof x);
  x.col = col(P, at);
  if (n > 6 && !strncmp(at, "input_", 6)) {
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)n, at);
    x.k = RT_INPUT;
    x.np = 1;
    if (!(x.p[0] = ruleio_input_number(name)))
      return perr(P, at, "bad input name '%s' (input_1..input_%d)", name,
                  RULEIO_MAX_INPUT);
  } else {
    const taso_op *o = NULL;
    for (int i = 0; i < NTASO_OPS; i++)
      if (strlen(taso_ops[i].name) == n && !strncmp(taso_ops[i].name, at, n))
        o = &taso_ops[i];
    if (!o) {
      if (parse_unknown_args(P) == T_ERR)
        return T_ERR;
      return unsupported(P, "unknown term '%.*s'", at, n);
    }
    x.k = o->k;
    int r = parse_args(P, o, &x, at);
    if (r < 0)
      return r;
    if (o->k == RT_SPLIT)
      x.p[x.np++] = o->extra;
  }
  int t = ruleio_terms_intern(P->ts, &x);
  if (t < 0) {
    base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return T_ERR;
  }
  return t;
}

/* Parses one rule line into roots *l, *r (T_UNSUP if unsupported). */
static int parse_rule_line(tparser *P, int *l, int *r) {
  if ((*l = parse_term(P)) == T_ERR)
    return T_ERR;
  skip_blank(P);
  if (P->end - P->p < 2 || P->p[0] != '=' || P->p[1] != '=')
    return perr(P, P->p, "expected '=='");
  P->p += 2;
  if ((*r = parse_term(P)) == T_ERR)
    return T_ERR;
  skip_blank(P);
  if (P->p < P->end)
    return perr(P, P->p, "unexpected text after the rule");
  return 0;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Imports the rule on the current line (already known non-blank). */
static base_status import_line(tparser *P, const ruleio_inshapes *sh,
                               ir_ruleset *out, ruleio_stats *st) {
  int l, r;
  P->unsup[0] = 0;
  ruleio_terms_free(P->ts);
  if (parse_rule_line(P, &l, &r) == T_ERR)
    return P->d && P->d->code ? P->d->code : BASE_ERR_SYNTAX;
  if (P->unsup[0])
    return ruleio_stats_skip(st, P->unsup, P->lineno);
  char id[48], note[300], why[160];
  snprintf(id, sizeof id, "taso-%d", P->lineno);
  snprintf(note, sizeof note, "imported from %s line %d", base_name(P->file),
           P->lineno);
  base_status s =
      ruleio_build_rule(P->ts, &l, &r, 1, sh, id, note, out, why, sizeof why);
  if (s == BASE_ERR_NOMEM)
    return base_diag_set(P->d, s, 0, 0, "out of memory");
  if (s != BASE_OK)
    return ruleio_stats_skip(st, why, P->lineno);
  if (st)
    st->done++;
  return BASE_OK;
}

base_status ruleio_import_taso_text_mem(const char *text, size_t len,
                                        const char *file, ir_ruleset *out,
                                        ruleio_stats *st, base_diag *d) {
  base_diag local;
  ruleio_terms ts = {0};
  ruleio_inshapes sh;
  tparser P = {0};
  P.file = file;
  P.ts = &ts;
  P.d = d ? d : &local;
  memset(P.d, 0, sizeof *P.d);
  ir_ruleset_init(out);
  ruleio_taso_inshapes(&sh);
  const char *s = text, *end = text + len;
  base_status status = BASE_OK;
  while (s < end && status == BASE_OK) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    P.s = P.p = s;
    P.end = nl ? nl : end;
    P.lineno++;
    s = nl ? nl + 1 : end;
    skip_blank(&P);
    if (P.p == P.end || *P.p == '#')
      continue;
    status = import_line(&P, &sh, out, st);
  }
  ruleio_terms_free(&ts);
  if (status != BASE_OK) {
    ir_ruleset_free(out);
    if (!P.d->file[0])
      snprintf(P.d->file, sizeof P.d->file, "%s", file);
  }
  return status;
}

base_status ruleio_import_taso_text(const char *path, ir_ruleset *out,
                                    ruleio_stats *st, base_diag *d) {
  size_t len;
  ir_ruleset_init(out);
  char *text = base_read_file(path, &len, d);
  if (!text)
    return d ? d->code : BASE_ERR_IO;
  base_status s = ruleio_import_taso_text_mem(text, len, path, out, st, d);
  free(text);
  return s;
}
