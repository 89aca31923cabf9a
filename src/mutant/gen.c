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

static const char *const class_names[MUTANT_NCLASSES] = {
    "concat-w",    "split-h",     "dilated",     "batch-w",
    "pad-split-h", "group-merge", "matmul-batch"};

const char *mutant_class_name(mutant_class c) {
  return (unsigned)c < MUTANT_NCLASSES ? class_names[c] : "?";
}

int mutant_class_lookup(const char *name) {
  for (int c = 0; c < MUTANT_NCLASSES; c++)
    if (!strcmp(name, class_names[c]))
      return c;
  return -1;
}

int mutant_class_nodes(mutant_class c) {
  return c == MUTANT_CONCAT_W || c == MUTANT_GROUP_MERGE ||
                 c == MUTANT_MATMUL_BATCH
             ? 2
             : 1;
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

/* The conv (or matmul) node k of model m over leaves of dst (x, w, b), with
 * attributes a (NULL: the node's own). Returns its output, or -1. */
static int conv_of(ir_graph *dst, const ir_graph *m, int k, int x,
                   const ir_attrs *a, const char *name, base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  int32_t in[IR_MAX_IN] = {x, -1, -1};
  if (nd->nin > 3)
    return base_diag_set(d, BASE_ERR_PARAM, nd->line, nd->col,
                         "mutant: a convolution with a residual input"),
           -1;
  for (int j = 1; j < nd->nin; j++)
    if ((in[j] = mutant_leaf(dst, m, nd->in[j], d)) < 0)
      return -1;
  return mutant_add(dst, nd->op, in, nd->nin, a ? a : &nd->a, name, d);
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
 * joined along H. Wrong only in the rows whose window crosses the cut.
 * pad-split-h (odd H): x padded with one zero row below first, and the
 * extra output row sliced off at the end (PET's pad-conv-slice). */
static int build_split_h(const ir_graph *m, int k, int odd, ir_graph *g,
                         base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ys = &m->tensors[nd->out[0]].shape;
  int64_t n = xs->dim[0], h = xs->dim[2] + (odd != 0), half = h / 2;
  int64_t lo[4] = {0, 0, 0, 0}, hi[4] = {n, xs->dim[1], half, xs->dim[3]};
  int64_t pads[8] = {0, 0, 0, 0, 0, 0, 1, 0};
  const char *name = m->tensors[nd->out[0]].name;
  ir_attrs a = explicit_pads(nd);
  int x = mutant_leaf(g, m, nd->in[0], d);
  if (odd && x >= 0)
    x = op_layout(g, IR_OP_PAD, x, 8, pads, NULL, d);
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
  int y = op_concat(g, g->nodes[s].out[0], g->nodes[s].out[1], 2,
                    odd ? NULL : name, d);
  if (!odd || y < 0)
    return y;
  ir_attrs sl;
  ir_attrs_default(IR_OP_SLICE, &sl);
  sl.nlist = sl.nlist2 = 4;
  memset(sl.list, 0, sizeof(int64_t) * 4);
  memcpy(sl.list2, ys->dim, sizeof(int64_t) * 4);
  return mutant_add(g, IR_OP_SLICE, (int32_t[]){y}, 1, &sl, name, d);
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

/* group-merge: both inputs joined along C, one conv with twice the groups
 * (weights and biases joined along O), each output sliced back along C.
 * Equal everywhere (no window crosses from one group into another).
 * Returns 0 or -1; outputs added to g. */
static int build_group_merge(const ir_graph *m, const int32_t *k, ir_graph *g,
                             base_diag *d) {
  const ir_node *n1 = &m->nodes[k[0]], *n2 = &m->nodes[k[1]];
  const ir_shape *ys = &m->tensors[n1->out[0]].shape;
  ir_attrs a = explicit_pads(n1);
  a.groups = 2 * n1->a.groups;
  int32_t in[3] = {-1, -1, -1};
  for (int j = 0; j < n1->nin; j++) {
    int p = mutant_leaf(g, m, n1->in[j], d),
        q = p < 0 ? -1 : mutant_leaf(g, m, n2->in[j], d);
    if ((in[j] = q < 0 ? -1 : op_concat(g, p, q, j ? 0 : 1, NULL, d)) < 0)
      return -1;
  }
  int y = mutant_add(g, IR_OP_CONV2D, in, n1->nin, &a, NULL, d);
  if (y < 0)
    return -1;
  int64_t lo[4] = {0, 0, 0, 0};
  int64_t hi[4] = {ys->dim[0], ys->dim[1], ys->dim[2], ys->dim[3]};
  int s1 = mutant_slice(g, y, lo, hi, d);
  lo[1] = ys->dim[1], hi[1] = 2 * ys->dim[1];
  int s2 = s1 < 0 ? -1 : mutant_slice(g, y, lo, hi, d);
  if (s2 < 0 || ir_add_output(g, s1, d) || ir_add_output(g, s2, d))
    return -1;
  return 0;
}

/* Tensor t (a leaf of g) reshaped to [1, dims...] (n dims). */
static int stack_one(ir_graph *g, int t, int n, const int64_t *dims,
                     base_diag *d) {
  int64_t r[IR_MAX_RANK] = {1};
  memcpy(r + 1, dims, sizeof(int64_t) * (size_t)n);
  return t < 0 ? -1 : op_layout(g, IR_OP_RESHAPE, t, n + 1, r, NULL, d);
}

/* matmul-batch: a1 and a2 as [1, R, K] (R: all their rows) stacked along a
 * new batch axis, b1 and b2 as [2, K, N], one batched matmul, the biases
 * (stacked [2, 1, N]) added, split along the batch and reshaped back. Equal
 * everywhere. Returns 0 or -1; outputs added to g. */
static int build_matmul_batch(const ir_graph *m, const int32_t *k, ir_graph *g,
                              base_diag *d) {
  const ir_node *nd[2] = {&m->nodes[k[0]], &m->nodes[k[1]]};
  const ir_shape *as = &m->tensors[nd[0]->in[0]].shape,
                 *bs = &m->tensors[nd[0]->in[1]].shape,
                 *ys = &m->tensors[nd[0]->out[0]].shape;
  int64_t kk = bs->dim[0], nn = bs->dim[1], rows = ir_shape_numel(as) / kk;
  int64_t ad[2] = {rows, kk}, bd[2] = {kk, nn}, cd[2] = {1, nn};
  int32_t a2[2], b2[2], c2[2];
  for (int i = 0; i < 2; i++) {
    a2[i] = stack_one(g, mutant_leaf(g, m, nd[i]->in[0], d), 2, ad, d);
    b2[i] = stack_one(g, mutant_leaf(g, m, nd[i]->in[1], d), 2, bd, d);
    c2[i] = nd[i]->nin < 3
                ? 0
                : stack_one(g, mutant_leaf(g, m, nd[i]->in[2], d), 2, cd, d);
    if (a2[i] < 0 || b2[i] < 0 || c2[i] < 0)
      return -1;
  }
  int x = mutant_concat(g, a2, 2, 0, NULL, d);
  int w = x < 0 ? -1 : mutant_concat(g, b2, 2, 0, NULL, d);
  int y = w < 0 ? -1
                : mutant_add(g, IR_OP_MATMUL, (int32_t[]){x, w}, 2, &nd[0]->a,
                             NULL, d);
  if (y >= 0 && nd[0]->nin == 3) {
    int c = mutant_concat(g, c2, 2, 0, NULL, d);
    ir_attrs ea;
    ir_attrs_default(IR_OP_EWADD, &ea);
    y = c < 0 ? -1
              : mutant_add(g, IR_OP_EWADD, (int32_t[]){y, c}, 2, &ea, NULL, d);
  }
  if (y < 0)
    return -1;
  ir_attrs sa;
  ir_attrs_default(IR_OP_SPLIT, &sa);
  sa.axis = 0, sa.nlist = 2, sa.list[0] = 1, sa.list[1] = 1;
  int s = ir_add_node(g, IR_OP_SPLIT, (int32_t[]){y}, 1, &sa, NULL, d);
  for (int i = 0; s >= 0 && i < 2; i++) {
    int o = g->nodes[s].out[i];
    if (!ir_shape_eq(&g->tensors[o].shape, ys)) /* ([1,R,N] may be y's) */
      o = op_layout(g, IR_OP_RESHAPE, o, ys->rank, ys->dim, NULL, d);
    if (o < 0 || ir_add_output(g, o, d))
      return -1;
  }
  return s < 0 ? -1 : 0;
}

/* ---- applicability ------------------------------------------------------- */

/* A convolution the classes rewrite: x, w and a bias; one with a residual
 * input (the epilogue the generated rules make: e00770's merge, the third
 * tier's fusions) is no site (the classes would drop the residual). */
static int is_conv(const ir_graph *m, int k) {
  return k >= 0 && k < m->nnodes && m->nodes[k].op == IR_OP_CONV2D &&
         m->nodes[k].nin <= 3;
}

static base_status fits_split_h(const ir_graph *m, int k, int odd,
                                base_diag *d) {
  const ir_node *nd = &m->nodes[k];
  const ir_shape *xs = &m->tensors[nd->in[0]].shape,
                 *ws = &m->tensors[nd->in[1]].shape;
  int64_t span = (ws->dim[2] - 1) * nd->a.dilation[0] + 1;
  int64_t h = xs->dim[2] + (odd != 0);
  if (nd->a.stride[0] != 1)
    return refuse(d, m, k, "split-h needs stride 1 along H");
  if (2 * (span - 1) > h)
    return refuse(d, m, k,
                  "split-h: the rows next to the cut would be more than half "
                  "the output");
  if (odd && xs->dim[2] % 2 == 0)
    return refuse(d, m, k, "pad-split-h needs an odd H (even: split-h)");
  if (h % 2 || h < 4 || ws->dim[2] < 2)
    return refuse(d, m, k,
                  odd ? "pad-split-h needs an odd H of at least 3 and a "
                        "window taller than 1"
                      : "split-h needs an even H of at least 4 and a window "
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

/* Whether the two nodes k[0], k[1] are independent (-1: out of memory). */
static int independent(const ir_graph *m, const int32_t *k) {
  uint8_t *seen = base_calloc((size_t)m->nnodes + 1, 1);
  if (!seen)
    return -1;
  int lo = k[0] < k[1] ? k[0] : k[1], hi = k[0] < k[1] ? k[1] : k[0];
  int dep = depends(m, lo, hi, seen);
  free(seen);
  return !dep;
}

static base_status fits_group_merge(const ir_graph *m, const int32_t *k,
                                    base_diag *d) {
  const ir_node *n1 = &m->nodes[k[0]], *n2 = &m->nodes[k[1]];
  if (k[0] == k[1] || n1->in[0] == n2->in[0])
    return refuse(d, m, k[0],
                  "group-merge needs two convs on different inputs");
  if (!ir_shape_eq(&m->tensors[n1->in[1]].shape,
                   &m->tensors[n2->in[1]].shape) ||
      n1->nin != n2->nin || n1->nin > 3 || memcmp(&n1->a, &n2->a, sizeof n1->a))
    return refuse(d, m, k[0],
                  "group-merge needs the same kernel shape and parameters");
  if (!ir_shape_eq(&m->tensors[n1->in[0]].shape, &m->tensors[n2->in[0]].shape))
    return refuse(d, m, k[0], "group-merge needs inputs of one shape");
  if (2 * (int64_t)n1->a.groups > INT32_MAX)
    return refuse(d, m, k[0], "group-merge: too many groups");
  int ind = independent(m, k);
  if (ind < 0)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return ind ? BASE_OK
             : refuse(d, m, k[0], "group-merge: one conv depends on the other");
}

static int is_matmul(const ir_graph *m, int k) {
  return k >= 0 && k < m->nnodes && m->nodes[k].op == IR_OP_MATMUL;
}

static base_status fits_matmul_batch(const ir_graph *m, const int32_t *k,
                                     base_diag *d) {
  const ir_node *n1 = &m->nodes[k[0]], *n2 = &m->nodes[k[1]];
  const ir_shape *b1 = &m->tensors[n1->in[1]].shape,
                 *a1 = &m->tensors[n1->in[0]].shape;
  if (k[0] == k[1])
    return refuse(d, m, k[0], "matmul-batch needs two matmuls");
  if (b1->rank != 2 || a1->rank < 2 || n1->nin > 3 || n1->nin != n2->nin ||
      memcmp(&n1->a, &n2->a, sizeof n1->a) ||
      !ir_shape_eq(a1, &m->tensors[n2->in[0]].shape) ||
      !ir_shape_eq(b1, &m->tensors[n2->in[1]].shape))
    return refuse(d, m, k[0],
                  "matmul-batch needs two matmuls of the same shapes and "
                  "parameters with rank-2 right-hand sides and no residual");
  if (n1->nin == 3 && n1->a.act != IR_ACT_NONE)
    return refuse(d, m, k[0],
                  "matmul-batch: an activation after a bias has no place in "
                  "the batched form");
  int ind = independent(m, k);
  if (ind < 0)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return ind ? BASE_OK
             : refuse(d, m, k[0],
                      "matmul-batch: one matmul depends on the other");
}

static base_status fits(mutant_class cls, const ir_graph *m,
                        const int32_t *nodes, base_diag *d) {
  switch (cls) {
  case MUTANT_SPLIT_H: return fits_split_h(m, nodes[0], 0, d);
  case MUTANT_PAD_SPLIT_H: return fits_split_h(m, nodes[0], 1, d);
  case MUTANT_DILATED: return fits_dilated(m, nodes[0], d);
  case MUTANT_BATCH_W: return fits_batch_w(m, nodes[0], d);
  case MUTANT_GROUP_MERGE: return fits_group_merge(m, nodes, d);
  case MUTANT_MATMUL_BATCH: return fits_matmul_batch(m, nodes, d);
  case MUTANT_CONCAT_W:
  case MUTANT_NCLASSES: break;
  }
  return fits_concat_w(m, nodes, d);
}

/* g's outputs for class cls (0, or -1 with d set). */
static int build_g(mutant_class cls, const ir_graph *m, const int32_t *nodes,
                   ir_graph *g, base_diag *d) {
  int y = -1;
  switch (cls) {
  case MUTANT_SPLIT_H: y = build_split_h(m, nodes[0], 0, g, d); break;
  case MUTANT_PAD_SPLIT_H: y = build_split_h(m, nodes[0], 1, g, d); break;
  case MUTANT_DILATED: y = build_dilated(m, nodes[0], g, d); break;
  case MUTANT_BATCH_W: y = build_batch_w(m, nodes[0], g, d); break;
  case MUTANT_GROUP_MERGE: return build_group_merge(m, nodes, g, d);
  case MUTANT_MATMUL_BATCH: return build_matmul_batch(m, nodes, g, d);
  case MUTANT_CONCAT_W:
  case MUTANT_NCLASSES: return build_concat_w(m, nodes, g, d);
  }
  return y < 0 || ir_add_output(g, y, d) ? -1 : 0;
}

/* ---- public -------------------------------------------------------------- */

base_status mutant_make(mutant_class cls, const ir_graph *model,
                        const int32_t *nodes, mutant *out, base_diag *d) {
  memset(out, 0, sizeof *out);
  if ((unsigned)cls >= MUTANT_NCLASSES)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "mutant: no class %d", cls);
  int n = mutant_class_nodes(cls), mm = cls == MUTANT_MATMUL_BATCH;
  for (int i = 0; i < n; i++)
    if (mm ? !is_matmul(model, nodes[i]) : !is_conv(model, nodes[i]))
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "mutant: node %d is not a %s", nodes[i],
                           mm ? "matmul" : "conv2d");
  base_status st = fits(cls, model, nodes, d);
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
  if (build_g(cls, model, nodes, g, d)) {
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

/* The pair of node k with the first later node j that class cls fits
 * (is_op: conv2d or matmul), tried. */
static base_status try_pair(mutant_class c, const ir_graph *model, int k,
                            int (*is_op)(const ir_graph *, int),
                            mutant_list *out, mutant_site_fn want, void *u,
                            base_diag *d) {
  base_diag quiet;
  for (int j = k + 1; j < model->nnodes; j++) {
    int32_t two[2] = {k, j};
    if (!is_op(model, j))
      continue;
    base_status st = fits(c, model, two, &quiet);
    if (st == BASE_ERR_NOMEM)
      return base_diag_set(d, st, 0, 0, "out of memory");
    if (!st)
      return try_site(c, model, two, out, want, u, d);
  }
  return BASE_OK;
}

base_status mutant_generate_sites(const ir_graph *model, unsigned mask,
                                  mutant_site_fn want, void *u,
                                  mutant_list *out, base_diag *d) {
  static const mutant_class ones[] = {MUTANT_SPLIT_H, MUTANT_DILATED,
                                      MUTANT_BATCH_W, MUTANT_PAD_SPLIT_H};
  base_status st = BASE_OK;
  for (int k = 0; !st && k < model->nnodes; k++) {
    if (is_matmul(model, k) && mask & 1u << MUTANT_MATMUL_BATCH)
      st = try_pair(MUTANT_MATMUL_BATCH, model, k, is_matmul, out, want, u, d);
    if (!is_conv(model, k))
      continue;
    int32_t one[1] = {k};
    for (size_t i = 0; !st && i < sizeof ones / sizeof *ones; i++)
      if (mask & 1u << ones[i])
        st = try_site(ones[i], model, one, out, want, u, d);
    if (!st && mask & 1u << MUTANT_CONCAT_W)
      st = try_pair(MUTANT_CONCAT_W, model, k, is_conv, out, want, u, d);
    if (!st && mask & 1u << MUTANT_GROUP_MERGE)
      st = try_pair(MUTANT_GROUP_MERGE, model, k, is_conv, out, want, u, d);
  }
  return st;
}
