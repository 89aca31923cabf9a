/* ops.c: the operator and parameter tables, expanded from ops.def and
 * params.def, and the parsing/printing of parameter values.
 *
 * The textual columns of ops.def (input names with hints, parameters with
 * defaults in .graph syntax) are decoded once, on first use, into
 * ir_opinfo rows; a malformed row is a bug and aborts loudly at start-up.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_int.h"

typedef struct param_row {
  const char *name;
  ir_param_kind kind;
  size_t offset;
} param_row;

static const param_row param_rows[IR_NPARAMS] = {
#define PARAM(ID, name, kind, field)                                           \
  [IR_P_##ID] = {#name, kind, offsetof(ir_attrs, field)},
#include "params.def"
#undef PARAM
};

typedef struct op_text {
  const char *name, *inputs, *params;
  ir_opkind kind;
  ir_act act;
  double flops;
  unsigned flags;
} op_text;

static const op_text op_texts[IR_NOPS] = {
#define OP(ID, name, inputs, params, kind, act, flops, flags)                  \
  [IR_OP_##ID] = {#name,        inputs, params, IR_OPK_##kind,                 \
                  IR_ACT_##act, flops,  flags},
#include "ops.def"
#undef OP
};

static ir_opinfo op_rows[IR_NOPS];
static pthread_once_t op_once = PTHREAD_ONCE_INIT;

static const char *const act_names[] = {"none", "relu", "sigmoid",
                                        "tanh", "gelu", "clip"};
#define NACTS ((int)(sizeof act_names / sizeof *act_names))

const char *ir_act_name(ir_act a) {
  return (unsigned)a < NACTS ? act_names[a] : "?";
}

const char *ir_param_name(ir_param_id p) { return param_rows[p].name; }
ir_param_kind ir_param_kind_of(ir_param_id p) { return param_rows[p].kind; }

/* Whether the NUL-terminated word equals the text (s, len). */
static int word_eq(const char *word, const char *s, size_t len) {
  return strlen(word) == len && memcmp(word, s, len) == 0;
}

int ir_param_lookup(const char *name, size_t len) {
  for (int p = 0; p < IR_NPARAMS; p++)
    if (word_eq(param_rows[p].name, name, len))
      return p;
  return -1;
}

/* ---- value parsing ------------------------------------------------------ */

typedef struct cursor {
  const char *s, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->s < c->end && (*c->s == ' ' || *c->s == '\t'))
    c->s++;
}

static int parse_int(cursor *c, int64_t *v) {
  skip_ws(c);
  const char *p = c->s;
  char buf[32];
  size_t n = 0;
  if (p < c->end && *p == '-')
    buf[n++] = *p++;
  if (p >= c->end || !isdigit((unsigned char)*p))
    return -1;
  while (p < c->end && isdigit((unsigned char)*p) && n < sizeof buf - 1)
    buf[n++] = *p++;
  buf[n] = '\0';
  errno = 0;
  long long x = strtoll(buf, NULL, 10);
  if (errno || x > INT32_MAX || x < -INT32_MAX)
    return -1;
  *v = x;
  c->s = p;
  return 0;
}

/* "[a,b,...]" with at most max entries; returns count or -1. */
static int parse_list(cursor *c, int64_t *v, int max) {
  skip_ws(c);
  if (c->s >= c->end || *c->s != '[')
    return -1;
  c->s++;
  skip_ws(c);
  int n = 0;
  if (c->s < c->end && *c->s == ']') {
    c->s++;
    return 0;
  }
  for (;;) {
    if (n == max || parse_int(c, &v[n]) != 0)
      return -1;
    n++;
    skip_ws(c);
    if (c->s < c->end && *c->s == ',') {
      c->s++;
      continue;
    }
    if (c->s < c->end && *c->s == ']') {
      c->s++;
      return n;
    }
    return -1;
  }
}

static int at_end(cursor *c) {
  skip_ws(c);
  return c->s == c->end;
}

static int word_is(cursor *c, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(c->end - c->s) >= n && memcmp(c->s, w, n) == 0) {
    c->s += n;
    return 1;
  }
  return 0;
}

static int parse_float(cursor *c, float *v) {
  char buf[64];
  size_t n = (size_t)(c->end - c->s);
  if (n == 0 || n >= sizeof buf)
    return -1;
  memcpy(buf, c->s, n);
  buf[n] = '\0';
  char *endp;
  errno = 0;
  float x = strtof(buf, &endp);
  /* ERANGE on a subnormal or on a value that rounds to FLT_MAX is fine;
   * only finite text that overflows to infinity is not */
  if (endp == buf || isnan(x) ||
      (errno == ERANGE && isinf(x) && !memchr(buf, 'n', (size_t)(endp - buf))))
    return -1;
  *v = x;
  c->s += endp - buf;
  return 0;
}

