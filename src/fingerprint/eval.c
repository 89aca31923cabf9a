/* eval.c: evaluates compact graphs on seeded residues, hashes their
 * outputs, and makes the hash invariant under renaming of input copies
 * (the minimum over the permutations of the copies used of each class).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fp_int.h"

fp_inputs *fp_inputs_new(uint64_t seed) {
  fp_inputs *in = base_calloc(1, sizeof *in);
  if (!in)
    return NULL;
  in->seed = seed;
  in->key = XXH3_64bits_withSeed("fp_act", 6, seed);
  for (int c = 0; c < EN_NCLASSES; c++)
    for (int k = 0; k < en_class_of(c)->copies; k++) {
      int v = en_input_id(c, k);
      int64_t n = ir_shape_numel(&en_class_of(c)->shape);
      if (!(in->v[v] = base_malloc((size_t)n * sizeof(uint32_t)))) {
        fp_inputs_free(in);
        return NULL;
      }
      fp_random(in->v[v], n, seed, (uint64_t)v + 1);
    }
  return in;
}

fp_inputs *fp_inputs_named(uint64_t seed) {
  fp_inputs *in = base_calloc(1, sizeof *in);
  if (!in)
    return NULL;
  in->seed = seed;
  in->key = XXH3_64bits_withSeed("act", 3, seed); /* fp_value_hashes' */
  for (int c = 0; c < EN_NCLASSES; c++)
    for (int k = 0; k < en_class_of(c)->copies; k++) {
      int v = en_input_id(c, k);
      int64_t n = ir_shape_numel(&en_class_of(c)->shape);
      char name[16];
      en_input_name(v, name, sizeof name);
      if (!(in->v[v] = base_malloc((size_t)n * sizeof(uint32_t)))) {
        fp_inputs_free(in);
        return NULL;
      }
      fp_random(in->v[v], n, seed, XXH3_64bits(name, strlen(name)));
    }
  return in;
}

void fp_inputs_free(fp_inputs *in) {
  if (!in)
    return;
  for (int v = 0; v < EN_NINPUT_IDS; v++)
    free(in->v[v]);
  free(in);
}

/* ---- the leaf cache ------------------------------------------------------
 *
 * A node whose arguments are pool inputs (or none: a constant) has a value
 * that depends on the node alone (the inputs renamed already), so each
 * evaluator computes it once: the enumeration meets the same leaf nodes in
 * every branch's graphs and renamings, the pairing in every pair. The
 * values are the kernels' own, so the residues are the same.
 */

#define FP_LEAF_SLOTS 8192 /* a power of two; at most half are used */

struct fp_leaf {
  uint32_t key; /* the node, its inputs renamed; valid when val[0] */
  int nout;
  ir_shape shapes[EN_NSLOTS];
  uint32_t *val[EN_NSLOTS];
};

/* n's key with its arguments renamed by map, or 0 when an argument is a
 * node's value (not a leaf). Keys are never 0: gop + 1 is the top byte. */
static uint32_t leaf_key(const en_node *n, const uint8_t *map) {
  uint8_t a[EN_MAX_NIN] = {0, 0, n->p};
  if (en_gop_res(n->gop))
    return 0; /* four arguments: not in the key (not cached) */
  for (int j = 0; j < en_gop_nin(n->gop); j++) {
    uint8_t v = en_arg(n, j);
    if (!EN_IS_INPUT(v))
      return 0;
    a[j] = map ? map[v] : v;
  }
  return (uint32_t)(n->gop + 1) << 24 | (uint32_t)a[0] << 16 |
         (uint32_t)a[1] << 8 | a[2];
}

static fp_leaf *leaf_slot(fp_eval *e, uint32_t key) {
  size_t i = (size_t)(key * 0x9e3779b1u) & (FP_LEAF_SLOTS - 1);
  while (e->leaf[i].val[0] && e->leaf[i].key != key)
    i = (i + 1) & (FP_LEAF_SLOTS - 1);
  return &e->leaf[i];
}

/* Keeps node i's freshly computed values under key (when there is room
 * and memory; else they are simply not cached). */
