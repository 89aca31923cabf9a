/* nf.c: the normal-form table of gen-rules: value fingerprint -> the fewest
 * operators of a sub-DAG over the input pool computing that value (0 for a
 * pool input). Built size by size (every size below L is complete before the
 * values of size L are checked), each value stored under every injective
 * renaming of the input copies it reads, so a value is looked up as it is
 * computed, without canonicalising it. A value whose sub-DAG has more
 * operators than the table's entry for it is not in normal form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "fp_int.h"

struct fp_nf {
  uint64_t *key; /* 0 = empty; a hash of 0 is stored as 1 */
  uint8_t *size;
  size_t cap, n; /* cap: a power of two */
};

static uint64_t slot_key(uint64_t h) { return h ? h : 1; }

int fp_nf_smallest(const fp_nf *t, uint64_t h) {
  if (!t || !t->cap)
    return -1;
  uint64_t k = slot_key(h);
  for (size_t i = (size_t)(k * 0x9e3779b97f4a7c15ull) & (t->cap - 1);;
       i = (i + 1) & (t->cap - 1)) {
    if (t->key[i] == k)
      return t->size[i];
    if (!t->key[i])
      return -1;
  }
}

static int nf_grow(fp_nf *t, size_t need) {
  if (2 * need <= t->cap)
    return 0;
  size_t cap = t->cap ? t->cap : 1024;
  while (cap < 2 * need)
    cap *= 2;
  fp_nf old = *t;
  t->key = base_calloc(cap, sizeof *t->key);
  t->size = base_malloc(cap);
  if (!t->key || !t->size) {
    free(t->key);
    free(t->size);
    *t = old;
    return -1;
  }
  t->cap = cap, t->n = 0;
  for (size_t i = 0; i < old.cap; i++)
    if (old.key[i]) {
      size_t j = (size_t)(old.key[i] * 0x9e3779b97f4a7c15ull) & (cap - 1);
      while (t->key[j])
        j = (j + 1) & (cap - 1);
      t->key[j] = old.key[i], t->size[j] = old.size[i], t->n++;
    }
  free(old.key);
  free(old.size);
  return 0;
}

/* Records size for h unless a size as small is there already. */
static void nf_put(fp_nf *t, uint64_t h, int size) {
  uint64_t k = slot_key(h);
  size_t i = (size_t)(k * 0x9e3779b97f4a7c15ull) & (t->cap - 1);
  while (t->key[i] && t->key[i] != k)
    i = (i + 1) & (t->cap - 1);
  if (!t->key[i]) {
    t->key[i] = k, t->size[i] = (uint8_t)size, t->n++;
  } else if (size < t->size[i]) {
    t->size[i] = (uint8_t)size;
  }
}

void fp_nf_free(fp_nf *t) {
  if (!t)
    return;
  free(t->key);
  free(t->size);
  free(t);
}

long long fp_nf_count(const fp_nf *t) { return t ? (long long)t->n : 0; }

int fp_nf_last_non_normal(const fp_nf *t, const fp_eval *e, const en_graph *g) {
  int k = g->nops - 1;
  if (!t || k < 0)
    return 0;
  int cone = __builtin_popcount(en_value_cone(g, EN_VNODE(k, 0)));
  for (int s = 0; s < en_gop_nout(g->n[k].gop); s++) {
    int m = fp_nf_smallest(t, fp_value_hash(e, EN_VNODE(k, s), NULL));
    if (m >= 0 && m < cone)
      return 1;
  }
  return 0;
}

/* ---- building -------------------------------------------------------------
 */

typedef struct hvec {
  uint64_t *h;
  size_t n, cap;
} hvec;

static int hvec_push(hvec *v, uint64_t h) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 1024;
    uint64_t *nh = base_realloc(v->h, cap * sizeof *nh);
    if (!nh)
      return -1;
    v->h = nh, v->cap = cap;
  }
  v->h[v->n++] = h;
  return 0;
}

typedef struct nf_run nf_run;

typedef struct nf_branch {
  const nf_run *run;
  fp_eval *e, *e2;
  int stop; /* the last visited graph's last node is not in normal form */
  hvec found;
} nf_branch;

