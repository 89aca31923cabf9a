/* lower_util.h: what the lower stage's and the fusion pass's tests
 * (tests/test_lower_*.c, tests/test_fuse.c) share: parsing a graph text
 * (or checking the parser refuses it), lowering it (src/fuse/lower.h) into a
 * valid graph, running two graphs on the same seeded values and comparing their
 * outputs, printing and parsing back, unfusing for ONNX, counting operators and
 * finding (and checking) a tensor's producer. Static inline functions (a test
 * program need not use them all): each test program includes it once. */
#ifndef SUPEROPT_TEST_LOWER_UTIL_H
#define SUPEROPT_TEST_LOWER_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "fuse/lower.h"

static inline ir_graph *lu_parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
  cr_assert(g, "%d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

/* text refused by the parser, with a message holding want. */
static inline void lu_refused(const char *text, const char *want) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
  cr_assert_null(g, "accepted: %s", text);
  cr_assert(strstr(d.msg, want), "%s: message '%s' lacks '%s'", text, d.msg,
            want);
}

/* g lowered; the result passes ir_graph_validate. */
static inline ir_graph *lu_lower(const ir_graph *g, lower_stats *st) {
  base_diag d;
  ir_graph *h = lower_graph(g, st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(ir_graph_validate(h, &d), BASE_OK, "%s", d.msg);
  return h;
}

/* g converted to the half type k names (0: bf16, 1: f16) as run --dtype
 * converts a model; the caller frees it. */
static inline ir_graph *lu_to_half(const ir_graph *g, int k) {
  base_diag d;
  ir_graph *h = ir_graph_to_dtype(g, k ? IR_DT_F16 : IR_DT_BF16, &d);
  cr_assert_not_null(h, "%s", d.msg);
  return h;
}

/* text parsed into *g (the caller frees it) and lowered as lu_lower does,
 * its counts in *st: the result. */
static inline ir_graph *lu_parse_lower(const char *text, ir_graph **g,
                                       lower_stats *st) {
  *g = lu_parse(text);
  return lu_lower(*g, st);
}

/* Runs g on the seeded values of ref's inputs and weights, taken by name
 * (a weight's seeded values follow the slot of its first reader, which
 * lowering may change). */
static inline ex_values *lu_run_as(const ir_graph *g, const ir_graph *ref) {
  base_diag d;
  ex_values *r = ex_values_new(ref), *v = ex_values_new(g);
  cr_assert_eq(ex_fill_random(ref, r, 7, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ex_fill_random(g, v, 7, &d), BASE_OK, "%s", d.msg);
  for (int t = 0; t < g->ntensors; t++) {
    int u = ir_find_tensor(ref, g->tensors[t].name);
    if (g->tensors[t].kind != IR_T_VALUE && u >= 0)
      memcpy(v->v[t], r->v[u],
             sizeof(float) * (size_t)ir_shape_numel(&g->tensors[t].shape));
  }
  ex_values_free(r);
  ex_options o = {1, 0};
  cr_assert_eq(ex_run(g, v, &o, &d), BASE_OK, "%s", d.msg);
  return v;
}

/* a's and b's outputs, the same names in the same order, on the same
 * values: bit for bit where tol is 0 (the same operations in the same
 * order), else each element within tol of the output's largest magnitude
 * (and no output all zero). */
static inline void lu_same_outputs(const ir_graph *a, const ir_graph *b,
                                   double tol) {
  ex_values *va = lu_run_as(a, a), *vb = lu_run_as(b, a);
  cr_assert_eq(a->noutputs, b->noutputs);
  for (int i = 0; i < a->noutputs; i++) {
    int ta = a->outputs[i], tb = b->outputs[i];
    const char *name = a->tensors[ta].name;
    cr_assert_str_eq(name, b->tensors[tb].name);
    cr_assert(ir_shape_eq(&a->tensors[ta].shape, &b->tensors[tb].shape));
    int64_t n = ir_shape_numel(&a->tensors[ta].shape);
    const float *x = va->v[ta], *y = vb->v[tb];
    if (tol == 0) {
      cr_assert(!memcmp(x, y, sizeof(float) * (size_t)n), "output %s differs",
                name);
      continue;
    }
    double mag = 0;
    for (int64_t k = 0; k < n; k++)
      mag = fmax(mag, fabs(x[k]));
    for (int64_t k = 0; k < n; k++)
      cr_assert_leq(fabs(x[k] - y[k]), tol * (mag + 1e-30),
                    "%s[%lld]: %g vs %g", name, (long long)k, x[k], y[k]);
    cr_expect_gt(mag, 0, "%s is all zero", name);
  }
  ex_values_free(va);
  ex_values_free(vb);
}

/* h printed and parsed back: the same graph (structural hash) printing
 * the same text, returned (the caller frees it). */
static inline char *lu_round_trip(const ir_graph *h) {
  char *p1 = ir_print(h);
  cr_assert(p1);
  ir_graph *k = lu_parse(p1);
  char *p2 = ir_print(k);
  cr_assert(p2);
  cr_assert_str_eq(p1, p2);
  uint64_t a = 0, b = 1;
  cr_assert_eq(ir_graph_hash(h, &a), BASE_OK);
  cr_assert_eq(ir_graph_hash(k, &b), BASE_OK);
  cr_assert_eq(a, b, "print/parse changed the graph:\n%s", p1);
  free(p2);
  ir_graph_free(k);
  return p1;
}

/* h unfused as ONNX export writes it (ir_graph_unfuse), computing g's
 * outputs (within tol, as lu_same_outputs); the caller frees it. */
static inline ir_graph *lu_unfused(const ir_graph *g, const ir_graph *h,
                                   double tol) {
  base_diag d;
  ir_graph *u = ir_graph_unfuse(h, &d);
  cr_assert(u, "%s", d.msg);
  lu_same_outputs(g, u, tol);
  return u;
}

/* g and h, its lowered form, computing the same outputs (within tol, as
 * lu_same_outputs), h unfused too (lu_unfused); then all three freed. */
static inline void lu_same_and_free(ir_graph *g, ir_graph *h, double tol) {
  lu_same_outputs(g, h, tol);
  ir_graph_free(lu_unfused(g, h, tol));
  ir_graph_free(h), ir_graph_free(g);
}

static inline int lu_count_op(const ir_graph *g, ir_opcode op) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    n += g->nodes[i].op == op;
  return n;
}

/* The node computing tensor `name` of g. */
static inline const ir_node *lu_producer(const ir_graph *g, const char *name) {
  int t = ir_find_tensor(g, name);
  cr_assert(t >= 0 && g->tensors[t].kind == IR_T_VALUE, "no value %s", name);
  return &g->nodes[g->tensors[t].node];
}

/* The node computing tensor `name` of g, checked to be an op with nin
 * inputs (any number where nin < 0). */
static inline const ir_node *lu_node(const ir_graph *g, const char *name,
                                     ir_opcode op, int nin) {
  const ir_node *n = lu_producer(g, name);
  cr_assert_eq(n->op, op, "%s: op %d, expected %d", name, n->op, op);
  if (nin >= 0)
    cr_assert_eq(n->nin, nin, "%s: %d inputs, expected %d", name, n->nin, nin);
  return n;
}

#endif
