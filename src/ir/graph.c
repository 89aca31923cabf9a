/* graph.c: building graphs, checking their invariants, cloning, hashing.
 *
 * ir_add_tensor / ir_add_node / ir_add_output are the only ways a graph
 * grows; ir_add_node runs the operator's shape rule first, so a graph built
 * through them is shape-correct and topologically ordered by construction.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "ir_int.h"

static_assert(sizeof(ir_attrs) == 88 + 2 * 8 * IR_MAX_LIST + 8,
              "ir_attrs must have no padding bytes (it is hashed as bytes)");

/* ---- shapes ------------------------------------------------------------- */

int64_t ir_shape_numel(const ir_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++)
    if (__builtin_mul_overflow(n, s->dim[i], &n))
      return INT64_MAX;
  return n;
}

int ir_shape_eq(const ir_shape *a, const ir_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dim[i] != b->dim[i])
      return 0;
  return 1;
}

char *ir_shape_str(const ir_shape *s, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < s->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld",
                          (long long)s->dim[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
  return buf;
}

ir_shape ir_shape_make(int rank, const int64_t *dims) {
  ir_shape s;
  memset(&s, 0, sizeof s);
  s.rank = rank;
  for (int i = 0; i < rank; i++)
    s.dim[i] = dims[i];
  return s;
}

/* ---- names -------------------------------------------------------------- */

int ir_name_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

int ir_name_char(int c) {
  return ir_name_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '/' ||
         c == '-';
}

int ir_name_ok(const char *s, size_t len) {
  if (len == 0 || !ir_name_start((unsigned char)s[0]))
    return 0;
  for (size_t i = 1; i < len; i++)
    if (!ir_name_char((unsigned char)s[i]))
      return 0;
  return 1;
}

/* ---- building ----------------------------------------------------------- */

/* A new empty graph in arena a (freed on failure). */
static ir_graph *graph_new_in(base_arena *a, const char *name) {
  ir_graph *g = a ? base_arena_alloc(a, sizeof *g) : NULL;
  if (!g) {
    base_arena_free(a);
    return NULL;
  }
  g->arena = a;
  g->name = base_arena_strndup(a, name ? name : "", name ? strlen(name) : 0);
  if (!g->name) {
    base_arena_free(a);
    return NULL;
  }
  return g;
}

ir_graph *ir_graph_new(const char *name) {
  return graph_new_in(base_arena_new(), name);
}

void ir_graph_free(ir_graph *g) {
  if (g)
    base_arena_free(g->arena);
}

/* Makes room for one more element in an arena-backed array. */
static int grow(base_arena *a, void **arr, int32_t n, int32_t *cap,
                size_t elem) {
  if (n < *cap)
    return 0;
  int32_t ncap = *cap ? *cap * 2 : 4; /* rule sides are small */
  void *p = base_arena_alloc(a, elem * (size_t)ncap);
  if (!p)
    return -1;
  if (n)
    memcpy(p, *arr, elem * (size_t)n);
  *arr = p;
  *cap = ncap;
  return 0;
}

/* ---- the name index (so that adding a tensor is not linear) ----------------
 */

static uint32_t name_slot(const ir_graph *g, const char *name) {
  return (uint32_t)XXH3_64bits(name, strlen(name)) &
         (uint32_t)(g->capnames - 1);
}

int ir_find_tensor(const ir_graph *g, const char *name) {
  if (!g->names)
    return -1;
  for (uint32_t i = name_slot(g, name);;
       i = (i + 1) & (uint32_t)(g->capnames - 1)) {
    int32_t t = g->names[i] - 1;
    if (t < 0)
      return -1;
    if (strcmp(g->tensors[t].name, name) == 0)
      return t;
  }
}

static void index_insert(ir_graph *g, int32_t t) {
  uint32_t i = name_slot(g, g->tensors[t].name);
  while (g->names[i])
    i = (i + 1) & (uint32_t)(g->capnames - 1);
  g->names[i] = t + 1;
}

/* The name index's size for n tensors, with room to grow. */
static int32_t index_cap(int32_t n) {
  int32_t cap = 16;
  while (cap <= 2 * (n + 1))
    cap *= 2;
  return cap;
}

/* Rebuilds the index of tensors 0..ntensors-1 with room to grow. */
static int index_rebuild(ir_graph *g) {
  int32_t cap = index_cap(g->ntensors);
  int32_t *names = base_arena_alloc(g->arena, sizeof(int32_t) * (size_t)cap);
  if (!names)
    return -1;
  g->names = names;
  g->capnames = cap;
  for (int32_t t = 0; t < g->ntensors; t++)
    index_insert(g, t);
  return 0;
}

/* Appends a tensor; name must be unique (checked) and valid. */
static int new_tensor(ir_graph *g, const char *name, ir_tkind kind,
                      const ir_shape *s, base_diag *d) {
  if (!ir_name_ok(name, strlen(name)))
    return base_diag_set(d, BASE_ERR_SYNTAX, 0, 0, "'%s' is not a valid name",
                         name),
           -1;
  int prev = ir_find_tensor(g, name);
  if (prev >= 0) {
    if (g->tensors[prev].line > 0)
      base_diag_set(d, BASE_ERR_DUPLICATE, 0, 0,
                    "duplicate name '%s' (first defined at line %d)", name,
                    g->tensors[prev].line);
    else
      base_diag_set(d, BASE_ERR_DUPLICATE, 0, 0, "duplicate name '%s'", name);
    return -1;
  }
  if (grow(g->arena, (void **)&g->tensors, g->ntensors, &g->captensors,
           sizeof(ir_tensor)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
  ir_tensor *t = &g->tensors[g->ntensors];
  memset(t, 0, sizeof *t);
  t->name = base_arena_strndup(g->arena, name, strlen(name));
  if (!t->name)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
  t->kind = kind;
  t->shape = *s;
  t->node = -1;
  g->ntensors++;
  if (2 * (g->ntensors + 1) >= g->capnames
          ? index_rebuild(g)
          : (index_insert(g, g->ntensors - 1), 0))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
  return g->ntensors - 1;
}

int ir_add_tensor(ir_graph *g, const char *name, ir_tkind kind,
                  const ir_shape *s, base_diag *d) {
  if (kind == IR_T_VALUE || s->rank < 0 || s->rank > IR_MAX_RANK)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "bad tensor declaration"),
           -1;
  for (int i = 0; i < s->rank; i++)
    if (s->dim[i] < 1)
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "dimensions must be positive, got %lld in '%s'",
                           (long long)s->dim[i], name),
             -1;
  if (ir_shape_numel(s) > IR_MAX_NUMEL)
    return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                         "'%s' would have more than %lld elements", name,
                         (long long)IR_MAX_NUMEL),
           -1;
  return new_tensor(g, name, kind, s, d);
}