static int parse_pair(cursor *c, int32_t *dst) {
  int64_t v[2];
  if (parse_list(c, v, 2) != 2 || v[0] < 1 || v[1] < 1)
    return -1;
  dst[0] = (int32_t)v[0];
  dst[1] = (int32_t)v[1];
  return 0;
}

static int parse_pad(cursor *c, ir_attrs *a) {
  int64_t v[4];
  memset(a->pad, 0, sizeof a->pad);
  if (word_is(c, "same")) {
    a->padmode = IR_PAD_SAME;
    return 0;
  }
  if (word_is(c, "valid")) {
    a->padmode = IR_PAD_VALID;
    return 0;
  }
  if (parse_list(c, v, 4) != 4)
    return -1;
  for (int i = 0; i < 4; i++) {
    if (v[i] < 0)
      return -1;
    a->pad[i] = (int32_t)v[i];
  }
  a->padmode = IR_PAD_EXPLICIT;
  return 0;
}

static int parse_act(cursor *c, int32_t *dst) {
  for (int i = 0; i < NACTS; i++)
    if ((size_t)(c->end - c->s) == strlen(act_names[i]) &&
        word_is(c, act_names[i])) {
      *dst = i;
      return 0;
    }
  return -1;
}

static const char *kind_expect(ir_param_kind k) {
  switch (k) {
  case IR_PK_INT: return "an integer";
  case IR_PK_FLOAT: return "a number";
  case IR_PK_BOOL: return "0 or 1";
  case IR_PK_PAIR: return "a pair [h,w] of positive integers";
  case IR_PK_PAD: return "same, valid or [top,left,bottom,right] (>= 0)";
  case IR_PK_ACT: return "none, relu, sigmoid, tanh or gelu";
  case IR_PK_DTYPE: return "f32, i64 or bool";
  default: return "a list [i,j,...] of at most 16 integers";
  }
}

int ir_param_parse(ir_param_id p, const char *s, size_t len, ir_attrs *a,
                   char *err, size_t errn) {
  cursor c = {s, s + len};
  const param_row *r = &param_rows[p];
  void *field = (char *)a + r->offset;
  int64_t v, list[IR_MAX_LIST];
  int bad = 0, n;
  switch (r->kind) {
  case IR_PK_INT:
    bad = parse_int(&c, &v) != 0;
    if (!bad)
      *(int32_t *)field = (int32_t)v;
    break;
  case IR_PK_BOOL:
    bad = parse_int(&c, &v) != 0 || (v != 0 && v != 1);
    if (!bad)
      *(int32_t *)field = (int32_t)v;
    break;
  case IR_PK_FLOAT: bad = parse_float(&c, (float *)field) != 0; break;
  case IR_PK_PAIR: bad = parse_pair(&c, (int32_t *)field) != 0; break;
  case IR_PK_PAD: bad = parse_pad(&c, a) != 0; break;
  case IR_PK_ACT: bad = parse_act(&c, (int32_t *)field) != 0; break;
  case IR_PK_DTYPE:
    n = ir_dtype_lookup(c.s, (size_t)(c.end - c.s));
    bad = n < 0;
    if (!bad) {
      *(int32_t *)field = n;
      c.s = c.end;
    }
    break;
  case IR_PK_LIST:
  case IR_PK_LIST2:
    n = parse_list(&c, list, IR_MAX_LIST);
    bad = n < 0;
    if (!bad) {
      int32_t *cnt = r->kind == IR_PK_LIST ? &a->nlist : &a->nlist2;
      *cnt = n;
      memcpy(field, list, sizeof(int64_t) * (size_t)n);
    }
    break;
  }
  if (bad || !at_end(&c)) {
    snprintf(err, errn, "bad value '%.*s' for parameter '%s': expected %s",
             (int)(len > 64 ? 64 : len), s, r->name, kind_expect(r->kind));
    return -1;
  }
  return 0;
}

static size_t fmt_list(char *buf, size_t n, const int64_t *v, int cnt) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < cnt && k < n; i++)
    k +=
        (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)v[i]);
  if (k < n)
    k += (size_t)snprintf(buf + k, n - k, "]");
  return k;
}

