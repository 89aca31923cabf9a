/* print.c: the canonical .graph printer, and file helpers.
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

static void put_params(ir_buf *b, const ir_node *n) {
  const ir_opinfo *r = ir_op(n->op);
  for (int i = 0; i < r->nparams; i++) {
    char v[256], dv[256];
    ir_param_format(r->params[i], &n->a, v, sizeof v);
    ir_param_format(r->params[i], &r->defaults, dv, sizeof dv);
    if ((r->required & (1u << i)) || strcmp(v, dv) != 0)
      ir_buf_printf(b, " %s=%s", ir_param_name(r->params[i]), v);
  }
}

static void put_node(ir_buf *b, const ir_graph *g, const ir_node *n) {
  char sh[96];
  for (int k = 0; k < n->nout; k++) {
    const ir_tensor *t = &g->tensors[n->out[k]];
    ir_buf_printf(b, "%s%s: %s", k ? ", " : "", t->name,
                  ir_shape_str(&t->shape, sh, sizeof sh));
  }
  ir_buf_printf(b, " = %s(", ir_op(n->op)->name);
  for (int k = 0; k < n->nin; k++)
    ir_buf_printf(b, "%s%s", k ? ", " : "", g->tensors[n->in[k]].name);
  ir_buf_printf(b, ")");
  put_params(b, n);
  ir_buf_printf(b, "\n");
}

static void put_decls(ir_buf *b, const ir_graph *g, ir_tkind kind) {
  char sh[96];
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind == kind)
      ir_buf_printf(b, "%s %s: %s\n", kind == IR_T_INPUT ? "input" : "weight",
                    t->name, ir_shape_str(&t->shape, sh, sizeof sh));
  }
}

char *ir_print(const ir_graph *g) {
  ir_buf b = {0};
  if (g->name && g->name[0])
    ir_buf_printf(&b, "graph %s\n", g->name);
  put_decls(&b, g, IR_T_INPUT);
  put_decls(&b, g, IR_T_WEIGHT);
  for (int i = 0; i < g->nnodes; i++)
    put_node(&b, g, &g->nodes[i]);
  for (int i = 0; i < g->noutputs; i++) /* 64 names a line at most */
    ir_buf_printf(&b, "%s %s%s", i % 64 ? "," : "output",
                  g->tensors[g->outputs[i]].name,
                  i % 64 == 63 || i + 1 == g->noutputs ? "\n" : "");
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

ir_status ir_write_file(const ir_graph *g, const char *path, ir_diag *d) {
  char *s = ir_print(g);
  if (!s)
    return ir_diag_set(d, IR_ERR_NOMEM, 0, 0, "out of memory");
  ir_status st = ir_write_atomic(path, s, strlen(s), d);
  free(s);
  return st;
}

/* ---- files ----------------------------------------------------------------
 */

static ir_status io_err(ir_diag *d, const char *path, const char *what) {
  ir_status st = ir_diag_set(d, IR_ERR_IO, 0, 0, "cannot %s '%s': %s", what,
                             path, strerror(errno));
  if (d)
    d->file[0] = '\0';
  return st;
}

char *ir_read_file(const char *path, size_t *len, ir_diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return io_err(d, path, "open"), NULL;
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap);
  while (s) {
    n += fread(s + n, 1, cap - n - 1, f);
    if (ferror(f)) {
      io_err(d, path, "read");
      free(s);
      fclose(f);
      return NULL;
    }
    if (feof(f))
      break;
    char *t = realloc(s, cap *= 2);
    if (!t)
      free(s);
    s = t;
  }
  fclose(f);
  if (!s)
    return ir_diag_set(d, IR_ERR_NOMEM, 0, 0, "out of memory"), NULL;
  s[n] = '\0';
  *len = n;
  return s;
}

ir_status ir_write_atomic(const char *path, const char *data, size_t len,
                          ir_diag *d) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      (int)sizeof tmp)
    return ir_diag_set(d, IR_ERR_IO, 0, 0, "path too long: '%s'", path);
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return io_err(d, path, "create a temporary file next to");
  int bad = fwrite(data, 1, len, f) != len;
  bad |= fflush(f) != 0;
  bad |= fsync(fileno(f)) != 0 && errno != EINVAL;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    ir_status st = io_err(d, path, "write");
    remove(tmp);
    return st;
  }
  return IR_OK;
}