struct nf_run {
  const fp_nf *t; /* complete for sizes < level */
  const fp_inputs *in;
  int level;
  nf_branch **br;
};

static void *nf_begin(void *u, int b) {
  nf_run *r = u;
  nf_branch *s = base_calloc(1, sizeof *s);
  if (s && fp_eval_pair_new(r->in, &s->e, &s->e2)) {
    s->run = r;
    r->br[b] = s;
    return s;
  }
  free(s);
  return NULL;
}

static void nf_end(void *u, int b, void *state) {
  nf_branch *s = state;
  (void)u, (void)b;
  fp_eval_pair_free(&s->e, &s->e2);
}

/* Arrangements of `used` distinct copies out of `copies`, as images of
 * copies 0..used-1 (at most 6 of 3). */
static int arrangements(int used, int copies, uint8_t out[6][3]) {
  int n = 0;
  for (int a = 0; a < copies; a++)
    for (int b = 0; b < copies; b++)
      for (int c = 0; c < copies; c++) {
        uint8_t x[3] = {(uint8_t)a, (uint8_t)b, (uint8_t)c};
        int ok = 1;
        for (int i = 0; i < used && ok; i++)
          for (int j = 0; j < i; j++)
            ok &= x[i] != x[j];
        for (int i = used; i < 3 && ok; i++)
          ok &= x[i] == 0; /* unused positions: one representative */
        if (ok)
          memcpy(out[n++], x, 3);
      }
  return n;
}

/* Hashes of the last node's values under every injective renaming of the
 * copies g reads, into s->found. */
static base_status nf_record(nf_branch *s, const en_graph *g) {
  uint8_t used[EN_NCLASSES], arr[EN_NCLASSES][6][3], map[EN_NINPUT_IDS];
  int narr[EN_NCLASSES], idx[EN_NCLASSES] = {0};
  en_graph_used(g, used);
  for (int c = 0; c < EN_NCLASSES; c++)
    narr[c] = arrangements(used[c], en_class_of(c)->copies, arr[c]);
  for (;;) {
    for (int v = 0; v < EN_NINPUT_IDS; v++)
      map[v] = (uint8_t)v;
    for (int c = 0; c < EN_NCLASSES; c++)
      for (int k = 0; k < used[c]; k++) {
        int id = en_input_id(c, k); /* below EN_NINPUT_IDS: the last class
                                       has one copy (gcc -O3 cannot see it) */
        if (id < EN_NINPUT_IDS)
          map[id] = (uint8_t)en_input_id(c, arr[c][idx[c]][k]);
      }
    for (int i = 0; i < g->nops; i++) {
      base_status st = fp_eval_node(s->e2, g, i, map);
      if (st)
        return st;
    }
    int k = g->nops - 1;
    for (int sl = 0; sl < en_gop_nout(g->n[k].gop); sl++)
      if (hvec_push(&s->found, fp_value_hash(s->e2, EN_VNODE(k, sl), map)))
        return BASE_ERR_NOMEM;
    int c = 0; /* next renaming: mixed-radix odometer */
    while (c < EN_NCLASSES && ++idx[c] == narr[c])
      idx[c++] = 0;
    if (c == EN_NCLASSES)
      return BASE_OK;
  }
}

/* Evaluates the last node; at the level's depth records the values of a
 * normal last node whose sub-DAG is the whole graph. */
static base_status nf_visit(void *state, const en_graph *g,
                            const ir_shape (*shapes)[EN_NSLOTS], int is_graph) {
  nf_branch *s = state;
  (void)shapes, (void)is_graph;
  s->stop = 0;
  if (!g->nops)
    return BASE_OK;
  base_status st = fp_eval_node(s->e, g, g->nops - 1, NULL);
  if (st)
    return st;
  s->stop = fp_nf_last_non_normal(s->run->t, s->e, g);
  uint32_t all = (1u << g->nops) - 1;
  if (s->stop || g->nops != s->run->level ||
      en_value_cone(g, EN_VNODE(g->nops - 1, 0)) != all)
    return BASE_OK;
  return nf_record(s, g);
}