static void leaf_keep(fp_eval *e, int i, int nout, uint32_t key) {
  fp_leaf *l = leaf_slot(e, key);
  if (l->val[0] || 2 * (e->nleaf + 1) > FP_LEAF_SLOTS)
    return;
  uint32_t *v[EN_NSLOTS] = {NULL};
  for (int s = 0; s < nout; s++) {
    size_t n = (size_t)ir_shape_numel(&e->shapes[i][s]);
    if (!(v[s] = base_malloc(n * sizeof(uint32_t)))) {
      for (int k = 0; k < s; k++)
        free(v[k]);
      return;
    }
    memcpy(v[s], e->val[i][s], n * sizeof(uint32_t));
  }
  l->key = key, l->nout = nout;
  memcpy(l->shapes, e->shapes[i], sizeof l->shapes);
  memcpy(l->val, v, sizeof l->val);
  e->nleaf++;
}

static void leaf_free(fp_eval *e) {
  for (int i = 0; e->leaf && i < FP_LEAF_SLOTS; i++)
    for (int s = 0; s < EN_NSLOTS; s++)
      free(e->leaf[i].val[s]);
  free(e->leaf);
}

/* ---- the cone cache -------------------------------------------------------
 *
 * A node reading other nodes has a value that depends on its cone alone
 * (the nodes it reads, directly or not, and the inputs they read, renamed).
 * The enumeration evaluates the same cones again and again: a node that
 * does not read the node before it, for every choice of that node; every
 * renaming of a graph's prefix, for every extension of the graph. The
 * costly operators' values are kept by cone in a direct-mapped table (the
 * last one of each slot), and copied back when met again.
 */

#define FP_CONE_SLOTS 2048 /* a power of two */

typedef struct cone_key {
  uint8_t n, pad[3];
  en_node nd[EN_MAX_OPS]; /* the cone's nodes in order, renumbered */
} cone_key;

struct fp_cone {
  cone_key key; /* valid when nout > 0 */
  int nout;
  ir_shape shapes[EN_NSLOTS];
  uint32_t *val[EN_NSLOTS];
  size_t cap[EN_NSLOTS];
};

/* Operators whose kernels cost more than copying their values (matmuls,
 * convolutions, activations, pools), by the IR operator each stands for. */
static int costly(int gop) {
  switch (en_gop_op(gop)) {
  case IR_OP_MATMUL:
  case IR_OP_CONV2D:
  case IR_OP_SIGMOID:
  case IR_OP_TANH:
  case IR_OP_GELU:
  case IR_OP_RELU:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL: return 1;
  default: return 0;
  }
}

/* The cone of node i of g, inputs renamed by map, into k. */
static void cone_of(const en_graph *g, int i, const uint8_t *map, cone_key *k) {
  uint32_t cone = en_value_cone(g, EN_VNODE(i, 0));
  int pos[EN_MAX_OPS];
  memset(k, 0, sizeof *k);
  for (int j = 0; j <= i; j++) {
    if (!(cone >> j & 1))
      continue;
    en_node nd = g->n[j];
    for (int a = 0; a < en_gop_nin(nd.gop); a++) {
      uint8_t v = en_arg(&nd, a);
      en_arg_set(&nd, a,
                 EN_IS_INPUT(v) ? (map ? map[v] : v)
                                : EN_VNODE(pos[EN_NODE_OF(v)], EN_SLOT_OF(v)));
    }
    pos[j] = k->n;
    k->nd[k->n++] = nd;
  }
}

static fp_cone *cone_slot(fp_eval *e, const cone_key *k) {
  return &e->cone[XXH3_64bits(k, sizeof *k) & (FP_CONE_SLOTS - 1)];
}

/* Node i's values from the cache into e (1), or 0 when not there. */
static int cone_get(fp_eval *e, int i, const cone_key *k) {
  const fp_cone *c = cone_slot(e, k);
  if (!c->nout || memcmp(&c->key, k, sizeof *k))
    return 0;
  memcpy(e->shapes[i], c->shapes, sizeof c->shapes);
  for (int s = 0; s < c->nout; s++) {
    memcpy(e->val[i][s], c->val[s],
           (size_t)ir_shape_numel(&c->shapes[s]) * sizeof(uint32_t));
    e->cur[i][s] = e->val[i][s];
  }
  return 1;
}

/* Keeps node i's freshly computed values under k, in place of the slot's
 * (not kept when out of memory). */
