/* parse.c: the .graph text parser (grammar in docs/graph-format.md).
 *
 * Three passes, so that operators may appear in any order and every error
 * has a position:
 *   1. read each line into a statement (syntax, operator and parameter
 *      errors, in file order), and record every defined name;
 *   2. order the operator statements topologically (undefined names,
 *      cycles);
 *   3. build the graph through ir_add_tensor/ir_add_node, which run the
 *      shape rules (shape errors, annotation mismatches).
 * On any error the graph under construction is freed: never a partial graph.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "ir_int.h"

enum { S_GRAPH, S_INPUT, S_WEIGHT, S_OP, S_OUTPUT };

typedef struct span {
  const char *s;
  size_t len; /* a line may hold gigabytes (--max-input-size) */
  int col;
} span;

typedef struct result {
  span name;
  int has_shape, shape_col;
  ir_shape shape;
  int dtype;     /* ir_dtype written before the shape (f32 when none) */
  int has_value; /* S_INPUT/S_WEIGHT: a rule's value constraint (value=) */
  float value;
} result;

typedef struct stmt {
  int kind, line;
  span text;      /* the whole line, for messages */
  int op, op_col; /* S_OP */
  int nres, nargs, nnames;
  result *res; /* S_OP results; S_INPUT/S_WEIGHT: res[0] */
  span *args;  /* S_OP inputs; S_OUTPUT names */
  ir_attrs attrs;
  int32_t *tensor; /* tensor index per result, once built */
} stmt;

/* Where a name is defined: statement and result slot. */
typedef struct def {
  const char *s;
  size_t len;
  int stmt, slot;
} def;

typedef struct parser {
  const char *file;
  const char *text, *end;
  base_diag *d;
  base_arena *arena; /* scratch, freed after parsing */
  stmt *st;
  int nst, capst, nlines;
  def *defs; /* open addressing, capdefs a power of two */
  int capdefs, ndefs;
  /* per line */
  const char *p, *line_end; /* line_end: where the statement text ends */
  const char *line_start, *full_end; /* full_end: end of the whole line */
  int line;
} parser;

/* ---- errors ----------------------------------------------------------------
 */

/* Byte counts and columns are size_t inside: a line may be longer than an
 * int counts (a 2 GiB line made them negative, then a crash). Columns are
 * reported as int, saturated; names in messages are cut to PREC bytes. */
int ir_parse_col(size_t offset) {
  return offset >= (size_t)INT_MAX ? INT_MAX : (int)offset + 1;
}

static int col_of(const parser *P, const char *pos) {
  return ir_parse_col((size_t)(pos - P->line_start));
}

/* printf precision for a name of len bytes in a message ("%.*s") */
#define PREC(len) ((int)((len) > 200 ? 200 : (len)))

static void copy_src(base_diag *d, const char *s, size_t len) {
  if (len > sizeof d->src - 1)
    len = sizeof d->src - 1;
  for (size_t i = 0; i < len; i++)
    d->src[i] = (s[i] >= 32 && s[i] < 127) || s[i] == '\t' ? s[i] : '?';
  d->src[len] = '\0';
}

/* Positions an error at line/col with src line (s,len). */
static base_status at(parser *P, int line, const char *s, size_t len, int col) {
  base_diag *d = P->d;
  snprintf(d->file, sizeof d->file, "%s", P->file);
  d->line = line;
  d->col = col;
  copy_src(d, s, len);
  return d->code;
}