/* An unused automatic name for output slot of a new tensor. */
static void auto_name(const ir_graph *g, char *buf, size_t n) {
  int k = g->ntensors;
  do
    snprintf(buf, n, "t%d", k++);
  while (ir_find_tensor(g, buf) >= 0);
}

int ir_add_node(ir_graph *g, ir_opcode op, const int32_t *in, int nin,
                const ir_attrs *a, const char *const *outnames, base_diag *d) {
  const ir_shape *ins[IR_MAX_IN + 1] = {0};
  ir_shape outs[IR_MAX_LIST];
  if ((unsigned)op >= IR_NOPS || nin < 0 || nin > IR_MAX_IN)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "bad node"), -1;
  for (int i = 0; i < nin; i++) {
    if (in[i] < 0 || in[i] >= g->ntensors)
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "bad tensor index %d",
                           in[i]),
             -1;
    ins[i] = &g->tensors[in[i]].shape;
  }
  ir_attrs attrs = *a;
  if (ir_infer(op, &attrs, ins, nin, outs, d))
    return -1;
  int nout = ir_op_nout(op, &attrs);
  ir_dtype tin[IR_MAX_IN], tout[IR_MAX_LIST];
  for (int i = 0; i < nin; i++)
    tin[i] = (ir_dtype)g->tensors[in[i]].dtype;
  if (ir_dtype_infer(op, &attrs, tin, nin, tout, d))
    return -1;
  int32_t ntensors0 = g->ntensors;
  if (grow(g->arena, (void **)&g->nodes, g->nnodes, &g->capnodes,
           sizeof(ir_node)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
  ir_node *n = &g->nodes[g->nnodes];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->a = attrs;
  n->nin = nin;
  n->nout = nout;
  n->in = base_arena_alloc(g->arena, sizeof(int32_t) * (size_t)(nin + nout));
  if (!n->in)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
  n->out = n->in + nin;
  if (nin) /* a constant has none (in may be NULL) */
    memcpy(n->in, in, sizeof(int32_t) * (size_t)nin);
  for (int i = 0; i < nout; i++) {
    char buf[32];
    if (!outnames)
      auto_name(g, buf, sizeof buf);
    int t =
        new_tensor(g, outnames ? outnames[i] : buf, IR_T_VALUE, &outs[i], d);
    if (t < 0) {
      g->ntensors = ntensors0; /* undo: the node is not added either */
      if (index_rebuild(g))
        base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      return -1;
    }
    g->tensors[t].node = g->nnodes;
    g->tensors[t].slot = i;
    g->tensors[t].dtype = (int32_t)tout[i];
    n->out[i] = t;
  }
  return g->nnodes++;
}

base_status ir_add_output(ir_graph *g, int32_t t, base_diag *d) {
  if (t < 0 || t >= g->ntensors)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "bad output tensor %d", t);
  if (grow(g->arena, (void **)&g->outputs, g->noutputs, &g->capoutputs,
           sizeof(int32_t)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  g->outputs[g->noutputs++] = t;
  return BASE_OK;
}

/* ---- invariants --------------------------------------------------------- */

static base_status check_node(const ir_graph *g, int i, base_diag *d) {
  const ir_node *n = &g->nodes[i];
  const ir_shape *ins[IR_MAX_IN];
  ir_shape outs[IR_MAX_LIST];
  if (n->nin > IR_MAX_IN || n->nout > IR_MAX_LIST)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "node %d: too many edges",
                         i);
  for (int k = 0; k < n->nin; k++) {
    int t = n->in[k];
    if (t < 0 || t >= g->ntensors ||
        (g->tensors[t].kind == IR_T_VALUE && g->tensors[t].node >= i))
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "node %d (%s): input %d is not defined before it", i,
                           ir_op(n->op)->name, k);
    ins[k] = &g->tensors[t].shape;
  }
  ir_attrs a = n->a;
  base_status st = ir_infer(n->op, &a, ins, n->nin, outs, d);
  if (st)
    return st;
  ir_dtype tin[IR_MAX_IN], tout[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    tin[k] = (ir_dtype)g->tensors[n->in[k]].dtype;
  if ((st = ir_dtype_infer(n->op, &a, tin, n->nin, tout, d)))
    return st;
  for (int k = 0; k < n->nout; k++)
    if (g->tensors[n->out[k]].dtype != (int32_t)tout[k])
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "node %d (%s): output %d has the wrong type", i,
                           ir_op(n->op)->name, k);
  if (n->nout != ir_op_nout(n->op, &a) || memcmp(&a, &n->a, sizeof a))
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "node %d (%s): parameters are not normalised", i,
                         ir_op(n->op)->name);
  for (int k = 0; k < n->nout; k++) {
    const ir_tensor *t = &g->tensors[n->out[k]];
    if (t->node != i || t->slot != k || !ir_shape_eq(&t->shape, &outs[k]))
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "node %d (%s): output %d is inconsistent", i,
                           ir_op(n->op)->name, k);
  }
  return BASE_OK;
}

