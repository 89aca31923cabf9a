/* search.c: mutants join the optimizer's search (mutant_optimize).
 *
 * The joint search (PET's): from every graph a region search expands, the
 * mutants of that graph are candidates beside the rule rewrites
 * (srch_options.move_fn): f's convolutions replaced by g plus its
 * correction, priced with the search's own cost model and queued under its
 * policy (alpha, budget, backtracking), so a mutant that does not pay by
 * itself may still lead to a rule that does. Each distinct mutant (its
 * class and f's text) is analysed and corrected once and kept here; the
 * mutants on the path to a region's result are the ones taken
 * (srch_options.move_taken). Deterministic for a seed: mutants in
 * generation order, ties in the queue by creation order.
 *
 * MUTANT_GREEDY keeps the earlier step, for the ablation: every region's
 * best graph of the last pass through mutant_apply (srch_options.region_fn).
 */
#include <stdlib.h>
#include <string.h>

#include "mutant_int.h"

/* One distinct mutant the joint search met. */
typedef enum seen_bucket {
  B_NOT_CHEAPER,
  B_REFUSED,
  B_UNMEASURED,
  B_NOT_CHOSEN,
  B_TAKEN
} seen_bucket;

struct mutant_seen {
  char *key; /* class letter + f's text */
  uint64_t hash;
  mutant_applied a; /* class, sites, costs, boxes */
  double ms_g;      /* g alone */
  int est;          /* a cost of f, or of g + correction, estimated */
  int analysed;     /* the box analysis ran (h, or refused) */
  ir_graph *h;      /* g + correction, NULL when refused */
  mutant mu;        /* f and g (kept: a site met again is not rebuilt) */
  seen_bucket b;
};

/* The sites met (a site: a class and its conv nodes, by their output and
 * input names, shapes, types and parameters, which determine f): the
 * entry of their mutant, or -1 where the class does not apply. An open
 * addressing table on the key's hash. */
typedef struct site_rec {
  unsigned char *key;
  size_t len;
  uint64_t hash;
  int entry;
} site_rec;

struct mutant_sites {
  site_rec *v;
  int n, cap;   /* records */
  int32_t *tab; /* record index + 1, 0 empty */
  int tcap;     /* power of 2 */
};

static int *bucket_count(mutant_apply_stats *t, seen_bucket b) {
  switch (b) {
  case B_NOT_CHEAPER: return &t->not_cheaper;
  case B_REFUSED: return &t->refused;
  case B_UNMEASURED: return &t->unmeasured;
  case B_NOT_CHOSEN: return &t->overlapping;
  default: return NULL;
  }
}

static void set_bucket(mutant_search *m, mutant_seen *e, seen_bucket b) {
  int *c = bucket_count(m->total, e->b);
  if (c)
    (*c)--;
  if ((c = bucket_count(m->total, b)))
    (*c)++;
  m->total->cls_unmeasured[e->a.cls] +=
      (b == B_UNMEASURED) - (e->b == B_UNMEASURED);
  e->b = b;
}

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* A box analysis, by f's and g's text with their tensors named by index
 * (mutant_analyze does not depend on names but through the seeded draw,
 * whose bound holds for any draw): NASNet's repeated cells, and convs a
 * rule rewrote under new names, share one. */
struct mutant_known {
  char *key;
  uint64_t hash;
  int refused;
  mutant_box *wrong;
  int nwrong;
  int64_t wrong_numel, numel;
};

/* cls, f and g printed with f's tensors named tK (K its index) and g's
 * own tensors uK: NULL when out of memory. */