static base_status perr(parser *P, base_status code, const char *pos,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error at pos on the current line. */
static base_status perr(parser *P, base_status code, const char *pos,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(P->d->msg, sizeof P->d->msg, fmt, ap);
  va_end(ap);
  P->d->code = code;
  return at(P, P->line, P->line_start, (size_t)(P->full_end - P->line_start),
            col_of(P, pos));
}

/* Moves an existing diag (from a shape rule) to a statement's position. */
static base_status stmt_err(parser *P, const stmt *s, int col) {
  return at(P, s->line, s->text.s, s->text.len, col);
}

/* ---- lexing ----------------------------------------------------------------
 */

static void ws(parser *P) {
  while (P->p < P->line_end && (*P->p == ' ' || *P->p == '\t'))
    P->p++;
}

static int peek(parser *P) {
  ws(P);
  return P->p < P->line_end ? (unsigned char)*P->p : -1;
}

static const char *describe(parser *P, char *buf, size_t n) {
  int c = peek(P);
  if (c < 0)
    snprintf(buf, n, "end of line");
  else if (c >= 33 && c < 127)
    snprintf(buf, n, "'%c'", c);
  else
    snprintf(buf, n, "byte 0x%02x", c);
  return buf;
}

static base_status expected(parser *P, const char *what) {
  char buf[32];
  return perr(P, BASE_ERR_SYNTAX, P->p, "expected %s, found %s", what,
              describe(P, buf, sizeof buf));
}

static int accept(parser *P, int c) {
  if (peek(P) != c)
    return 0;
  P->p++;
  return 1;
}

static base_status expect(parser *P, int c, const char *what) {
  return accept(P, c) ? BASE_OK : expected(P, what);
}

static base_status name(parser *P, span *out, const char *what) {
  if (peek(P) < 0 || !ir_name_start((unsigned char)*P->p))
    return expected(P, what);
  const char *s = P->p;
  while (P->p < P->line_end && ir_name_char((unsigned char)*P->p))
    P->p++;
  *out = (span){s, (size_t)(P->p - s), col_of(P, s)};
  return BASE_OK;
}

static int span_is(const span *s, const char *w) {
  return strlen(w) == s->len && memcmp(s->s, w, s->len) == 0;
}

/* type := ['f32' | 'i64' | 'bool'] (before a shape; none = f32) */
static base_status dtype(parser *P, int *out) {
  ws(P);
  const char *s = P->p;
  while (P->p < P->line_end &&
         ((*P->p >= 'a' && *P->p <= 'z') || (*P->p >= '0' && *P->p <= '9')))
    P->p++;
  *out = IR_DT_F32;
  if (P->p == s)
    return BASE_OK;
  int t = ir_dtype_lookup(s, (size_t)(P->p - s));
  if (t < 0)
    return perr(P, BASE_ERR_SYNTAX, s,
                "unknown element type '%.*s' (known: f32, i64, bool)",
                PREC((size_t)(P->p - s)), s);
  *out = t;
  return BASE_OK;
}

/* shape := '[' [INT {',' INT}] ']' */
static base_status shape(parser *P, ir_shape *out) {
  base_status st = expect(P, '[', "'[' starting a shape");
  memset(out, 0, sizeof *out);
  if (st || accept(P, ']'))
    return st;
  for (;;) {
    ws(P);
    const char *s = P->p;
    int64_t v = 0;
    while (P->p < P->line_end && *P->p >= '0' && *P->p <= '9' && v <= INT32_MAX)
      v = v * 10 + (*P->p++ - '0');
    if (P->p == s)
      return expected(P, "a dimension (positive integer)");
    if (v < 1 || v > INT32_MAX)
      return perr(P, BASE_ERR_SHAPE, s, "dimension must be between 1 and %d",
                  INT32_MAX);
    if (out->rank == IR_MAX_RANK)
      return perr(P, BASE_ERR_SHAPE, s, "rank exceeds the maximum of %d",
                  IR_MAX_RANK);
    out->dim[out->rank++] = v;
    if (accept(P, ']'))
      return BASE_OK;
    if ((st = expect(P, ',', "',' or ']' in a shape")))
      return st;
  }
}

static base_status end_of_line(parser *P) {
  return peek(P) < 0 ? BASE_OK : expected(P, "end of line");
}

/* ---- statements
 * -------------------------------------------------------------- */

static stmt *new_stmt(parser *P, int kind) {
  if (P->nst == P->capst) {
    if (P->capst > INT_MAX / 2)
      return NULL;
    int cap = P->capst ? P->capst * 2 : 64;
    stmt *s = base_realloc(P->st, sizeof *s * (size_t)cap);
    if (!s)
      return NULL;
    P->st = s;
    P->capst = cap;
  }
  stmt *s = &P->st[P->nst++];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->line = P->line;
  s->text = (span){P->line_start, (size_t)(P->full_end - P->line_start), 1};
  return s;
}

static void *scratch(parser *P, size_t n) {
  void *p = base_arena_alloc(P->arena, n);
  if (!p)
    base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return p;
}

/* NAME {',' NAME} up to end of line, into args. */
static base_status name_list(parser *P, stmt *s, const char *what) {
  span buf[256];
  int n = 0;
  base_status st;
  do {
    if (n == 256)
      return perr(P, BASE_ERR_SYNTAX, P->p, "too many names on one line");
    if ((st = name(P, &buf[n++], what)))
      return st;
  } while (accept(P, ','));
  s->args = scratch(P, sizeof(span) * (size_t)n);
  if (!s->args)
    return BASE_ERR_NOMEM;
  memcpy(s->args, buf, sizeof(span) * (size_t)n);
  s->nargs = n;
  return BASE_OK;
}

/* [ 'value=' FLOAT ] after a declaration's shape: a rule input that binds
 * only a tensor whose known values all equal it (docs/graph-format.md). */
static base_status decl_value(parser *P, result *r) {
  ws(P);
  if (P->line_end - P->p < 6 || memcmp(P->p, "value=", 6))
    return BASE_OK;
  const char *s = P->p + 6;
  char buf[64], *e;
  size_t n = 0;
  while (s + n < P->line_end && n + 1 < sizeof buf &&
         !isspace((unsigned char)s[n]))
    buf[n] = s[n], n++;
  buf[n] = 0;
  float v = strtof(buf, &e);
  if (!n || *e || !isfinite(v))
    return perr(P, BASE_ERR_SYNTAX, s, "expected a finite number after value=");
  r->has_value = 1, r->value = v;
  P->p = s + n;
  return BASE_OK;
}

/* ('input'|'weight') NAME ':' shape [ 'value=' FLOAT ] */
static base_status decl(parser *P, int kind) {
  stmt *s = new_stmt(P, kind);
  base_status st;
  if (!s || !(s->res = scratch(P, sizeof(result))))
    return base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  s->nres = 1;
  if ((st = name(P, &s->res[0].name, "a tensor name")) ||
      (st = expect(P, ':', "':' before the shape")))
    return st;
  s->res[0].shape_col = col_of(P, P->p);
  if ((st = dtype(P, &s->res[0].dtype)) || (st = shape(P, &s->res[0].shape)))
    return st;
  s->res[0].has_shape = 1;
  if ((st = decl_value(P, &s->res[0])))
    return st;
  return end_of_line(P);
}

static base_status unknown_op(parser *P, const span *opname) {
  char list[512];
  size_t k = 0;
  for (int i = 0; i < IR_NOPS && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "",
                          ir_op((ir_opcode)i)->name);
  return perr(P, BASE_ERR_UNKNOWN_OP, opname->s,
              "unknown operator '%.*s' (known: %s)", PREC(opname->len),
              opname->s, list);
}

static base_status unknown_param(parser *P, ir_opcode op, const span *key) {
  const ir_opinfo *r = ir_op(op);
  char list[256] = "none";
  size_t k = 0;
  for (int i = 0; i < r->nparams && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "",
                          ir_param_name(r->params[i]));
  return perr(P, BASE_ERR_UNKNOWN_PARAM, key->s,
              "%s has no parameter '%.*s' (its parameters: %s)", r->name,
              PREC(key->len), key->s, list);
}

/* The text of a parameter value: a bracketed list or a bare word. */
static span value_span(parser *P) {
  ws(P);
  const char *s = P->p;
  if (P->p < P->line_end && *P->p == '[') {
    while (P->p < P->line_end && *P->p != ']' && *P->p != '#')
      P->p++;
    if (P->p < P->line_end && *P->p == ']')
      P->p++;
  } else {
    while (P->p < P->line_end && *P->p != ' ' && *P->p != '\t' &&
           *P->p != '#' && *P->p != ';' && *P->p != '}')
      P->p++;
  }
  return (span){s, (size_t)(P->p - s), col_of(P, s)};
}

/* { KEY '=' value } to end of line (in a fused body: to ';' or '}'), then
 * required-parameter check. */
static base_status params_of(parser *P, ir_opcode op, ir_attrs *attrs,
                             const span *opname, int in_body) {
  const ir_opinfo *r = ir_op(op);
  uint32_t given = 0;
  base_status st;
  ir_attrs_default(op, attrs);
  for (int c; (c = peek(P)) >= 0 && !(in_body && (c == ';' || c == '}'));) {
    span key, val;
    char err[200];
    if ((st = name(P, &key, "a parameter name or end of line")))
      return st;
    int p = ir_param_lookup(key.s, (size_t)key.len);
    int idx = p < 0 ? -1 : ir_op_param_index(op, (ir_param_id)p);
    if (idx < 0)
      return unknown_param(P, op, &key);
    if (given & (1u << idx))
      return perr(P, BASE_ERR_PARAM, key.s, "parameter '%.*s' given twice",
                  PREC(key.len), key.s);
    given |= 1u << idx;
    if ((st = expect(P, '=', "'=' after the parameter name")))
      return st;
    val = value_span(P);
    if (val.len == 0)
      return expected(P, "a parameter value");
    if (ir_param_parse((ir_param_id)p, val.s, (size_t)val.len, attrs, err,
                       sizeof err))
      return perr(P, BASE_ERR_PARAM, val.s, "%s", err);
  }
  uint32_t missing = r->required & ~given;
  for (int i = 0; missing && i < r->nparams; i++)
    if (missing & (1u << i))
      return perr(P, BASE_ERR_PARAM, opname->s, "%s needs parameter '%s'",
                  r->name, ir_param_name(r->params[i]));
  return BASE_OK;
}

static base_status params(parser *P, stmt *s, const span *opname) {
  return params_of(P, (ir_opcode)s->op, &s->attrs, opname, 0);
}

/* One argument of a body operator: '$' INT (an input of the fused node) or
 * the name of an earlier body operator. */
static base_status body_arg(parser *P, const stmt *s, const span *names, int n,
                            int32_t *ref) {
  if (accept(P, '$')) {
    const char *d0 = P->p;
    int64_t k = 0;
    while (P->p < P->line_end && *P->p >= '0' && *P->p <= '9' && k <= IR_MAX_IN)
      k = k * 10 + (*P->p++ - '0');
    if (P->p == d0)
      return expected(P, "an input number after '$'");
    if (k >= s->nargs)
      return perr(P, BASE_ERR_UNDEFINED, d0 - 1,
                  "$%lld: the fused node has %d input%s ($0..$%d)",
                  (long long)k, s->nargs, s->nargs == 1 ? "" : "s",
                  s->nargs - 1);
    *ref = -1 - (int32_t)k;
    return BASE_OK;
  }
  span nm;
  base_status st = name(P, &nm, "'$N' or the name of an earlier body result");
  if (st)
    return st;
  for (int i = 0; i < n; i++)
    if (names[i].len == nm.len && !memcmp(names[i].s, nm.s, (size_t)nm.len)) {
      *ref = i;
      return BASE_OK;
    }
  return perr(P, BASE_ERR_UNDEFINED, nm.s,
              "undefined name '%.*s' in the fused body (a body reads $N or "
              "results defined before it in the body)",
              PREC(nm.len), nm.s);
}

/* '{' bstmt {';' bstmt} '}', bstmt := NAME '=' OP '(' barg {',' barg} ')'
 * params. Interns the body into *id. */
static base_status body(parser *P, const stmt *s, uint64_t *id) {
  ir_body_op ops[IR_BODY_MAX_OPS];
  span names[IR_BODY_MAX_OPS];
  const char *opos[IR_BODY_MAX_OPS];
  int n = 0;
  if (s->nargs > IR_MAX_IN)
    return perr(P, BASE_ERR_ARITY, s->args[IR_MAX_IN].s,
                "fused takes at most %d inputs, got %d", IR_MAX_IN, s->nargs);
  if (s->op == IR_OP_MOVE && s->nargs != 1)
    return perr(P, BASE_ERR_ARITY, s->args[s->nargs > 1].s,
                "move: %d inputs (expected 1)", s->nargs);
  base_status st = expect(P, '{',
                          s->op == IR_OP_MOVE ? "'{' starting the move program"
                                              : "'{' starting the fused body");
  if (st)
    return st;
  const char *brace = P->p - 1;
  do {
    span nm, opn;
    if (n == IR_BODY_MAX_OPS)
      return perr(P, BASE_ERR_PARAM, P->p,
                  "fused body has more than %d operators", IR_BODY_MAX_OPS);
    if ((st = name(P, &nm, "a body result name")))
      return st;
    for (int i = 0; i < n; i++)
      if (names[i].len == nm.len && !memcmp(names[i].s, nm.s, (size_t)nm.len))
        return perr(P, BASE_ERR_DUPLICATE, nm.s,
                    "duplicate name '%.*s' in the fused body", PREC(nm.len),
                    nm.s);
    if ((st = expect(P, '=', "'=' after a body result name")) ||
        (st = name(P, &opn, "an operator name")))
      return st;
    int op = ir_op_lookup(opn.s, (size_t)opn.len);
    if (op < 0)
      return unknown_op(P, &opn);
    if (s->op == IR_OP_MOVE && !ir_move_op_ok((ir_opcode)op))
      return perr(P, BASE_ERR_PARAM, opn.s,
                  "%s cannot be part of a move program (allowed: slice pad "
                  "transpose reshape concat)",
                  ir_op((ir_opcode)op)->name);
    if (s->op != IR_OP_MOVE && !ir_body_op_ok((ir_opcode)op) &&
        !ir_body_row_op((ir_opcode)op))
      return perr(P, BASE_ERR_PARAM, opn.s,
                  "%s cannot be part of a fused body (allowed: %s; as the "
                  "last operator also, over the last axis: %s)",
                  ir_op((ir_opcode)op)->name, ir_body_op_names(),
                  ir_body_row_op_names());
    ir_body_op *o = &ops[n];
    memset(o, 0, sizeof *o);
    o->op = (ir_opcode)op;
    if ((st = expect(P, '(', "'(' after the operator name")))
      return st;
    if (!accept(P, ')')) {
      do {
        if (o->nin == IR_MAX_FIXED_IN)
          return perr(P, BASE_ERR_ARITY, P->p, "too many inputs");
        if ((st = body_arg(P, s, names, n, &o->in[o->nin++])))
          return st;
      } while (accept(P, ','));
      if ((st = expect(P, ')', "',' or ')' after an input")))
        return st;
    }
    if (ir_check_arity(ir_op(o->op), o->nin, P->d)) {
      char msg[sizeof P->d->msg];
      memcpy(msg, P->d->msg, sizeof msg);
      return perr(P, BASE_ERR_ARITY, opn.s, "%s", msg);
    }
    if ((st = params_of(P, o->op, &o->a, &opn, 1)))
      return st;
    names[n] = nm;
    opos[n++] = nm.s;
  } while (accept(P, ';'));
  if ((st = expect(P, '}', "';' or '}' in the fused body")))
    return st;
  char used[IR_BODY_MAX_OPS] = {0}, used_in[IR_MAX_IN] = {0};
  for (int i = 0; i < n; i++)
    for (int k = 0; k < ops[i].nin; k++) {
      if (ops[i].in[k] >= 0)
        used[ops[i].in[k]] = 1;
      else
        used_in[-1 - ops[i].in[k]] = 1;
    }
  for (int i = 0; i + 1 < n; i++)
    if (!used[i])
      return perr(P, BASE_ERR_PARAM, opos[i],
                  "body result '%.*s' is never read (the last body result is "
                  "the output)",
                  PREC(names[i].len), names[i].s);
  for (int k = 0; k < s->nargs; k++)
    if (!used_in[k])
      return perr(P, BASE_ERR_PARAM, brace,
                  "input $%d ('%.*s') is never read "
                  "by the fused body",
                  k, PREC(s->args[k].len), s->args[k].s);
  const ir_body *b = s->op == IR_OP_MOVE
                         ? ir_move_intern(n, ops, P->d)
                         : ir_body_intern(s->nargs, n, ops, P->d);
  if (!b) {
    char msg[sizeof P->d->msg];
    memcpy(msg, P->d->msg, sizeof msg);
    return perr(P, P->d->code, brace, "%s", msg);
  }
  *id = b->id;
  return BASE_OK;
}

/* '(' [NAME {',' NAME}] ')' */
static base_status args(parser *P, stmt *s) {
  base_status st = expect(P, '(', "'(' after the operator name");
  if (st || accept(P, ')'))
    return st;
  if ((st = name_list(P, s, "an input name")))
    return st;
  return expect(P, ')', "',' or ')' after an input name");
}

static base_status check_arity(parser *P, stmt *s, const span *opname) {
  const ir_opinfo *r = ir_op((ir_opcode)s->op);
  base_diag *d = P->d;
  int n = ir_op_nout((ir_opcode)s->op, &s->attrs);
  if (s->nres != n)
    return perr(P, BASE_ERR_ARITY, s->text.s + s->res[0].name.col - 1,
                "%s gives %d output%s but %d name%s given", r->name, n,
                n == 1 ? "" : "s", s->nres, s->nres == 1 ? " is" : "s are");
  if (ir_check_arity(r, s->nargs, d)) {
    char msg[sizeof d->msg];
    memcpy(msg, d->msg, sizeof msg);
    return perr(P, BASE_ERR_ARITY, opname->s, "%s", msg);
  }
  return BASE_OK;
}

/* result {',' result} '=' OP '(' args ')' params */
static base_status op_stmt(parser *P) {
  stmt *s = new_stmt(P, S_OP);
  result buf[IR_MAX_LIST + 1];
  base_status st;
  if (!s)
    return base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  do {
    if (s->nres == IR_MAX_LIST)
      return perr(P, BASE_ERR_ARITY, P->p, "too many results (at most %d)",
                  IR_MAX_LIST);
    result *r = &buf[s->nres++];
    memset(r, 0, sizeof *r);
    if ((st = name(P, &r->name, "a result name")))
      return st;
    if (accept(P, ':')) {
      ws(P);
      r->has_shape = 1;
      r->shape_col = col_of(P, P->p);
      if ((st = dtype(P, &r->dtype)) || (st = shape(P, &r->shape)))
        return st;
    }
  } while (accept(P, ','));
  if ((st = expect(P, '=', "'=' or ',' after a result")))
    return st;
  s->res = scratch(P, sizeof(result) * (size_t)s->nres);
  if (!s->res)
    return BASE_ERR_NOMEM;
  memcpy(s->res, buf, sizeof(result) * (size_t)s->nres);
  span opname;
  if ((st = name(P, &opname, "an operator name")))
    return st;
  s->op = ir_op_lookup(opname.s, (size_t)opname.len);
  s->op_col = opname.col;
  if (s->op < 0)
    return unknown_op(P, &opname);
  uint64_t body_id = 0;
  if ((st = args(P, s)) ||
      ((s->op == IR_OP_FUSED || s->op == IR_OP_MOVE) && s->nargs > 0 &&
       (st = body(P, s, &body_id))) ||
      (st = params(P, s, &opname)))
    return st;
  s->attrs.body = body_id;
  return check_arity(P, s, &opname);
}

static base_status statement(parser *P) {
  span first;
  const char *save = P->p;
  base_status st =
      name(P, &first,
           "a statement (input, weight, output, graph or NAME = op(...))");
  if (st)
    return st;
  int kw = span_is(&first, "graph")    ? S_GRAPH
           : span_is(&first, "input")  ? S_INPUT
           : span_is(&first, "weight") ? S_WEIGHT
           : span_is(&first, "output") ? S_OUTPUT
                                       : S_OP;
  int c = peek(P);
  if (kw == S_OP || c < 0 || !ir_name_start(c)) {
    P->p = save;
    return op_stmt(P);
  }
  if (kw == S_INPUT || kw == S_WEIGHT)
    return decl(P, kw);
  stmt *s = new_stmt(P, kw);
  if (!s)
    return base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (kw == S_GRAPH && P->nst > 1)
    return perr(P, BASE_ERR_SYNTAX, first.s,
                "'graph' must be the first statement");
  if ((st = name_list(P, s, kw == S_GRAPH ? "a graph name" : "a tensor name")))
    return st;
  if (kw == S_GRAPH && s->nargs > 1)
    return perr(
        P, BASE_ERR_SYNTAX,
        memchr(s->args[0].s, ',', (size_t)(s->args[1].s - s->args[0].s)),
        "expected end of line");
  return end_of_line(P);
}

/* Splits the text into lines and reads each into a statement. */
static base_status read_lines(parser *P) {
  const char *p = P->text;
  while (p < P->end) {
    const char *e = p, *hash = NULL;
    while (e < P->end && *e != '\n') {
      if (*e == '#' && !hash)
        hash = e; /* comments run to the end of the line */
      e++;
    }
    P->line += P->line < INT_MAX; /* saturates (a file of 3 G newlines) */
    P->line_start = P->p = p;
    P->full_end = e > p && e[-1] == '\r' ? e - 1 : e;
    P->line_end = hash ? hash : P->full_end;
    if (peek(P) >= 0) {
      base_status st = statement(P);
      if (st)
        return st;
    }
    p = e + (e < P->end);
  }
  P->nlines = P->line;
  return BASE_OK;
}

/* ---- name table
 * -------------------------------------------------------------- */

static uint64_t str_hash(const char *s, size_t len) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h;
}