static void cone_put(fp_eval *e, int i, int nout, const cone_key *k) {
  fp_cone *c = cone_slot(e, k);
  c->nout = 0;
  for (int s = 0; s < nout; s++) {
    size_t n = (size_t)ir_shape_numel(&e->shapes[i][s]);
    if (n > c->cap[s]) {
      uint32_t *v = base_realloc(c->val[s], n * sizeof *v);
      if (!v)
        return;
      c->val[s] = v, c->cap[s] = n;
    }
    memcpy(c->val[s], e->val[i][s], n * sizeof(uint32_t));
  }
  c->key = *k;
  memcpy(c->shapes, e->shapes[i], sizeof c->shapes);
  c->nout = nout;
}

static void cone_free(fp_eval *e) {
  for (int i = 0; e->cone && i < FP_CONE_SLOTS; i++)
    for (int s = 0; s < EN_NSLOTS; s++)
      free(e->cone[i].val[s]);
  free(e->cone);
}

fp_eval *fp_eval_new(const fp_inputs *in) {
  fp_eval *e = base_calloc(1, sizeof *e);
  if (!e)
    return NULL;
  e->in = in;
  if (!(e->leaf = base_calloc(FP_LEAF_SLOTS, sizeof *e->leaf)) ||
      !(e->cone = base_calloc(FP_CONE_SLOTS, sizeof *e->cone))) {
    free(e->leaf);
    free(e);
    return NULL;
  }
  for (int i = 0; i < EN_MAX_OPS; i++)
    for (int s = 0; s < EN_NSLOTS; s++)
      if (!(e->val[i][s] = base_malloc(EN_MAX_NUMEL * sizeof(uint32_t)))) {
        fp_eval_free(e);
        return NULL;
      }
  return e;
}

void fp_eval_free(fp_eval *e) {
  if (!e)
    return;
  for (int i = 0; i < EN_MAX_OPS; i++)
    for (int s = 0; s < EN_NSLOTS; s++)
      free(e->val[i][s]);
  leaf_free(e);
  cone_free(e);
  free(e);
}

static const uint32_t *value_of(const fp_eval *e, uint8_t v,
                                const uint8_t *map) {
  if (EN_IS_INPUT(v))
    return e->in->v[map ? map[v] : v];
  return e->cur[EN_NODE_OF(v)][EN_SLOT_OF(v)];
}

/* EN_MATMUL_ZR (a, w, r): the residual epilogue with a zero bias of the
 * product's width, as its IR form computes it (k_residual). */
static base_status zero_bias_residual(const ir_attrs *a,
                                      const ir_shape *const *ins,
                                      const uint32_t *const *in,
                                      const ir_shape *outs,
                                      uint32_t *const *out, uint64_t key) {
  static const uint32_t zero[EN_MAX_NUMEL];
  int64_t n = outs[0].dim[outs[0].rank - 1];
  ir_shape zs = ir_shape_make(1, &n);
  const ir_shape *s4[4] = {ins[0], ins[1], &zs, ins[2]};
  const uint32_t *v4[4] = {in[0], in[1], zero, in[2]};
  return fp_kernel(IR_OP_MATMUL, a, s4, v4, 4, outs, out, key);
}

base_status fp_eval_node(fp_eval *e, const en_graph *g, int i,
                         const uint8_t *map) {
  const en_node *n = &g->n[i];
  const ir_shape *ins[EN_MAX_NIN] = {NULL};
  const uint32_t *in[EN_MAX_NIN] = {NULL};
  int nin = en_gop_nin(n->gop);
  ir_opcode op;
  ir_attrs a;
  uint32_t key = leaf_key(n, map);
  cone_key ck;
  if (key) {
    const fp_leaf *l = leaf_slot(e, key);
    if (l->val[0]) {
      memcpy(e->shapes[i], l->shapes, sizeof l->shapes);
      for (int s = 0; s < EN_NSLOTS; s++)
        e->cur[i][s] = l->val[s];
      return BASE_OK;
    }
  } else if (costly(n->gop)) {
    cone_of(g, i, map, &ck);
    if (cone_get(e, i, &ck))
      return BASE_OK;
  }
  for (int j = 0; j < nin; j++) {
    ins[j] =
        en_value_shape(en_arg(n, j), (const ir_shape(*)[EN_NSLOTS])e->shapes);
    in[j] = value_of(e, en_arg(n, j), map);
  }
  for (int s = 0; s < EN_NSLOTS; s++)
    e->cur[i][s] = e->val[i][s];
  if (en_node_op(n, ins, &op, &a, e->shapes[i]))
    return BASE_ERR_INTERNAL;
  base_status st =
      en_gop_is_bn(n->gop) ? fp_bn_kernel(n->gop, ins, in, e->shapes[i],
                                          e->val[i][0], e->in->key)
      : n->gop == EN_MATMUL_ZR
          ? zero_bias_residual(&a, ins, in, e->shapes[i], e->val[i], e->in->key)
          : fp_kernel(op, &a, ins, in, nin, e->shapes[i], e->val[i],
                      e->in->key);
  if (!st && key)
    leaf_keep(e, i, en_gop_nout(n->gop), key);
  else if (!st && costly(n->gop))
    cone_put(e, i, en_gop_nout(n->gop), &ck);
  return st;
}