static char *names_free_text(const mutant *mu) {
  ir_graph *f = mu->f, *g = mu->g;
  int n = f->ntensors + g->ntensors;
  char(*nm)[24] = base_malloc(sizeof *nm * ((size_t)n + 1));
  const char **keep = base_malloc(sizeof *keep * ((size_t)n + 1));
  char *a = NULL, *b = NULL, *r = NULL;
  if (!nm || !keep)
    goto out;
  for (int j = 0; j < g->ntensors; j++) {
    int k = ir_find_tensor(f, g->tensors[j].name);
    snprintf(nm[f->ntensors + j], sizeof *nm, k >= 0 ? "t%d" : "u%d",
             k >= 0 ? k : j);
  }
  for (int i = 0; i < f->ntensors; i++)
    snprintf(nm[i], sizeof *nm, "t%d", i);
  for (int i = 0; i < n; i++) {
    ir_tensor *t =
        i < f->ntensors ? &f->tensors[i] : &g->tensors[i - f->ntensors];
    keep[i] = t->name, t->name = nm[i];
  }
  const char *fn = f->name, *gn = g->name;
  f->name = g->name = NULL;
  a = ir_print(f), b = ir_print(g);
  f->name = fn, g->name = gn;
  for (int i = 0; i < n; i++)
    (i < f->ntensors ? &f->tensors[i] : &g->tensors[i - f->ntensors])->name =
        keep[i];
  base_buf o = {0};
  if (a && b)
    base_buf_printf(&o, "%c%s--\n%s", 'a' + (int)mu->cls, a, b);
  r = a && b && !o.oom ? o.s : (free(o.s), NULL);
out:
  free(nm), free(keep), free(a), free(b);
  return r;
}

/* The box analysis of mu, reused when f and g are a known pair up to
 * names (*k; its wrong boxes are k->wrong). BASE_OK with (*k)->refused
 * when the analysis refuses them; fails only out of memory. */