base_status ir_graph_validate(const ir_graph *g, base_diag *d) {
  if (g->noutputs < 1)
    return base_diag_set(d, BASE_ERR_NO_OUTPUT, 0, 0, "graph has no output");
  for (int i = 0; i < g->nnodes; i++) {
    base_status st = check_node(g, i, d);
    if (st)
      return st;
  }
  for (int i = 0; i < g->ntensors; i++) /* names unique, index current */
    if (ir_find_tensor(g, g->tensors[i].name) != i)
      return base_diag_set(d, BASE_ERR_DUPLICATE, 0, 0,
                           "duplicate or unindexed name '%s'",
                           g->tensors[i].name);
  return BASE_OK;
}

base_status ir_check_invariants(const ir_graph *g, const char *after,
                                base_diag *d) {
#ifdef SUPEROPT_CHECK_INVARIANTS
  base_diag v;
  if (ir_graph_validate(g, &v))
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "graph invariant broken after %s: %s", after, v.msg);
#else
  (void)g, (void)after, (void)d;
#endif
  return BASE_OK;
}

/* ---- clone, counts, hash ------------------------------------------------- */

base_status ir_graph_own_data(ir_graph *g, base_diag *d) {
  for (int i = 0; i < g->ntensors; i++) {
    ir_tensor *t = &g->tensors[i];
    if (!t->data)
      continue;
    size_t bytes = sizeof(float) * (size_t)ir_shape_numel(&t->shape);
    float *p = base_arena_alloc(g->arena, bytes);
    if (!p)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    memcpy(p, t->data, bytes);
    t->data = p;
  }
  return BASE_OK;
}

