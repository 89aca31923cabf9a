/* rewrite.c: replacing a match of a pattern by a rule's other side.
 *
 * The replacement is first typed on the graph's shapes: its inputs are the
 * tensors the match bound, shape-dependent parameters (those ops.def marks
 * '~' or '#': split sizes, const_* and reshape shapes, enlarge's kernel)
 * are translated
 * through the "dimension map" from the pattern's dimensions to the bound
 * tensors' dimensions, and ir_infer must accept every node. Its outputs must
 * have the replaced tensors' exact shapes. The new graph is then the kept nodes
 * plus the replacement, put in topological order by a depth-first walk from the
 * outputs: unreachable nodes drop out, and meeting a node twice on the walk's
 * path is a cycle. A probe (rewrite_apply_probe) does the same up to the
 * ordering, then computes the result's Merkle hash and cost from the parent's
 * instead of building it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite_int.h"

enum { DM_MAX = REWRITE_MAX_PTENSORS * IR_MAX_RANK };

typedef struct rw {
  const ir_graph *g, *pat, *repl;
  const rewrite_match *m;
  base_diag *d;
  int G, N;                             /* g's tensors and nodes */
  int32_t rbound[REWRITE_MAX_PTENSORS]; /* repl input -> g tensor */
  ir_shape rshape[REWRITE_MAX_PTENSORS];
  ir_attrs rattrs[REWRITE_MAX_PNODES];
  int32_t *subst;   /* g tensor -> unified id (>= G: repl tensor - G) */
  uint8_t *matched; /* g node is part of the match */
  int64_t dm_from[DM_MAX], dm_to[DM_MAX];
  int ndm;
} rw;

static void dm_add(rw *r, int64_t from, int64_t to) {
  for (int i = 0; i < r->ndm; i++)
    if (r->dm_from[i] == from) {
      if (r->dm_to[i] != to)
        r->dm_to[i] = -1; /* ambiguous */
      return;
    }
  r->dm_from[r->ndm] = from;
  r->dm_to[r->ndm++] = to;
}

/* The graph's dimension for pattern dimension v; v when unknown, -1 when
 * ambiguous. */
static int64_t dm_get(const rw *r, int64_t v) {
  for (int i = 0; i < r->ndm; i++)
    if (r->dm_from[i] == v)
      return r->dm_to[i];
  return v;
}

static void dm_build(rw *r) {
  for (int p = 0; p < r->pat->ntensors; p++) {
    int t = r->m->tensor[p];
    if (t < 0)
      continue;
    const ir_shape *a = &r->pat->tensors[p].shape, *b = &r->g->tensors[t].shape;
    for (int k = 0; k < a->rank && k < b->rank; k++)
      dm_add(r, a->dim[k], b->dim[k]);
  }
}

static const ir_shape *rshape_of(const rw *r, int t) {
  return r->repl->tensors[t].kind == IR_T_VALUE
             ? &r->rshape[t]
             : &r->g->tensors[r->rbound[t]].shape;
}

/* Index of repl tensor t among repl's outputs, or -1. */
static int repl_output_index(const rw *r, int t) {
  for (int i = 0; i < r->repl->noutputs; i++)
    if (r->repl->outputs[i] == t)
      return i;
  return -1;
}

static base_status map_list(rw *r, int64_t *list, int n) {
  for (int i = 0; i < n; i++) {
    if (list[i] < 0)
      continue;
    int64_t v = dm_get(r, list[i]);
    if (v < 0)
      return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0,
                           "pattern dimension %lld binds several sizes",
                           (long long)list[i]);
    list[i] = v;
  }
  return BASE_OK;
}

/* Pattern conv2d node i's filter (input 1, rank 4) and the graph filter
 * it binds: 1, else 0. */
static int bound_filter(const rw *r, int i, const ir_shape **a,
                        const ir_shape **b) {
  const ir_node *n = &r->pat->nodes[i];
  int t = n->op == IR_OP_CONV2D ? r->m->tensor[n->in[1]] : -1;
  if (t < 0 || r->pat->tensors[n->in[1]].shape.rank != 4)
    return 0;
  *a = &r->pat->tensors[n->in[1]].shape;
  *b = &r->g->tensors[t].shape;
  return (*b)->rank == 4;
}