static base_status known_boxes(mutant_search *m, const mutant *mu,
                               mutant_known **k, base_diag *d) {
  char *key = names_free_text(mu);
  if (!key)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  uint64_t h = str_hash(key);
  for (int i = 0; i < m->nknown; i++)
    if (m->known[i].hash == h && !strcmp(m->known[i].key, key)) {
      free(key);
      *k = &m->known[i];
      return BASE_OK;
    }
  if (m->nknown == m->capknown) {
    int cap = m->capknown ? 2 * m->capknown : 64;
    mutant_known *v = base_realloc(m->known, sizeof *v * (size_t)cap);
    if (!v) {
      free(key);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    m->known = v, m->capknown = cap;
  }
  mutant_known *e = &m->known[m->nknown];
  *e = (mutant_known){.key = key, .hash = h};
  mutant_boxes bx;
  base_diag q;
  base_status s = mutant_analyze(mu->f, mu->g, m->seed, &bx, &q);
  if (s == BASE_ERR_NOMEM) {
    free(key);
    return base_diag_set(d, s, 0, 0, "%s", q.msg);
  }
  e->refused = s != BASE_OK;
  if (!s) {
    e->wrong = base_malloc(sizeof *e->wrong * ((size_t)bx.nwrong + 1));
    if (!e->wrong) {
      mutant_boxes_free(&bx);
      free(key);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    if (bx.nwrong) /* bx.wrong is NULL when no box is wrong */
      memcpy(e->wrong, bx.wrong, sizeof *e->wrong * (size_t)bx.nwrong);
    e->nwrong = bx.nwrong;
    e->wrong_numel = bx.wrong_numel, e->numel = bx.numel;
    mutant_boxes_free(&bx);
  }
  *k = e;
  m->nknown++;
  return BASE_OK;
}

/* The entry of mu (*at), added with the costs of f and g when new. */
static base_status find_seen(mutant_search *m, const mutant *mu, int *at,
                             base_diag *d) {
  char *text = ir_print(mu->f);
  base_buf b = {0};
  if (text)
    base_buf_printf(&b, "%c%s", 'a' + (int)mu->cls, text);
  free(text);
  if (!text || b.oom) {
    free(b.s);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  uint64_t h = str_hash(b.s);
  for (int i = 0; i < m->nseen; i++)
    if (m->seen[i].hash == h && !strcmp(m->seen[i].key, b.s)) {
      free(b.s);
      *at = i;
      return BASE_OK;
    }
  if (m->nseen == m->capseen) {
    int cap = m->capseen ? 2 * m->capseen : 64;
    mutant_seen *v = base_realloc(m->seen, sizeof *v * (size_t)cap);
    if (!v) {
      free(b.s);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    m->seen = v, m->capseen = cap;
  }
  mutant_seen *e = &m->seen[m->nseen];
  *e = (mutant_seen){.key = b.s, .hash = h, .b = B_NOT_CHEAPER};
  e->a.cls = mu->cls;
  for (int i = 0; i < mu->f->noutputs && i < 2; i++)
    snprintf(e->a.site[i], sizeof e->a.site[i], "%s",
             mu->f->tensors[mu->f->outputs[i]].name);
  base_status st =
      cd_sum_cost(mu->f, m->cost, m->cost_u, &e->a.ms_before, &e->est, d);
  if (!st)
    st = cd_sum_cost(mu->g, m->cost, m->cost_u, &e->ms_g, NULL, d);
  if (st) {
    free(b.s);
    return st;
  }
  *at = m->nseen++;
  m->total->considered++;
  m->total->cls_considered[mu->cls]++;
  m->total->not_cheaper++; /* until analysed */
  return BASE_OK;
}

/* The box analysis and correction of e's mutant mu, once: e->h (NULL when
 * refused), its cost and its bucket. Fails only on a hard error. */
static base_status analyse(mutant_search *m, mutant_seen *e, const mutant *mu,
                           base_diag *d) {
  if (e->analysed)
    return BASE_OK;
  e->analysed = 1;
  mutant_known *k = NULL;
  base_diag q;
  base_status s = known_boxes(m, mu, &k, d);
  if (s)
    return s;
  s = k->refused ? BASE_ERR_PARAM : BASE_OK;
  if (!s) {
    s = mutant_correct(mu->f, mu->g, k->wrong, k->nwrong, &e->h, &q);
    e->a.wrong_numel = k->wrong_numel, e->a.numel = k->numel;
    e->a.bound = mutant_false_equal_bound(mu->f, mu->g);
  }
  if (s == BASE_ERR_NOMEM)
    return base_diag_set(d, s, 0, 0, "%s", q.msg);
  if (s) {
    set_bucket(m, e, B_REFUSED);
    return BASE_OK;
  }
  int est = 0;
  if (cd_sum_cost(e->h, m->cost, m->cost_u, &e->a.ms_after, &est, d))
    return d->code;
  e->est |= est;
  int cheaper = e->a.ms_after < e->a.ms_before;
  set_bucket(m, e,
             !cheaper                                  ? B_NOT_CHEAPER
             : e->est && !(m->mask & MUTANT_ESTIMATES) ? B_UNMEASURED
                                                       : B_NOT_CHOSEN);
  return BASE_OK;
}

/* Offers the mutant mu (entry e) of g to the search when it may be queued
 * (adds at most limit to g's cost) and rests on measured costs. */
static base_status offer(mutant_search *m, int e, const mutant *mu,
                         const ir_graph *g, double limit, srch_emit_fn emit,
                         void *eu, int *offered, base_diag *d) {
  mutant_seen *x = &m->seen[e];
  if (!(x->ms_g < x->a.ms_before) && x->ms_g - x->a.ms_before > limit)
    return BASE_OK; /* g alone already adds too much: no analysis */
  base_status s = analyse(m, x, mu, d);
  if (s || !x->h || x->a.ms_after - x->a.ms_before > limit ||
      (x->est && !(m->mask & MUTANT_ESTIMATES)))
    return s;
  int32_t sites[2];
  ir_graph *next = NULL;
  base_diag q;
  if (mutant_sites_in(g, mu, sites))
    return BASE_OK;
  s = mutant_splice(g, sites, mu->f->noutputs, mu->f, x->h, &next, &q);
  if (s == BASE_ERR_NOMEM)
    return base_diag_set(d, s, 0, 0, "out of memory");
  if (s)
    return BASE_OK; /* e.g. the mutant's inputs depend on its outputs here */
  (*offered)++;
  m->total->candidates++;
  return emit(eu, next, e, d);
}

/* ---- sites ----------------------------------------------------------------
 */

typedef struct kbuf {
  unsigned char *s;
  size_t n, cap;
  int oom;
} kbuf;

static void kput(kbuf *b, const void *p, size_t n) {
  if (b->oom)
    return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 512;
    while (cap < b->n + n)
      cap *= 2;
    unsigned char *v = base_realloc(b->s, cap);
    if (!v) {
      b->oom = 1;
      return;
    }
    b->s = v, b->cap = cap;
  }
  memcpy(b->s + b->n, p, n);
  b->n += n;
}

static void kput_tensor(kbuf *b, const ir_tensor *t) {
  kput(b, t->name, strlen(t->name) + 1);
  kput(b, &t->kind, sizeof t->kind);
  kput(b, &t->dtype, sizeof t->dtype);
  kput(b, &t->shape, sizeof t->shape);
  kput(b, &t->data, sizeof t->data);
}

/* The key of a site: its class and, per conv node, its parameters and
 * its inputs' and outputs' names, kinds, types, shapes and known data. */
static int site_key(kbuf *b, mutant_class cls, const ir_graph *g,
                    const int32_t *nodes) {
  int n = mutant_class_nodes(cls);
  kput(b, &cls, sizeof cls);
  for (int i = 0; i < n; i++) {
    const ir_node *nd = &g->nodes[nodes[i]];
    kput(b, &nd->op, sizeof nd->op);
    kput(b, &nd->a, sizeof nd->a);
    kput(b, &nd->nin, sizeof nd->nin);
    for (int j = 0; j < nd->nin; j++)
      kput_tensor(b, &g->tensors[nd->in[j]]);
    for (int j = 0; j < nd->nout; j++)
      kput_tensor(b, &g->tensors[nd->out[j]]);
  }
  return b->oom ? -1 : 0;
}

static uint64_t bytes_hash(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The record of key (-1: none). */
static int site_find(const struct mutant_sites *t, const kbuf *k, uint64_t h) {
  if (!t->tcap)
    return -1;
  for (int j = (int)(h & (uint64_t)(t->tcap - 1));;
       j = (j + 1) & (t->tcap - 1)) {
    int r = t->tab[j] - 1;
    if (r < 0)
      return -1;
    const site_rec *s = &t->v[r];
    if (s->hash == h && s->len == k->n && !memcmp(s->key, k->s, k->n))
      return r;
  }
}

/* Adds key (taken) -> entry; -1 out of memory. */
static int site_add(struct mutant_sites *t, kbuf *k, uint64_t h, int entry) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 256;
    site_rec *v = base_realloc(t->v, sizeof *v * (size_t)cap);
    if (!v)
      return -1;
    t->v = v, t->cap = cap;
  }
  if (2 * (t->n + 1) > t->tcap) {
    int cap = t->tcap ? 2 * t->tcap : 1024;
    int32_t *tab = base_calloc((size_t)cap, sizeof *tab);
    if (!tab)
      return -1;
    for (int r = 0; r < t->n; r++)
      for (int j = (int)(t->v[r].hash & (uint64_t)(cap - 1));;
           j = (j + 1) & (cap - 1))
        if (!tab[j]) {
          tab[j] = r + 1;
          break;
        }
    free(t->tab);
    t->tab = tab, t->tcap = cap;
  }
  t->v[t->n] = (site_rec){k->s, k->n, h, entry};
  k->s = NULL, k->n = k->cap = 0;
  for (int j = (int)(h & (uint64_t)(t->tcap - 1));; j = (j + 1) & (t->tcap - 1))
    if (!t->tab[j]) {
      t->tab[j] = ++t->n;
      return 0;
    }
}

static void sites_free(struct mutant_sites *t) {
  if (!t)
    return;
  for (int r = 0; r < t->n; r++)
    free(t->v[r].key);
  free(t->v);
  free(t->tab);
  free(t);
}

/* One site of a graph, in generation order: a known record, or a new one
 * whose mutant (if the class applies) is built at list index pos. */
typedef struct slot {
  int rec;  /* the record, or -1: new */
  kbuf key; /* new: its key */
  uint64_t hash;
  mutant_class cls;
  int32_t nodes[2];
  int pos;
} slot;

typedef struct gen_ctx {
  mutant_search *m;
  const mutant_list *l;
  slot *v;
  int n, cap;
} gen_ctx;

/* mutant_site_fn: a known site is not rebuilt; a site of a mutant's own
 * conv (named "NAME.mutK" by mutant_splice) is skipped. */
static int want_site(void *u, mutant_class cls, const ir_graph *g,
                     const int32_t *nodes) {
  gen_ctx *x = u;
  int n = mutant_class_nodes(cls);
  for (int i = 0; i < n; i++)
    if (strstr(g->tensors[g->nodes[nodes[i]].out[0]].name, ".mut"))
      return 0;
  if (x->n == x->cap) {
    int cap = x->cap ? 2 * x->cap : 32;
    slot *v = base_realloc(x->v, sizeof *v * (size_t)cap);
    if (!v)
      return -1;
    x->v = v, x->cap = cap;
  }
  slot *s = &x->v[x->n];
  *s = (slot){.rec = -1,
              .cls = cls,
              .nodes = {nodes[0], n > 1 ? nodes[1] : -1},
              .pos = x->l->n};
  if (site_key(&s->key, cls, g, nodes)) {
    free(s->key.s);
    return -1;
  }
  s->hash = bytes_hash(s->key.s, s->key.n);
  x->n++;
  s->rec = site_find(x->m->sites, &s->key, s->hash);
  return s->rec < 0;
}

/* The entry of new slot s (-1: the class does not apply there), its
 * mutant kept in the entry; the site recorded. */
static base_status new_site(mutant_search *m, slot *s, mutant_list *l, int *at,
                            base_diag *d) {
  mutant *mu = s->pos < l->n ? &l->m[s->pos] : NULL;
  *at = -1;
  if (mu && (mu->cls != s->cls || mu->site[0] != s->nodes[0] ||
             mu->site[1] != s->nodes[1]))
    mu = NULL; /* mutant_make refused the site */
  base_status st = mu ? find_seen(m, mu, at, d) : BASE_OK;
  if (st)
    return st;
  if (mu && !m->seen[*at].mu.f) {
    m->seen[*at].mu = *mu;
    mu->f = mu->g = NULL;
  }
  if (site_add(m->sites, &s->key, s->hash, *at))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return BASE_OK;
}

/* srch_options.move_fn: the mutants of g as candidates. */
static base_status moves(void *u, const ir_graph *g, double cost, double limit,
                         srch_emit_fn emit, void *eu, base_diag *d) {
  mutant_search *m = u;
  mutant_list l = {0};
  gen_ctx x = {m, &l, NULL, 0, 0};
  (void)cost;
  if (!m->sites && !(m->sites = base_calloc(1, sizeof *m->sites)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status s =
      mutant_generate_sites(g, m->mask & MUTANT_ALL, want_site, &x, &l, d);
  int offered = 0;
  for (int i = 0; !s && i < x.n; i++) {
    int e = x.v[i].rec >= 0 ? m->sites->v[x.v[i].rec].entry : -1;
    if (x.v[i].rec < 0 && (s = new_site(m, &x.v[i], &l, &e, d)))
      break;
    if (e < 0)
      continue;
    if (offered == MUTANT_JOINT_CAP) {
      m->total->capped++;
      break;
    }
    const mutant *mu = &m->seen[e].mu;
    s = offer(m, e, mu, g, limit, emit, eu, &offered, d);
  }
  for (int i = 0; i < x.n; i++)
    free(x.v[i].key.s);
  free(x.v);
  mutant_list_free(&l);
  return s;
}

/* srch_options.move_taken: mutant tag is on a region's result. */
static base_status taken(void *u, int tag, base_diag *d) {
  mutant_search *m = u;
  mutant_seen *e = &m->seen[tag];
  if (e->b == B_TAKEN)
    return BASE_OK;
  mutant_apply_stats *t = m->total;
  mutant_applied *v =
      base_realloc(t->applied, sizeof *v * (size_t)(t->napplied + 1));
  if (!v)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  t->applied = v;
  t->applied[t->napplied++] = e->a;
  set_bucket(m, e, B_TAKEN);
  return BASE_OK;
}

/* ---- the greedy step (MUTANT_GREEDY) ------------------------------------- */

/* Adds one region's stats to the total. */
static base_status merge_stats(mutant_apply_stats *t, mutant_apply_stats *r,
                               base_diag *d) {
  t->considered += r->considered;
  t->overlapping += r->overlapping;
  t->not_cheaper += r->not_cheaper;
  t->refused += r->refused;
  t->unmeasured += r->unmeasured;
  for (int c = 0; c < MUTANT_NCLASSES; c++) {
    t->cls_considered[c] += r->cls_considered[c];
    t->cls_unmeasured[c] += r->cls_unmeasured[c];
  }
  if (!r->napplied)
    return BASE_OK;
  mutant_applied *v =
      base_realloc(t->applied, sizeof *v * (size_t)(t->napplied + r->napplied));
  if (!v)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  memcpy(v + t->napplied, r->applied, sizeof *v * (size_t)r->napplied);
  t->applied = v;
  t->napplied += r->napplied;
  return BASE_OK;
}

static base_status region_hook(void *u, const ir_graph *best, ir_graph **out,
                               base_diag *d) {
  mutant_search *m = u;
  mutant_apply_stats rs;
  ir_graph *h = NULL;
  /* the search's cost model as is: a cost error fails the region, and so
   * the search, with its message */
  base_status st =
      mutant_apply(best, m->mask, m->seed, m->cost, m->cost_u, &h, &rs, d);
  if (st)
    return st;
  st = merge_stats(m->total, &rs, d);
  if (!st && rs.napplied)
    *out = h, h = NULL;
  ir_graph_free(h);
  mutant_apply_stats_free(&rs);
  return st;
}

/* ---- attaching ------------------------------------------------------------
 */

void mutant_search_attach(srch_options *so, mutant_search *m, unsigned mask,
                          uint64_t seed, mutant_apply_stats *ms) {
  memset(ms, 0, sizeof *ms);
  *m = (mutant_search){.cost = so->cost,
                       .cost_u = so->cost_u,
                       .mask = mask,
                       .seed = seed,
                       .total = ms};
  if (!(mask & MUTANT_ALL))
    return;
  if (mask & MUTANT_GREEDY) {
    so->region_fn = region_hook;
    so->region_u = m;
  } else {
    so->move_fn = moves;
    so->move_taken = taken;
    so->move_u = m;
  }
}

void mutant_search_free(mutant_search *m) {
  for (int i = 0; i < m->nseen; i++) {
    free(m->seen[i].key);
    ir_graph_free(m->seen[i].h);
    ir_graph_free(m->seen[i].mu.f);
    ir_graph_free(m->seen[i].mu.g);
  }
  sites_free(m->sites);
  m->sites = NULL;
  free(m->seen);
  for (int i = 0; i < m->nknown; i++) {
    free(m->known[i].key);
    free(m->known[i].wrong);
  }
  free(m->known);
  m->seen = NULL;
  m->known = NULL;
  m->nseen = m->capseen = m->nknown = m->capknown = 0;
}

ir_graph *mutant_optimize(const ir_graph *g, const rewrite_rules *rules,
                          const srch_options *o, unsigned mask, uint64_t seed,
                          srch_stats *st, mutant_apply_stats *ms,
                          base_diag *d) {
  mutant_search m;
  srch_options so = *o;
  mutant_search_attach(&so, &m, mask, seed, ms);
  ir_graph *h = srch_optimize(g, rules, &so, st, d);
  mutant_search_free(&m);
  if (!h)
    mutant_apply_stats_free(ms);
  return h;
}