static def *lookup(parser *P, const char *s, size_t len) {
  uint64_t mask = (uint64_t)P->capdefs - 1;
  for (uint64_t i = str_hash(s, len) & mask;; i = (i + 1) & mask) {
    def *d = &P->defs[i];
    if (!d->s || (d->len == len && memcmp(d->s, s, len) == 0))
      return d;
  }
}

static base_status define_all(parser *P) {
  int n = 0;
  for (int i = 0; i < P->nst; i++)
    n += P->st[i].kind == S_OP || P->st[i].kind == S_INPUT ||
                 P->st[i].kind == S_WEIGHT
             ? P->st[i].nres
             : 0;
  for (P->capdefs = 16; P->capdefs < 2 * n;)
    P->capdefs *= 2;
  P->defs = base_calloc((size_t)P->capdefs, sizeof(def));
  if (!P->defs)
    return base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < P->nst; i++) {
    stmt *s = &P->st[i];
    if (s->kind == S_GRAPH || s->kind == S_OUTPUT)
      continue;
    for (int k = 0; k < s->nres; k++) {
      span *nm = &s->res[k].name;
      def *d = lookup(P, nm->s, nm->len);
      if (d->s) {
        base_diag_set(P->d, BASE_ERR_DUPLICATE, 0, 0,
                      "duplicate name '%.*s' (first defined at line %d)",
                      PREC(nm->len), nm->s, P->st[d->stmt].line);
        return stmt_err(P, s, nm->col);
      }
      *d = (def){nm->s, nm->len, i, k};
    }
  }
  return BASE_OK;
}