/* A kernel (enlarge's, ops.def's '#' on a pair) on the matched filters:
 * a rule's enlarge to the kernel of its 3x3 filters (kernel=[3,3])
 * enlarges to the kernel of the graph filters bound to those (kept [3,3]:
 * r06449 on two 1x1 convolutions added a 1x1 filter to another enlarged to
 * 3x3, by broadcasting: wrong). A kernel no pattern filter has stays (a
 * merge of a 1x3 and a 3x1 filter enlarges both to 3x3); one whose filters
 * bind several kernels is an error (the match is refused). */
static base_status map_kernel(rw *r, int32_t *kernel) {
  const ir_shape *a, *b;
  int64_t got[2] = {kernel[0], kernel[1]};
  int found = 0;
  for (int i = 0; i < r->pat->nnodes; i++) {
    if (!bound_filter(r, i, &a, &b) || a->dim[2] != kernel[0] ||
        a->dim[3] != kernel[1])
      continue;
    if (found && (got[0] != b->dim[2] || got[1] != b->dim[3]))
      return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0,
                           "pattern kernel [%d,%d] binds several kernels",
                           (int)kernel[0], (int)kernel[1]);
    got[0] = b->dim[2], got[1] = b->dim[3], found = 1;
  }
  if (got[0] > INT32_MAX || got[1] > INT32_MAX)
    return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0, "kernel too large");
  kernel[0] = (int32_t)got[0], kernel[1] = (int32_t)got[1];
  return BASE_OK;
}

/* A reshape's shape through the dimension map; one entry whose pattern
 * dimension binds several sizes becomes -1, which ir_infer derives from the
 * input's element count (the only size the other entries leave it). A rule
 * written on one small size for two dimensions (a batchnorm fold's [1,C]
 * on [C,C] filters) then types on a filter of C_out != C_in. */
static base_status map_reshape(rw *r, ir_attrs *a) {
  int infer = -1;
  for (int i = 0; i < a->nlist; i++) {
    int64_t v = a->list[i] < 0 ? a->list[i] : dm_get(r, a->list[i]);
    if (v < 0 && a->list[i] >= 0 && infer < 0)
      infer = i;
    else if (v < 0)
      return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0,
                           "pattern dimension %lld binds several sizes",
                           (long long)a->list[i]);
    a->list[i] = v;
  }
  return BASE_OK;
}

/* Split sizes from the replaced tensors where the outputs are replacement
 * outputs, else through the dimension map. */
static base_status split_sizes(rw *r, const ir_node *n, ir_attrs *a) {
  for (int o = 0; o < n->nout && o < a->nlist; o++) {
    int i = repl_output_index(r, n->out[o]);
    int gt = i >= 0 ? r->m->tensor[r->pat->outputs[i]] : -1;
    const ir_shape *s = gt >= 0 ? &r->g->tensors[gt].shape : NULL;
    if (s && a->axis < s->rank) {
      a->list[o] = s->dim[a->axis];
      continue;
    }
    base_status st = map_list(r, &a->list[o], 1);
    if (st)
      return st;
  }
  return BASE_OK;
}

/* An attention's row layout (heads=, cols=, hdim=: sizes of the rows it
 * reads, which shape inference checks but ops.def cannot mark, heads being
 * an integer) through the dimension map: the twelfth tier's rules write
 * it on their own small sizes (docs/generation.md). A column offset that
 * is a multiple of H*D (q, k and v of a packed projection) stays that
 * multiple of the graph's H*D. */
static base_status map_rows(rw *r, ir_attrs *a) {
  int64_t h = a->groups, unit = a->nlist2 ? a->groups * a->list2[0] : 0;
  int64_t k[IR_MAX_LIST]; /* each column offset in units of H*D (a packed
                             QKV's q, k and v), else -1 */
  for (int i = 0; i < a->nlist; i++)
    k[i] = unit > 0 && a->list[i] % unit == 0 ? a->list[i] / unit : -1;
  base_status st = map_list(r, &h, 1);
  if (!st && h > INT32_MAX)
    return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0, "heads too large");
  a->groups = (int32_t)h;
  if (!st)
    st = map_list(r, a->list2, a->nlist2);
  for (int i = 0; !st && i < a->nlist; i++)
    if (k[i] >= 0)
      a->list[i] = k[i] * a->groups * a->list2[0];
    else
      st = map_list(r, &a->list[i], 1);
  return st;
}

/* Re-derives the parameters that follow shapes (ops.def's '~' and '#'
 * marks) on the matched shapes. */
