/* cost.c: the cost of a node (measurement, else estimate) and of a graph
 * (sum over the nodes that run), with an in-memory cache keyed by the
 * bytes that determine a node's signature: its device, operator,
 * parameters and input shapes. Hitting the cache formats no signature and
 * asks SQLite nothing. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cd_int.h"

int cd_device_index(const cd_device *dev, base_diag *d) {
  for (int i = 0; i < cd_ndevices(); i++)
    if (dev == cd_device_at(i) || !strcmp(dev->name, cd_device_at(i)->name))
      return i;
  cd_device_find(dev->name, d);
  return -1;
}

/* Appends n bytes at *k. */
static void append(unsigned char *key, size_t *k, const void *p, size_t n) {
  memcpy(key + *k, p, n);
  *k += n;
}

static size_t key_max(const ir_node *nd) {
  return 4 * sizeof(int32_t) + sizeof(ir_attrs) +
         (size_t)nd->nin *
             (2 * sizeof(int32_t) + IR_MAX_RANK * sizeof(int64_t));
}

/* The node's cache key into key (key_max bytes); returns its length.
 * ir_attrs has no padding bytes; shapes are copied field by field. */
static size_t node_key(const ir_graph *g, const ir_node *nd, int32_t dev,
                       int32_t as, unsigned char *key) {
  size_t k = 0;
  int32_t op = (int32_t)nd->op;
  append(key, &k, &dev, sizeof dev);
  append(key, &k, &as, sizeof as);
  append(key, &k, &op, sizeof op);
  append(key, &k, &nd->nin, sizeof nd->nin);
  append(key, &k, &nd->a, sizeof nd->a);
  for (int i = 0; i < nd->nin; i++) {
    const ir_shape *s = &g->tensors[nd->in[i]].shape;
    append(key, &k, &g->tensors[nd->in[i]].dtype, sizeof(int32_t));
    append(key, &k, &s->rank, sizeof s->rank);
    append(key, &k, s->dim, (size_t)s->rank * sizeof *s->dim);
  }
  return k;
}

/* Cache miss: the database's measurement, else the estimate. */
static base_status resolve(cd_db *db, const cd_device *dev, const ir_graph *g,
                           int node, ir_dtype as, double *ms, int *estimated,
                           base_diag *d) {
  char sig[CD_SIG_MAX];
  int found = 0;
  if (cd_node_sig_as(g, node, as, sig, sizeof sig) >= sizeof sig)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "operator signature longer than %d bytes", CD_SIG_MAX);
  base_status st = cd_lookup(db, dev->name, sig, ms, &found, d);
  if (st)
    return st;
  *estimated = !found;
  if (!found)
    *ms = cd_estimate(dev, g, node);
  return BASE_OK;
}

static base_status cached(cd_db *db, int32_t devi, const cd_device *dev,
                          const ir_graph *g, int node, ir_dtype as, double *ms,
                          int *estimated, base_diag *d) {
  const ir_node *nd = &g->nodes[node];
  unsigned char *key = cd_scratch(db, key_max(nd));
  if (!key)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  size_t len = node_key(g, nd, devi, (int32_t)as, key);
  uint64_t h = XXH3_64bits(key, len);
  const cd_centry *e = cd_cache_get(&db->cache, key, len, h);
  if (e) {
    *ms = e->ms;
    *estimated = e->estimated;
    return BASE_OK;
  }
  base_status st = resolve(db, dev, g, node, as, ms, estimated, d);
  if (st)
    return st;
  /* resolve may have imported a table (clearing the cache): the key is
   * still in db->scratch, which only cd_node_cost grows */
  if (cd_cache_put(&db->cache, key, len, h, *ms, *estimated))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return BASE_OK;
}

int cd_memo_get(cd_db *db, const ir_graph *g, int node, int32_t tag,
                double *ms) {
  const ir_node *nd = &g->nodes[node];
  unsigned char *key = db ? cd_scratch(db, key_max(nd)) : NULL;
  if (!key)
    return 0;
  size_t len = node_key(g, nd, tag, (int32_t)IR_DT_F32, key);
  const cd_centry *e =
      cd_cache_get(&db->cache, key, len, XXH3_64bits(key, len));
  if (e)
    *ms = e->ms;
  return e != NULL;
}

base_status cd_memo_put(cd_db *db, const ir_graph *g, int node, int32_t tag,
                        double ms, base_diag *d) {
  const ir_node *nd = &g->nodes[node];
  unsigned char *key = db ? cd_scratch(db, key_max(nd)) : NULL;
  if (!db)
    return BASE_OK;
  if (!key)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  size_t len = node_key(g, nd, tag, (int32_t)IR_DT_F32, key);
  uint64_t h = XXH3_64bits(key, len);
  if (!cd_cache_get(&db->cache, key, len, h) &&
      cd_cache_put(&db->cache, key, len, h, ms, 1))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return BASE_OK;
}