uint64_t fp_tensor_hash(const ir_shape *s, const uint32_t *val) {
  int64_t dims[IR_MAX_RANK + 1] = {s->rank};
  memcpy(dims + 1, s->dim, (size_t)s->rank * sizeof *dims);
  uint64_t sh = XXH3_64bits(dims, (size_t)(s->rank + 1) * sizeof *dims);
  return XXH3_64bits_withSeed(val, (size_t)ir_shape_numel(s) * sizeof(uint32_t),
                              sh);
}

uint64_t fp_value_hash(const fp_eval *e, uint8_t v, const uint8_t *map) {
  const ir_shape *s =
      en_value_shape(v, (const ir_shape(*)[EN_NSLOTS])e->shapes);
  return fp_tensor_hash(s, value_of(e, v, map));
}

int fp_out_hashes(const fp_eval *e, const en_graph *g, const uint8_t *map,
                  uint64_t *h) {
  uint8_t outs[EN_MAX_OUTPUTS];
  int n = en_graph_outputs(g, outs);
  for (int i = 0; i < n; i++)
    h[i] = fp_value_hash(e, outs[i], map);
  return n;
}

uint64_t fp_combine(const uint64_t *h, int n) {
  uint64_t s[EN_MAX_OUTPUTS];
  memcpy(s, h, (size_t)n * sizeof *s);
  for (int i = 1; i < n; i++) /* insertion sort: order-independent */
    for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
      uint64_t t = s[j];
      s[j] = s[j - 1], s[j - 1] = t;
    }
  return XXH3_64bits_withSeed(s, (size_t)n * sizeof *s, (uint64_t)n);
}

base_status fp_eval_graph(fp_eval *e, const en_graph *g, const uint8_t *map,
                          uint64_t *h, int *nout) {
  for (int i = 0; i < g->nops; i++) {
    base_status st = fp_eval_node(e, g, i, map);
    if (st)
      return st;
  }
  *nout = fp_out_hashes(e, g, map, h);
  return BASE_OK;
}

/* ---- renamings -------------------------------------------------------------
 */