void ir_param_format(ir_param_id p, const ir_attrs *a, char *buf, size_t n) {
  const param_row *r = &param_rows[p];
  const void *field = (const char *)a + r->offset;
  const int32_t *i32 = field;
  int64_t v[4];
  switch (r->kind) {
  case IR_PK_INT:
  case IR_PK_BOOL: snprintf(buf, n, "%d", (int)*i32); break;
  case IR_PK_FLOAT:
    snprintf(buf, n, "%.9g", (double)*(const float *)field);
    break;
  case IR_PK_PAIR:
    v[0] = i32[0];
    v[1] = i32[1];
    fmt_list(buf, n, v, 2);
    break;
  case IR_PK_PAD:
    if (a->padmode == IR_PAD_SAME)
      snprintf(buf, n, "same");
    else if (a->padmode == IR_PAD_VALID)
      snprintf(buf, n, "valid");
    else {
      for (int i = 0; i < 4; i++)
        v[i] = a->pad[i];
      fmt_list(buf, n, v, 4);
    }
    break;
  case IR_PK_ACT: snprintf(buf, n, "%s", ir_act_name((ir_act)*i32)); break;
  case IR_PK_DTYPE:
    snprintf(buf, n, "%s", ir_dtype_name((ir_dtype)*i32));
    break;
  case IR_PK_LIST: fmt_list(buf, n, a->list, a->nlist); break;
  case IR_PK_LIST2: fmt_list(buf, n, a->list2, a->nlist2); break;
  }
}

/* ---- clearing one parameter ------------------------------------------- */

/* The bytes of ir_attrs parameter p occupies: one or two spans (a padding's
 * mode, a list's length). */
typedef struct span {
  size_t off, len;
} span;

static int param_spans(ir_param_id p, span s[2]) {
  const param_row *r = &param_rows[p];
  s[0] = (span){r->offset, sizeof(int32_t)};
  switch (r->kind) {
  case IR_PK_INT:
  case IR_PK_BOOL:
  case IR_PK_FLOAT:
  case IR_PK_ACT:
  case IR_PK_DTYPE: return 1;
  case IR_PK_PAIR: s[0].len = 2 * sizeof(int32_t); return 1;
  case IR_PK_PAD:
    s[0].len = sizeof((ir_attrs *)0)->pad;
    s[1] = (span){offsetof(ir_attrs, padmode), sizeof(int32_t)};
    return 2;
  case IR_PK_LIST:
    s[0].len = sizeof((ir_attrs *)0)->list;
    s[1] = (span){offsetof(ir_attrs, nlist), sizeof(int32_t)};
    return 2;
  case IR_PK_LIST2:
    s[0].len = sizeof((ir_attrs *)0)->list2;
    s[1] = (span){offsetof(ir_attrs, nlist2), sizeof(int32_t)};
    return 2;
  }
  return 1;
}

void ir_param_clear(ir_param_id p, ir_attrs *a) {
  span s[2];
  int n = param_spans(p, s);
  for (int i = 0; i < n; i++)
    memset((char *)a + s[i].off, 0, s[i].len);
}

/* ---- decoding ops.def rows ---------------------------------------------- */

/* The IR_PT_* of a mark character; 0 for any other character. */
static unsigned mark_trait(char c) {
  return c == '~'   ? IR_PT_DERIVED
         : c == '#' ? IR_PT_DIMS
         : c == '^' ? IR_PT_BATCH
         : c == '!' ? IR_PT_INST
                    : 0;
}

static void die_row(const char *op, const char *what) {
  fprintf(stderr, "superopt: internal error: ops.def row '%s': %s\n", op, what);
  abort();
}

static ir_init_hint hint_of(const char *s, size_t n, const char *op) {
  if (n == 3 && !memcmp(s, "fan", 3))
    return IR_INIT_FAN;
  if (n == 3 && !memcmp(s, "pos", 3))
    return IR_INIT_POS;
  if (n == 5 && !memcmp(s, "small", 5))
    return IR_INIT_SMALL;
  die_row(op, "unknown init hint");
  return IR_INIT_UNIFORM;
}

