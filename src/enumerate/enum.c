/* enum.c: depth-first enumeration of canonical graphs (see enum.h and
 * docs/generation.md), one first-level branch per task over OpenMP threads.
 *
 * A candidate node is appended to the graph under construction when:
 *   1. its key is not smaller than the key of any node placed after its
 *      last dependency (the smallest topological order; the key names
 *      inputs by class only, so it does not depend on copy numbers);
 *   2. it is not identical to an earlier node (no common subexpressions);
 *   3. its arguments use the copies of each class in first-use order;
 *   4. it is shape-valid (en_node_op).
 * The checks are the enumeration's inner loop (most candidates fail them),
 * so each branch keeps the placed nodes' keys, and remembers en_node_op's
 * verdict and output shapes per (operator, parameter, argument shapes),
 * the shapes interned as small ids (a pure function of those, so the
 * graphs and their order are the same).
 */
#include <stdlib.h>
#include <string.h>

#include "enum.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* en_node_op's results by (gop, p, argument shape ids; for an operator of
 * three arguments, the third's id instead of p): shapes are interned, ids
 * 0..EN_NCLASSES-1 being the pool classes' own; a class whose shape an
 * earlier class has (n [4,4], q's) keeps its id apart, since en_node_op
 * tells class n inputs from other values of that shape. Verdicts are kept
 * in an open-addressing table. Out of memory: not remembered. */
typedef struct memo {
  ir_shape *shp; /* by id */
  int nshp, capshp;
  int32_t *sidx; /* shape hash table: id + 1, 0 = empty; capsidx slots */
  size_t capsidx;
  uint64_t *key; /* 0 = empty */
  uint64_t *val; /* MEMO_INVALID, or out ids: slot k << 16 k */
  size_t cap, n;
} memo;

#define MEMO_NO_SHAPE 0xffffu

typedef struct dfs {
  int max_ops, max_outputs;
  int extended;  /* en_config.extended */
  uint64_t gops; /* bit per enabled en_gop */
  en_graph g;    /* the graph under construction */
  ir_shape shapes[EN_MAX_OPS][EN_NSLOTS];
  uint16_t sid[EN_MAX_OPS][EN_NSLOTS]; /* shape ids of the node outputs */
  uint32_t key[EN_MAX_OPS];            /* node_key of the placed nodes */
  /* suf[k][j]: the largest key of nodes j..k-1 of a k-node prefix (0 for
   * j = k), set by descend */
  uint32_t suf[EN_MAX_OPS + 1][EN_MAX_OPS + 1];
  uint8_t nin[EN_NGOPS], nout[EN_NGOPS];
  memo *m; /* NULL: none (out of memory) */
  /* per (first argument's shape id, binary gop): bit c when a second
   * argument of class c gives a valid node; CLS_DONE once computed */
  uint16_t *cls;
  size_t ncls;
  uint8_t used[EN_NCLASSES]; /* copies of each class used so far */
  const en_visitor *v;
  void *state;
  int split, part; /* run only second nodes number part, part + split, ... */
  int second;      /* second nodes seen so far */
} dfs;

/* Renaming-invariant descriptor of a value: its class (0..EN_NCLASSES-1),
 * or its node output after every class (a node's output must not share a
 * class's descriptor: equal keys for different nodes only add orders). */
static uint32_t desc(uint8_t v) {
  return EN_IS_INPUT(v) ? (uint32_t)en_input_class(v)
                        : (uint32_t)EN_NCLASSES + (v - 32u);
}

static uint32_t node_key(const dfs *s, const en_node *n) {
  int nin = s->nin[n->gop];
  /* (a residual gop's bias is a class b input: r tells it apart;
     attention+scale's fourth is always s1) */
  uint32_t third = nin > 3 && en_gop_res(n->gop) ? desc(en_arg(n, 3))
                   : nin > 2                     ? desc(n->p)
                                                 : n->p;
  return (uint32_t)n->gop << 24 | (nin > 0 ? desc(n->a[0]) : 0) << 16 |
         (nin > 1 ? desc(n->a[1]) : 0) << 8 | third;
}

static int last_dep(const dfs *s, const en_node *n) {
  int last = -1;
  for (int j = 0; j < s->nin[n->gop]; j++) {
    uint8_t v = en_arg(n, j);
    if (!EN_IS_INPUT(v) && EN_NODE_OF(v) > last)
      last = EN_NODE_OF(v);
  }
  return last;
}

static int commutative(int gop) { return gop == EN_EWADD || gop == EN_EWMUL; }

static int canonical(const dfs *s, const en_node *n) {
  uint32_t k = node_key(s, n);
  if (commutative(n->gop) && n->a[0] > n->a[1])
    return 0;
  if (s->suf[s->g.nops][last_dep(s, n) + 1] > k)
    return 0;
  for (int j = 0; j < s->g.nops; j++)
    if (!memcmp(&s->g.n[j], n, sizeof *n))
      return 0;
  return 1;
}

/* ---- en_node_op, remembered ---------------------------------------------- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ x >> 29;
}

static uint64_t shape_hash(const ir_shape *sh) {
  uint64_t h = (uint64_t)sh->rank;
  for (int i = 0; i < sh->rank; i++)
    h = mix(h * 31 + (uint64_t)sh->dim[i]);
  return mix(h);
}

static int shape_same(const ir_shape *a, const ir_shape *b) {
  if (a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dim[i] != b->dim[i])
      return 0;
  return 1;
}

static int sidx_grow(memo *m) {
  size_t cap = m->capsidx ? 2 * m->capsidx : 256;
  int32_t *t = base_calloc(cap, sizeof *t);
  if (!t)
    return -1;
  for (size_t j = 0; j < m->capsidx; j++) {
    if (!m->sidx[j])
      continue;
    size_t i = shape_hash(&m->shp[m->sidx[j] - 1]) & (cap - 1);
    while (t[i])
      i = (i + 1) & (cap - 1);
    t[i] = m->sidx[j];
  }
  free(m->sidx);
  m->sidx = t, m->capsidx = cap;
  return 0;
}

/* Appends shape sh as a new id (found by shape when slot is not NULL,
 * an empty slot of the table); the id, or -1 when out of ids or memory. */
static int shape_add(memo *m, const ir_shape *sh, int32_t *slot) {
  if (m->nshp == (int)MEMO_NO_SHAPE)
    return -1;
  if (m->nshp == m->capshp) {
    int cap = m->capshp ? 2 * m->capshp : 64;
    ir_shape *ns = base_realloc(m->shp, (size_t)cap * sizeof *ns);
    if (!ns)
      return -1;
    m->shp = ns, m->capshp = cap;
  }
  memset(&m->shp[m->nshp], 0, sizeof m->shp[m->nshp]);
  m->shp[m->nshp].rank = sh->rank;
  memcpy(m->shp[m->nshp].dim, sh->dim, (size_t)sh->rank * sizeof *sh->dim);
  if (slot)
    *slot = m->nshp + 1;
  return m->nshp++;
}

/* The table slot of shape sh: its id + 1, or 0 (empty) when not there;
 * NULL when out of memory. */
static int32_t *shape_slot(memo *m, const ir_shape *sh) {
  if (2 * (size_t)(m->nshp + 1) > m->capsidx && sidx_grow(m))
    return NULL;
  size_t i = shape_hash(sh) & (m->capsidx - 1);
  for (; m->sidx[i]; i = (i + 1) & (m->capsidx - 1))
    if (shape_same(&m->shp[m->sidx[i] - 1], sh))
      break;
  return &m->sidx[i];
}

/* The id of shape sh (interned if new), or -1 when out of ids or memory. */
static int shape_id(memo *m, const ir_shape *sh) {
  int32_t *slot = shape_slot(m, sh);
  if (!slot)
    return -1;
  return *slot ? *slot - 1 : shape_add(m, sh, slot);
}

static void memo_free(memo *m) {
  if (!m)
    return;
  free(m->shp);
  free(m->sidx);
  free(m->key);
  free(m->val);
  free(m);
}

static int memo_grow(memo *m);

static memo *memo_new(void) {
  memo *m = base_calloc(1, sizeof *m);
  if (!m || memo_grow(m)) {
    free(m);
    return NULL;
  }
  for (int c = 0; c < EN_NCLASSES; c++) {
    const ir_shape *sh = &en_class_of(c)->shape;
    int32_t *slot = shape_slot(m, sh); /* an earlier class's shape: apart */
    if (!slot || shape_add(m, sh, *slot ? NULL : slot) != c) {
      memo_free(m);
      return NULL;
    }
  }
  return m;
}

static int memo_grow(memo *m) {
  size_t cap = m->cap ? 2 * m->cap : 4096;
  uint64_t *k = base_calloc(cap, sizeof *k);
  uint64_t *v = base_malloc(cap * sizeof *v);
  if (!k || !v) {
    free(k);
    free(v);
    return -1;
  }
  for (size_t j = 0; j < m->cap; j++) {
    if (!m->key[j])
      continue;
    size_t i = mix(m->key[j]) & (cap - 1);
    while (k[i])
      i = (i + 1) & (cap - 1);
    k[i] = m->key[j], v[i] = m->val[j];
  }
  free(m->key);
  free(m->val);
  m->key = k, m->val = v, m->cap = cap;
  return 0;
}

/* Shape id of value v. */
static unsigned value_sid(const dfs *s, uint8_t v) {
  if (EN_IS_INPUT(v))
    return (unsigned)en_input_class(v);
  return s->sid[EN_NODE_OF(v)][EN_SLOT_OF(v)];
}

#define MEMO_INVALID UINT64_MAX /* not valid (no id is 0xffff) */
#define MEMO_UNKNOWN                                                           \
  (UINT64_MAX - 1) /* not remembered (out of memory or                         \
                      ids) */

/* Stops remembering (out of memory or of shape ids). */
static void memo_off(dfs *s) {
  memo_free(s->m);
  s->m = NULL;
}

/* A value standing for the arguments of shape id a (en_node_op reads
 * their shapes, and whether they are a class n input): a class's first
 * copy, or a node output. */
static uint8_t stand_in(unsigned a) {
  return a < EN_NCLASSES ? (uint8_t)en_input_id((int)a, 0) : EN_VNODE(0, 0);
}

/* en_node_op's verdict on operator gop with parameter p over arguments of
 * shape ids a[0..2] (MEMO_NO_SHAPE where there is none; a third argument
 * takes p's place): MEMO_INVALID, the output shape ids (slot k << 16 k),
 * or MEMO_UNKNOWN (s->m is then NULL). */
static uint64_t verdict(dfs *s, int gop, int p, const unsigned a[EN_MAX_NIN]) {
  memo *m = s->m;
  if (!m)
    return MEMO_UNKNOWN;
  int nin = s->nin[gop];
  /* (a residual gop's bias has class b's shape: r's in its place;
     attention+scale's fourth is always s1's) */
  uint64_t third = nin > 3 && en_gop_res(gop) ? a[3]
                   : nin > 2                  ? a[2]
                                              : (unsigned)p;
  uint64_t key =
      ((uint64_t)gop << 48 | third << 32 | (uint64_t)a[0] << 16 | a[1]) + 1;
  size_t i = mix(key) & (m->cap - 1);
  for (; m->key[i]; i = (i + 1) & (m->cap - 1))
    if (m->key[i] == key)
      return m->val[i];
  en_node n = {(uint8_t)gop, {0, 0}, (uint8_t)p}; /* the arguments: */
  const ir_shape *in[EN_MAX_NIN] = {NULL};
  for (int j = 0; j < nin; j++) {
    en_arg_set(&n, j, stand_in(a[j]));
    in[j] = &m->shp[a[j]];
  }
  ir_shape out[EN_NSLOTS];
  ir_opcode op;
  ir_attrs at;
  uint64_t val = en_node_op(&n, in, &op, &at, out) ? MEMO_INVALID : 0;
  for (int j = 0; val != MEMO_INVALID && j < s->nout[gop]; j++) {
    int id = shape_id(m, &out[j]); /* may move m->shp: in[] is done */
    if (id < 0) {
      memo_off(s);
      return MEMO_UNKNOWN;
    }
    val |= (uint64_t)id << 16 * j;
  }
  m->key[i] = key, m->val[i] = val;
  if (2 * ++m->n > m->cap && memo_grow(m)) {
    memo_off(s);
    return MEMO_UNKNOWN;
  }
  return val;
}

/* en_node_op's verdict on n as node k of s (its output shapes into
 * s->shapes[k], their ids into s->sid[k]): 0 valid, -1 not. */
static int node_shapes(dfs *s, const en_node *n, int k) {
  int nin = s->nin[n->gop];
  unsigned id[EN_MAX_NIN] = {MEMO_NO_SHAPE, MEMO_NO_SHAPE, MEMO_NO_SHAPE,
                             MEMO_NO_SHAPE};
  for (int j = 0; j < nin; j++)
    id[j] = value_sid(s, en_arg(n, j));
  uint64_t r = verdict(s, n->gop, n->p, id);
  if (r == MEMO_INVALID)
    return -1;
  if (r != MEMO_UNKNOWN) {
    for (int j = 0; j < s->nout[n->gop]; j++) {
      s->sid[k][j] = (uint16_t)(r >> 16 * j);
      s->shapes[k][j] = s->m->shp[s->sid[k][j]];
    }
    return 0;
  }
  const ir_shape *in[EN_MAX_NIN] = {NULL}; /* as it is */
  for (int j = 0; j < nin; j++)
    in[j] =
        en_value_shape(en_arg(n, j), (const ir_shape(*)[EN_NSLOTS])s->shapes);
  ir_opcode op;
  ir_attrs a;
  return en_node_op(n, in, &op, &a, s->shapes[k]) ? -1 : 0;
}

/* Values an argument may take given the copies used: the used copies of
 * each class and its next one, then every node output. */
static int avail(const dfs *s, const uint8_t used[EN_NCLASSES], uint8_t *out) {
  int k = 0;
  for (int c = 0; c < EN_NCLASSES; c++) {
    if (!en_class_on(c, s->extended))
      continue;
    int lim = used[c] + 1 < en_class_of(c)->copies ? used[c] + 1
                                                   : en_class_of(c)->copies;
    for (int i = 0; i < lim; i++)
      out[k++] = (uint8_t)en_input_id(c, i);
  }
  for (int i = 0; i < s->g.nops; i++)
    for (int j = 0; j < s->nout[s->g.n[i].gop]; j++)
      out[k++] = EN_VNODE(i, j);
  return k;
}

static void use(uint8_t used[EN_NCLASSES], uint8_t v) {
  if (EN_IS_INPUT(v) && en_input_copy(v) == used[en_input_class(v)])
    used[en_input_class(v)]++;
}

static base_status descend(dfs *s);

static int find(int *up, int i) {
  while (up[i] != i)
    i = up[i] = up[up[i]];
  return i;
}

/* Connected components of g's nodes, linked by the values they share:
 * one node reading another's output, or two nodes reading one input. */
static int components(const dfs *s) {
  const en_graph *g = &s->g;
  int up[EN_MAX_OPS], reader[EN_NINPUT_IDS], comps = g->nops;
  for (int v = 0; v < EN_NINPUT_IDS; v++)
    reader[v] = -1;
  for (int i = 0; i < g->nops; i++) {
    up[i] = i;
    for (int j = 0; j < s->nin[g->n[i].gop]; j++) {
      uint8_t v = en_arg(&g->n[i], j);
      int o = EN_IS_INPUT(v) ? reader[v] : EN_NODE_OF(v);
      if (EN_IS_INPUT(v) && o < 0)
        reader[v] = i;
      if (o >= 0 && find(up, o) != find(up, i))
        up[find(up, o)] = find(up, i), comps--;
    }
  }
  return comps;
}

/* The number of g's outputs (en_graph_outputs), g having nodes. */
static int outputs(const dfs *s) {
  const en_graph *g = &s->g;
  uint32_t read = 0, all = 0; /* bit v - 32: node output v (read) */
  for (int i = 0; i < g->nops; i++) {
    all |= ((1u << s->nout[g->n[i].gop]) - 1) << (EN_VNODE(i, 0) - 32);
    for (int j = 0; j < s->nin[g->n[i].gop]; j++)
      if (!EN_IS_INPUT(en_arg(&g->n[i], j)))
        read |= 1u << (en_arg(&g->n[i], j) - 32);
  }
  return __builtin_popcount(all & ~read);
}

/* Appends n if it passes the checks, visits the graph and goes deeper. */
static base_status try_node(dfs *s, en_node n) {
  int k = s->g.nops;
  if (!canonical(s, &n) || node_shapes(s, &n, k))
    return BASE_OK;
  if (k == 1 && s->split > 1 && s->second++ % s->split != s->part)
    return BASE_OK; /* another part of this first node's branch */
  uint8_t saved[EN_NCLASSES];
  memcpy(saved, s->used, sizeof saved);
  for (int j = 0; j < s->nin[n.gop]; j++)
    use(s->used, en_arg(&n, j));
  s->g.n[k] = n;
  s->key[k] = node_key(s, &n);
  s->g.nops = (uint8_t)(k + 1);
  int comps = components(s), nout = outputs(s);
  int left = s->max_ops - (k + 1), keep = comps == 1 && nout <= s->max_outputs;
  if (k == 0 && s->part > 0)
    keep = 0; /* part 0 of the branch visits the first node alone */
  /* each further node joins at most two components into one, and reads at
   * most two outputs while adding one */
  int deeper = left > 0 && comps - 1 <= left && nout - s->max_outputs <= left;
  base_status st = BASE_OK;
  if (keep || deeper)
    st = s->v->visit(s->state, &s->g, (const ir_shape(*)[EN_NSLOTS])s->shapes,
                     keep);
  if (!st && deeper && (!s->v->stop || !s->v->stop(s->state, &s->g)))
    st = descend(s);
  s->g.nops = (uint8_t)k;
  memset(&s->g.n[k], 0, sizeof s->g.n[k]);
  memcpy(s->used, saved, sizeof saved);
  return st;
}

/* Does some pool class have shape s with dim[axis] replaced by d? */
static int pool_part(const ir_shape *s, int axis, int64_t d) {
  ir_shape t = *s;
  t.dim[axis] = d;
  for (int c = 0; c < EN_NCLASSES; c++)
    if (ir_shape_eq(&t, &en_class_of(c)->shape))
      return 1;
  return 0;
}

/* Split points of s along axis, ascending: the half, and every point where
 * one part has a pool shape (what a concat of a pool tensor undoes). */
static int split_points(const ir_shape *s, int axis, uint8_t *p) {
  int k = 0;
  int64_t n = s->dim[axis];
  for (int64_t i = 1; i < n && n < 256; i++)
    if (2 * i == n || pool_part(s, axis, i) || pool_part(s, axis, n - i))
      p[k++] = (uint8_t)i;
  return k;
}

/* split3's parameters for s: axes 0..2 (of s's rank), every two first
 * sizes (up to 7 each) that leave a third part. */
static int split3_params(const ir_shape *s, uint8_t *p) {
  int k = 0;
  for (int ax = 0; ax < 3 && ax < s->rank; ax++)
    for (int s0 = 1; s0 <= 7 && s0 + 1 < s->dim[ax]; s0++)
      for (int s1 = 1; s1 <= 7 && s0 + s1 < s->dim[ax]; s1++)
        p[k++] = en_split3_p(ax, s0, s1);
  return k;
}

/* Classes whose shape a constant may take. */
static int const_ok(int gop, int c) {
  switch (gop) {
  case EN_ICONV: return en_class_of(c)->shape.rank == 4 && c != 2;
  case EN_IMM: return c == 1;
  case EN_CPOOL: return c == 6;
  default: return 1;
  }
}

/* A constant reads nothing, so it is never the last node of a graph. */
static base_status expand_const(dfs *s, int gop, int last) {
  base_status st = BASE_OK;
  for (int c = 0; c < EN_NBASE_CLASSES && !st && !last; c++)
    if (const_ok(gop, c))
      st = try_node(s, (en_node){(uint8_t)gop, {0, 0}, (uint8_t)c});
  return st;
}

#define EN_NVALS (EN_NINPUT_IDS + EN_MAX_OUTPUTS)
#define NLOCAL (EN_NCLASSES + EN_MAX_OUTPUTS) /* see local() */
#define CLS_DONE 0x8000u
#define CLS_ALL ((1u << EN_NCLASSES) - 1) /* a bit per class */

/* The argument values of one depth (the same for every operator tried
 * there): the first argument's, and the second's after each first; and
 * per binary operator and first argument's shape (local()), which second
 * arguments' shapes give a valid node (computed when first needed). */
typedef struct args {
  uint8_t v0[EN_NVALS], v1[EN_NVALS][EN_NVALS];
  int n0, n1[EN_NVALS], binary; /* binary: v1, n1 filled */
  uint32_t mask[EN_NGOPS][NLOCAL], have[EN_NGOPS];
  /* last: the node placed here is the last one, so it is visited only if
   * it makes a graph (connected, at most max_outputs outputs): touch[v]
   * has a bit per component of the prefix that reading value v joins,
   * all every component's; out has bit v - 32 for each prefix output */
  int last, nouts;
  uint8_t touch[EN_VNODE(EN_MAX_OPS, 0)], all;
  uint32_t out;
} args;

/* Fills a's last-node facts for s's prefix (a->last set). */
static void args_last(const dfs *s, args *a) {
  const en_graph *g = &s->g;
  int up[EN_MAX_OPS], bit[EN_MAX_OPS], ncomp = 0;
  for (int i = 0; i < g->nops; i++) {
    up[i] = i;
    for (int j = 0; j < s->nin[g->n[i].gop]; j++) {
      uint8_t v = en_arg(&g->n[i], j);
      int o = -1;
      if (!EN_IS_INPUT(v))
        o = EN_NODE_OF(v);
      for (int k = 0; EN_IS_INPUT(v) && k < i && o < 0; k++)
        for (int l = 0; l < s->nin[g->n[k].gop]; l++)
          o = en_arg(&g->n[k], l) == v ? k : o;
      if (o >= 0 && find(up, o) != find(up, i))
        up[find(up, o)] = find(up, i);
    }
  }
  for (int i = 0; i < g->nops; i++)
    bit[i] = find(up, i) == i ? ncomp++ : -1;
  memset(a->touch, 0, sizeof a->touch);
  a->out = 0;
  for (int i = 0; i < g->nops; i++) {
    uint8_t b = (uint8_t)(1u << bit[find(up, i)]);
    for (int j = 0; j < s->nout[g->n[i].gop]; j++) {
      a->touch[EN_VNODE(i, j)] = b;
      a->out |= 1u << (EN_VNODE(i, j) - 32);
    }
    for (int j = 0; j < s->nin[g->n[i].gop]; j++) {
      uint8_t v = en_arg(&g->n[i], j);
      if (EN_IS_INPUT(v))
        a->touch[v] |= b;
      else
        a->out &= ~(1u << (v - 32));
    }
  }
  a->all = (uint8_t)((1u << ncomp) - 1);
  a->nouts = __builtin_popcount(a->out);
}

/* With a->last: whether gop(v0[, v1]) makes the prefix a graph (else
 * try_node would not visit it, nor go deeper). v1 = 0xff: no second. */
static int makes_graph(const dfs *s, const args *a, int gop, uint8_t v0,
                       uint8_t v1) {
  int two = v1 != 0xff;
  if ((a->touch[v0] | (two ? a->touch[v1] : 0)) != a->all)
    return 0;
  int read = !EN_IS_INPUT(v0) && (a->out >> (v0 - 32) & 1);
  read += two && v1 != v0 && !EN_IS_INPUT(v1) && (a->out >> (v1 - 32) & 1);
  return a->nouts - read + s->nout[gop] <= s->max_outputs;
}

/* A value's shape, as an index below NLOCAL within one depth: an input's
 * class, or EN_NCLASSES + a node output's number. */
static int local(uint8_t v) {
  return EN_IS_INPUT(v) ? en_input_class(v) : EN_NCLASSES + (v - 32);
}

/* The classes c for which gop(first argument of shape id sid, an input of
 * class c) is valid, as bits; all when not known. */
static unsigned class_mask(dfs *s, int gop, unsigned sid) {
  size_t at = (size_t)sid * EN_NGOPS + (size_t)gop;
  if (at < s->ncls && s->cls[at] & CLS_DONE)
    return s->cls[at] & CLS_ALL;
  unsigned m = 0;
  for (int c = 0; c < EN_NCLASSES; c++)
    m |= (unsigned)(verdict(s, gop, 0,
                            (unsigned[EN_MAX_NIN]){sid, (unsigned)c, 0}) !=
                    MEMO_INVALID)
         << c;
  if (!s->m)
    return CLS_ALL; /* stopped remembering: not known */
  if (at >= s->ncls) {
    size_t n = s->ncls ? s->ncls : 64 * EN_NGOPS;
    while (n <= at)
      n *= 2;
    uint16_t *t = base_realloc(s->cls, n * sizeof *t);
    if (!t)
      return m;
    memset(t + s->ncls, 0, (n - s->ncls) * sizeof *t);
    s->cls = t, s->ncls = n;
  }
  s->cls[at] = (uint16_t)(m | CLS_DONE);
  return m;
}

/* Which second arguments' shapes (local()) make gop(v, .) valid. */
static uint32_t second_mask(dfs *s, args *a, int gop, uint8_t v) {
  int l = local(v);
  if (a->have[gop] >> l & 1)
    return a->mask[gop][l];
  unsigned sid = value_sid(s, v);
  uint32_t m = s->m ? class_mask(s, gop, sid) : CLS_ALL;
  for (int i = 0; i < s->g.nops; i++)
    for (int j = 0; j < s->nout[s->g.n[i].gop]; j++) {
      uint8_t w = EN_VNODE(i, j);
      uint64_t r =
          verdict(s, gop, 0, (unsigned[EN_MAX_NIN]){sid, value_sid(s, w), 0});
      m |= (uint32_t)(r != MEMO_INVALID) << local(w);
    }
  if (!s->m) /* stopped remembering: try them all */
    return ~0u;
  a->have[gop] |= 1u << l;
  return a->mask[gop][l] = m;
}

static void args_binary(const dfs *s, args *a) {
  for (int i = 0; i < a->n0; i++) {
    uint8_t used[EN_NCLASSES];
    memcpy(used, s->used, sizeof used);
    use(used, a->v0[i]);
    a->n1[i] = avail(s, used, a->v1[i]);
  }
  a->binary = 1;
}

static base_status expand_unary(dfs *s, int gop, const args *a) {
  uint8_t pts[256];
  base_status st = BASE_OK;
  for (int i = 0; i < a->n0 && !st; i++) {
    en_node n = {(uint8_t)gop, {a->v0[i], 0}, 0};
    if (a->last && !makes_graph(s, a, gop, a->v0[i], 0xff))
      continue;
    int axis = en_gop_split_axis(gop);
    if (axis < 0 && gop != EN_SPLIT3) {
      st = try_node(s, n);
      continue;
    }
    const ir_shape *sh =
        en_value_shape(a->v0[i], (const ir_shape(*)[EN_NSLOTS])s->shapes);
    if (sh->rank <= axis)
      continue;
    int np =
        gop == EN_SPLIT3 ? split3_params(sh, pts) : split_points(sh, axis, pts);
    for (int j = 0; j < np && !st; j++) {
      n.p = pts[j];
      st = try_node(s, n);
    }
  }
  return st;
}

/* Skips the pairs of arguments that try_node would reject on what they
 * are alone: shapes that do not fit (the same verdict), commutative
 * arguments out of order, a last node that does not make a graph. */
static base_status expand_binary(dfs *s, int gop, args *a) {
  base_status st = BASE_OK;
  int comm = commutative(gop);
  for (int i = 0; i < a->n0 && !st; i++) {
    uint8_t v0 = a->v0[i];
    uint32_t fit = second_mask(s, a, gop, v0);
    for (int j = 0; j < a->n1[i] && !st; j++) {
      uint8_t v1 = a->v1[i][j];
      if (!(fit >> local(v1) & 1) || (comm && v0 > v1) ||
          (a->last && !makes_graph(s, a, gop, v0, v1)))
        continue;
      st = try_node(s, (en_node){(uint8_t)gop, {v0, v1}, 0});
    }
  }
  return st;
}

/* Arguments k.. of n (nargs in all: a ternary's three, the third in
 * en_node.p; a residual gop's four, its bias a class b input (a used copy
 * or the next), then r, any value), each from the values available after
 * the earlier ones took their copies (used), depth first. */
static base_status expand_args(dfs *s, en_node n, int k, int nargs,
                               const uint8_t *used) {
  if (k == nargs)
    return try_node(s, n);
  enum { NV = EN_NINPUT_IDS + EN_MAX_OUTPUTS };
  uint8_t v[NV], u[EN_NCLASSES];
  int nv = avail(s, used, v);
  int bias = k == 2 && en_gop_res(n.gop);
  base_status st = BASE_OK;
  for (int i = 0; i < nv && !st; i++) {
    if (bias && (!EN_IS_INPUT(v[i]) || en_input_class(v[i]) != EN_CLASS_B))
      continue;
    memcpy(u, used, sizeof u);
    use(u, v[i]);
    en_arg_set(&n, k, v[i]);
    st = expand_args(s, n, k + 1, nargs, u);
  }
  return st;
}

static base_status descend(dfs *s) {
  base_status st = BASE_OK;
  int k = s->g.nops;
  args a;
  a.n0 = avail(s, s->used, a.v0);
  a.binary = 0;
  memset(a.have, 0, sizeof a.have);
  s->suf[k][k] = 0;
  for (int j = k - 1; j >= 0; j--)
    s->suf[k][j] = s->key[j] > s->suf[k][j + 1] ? s->key[j] : s->suf[k][j + 1];
  /* the split's count (try_node) sees every candidate of a second node */
  a.last = k >= 1 && k + 1 == s->max_ops && !(k == 1 && s->split > 1);
  if (a.last)
    args_last(s, &a);
  for (int gop = 0; gop < EN_NGOPS && !st; gop++) {
    if (!(s->gops >> gop & 1))
      continue;
    switch (s->nin[gop]) {
    case 0: st = expand_const(s, gop, a.last); break;
    case 1: st = expand_unary(s, gop, &a); break;
    case 2:
      if (!a.binary)
        args_binary(s, &a);
      st = expand_binary(s, gop, &a);
      break;
    default: /* 3; a residual gop's 4; attention+scale: a ternary's, then
                s1 (en_arg_set) */
      st = expand_args(s, (en_node){(uint8_t)gop, {0, 0}, 0}, 0,
                       en_gop_res(gop) ? 4 : 3, s->used);
    }
  }
  return st;
}

/* ---- first-level branches -------------------------------------------------
 */

/* The gops enumerated: those of c's operators and set; split3 only where
 * a graph may have three outputs (its own); a fused sigmoid, tanh or gelu
 * only with that operator; a residual epilogue (with a bias or a zero one)
 * only with ewadd (and its relu with relu); a relu fused into a bias-free
 * rank-3 matmul only with relu; a fused clip only with clip;
 * attention with a scale only with smul. */
static uint64_t gop_mask(const en_config *c) {
  uint64_t ops = c->ops ? c->ops : en_ops_all();
  uint64_t m = 0;
  for (int g = 0; g < EN_NGOPS; g++)
    if (ops >> en_gop_op(g) & 1 && en_gop_on(g, c->extended) &&
        (g != EN_SPLIT3 || c->max_outputs >= 3) &&
        (en_gop_act_op(g) < 0 || ops >> en_gop_act_op(g) & 1) &&
        ((!en_gop_res(g) && g != EN_MATMUL_ZR) || ops >> IR_OP_EWADD & 1) &&
        ((g != EN_CONVBR_RELU && g != EN_MATMULBR_RELU &&
          g != EN_MATMUL3_RELU) ||
         ops >> IR_OP_RELU & 1) &&
        ((g != EN_CONV_CLIP6 && g != EN_CONVB_CLIP6) ||
         ops >> IR_OP_CLIP & 1) &&
        (g != EN_ATT_S || ops >> IR_OP_SMUL & 1))
      m |= (uint64_t)1 << g;
  return m;
}

/* Collects the first nodes (depth-1 graphs) instead of visiting them. */
typedef struct collect {
  en_node *first;
  int n, cap;
} collect;

static base_status collect_visit(void *state, const en_graph *g,
                                 const ir_shape (*shapes)[EN_NSLOTS],
                                 int is_graph) {
  collect *c = state;
  (void)shapes, (void)is_graph;
  if (c->first && c->n < c->cap)
    c->first[c->n] = g->n[0];
  c->n++;
  return BASE_OK;
}

/* NULL s->m (out of memory) only makes it slower. */
static void dfs_init(dfs *s, const en_config *c, const en_visitor *v,
                     void *state) {
  memset(s, 0, sizeof *s);
  s->max_ops = c->max_ops;
  s->max_outputs = c->max_outputs > 0 ? c->max_outputs : EN_DEFAULT_OUTPUTS;
  s->extended = c->extended;
  s->gops = gop_mask(c);
  s->v = v;
  s->state = state;
  for (int g = 0; g < EN_NGOPS; g++)
    s->nin[g] = (uint8_t)en_gop_nin(g), s->nout[g] = (uint8_t)en_gop_nout(g);
  s->m = memo_new();
}

static void dfs_free(dfs *s) {
  memo_free(s->m);
  free(s->cls);
  s->m = NULL, s->cls = NULL;
}

/* Fills first[0..cap-1] with the first nodes, returns their number. */
static int first_nodes(const en_config *c, en_node *first, int cap) {
  collect col = {first, 0, cap};
  en_visitor v = {NULL, collect_visit, NULL, NULL, NULL};
  en_config one = *c;
  dfs s;
  one.max_ops = c->max_ops > 0 ? 1 : 0;
  dfs_init(&s, &one, &v, &col);
  if (one.max_ops)
    descend(&s);
  dfs_free(&s);
  return col.n;
}

static int parts(const en_config *c) { return c->split > 1 ? c->split : 1; }

int en_branch_count(const en_config *c) {
  return 1 + first_nodes(c, NULL, 0) * parts(c);
}

/* Branch 0: every class's first copy alone. */
static base_status run_inputs(const en_config *c, const en_visitor *v,
                              void *state) {
  base_status st = BASE_OK;
  for (int cl = 0; cl < EN_NCLASSES && !st; cl++) {
    if (!en_class_on(cl, c->extended))
      continue;
    en_graph g;
    memset(&g, 0, sizeof g);
    g.root = (uint8_t)en_input_id(cl, 0);
    st = v->visit(state, &g, NULL, 1);
  }
  return st;
}

/* Branch b >= 1: part (b-1) % parts of the graphs whose first node is
 * first[(b-1) / parts]. */
static base_status run_branch(const en_config *c, const en_visitor *v,
                              void *state, en_node first, int part) {
  dfs s;
  dfs_init(&s, c, v, state);
  s.split = parts(c);
  s.part = part;
  /* re-run depth 1 restricted to this node */
  base_status st = try_node(&s, first);
  dfs_free(&s);
  return st;
}

static base_status run_one(const en_config *c, const en_visitor *v,
                           const en_node *first, int b) {
  void *state = v->branch_begin(v->u, b);
  if (!state)
    return BASE_ERR_NOMEM;
  int np = parts(c);
  base_status st =
      b == 0 ? run_inputs(c, v, state)
             : run_branch(c, v, state, first[(b - 1) / np], (b - 1) % np);
  v->branch_end(v->u, b, state);
  return st;
}

base_status en_enumerate(const en_config *c, const en_visitor *v,
                         base_diag *d) {
  if (c->max_ops < 0 || c->max_ops > EN_MAX_OPS)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "max-ops must be 0..%d, got %d", EN_MAX_OPS,
                         c->max_ops);
  int nfirst = first_nodes(c, NULL, 0);
  en_node first[nfirst + 1];
  first_nodes(c, first, nfirst);
  int nb = en_branch_count(c), done = 0, total = 0;
  base_status err = BASE_OK;
  for (int b = 0; b < nb; b++)
    total += !c->branches || c->branches[b];
  int threads = c->threads > 0 ? c->threads : 0;
  (void)threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)                                  \
    num_threads(threads ? threads : omp_get_max_threads())
#endif
  for (int b = 0; b < nb; b++) {
    base_status st;
#ifdef _OPENMP
#pragma omp atomic read
#endif
    st = err;
    if (st || (c->branches && !c->branches[b]))
      continue;
    st = run_one(c, v, first, b);
#ifdef _OPENMP
#pragma omp critical(en_progress)
#endif
    {
      if (st && !err) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
        err = st;
      }
      done++;
      if (c->progress)
        c->progress(c->u, "enumerate", done, total);
    }
  }
  if (err)
    return base_diag_set(d, err, 0, 0, "enumeration failed: %s",
                         base_status_name(err));
  return BASE_OK;
}