base_status cd_node_cost(cd_db *db, const cd_device *dev, const ir_graph *g,
                         int node, double *ms, int *estimated, base_diag *d) {
  return cd_node_cost_as(db, dev, g, node, IR_DT_F32, ms, estimated, d);
}

base_status cd_node_cost_as(cd_db *db, const cd_device *dev, const ir_graph *g,
                            int node, ir_dtype as, double *ms, int *estimated,
                            base_diag *d) {
  int devi = cd_device_index(dev, d);
  if (devi < 0)
    return BASE_ERR_PARAM;
  if (!db) {
    *ms = cd_estimate(dev, g, node);
    *estimated = 1;
    return BASE_OK;
  }
  return cached(db, devi, dev, g, node, as, ms, estimated, d);
}

static base_status sum(cd_db *db, const cd_device *dev, const ir_graph *g,
                       const unsigned char *folded, cd_cost *out,
                       base_diag *d) {
  for (int i = 0; i < g->nnodes; i++) {
    double ms;
    int est;
    if (folded[i]) {
      out->nfolded++;
      continue;
    }
    base_status st = cd_node_cost(db, dev, g, i, &ms, &est, d);
    if (st)
      return st;
    out->ms += ms;
    out->nestimated += est;
    out->nmeasured += !est;
  }
  return BASE_OK;
}

base_status cd_graph_cost(cd_db *db, const cd_device *dev, const ir_graph *g,
                          cd_cost *out, base_diag *d) {
  memset(out, 0, sizeof *out);
  unsigned char local[1024], *folded = local;
  if (g->nnodes > (int)sizeof local &&
      !(folded = base_malloc((size_t)g->nnodes)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ir_weight_only(g, folded);
  base_status st = sum(db, dev, g, folded, out, d);
  if (folded != local)
    free(folded);
  return st;
}

base_status cd_sum_cost(const ir_graph *g, cd_cost_fn f, void *u, double *cost,
                        int *estimated, base_diag *d) {
  uint8_t small[256], *mask = small;
  if (g->nnodes > (int)sizeof small && !(mask = base_malloc((size_t)g->nnodes)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ir_weight_only(g, mask);
  double c = 0;
  int est = 0;
  base_status st = BASE_OK;
  for (int i = 0; !st && i < g->nnodes; i++) {
    if (mask[i])
      continue;
    int e = 0;
    double ci = 0;
    st = f(u, g, i, &ci, &e, d);
    c += ci;
    est |= e;
  }
  if (mask != small)
    free(mask);
  if (estimated)
    *estimated = est;
  *cost = c;
  return st;
}

/* ran[i] = 1 for every node of g an ONNX runtime runs per inference: all
 * but those computing only from weights with values and constants
 * (tensors in known, grown here), which it folds at load. */
static void runtime_nodes(const ir_graph *g, unsigned char *known,
                          unsigned char *ran) {
  for (int i = 0; i < g->ntensors; i++)
    known[i] = g->tensors[i].kind == IR_T_WEIGHT && g->tensors[i].data;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int folded = 1;
    for (int k = 0; folded && k < n->nin; k++)
      folded = known[n->in[k]];
    for (int k = 0; folded && k < n->nout; k++)
      known[n->out[k]] = 1;
    ran[i] = (unsigned char)!folded;
  }
}

base_status cd_sum_cost_runtime(const ir_graph *g, cd_cost_fn f, void *u,
                                double *cost, int *estimated, int *kept,
                                base_diag *d) {
  unsigned char *known = base_calloc((size_t)g->ntensors + 1, 1);
  unsigned char *ran = base_calloc((size_t)g->nnodes + 1, 1);
  unsigned char *wo = base_calloc((size_t)g->nnodes + 1, 1);
  base_status st = known && ran && wo ? BASE_OK
                                      : base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                                                      "out of memory");
  double c = 0;
  int est = 0, k = 0;
  if (!st) {
    runtime_nodes(g, known, ran);
    ir_weight_only(g, wo);
  }
  for (int i = 0; !st && i < g->nnodes; i++) {
    int e = 0;
    double ci = 0;
    if (!ran[i])
      continue;
    k += wo[i];
    st = f(u, g, i, &ci, &e, d);
    c += ci;
    est |= e;
  }
  free(known), free(ran), free(wo);
  if (estimated)
    *estimated = est;
  if (kept)
    *kept = k;
  *cost = c;
  return st;
}
