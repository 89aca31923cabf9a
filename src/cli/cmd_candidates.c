/* cmd_candidates.c: `superopt experiment candidates`: the graphs the search
 * weighs for a region, as whole networks to time (scripts/gpu-rankcorr),
 * for the rank correlation of estimated cost against measured latency
 * over a region's candidates.
 *
 * The model goes through optimize's passes; the graph is cut into regions
 * as the search's first pass cuts it; each of the K costliest regions is
 * searched on its own with a hook (srch_options.cand_fn) that keeps every
 * distinct graph the search builds. Up to N of them are chosen (the
 * original, the search's pick, a mutant, the rest drawn by a seeded
 * generator across the range of their fused cost), each put in the
 * region's place, and the whole graph goes through the stages optimize
 * runs after the search (src/opt's opt_run_from, from splits on), so that
 * the file written is the program that would run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "cli.h"
#include "experiment.h"

/* One distinct graph a region's search built. */
typedef struct crec {
  ir_graph *g;    /* the region's graph (values shared with the model);
                     NULL: not in the sample kept */
  uint64_t hash;  /* its structural hash */
  double cost;    /* the region's estimated cost, unfused (the search's) */
  double fused;   /* fused and lowered (what the search chooses by) */
  uint64_t fhash; /* the fused and lowered graph's structural hash */
  int rep;        /* the first record with the same fused graph */
  char *how;      /* "original", rule ids (id> forward, id< backward) */
} crec;

/* The graphs a region's search built: every one's record, and a seeded
 * uniform sample (reservoir) of max of them with their graphs; the first,
 * the original, always has its graph. */
typedef struct cset {
  crec *v;
  int n, cap;
  int *slot, nslot, max; /* the sample's records (not the original) */
  uint64_t rng;
  const ir_ruleset *rs;
} cset;

typedef struct cctx {
  exp_args *a;
  const opt_rules *rl;
  const ir_graph *model; /* what --check compares with */
  const char *name;
  srch_regions *regs;
  int have_orig;      /* original.graph written */
  uint64_t orig_hash; /* the original whole graph's hash */
  double orig_est;    /* and estimated cost */
  base_buf tsv;
  int rows;
} cctx;

static void cset_free(cset *s) {
  for (int i = 0; i < s->n; i++) {
    ir_graph_free(s->v[i].g);
    free(s->v[i].how);
  }
  free(s->v);
  free(s->slot);
  memset(s, 0, sizeof *s);
}

/* "original", or the rule ids in order, each with > (forward) or <
 * (backward), joined by ','; malloc'd, NULL when out of memory. */
