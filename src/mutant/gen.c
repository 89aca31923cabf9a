/* gen.c: the mutant generator: per class, the original conv2d nodes cut out
 * of a model (f) and the mutant over the same names (g), built from the
 * IR's layout operators (concat, split, pad, slice, reshape, transpose).
 *
 * The generator is a fixed program per class, not a random search, so its
 * output is the same on every run: classes and sites in model node order.
 * A class that does not fit a node (shapes, strides, dilation) says why.
 */
#include <stdlib.h>
#include <string.h>

#include "mutant_int.h"

static const char *const class_names[MUTANT_NCLASSES] = {"concat-w", "split-h",
                                                         "dilated", "batch-w"};

const char *mutant_class_name(mutant_class c) {
  return (unsigned)c < MUTANT_NCLASSES ? class_names[c] : "?";
}

int mutant_class_lookup(const char *name) {
  for (int c = 0; c < MUTANT_NCLASSES; c++)
    if (!strcmp(name, class_names[c]))
      return c;
  return -1;
}

void mutant_list_free(mutant_list *l) {
  for (int i = 0; i < l->n; i++) {
    ir_graph_free(l->m[i].f);
    ir_graph_free(l->m[i].g);
  }
  free(l->m);
  memset(l, 0, sizeof *l);
}

/* ---- building blocks ----------------------------------------------------- */

/* Model tensor t as a leaf of dst (same name; a weight stays a weight,
 * anything else becomes an input; known data copied): its index, or -1. */
int mutant_leaf(ir_graph *dst, const ir_graph *m, int t, base_diag *d) {
  const ir_tensor *mt = &m->tensors[t];
  int i = ir_find_tensor(dst, mt->name);
  if (i >= 0)
    return i;
  i = ir_add_tensor(dst, mt->name,
                    mt->kind == IR_T_WEIGHT ? IR_T_WEIGHT : IR_T_INPUT,
                    &mt->shape, d);
  if (i >= 0)
    dst->tensors[i].dtype = mt->dtype;
  if (i >= 0 && mt->data) {
    size_t bytes = sizeof(float) * (size_t)ir_shape_numel(&mt->shape);
    float *p = base_arena_alloc(dst->arena, bytes);
    if (!p)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
    memcpy(p, mt->data, bytes);
    dst->tensors[i].data = p;
  }
  return i;
}

/* Adds a node; returns its first output tensor, or -1 with d set. name
 * (may be NULL) names that output when unused in g. */
int mutant_add(ir_graph *g, ir_opcode op, const int32_t *in, int nin,
               const ir_attrs *a, const char *name, base_diag *d) {
  const char *names[1] = {name};
  int k = ir_add_node(g, op, in, nin, a,
                      name && ir_find_tensor(g, name) < 0 ? names : NULL, d);
  return k < 0 ? -1 : g->nodes[k].out[0];
}

int mutant_slice(ir_graph *g, int x, const int64_t *lo, const int64_t *hi,
                 base_diag *d) {
  ir_attrs a;
  int r = g->tensors[x].shape.rank;
  ir_attrs_default(IR_OP_SLICE, &a);
  a.nlist = a.nlist2 = r;
  memcpy(a.list, lo, sizeof(int64_t) * (size_t)r);
  memcpy(a.list2, hi, sizeof(int64_t) * (size_t)r);
  return mutant_add(g, IR_OP_SLICE, (int32_t[]){x}, 1, &a, NULL, d);
}

int mutant_concat(ir_graph *g, const int32_t *xs, int n, int axis,
                  const char *name, base_diag *d) {
  ir_attrs a;
  ir_attrs_default(IR_OP_CONCAT, &a);
  a.axis = axis;
  return mutant_add(g, IR_OP_CONCAT, xs, n, &a, name, d);
}

static int op_concat(ir_graph *g, int x, int y, int axis, const char *name,
                     base_diag *d) {
  return mutant_concat(g, (int32_t[]){x, y}, 2, axis, name, d);
}