base_status ir_graph_replace(ir_graph **g, ir_graph *h, base_diag *d) {
  base_status st = ir_graph_own_data(h, d);
  if (st) {
    ir_graph_free(h);
    return st;
  }
  ir_graph_free(*g);
  *g = h;
  return BASE_OK;
}

/* The copy of g (sharing its weight values) in arena a. */
static ir_graph *clone_in(const ir_graph *g, base_arena *a) {
  ir_graph *c = graph_new_in(a, g->name);
  if (!c)
    return NULL;
  size_t tb = sizeof(ir_tensor) * (size_t)g->ntensors;
  size_t nb = sizeof(ir_node) * (size_t)g->nnodes;
  c->tensors = base_arena_alloc(a, tb + 1);
  c->nodes = base_arena_alloc(a, nb + 1);
  c->outputs = base_arena_alloc(a, sizeof(int32_t) * (size_t)g->noutputs + 1);
  if (!c->tensors || !c->nodes || !c->outputs)
    goto oom;
  if (tb) /* an empty graph's arrays may be NULL */
    memcpy(c->tensors, g->tensors, tb);
  if (nb)
    memcpy(c->nodes, g->nodes, nb);
  if (g->noutputs)
    memcpy(c->outputs, g->outputs, sizeof(int32_t) * (size_t)g->noutputs);
  c->ntensors = c->captensors = g->ntensors;
  c->nnodes = c->capnodes = g->nnodes;
  c->noutputs = c->capoutputs = g->noutputs;
  for (int i = 0; i < c->ntensors; i++) {
    ir_tensor *t = &c->tensors[i];
    t->name = base_arena_strndup(a, t->name, strlen(t->name));
    if (!t->name)
      goto oom;
  }
  for (int i = 0; i < c->nnodes; i++) {
    ir_node *n = &c->nodes[i];
    int32_t *e =
        base_arena_alloc(a, sizeof(int32_t) * (size_t)(n->nin + n->nout));
    if (!e)
      goto oom;
    memcpy(e, n->in, sizeof(int32_t) * (size_t)n->nin);
    memcpy(e + n->nin, n->out, sizeof(int32_t) * (size_t)n->nout);
    n->in = e;
    n->out = e + n->nin;
  }
  if (index_rebuild(c))
    goto oom;
  return c;
oom:
  ir_graph_free(c);
  return NULL;
}

ir_graph *ir_graph_clone_shared(const ir_graph *g) {
  return clone_in(g, base_arena_new());
}

/* How kahn_order picks the next node among the ready ones (ready[0..nr)):
 * the index into ready. */
typedef int (*kahn_pick)(const int32_t *ready, int nr, void *u);

/* A topological order of g's nodes into ord (Kahn's algorithm, each next
 * node of the ready ones chosen by pick); 0, or -1 on OOM. */
