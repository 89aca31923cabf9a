/* term.c: the axiom term language: S-expressions over the encoding's
 * function symbols, Int arithmetic and named constants, parsed into a
 * verify_form whose free variables get their sort (Tensor or Int) from where
 * they occur.
 *
 *   formula := (= TERM TERM) | (=> GUARD (= TERM TERM))
 *   term    := INT | NAME | CONST | '(' SYMBOL term... ')'
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "verify_int.h"

static const verify_fninfo fns[VERIFY_NFN] = {
    [VERIFY_F_CONV2D] = {"conv2d", 5, 2, VERIFY_S_TENSOR},
    [VERIFY_F_MATMUL] = {"matmul", 1, 2, VERIFY_S_TENSOR},
    [VERIFY_F_EWADD] = {"ewadd", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_EWMUL] = {"ewmul", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_SMUL] = {"smul", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_ACT] = {"act", 1, 1, VERIFY_S_TENSOR},
    [VERIFY_F_CONCAT] = {"concat", 2, 2, VERIFY_S_TENSOR},
    [VERIFY_F_SPLIT0] = {"split0", 2, 1, VERIFY_S_TENSOR},
    [VERIFY_F_SPLIT1] = {"split1", 2, 1, VERIFY_S_TENSOR},
    [VERIFY_F_TRANSPOSE] = {"transpose", 1, 1, VERIFY_S_TENSOR},
    [VERIFY_F_AVGPOOL] = {"avgpool", 6, 1, VERIFY_S_TENSOR},
    [VERIFY_F_MAXPOOL] = {"maxpool", 5, 1, VERIFY_S_TENSOR},
    [VERIFY_F_ENLARGE] = {"enlarge", 2, 1, VERIFY_S_TENSOR},
    [VERIFY_F_ICONV] = {"iconv", 4, 0, VERIFY_S_TENSOR},
    [VERIFY_F_IMM] = {"imm", 1, 0, VERIFY_S_TENSOR},
    [VERIFY_F_ONES] = {"ones", 1, 0, VERIFY_S_TENSOR},
    [VERIFY_F_CPOOL] = {"cpool", 3, 0, VERIFY_S_TENSOR},
    [VERIFY_F_SH] = {"sh", 0, 1, VERIFY_S_INT},
    [VERIFY_F_CONV2DB] = {"conv2db", 5, 3, VERIFY_S_TENSOR},
    [VERIFY_F_MATMULB] = {"matmulb", 2, 3, VERIFY_S_TENSOR},
    [VERIFY_F_BN] = {"bn", 1, 5, VERIFY_S_TENSOR},
    [VERIFY_F_RESHAPE] = {"reshape", 1, 1, VERIFY_S_TENSOR},
    [VERIFY_F_EWSUB] = {"ewsub", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_MATMULR] = {"matmulr", 2, 2, VERIFY_S_TENSOR},
    [VERIFY_F_BCADD] = {"bcadd", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_EWDIV] = {"ewdiv", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_CVAL] = {"cval", 2, 0, VERIFY_S_TENSOR},
    [VERIFY_F_WHERE] = {"where", 0, 3, VERIFY_S_TENSOR},
    [VERIFY_F_EQUAL] = {"equal", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_LNOT] = {"lnot", 0, 1, VERIFY_S_TENSOR},
    [VERIFY_F_SLICE] = {"slice", 3, 1, VERIFY_S_TENSOR},
    [VERIFY_F_RANKC] = {"rankc", 1, 0, VERIFY_S_INT},
    [VERIFY_F_DIMC] = {"dimc", 2, 0, VERIFY_S_INT},
    [VERIFY_F_BADD] = {"badd", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_BMUL] = {"bmul", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_BSUB] = {"bsub", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_BDIV] = {"bdiv", 0, 2, VERIFY_S_TENSOR},
    [VERIFY_F_BMATMUL] = {"bmatmul", 1, 2, VERIFY_S_TENSOR},
    [VERIFY_F_EQ] = {"=", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_IMPLIES] = {"=>", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_AND] = {"and", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_OR] = {"or", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_NOT] = {"not", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_ADD] = {"+", 0, 0, VERIFY_S_INT},
    [VERIFY_F_SUB] = {"-", 0, 0, VERIFY_S_INT},
    [VERIFY_F_MUL] = {"*", 0, 0, VERIFY_S_INT},
    [VERIFY_F_MOD] = {"mod", 0, 0, VERIFY_S_INT},
    [VERIFY_F_LT] = {"<", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_LE] = {"<=", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_GT] = {">", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_GE] = {">=", 0, 0, VERIFY_S_BOOL},
    [VERIFY_F_PERM] = {"perm", 0, 0, VERIFY_S_INT},
    [VERIFY_F_DIM] = {"dim", 0, 0, VERIFY_S_INT},
    [VERIFY_F_RANK] = {"rank", 0, 0, VERIFY_S_INT},
};

const verify_fninfo *verify_fn_info(verify_fn f) {
  return (unsigned)f < VERIFY_NFN ? &fns[f] : NULL;
}

/* Named Int constants of the term language. */
static const struct {
  const char *name;
  int64_t v;
} consts[] = {
    {"SAME", IR_PAD_SAME},
    {"VALID", IR_PAD_VALID},
    {"NONE", IR_ACT_NONE},
#define EW(ID, ...) {#ID, VERIFY_ACT_##ID},
#include "../ir/ew.def"
#undef EW
    {"T10", 10},
};