static base_status fix_params(rw *r, const ir_node *n, ir_attrs *a) {
  const ir_opinfo *ri = ir_op(n->op);
  if (n->op == IR_OP_ATTENTION && a->groups > 0) {
    base_status st = map_rows(r, a);
    if (st)
      return st;
  }
  for (int i = 0; i < ri->nparams; i++) {
    ir_param_id p = ri->params[i];
    base_status st = BASE_OK;
    if (!(ri->ptraits[i] & (IR_PT_DERIVED | IR_PT_DIMS)))
      continue;
    if (p == IR_P_SIZES && (ri->ptraits[i] & IR_PT_DERIVED))
      st = split_sizes(r, n, a); /* one size per output, along axis */
    else if (n->op == IR_OP_RESHAPE && ir_param_kind_of(p) == IR_PK_LIST)
      st = map_reshape(r, a);
    else if (ir_param_kind_of(p) == IR_PK_LIST)
      st = map_list(r, a->list, a->nlist);
    else if (ir_param_kind_of(p) == IR_PK_LIST2)
      st = map_list(r, a->list2, a->nlist2);
    else if (ir_param_kind_of(p) == IR_PK_PAIR)
      st = map_kernel(r, (int32_t *)(void *)((char *)a + ri->poff[i]));
    if (st)
      return st;
  }
  return BASE_OK;
}

/* Types the replacement on the graph's shapes. */
static base_status type_repl(rw *r) {
  const ir_graph *repl = r->repl;
  for (int t = 0; t < repl->ntensors; t++) {
    if (repl->tensors[t].kind == IR_T_VALUE)
      continue;
    int p = ir_find_tensor(r->pat, repl->tensors[t].name);
    if (p < 0 || (r->rbound[t] = r->m->tensor[p]) < 0)
      return base_diag_set(r->d, BASE_ERR_PARAM, 0, 0,
                           "replacement input '%s' is not bound by the match",
                           repl->tensors[t].name);
  }
  for (int i = 0; i < repl->nnodes; i++) {
    const ir_node *n = &repl->nodes[i];
    const ir_shape *ins[IR_MAX_IN];
    ir_shape outs[IR_MAX_LIST];
    for (int k = 0; k < n->nin; k++)
      ins[k] = rshape_of(r, n->in[k]);
    r->rattrs[i] = n->a;
    base_status st = fix_params(r, n, &r->rattrs[i]);
    if (!st)
      st = ir_infer(n->op, &r->rattrs[i], ins, n->nin, outs, r->d);
    if (st)
      return st;
    const ir_shape *rs[IR_MAX_IN]; /* the rule's own shapes */
    for (int k = 0; k < n->nin; k++)
      rs[k] = &repl->tensors[n->in[k]].shape;
    if (!rewrite_bcast_alike(n->op, rs, ins, n->nin))
      return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0,
                           "%s's operands would broadcast otherwise than the "
                           "rule's (not proven so)",
                           ir_op(n->op)->name);
    if (ir_op_nout(n->op, &r->rattrs[i]) != n->nout)
      return base_diag_set(r->d, BASE_ERR_SHAPE, 0, 0, "split arity changed");
    for (int o = 0; o < n->nout; o++)
      r->rshape[n->out[o]] = outs[o];
  }
  return BASE_OK;
}

/* Replacement outputs take the place of the replaced tensors. */
static base_status substitute(rw *r) {
  char b1[64], b2[64];
  for (int t = 0; t < r->G; t++)
    r->subst[t] = t;
  for (int i = 0; i < r->pat->noutputs; i++) {
    int gt = r->m->tensor[r->pat->outputs[i]];
    int rt = r->repl->outputs[i];
    const ir_shape *s = rshape_of(r, rt);
    if (gt < 0)
      return base_diag_set(r->d, BASE_ERR_PARAM, 0, 0,
                           "unbound pattern output");
    if (!ir_shape_eq(s, &r->g->tensors[gt].shape))
      return base_diag_set(
          r->d, BASE_ERR_SHAPE, 0, 0,
          "replacement output %d is %s, replaced tensor %s", i,
          ir_shape_str(s, b1, sizeof b1),
          ir_shape_str(&r->g->tensors[gt].shape, b2, sizeof b2));
    r->subst[gt] =
        r->repl->tensors[rt].kind == IR_T_VALUE ? r->G + rt : r->rbound[rt];
  }
  for (int i = 0; i < r->pat->nnodes; i++)
    r->matched[r->m->node[i]] = 1;
  return BASE_OK;
}

