/* dyn.c: which of the original model's dynamic dimensions (ONNX dim_param:
 * `batch`, `seq`) an export can keep, and where each one lives in the graph.
 *
 * A graph holds fixed sizes: the dimension `seq` of input_ids was 16 when
 * the model was imported. For each named dimension P (size v in the graph)
 * every tensor dimension is taken to be c * v^e; e is found by probing: the
 * graph inputs' P dimensions are given another size w (2v + 1), each node's
 * shape rule runs on its inputs so changed, and an output dimension whose
 * size went from c v^e to c w^e has exponent e. A reshape's target is
 * changed with it: its dimensions are matched to its input's in groups of
 * equal products, and a group's exponent goes to the target dimension of
 * size v^e (else the first one divisible by it). A slice over the whole of a
 * P dimension keeps it whole; a gather along a P dimension by fixed indices,
 * a shape rule that fails with P changed (a weight or constant of P's size
 * added or concatenated: BERT's folded position ids), or a dimension that
 * is not c v^e (a concatenated class token: seq + 1) fix P, with the node as
 * the reason. The export then writes P's dimensions as dim_params and
 * reshape targets with 0 (the input's dimension at that position) or -1
 * (one dimension inferred); a target that needs two of them fixes its Ps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox_int.h"

static int8_t *ex_of(const ox_dyn *y, int p, int t) {
  return y->e[p] + (size_t)t * IR_MAX_RANK;
}

/* v^e (e <= 3; sizes below 2^31). */
static int64_t ipow(int64_t v, int e) {
  int64_t r = 1;
  while (e-- > 0)
    r *= v;
  return r;
}

/* Shape s with every dimension of exponent e[k] for P resized from v to w;
 * 0 when a dimension is not a multiple of v^e. */
static int resized(const ir_shape *s, const int8_t *e, int64_t v, int64_t w,
                   ir_shape *o) {
  *o = *s;
  for (int k = 0; k < s->rank; k++) {
    int64_t q = ipow(v, e[k]);
    if (s->dim[k] % q)
      return 0;
    o->dim[k] = s->dim[k] / q * ipow(w, e[k]);
  }
  return 1;
}

/* The exponent of a dimension of size a before and b after, or -1. */
static int exponent(int64_t a, int64_t b, int64_t v, int64_t w) {
  for (int e = 0; e <= 3; e++)
    if (a * ipow(w, e) == b * ipow(v, e))
      return e;
  return -1;
}

/* Target exponents te[0..n-1] of a reshape of x (exponents xe) to t[0..n-1]
 * for P of size v: groups of equal products, each group's exponent on the
 * target dimension of size v^e, else the first divisible by it. 0 when a
 * group has none. */
static int reshape_exps(const ir_shape *x, const int8_t *xe, const int64_t *t,
                        int n, int64_t v, int8_t *te) {
  int i = 0, k = 0;
  memset(te, 0, (size_t)n);
  while (i < x->rank || k < n) {
    int k0 = k, e = 0;
    int64_t pi = 1, pk = 1;
    if (i < x->rank)
      pi *= x->dim[i], e += xe[i], i++;
    if (k < n)
      pk *= t[k++];
    while (pi != pk) { /* grow the side with the smaller product */
      if (pi < pk && i < x->rank)
        pi *= x->dim[i], e += xe[i], i++;
      else if (pk < pi && k < n)
        pk *= t[k++];
      else
        return 0;
    }
    if (!e)
      continue;
    int64_t q = ipow(v, e);
    int at = -1;
    for (int j = k0; j < k && at < 0; j++)
      if (t[j] == q)
        at = j;
    for (int j = k0; j < k && at < 0; j++)
      if (t[j] % q == 0)
        at = j;
    if (at < 0)
      return 0;
    te[at] = (int8_t)e;
  }
  return 1;
}

static int fixp(ox_dyn *y, int p, const ir_graph *g, const ir_node *n,
                const char *why) {
  snprintf(y->why[p], sizeof y->why[p], "%s '%.60s' %.160s", ir_op(n->op)->name,
           g->tensors[n->out[0]].name, why);
  return 0;
}

