/* build.c: rebuilding a graph node by node (the passes and the region
 * stitcher copy most nodes of a graph and change a few), fresh names, and
 * the clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rewrite_int.h"

void rewrite_fresh_name(const ir_graph *g, const ir_graph *h, const char *base,
                        int *counter, char *buf, size_t n) {
  snprintf(buf, n, "%s", base);
  while ((g && ir_find_tensor(g, buf) >= 0) ||
         (h && ir_find_tensor(h, buf) >= 0))
    snprintf(buf, n, "%.200s.%d", base, ++*counter);
}

/* Adds g's input or weight t to h, keeping its name and values. */
static int copy_leaf(rewrite_builder *b, int t) {
  const ir_tensor *x = &b->g->tensors[t];
  int k = ir_add_tensor(b->h, x->name, x->kind, &x->shape, b->d);
  if (k >= 0) {
    b->h->tensors[k].data = x->data; /* shared; srch_optimize clones */
    b->h->tensors[k].dtype = x->dtype;
  }
  return k;
}

base_status rewrite_build_begin(rewrite_builder *b, const ir_graph *g,
                                const uint8_t *used, base_diag *d) {
  memset(b, 0, sizeof *b);
  b->g = g;
  b->d = d;
  b->h = ir_graph_new(g->name);
  b->map = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  if (!b->h || !b->map) {
    rewrite_build_abort(b);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  for (int t = 0; t < g->ntensors; t++)
    b->map[t] = -1;
  for (int t = 0; t < g->ntensors; t++) {
    const ir_tensor *x = &g->tensors[t];
    int keep =
        x->kind == IR_T_INPUT || (x->kind == IR_T_WEIGHT && (!used || used[t]));
    if (keep && (b->map[t] = copy_leaf(b, t)) < 0) {
      rewrite_build_abort(b);
      return d ? d->code : BASE_ERR_INTERNAL;
    }
  }
  return BASE_OK;
}

int rewrite_build_node(rewrite_builder *b, ir_opcode op, const int32_t *in,
                       int nin, const ir_attrs *a, const char *base) {
  ir_attrs tmp = *a;
  int nout = ir_op_nout(op, &tmp);
  if (nout > IR_MAX_LIST)
    return base_diag_set(b->d, BASE_ERR_INTERNAL, 0, 0, "too many outputs"), -1;
  char names[IR_MAX_LIST][256];
  const char *np[IR_MAX_LIST];
  for (int o = 0; o < nout; o++) {
    char want[256];
    snprintf(want, sizeof want, nout > 1 ? "%.200s.%d" : "%.200s", base, o);
    rewrite_fresh_name(b->g, b->h, want, &b->fresh, names[o], sizeof names[o]);
    np[o] = names[o];
  }
  return ir_add_node(b->h, op, in, nin, a, np, b->d);
}

base_status rewrite_build_copy(rewrite_builder *b, int i, const ir_attrs *a) {
  const ir_node *n = &b->g->nodes[i];
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    if ((in[k] = b->map[n->in[k]]) < 0)
      return base_diag_set(b->d, BASE_ERR_INTERNAL, 0, 0,
                           "rebuild: '%s' read before it is computed",
                           b->g->tensors[n->in[k]].name);
  for (int o = 0; o < n->nout; o++)
    names[o] = b->g->tensors[n->out[o]].name;
  int k = ir_add_node(b->h, n->op, in, n->nin, a ? a : &n->a, names, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  for (int o = 0; o < n->nout; o++)
    b->map[n->out[o]] = b->h->nodes[k].out[o];
  return BASE_OK;
}

ir_graph *rewrite_build_end(rewrite_builder *b) {
  for (int i = 0; i < b->g->noutputs; i++) {
    int t = b->map[b->g->outputs[i]];
    if (t < 0) {
      base_diag_set(b->d, BASE_ERR_INTERNAL, 0, 0, "rebuild: output '%s' lost",
                    b->g->tensors[b->g->outputs[i]].name);
      rewrite_build_abort(b);
      return NULL;
    }
    if (ir_add_output(b->h, t, b->d)) {
      rewrite_build_abort(b);
      return NULL;
    }
  }
  ir_graph *h = b->h;
  b->h = NULL;
  rewrite_build_abort(b);
  return h;
}

ir_graph *rewrite_build_finish(rewrite_builder *b, base_status st) {
  if (!st)
    return rewrite_build_end(b);
  rewrite_build_abort(b);
  if (st == BASE_ERR_NOMEM)
    base_diag_set(b->d, st, 0, 0, "out of memory");
  return NULL;
}

void rewrite_build_abort(rewrite_builder *b) {
  ir_graph_free(b->h);
  free(b->map);
  b->h = NULL;
  b->map = NULL;
}