static void decode_inputs(ir_opinfo *r, const char *spec) {
  const char *s = spec;
  int optional = 0;
  while (*s) {
    while (*s == ' ')
      s++;
    if (!*s)
      break;
    const char *w = s;
    while (ir_name_char((unsigned char)*s))
      s++;
    size_t wn = (size_t)(s - w);
    if (r->nnamed == IR_MAX_FIXED_IN || wn == 0)
      die_row(r->name, "bad input list");
    int k = r->nnamed++;
    if (wn >= sizeof r->in_name[k])
      die_row(r->name, "input name too long");
    memcpy(r->in_name[k], w, wn);
    if (*s == '*') {
      r->max_in = -1;
      s++;
    } else if (*s == '?') {
      optional = 1;
      s++;
    } else if (optional) {
      die_row(r->name, "required input after an optional one");
    }
    for (; mark_trait(*s); s++) {
      if (mark_trait(*s) != IR_PT_INST || r->inst_in >= 0)
        die_row(r->name, "an input's only mark is '!', on one input");
      r->inst_in = k;
    }
    if (*s == ':') {
      const char *h = ++s;
      while (*s && *s != ' ')
        s++;
      r->in_hint[k] = hint_of(h, (size_t)(s - h), r->name);
    }
    if (!optional)
      r->min_in = k + 1;
    if (r->max_in >= 0)
      r->max_in = k + 1;
  }
}

static void decode_params(ir_opinfo *r, const char *spec) {
  const char *s = spec;
  char err[160];
  while (*s) {
    while (*s == ' ')
      s++;
    if (!*s)
      break;
    const char *w = s, *end, *m;
    while (*s && *s != ' ')
      s++;
    if (r->nparams == IR_MAX_PARAMS)
      die_row(r->name, "too many parameters");
    for (end = s; end > w && mark_trait(end[-1]); end--)
      ;
    for (m = end; m < s; m++) { /* the marks after name[=value] */
      if (r->ptraits[r->nparams] & mark_trait(*m))
        die_row(r->name, "a mark repeated");
      r->ptraits[r->nparams] |= mark_trait(*m);
    }
    const char *eq = memchr(w, '=', (size_t)(end - w));
    int p = ir_param_lookup(w, (size_t)((eq ? eq : end) - w));
    if (p < 0)
      die_row(r->name, "unknown parameter");
    int k = r->nparams++;
    r->params[k] = (ir_param_id)p;
    r->pkind[k] = param_rows[p].kind;
    r->poff[k] = (uint16_t)param_rows[p].offset;
    r->traits |= r->ptraits[k];
    if (!eq) {
      r->required |= 1u << k;
      continue;
    }
    if (ir_param_parse((ir_param_id)p, eq + 1, (size_t)(end - eq - 1),
                       &r->defaults, err, sizeof err))
      die_row(r->name, err);
  }
}

static void build_rows(void) {
  for (int op = 0; op < IR_NOPS; op++) {
    ir_opinfo *r = &op_rows[op];
    memset(r, 0, sizeof *r);
    r->name = op_texts[op].name;
    r->inst_in = -1;
    decode_inputs(r, op_texts[op].inputs);
    decode_params(r, op_texts[op].params);
    r->kind = op_texts[op].kind;
    r->act = op_texts[op].act;
    r->flops = op_texts[op].flops;
    r->flags = op_texts[op].flags;
  }
}

const ir_opinfo *ir_op(ir_opcode op) {
  pthread_once(&op_once, build_rows);
  return &op_rows[op];
}

int ir_op_lookup(const char *name, size_t len) {
  for (int op = 0; op < IR_NOPS; op++)
    if (word_eq(op_texts[op].name, name, len))
      return op;
  return -1;
}

int ir_op_param_index(ir_opcode op, ir_param_id p) {
  const ir_opinfo *r = ir_op(op);
  for (int i = 0; i < r->nparams; i++)
    if (r->params[i] == p)
      return i;
  return -1;
}

void ir_attrs_default(ir_opcode op, ir_attrs *a) { *a = ir_op(op)->defaults; }

int ir_act_op(ir_act a) {
  if (a == IR_ACT_CLIP) /* clip's row computes no activation of its own:
                           the activation fusion never takes it (bounds) */
    return IR_OP_CLIP;
  for (int op = 0; a != IR_ACT_NONE && op < IR_NOPS; op++)
    if (op_texts[op].act == a)
      return op;
  return -1;
}

/* Whether out is a contiguous block of in (same rank): the first
 * dimension that differs has only dimensions of size 1 before it and whole
 * ones after it. */
static int is_block(const ir_shape *in, const ir_shape *out) {
  int i = 0;
  if (in->rank != out->rank)
    return 0;
  while (i < in->rank && in->dim[i] == out->dim[i])
    i++;
  if (i == in->rank)
    return 1; /* the whole input */
  for (int j = 0; j < i; j++)
    if (out->dim[j] != 1)
      return 0;
  for (int j = i + 1; j < in->rank; j++)
    if (in->dim[j] != out->dim[j])
      return 0;
  return 1;
}