int64_t verify_perm_code(const int64_t *perm, int n) {
  int64_t c = 0, w = 1;
  for (int i = 0; i < n; i++, w *= 8)
    c += perm[i] * w;
  return n + 8 * c;
}

int64_t verify_pad_code(const ir_attrs *a) {
  if (a->padmode != IR_PAD_EXPLICIT)
    return a->padmode;
  int64_t c = 0;
  for (int i = 3; i >= 0; i--) {
    if (a->pad[i] < 0 || a->pad[i] > 255)
      return -1;
    c = 256 * c + a->pad[i];
  }
  return 2 + c;
}

int verify_pad_decode(int64_t c, ir_attrs *a) {
  memset(a->pad, 0, sizeof a->pad);
  if (c == IR_PAD_SAME || c == IR_PAD_VALID) {
    a->padmode = (int32_t)c;
    return 1;
  }
  if (c < 2 || c - 2 >= (int64_t)1 << 32)
    return 0;
  a->padmode = IR_PAD_EXPLICIT;
  c -= 2;
  for (int i = 0; i < 4; i++, c /= 256)
    a->pad[i] = (int32_t)(c % 256);
  return 1;
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct tparser {
  const char *s, *p;
  const verify_axiom *ax;
  verify_form *f;
  base_diag *d;
  int err;
} tparser;

static int col_of(const tparser *t) { return (int)(t->p - t->s) + 1; }

static verify_term *fail(tparser *t, int col, const char *msg,
                         const char *what) {
  if (!t->err)
    base_diag_set(t->d, BASE_ERR_SYNTAX, 0, col, "axiom %s: %s%s%s",
                  t->ax->name ? t->ax->name : "?", msg, what ? " " : "",
                  what ? what : "");
  t->err = 1;
  return NULL;
}

static base_status syntax(tparser *t, int col, const char *msg,
                          const char *what) {
  fail(t, col, msg, what);
  return BASE_ERR_SYNTAX;
}

static void skip_blanks(tparser *t) {
  while (isspace((unsigned char)*t->p))
    t->p++;
}

static int atom_char(char c) {
  return c && !isspace((unsigned char)c) && c != '(' && c != ')';
}

static verify_term *new_term(tparser *t, verify_tkind k, int col) {
  if (t->f->nterms == VERIFY_MAX_TERMS)
    return fail(t, col, "formula too large", NULL);
  verify_term *n = &t->f->terms[t->f->nterms++];
  memset(n, 0, sizeof *n);
  n->kind = k;
  n->col = col;
  return n;
}

static int var_index(tparser *t, const char *name, int col) {
  for (int i = 0; i < t->f->nvars; i++)
    if (!strcmp(t->f->vars[i].name, name))
      return i;
  if (t->f->nvars == VERIFY_MAX_VARS ||
      strlen(name) >= sizeof t->f->vars[0].name) {
    fail(t, col, "too many or too long variables at", name);
    return -1;
  }
  verify_var *v = &t->f->vars[t->f->nvars];
  snprintf(v->name, sizeof v->name, "%s", name);
  v->sort = VERIFY_S_UNK;
  return t->f->nvars++;
}

static verify_term *parse_atom(tparser *t) {
  int col = col_of(t);
  char a[32];
  size_t n = 0;
  while (atom_char(*t->p) && n + 1 < sizeof a)
    a[n++] = *t->p++;
  a[n] = 0;
  if (atom_char(*t->p))
    return fail(t, col, "atom too long", NULL);
  if (isdigit((unsigned char)a[0]) ||
      (a[0] == '-' && isdigit((unsigned char)a[1]))) {
    verify_term *r = new_term(t, VERIFY_T_NUM, col);
    if (r)
      r->num = strtoll(a, NULL, 10);
    return r;
  }
  for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++)
    if (!strcmp(a, consts[i].name)) {
      verify_term *r = new_term(t, VERIFY_T_NUM, col);
      if (r)
        r->num = consts[i].v;
      return r;
    }
  if (!isalpha((unsigned char)a[0]) && a[0] != '_')
    return fail(t, col, "unexpected", a);
  verify_term *r = new_term(t, VERIFY_T_VAR, col);
  if (r && (r->var = var_index(t, a, col)) < 0)
    return NULL;
  return r;
}

