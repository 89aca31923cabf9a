/* text_export.c: rule export as Tensat rewrite text and as JSON.
 *
 * Tensat: one rule a line, `LHS=>RHS`, each side an S-expression over
 * Tensat's (TASO's) operators with integer parameters first and inputs as
 * pattern variables: `(matmul ?input_1 (transpose ?input_4))`. Shared
 * subterms are written out in full. Only single-output rules whose
 * operators all exist in Tensat are written.
 *
 * JSON: a document carrying everything of every rule (docs/interop.md):
 * id, status, axioms, note, and both graphs with their inputs and weights
 * (kind, shape, values when known), nodes (operator, input names, output
 * names and shapes, every parameter) and outputs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruleio_int.h"

/* ---- Tensat -------------------------------------------------------------- */

/* Tensat's language is `Mdl` in its src/model.rs; its analysis (the `make`
 * of TensorAnalysis) computes shapes only for some of the operators the
 * language names, and stops (todo!()) on the others (smul, Iconv, Cpool,
 * Imatmul): rules using those parse but cannot be applied, so they are not
 * written. Arities, parameters first except for pools and transpose:
 *   (matmul act a b)  (conv2d sh sw pad act x w)  (ewadd a b)  (ewmul a b)
 *   (relu x)  (tanh x)  (sigmoid x)  (poolavg x kh kw sh sw pad act)
 *   (poolmax ...)  (concat axis ndim a b)  (concat3 axis ndim a b c) ..
 *   (concat5 ...)  (split axis x)  (split_0 s)  (split_1 s)
 *   (enlarge w ref)  (transpose x perm shuffle), perm as `1_0`. */

static const int tensat_acts[] = {0, 2, 1, 3}; /* ours -> TASO codes */

typedef struct tensat_ctx {
  const ir_rule *r;
  const ir_graph *g; /* the side being written */
  ruleio_buf *b;
  char *why;
  size_t wn;
} tensat_ctx;

static int tensat_expr(tensat_ctx *c, int t);

static int tensat_fail(tensat_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int tensat_fail(tensat_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, c->wn, fmt, ap);
  va_end(ap);
  return -1;
}

/* Writes " e1 e2 .. )" for operands from..to-1 of n. */
static int tensat_args(tensat_ctx *c, const ir_node *n, int from, int to) {
  for (int i = from; i < to; i++) {
    ruleio_puts(c->b, " ");
    if (tensat_expr(c, n->in[i]) < 0)
      return -1;
  }
  ruleio_puts(c->b, ")");
  return 0;
}

/* concat of operands 0..upto-1: Tensat has concat (2 operands) to concat5;
 * longer ones nest to the left. */
static int tensat_concat(tensat_ctx *c, const ir_node *n, int upto) {
  int ndim = c->g->tensors[n->out[0]].shape.rank;
  if (upto <= 5) {
    if (upto == 2)
      ruleio_printf(c->b, "(concat %d %d", n->a.axis, ndim);
    else
      ruleio_printf(c->b, "(concat%d %d %d", upto, n->a.axis, ndim);
    return tensat_args(c, n, 0, upto);
  }
  ruleio_printf(c->b, "(concat %d %d ", n->a.axis, ndim);
  if (tensat_concat(c, n, upto - 1) < 0)
    return -1;
  return tensat_args(c, n, upto - 1, upto);
}

/* enlarge's reference: the first of the rule's inputs that is a rank-4
 * kernel of the enlarged size (src declares every input of the rule). */
static const char *enlarge_ref(const tensat_ctx *c, const ir_node *n) {
  const ir_graph *s = c->r->src;
  for (int i = 0; i < s->ntensors; i++) {
    const ir_tensor *t = &s->tensors[i];
    if (t->kind != IR_T_VALUE && t->shape.rank == 4 &&
        t->shape.dim[2] == n->a.kernel[0] && t->shape.dim[3] == n->a.kernel[1])
      return t->name;
  }
  return NULL;
}