static int kahn_order(const ir_graph *g, kahn_pick pick, void *u,
                      int32_t *ord) {
  int n = g->nnodes;
  int32_t *need = base_calloc((size_t)n + 1, sizeof *need);
  int32_t *ready = base_malloc(sizeof *ready * ((size_t)n + 1));
  int32_t *start = base_calloc((size_t)g->ntensors + 2, sizeof *start);
  int32_t *use = NULL;
  int nr = 0, m = 0, nuse = 0;
  for (int i = 0; i < n; i++)
    nuse += g->nodes[i].nin;
  use = base_malloc(sizeof *use * ((size_t)nuse + 1));
  if (!need || !ready || !start || !use) {
    free(need), free(ready), free(start), free(use);
    return -1;
  }
  for (int i = 0; i < n; i++) /* readers of each tensor, and inputs to wait */
    for (int k = 0; k < g->nodes[i].nin; k++) {
      int t = g->nodes[i].in[k];
      start[t + 2]++;
      need[i] += g->tensors[t].node >= 0;
    }
  for (int t = 0; t < g->ntensors; t++)
    start[t + 2] += start[t + 1];
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      use[start[g->nodes[i].in[k] + 1]++] = i;
  for (int i = 0; i < n; i++)
    if (!need[i])
      ready[nr++] = i;
  while (nr) {
    int j = pick(ready, nr, u), i = ready[j];
    ready[j] = ready[--nr];
    ord[m++] = i;
    for (int o = 0; o < g->nodes[i].nout; o++) {
      int t = g->nodes[i].out[o];
      for (int q = start[t]; q < start[t + 1]; q++)
        if (--need[use[q]] == 0)
          ready[nr++] = use[q];
    }
  }
  free(need), free(ready), free(start), free(use);
  return m == n ? 0 : -1;
}

/* kahn_pick of a random order: a xorshift generator's state in u. */
static int pick_random(const int32_t *ready, int nr, void *u) {
  (void)ready;
  uint64_t *x = u;
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return (int)(*x % (uint64_t)nr);
}

/* kahn_pick of the canonical order: the ready node of the least key (u:
 * the nodes' keys), of two alike the earlier in g. */
static int pick_least(const int32_t *ready, int nr, void *u) {
  const uint64_t *key = u;
  int b = 0;
  for (int j = 1; j < nr; j++) {
    uint64_t x = key[ready[j]], y = key[ready[b]];
    if (x < y || (x == y && ready[j] < ready[b]))
      b = j;
  }
  return b;
}

/* A copy of g (values shared) with its nodes in order ord. */
static ir_graph *in_order(const ir_graph *g, const int32_t *ord) {
  ir_node *nodes = base_malloc(sizeof *nodes * ((size_t)g->nnodes + 1));
  ir_graph *c = nodes ? ir_graph_clone_shared(g) : NULL;
  for (int k = 0; c && k < c->nnodes; k++) {
    nodes[k] = c->nodes[ord[k]];
    for (int o = 0; o < nodes[k].nout; o++)
      c->tensors[nodes[k].out[o]].node = k;
  }
  if (c)
    memcpy(c->nodes, nodes, sizeof *nodes * (size_t)c->nnodes);
  free(nodes);
  return c;
}

ir_graph *ir_graph_reordered(const ir_graph *g, uint64_t seed) {
  int32_t *ord = base_malloc(sizeof *ord * ((size_t)g->nnodes + 1));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  ir_graph *c =
      ord && !kahn_order(g, pick_random, &x, ord) ? in_order(g, ord) : NULL;
  free(ord);
  return c;
}

static void hash_shape(XXH3_state_t *s, const ir_shape *sh) {
  XXH3_64bits_update(s, &sh->rank, sizeof sh->rank);
  XXH3_64bits_update(s, sh->dim, sizeof(int64_t) * (size_t)sh->rank);
}

/* Key of a value no node computes at run time (an input, a weight, a
 * weight-only node's output): kind and shape, not its name or position. */
static uint64_t leaf_key(int32_t kind, const ir_tensor *t) {
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  XXH3_64bits_update(&s, &kind, sizeof kind);
  hash_shape(&s, &t->shape);
  XXH3_64bits_update(&s, &t->dtype, sizeof t->dtype);
  return XXH3_64bits_digest(&s);
}

/* Each running node's key (key[i]) and each tensor's (tk[t]): what the
 * node computes from what, without names: its operator, attributes (the
 * pad mode left out: the pads are resolved) and its inputs' keys (a
 * commutative operator's two in either order). A weight-only node's key
 * is 0, so it goes first and never holds back a running node that reads
 * it. */