/* The permutations of {0,1,2}; the first two also fix 2 (those of {0,1}). */
static const uint8_t perm3[6][3] = {{0, 1, 2}, {1, 0, 2}, {0, 2, 1},
                                    {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
static const uint32_t nperms[4] = {1, 1, 2, 6}; /* by copies used */

uint32_t fp_renaming_count(const uint8_t used[EN_NCLASSES]) {
  uint32_t n = 1;
  for (int c = 0; c < EN_NCLASSES; c++)
    n *= nperms[used[c]];
  return n;
}

uint32_t fp_renaming_code(const uint8_t used[EN_NCLASSES], uint32_t idx) {
  uint32_t code = 0, place = 1;
  for (int c = 0; c < EN_NCLASSES; c++) {
    code += idx % nperms[used[c]] * place;
    idx /= nperms[used[c]];
    place *= 6;
  }
  return code;
}

void fp_renaming_map(uint32_t code, uint8_t map[EN_NINPUT_IDS]) {
  /* the last class may have fewer copies than EN_MAX_COPIES (its ids end
   * at EN_NINPUT_IDS; a class of one copy is only ever renamed to
   * itself) */
  for (int c = 0; c < EN_NCLASSES; c++, code /= 6)
    for (int k = 0; k < EN_MAX_COPIES && en_input_id(c, k) < EN_NINPUT_IDS; k++)
      map[en_input_id(c, k)] = (uint8_t)en_input_id(c, perm3[code % 6][k]);
}

/* Bit per input id each node's value depends on, into m[g->nops]. */
static void node_reads(const en_graph *g, uint32_t *m) {
  for (int i = 0; i < g->nops; i++) {
    m[i] = 0;
    for (int j = 0; j < en_gop_nin(g->n[i].gop); j++) {
      uint8_t v = en_arg(&g->n[i], j);
      m[i] |= EN_IS_INPUT(v) ? 1u << v : m[EN_NODE_OF(v)];
    }
  }
}

/* Evaluates g renamed by map into e2, each node whose inputs map leaves in
 * place taking e's value (g evaluated there as it is; m: node_reads). */
static base_status eval_renamed(const fp_eval *e, fp_eval *e2,
                                const en_graph *g, const uint8_t *map,
                                const uint32_t *m) {
  uint32_t moved = 0;
  for (int v = 0; v < EN_NINPUT_IDS; v++)
    moved |= (uint32_t)(map[v] != v) << v;
  for (int i = 0; i < g->nops; i++) {
    if (m[i] & moved) {
      base_status st = fp_eval_node(e2, g, i, map);
      if (st)
        return st;
      continue;
    }
    memcpy(e2->shapes[i], e->shapes[i], sizeof e->shapes[i]);
    memcpy(e2->cur[i], e->cur[i], sizeof e->cur[i]);
  }
  return BASE_OK;
}

base_status fp_min_renaming(fp_eval *e, fp_eval *e2, const en_graph *g,
                            uint64_t *fp, uint32_t *code, uint32_t *alt,
                            int *nalt) {
  uint8_t used[EN_NCLASSES], map[EN_NINPUT_IDS];
  uint64_t h[EN_MAX_OUTPUTS];
  uint32_t m[EN_MAX_OPS];
  int n = fp_out_hashes(e, g, NULL, h);
  *fp = fp_combine(h, n);
  *code = 0;
  if (nalt)
    *nalt = 0;
  en_graph_used(g, used);
  uint32_t count = fp_renaming_count(used);
  if (count > 1)
    node_reads(g, m);
  for (uint32_t i = 1; i < count; i++) {
    uint32_t c = fp_renaming_code(used, i);
    fp_renaming_map(c, map);
    base_status st = eval_renamed(e, e2, g, map, m);
    if (st)
      return st;
    n = fp_out_hashes(e2, g, map, h);
    uint64_t f = fp_combine(h, n);
    if (f < *fp) {
      *fp = f, *code = c;
      if (nalt)
        *nalt = 0;
    } else if (f == *fp && nalt && *nalt < FP_MAX_ALT) {
      alt[(*nalt)++] = c;
    }
  }
  return BASE_OK;
}

base_status fp_graph(const en_graph *g, uint64_t seed, uint64_t *fp,
                     uint8_t perm[EN_NINPUT_IDS]) {
  fp_inputs *in = fp_inputs_new(seed);
  fp_eval *e = in ? fp_eval_new(in) : NULL, *e2 = e ? fp_eval_new(in) : NULL;
  base_status st = e2 ? BASE_OK : BASE_ERR_NOMEM;
  uint64_t h[EN_MAX_OUTPUTS];
  uint32_t code = 0;
  int n;
  if (!st)
    st = fp_eval_graph(e, g, NULL, h, &n);
  if (!st)
    st = fp_min_renaming(e, e2, g, fp, &code, NULL, NULL);
  if (!st && perm)
    fp_renaming_map(code, perm);
  fp_eval_free(e2);
  fp_eval_free(e);
  fp_inputs_free(in);
  return st;
}

int fp_eval_pair_new(const fp_inputs *in, fp_eval **e, fp_eval **e2) {
  *e = fp_eval_new(in);
  *e2 = *e ? fp_eval_new(in) : NULL;
  if (*e2)
    return 1;
  fp_eval_pair_free(e, e2);
  return 0;
}

void fp_eval_pair_free(fp_eval **e, fp_eval **e2) {
  fp_eval_free(*e);
  fp_eval_free(*e2);
  *e = *e2 = NULL;
}