static int op_layout(ir_graph *g, ir_opcode op, int x, int n,
                     const int64_t *list, const char *name, base_diag *d) {
  ir_attrs a;
  ir_attrs_default(op, &a);
  a.nlist = n;
  memcpy(a.list, list, sizeof(int64_t) * (size_t)n);
  return mutant_add(g, op, (int32_t[]){x}, 1, &a, name, d);
}

/* The conv node k of model m over leaves of dst (x, w, b), with attributes
 * a (NULL: the node's own). Returns its output, or -1. */
static int conv_of(ir_graph *dst, const ir_graph *m, int k, int x,
                   const ir_attrs *a, const char *name, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  int32_t in[3] = {x, -1, -1};
  for (int j = 1; j < nd->nin; j++)
    if ((in[j] = mutant_leaf(dst, m, nd->in[j], d)) < 0)
      return -1;
  return mutant_add(dst, IR_OP_CONV2D, in, nd->nin, a ? a : &nd->a, name, d);
}

static base_status refuse(base_diag *d, const ir_graph *m, int k,
                          const char *why) {
  return base_diag_set(d, BASE_ERR_PARAM, m->nodes[k].line, m->nodes[k].col,
                       "mutant: node %d (%s): %s", k,
                       m->tensors[m->nodes[k].out[0]].name, why);
}

/* The node's attributes with its resolved padding made explicit, so a conv
 * on a part of the input pads as the original did. */
static ir_attrs explicit_pads(const ir_node *nd) {
  ir_attrs a = nd->a;
  a.padmode = IR_PAD_EXPLICIT;
  return a;
}

/* ---- the classes --------------------------------------------------------- */

/* f: the conv nodes as written, over leaves. */
static base_status build_f(const ir_graph *m, const int32_t *nodes, int n,
                           ir_graph *f, base_diag *d) {
  for (int i = 0; i < n; i++) {
    const ir_node *nd = &m->nodes[nodes[i]];
    int x = mutant_leaf(f, m, nd->in[0], d);
    int y = x < 0 ? -1
                  : conv_of(f, m, nodes[i], x, NULL,
                            m->tensors[nd->out[0]].name, d);
    if (y < 0 || ir_add_output(f, y, d))
      return d->code ? d->code : BASE_ERR_INTERNAL;
  }
  return BASE_OK;
}

/* split-h: x -> [top; bottom] stacked in the batch -> conv -> unstacked and
 * joined along H. Wrong only in the rows whose window crosses the cut. */
static int build_split_h(const ir_graph *m, int k, ir_graph *g, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape;
  int64_t n = xs->dim[0], h = xs->dim[2], half = h / 2;
  int64_t lo[4] = {0, 0, 0, 0}, hi[4] = {n, xs->dim[1], half, xs->dim[3]};
  ir_attrs a = explicit_pads(nd);
  int x = mutant_leaf(g, m, nd->in[0], d);
  int top = x < 0 ? -1 : mutant_slice(g, x, lo, hi, d);
  lo[2] = half, hi[2] = h;
  int bot = top < 0 ? -1 : mutant_slice(g, x, lo, hi, d);
  int xb = bot < 0 ? -1 : op_concat(g, top, bot, 0, NULL, d);
  int yb = xb < 0 ? -1 : conv_of(g, m, k, xb, &a, NULL, d);
  if (yb < 0)
    return -1;
  ir_attrs sa;
  ir_attrs_default(IR_OP_SPLIT, &sa);
  sa.axis = 0, sa.nlist = 2, sa.list[0] = n, sa.list[1] = n;
  int s = ir_add_node(g, IR_OP_SPLIT, (int32_t[]){yb}, 1, &sa, NULL, d);
  if (s < 0)
    return -1;
  return op_concat(g, g->nodes[s].out[0], g->nodes[s].out[1], 2,
                   m->tensors[nd->out[0]].name, d);
}

/* dilated: pad, space-to-batch (reshape, transpose, reshape), plain conv,
 * batch-to-space (reshape, transpose, reshape). Equal everywhere. */