/* Node n with P resized: its outputs' exponents, or 0 (P fixed, why set). */
static int probe_node(ox_dyn *y, int p, const ir_graph *g, const ir_node *n) {
  int64_t v = y->val[p], w = 2 * v + 1;
  ir_shape ins[IR_MAX_IN], outs[IR_MAX_LIST];
  const ir_shape *inp[IR_MAX_IN];
  int any = 0;
  for (int k = 0; k < n->nin; k++) {
    const ir_tensor *t = &g->tensors[n->in[k]];
    const int8_t *e = ex_of(y, p, n->in[k]);
    for (int j = 0; j < t->shape.rank; j++)
      any |= e[j];
    if (!resized(&t->shape, e, v, w, &ins[k]))
      return fixp(y, p, g, n, "reads a dimension that is not a multiple of it");
    inp[k] = &ins[k];
  }
  if (!any)
    return 1; /* outputs: exponents 0 (calloc) */
  ir_attrs a = n->a;
  const ir_shape *x = &g->tensors[n->in[0]].shape;
  const int8_t *xe = ex_of(y, p, n->in[0]);
  int8_t te[IR_MAX_RANK];
  if (n->op == IR_OP_RESHAPE) {
    if (!reshape_exps(x, xe, n->a.list, n->a.nlist, v, te))
      return fixp(y, p, g, n, "has no target dimension that carries it");
    for (int k = 0; k < a.nlist; k++)
      a.list[k] = a.list[k] / ipow(v, te[k]) * ipow(w, te[k]);
  } else if (n->op == IR_OP_SLICE) {
    for (int k = 0; k < x->rank; k++) {
      if (!xe[k])
        continue;
      if (a.list[k] == 0 && a.list2[k] >= x->dim[k])
        a.list2[k] = ins[0].dim[k]; /* whole: stays whole */
      else if (a.list2[k] >= x->dim[k])
        return fixp(y, p, g, n, "slices the end of a dimension that has it");
    }
  } else if (n->op == IR_OP_GATHER) {
    int ax = a.axis < 0 ? a.axis + x->rank : a.axis, idx = 0;
    const ir_tensor *it = &g->tensors[n->in[1]];
    for (int j = 0; j < it->shape.rank; j++)
      idx |= ex_of(y, p, n->in[1])[j];
    if (ax >= 0 && ax < x->rank && xe[ax] && !idx)
      return fixp(y, p, g, n, "gathers along it by fixed indices");
  }
  base_diag d;
  if (ir_infer(n->op, &a, inp, n->nin, outs, &d)) {
    char why[200];
    snprintf(why, sizeof why, "fails with it changed (%.150s)", d.msg);
    return fixp(y, p, g, n, why);
  }
  for (int k = 0; k < n->nout; k++) {
    const ir_shape *s = &g->tensors[n->out[k]].shape;
    int8_t *e = ex_of(y, p, n->out[k]);
    for (int j = 0; j < s->rank; j++) {
      int ej = outs[k].rank == s->rank
                   ? exponent(s->dim[j], outs[k].dim[j], v, w)
                   : -1;
      if (ej < 0)
        return fixp(y, p, g, n,
                    "gives a dimension that is not a multiple of "
                    "a power of it");
      e[j] = (int8_t)ej;
    }
  }
  return 1;
}

/* Probes P through g: 0 when it is fixed (y->why[p] set). */
static int probe(ox_dyn *y, int p, const ir_graph *g,
                 const unsigned char *skip) {
  for (int i = 0; i < g->nnodes; i++)
    if (!(skip && skip[i]) && !probe_node(y, p, g, &g->nodes[i]))
      return 0;
  return 1;
}

int ox_dyn_reshape(const ox_dyn *y, const ir_graph *g, const ir_node *n,
                   int64_t *t, int *p_bad) {
  const ir_shape *x = &g->tensors[n->in[0]].shape;
  int nsym = 0, at = -1;
  memcpy(t, n->a.list, sizeof(int64_t) * (size_t)n->a.nlist);
  for (int k = 0; k < n->a.nlist; k++) {
    int sym = -1, same = k < x->rank && x->dim[k] == t[k];
    for (int p = 0; p < y->np; p++) {
      int8_t eo = y->kept[p] ? y->e[p][(size_t)n->out[0] * IR_MAX_RANK + k] : 0;
      int8_t ei = y->kept[p] && k < x->rank
                      ? y->e[p][(size_t)n->in[0] * IR_MAX_RANK + k]
                      : 0;
      if (eo)
        sym = p;
      same &= eo == ei;
    }
    if (sym >= 0 && same)
      t[k] = 0; /* the input's dimension k */
    else if (sym >= 0 && nsym++ && p_bad)
      *p_bad = sym;
    else if (sym >= 0)
      at = k;
  }
  if (at >= 0)
    t[at] = -1;
  return nsym <= 1;
}

base_status ox_dyn_solve(ox_dyn *y, const ir_graph *g,
                         const unsigned char *skip) {
  for (int p = 0; p < y->np; p++) {
    y->e[p] = base_calloc((size_t)g->ntensors * IR_MAX_RANK + 1, 1);
    if (!y->e[p])
      return BASE_ERR_NOMEM;
    if (!y->kept[p])
      continue;
    for (int i = 0; i < y->nin; i++)
      if (y->in[i].param == p)
        ex_of(y, p, y->in[i].tensor)[y->in[i].axis] = 1;
    y->kept[p] = probe(y, p, g, skip);
  }
  /* reshape targets: at most one dimension not copied (0) may carry them */
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < g->nnodes && !changed; i++) {
      const ir_node *n = &g->nodes[i];
      int64_t t[IR_MAX_LIST];
      int bad = -1;
      if ((skip && skip[i]) || n->op != IR_OP_RESHAPE ||
          ox_dyn_reshape(y, g, n, t, &bad) || bad < 0)
        continue;
      y->kept[bad] = 0, changed = 1;
      snprintf(y->why[bad], sizeof y->why[bad],
               "reshape '%s' needs two target dimensions computed from it "
               "(neither 0 nor -1 writes the second)",
               g->tensors[n->out[0]].name);
    }
  }
  return BASE_OK;
}

int ox_dyn_has(const ox_dyn *y, int t, int k) {
  for (int p = 0; y && p < y->np; p++)
    if (y->kept[p] && ex_of(y, p, t)[k])
      return 1;
  return 0;
}

void ox_dyn_free(ox_dyn *y) {
  for (int p = 0; p < y->np; p++)
    free(y->e[p]);
  free(y->in);
  memset(y, 0, sizeof *y);
}