static int nf_stop(void *state, const en_graph *g) {
  (void)g;
  return ((nf_branch *)state)->stop;
}

/* Size 0: every pool input of the set. */
static base_status nf_inputs(fp_nf *t, const fp_inputs *in, int extended) {
  if (nf_grow(t, EN_NINPUT_IDS))
    return BASE_ERR_NOMEM;
  for (int c = 0; c < EN_NCLASSES; c++)
    for (int k = 0; en_class_on(c, extended) && k < en_class_of(c)->copies; k++)
      nf_put(t,
             fp_tensor_hash(&en_class_of(c)->shape, in->v[en_input_id(c, k)]),
             0);
  return BASE_OK;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* This rank's found hashes, sorted and unique, to every rank: *all and *n
 * hold every rank's (the union is the level's values, as one process would
 * find them). */
static base_status nf_share(const fp_comm *comm, nf_run *r, int nb,
                            uint64_t **all, size_t *n, base_diag *d) {
  hvec mine = {0};
  size_t *rn = base_calloc((size_t)comm->size, sizeof *rn);
  base_status st = rn ? BASE_OK : BASE_ERR_NOMEM;
  for (int b = 0; b < nb && !st; b++)
    for (size_t i = 0; r->br[b] && i < r->br[b]->found.n && !st; i++)
      if (hvec_push(&mine, r->br[b]->found.h[i]))
        st = BASE_ERR_NOMEM;
  size_t m = 0;
  if (!st && mine.n) {
    qsort(mine.h, mine.n, sizeof *mine.h, u64_cmp);
    for (size_t i = 0; i < mine.n; i++)
      if (!m || mine.h[i] != mine.h[m - 1])
        mine.h[m++] = mine.h[i];
  }
  if (st)
    base_diag_set(d, st, 0, 0, "out of memory");
  if (!(st = fp_comm_agree(comm, st, d)))
    st = comm->allgatherv(comm->u, mine.h, m * sizeof *mine.h, (void **)all, rn,
                          d);
  *n = 0;
  for (int k = 0; !st && k < comm->size; k++)
    *n += rn[k] / sizeof **all;
  free(rn);
  free(mine.h);
  return st;
}

/* Adds the values of `level` operators (t complete below level). With
 * comm, this rank enumerates the branches of mask and the ranks exchange
 * what they found. */
static base_status nf_level(fp_nf *t, const en_config *c, const fp_inputs *in,
                            int level, const fp_comm *comm, const uint8_t *mask,
                            base_diag *d) {
  en_config lc = *c;
  lc.max_ops = level;
  lc.progress = NULL;
  lc.branches = mask;
  int nb = en_branch_count(&lc);
  nf_run r = {t, in, level, base_calloc((size_t)nb, sizeof(nf_branch *))};
  base_status st = r.br ? BASE_OK : BASE_ERR_NOMEM;
  if (!st) {
    en_visitor v = {nf_begin, nf_visit, nf_end, &r, nf_stop};
    st = en_enumerate(&lc, &v, d);
  }
  uint64_t *all = NULL;
  size_t nall = 0;
  if (comm && (st = fp_comm_agree(comm, st, d)) == BASE_OK)
    st = nf_share(comm, &r, nb, &all, &nall, d);
  size_t n = t->n + nall;
  for (int b = 0; !comm && r.br && b < nb; b++)
    n += r.br[b] ? r.br[b]->found.n : 0;
  if (!st && nf_grow(t, n))
    st = BASE_ERR_NOMEM;
  for (size_t i = 0; !st && i < nall; i++)
    nf_put(t, all[i], level);
  for (int b = 0; r.br && b < nb; b++) {
    if (!r.br[b])
      continue;
    for (size_t i = 0; !st && !comm && i < r.br[b]->found.n; i++)
      nf_put(t, r.br[b]->found.h[i], level);
    free(r.br[b]->found.h);
    free(r.br[b]);
  }
  free(r.br);
  free(all);
  return st;
}