static int build_dilated(const ir_graph *m, int k, ir_graph *g, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ws = &m->tensors[nd->in[1]].shape,
                 *ys = &m->tensors[nd->out[0]].shape;
  int64_t n = xs->dim[0], c = xs->dim[1], o = ys->dim[1],
          dl = nd->a.dilation[0];
  int64_t ph = nd->a.pad[0], pw = nd->a.pad[1];
  int64_t hp = (xs->dim[2] + 2 * ph) / dl, wp = (xs->dim[3] + 2 * pw) / dl;
  int64_t pads[8] = {0, 0, ph, pw, 0, 0, ph, pw};
  int64_t r1[5] = {n * c, hp, dl, wp, dl}, p1[5] = {2, 4, 0, 1, 3};
  int64_t r2[4] = {dl * dl * n, c, hp, wp};
  int64_t oh = hp - ws->dim[2] + 1, ow = wp - ws->dim[3] + 1;
  int64_t r3[5] = {dl, dl, n * o, oh, ow}, p2[5] = {2, 3, 0, 4, 1};
  int64_t r4[4] = {n, o, oh * dl, ow * dl};
  ir_attrs a = nd->a;
  a.padmode = IR_PAD_EXPLICIT;
  memset(a.pad, 0, sizeof a.pad);
  a.dilation[0] = a.dilation[1] = 1;
  int t = mutant_leaf(g, m, nd->in[0], d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_PAD, t, 8, pads, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_RESHAPE, t, 5, r1, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_TRANSPOSE, t, 5, p1, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_RESHAPE, t, 4, r2, NULL, d);
  t = t < 0 ? -1 : conv_of(g, m, k, t, &a, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_RESHAPE, t, 5, r3, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_TRANSPOSE, t, 5, p2, NULL, d);
  return t < 0 ? -1
               : op_layout(g, IR_OP_RESHAPE, t, 4, r4,
                           m->tensors[nd->out[0]].name, d);
}

/* batch-w: the batch's images side by side along W (transpose to
 * [C,H,N,W], reshape to [1,C,H,N*W]), one conv, and back (reshape to
 * [O,H,N,W], transpose to [N,O,H,W]). Wrong only in the columns whose window
 * crosses from one image into the next. */
static int build_batch_w(const ir_graph *m, int k, ir_graph *g, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ys = &m->tensors[nd->out[0]].shape;
  int64_t n = xs->dim[0], c = xs->dim[1], h = xs->dim[2], w = xs->dim[3];
  int64_t p1[4] = {1, 2, 0, 3}, r1[4] = {1, c, h, n * w};
  int64_t r2[4] = {ys->dim[1], ys->dim[2], n, w}, p2[4] = {2, 0, 1, 3};
  ir_attrs a = explicit_pads(nd);
  int t = mutant_leaf(g, m, nd->in[0], d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_TRANSPOSE, t, 4, p1, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_RESHAPE, t, 4, r1, NULL, d);
  t = t < 0 ? -1 : conv_of(g, m, k, t, &a, NULL, d);
  t = t < 0 ? -1 : op_layout(g, IR_OP_RESHAPE, t, 4, r2, NULL, d);
  return t < 0 ? -1
               : op_layout(g, IR_OP_TRANSPOSE, t, 4, p2,
                           m->tensors[nd->out[0]].name, d);
}

/* concat-w: both inputs joined along W, one conv (weights joined along O
 * unless shared), each output sliced back. Wrong only in the columns whose
 * window crosses the join. Returns 0 or -1; outputs added to g. */