static verify_term *parse_term(tparser *t);

static verify_term *parse_app(tparser *t) {
  int col = col_of(t);
  t->p++; /* '(' */
  skip_blanks(t);
  char a[16];
  size_t n = 0;
  while (atom_char(*t->p) && n + 1 < sizeof a)
    a[n++] = *t->p++;
  a[n] = 0;
  int fn = -1;
  for (int i = 0; i < VERIFY_NFN; i++)
    if (!strcmp(a, fns[i].name))
      fn = i;
  if (fn < 0)
    return fail(t, col + 1, "unknown function", a);
  verify_term *r = new_term(t, VERIFY_T_APP, col);
  if (!r)
    return NULL;
  r->fn = (verify_fn)fn;
  for (;;) {
    skip_blanks(t);
    if (*t->p == ')')
      break;
    if (!*t->p)
      return fail(t, col_of(t), "missing ')'", NULL);
    if (r->nargs == VERIFY_MAX_ARGS)
      return fail(t, col_of(t), "too many arguments to", a);
    if (!(r->args[r->nargs++] = parse_term(t)))
      return NULL;
  }
  t->p++;
  return r;
}

static verify_term *parse_term(tparser *t) {
  skip_blanks(t);
  if (*t->p == '(')
    return parse_app(t);
  if (!atom_char(*t->p))
    return fail(t, col_of(t), "expected a term", NULL);
  return parse_atom(t);
}

/* ---- sorts -------------------------------------------------------------- */

static int check(tparser *t, verify_term *e, verify_sort want);

static verify_sort sort_of(tparser *t, const verify_term *e) {
  if (e->kind == VERIFY_T_NUM)
    return VERIFY_S_INT;
  if (e->kind == VERIFY_T_VAR)
    return t->f->vars[e->var].sort;
  return fns[e->fn].result;
}

static int check_arity(tparser *t, verify_term *e, int lo, int hi) {
  if (e->nargs < lo || (hi >= 0 && e->nargs > hi)) {
    fail(t, e->col, "wrong number of arguments to", fns[e->fn].name);
    return 0;
  }
  return 1;
}

static int check_eq(tparser *t, verify_term *e) {
  if (!check_arity(t, e, 2, 2))
    return 0;
  verify_sort s = sort_of(t, e->args[0]);
  if (s == VERIFY_S_UNK)
    s = sort_of(t, e->args[1]);
  if (s == VERIFY_S_UNK || s == VERIFY_S_BOOL) {
    fail(t, e->col, "cannot tell the sort of an equation's sides", NULL);
    return 0;
  }
  return check(t, e->args[0], s) && check(t, e->args[1], s);
}

static int check_args(tparser *t, verify_term *e, verify_sort s) {
  for (int i = 0; i < e->nargs; i++)
    if (!check(t, e->args[i], s))
      return 0;
  return 1;
}