/* ---- rule instances
 * ---------------------------------------------------------- */

static int32_t map_get(const int32_t *from, const int32_t *to, int n,
                       int32_t v) {
  for (int i = 0; i < n; i++)
    if (from[i] == v)
      return to[i];
  return v;
}

/* The instance's parameters on a replacement node of op (e's maps): a
 * batchnorm's eps, else a convolution's stride, groups and explicit pads. */
static void edit_params(const rewrite_edits *e, ir_opcode op, ir_attrs *a) {
  if (op == IR_OP_BATCHNORM) {
    int32_t b =
        map_get(e->eps_from, e->eps_to, e->neps, (int32_t)ir_f32_bits(a->eps));
    memcpy(&a->eps, &b, sizeof b);
    return;
  }
  a->stride[0] = map_get(e->sh_from, e->sh_to, e->nsh, a->stride[0]);
  a->stride[1] = map_get(e->sw_from, e->sw_to, e->nsw, a->stride[1]);
  a->groups = map_get(e->groups_from, e->groups_to, e->ngroups, a->groups);
  for (int i = 0; i < e->npad && a->padmode == IR_PAD_EXPLICIT; i++)
    if (!memcmp(e->pad_from[i], a->pad, sizeof a->pad)) {
      memcpy(a->pad, e->pad_to[i], sizeof a->pad);
      break;
    }
}

/* Adds the bias term of e to h; returns its tensor or -1. */
static int inst_bias(ir_graph *h, const rewrite_edits *e, base_diag *d) {
  int b[2];
  int n = e->bias_kind == REWRITE_BIAS_ONE ? 1 : 2;
  for (int i = 0; i < n; i++)
    if ((b[i] = ir_add_tensor(h, e->bias_name[i], IR_T_WEIGHT,
                              &e->bias_shape[i], d)) < 0)
      return -1;
  if (n == 1)
    return b[0];
  ir_attrs a;
  ir_opcode op = e->bias_kind == REWRITE_BIAS_SUM ? IR_OP_EWADD : IR_OP_CONCAT;
  ir_attrs_default(op, &a);
  a.axis = 0;
  const char *name[1] = {"__bias"};
  int k = ir_add_node(h, op, b, 2, &a, name, d);
  return k < 0 ? -1 : h->nodes[k].out[0];
}

/* Whether repl tensor t is read by a node of repl. */
static int repl_reads(const ir_graph *repl, int t) {
  for (int i = 0; i < repl->nnodes; i++)
    for (int k = 0; k < repl->nodes[i].nin; k++)
      if (repl->nodes[i].in[k] == t)
        return 1;
  return 0;
}