static int build_concat_w(const ir_graph *m, const int32_t *k, ir_graph *g,
                          base_diag *d) {
  const ir_node *n1 = &m->nodes[k[0]], *n2 = &m->nodes[k[1]];
  const ir_shape *y1 = &m->tensors[n1->out[0]].shape,
                 *y2 = &m->tensors[n2->out[0]].shape;
  int shared =
      n1->in[1] == n2->in[1] && (n1->nin < 3 || n1->in[2] == n2->in[2]);
  ir_attrs a = explicit_pads(n1);
  int x1 = mutant_leaf(g, m, n1->in[0], d);
  int x2 = x1 < 0 ? -1 : mutant_leaf(g, m, n2->in[0], d);
  int x = x2 < 0 ? -1 : op_concat(g, x1, x2, 3, NULL, d);
  int32_t in[3] = {x, -1, -1};
  for (int j = 1; x >= 0 && j < n1->nin; j++) {
    int p = mutant_leaf(g, m, n1->in[j], d),
        q = mutant_leaf(g, m, n2->in[j], d);
    in[j] = p < 0 || q < 0 ? -1 : shared ? p : op_concat(g, p, q, 0, NULL, d);
    if (in[j] < 0)
      return -1;
  }
  int y = x < 0 ? -1 : mutant_add(g, IR_OP_CONV2D, in, n1->nin, &a, NULL, d);
  if (y < 0)
    return -1;
  int64_t o = shared ? 0 : y1->dim[1], lo[4] = {0, 0, 0, 0};
  int64_t hi[4] = {y1->dim[0], y1->dim[1], y1->dim[2], y1->dim[3]};
  int s1 = mutant_slice(g, y, lo, hi, d);
  lo[1] = o, lo[3] = y1->dim[3];
  hi[1] = o + y2->dim[1], hi[3] = y1->dim[3] + y2->dim[3];
  int s2 = s1 < 0 ? -1 : mutant_slice(g, y, lo, hi, d);
  if (s2 < 0 || ir_add_output(g, s1, d) || ir_add_output(g, s2, d))
    return -1;
  return 0;
}

/* ---- applicability ------------------------------------------------------- */

static int is_conv(const ir_graph *m, int k) {
  return k >= 0 && k < m->nnodes && m->nodes[k].op == IR_OP_CONV2D;
}

static base_status fits_split_h(const ir_graph *m, int k, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ws = &m->tensors[nd->in[1]].shape;
  int64_t span = (ws->dim[2] - 1) * nd->a.dilation[0] + 1;
  if (nd->a.stride[0] != 1)
    return refuse(d, m, k, "split-h needs stride 1 along H");
  if (2 * (span - 1) > xs->dim[2])
    return refuse(d, m, k,
                  "split-h: the rows next to the cut would be more than half "
                  "the output");
  if (xs->dim[2] % 2 || xs->dim[2] < 4 || ws->dim[2] < 2)
    return refuse(d, m, k,
                  "split-h needs an even H of at least 4 and a window "
                  "taller than 1");
  if (m->tensors[nd->out[0]].shape.dim[2] != xs->dim[2])
    return refuse(d, m, k, "split-h needs output height = input height");
  return BASE_OK;
}

static base_status fits_dilated(const ir_graph *m, int k, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ws = &m->tensors[nd->in[1]].shape;
  const ir_attrs *a = &nd->a;
  int64_t dl = a->dilation[0];
  if (dl < 2 || a->dilation[1] != dl || a->stride[0] != 1 || a->stride[1] != 1)
    return refuse(d, m, k, "dilated needs equal dilations > 1 and stride 1");
  if (xs->dim[2] % dl || xs->dim[3] % dl || ws->dim[2] % 2 == 0 ||
      ws->dim[3] % 2 == 0)
    return refuse(d, m, k,
                  "dilated needs H and W divisible by the dilation and an "
                  "odd kernel");
  if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3] ||
      a->pad[0] != dl * (ws->dim[2] - 1) / 2 ||
      a->pad[1] != dl * (ws->dim[3] - 1) / 2)
    return refuse(d, m, k, "dilated needs 'same' padding");
  if (xs->dim[0] * xs->dim[1] > INT32_MAX)
    return refuse(d, m, k, "dilated: tensor too large");
  return BASE_OK;
}

static base_status fits_batch_w(const ir_graph *m, int k, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ys = &m->tensors[nd->out[0]].shape;
  if (xs->dim[0] < 2)
    return refuse(d, m, k, "batch-w needs a batch of at least 2");
  if (nd->a.stride[1] != 1 || ys->dim[3] != xs->dim[3])
    return refuse(d, m, k,
                  "batch-w needs stride 1 along W and output width = input "
                  "width");
  if (xs->dim[0] * xs->dim[3] > INT32_MAX)
    return refuse(d, m, k, "batch-w: tensor too large");
  return BASE_OK;
}