static char *how_string(const ir_ruleset *rs, const srch_step *steps, int n) {
  base_buf b = {0};
  if (!n)
    base_buf_puts(&b, "original");
  for (int i = 0; i < n; i++)
    base_buf_printf(&b, "%s%s%c", i ? "," : "", rs->rules[steps[i].rule].id,
                    steps[i].backward ? '<' : '>');
  if (b.oom || !b.s) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Adds a record (taking g and how). */
static base_status cset_add(cset *s, ir_graph *g, double cost, char *how,
                            base_diag *d) {
  uint64_t h = 0;
  if (g && ir_graph_hash(g, &h)) {
    ir_graph_free(g);
    g = NULL;
  }
  if (g && how && s->n == s->cap) {
    int cap = 2 * s->cap + 64;
    crec *v = base_realloc(s->v, sizeof *v * (size_t)cap);
    if (v)
      s->v = v, s->cap = cap;
  }
  if (!g || !how || s->n == s->cap) {
    ir_graph_free(g);
    free(how);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  int i = s->n++;
  s->v[i] = (crec){g, h, cost, 0, 0, i, how};
  return BASE_OK;
}

/* Record i (not the original) into the sample, or its graph dropped
 * (reservoir sampling: each of the i so far kept with chance max / i). */
static void sample(cset *s, int i) {
  if (s->nslot < s->max) {
    s->slot[s->nslot++] = i;
    return;
  }
  uint64_t j = splitmix(&s->rng) % (uint64_t)i;
  int out = j < (uint64_t)s->max ? s->slot[j] : i;
  if (out != i)
    s->slot[j] = i;
  ir_graph_free(s->v[out].g);
  s->v[out].g = NULL;
}

/* srch_options.cand_fn: a record for every distinct graph, the graph kept
 * while it is in the sample. */
static base_status keep_cand(void *u, const ir_graph *g, double cost,
                             const srch_step *steps, int nsteps, base_diag *d) {
  cset *s = u;
  base_status st = cset_add(s, ir_graph_clone_shared(g), cost,
                            how_string(s->rs, steps, nsteps), d);
  if (!st && s->n > 1)
    sample(s, s->n - 1);
  return st;
}

/* ---- costs of the region's graphs
 * ---------------------------------------------------- */

/* g through the optimize pipeline's stages from `from` on (src/opt:
 * opt_run_from) with the experiment's search options and cost model,
 * without the pipeline's check (--check compares with the model). */
static ir_graph *stages_from(cctx *x, opt_stage from, const ir_graph *g,
                             base_diag *d) {
  opt_options o;
  opt_options_default(&o);
  o.so = x->a->so;
  o.cost = &x->a->cost;
  o.check = 0;
  opt_report r;
  ir_graph *h = NULL;
  base_status st = opt_run_from(from, g, &o, &h, &r, d);
  opt_report_free(&r);
  return st ? NULL : h;
}

/* g fused and lowered as the search prices it (the stages from fuse):
 * its cost and hash. */
static base_status fused_cost(cctx *x, const ir_graph *g, double *c,
                              uint64_t *h, base_diag *d) {
  ir_graph *l = stages_from(x, OPT_FUSE, g, d);
  base_status st = !l ? (d->code ? d->code : BASE_ERR_NOMEM)
                   : ir_graph_hash(l, h)
                       ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                       : cd_sum_cost(l, cd_model_cost, &x->a->cost, c, NULL, d);
  ir_graph_free(l);
  return st;
}

/* Every record's fused cost, and its representative: the first record
 * whose fused graph is the same. */
static base_status price_all(cctx *x, cset *s, base_diag *d) {
  for (int i = 0; i < s->n; i++) {
    crec *r = &s->v[i];
    if (!r->g)
      continue;
    base_status st = fused_cost(x, r->g, &r->fused, &r->fhash, d);
    if (st)
      return st;
    for (int j = 0; j < i && r->rep == i; j++)
      if (s->v[j].g && s->v[j].fhash == r->fhash)
        r->rep = j;
  }
  return BASE_OK;
}

/* ---- the choice
 * ---------------------------------------------------------------- */

static const cset *sort_set; /* qsort's context (one thread) */

static int by_fused(const void *a, const void *b) {
  const crec *x = &sort_set->v[*(const int *)a],
             *y = &sort_set->v[*(const int *)b];
  if (x->fused != y->fused)
    return x->fused < y->fused ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

static int chosen(const int *out, int n, int i) {
  for (int k = 0; k < n; k++)
    if (out[k] == i)
      return 1;
  return 0;
}

/* Fills the rest of out (n of per so far) from the distinct records not
 * chosen: one drawn from each of (per - n) equal bins of fused cost
 * between the cheapest and the dearest, then, while slots are left, drawn
 * from the rest. Returns the new count. */
static int draw(const cset *s, int *out, int n, int per, uint64_t *rng) {
  int *pool = base_malloc(sizeof(int) * ((size_t)s->n + 1)), np = 0;
  if (!pool)
    return -1;
  for (int i = 0; i < s->n; i++)
    if (s->v[i].g && s->v[i].rep == i && !chosen(out, n, i))
      pool[np++] = i;
  sort_set = s;
  qsort(pool, (size_t)np, sizeof *pool, by_fused);
  int bins = per - n;
  double lo = np ? s->v[pool[0]].fused : 0,
         hi = np ? s->v[pool[np - 1]].fused : 0;
  for (int b = 0, first = 0; b < bins && np; b++) {
    double top = lo + (hi - lo) * (b + 1) / bins;
    int last = first;
    while (last < np && (s->v[pool[last]].fused <= top || b == bins - 1))
      last++;
    if (last > first) {
      int k = first + (int)(splitmix(rng) % (uint64_t)(last - first));
      out[n++] = pool[k];
      pool[k] = -1;
    }
    first = last;
  }
  int left = 0; /* the pool without the drawn, still sorted */
  for (int i = 0; i < np; i++)
    if (pool[i] >= 0)
      pool[left++] = pool[i];
  while (n < per && left > 0) {
    int k = (int)(splitmix(rng) % (uint64_t)left);
    out[n++] = pool[k];
    memmove(&pool[k], &pool[k + 1], sizeof *pool * (size_t)(left - k - 1));
    left--;
  }
  free(pool);
  return n;
}

/* The records to write: the original, the pick, the mutant (-1: none),
 * then the drawn; returns how many (<= per), -1 when out of memory. */
static int choose(const cset *s, int pick, int mutant, int per, uint64_t seed,
                  int region, int *out) {
  int n = 0;
  int must[3] = {0, s->v[pick].rep, mutant >= 0 ? s->v[mutant].rep : -1};
  for (int k = 0; k < 3; k++)
    if (must[k] >= 0 && n < per && !chosen(out, n, must[k]))
      out[n++] = must[k];
  uint64_t rng = seed * 0x2545f4914f6cdd1dull + (uint64_t)region;
  return draw(s, out, n, per, &rng);
}

/* ---- whole graphs
 * -------------------------------------------------------------- */

/* The model with region k replaced by sub, through the stages optimize
 * runs after the search (from splits on: opt_run_from). */
static ir_graph *whole_graph(cctx *x, int k, const ir_graph *sub,
                             base_diag *d) {
  ir_graph *cur = srch_regions_replace(x->regs, k, sub, d);
  if (!cur) {
    if (!d->code)
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  ir_graph *h = stages_from(x, OPT_SPLITS, cur, d);
  ir_graph_free(cur);
  return h;
}

/* --check: the whole graph against the model on the CPU executor. */
static base_status check(cctx *x, const ir_graph *h, const char *file,
                         base_diag *d) {
  ex_check_opts o;
  ex_check_result r;
  ex_check_opts_default(&o);
  base_status st = ex_check_rounds(x->model, h, &o, &r, d);
  if (st || r.worst <= 1)
    return st;
  return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                       "%s: outputs differ from the model's: output %d "
                       "element %lld is %.9g, not %.9g (seed %llu, scale %g)",
                       file, r.output + 1, (long long)r.index, r.vb, r.va,
                       (unsigned long long)r.seed, r.scale);
}

/* Writes h as DIR/file; its estimated cost into *cost. */
static base_status write_whole(cctx *x, const ir_graph *h, const char *file,
                               double *cost, base_diag *d) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", x->a->out, file);
  base_status st = cd_sum_cost(h, cd_model_cost, &x->a->cost, cost, NULL, d);
  if (!st && x->a->check)
    st = check(x, h, file, d);
  return st ? st : ir_write_file(h, path, d);
}

/* ---- a region
 * ------------------------------------------------------------------ */

static void tsv_row(cctx *x, int region, int cand, const char *file, double est,
                    const crec *r, int pick, int seen) {
  base_buf_printf(&x->tsv, "%s\t%d\t%d\t%s\t%.4f\t%.4f\t%.4f\t%d\t%d\t%s\n",
                  x->name, region, cand, file, est, r->cost, r->fused, pick,
                  seen, r->how);
  x->rows++;
}

/* The original's row of region k; original.graph written the first
 * time (the model through the same stages, the same for every region). */
static base_status write_original(cctx *x, int k, const cset *s, int pick,
                                  base_diag *d) {
  const char *file = "original.graph";
  if (!x->have_orig) {
    ir_graph *h = whole_graph(x, k, s->v[0].g, d);
    base_status st =
        !h ? d->code
        : ir_graph_hash(h, &x->orig_hash)
            ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
            : write_whole(x, h, file, &x->orig_est, d);
    ir_graph_free(h);
    if (st)
      return st;
    x->have_orig = 1;
  }
  tsv_row(x, k, 0, file, x->orig_est, &s->v[0], pick == 0, s->n);
  return BASE_OK;
}

/* Writes the chosen records of region k (out[0] the original) as whole
 * graphs, skipping one whose whole graph is the original's or an earlier
 * one's. */
static base_status write_region(cctx *x, int k, const cset *s, int pick, int n,
                                const int *out, base_diag *d) {
  uint64_t *seen = base_calloc((size_t)n + 1, sizeof *seen);
  if (!seen)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = write_original(x, k, s, pick, d);
  int nseen = 0;
  seen[nseen++] = x->orig_hash;
  for (int i = 1; !st && i < n; i++) {
    const crec *r = &s->v[out[i]];
    char file[64];
    snprintf(file, sizeof file, "r%d_c%d.graph", k, out[i]);
    ir_graph *h = whole_graph(x, k, r->g, d);
    uint64_t hh = 0;
    double est = 0;
    int dup = 0;
    if (!h || ir_graph_hash(h, &hh))
      st =
          h ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory") : d->code;
    for (int j = 0; !st && j < nseen; j++)
      dup |= seen[j] == hh;
    if (!st && dup)
      fprintf(stderr,
              "candidates: region %d: candidate %d is %s once fused and "
              "lowered: left out\n",
              k, out[i],
              hh == x->orig_hash ? "the original" : "an earlier one");
    else if (!st && !(st = write_whole(x, h, file, &est, d))) {
      seen[nseen++] = hh;
      tsv_row(x, k, out[i], file, est, r, out[i] == pick, s->n);
    }
    ir_graph_free(h);
  }
  free(seen);
  return st;
}

/* The mutant that pays under estimates in the pick, as a record; *at its
 * index, or -1 when none pays. */
static base_status add_mutant(cctx *x, cset *s, int pick, int *at,
                              base_diag *d) {
  mutant_apply_stats ms;
  ir_graph *m = NULL;
  *at = -1;
  base_status st =
      mutant_apply(s->v[pick].g, MUTANT_ALL | MUTANT_ESTIMATES, x->a->seed,
                   cd_model_cost, &x->a->cost, &m, &ms, d);
  if (!st && ms.napplied > 0) {
    base_buf b = {0};
    base_buf_printf(&b, "%s,mutant", s->v[pick].how);
    for (int i = 0; i < ms.napplied; i++)
      base_buf_printf(&b, ":%s", mutant_class_name(ms.applied[i].cls));
    double c = 0;
    st = b.oom ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
               : cd_sum_cost(m, cd_model_cost, &x->a->cost, &c, NULL, d);
    if (!st) {
      st = cset_add(s, m, c, b.s, d);
      m = NULL;
      b.s = NULL;
      *at = s->n - 1;
    }
    free(b.s);
  }
  ir_graph_free(m);
  mutant_apply_stats_free(&ms);
  return st;
}

/* The index of the record whose graph is g (the search's pick), given
 * its graph when the sample left it out. */
static base_status find_pick(cset *s, const ir_graph *g, int *at,
                             base_diag *d) {
  uint64_t h;
  if (ir_graph_hash(g, &h))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < s->n; i++) {
    if (s->v[i].hash != h)
      continue;
    *at = i;
    if (!s->v[i].g && !(s->v[i].g = ir_graph_clone_shared(g)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return BASE_OK;
  }
  return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                       "the search's pick is not among the graphs it built");
}

static base_status do_region(cctx *x, int k, int rank, int nrank,
                             base_diag *d) {
  const ir_graph *sub = srch_regions_graph(x->regs, k);
  cset s = {.max = x->a->max_seen, .rs = &x->rl->rs};
  s.rng = x->a->seed * 0x9e3779b97f4a7c15ull + (uint64_t)k;
  if (!(s.slot = base_calloc((size_t)s.max + 1, sizeof *s.slot)))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  srch_options o = x->a->so;
  o.cand_fn = keep_cand;
  o.cand_u = &s;
  srch_stats st;
  memset(&st, 0, sizeof st);
  double t0 = base_now();
  fprintf(stderr, "candidates: region %d (%d of %d, %d operators): search\n", k,
          rank + 1, nrank, sub->nnodes);
  ir_graph *best = srch_search(sub, x->rl->all, &o, &st, d);
  int pick = 0, mutant = -1, n = 0;
  int *out = base_calloc((size_t)x->a->per_region + 3, sizeof *out);
  base_status rc = !best ? d->code
                   : !out
                       ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                       : find_pick(&s, best, &pick, d);
  if (!rc)
    rc = add_mutant(x, &s, pick, &mutant, d);
  if (!rc)
    rc = price_all(x, &s, d);
  if (!rc &&
      (n = choose(&s, pick, mutant, x->a->per_region, x->a->seed, k, out)) < 0)
    rc = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!rc) {
    fprintf(stderr,
            "candidates: region %d: %d distinct graphs (%d sampled), %d "
            "expanded, %.1f s; writing %d\n",
            k, s.n, s.nslot + 1, st.expanded, base_now() - t0, n);
    rc = write_region(x, k, &s, s.v[pick].rep, n, out, d);
  }
  free(out);
  ir_graph_free(best);
  srch_stats_free(&st);
  cset_free(&s);
  return rc;
}

/* ---- the command
 * ---------------------------------------------------------------- */

static const double *cost_of; /* qsort's context (one thread) */

static int by_cost(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  if (cost_of[i] != cost_of[j])
    return cost_of[i] > cost_of[j] ? -1 : 1;
  return i - j;
}

/* The live regions by estimated cost, dearest first, into order; their
 * number into *n. */
static base_status rank_regions(cctx *x, int *order, double *cost, int *n,
                                base_diag *d) {
  *n = 0;
  for (int k = 0; k < srch_regions_count(x->regs); k++) {
    const ir_graph *r = srch_regions_graph(x->regs, k);
    cost[k] = 0;
    if (!r)
      continue;
    base_status st =
        cd_sum_cost(r, cd_model_cost, &x->a->cost, &cost[k], NULL, d);
    if (st)
      return st;
    order[(*n)++] = k;
  }
  cost_of = cost;
  qsort(order, (size_t)*n, sizeof *order, by_cost);
  return BASE_OK;
}

static base_status all_regions(cctx *x, base_diag *d) {
  int nr = srch_regions_count(x->regs), n = 0;
  int *order = base_calloc((size_t)nr + 1, sizeof *order);
  double *cost = base_calloc((size_t)nr + 1, sizeof *cost);
  base_status st =
      order && cost ? rank_regions(x, order, cost, &n, d)
                    : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int k = n < x->a->regions ? n : x->a->regions;
  double all = 0, top = 0;
  for (int i = 0; !st && i < n; i++) {
    all += cost[order[i]];
    top += i < k ? cost[order[i]] : 0;
  }
  if (!st)
    fprintf(stderr,
            "candidates: %d regions; the %d costliest: %.1f us of %.1f us "
            "(unfused, %s)\n",
            n, k, top, all, x->a->cost.dev->name);
  for (int i = 0; !st && i < k; i++)
    st = do_region(x, order[i], i, k, d);
  free(order);
  free(cost);
  return st;
}

/* The passes optimize runs before the search, then the regions. */
static base_status prepare(cctx *x, const ir_graph *g, ir_graph **base,
                           base_diag *d) {
  srch_stats st;
  base_status s = srch_begin(g, x->rl->all, &x->a->so, &st, d);
  *base = s ? NULL : srch_run_passes(g, &x->a->so, &st, d);
  if (!s && !*base)
    s = d->code ? d->code : BASE_ERR_NOMEM;
  srch_stats_free(&st);
  if (!s && !(x->regs = srch_regions_cut(*base, x->a->so.region_nodes, d)))
    s = d->code ? d->code : BASE_ERR_NOMEM;
  return s;
}

int cli_experiment_candidates(exp_args *a, const opt_rules *rl,
                              const ir_graph *g, const char *model) {
  cctx x = {.a = a, .rl = rl, .model = g, .name = model};
  ir_graph *base = NULL;
  base_diag d;
  memset(&d, 0, sizeof d);
  base_buf_puts(&x.tsv, "network\tregion\tcand\tfile\test_us\tregion_us\t"
                        "region_fused_us\tpick\tseen\thow\n");
  base_status st = prepare(&x, g, &base, &d);
  if (!st)
    st = all_regions(&x, &d);
  char path[4096];
  snprintf(path, sizeof path, "%s/candidates.tsv", a->out);
  if (!st)
    st = base_buf_write(&x.tsv, path, &d);
  if (!st)
    printf("wrote %s (%d candidates) and their graphs\n", path, x.rows);
  free(x.tsv.s);
  srch_regions_free(x.regs);
  ir_graph_free(base);
  return st ? cli_report(&d) : CLI_OK;
}