static void node_keys(const ir_graph *g, const unsigned char *wonly,
                      uint64_t *tk, uint64_t *key) {
  for (int t = 0; t < g->ntensors; t++) {
    const ir_tensor *x = &g->tensors[t];
    tk[t] = x->kind == IR_T_VALUE ? 0 : leaf_key(x->kind, x);
  }
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    if (wonly[i]) { /* first (computed once, at upload): never delays */
      key[i] = 0;
      for (int o = 0; o < n->nout; o++)
        tk[n->out[o]] = leaf_key(IR_T_WEIGHT, &g->tensors[n->out[o]]);
      continue;
    }
    ir_attrs a = n->a;
    a.padmode = 0;
    XXH3_state_t s;
    XXH3_64bits_reset(&s);
    const char *name = ir_op(n->op)->name;
    XXH3_64bits_update(&s, name, strlen(name));
    XXH3_64bits_update(&s, &a, sizeof a);
    uint64_t in0 = n->nin ? tk[n->in[0]] : 0,
             in1 = n->nin > 1 ? tk[n->in[1]] : 0;
    if ((ir_op(n->op)->flags & IR_OPF_COMM) && n->nin == 2 && in1 < in0) {
      XXH3_64bits_update(&s, &in1, sizeof in1); /* either operand first */
      XXH3_64bits_update(&s, &in0, sizeof in0);
    } else
      for (int k = 0; k < n->nin; k++)
        XXH3_64bits_update(&s, &tk[n->in[k]], sizeof(uint64_t));
    key[i] = XXH3_64bits_digest(&s);
    for (int o = 0; o < n->nout; o++)
      tk[n->out[o]] = key[i] + 0x9e3779b97f4a7c15ull * (uint64_t)(o + 1);
  }
}

ir_graph *ir_graph_canonical(const ir_graph *g) {
  size_t n = (size_t)g->nnodes + 1;
  int32_t *ord = base_malloc(sizeof *ord * n);
  uint64_t *key = base_malloc(sizeof *key * n);
  uint64_t *tk = base_malloc(sizeof *tk * ((size_t)g->ntensors + 1));
  unsigned char *wonly = base_calloc(n, 1);
  ir_graph *c = NULL;
  if (ord && key && tk && wonly) {
    ir_weight_only(g, wonly);
    node_keys(g, wonly, tk, key);
    if (!kahn_order(g, pick_least, key, ord))
      c = in_order(g, ord);
  }
  free(ord), free(key), free(tk), free(wonly);
  return c;
}

/* What an arena allocation of n bytes takes. */
static size_t arena_size(size_t n) {
  n = (n + 15) & ~(size_t)15;
  return n ? n : 16;
}

ir_graph *ir_graph_compact(const ir_graph *g) {
  size_t n = arena_size(sizeof *g) + arena_size(strlen(g->name) + 1) +
             arena_size(sizeof(ir_tensor) * (size_t)g->ntensors + 1) +
             arena_size(sizeof(ir_node) * (size_t)g->nnodes + 1) +
             arena_size(sizeof(int32_t) * (size_t)g->noutputs + 1) +
             arena_size(sizeof(int32_t) * (size_t)index_cap(g->ntensors));
  for (int i = 0; i < g->ntensors; i++)
    n += arena_size(strlen(g->tensors[i].name) + 1);
  for (int i = 0; i < g->nnodes; i++)
    n += arena_size(sizeof(int32_t) *
                    (size_t)(g->nodes[i].nin + g->nodes[i].nout));
  ir_graph *c = clone_in(g, base_arena_new_sized(n));
  if (c && ir_graph_own_data(c, NULL)) {
    ir_graph_free(c);
    return NULL;
  }
  return c;
}

ir_graph *ir_graph_clone(const ir_graph *g) {
  ir_graph *c = ir_graph_clone_shared(g);
  if (c && ir_graph_own_data(c, NULL)) {
    ir_graph_free(c);
    return NULL;
  }
  return c;
}

void ir_op_counts(const ir_graph *g, int counts[IR_NOPS]) {
  memset(counts, 0, sizeof(int) * IR_NOPS);
  for (int i = 0; i < g->nnodes; i++)
    counts[g->nodes[i].op]++;
}