/* Whether node j reads, directly or not, an output of node i (i < j). */
static int depends(const ir_graph *m, int i, int j, uint8_t *seen) {
  if (j == i)
    return 1;
  if (j < i || seen[j])
    return 0;
  seen[j] = 1;
  const ir_node *nd = &m->nodes[j];
  for (int t = 0; t < nd->nin; t++) {
    int p = m->tensors[nd->in[t]].node;
    if (p >= 0 && depends(m, i, p, seen))
      return 1;
  }
  return 0;
}

static base_status fits_concat_w(const ir_graph *m, const int32_t *k,
                                 base_diag *d) {
  const ir_node *n1 = &m->nodes[k[0]], *n2 = &m->nodes[k[1]];
  const ir_shape *x1 = &m->tensors[n1->in[0]].shape,
                 *x2 = &m->tensors[n2->in[0]].shape;
  if (k[0] == k[1] || n1->in[0] == n2->in[0])
    return refuse(d, m, k[0], "concat-w needs two convs on different inputs");
  if (!ir_shape_eq(&m->tensors[n1->in[1]].shape,
                   &m->tensors[n2->in[1]].shape) ||
      n1->nin != n2->nin || memcmp(&n1->a, &n2->a, sizeof n1->a))
    return refuse(d, m, k[0],
                  "concat-w needs the same kernel shape and parameters");
  if (x1->dim[0] != x2->dim[0] || x1->dim[1] != x2->dim[1] ||
      x1->dim[2] != x2->dim[2])
    return refuse(d, m, k[0], "concat-w needs inputs of the same N, C, H");
  if (n1->a.stride[1] != 1 ||
      m->tensors[n1->out[0]].shape.dim[3] != x1->dim[3] ||
      m->tensors[n2->out[0]].shape.dim[3] != x2->dim[3])
    return refuse(d, m, k[0],
                  "concat-w needs stride 1 along W and output width = input "
                  "width");
  uint8_t *seen = base_calloc((size_t)m->nnodes + 1, 1);
  if (!seen)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int lo = k[0] < k[1] ? k[0] : k[1], hi = k[0] < k[1] ? k[1] : k[0];
  int dep = depends(m, lo, hi, seen);
  free(seen);
  if (dep)
    return refuse(d, m, k[0], "concat-w: one conv depends on the other");
  return BASE_OK;
}

/* ---- public -------------------------------------------------------------- */

base_status mutant_make(mutant_class cls, const ir_graph *model,
                        const int32_t *nodes, mutant *out, base_diag *d) {
  int n = cls == MUTANT_CONCAT_W ? 2 : 1;
  memset(out, 0, sizeof *out);
  if ((unsigned)cls >= MUTANT_NCLASSES)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "mutant: no class %d", cls);
  for (int i = 0; i < n; i++)
    if (!is_conv(model, nodes[i]))
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "mutant: node %d is not a conv2d", nodes[i]);
  base_status st;
  switch (cls) {
  case MUTANT_SPLIT_H: st = fits_split_h(model, nodes[0], d); break;
  case MUTANT_DILATED: st = fits_dilated(model, nodes[0], d); break;
  case MUTANT_BATCH_W: st = fits_batch_w(model, nodes[0], d); break;
  case MUTANT_CONCAT_W:
  case MUTANT_NCLASSES: st = fits_concat_w(model, nodes, d); break;
  }
  if (st)
    return st;
  ir_graph *f = ir_graph_new("f"), *g = ir_graph_new("g");
  if (!f || !g) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto fail;
  }
  /* g's leaves first, in f's order, so both list inputs alike */
  if ((st = build_f(model, nodes, n, f, d)))
    goto fail;
  for (int i = 0; i < f->ntensors; i++)
    if (f->tensors[i].kind != IR_T_VALUE &&
        mutant_leaf(g, model, ir_find_tensor(model, f->tensors[i].name), d) <
            0) {
      st = d->code;
      goto fail;
    }
  int y = -1;
  switch (cls) {
  case MUTANT_SPLIT_H: y = build_split_h(model, nodes[0], g, d); break;
  case MUTANT_DILATED: y = build_dilated(model, nodes[0], g, d); break;
  case MUTANT_BATCH_W: y = build_batch_w(model, nodes[0], g, d); break;
  case MUTANT_CONCAT_W:
  case MUTANT_NCLASSES: y = build_concat_w(model, nodes, g, d); break;
  }
  if (y < 0 || (cls != MUTANT_CONCAT_W && ir_add_output(g, y, d))) {
    st = d->code ? d->code : BASE_ERR_INTERNAL;
    goto fail;
  }
  for (int i = 0; i < f->noutputs; i++)
    if (!ir_shape_eq(&f->tensors[f->outputs[i]].shape,
                     &g->tensors[g->outputs[i]].shape)) {
      st = refuse(d, model, nodes[0], "the mutant's output shape differs");
      goto fail;
    }
  out->cls = cls, out->f = f, out->g = g;
  out->site[0] = nodes[0], out->site[1] = n > 1 ? nodes[1] : -1;
  return BASE_OK;