static int same_shape(const ir_graph *g, const ir_node *n) {
  return ir_shape_eq(&g->tensors[n->in[0]].shape, &g->tensors[n->in[1]].shape);
}

/* (poolavg|poolmax x kh kw sh sw pad 0); pad < 0 (explicit pads) or cip 0
 * (count_include_pad=0): none. */
static int tensat_pool(tensat_ctx *c, const ir_node *n, int pad, int cip,
                       const char *name) {
  const ir_attrs *a = &n->a;
  if (pad < 0 || !cip)
    return tensat_fail(c,
                       "%s with explicit pads or count_include_pad=0 has "
                       "no Tensat equivalent",
                       ir_op(n->op)->name);
  ruleio_printf(c->b, "(%s ", name);
  if (tensat_expr(c, n->in[0]) < 0)
    return -1;
  ruleio_printf(c->b, " %d %d %d %d %d 0)", a->kernel[0], a->kernel[1],
                a->stride[0], a->stride[1], pad);
  return 0;
}

/* An operator Tensat's language has (as name) but its shape analysis not. */
static int tensat_unshaped(tensat_ctx *c, const char *name) {
  return tensat_fail(c,
                     "%s: in Tensat's language but not in its shape "
                     "analysis (model.rs stops with todo!())",
                     name);
}

static int tensat_node(tensat_ctx *c, const ir_node *n, int slot) {
  const ir_graph *g = c->g;
  const ir_attrs *a = &n->a;
  const char *op = ir_op(n->op)->name;
  int pad = a->padmode == IR_PAD_SAME ? 0 : a->padmode == IR_PAD_VALID ? 1 : -1;
  int act = a->act <= IR_ACT_TANH ? tensat_acts[a->act] : -1;
  switch (n->op) {
  case IR_OP_CONV2D:
    if (n->nin != 2)
      return tensat_fail(c, "conv2d with a bias has no Tensat equivalent");
    if (a->dilation[0] != 1 || a->dilation[1] != 1 || pad < 0 || act < 0)
      return tensat_fail(c, "conv2d with dilation, explicit pads or an "
                            "activation Tensat lacks");
    ruleio_printf(c->b, "(conv2d %d %d %d %d", a->stride[0], a->stride[1], pad,
                  act);
    return tensat_args(c, n, 0, 2);
  case IR_OP_AVGPOOL:
    return tensat_pool(c, n, pad, a->count_include_pad, "poolavg");
  case IR_OP_MAXPOOL: return tensat_pool(c, n, pad, 1, "poolmax");
  case IR_OP_MATMUL: {
    const ir_shape *x = &g->tensors[n->in[0]].shape,
                   *y = &g->tensors[n->in[1]].shape;
    if (n->nin != 2 || act < 0 || x->rank != y->rank ||
        (x->rank != 2 && x->rank != 3) ||
        (x->rank == 3 && x->dim[0] != y->dim[0]))
      return tensat_fail(c, "matmul other than rank 2 or batched rank 3 "
                            "without bias has no Tensat equivalent");
    ruleio_printf(c->b, "(matmul %d", act);
    return tensat_args(c, n, 0, 2);
  }
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
    if (!same_shape(g, n))
      return tensat_fail(c, "broadcasting %s has no Tensat equivalent", op);
    ruleio_printf(c->b, "(%s", op);
    return tensat_args(c, n, 0, 2);
#include "../ir/ew_cases.h"
    if (!ir_ew_of(n->op)->tensat)
      break; /* ew.def's tensat column: none */
    ruleio_printf(c->b, "(%s", ir_ew_of(n->op)->tensat);
    return tensat_args(c, n, 0, 1);
  case IR_OP_TRANSPOSE:
    ruleio_puts(c->b, "(transpose ");
    if (tensat_expr(c, n->in[0]) < 0)
      return -1;
    for (int i = 0; i < a->nlist; i++)
      ruleio_printf(c->b, "%s%d", i ? "_" : " ", (int)a->list[i]);
    ruleio_puts(c->b, " 0)");
    return 0;
  case IR_OP_CONCAT:
    if (n->nin < 2)
      return tensat_fail(c, "concat of one tensor has no Tensat equivalent");
    return tensat_concat(c, n, n->nin);
  case IR_OP_SPLIT:
    if (n->nout != 2)
      return tensat_fail(c, "split into other than 2 parts has no Tensat "
                            "equivalent");
    ruleio_printf(c->b, "(split_%d (split %d", slot, a->axis);
    if (tensat_args(c, n, 0, 1) < 0)
      return -1;
    ruleio_puts(c->b, ")");
    return 0;
  case IR_OP_ENLARGE: {
    const char *ref = enlarge_ref(c, n);
    if (!ref)
      return tensat_fail(c, "enlarge: no input of the enlarged kernel size "
                            "for Tensat's (enlarge w ref)");
    ruleio_puts(c->b, "(enlarge ");
    if (tensat_expr(c, n->in[0]) < 0)
      return -1;
    ruleio_printf(c->b, " ?%s)", ref);
    return 0;
  }
  case IR_OP_SMUL: return tensat_unshaped(c, "smul");
  case IR_OP_CONST_ICONV: return tensat_unshaped(c, "Iconv");
  case IR_OP_CONST_POOL: return tensat_unshaped(c, "Cpool");
  case IR_OP_CONST_IMM: return tensat_unshaped(c, "Imatmul");
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_CLIP:
  case IR_OP_RESHAPE:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_PAD:
  case IR_OP_SLICE:
  case IR_OP_CONST_ONES:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: break; /* no Tensat equivalent */
  }
  return tensat_fail(c, "%s has no Tensat equivalent", op);
}