base_status fp_nf_build_comm(const en_config *c, int max_size,
                             const fp_comm *comm, const uint8_t *mask,
                             fp_nf **out, base_diag *d) {
  fp_nf *t = base_calloc(1, sizeof *t);
  fp_inputs *in = fp_inputs_new(FP_SEED1);
  base_status st = t && in ? nf_inputs(t, in, c->extended) : BASE_ERR_NOMEM;
  if (!comm || comm->size <= 1)
    comm = NULL, mask = NULL;
  for (int level = 1; level <= max_size && !st; level++)
    st = nf_level(t, c, in, level, comm, mask, d);
  fp_inputs_free(in);
  if (st) {
    if (st == BASE_ERR_NOMEM)
      base_diag_set(d, st, 0, 0, "out of memory");
    fp_nf_free(t);
    t = NULL;
  }
  *out = t;
  return st;
}

base_status fp_nf_build(const en_config *c, int max_size, fp_nf **out,
                        base_diag *d) {
  return fp_nf_build_comm(c, max_size, NULL, NULL, out, d);
}

/* ---- saved in a checkpoint (dir/nf.tab) ----------------------------------
 * A header (magic, key, max_size, entries, XXH64 of the payload), then the
 * entries' slot keys and their sizes, in slot order. */

#define NF_MAGIC "SONFTB01"

typedef struct nf_header {
  char magic[8];
  uint64_t key, max_size, n, sum;
} nf_header;

static uint64_t nf_sum(const uint64_t *k, const uint8_t *sz, size_t n,
                       uint64_t key) {
  return XXH64(sz, n, XXH64(k, n * sizeof *k, key));
}

base_status fp_nf_save(const fp_nf *t, const char *dir, uint64_t key,
                       int max_size, base_diag *d) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/nf.tab", dir) >= (int)sizeof path)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "checkpoint path too long: %s",
                         dir);
  size_t n = t ? t->n : 0;
  uint64_t *k = base_malloc((n ? n : 1) * sizeof *k);
  uint8_t *sz = base_malloc(n ? n : 1);
  if (!k || !sz) {
    free(k), free(sz);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  size_t m = 0;
  for (size_t i = 0; t && i < t->cap; i++)
    if (t->key[i])
      k[m] = t->key[i], sz[m++] = t->size[i];
  nf_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, NF_MAGIC, 8);
  h.key = key, h.max_size = (uint64_t)max_size, h.n = m;
  h.sum = nf_sum(k, sz, m, key);
  const void *part[3] = {&h, k, sz};
  size_t len[3] = {sizeof h, m * sizeof *k, m};
  base_status st = fp_ckpt_atomic_write(path, part, len, 3, d);
  free(k), free(sz);
  return st;
}

base_status fp_nf_load(const char *dir, uint64_t key, int max_size, fp_nf **out,
                       int *found, base_diag *d) {
  char path[4096];
  *out = NULL, *found = 0;
  if (snprintf(path, sizeof path, "%s/nf.tab", dir) >= (int)sizeof path)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "checkpoint path too long: %s",
                         dir);
  FILE *f;
  base_status st = fp_ckpt_open(path, &f, d);
  if (st || !f)
    return st;
  nf_header h;
  struct stat sb;
  uint64_t *k = NULL;
  uint8_t *sz = NULL;
  fp_nf *t = NULL;
  const char *why = NULL;
  if (fstat(fileno(f), &sb) != 0 || fread(&h, sizeof h, 1, f) != 1 ||
      memcmp(h.magic, NF_MAGIC, 8))
    why = "not a normal-form table of this format";
  else if (h.key != key || h.max_size != (uint64_t)max_size)
    why = "made by other gen-rules arguments or another build (use another "
          "--checkpoint directory)";
  else if ((uint64_t)sb.st_size != sizeof h + h.n * (sizeof *k + 1))
    why = "truncated or too long";
  else if (!(k = base_malloc(h.n ? h.n * sizeof *k : 1)) ||
           !(sz = base_malloc(h.n ? h.n : 1)) ||
           !(t = base_calloc(1, sizeof *t)) || nf_grow(t, h.n))
    why = "out of memory";
  else if (h.n &&
           (fread(k, sizeof *k, h.n, f) != h.n || fread(sz, 1, h.n, f) != h.n))
    why = "cannot read its entries";
  else if (nf_sum(k, sz, h.n, key) != h.sum)
    why = "checksum mismatch";
  fclose(f);
  for (size_t i = 0; !why && i < h.n; i++)
    nf_put(t, k[i], sz[i]);
  free(k), free(sz);
  if (why) {
    fp_nf_free(t);
    return fp_ckpt_bad(path, why, d);
  }
  *out = t, *found = 1;
  return BASE_OK;
}