static ir_graph *type_instance(rw *r, const rewrite_edits *e) {
  const ir_graph *repl = r->repl;
  int32_t map[REWRITE_MAX_PTENSORS];
  int fused[REWRITE_MAX_PTENSORS] = {0}; /* outputs whose act is fused */
  ir_graph *h = ir_graph_new("instance");
  if (!h) {
    base_diag_set(r->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  for (int t = 0; t < repl->ntensors; t++) {
    if (repl->tensors[t].kind == IR_T_VALUE)
      continue;
    int p = ir_find_tensor(r->pat, repl->tensors[t].name);
    int gt = p < 0 ? -1 : r->m->tensor[p];
    if (gt < 0) {
      base_diag_set(r->d, BASE_ERR_PARAM, 0, 0, "replacement input unbound");
      goto fail;
    }
    if ((map[t] =
             ir_add_tensor(h, repl->tensors[t].name, r->pat->tensors[p].kind,
                           &r->g->tensors[gt].shape, r->d)) < 0)
      goto fail;
    h->tensors[map[t]].has_value = r->pat->tensors[p].has_value; /* as src' */
    h->tensors[map[t]].value = r->pat->tensors[p].value;
  }
  int bias = -1;
  if (e->bias_node >= 0 && (bias = inst_bias(h, e, r->d)) < 0)
    goto fail;
  for (int i = 0; i < repl->nnodes; i++) {
    const ir_node *n = &repl->nodes[i];
    ir_attrs a = n->a;
    int32_t in[IR_MAX_IN];
    const char *np[IR_MAX_LIST];
    if (fix_params(r, n, &a))
      goto fail;
    for (int k = 0; k < n->nin; k++)
      in[k] = map[n->in[k]];
    int nin = n->nin;
    if (ir_op(n->op)->traits & IR_PT_INST)
      edit_params(e, n->op, &a);
    if (i == e->bias_node) {
      if (ir_op(n->op)->inst_in != nin) {
        base_diag_set(r->d, BASE_ERR_PARAM, 0, 0, "no bias slot");
        goto fail;
      }
      in[nin++] = bias;
    }
    for (int o = 0; o < repl->noutputs; o++) /* fuse an output activation */
      if (e->act[o] && n->nout == 1 && repl->outputs[o] == n->out[0] &&
          (ir_op(n->op)->flags & IR_OPF_ACT_PARAM) && a.act == IR_ACT_NONE &&
          !repl_reads(repl, n->out[0])) {
        a.act = e->act[o];
        fused[o] = 1;
      }
    for (int o = 0; o < n->nout; o++)
      np[o] = repl->tensors[n->out[o]].name;
    int k = ir_add_node(h, n->op, in, nin, &a, np, r->d);
    if (k < 0)
      goto fail;
    for (int o = 0; o < n->nout; o++)
      map[n->out[o]] = h->nodes[k].out[o];
  }
  for (int o = 0; o < repl->noutputs; o++) {
    int t = map[repl->outputs[o]];
    if (e->act[o] && !fused[o]) {
      ir_attrs a;
      int op = ir_act_op((ir_act)e->act[o]);
      char name[32];
      snprintf(name, sizeof name, "__act%d", o);
      const char *np[1] = {name};
      if (op < 0)
        goto fail;
      ir_attrs_default((ir_opcode)op, &a);
      int k = ir_add_node(h, (ir_opcode)op, &t, 1, &a, np, r->d);
      if (k < 0)
        goto fail;
      t = h->nodes[k].out[0];
    }
    if (ir_add_output(h, t, r->d))
      goto fail;
  }
  return h;
fail:
  ir_graph_free(h);
  return NULL;
}

ir_graph *rewrite_type_instance(const ir_graph *g, const ir_graph *pat,
                                const ir_graph *repl, const rewrite_match *m,
                                const rewrite_edits *e, base_diag *d) {
  if (repl->nnodes > REWRITE_MAX_PNODES ||
      repl->ntensors > REWRITE_MAX_PTENSORS ||
      pat->noutputs != repl->noutputs) {
    base_diag_set(d, BASE_ERR_PARAM, 0, 0, "replacement too large");
    return NULL;
  }
  rw *r = base_calloc(1, sizeof *r);
  if (!r) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  *r = (rw){.g = g, .pat = pat, .repl = repl, .m = m, .d = d};
  dm_build(r);
  ir_graph *h = type_instance(r, e);
  free(r);
  return h;
}

/* ---- ordering
 * ---------------------------------------------------------------- */

/* Items: g's nodes 0..N-1 (matched ones unused) and repl's nodes N.. */
static int item_nin(const rw *r, int it) {
  return it < r->N ? r->g->nodes[it].nin : r->repl->nodes[it - r->N].nin;
}

/* Unified id read by input k of item it. */
static int item_in(const rw *r, int it, int k) {
  if (it < r->N)
    return r->subst[r->g->nodes[it].in[k]];
  int t = r->repl->nodes[it - r->N].in[k];
  return r->repl->tensors[t].kind == IR_T_VALUE ? r->G + t : r->rbound[t];
}

/* Producing item of a unified id; -1 for inputs and weights, -2 for a
 * tensor of a removed node (a bug: the match left an intermediate used). */
static int producer(const rw *r, int u) {
  if (u >= r->G)
    return r->N + r->repl->tensors[u - r->G].node;
  const ir_tensor *t = &r->g->tensors[u];
  if (t->kind != IR_T_VALUE)
    return -1;
  return r->matched[t->node] ? -2 : t->node;
}

typedef struct walk {
  int32_t *state; /* 0 new, 1 on the path, 2 done */
  int32_t *stack, *next;
  int32_t *order;
  int norder;
} walk;

/* Depth-first post-order from item root. */
static base_status visit(rw *r, walk *w, int root) {
  int sp = 0;
  w->stack[sp] = root;
  w->next[sp++] = 0;
  w->state[root] = 1;
  while (sp) {
    int it = w->stack[sp - 1], k = w->next[sp - 1]++;
    if (k == item_nin(r, it)) {
      w->state[it] = 2;
      w->order[w->norder++] = it;
      sp--;
      continue;
    }
    int p = producer(r, item_in(r, it, k));
    if (p == -2)
      return base_diag_set(r->d, BASE_ERR_INTERNAL, 0, 0,
                           "intermediate escaped");
    if (p < 0 || w->state[p] == 2)
      continue;
    if (w->state[p] == 1)
      return base_diag_set(r->d, BASE_ERR_CYCLE, 0, 0, "rewrite makes a cycle");
    w->state[p] = 1;
    w->stack[sp] = p;
    w->next[sp++] = 0;
  }
  return BASE_OK;
}

static base_status order_items(rw *r, walk *w) {
  for (int i = 0; i < r->g->noutputs; i++) {
    int p = producer(r, r->subst[r->g->outputs[i]]);
    if (p == -2)
      return base_diag_set(r->d, BASE_ERR_INTERNAL, 0, 0, "output escaped");
    if (p >= 0 && w->state[p] == 0) {
      base_status st = visit(r, w, p);
      if (st)
        return st;
    }
  }
  return BASE_OK;
}

/* ---- building
 * ------------------------------------------------------------------ */

static int hmap(const rw *r, const rewrite_builder *b, const int32_t *rmap,
                int u) {
  return u >= r->G ? rmap[u - r->G] : b->map[u];
}

static int emit_kept(rw *r, rewrite_builder *b, const int32_t *rmap, int i) {
  const ir_node *n = &r->g->nodes[i];
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    in[k] = hmap(r, b, rmap, r->subst[n->in[k]]);
  for (int o = 0; o < n->nout; o++)
    names[o] = r->g->tensors[n->out[o]].name;
  int k = ir_add_node(b->h, n->op, in, n->nin, &n->a, names, r->d);
  for (int o = 0; k >= 0 && o < n->nout; o++)
    b->map[n->out[o]] = b->h->nodes[k].out[o];
  return k;
}

/* Name for repl tensor t: the replaced tensor's, else a fresh one. */
static void repl_name(rw *r, rewrite_builder *b, int t, char *buf, size_t n) {
  for (int i = 0; i < r->pat->noutputs; i++)
    if (r->repl->outputs[i] == t) {
      const char *s = r->g->tensors[r->m->tensor[r->pat->outputs[i]]].name;
      if (ir_find_tensor(b->h, s) < 0) {
        snprintf(buf, n, "%s", s);
        return;
      }
    }
  rewrite_fresh_name(r->g, b->h, r->repl->tensors[t].name, &b->fresh, buf, n);
}

static int emit_repl(rw *r, rewrite_builder *b, int32_t *rmap, int j) {
  const ir_node *n = &r->repl->nodes[j];
  int32_t in[IR_MAX_IN];
  char names[IR_MAX_LIST][256];
  const char *np[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    in[k] = hmap(r, b, rmap, item_in(r, r->N + j, k));
  for (int o = 0; o < n->nout; o++) {
    repl_name(r, b, n->out[o], names[o], sizeof names[o]);
    np[o] = names[o];
  }
  int k = ir_add_node(b->h, n->op, in, n->nin, &r->rattrs[j], np, r->d);
  for (int o = 0; k >= 0 && o < n->nout; o++)
    rmap[n->out[o]] = b->h->nodes[k].out[o];
  return k;
}

static void mark_used(const rw *r, const walk *w, uint8_t *used) {
  for (int i = 0; i < w->norder; i++)
    for (int k = 0; k < item_nin(r, w->order[i]); k++) {
      int u = item_in(r, w->order[i], k);
      if (u < r->G)
        used[u] = 1;
    }
  for (int i = 0; i < r->g->noutputs; i++)
    if (r->subst[r->g->outputs[i]] < r->G)
      used[r->subst[r->g->outputs[i]]] = 1;
}

static ir_graph *emit(rw *r, const walk *w, uint8_t *used) {
  rewrite_builder b;
  int32_t rmap[REWRITE_MAX_PTENSORS];
  mark_used(r, w, used);
  if (rewrite_build_begin(&b, r->g, used, r->d))
    return NULL;
  b.fresh = r->G;
  for (int i = 0; i < w->norder; i++) {
    int it = w->order[i];
    int k = it < r->N ? emit_kept(r, &b, rmap, it)
                      : emit_repl(r, &b, rmap, it - r->N);
    if (k < 0) {
      rewrite_build_abort(&b);
      return NULL;
    }
  }
  for (int i = 0; i < r->g->noutputs; i++)
    if (ir_add_output(b.h, hmap(r, &b, rmap, r->subst[r->g->outputs[i]]),
                      r->d)) {
      rewrite_build_abort(&b);
      return NULL;
    }
  ir_graph *h = b.h;
  b.h = NULL;
  rewrite_build_abort(&b);
  return h;
}

/* ---- preparing (typing, substitution, order) --------------------------------
 */

/* A rewrite's state with its arrays. */
typedef struct rwall {
  rw *r;
  walk w;
  uint8_t *used;
} rwall;

static void rw_release(rwall *a) {
  if (a->r) {
    free(a->r->subst);
    free(a->r->matched);
  }
  free(a->r);
  free(a->w.state);
  free(a->w.stack);
  free(a->used);
}

/* Types the replacement, substitutes and orders the result's items; BASE_OK
 * or the reason the rewrite fails. */
static base_status rw_prepare(rwall *a, const ir_graph *g, const ir_graph *pat,
                              const ir_graph *repl, const rewrite_match *m,
                              base_diag *d) {
  memset(a, 0, sizeof *a);
  /* a replacement may have no operator (x op identity -> x) */
  if (rewrite_pattern_ok(pat, d))
    return d ? d->code : BASE_ERR_PARAM;
  if (repl->nnodes > REWRITE_MAX_PNODES ||
      repl->ntensors > REWRITE_MAX_PTENSORS || pat->noutputs != repl->noutputs)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "replacement too large or with %d outputs for %d",
                         repl->noutputs, pat->noutputs);
  int items = g->nnodes + repl->nnodes;
  a->r = base_calloc(1, sizeof *a->r);
  if (a->r) {
    a->r->subst = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
    a->r->matched = base_calloc((size_t)g->nnodes + 1, 1);
    a->w.state = base_calloc((size_t)items + 1, sizeof(int32_t));
    a->w.stack = base_malloc(sizeof(int32_t) * 4 * ((size_t)items + 1));
  }
  a->used = base_calloc((size_t)g->ntensors + 1, 1);
  if (!a->r || !a->r->subst || !a->r->matched || !a->w.state || !a->w.stack ||
      !a->used)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  a->w.next = a->w.stack + items + 1;
  a->w.order = a->w.next + items + 1;
  rw *r = a->r;
  *r = (rw){.g = g,
            .pat = pat,
            .repl = repl,
            .m = m,
            .d = d,
            .G = g->ntensors,
            .N = g->nnodes,
            .subst = r->subst,
            .matched = r->matched};
  dm_build(r);
  base_status st = type_repl(r);
  if (!st)
    st = substitute(r);
  if (!st)
    st = order_items(r, &a->w);
  return st;
}

ir_graph *rewrite_apply(const ir_graph *g, const ir_graph *pat,
                        const ir_graph *repl, const rewrite_match *m,
                        base_diag *d) {
  rwall a;
  ir_graph *h = NULL;
  if (!rw_prepare(&a, g, pat, repl, m, d))
    h = emit(a.r, &a.w, a.used);
  rw_release(&a);
  return h;
}

/* ---- probing
 * -----------------------------------------------------------------
 */

typedef struct probe_acc {
  rewrite_gsum *s;
  const rw *r;
  uint64_t rh[REWRITE_MAX_PTENSORS];   /* hashes of repl's value tensors */
  uint8_t *iwo;                        /* items: weight-only in the result */
  int need[REWRITE_MAX_PNODES], nneed; /* repl nodes to cost */
  base_status st;                      /* the first cost function error */
  base_diag *d;                        /* and its message */
} probe_acc;

static uint64_t unified_hash(const probe_acc *p, int u) {
  return u >= p->r->G ? p->rh[u - p->r->G] : p->s->nh[u];
}

static int unified_wo(const probe_acc *p, int u) {
  const rw *r = p->r;
  if (u >= r->G)
    return p->iwo[r->N + r->repl->tensors[u - r->G].node];
  const ir_tensor *t = &r->g->tensors[u];
  return t->kind == IR_T_WEIGHT || (t->kind == IR_T_VALUE && p->iwo[t->node]);
}

/* Hashes item it of the result and adds its cost (repl nodes: later). */
static void probe_item(probe_acc *p, int it, double *cost, int *est) {
  const rw *r = p->r;
  uint64_t in[IR_MAX_IN];
  int n = item_nin(r, it), wo = 1, same = it < r->N;
  for (int k = 0; k < n; k++) {
    int u = item_in(r, it, k);
    in[k] = unified_hash(p, u);
    wo &= unified_wo(p, u);
    if (same)
      same = u < r->G && in[k] == p->s->th[r->g->nodes[it].in[k]];
  }
  p->iwo[it] = (uint8_t)wo;
  if (it < r->N) {
    const ir_node *nd = &r->g->nodes[it];
    for (int o = 0; !same && o < nd->nout; o++)
      p->s->nh[nd->out[o]] = rewrite_out_hash(nd->op, &nd->a, in, n, o);
    if (!wo && !p->st)
      p->st = rewrite_gsum_node_cost(p->s, it, cost, est, p->d);
    return;
  }
  int j = it - r->N;
  const ir_node *nd = &r->repl->nodes[j];
  for (int o = 0; o < nd->nout; o++)
    p->rh[nd->out[o]] = rewrite_out_hash(nd->op, &r->rattrs[j], in, n, o);
  if (!wo)
    p->need[p->nneed++] = j;
}

/* Costs the replacement nodes p->need on a graph of the replacement alone
 * (typed on the bound shapes). */
static base_status probe_repl_cost(probe_acc *p, double *cost, int *est,
                                   base_diag *d) {
  const rw *r = p->r;
  const ir_graph *repl = r->repl;
  ir_graph *h = ir_graph_new("probe");
  int32_t map[REWRITE_MAX_PTENSORS];
  base_status st = h ? BASE_OK : BASE_ERR_NOMEM;
  for (int t = 0; !st && t < repl->ntensors; t++)
    if (repl->tensors[t].kind != IR_T_VALUE &&
        (map[t] = ir_add_tensor(h, repl->tensors[t].name, IR_T_INPUT,
                                rshape_of(r, t), d)) < 0)
      st = d ? d->code : BASE_ERR_INTERNAL;
  for (int j = 0; !st && j < repl->nnodes; j++) {
    const ir_node *n = &repl->nodes[j];
    int32_t in[IR_MAX_IN];
    const char *np[IR_MAX_LIST];
    for (int k = 0; k < n->nin; k++)
      in[k] = map[n->in[k]];
    for (int o = 0; o < n->nout; o++)
      np[o] = repl->tensors[n->out[o]].name;
    int k = ir_add_node(h, n->op, in, n->nin, &r->rattrs[j], np, d);
    if (k < 0)
      st = d ? d->code : BASE_ERR_INTERNAL;
    for (int o = 0; !st && o < n->nout; o++)
      map[n->out[o]] = h->nodes[k].out[o];
  }
  for (int i = 0; !st && i < p->nneed; i++) {
    int e = 0;
    double c = 0;
    st = p->s->f(p->s->u, h, p->need[i], &c, &e, d);
    *cost += c;
    *est |= e;
  }
  ir_graph_free(h);
  return st == BASE_ERR_NOMEM ? base_diag_set(d, st, 0, 0, "out of memory")
                              : st;
}

base_status rewrite_apply_probe(rewrite_gsum *s, const ir_graph *pat,
                                const ir_graph *repl, const rewrite_match *m,
                                rewrite_probe *out, base_diag *d) {
  rwall a;
  const ir_graph *g = s->g;
  base_status st = rw_prepare(&a, g, pat, repl, m, d);
  if (!st) {
    probe_acc p = {.s = s, .r = a.r, .iwo = s->cwo, .d = d};
    double cost = 0;
    int est = 0;
    memcpy(s->nh, s->th, sizeof(uint64_t) * (size_t)g->ntensors);
    for (int i = 0; i < a.w.norder; i++)
      probe_item(&p, a.w.order[i], &cost, &est);
    st = p.st;
    if (!st && p.nneed)
      st = probe_repl_cost(&p, &cost, &est, d);
    uint64_t oh[256], *o = g->noutputs <= 256 ? oh : NULL;
    if (!st && !o && !(o = base_malloc(sizeof(uint64_t) * (size_t)g->noutputs)))
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    for (int i = 0; !st && i < g->noutputs; i++)
      o[i] = unified_hash(&p, a.r->subst[g->outputs[i]]);
    if (!st)
      *out = (rewrite_probe){rewrite_outputs_hash(o, g->noutputs), cost, est};
    if (o && o != oh)
      free(o);
  }
  rw_release(&a);
  return st;
}