static int check_app(tparser *t, verify_term *e) {
  const verify_fninfo *fi = &fns[e->fn];
  switch (e->fn) {
  case VERIFY_F_EQ: return check_eq(t, e);
  case VERIFY_F_IMPLIES:
    return check_arity(t, e, 2, 2) && check_args(t, e, VERIFY_S_BOOL);
  case VERIFY_F_AND:
  case VERIFY_F_OR:
    return check_arity(t, e, 1, -1) && check_args(t, e, VERIFY_S_BOOL);
  case VERIFY_F_NOT:
    return check_arity(t, e, 1, 1) && check_args(t, e, VERIFY_S_BOOL);
  case VERIFY_F_RANK:
    return check_arity(t, e, 1, 1) && check_args(t, e, VERIFY_S_INT);
  case VERIFY_F_ADD:
  case VERIFY_F_SUB:
  case VERIFY_F_MUL:
  case VERIFY_F_MOD:
  case VERIFY_F_PERM:
  case VERIFY_F_DIM:
  case VERIFY_F_LT:
  case VERIFY_F_LE:
  case VERIFY_F_GT:
  case VERIFY_F_GE:
    return check_arity(t, e, 2, 2) && check_args(t, e, VERIFY_S_INT);
  default: break;
  }
  if (!check_arity(t, e, fi->nint + fi->nten, fi->nint + fi->nten))
    return 0;
  for (int i = 0; i < e->nargs; i++)
    if (!check(t, e->args[i], i < fi->nint ? VERIFY_S_INT : VERIFY_S_TENSOR))
      return 0;
  return 1;
}

/* Checks that e has sort want, fixing the sort of variables. */
static int check(tparser *t, verify_term *e, verify_sort want) {
  if (e->kind == VERIFY_T_VAR) {
    verify_var *v = &t->f->vars[e->var];
    if (v->sort == VERIFY_S_UNK && want != VERIFY_S_BOOL)
      v->sort = want;
    if (v->sort == want)
      return 1;
    fail(t, e->col, "variable used with two sorts:", v->name);
    return 0;
  }
  if (sort_of(t, e) != want) {
    fail(t, e->col, "term of the wrong sort", NULL);
    return 0;
  }
  return e->kind == VERIFY_T_NUM || check_app(t, e);
}

static int is_eq(const verify_term *e) {
  return e->kind == VERIFY_T_APP && e->fn == VERIFY_F_EQ && e->nargs == 2;
}

/* Splits the root into guard, lhs and rhs. */
static base_status destructure(tparser *t, verify_term *root) {
  verify_form *f = t->f;
  verify_term *eq = root;
  f->guard = NULL;
  if (root->kind == VERIFY_T_APP && root->fn == VERIFY_F_IMPLIES &&
      root->nargs == 2) {
    f->guard = root->args[0];
    eq = root->args[1];
  }
  if (!is_eq(eq) || eq->args[0]->kind != VERIFY_T_APP)
    return syntax(t, eq->col,
                  "expected (= LHS RHS) with an operator term as LHS", NULL);
  f->lhs = eq->args[0];
  f->rhs = eq->args[1];
  /* the equation first: it fixes the sorts the guard's variables need */
  if (!check(t, eq, VERIFY_S_BOOL) || sort_of(t, f->lhs) != VERIFY_S_TENSOR ||
      (f->guard && !check(t, f->guard, VERIFY_S_BOOL)))
    return syntax(t, eq->col, "the equation must be between tensors", NULL);
  for (int i = 0; i < f->nvars; i++)
    if (f->vars[i].sort == VERIFY_S_UNK)
      return syntax(t, 1, "variable of unknown sort:", f->vars[i].name);
  return BASE_OK;
}

base_status verify_form_parse(const verify_axiom *ax, verify_form *f,
                              base_diag *d) {
  tparser t = {ax->text, ax->text, ax, f, d, 0};
  f->nterms = f->nvars = 0;
  if (!ax->text || !ax->name)
    return base_diag_set(d, BASE_ERR_SYNTAX, 0, 0,
                         "axiom without name or text");
  verify_term *root = parse_term(&t);
  if (!root)
    return BASE_ERR_SYNTAX;
  skip_blanks(&t);
  if (*t.p)
    return syntax(&t, col_of(&t), "text after the formula", NULL);
  return destructure(&t, root);
}