/* Longest side written: shared subterms are expanded, which can grow a
 * small DAG exponentially. */
#define TENSAT_MAX_SIDE ((size_t)1 << 20)

static int tensat_var_ok(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

static int tensat_expr(tensat_ctx *c, int t) {
  const ir_tensor *x = &c->g->tensors[t];
  if (c->b->len > TENSAT_MAX_SIDE)
    return tensat_fail(c, "too large once shared subterms are expanded");
  if (x->node < 0) {
    if (!tensat_var_ok(x->name))
      return tensat_fail(c, "input name not a Tensat variable "
                            "([A-Za-z0-9_]+)");
    ruleio_printf(c->b, "?%s", x->name);
    return 0;
  }
  return tensat_node(c, &c->g->nodes[x->node], x->slot);
}

/* Whether output k of r is the same input on both sides (a = a): such
 * outputs say nothing and are left out. */
static int trivial_output(const ir_rule *r, int k) {
  const ir_tensor *a = &r->src->tensors[r->src->outputs[k]],
                  *b = &r->dst->tensors[r->dst->outputs[k]];
  return a->node < 0 && b->node < 0 && !strcmp(a->name, b->name);
}

/* Writes output k of r as one `LHS=>RHS` line (no newline). */
static int tensat_line(const ir_rule *r, int k, ruleio_buf *b, char *why,
                       size_t wn) {
  tensat_ctx c = {r, r->src, b, why, wn};
  if (tensat_expr(&c, r->src->outputs[k]) < 0)
    return -1;
  ruleio_puts(b, "=>");
  c.g = r->dst;
  return tensat_expr(&c, r->dst->outputs[k]);
}

/* The text with its pattern variables renamed ?0, ?1, ... in order of
 * first appearance: equal for rules equal up to renaming. malloc'd. */
static char *tensat_canonical(const char *s, size_t len) {
  ruleio_buf out = {0};
  const char *names[256];
  size_t lens[256];
  int n = 0;
  ruleio_put(&out, "", 0);
  for (size_t i = 0; i < len;) {
    if (s[i] != '?') {
      ruleio_put(&out, s + i, 1);
      i++;
      continue;
    }
    size_t j = i + 1;
    while (j < len && s[j] != ' ' && s[j] != ')' && s[j] != '\n' && s[j] != '=')
      j++;
    int k = 0;
    while (k < n && !(lens[k] == j - i && !memcmp(names[k], s + i, j - i)))
      k++;
    if (k == n && n < 256) {
      names[n] = s + i;
      lens[n++] = j - i;
    }
    ruleio_printf(&out, "?%d", k);
    i = j;
  }
  if (out.oom) {
    free(out.s);
    return NULL;
  }
  return out.s;
}

/* A set of strings (open addressing, FNV-1a), for duplicate lines. */
typedef struct strset {
  char **slot;
  size_t cap, n;
} strset;

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Adds key (taking it) unless present; 1 added, 0 present (key freed),
 * -1 out of memory (key freed). */
static int strset_add(strset *S, char *key) {
  if (2 * (S->n + 1) > S->cap) {
    size_t cap = S->cap ? 2 * S->cap : 1024;
    char **ns = base_calloc(cap, sizeof *ns);
    if (!ns) {
      free(key);
      return -1;
    }
    for (size_t i = 0; i < S->cap; i++)
      if (S->slot[i]) {
        size_t j = str_hash(S->slot[i]) & (cap - 1);
        while (ns[j])
          j = (j + 1) & (cap - 1);
        ns[j] = S->slot[i];
      }
    free(S->slot);
    S->slot = ns;
    S->cap = cap;
  }
  size_t j = str_hash(key) & (S->cap - 1);
  for (; S->slot[j]; j = (j + 1) & (S->cap - 1))
    if (!strcmp(S->slot[j], key)) {
      free(key);
      return 0;
    }
  S->slot[j] = key;
  S->n++;
  return 1;
}

static void strset_free(strset *S) {
  for (size_t i = 0; i < S->cap; i++)
    free(S->slot[i]);
  free(S->slot);
}

/* Rules with one output (multi = 0) or two (multi = 1: Tensat's
 * --multi_rules file, two lines per rule sharing their variables). Lines
 * are separated by '\n' with none after the last: Tensat splits the file on
 * '\n' and parses every piece, so a final newline would be an empty rule. */
base_status ruleio_write_tensat(const ir_ruleset *rs, const char *use,
                                int multi, ruleio_buf *b, ruleio_stats *st,
                                base_diag *d) {
  strset seen = {0};
  int oom = 0, written = 0;
  for (int i = 0; i < rs->n && !oom; i++) {
    if (!use[i])
      continue;
    const ir_rule *r = &rs->rules[i];
    int outs[2], nout = 0;
    for (int k = 0; k < r->src->noutputs; k++)
      if (!trivial_output(r, k) && nout++ < 2)
        outs[nout - 1] = k;
    ruleio_buf one = {0};
    char why[200] = "";
    ruleio_skip_kind kind = RULEIO_SKIP_UNSUPPORTED;
    ruleio_put(&one, "", 0);
    if ((nout == 2 && !multi) || (nout == 1 && multi))
      kind = RULEIO_SKIP_OTHER_FORMAT;
    if (!nout)
      snprintf(why, sizeof why, "every output is an input, unchanged");
    else if (nout > 2)
      snprintf(why, sizeof why,
               "more than two outputs (Tensat's rules have "
               "one, its multi-pattern rules two)");
    else if (nout == 2 && !multi)
      snprintf(why, sizeof why,
               "two outputs (written by --format "
               "tensat-multi)");
    else if (nout == 1 && multi)
      snprintf(why, sizeof why, "one output (written by --format tensat)");
    else
      for (int k = 0; k < nout && !why[0]; k++) {
        if (k)
          ruleio_puts(&one, "\n");
        tensat_line(r, outs[k], &one, why, sizeof why);
      }
    if (!why[0] && !one.oom) {
      char *key = tensat_canonical(one.s, one.len);
      int added = key ? strset_add(&seen, key) : -1;
      if (added < 0) {
        one.oom = 1;
      } else if (!added) {
        kind = RULEIO_SKIP_DUPLICATE;
        snprintf(why, sizeof why,
                 "same as an earlier rule once variables "
                 "are renamed");
      } else {
        if (written++)
          ruleio_puts(b, "\n");
        ruleio_put(b, one.s, one.len);
        if (st)
          st->done++;
      }
    }
    if (why[0] && ruleio_stats_skip_as(st, kind, why, i + 1) != BASE_OK)
      one.oom = 1;
    oom |= one.oom;
    free(one.s);
  }
  strset_free(&seen);
  if (oom)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return BASE_OK;
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_str(ruleio_buf *b, const char *s) {
  ruleio_puts(b, "\"");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      ruleio_printf(b, "\\%c", ch);
    else if (ch < 0x20)
      ruleio_printf(b, "\\u%04x", ch);
    else
      ruleio_put(b, s, 1);
  }
  ruleio_puts(b, "\"");
}

static void json_ints(ruleio_buf *b, const int64_t *v, int n) {
  ruleio_puts(b, "[");
  for (int i = 0; i < n; i++)
    ruleio_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
  ruleio_puts(b, "]");
}

static void json_shape(ruleio_buf *b, const ir_shape *s) {
  json_ints(b, s->dim, s->rank);
}

/* Where each parameter lives in ir_attrs (params.def's field column). */
static size_t param_offset(ir_param_id p) {
  switch (p) {
#define PARAM(ID, name, kind, field)                                           \
  case IR_P_##ID:                                                              \
    return offsetof(ir_attrs, field);
#include "../ir/params.def"
#undef PARAM
  default: return 0;
  }
}

static void json_param(ruleio_buf *b, const ir_attrs *a, ir_param_id p) {
  const char *base = (const char *)a + param_offset(p);
  int32_t i32[4];
  switch (ir_param_kind_of(p)) {
  case IR_PK_INT:
  case IR_PK_BOOL:
    memcpy(i32, base, sizeof(int32_t));
    ruleio_printf(b, "%d", i32[0]);
    break;
  case IR_PK_FLOAT: {
    float f;
    memcpy(&f, base, sizeof f);
    ruleio_printf(b, "%.9g", (double)f);
    break;
  }
  case IR_PK_PAIR:
    memcpy(i32, base, 2 * sizeof(int32_t));
    ruleio_printf(b, "[%d, %d]", i32[0], i32[1]);
    break;
  case IR_PK_PAD:
    if (a->padmode != IR_PAD_EXPLICIT)
      json_str(b, a->padmode == IR_PAD_SAME ? "same" : "valid");
    else
      ruleio_printf(b, "[%d, %d, %d, %d]", a->pad[0], a->pad[1], a->pad[2],
                    a->pad[3]);
    break;
  case IR_PK_ACT: json_str(b, ir_act_name((ir_act)a->act)); break;
  case IR_PK_DTYPE: json_str(b, ir_dtype_name((ir_dtype)a->groups)); break;
  case IR_PK_LIST: json_ints(b, a->list, a->nlist); break;
  case IR_PK_LIST2: json_ints(b, a->list2, a->nlist2); break;
  }
}

static void json_node(ruleio_buf *b, const ir_graph *g, const ir_node *n) {
  const ir_opinfo *info = ir_op(n->op);
  ruleio_puts(b, "{\"op\": ");
  json_str(b, info->name);
  ruleio_puts(b, ", \"inputs\": [");
  for (int i = 0; i < n->nin; i++) {
    ruleio_puts(b, i ? ", " : "");
    json_str(b, g->tensors[n->in[i]].name);
  }
  ruleio_puts(b, "], \"outputs\": [");
  for (int i = 0; i < n->nout; i++) {
    const ir_tensor *t = &g->tensors[n->out[i]];
    ruleio_puts(b, i ? ", {\"name\": " : "{\"name\": ");
    json_str(b, t->name);
    ruleio_puts(b, ", \"shape\": ");
    json_shape(b, &t->shape);
    ruleio_puts(b, "}");
  }
  ruleio_puts(b, "], \"params\": {");
  for (int i = 0, k = 0; i < info->nparams; i++) {
    ir_param_id p = info->params[i];
    if ((p == IR_P_MIN || p == IR_P_MAX) && n->op == IR_OP_CONV2D &&
        n->a.act != IR_ACT_CLIP)
      continue; /* act=clip's bounds (ops.def), with it only */
    ruleio_puts(b, k++ ? ", " : "");
    json_str(b, ir_param_name(info->params[i]));
    ruleio_puts(b, ": ");
    json_param(b, &n->a, info->params[i]);
  }
  ruleio_puts(b, "}}");
}

static void json_tensor(ruleio_buf *b, const ir_tensor *t) {
  ruleio_puts(b, "{\"name\": ");
  json_str(b, t->name);
  ruleio_printf(b, ", \"kind\": \"%s\", \"shape\": ",
                t->kind == IR_T_INPUT ? "input" : "weight");
  json_shape(b, &t->shape);
  if (t->data) {
    int64_t n = ir_shape_numel(&t->shape);
    ruleio_puts(b, ", \"data\": [");
    for (int64_t i = 0; i < n; i++)
      ruleio_printf(b, "%s%.9g", i ? ", " : "", (double)t->data[i]);
    ruleio_puts(b, "]");
  }
  ruleio_puts(b, "}");
}

static void json_graph(ruleio_buf *b, const ir_graph *g) {
  int first = 1;
  ruleio_puts(b, "{\"inputs\": [");
  for (int i = 0; i < g->ntensors; i++) {
    if (g->tensors[i].kind == IR_T_VALUE)
      continue;
    ruleio_puts(b, first ? "" : ", ");
    first = 0;
    json_tensor(b, &g->tensors[i]);
  }
  ruleio_puts(b, "], \"nodes\": [");
  for (int i = 0; i < g->nnodes; i++) {
    ruleio_puts(b, i ? ", " : "");
    json_node(b, g, &g->nodes[i]);
  }
  ruleio_puts(b, "], \"outputs\": [");
  for (int i = 0; i < g->noutputs; i++) {
    ruleio_puts(b, i ? ", " : "");
    json_str(b, g->tensors[g->outputs[i]].name);
  }
  ruleio_puts(b, "]}");
}

static void json_rule(ruleio_buf *b, const ir_rule *r) {
  ruleio_puts(b, "    {\"id\": ");
  json_str(b, r->id);
  ruleio_puts(b, ", \"status\": ");
  json_str(b, ir_rule_status_name(r->status));
  ruleio_puts(b, ", \"axioms\": [");
  for (int i = 0; i < r->naxioms; i++) {
    ruleio_puts(b, i ? ", " : "");
    json_str(b, r->axioms[i]);
  }
  ruleio_puts(b, "], \"note\": ");
  if (r->note)
    json_str(b, r->note);
  else
    ruleio_puts(b, "null");
  ruleio_puts(b, ",\n     \"src\": ");
  json_graph(b, r->src);
  ruleio_puts(b, ",\n     \"dst\": ");
  json_graph(b, r->dst);
  ruleio_puts(b, "}");
}

base_status ruleio_write_json(const ir_ruleset *rs, const char *use,
                              ruleio_buf *b, ruleio_stats *st, base_diag *d) {
  int first = 1;
  (void)d;
  ruleio_puts(b, "{\n  \"format\": \"superopt-rules\",\n  \"version\": 1,\n"
                 "  \"rules\": [");
  for (int i = 0; i < rs->n; i++) {
    if (!use[i])
      continue;
    ruleio_puts(b, first ? "\n" : ",\n");
    first = 0;
    json_rule(b, &rs->rules[i]);
    if (st)
      st->done++;
  }
  ruleio_puts(b, first ? "]\n}\n" : "\n  ]\n}\n");
  return BASE_OK;
}
