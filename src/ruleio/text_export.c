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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ruleio_int.h"

/* ---- Tensat -------------------------------------------------------------- */

static const int tensat_acts[] = {0, 2, 1, 3}; /* ours -> TASO codes */

static int tensat_expr(const ir_graph *g, int t, ruleio_buf *b, char *why,
                       size_t wn);

/* Writes the operands of n in order, space-separated, each preceded by a
 * space. */
static int tensat_args(const ir_graph *g, const ir_node *n, int from, int to,
                       ruleio_buf *b, char *why, size_t wn) {
  for (int i = from; i < to; i++) {
    ruleio_puts(b, " ");
    if (tensat_expr(g, n->in[i], b, why, wn) < 0)
      return -1;
  }
  ruleio_puts(b, ")");
  return 0;
}

static int tensat_concat(const ir_graph *g, const ir_node *n, int upto,
                         ruleio_buf *b, char *why, size_t wn) {
  /* concat(x1..xk) = concat(concat(x1..xk-1), xk) */
  ruleio_printf(b, "(concat %d ", n->a.axis);
  if (upto == 2) {
    if (tensat_expr(g, n->in[0], b, why, wn) < 0)
      return -1;
  } else if (tensat_concat(g, n, upto - 1, b, why, wn) < 0) {
    return -1;
  }
  return tensat_args(g, n, upto - 1, upto, b, why, wn);
}

static int tensat_node(const ir_graph *g, const ir_node *n, int slot,
                       ruleio_buf *b, char *why, size_t wn) {
  const ir_attrs *a = &n->a;
  int pad = a->padmode == IR_PAD_SAME ? 0 : a->padmode == IR_PAD_VALID ? 1 : -1;
  int act = a->act <= IR_ACT_TANH ? tensat_acts[a->act] : -1;
  switch (n->op) {
  case IR_OP_CONV2D:
    if (n->nin != 2 || a->dilation[0] != 1 || a->dilation[1] != 1 || pad < 0 ||
        act < 0)
      break;
    ruleio_printf(b, "(conv2d %d %d %d %d", a->stride[0], a->stride[1], pad,
                  act);
    return tensat_args(g, n, 0, 2, b, why, wn);
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
    if (pad < 0 || (n->op == IR_OP_AVGPOOL && !a->count_include_pad))
      break;
    ruleio_printf(b, "(%s %d %d %d %d %d",
                  n->op == IR_OP_AVGPOOL ? "poolavg" : "poolmax", a->kernel[0],
                  a->kernel[1], a->stride[0], a->stride[1], pad);
    return tensat_args(g, n, 0, 1, b, why, wn);
  case IR_OP_MATMUL:
    if (n->nin != 2 || a->act != IR_ACT_NONE ||
        g->tensors[n->in[0]].shape.rank != 2)
      break;
    ruleio_puts(b, "(matmul");
    return tensat_args(g, n, 0, 2, b, why, wn);
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
  case IR_OP_SMUL:
  case IR_OP_RELU:
    ruleio_printf(b, "(%s", ir_op(n->op)->name);
    return tensat_args(g, n, 0, n->nin, b, why, wn);
  case IR_OP_TRANSPOSE:
    if (a->nlist != 2)
      break;
    ruleio_puts(b, "(transpose");
    return tensat_args(g, n, 0, 1, b, why, wn);
  case IR_OP_CONCAT:
    if (n->nin < 2)
      break;
    return tensat_concat(g, n, n->nin, b, why, wn);
  case IR_OP_SPLIT:
    if (n->nout != 2)
      break;
    ruleio_printf(b, "(split_%d (split %d", slot, a->axis);
    if (tensat_args(g, n, 0, 1, b, why, wn) < 0)
      return -1;
    ruleio_puts(b, ")");
    return 0;
  case IR_OP_ENLARGE:
    ruleio_printf(b, "(enlarge %d %d", a->kernel[0], a->kernel[1]);
    return tensat_args(g, n, 0, 1, b, why, wn);
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_POOL:
    ruleio_printf(b, "(%s %d %d)",
                  n->op == IR_OP_CONST_ICONV ? "Iconv" : "Cpool",
                  (int)a->list[2], (int)a->list[3]);
    return 0;
  case IR_OP_CONST_IMM: ruleio_puts(b, "Imatmul"); return 0;
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SIGMOID:
  case IR_OP_TANH:
  case IR_OP_GELU:
  case IR_OP_ERF:
  case IR_OP_SQRT:
  case IR_OP_CLIP:
  case IR_OP_RESHAPE:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_PAD:
  case IR_OP_SLICE:
  case IR_OP_CONST_ONES: break; /* no Tensat equivalent */
  }
  snprintf(why, wn, "%s has no Tensat equivalent", ir_op(n->op)->name);
  return -1;
}

/* Longest side written: shared subterms are expanded, which can grow a
 * small DAG exponentially. */
#define TENSAT_MAX_SIDE ((size_t)1 << 20)

static int tensat_expr(const ir_graph *g, int t, ruleio_buf *b, char *why,
                       size_t wn) {
  const ir_tensor *x = &g->tensors[t];
  if (b->len > TENSAT_MAX_SIDE) {
    snprintf(why, wn, "too large once shared subterms are expanded");
    return -1;
  }
  if (x->node < 0) {
    ruleio_printf(b, "?%s", x->name);
    return 0;
  }
  return tensat_node(g, &g->nodes[x->node], x->slot, b, why, wn);
}

static int tensat_rule(const ir_rule *r, ruleio_buf *b, char *why, size_t wn) {
  if (r->src->noutputs != 1) {
    snprintf(why, wn, "several outputs (Tensat rules have one)");
    return -1;
  }
  if (tensat_expr(r->src, r->src->outputs[0], b, why, wn) < 0)
    return -1;
  ruleio_puts(b, "=>");
  if (tensat_expr(r->dst, r->dst->outputs[0], b, why, wn) < 0)
    return -1;
  ruleio_puts(b, "\n");
  return 0;
}

base_status ruleio_write_tensat(const ir_ruleset *rs, const char *use,
                                ruleio_buf *b, ruleio_stats *st, base_diag *d) {
  for (int i = 0; i < rs->n; i++) {
    if (!use[i])
      continue;
    ruleio_buf one = {0};
    char why[160] = "";
    ruleio_put(&one, "", 0);
    if (tensat_rule(&rs->rules[i], &one, why, sizeof why) == 0) {
      ruleio_put(b, one.s, one.len);
      if (st)
        st->done++;
    } else if (ruleio_stats_skip(st, why, i + 1) != BASE_OK) {
      one.oom = 1;
    }
    int oom = one.oom;
    free(one.s);
    if (oom)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
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
  for (int i = 0; i < info->nparams; i++) {
    ruleio_puts(b, i ? ", " : "");
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
