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
  seen_bucket b;
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
  e->b = b;
}

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Whether a site of mu is a conv a mutant made (its output named
 * "NAME.mutK" by mutant_splice): mutants of mutants are not searched. */
static int of_a_mutant(const mutant *mu) {
  for (int i = 0; i < mu->f->noutputs; i++)
    if (strstr(mu->f->tensors[mu->f->outputs[i]].name, ".mut"))
      return 1;
  return 0;
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

/* srch_options.move_fn: the mutants of g as candidates. */
static base_status moves(void *u, const ir_graph *g, double cost, double limit,
                         srch_emit_fn emit, void *eu, base_diag *d) {
  mutant_search *m = u;
  mutant_list l = {0};
  (void)cost;
  base_status s = mutant_generate(g, m->mask & MUTANT_ALL, &l, d);
  int offered = 0;
  for (int i = 0; !s && i < l.n; i++) {
    if (offered == MUTANT_JOINT_CAP) {
      m->total->capped++;
      break;
    }
    int e = -1;
    if (of_a_mutant(&l.m[i]) || (s = find_seen(m, &l.m[i], &e, d)))
      continue;
    s = offer(m, e, &l.m[i], g, limit, emit, eu, &offered, d);
  }
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
  *m = (mutant_search){so->cost, so->cost_u, mask, seed, ms, NULL,
                       0,        0,          NULL, 0,    0};
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
  }
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