/* ---- rules as ir_graphs ---------------------------------------------------
 */

/* Pool input for a tensor of shape s: the next unused copy of its class,
 * or -1. */
static int pool_input(const ir_shape *s, int next[EN_NCLASSES]) {
  for (int c = 0; c < EN_NCLASSES; c++)
    if (ir_shape_eq(s, &en_class_of(c)->shape))
      return next[c] < en_class_of(c)->copies ? en_input_id(c, next[c]++) : -1;
  return -1;
}

/* Whether an intermediate of g is not in normal form (0 when g cannot be
 * evaluated on the pool; -1 when out of memory). */
static int side_redundant(const fp_nf *t, const fp_inputs *in,
                          const ir_graph *g, uint32_t **val, uint64_t *cone,
                          uint8_t *flags) {
  int next[EN_NCLASSES] = {0};
  enum { READ = 1, OUT = 2 };
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind != IR_T_VALUE) {
      int v = pool_input(&g->tensors[i].shape, next);
      if (v < 0)
        return 0;
      val[i] = in->v[v];
    }
  for (int i = 0; i < g->noutputs; i++)
    flags[g->outputs[i]] |= OUT;
  for (int k = 0; k < g->nnodes; k++) {
    const ir_node *n = &g->nodes[k];
    int e = fp_ir_node(g, k, val, in->key);
    if (e)
      return e == -2 ? -1 : 0;
    uint64_t m = (uint64_t)1 << k;
    for (int j = 0; j < n->nin; j++) {
      m |= cone[n->in[j]];
      flags[n->in[j]] |= READ;
    }
    for (int j = 0; j < n->nout; j++)
      cone[n->out[j]] = m;
  }
  for (int i = 0; i < g->ntensors; i++) {
    if (g->tensors[i].kind != IR_T_VALUE || flags[i] != READ)
      continue;
    int s = fp_nf_smallest(t, fp_tensor_hash(&g->tensors[i].shape, val[i]));
    if (s >= 0 && s < __builtin_popcountll(cone[i]))
      return 1;
  }
  return 0;
}

static base_status graph_redundant(const fp_nf *t, const fp_inputs *in,
                                   const ir_graph *g, int *red) {
  size_t n = (size_t)g->ntensors + 1;
  uint32_t **val = base_calloc(n, sizeof *val);
  uint64_t *cone = base_calloc(n, sizeof *cone);
  uint8_t *flags = base_calloc(n, 1);
  base_status st = val && cone && flags ? BASE_OK : BASE_ERR_NOMEM;
  if (!st && g->nnodes <= 64)
    *red = side_redundant(t, in, g, val, cone, flags);
  if (!st && *red < 0)
    st = BASE_ERR_NOMEM, *red = 0;
  for (int i = 0; val && i < g->ntensors; i++)
    if (g->tensors[i].kind == IR_T_VALUE)
      free(val[i]);
  free(val);
  free(cone);
  free(flags);
  return st;
}

base_status fp_nf_rule_redundant(const fp_nf *t, const ir_rule *r,
                                 int *redundant, base_diag *d) {
  fp_inputs *in = fp_inputs_new(FP_SEED1);
  int a = 0, b = 0;
  base_status st = in ? graph_redundant(t, in, r->src, &a) : BASE_ERR_NOMEM;
  if (!st)
    st = graph_redundant(t, in, r->dst, &b);
  fp_inputs_free(in);
  *redundant = a || b;
  if (st)
    return base_diag_set(d, st, 0, 0, "out of memory");
  return BASE_OK;
}