int *ir_read_counts(const ir_graph *g) {
  int *reads = base_calloc((size_t)g->ntensors + 1, sizeof *reads);
  for (int i = 0; reads && i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      reads[g->nodes[i].in[k]]++;
  for (int i = 0; reads && i < g->noutputs; i++)
    reads[g->outputs[i]]++;
  return reads;
}

int ir_critical_path(const ir_graph *g, const double *w, unsigned char *on,
                     double *len) {
  /* finish[i]: the heaviest chain ending with node i; via[i]: the node
   * before i on it (-1: none) */
  double *finish = base_calloc((size_t)g->nnodes + 1, sizeof *finish);
  int *via = base_calloc((size_t)g->nnodes + 1, sizeof *via);
  if (!finish || !via) {
    free(finish), free(via);
    return -1;
  }
  int end = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    via[i] = -1;
    for (int k = 0; k < n->nin; k++) {
      const ir_tensor *t = &g->tensors[n->in[k]];
      if (t->kind == IR_T_VALUE && t->node < i && finish[t->node] > 0 &&
          (via[i] < 0 || finish[t->node] > finish[via[i]]))
        via[i] = t->node; /* (not through chains of weight 0) */
    }
    finish[i] = (via[i] >= 0 ? finish[via[i]] : 0) + w[i];
    if (end < 0 || finish[i] > finish[end])
      end = i;
  }
  if (end >= 0 && !(finish[end] > 0))
    end = -1; /* every weight 0: no path */
  *len = end >= 0 ? finish[end] : 0;
  for (int i = 0; on && i < g->nnodes; i++)
    on[i] = 0;
  for (int i = end; on && i >= 0; i = via[i])
    on[i] = 1;
  free(finish), free(via);
  return 0;
}

/* Hash of a graph input / weight: its kind, ordinal among its kind, shape. */
static uint64_t leaf_hash(const ir_tensor *t, int ordinal) {
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  int32_t k = (int32_t)t->kind;
  XXH3_64bits_update(&s, &k, sizeof k);
  XXH3_64bits_update(&s, &ordinal, sizeof ordinal);
  hash_shape(&s, &t->shape);
  if (t->dtype != IR_DT_F32) /* float32 graphs keep their old hashes */
    XXH3_64bits_update(&s, &t->dtype, sizeof t->dtype);
  return XXH3_64bits_digest(&s);
}

static uint64_t node_out_hash(const ir_node *n, const uint64_t *h, int slot) {
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  /* the operator's name, not its enum value: adding a row to ops.def must
   * not change the hashes of existing graphs */
  const char *name = ir_op(n->op)->name;
  int32_t hdr[2] = {n->nin, slot};
  XXH3_64bits_update(&s, name, strlen(name));
  XXH3_64bits_update(&s, hdr, sizeof hdr);
  XXH3_64bits_update(&s, &n->a, sizeof n->a);
  for (int k = 0; k < n->nin; k++)
    XXH3_64bits_update(&s, &h[n->in[k]], sizeof(uint64_t));
  return XXH3_64bits_digest(&s);
}

base_status ir_graph_hash(const ir_graph *g, uint64_t *out) {
  uint64_t *h = base_calloc((size_t)g->ntensors + 1, sizeof *h);
  if (!h)
    return BASE_ERR_NOMEM;
  int ordinal[3] = {0, 0, 0};
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind == IR_T_VALUE)
      continue;
    h[i] = leaf_hash(t, ordinal[t->kind]++);
    XXH3_64bits_update(&s, &h[i], sizeof h[i]);
  }
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nout; k++)
      h[g->nodes[i].out[k]] = node_out_hash(&g->nodes[i], h, k);
  for (int i = 0; i < g->noutputs; i++)
    XXH3_64bits_update(&s, &h[g->outputs[i]], sizeof(uint64_t));
  *out = XXH3_64bits_digest(&s);
  free(h);
  return BASE_OK;
}

int ir_node_all_f32(const ir_graph *g, const ir_node *n) {
  for (int k = 0; k < n->nin; k++)
    if (g->tensors[n->in[k]].dtype != IR_DT_F32)
      return 0;
  for (int k = 0; k < n->nout; k++)
    if (g->tensors[n->out[k]].dtype != IR_DT_F32)
      return 0;
  return 1;
}

void ir_weight_only(const ir_graph *g, unsigned char *mask) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int w = 1;
    for (int k = 0; w && k < n->nin; k++) {
      const ir_tensor *t = &g->tensors[n->in[k]];
      w = t->kind == IR_T_WEIGHT || (t->kind == IR_T_VALUE && mask[t->node]);
    }
    mask[i] = (unsigned char)w;
  }
}
