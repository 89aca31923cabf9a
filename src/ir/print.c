/* print.c: the canonical .graph printer.
 *
 * Canonical form (docs/graph-format.md): graph line, inputs, weights,
 * operators in topological order with every result's shape, non-default
 * parameters (required ones always) in table order, one output line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir_int.h"

static void put_params(base_buf *b, ir_opcode op, const ir_attrs *a) {
  const ir_opinfo *r = ir_op(op);
  for (int i = 0; i < r->nparams; i++) {
    char v[256], dv[256];
    ir_param_format(r->params[i], a, v, sizeof v);
    ir_param_format(r->params[i], &r->defaults, dv, sizeof dv);
    if ((r->required & (1u << i)) || strcmp(v, dv) != 0)
      base_buf_printf(b, " %s=%s", ir_param_name(r->params[i]), v);
  }
}

/* "{ t0 = op($0, ...) params; t1 = ...; ... }": body results are named
 * t<i> by position. */
static void put_body(base_buf *b, const ir_body *body) {
  base_buf_printf(b, "{ ");
  for (int i = 0; i < body->nops; i++) {
    const ir_body_op *o = &body->ops[i];
    base_buf_printf(b, "%st%d = %s(", i ? "; " : "", i, ir_op(o->op)->name);
    for (int k = 0; k < o->nin; k++)
      base_buf_printf(b, o->in[k] < 0 ? "%s$%d" : "%st%d", k ? ", " : "",
                      o->in[k] < 0 ? -1 - o->in[k] : o->in[k]);
    base_buf_printf(b, ")");
    put_params(b, o->op, &o->a);
  }
  base_buf_printf(b, " }");
}

char *ir_body_str(const ir_body *body) {
  base_buf b = {0};
  put_body(&b, body);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

static void put_node(base_buf *b, const ir_graph *g, const ir_node *n) {
  char sh[96];
  for (int k = 0; k < n->nout; k++) {
    const ir_tensor *t = &g->tensors[n->out[k]];
    base_buf_printf(b, "%s%s: %s%s", k ? ", " : "", t->name,
                    t->dtype ? ir_dtype_name((ir_dtype)t->dtype) : "",
                    ir_shape_str(&t->shape, sh, sizeof sh));
  }
  base_buf_printf(b, " = %s(", ir_op(n->op)->name);
  for (int k = 0; k < n->nin; k++)
    base_buf_printf(b, "%s%s", k ? ", " : "", g->tensors[n->in[k]].name);
  base_buf_printf(b, ")");
  if (n->op == IR_OP_FUSED || n->op == IR_OP_MOVE) {
    const ir_body *body = ir_body_get(n->a.body);
    base_buf_printf(b, " ");
    if (body)
      put_body(b, body);
    else
      base_buf_printf(b, "{ }"); /* unreachable for a validated graph */
  }
  put_params(b, n->op, &n->a);
  base_buf_printf(b, "\n");
}

static void put_decls(base_buf *b, const ir_graph *g, ir_tkind kind) {
  char sh[96];
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind != kind)
      continue;
    base_buf_printf(b, "%s %s: %s%s", kind == IR_T_INPUT ? "input" : "weight",
                    t->name, t->dtype ? ir_dtype_name((ir_dtype)t->dtype) : "",
                    ir_shape_str(&t->shape, sh, sizeof sh));
    if (t->has_value)
      base_buf_printf(b, " value=%.9g", (double)t->value);
    base_buf_printf(b, "\n");
  }
}

char *ir_print(const ir_graph *g) {
  base_buf b = {0};
  if (g->name && g->name[0])
    base_buf_printf(&b, "graph %s\n", g->name);
  put_decls(&b, g, IR_T_INPUT);
  put_decls(&b, g, IR_T_WEIGHT);
  for (int i = 0; i < g->nnodes; i++)
    put_node(&b, g, &g->nodes[i]);
  for (int i = 0; i < g->noutputs; i++) /* 64 names a line at most */
    base_buf_printf(&b, "%s %s%s", i % 64 ? "," : "output",
                    g->tensors[g->outputs[i]].name,
                    i % 64 == 63 || i + 1 == g->noutputs ? "\n" : "");
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

base_status ir_write_file(const ir_graph *g, const char *path, base_diag *d) {
  char *s = ir_print(g);
  if (!s)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = base_write_atomic(path, s, strlen(s), d);
  free(s);
  return st;
}