/* The definition of a used name, or an "undefined" error at its position. */
static def *use(parser *P, const stmt *s, const span *nm) {
  def *d = lookup(P, nm->s, nm->len);
  if (d->s)
    return d;
  base_diag_set(P->d, BASE_ERR_UNDEFINED, 0, 0, "undefined name '%.*s'",
                PREC(nm->len), nm->s);
  stmt_err(P, s, nm->col);
  return NULL;
}

/* ---- topological order
 * --------------------------------------------------------- */

/* Names the tensors on the cycle: the one the back edge reads, then the
 * argument each statement on the stack followed (next[s] - 1), back to it. */
static base_status cycle_err(parser *P, const int *stack, const int *next,
                             int top, int from, const span *arg) {
  char path[400];
  int start = top;
  while (start > 0 && stack[start] != from)
    start--;
  size_t k =
      (size_t)snprintf(path, sizeof path, "%.*s", PREC(arg->len), arg->s);
  for (int i = start; i < top && k < sizeof path; i++) {
    const span *nm = &P->st[stack[i]].args[next[stack[i]] - 1];
    k += (size_t)snprintf(path + k, sizeof path - k, " -> %.*s", PREC(nm->len),
                          nm->s);
  }
  if (k < sizeof path)
    snprintf(path + k, sizeof path - k, " -> %.*s", PREC(arg->len), arg->s);
  base_diag_set(P->d, BASE_ERR_CYCLE, 0, 0, "dependency cycle: %s", path);
  return stmt_err(P, &P->st[stack[top]], arg->col);
}