/* A permutation that keeps the order of the dimensions larger than 1
 * moves no data. */
static int keeps_order(const ir_shape *in, const ir_attrs *a) {
  int last = -1;
  for (int i = 0; i < a->nlist; i++) {
    int p = (int)a->list[i];
    if (in->dim[p] == 1)
      continue;
    if (p < last)
      return 0;
    last = p;
  }
  return 1;
}

int ir_node_is_view(const ir_graph *g, const ir_node *n) {
  unsigned f = op_texts[n->op].flags;
  const ir_shape *in = n->nin ? &g->tensors[n->in[0]].shape : NULL;
  if (f & IR_OPF_VIEW)
    return 1;
  if ((f & IR_OPF_VIEW_ORDER) && in)
    return keeps_order(in, &n->a);
  if (!(f & IR_OPF_VIEW_BLOCKS) || !in || n->a.act != IR_ACT_NONE)
    return 0; /* a split with act= computes */
  for (int k = 0; k < n->nout; k++)
    if (!is_block(in, &g->tensors[n->out[k]].shape))
      return 0;
  return 1;
}

int ir_is_output(const ir_graph *g, int t) {
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == t)
      return 1;
  return 0;
}

/* Whether tensor t is read only by fused nodes (no batch norm: its
 * parameters are read by channel), directly or, depth > 0, through
 * reshapes keeping its first lead dimensions, or through splits of its
 * last axis whose parts are read so (Llama's merged projection split in
 * three and its two wide parts in two each); none a graph output. */
static int fused_reads_only(const ir_graph *g, int t, int lead, int depth,
                            int (*ok)(const void *u, int j), const void *u) {
  if (ir_is_output(g, t))
    return 0;
  const ir_shape *s = &g->tensors[t].shape;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *n = &g->nodes[j];
    int reads = 0;
    for (int k = 0; k < n->nin; k++)
      reads |= n->in[k] == t;
    if (!reads)
      continue;
    if (ok && !ok(u, j))
      return 0;
    if (n->op == IR_OP_FUSED) {
      const ir_body *b = ir_body_get(n->a.body);
      if (!b)
        return 0;
      for (int o = 0; o < b->nops; o++)
        if (b->ops[o].op == IR_OP_BATCHNORM)
          return 0;
      continue;
    }
    if (n->op == IR_OP_SPLIT) { /* a split of the block along the same last
                                   axis: its parts are blocks of the rows */
      if (n->a.act != IR_ACT_NONE || s->rank != lead + 1 || n->a.axis != lead)
        return 0;
      for (int k = 0; k < n->nout; k++)
        if (!fused_reads_only(g, n->out[k], lead, 1, ok, u))
          return 0;
      continue;
    }
    const ir_shape *y = &g->tensors[n->out[0]].shape;
    if (n->op != IR_OP_RESHAPE || depth < 1 || y->rank < lead + 1)
      return 0;
    for (int k = 0; k < lead; k++)
      if (y->dim[k] != s->dim[k])
        return 0;
    if (!fused_reads_only(g, n->out[0], lead, depth - 1, ok, u))
      return 0;
  }
  return 1;
}

int ir_split_read_in_place(const ir_graph *g, int i,
                           int (*ok)(const void *u, int j), const void *u) {
  const ir_node *n = &g->nodes[i];
  if (n->op != IR_OP_SPLIT || n->a.act != IR_ACT_NONE)
    return 0;
  const ir_tensor *x = &g->tensors[n->in[0]];
  if (x->shape.rank < 2 || n->a.axis != x->shape.rank - 1 ||
      x->kind == IR_T_WEIGHT)
    return 0;
  for (int k = 0; k < n->nout; k++)
    if (!fused_reads_only(g, n->out[k], x->shape.rank - 1, 1, ok, u))
      return 0;
  return 1;
}

int ir_op_nout(ir_opcode op, const ir_attrs *a) {
  if (op == IR_OP_CONCAT_SHUFFLE)
    return a->nlist;
  if (op != IR_OP_SPLIT)
    return 1;
  int n = a->nlist; /* a part given with its activation: one more */
  for (int i = 0; i < a->nlist2 && i < IR_MAX_LIST; i++)
    n += a->list2[i] == 2;
  return n;
}