fail:
  ir_graph_free(f);
  ir_graph_free(g);
  return st;
}

static base_status push(mutant_list *l, const mutant *m) {
  if (l->n == l->cap) {
    int nc = l->cap ? 2 * l->cap : 16;
    mutant *v = base_realloc(l->m, sizeof *v * (size_t)nc);
    if (!v)
      return BASE_ERR_NOMEM;
    l->m = v, l->cap = nc;
  }
  l->m[l->n++] = *m;
  return BASE_OK;
}

/* Tries one site; a class that does not fit is skipped, other errors
 * (out of memory) returned. */
static base_status try_site(mutant_class c, const ir_graph *model,
                            const int32_t *nodes, mutant_list *out,
                            mutant_site_fn want, void *u, base_diag *d) {
  int w = want ? want(u, c, model, nodes) : 1;
  if (w <= 0)
    return w < 0 ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                 : BASE_OK;
  mutant mu;
  base_diag quiet;
  base_status st = mutant_make(c, model, nodes, &mu, &quiet);
  if (st == BASE_ERR_PARAM || st == BASE_ERR_SHAPE)
    return BASE_OK;
  if (st)
    return base_diag_set(d, st, 0, 0, "%s", quiet.msg);
  if (push(out, &mu)) {
    ir_graph_free(mu.f);
    ir_graph_free(mu.g);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  return BASE_OK;
}

base_status mutant_generate(const ir_graph *model, unsigned mask,
                            mutant_list *out, base_diag *d) {
  return mutant_generate_sites(model, mask, NULL, NULL, out, d);
}

base_status mutant_generate_sites(const ir_graph *model, unsigned mask,
                                  mutant_site_fn want, void *u,
                                  mutant_list *out, base_diag *d) {
  base_status st = BASE_OK;
  for (int k = 0; !st && k < model->nnodes; k++) {
    if (!is_conv(model, k))
      continue;
    int32_t one[1] = {k};
    if (mask & 1u << MUTANT_SPLIT_H)
      st = try_site(MUTANT_SPLIT_H, model, one, out, want, u, d);
    if (!st && mask & 1u << MUTANT_DILATED)
      st = try_site(MUTANT_DILATED, model, one, out, want, u, d);
    if (!st && mask & 1u << MUTANT_BATCH_W)
      st = try_site(MUTANT_BATCH_W, model, one, out, want, u, d);
    if (st || !(mask & 1u << MUTANT_CONCAT_W))
      continue;
    base_diag quiet;
    for (int j = k + 1; j < model->nnodes; j++) {
      int32_t two[2] = {k, j};
      if (is_conv(model, j) && !fits_concat_w(model, two, &quiet)) {
        st = try_site(MUTANT_CONCAT_W, model, two, out, want, u, d);
        break;
      }
    }
  }
  return st;
}