/* Depth-first, iterative, visiting statements in file order and inputs in
 * argument order: a file already in topological order keeps its order. */
static base_status topo_order(parser *P, int *order, int *norder) {
  int n = P->nst;
  char *state = base_calloc((size_t)n, 1); /* 0 new, 1 on stack, 2 done */
  int *stack = base_malloc(sizeof(int) * (size_t)(n + 1));
  int *next = base_calloc((size_t)n, sizeof(int)); /* next argument to visit */
  base_status st = BASE_OK;
  if (!state || !stack || !next) {
    st = base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  *norder = 0;
  for (int root = 0; root < n && !st; root++) {
    if (P->st[root].kind != S_OP || state[root])
      continue;
    int top = 0;
    stack[0] = root;
    state[root] = 1;
    while (top >= 0 && !st) {
      stmt *s = &P->st[stack[top]];
      if (next[stack[top]] == s->nargs) {
        state[stack[top]] = 2;
        order[(*norder)++] = stack[top--];
        continue;
      }
      const span *arg = &s->args[next[stack[top]]++];
      def *d = use(P, s, arg);
      if (!d)
        st = P->d->code;
      else if (P->st[d->stmt].kind == S_OP && state[d->stmt] == 1)
        st = cycle_err(P, stack, next, top, d->stmt, arg);
      else if (P->st[d->stmt].kind == S_OP && state[d->stmt] == 0) {
        state[d->stmt] = 1;
        stack[++top] = d->stmt;
      }
    }
  }
out:
  free(state);
  free(stack);
  free(next);
  return st;
}

/* ---- building
 * ------------------------------------------------------------------ */

static char *cstr(parser *P, const span *s) {
  char *p = base_arena_strndup(P->arena, s->s, (size_t)s->len);
  if (!p)
    base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return p;
}

static base_status build_decl(parser *P, ir_graph *g, stmt *s) {
  result *r = &s->res[0];
  char *nm = cstr(P, &r->name);
  if (!nm)
    return BASE_ERR_NOMEM;
  int t = ir_add_tensor(g, nm, s->kind == S_INPUT ? IR_T_INPUT : IR_T_WEIGHT,
                        &r->shape, P->d);
  if (t < 0)
    return stmt_err(P, s, r->name.col);
  g->tensors[t].dtype = r->dtype;
  g->tensors[t].has_value = r->has_value;
  g->tensors[t].value = r->value;
  g->tensors[t].line = s->line;
  g->tensors[t].col = r->name.col;
  s->tensor = scratch(P, sizeof(int32_t));
  if (!s->tensor)
    return BASE_ERR_NOMEM;
  s->tensor[0] = t;
  return BASE_OK;
}

static base_status check_annotations(parser *P, ir_graph *g, stmt *s) {
  char b0[96], b1[96];
  for (int k = 0; k < s->nres; k++) {
    const result *r = &s->res[k];
    const ir_tensor *t = &g->tensors[s->tensor[k]];
    if (r->has_shape && r->dtype != t->dtype) {
      base_diag_set(
          P->d, BASE_ERR_SHAPE, 0, 0,
          "type mismatch: '%.*s' is annotated %s but %s gives %s",
          PREC(r->name.len), r->name.s, ir_dtype_name((ir_dtype)r->dtype),
          ir_op((ir_opcode)s->op)->name, ir_dtype_name((ir_dtype)t->dtype));
      return stmt_err(P, s, r->shape_col);
    }
    if (!r->has_shape || ir_shape_eq(&r->shape, &t->shape))
      continue;
    base_diag_set(
        P->d, BASE_ERR_SHAPE, 0, 0,
        "shape mismatch: '%.*s' is annotated %s but %s gives %s",
        PREC(r->name.len), r->name.s, ir_shape_str(&r->shape, b0, sizeof b0),
        ir_op((ir_opcode)s->op)->name, ir_shape_str(&t->shape, b1, sizeof b1));
    return stmt_err(P, s, r->shape_col);
  }
  return BASE_OK;
}

static base_status build_op(parser *P, ir_graph *g, stmt *s) {
  int32_t in[256];
  const char *outs[IR_MAX_LIST];
  for (int k = 0; k < s->nargs; k++) {
    def *d = use(P, s, &s->args[k]);
    in[k] = P->st[d->stmt].tensor[d->slot];
  }
  for (int k = 0; k < s->nres; k++)
    if (!(outs[k] = cstr(P, &s->res[k].name)))
      return BASE_ERR_NOMEM;
  s->tensor = scratch(P, sizeof(int32_t) * (size_t)s->nres);
  if (!s->tensor)
    return BASE_ERR_NOMEM;
  int node =
      ir_add_node(g, (ir_opcode)s->op, in, s->nargs, &s->attrs, outs, P->d);
  if (node < 0)
    return stmt_err(P, s, s->op_col);
  g->nodes[node].line = s->line;
  g->nodes[node].col = s->op_col;
  for (int k = 0; k < s->nres; k++) {
    s->tensor[k] = g->nodes[node].out[k];
    g->tensors[s->tensor[k]].line = s->line;
    g->tensors[s->tensor[k]].col = s->res[k].name.col;
  }
  return check_annotations(P, g, s);
}

static base_status build_outputs(parser *P, ir_graph *g) {
  const stmt *last = NULL;
  for (int i = 0; i < P->nst; i++) {
    stmt *s = &P->st[i];
    if (s->kind != S_OUTPUT)
      continue;
    last = s;
    for (int k = 0; k < s->nargs; k++) {
      def *d = use(P, s, &s->args[k]);
      if (!d)
        return P->d->code;
      if (ir_add_output(g, P->st[d->stmt].tensor[d->slot], P->d))
        return P->d->code;
    }
  }
  if (!last) {
    base_diag_set(P->d, BASE_ERR_NO_OUTPUT, 0, 0,
                  "graph declares no output (add a line 'output NAME')");
    return at(P, P->nlines > 0 ? P->nlines : 1, "", 0, 1);
  }
  return BASE_OK;
}

static base_status build(parser *P, ir_graph *g, const int *order, int norder) {
  base_status st = BASE_OK;
  for (int i = 0; i < P->nst && !st; i++) {
    stmt *s = &P->st[i];
    if (s->kind == S_GRAPH) {
      g->name = cstr(P, &s->args[0]);
      st = g->name ? BASE_OK : BASE_ERR_NOMEM;
    } else if (s->kind == S_INPUT || s->kind == S_WEIGHT) {
      st = build_decl(P, g, s);
    }
  }
  for (int i = 0; i < norder && !st; i++)
    st = build_op(P, g, &P->st[order[i]]);
  if (!st)
    st = build_outputs(P, g);
  if (!st && g->name != NULL) {
    /* the graph name lives in the scratch arena: copy it into g's */
    const char *nm = g->name;
    g->name = base_arena_strndup(g->arena, nm, strlen(nm));
    if (!g->name)
      st = base_diag_set(P->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  return st;
}

ir_graph *ir_parse(const char *text, size_t len, const char *file,
                   base_diag *d) {
  base_diag local;
  parser P;
  memset(&P, 0, sizeof P);
  P.d = d ? d : &local;
  memset(P.d, 0, sizeof *P.d);
  P.file = file ? file : "<string>";
  P.text = text;
  P.end = text + len;
  P.arena = base_arena_new();
  ir_graph *g = ir_graph_new("");
  int *order = NULL, norder = 0;
  base_status st =
      P.arena && g ? BASE_OK
                   : base_diag_set(P.d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = read_lines(&P);
  if (!st)
    st = define_all(&P);
  if (!st && !(order = base_malloc(sizeof(int) * (size_t)(P.nst + 1))))
    st = base_diag_set(P.d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = topo_order(&P, order, &norder);
  if (!st)
    st = build(&P, g, order, norder);
  if (st) {
    snprintf(P.d->file, sizeof P.d->file, "%s", P.file);
    ir_graph_free(g);
    g = NULL;
  }
  free(order);
  free(P.st);
  free(P.defs);
  base_arena_free(P.arena);
  return g;
}

ir_graph *ir_parse_file(const char *path, base_diag *d) {
  size_t len;
  char *text = base_read_file(path, &len, d);
  if (!text)
    return NULL;
  ir_graph *g = ir_parse(text, len, path, d);
  free(text);
  return g;
}
