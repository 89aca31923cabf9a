/* cand.c: fp_candidates, the driver of enumeration and fingerprinting:
 *
 *   1. enumerate (en_enumerate), evaluating each graph incrementally on
 *      seed-1 residues; record (fingerprint, renaming, compact graph);
 *   2. sort the records, bucket equal fingerprints, drop graphs that are
 *      another's renaming, and pair the rest of each bucket;
 *   3. confirm each pair with seed-2 residues and a float32 run of both
 *      ir_graphs on the reference executor; keep the survivors as rules.
 * Records and pairs are sorted by content, so the result does not depend on
 * the thread count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <xxhash.h>

#include "../exec/exec.h"
#include "fp_int.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define SEED2 0x2545f4914f6cdd1dull
#define FLOAT_SEED 7
#define FLOAT_RTOL 1e-4

/* FP_PAIRS_SMALLEST pairs the smallest members of a bucket with each other
 * only while there are at most this many (else with the first only). */
#define FP_CLIQUE_MAX 16

typedef struct fp_rec {
  uint64_t fp;
  uint32_t code; /* renaming reaching fp; SYM_VARIANT: see visit() */
  en_graph g;
} fp_rec;

/* A second record of a graph whose value is symmetric under a renaming
 * that changes its structure, e.g. (q1+q2)+q3 == (q1+q3)+q2: the graph
 * renamed by it is a member of its own in the bucket. */
#define SYM_VARIANT 0x80000000u

static uint64_t struct_hash(const en_graph *g);

typedef struct rec_vec {
  fp_rec *r;
  size_t n, cap;
} rec_vec;

static int rec_push(rec_vec *v, const fp_rec *r) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 1024;
    fp_rec *nr = base_realloc(v->r, cap * sizeof *nr);
    if (!nr)
      return -1;
    v->r = nr, v->cap = cap;
  }
  v->r[v->n++] = *r;
  return 0;
}

/* ---- stage 1: enumerate and fingerprint ----------------------------------
 */

typedef struct branch {
  fp_eval *e, *e2; /* incremental values; scratch for renamings */
  const fp_nf *nf; /* NULL: no normal-form pruning */
  int nn;          /* the last visited graph's last node is not normal */
  int keep_split;  /* en_config.extended: see split_leaf */
  int failed;      /* a visit failed: the records are not the branch's */
  int halt;        /* begun after checkpoint_stop: visits nothing */
  long long dropped;
  rec_vec recs;
  base_status werr; /* saving its checkpoint failed (wd says why) */
  base_diag wd;
} branch;

typedef struct run {
  fp_inputs *in;
  const fp_nf *nf;
  branch **br; /* per branch, kept until merged */
  const en_config *c;
  uint64_t key;       /* fp_ckpt_key */
  long long nf_count; /* the normal-form table's size (saved with each) */
  int saved, halted;  /* branches saved; checkpoint_stop reached */
  const long long *w; /* branch weights for progress (NULL: 1 each) */
  double w_todo, w_done, graphs_done;
} run;

static void *branch_begin(void *u, int b) {
  run *r = u;
  branch *s = base_calloc(1, sizeof *s);
  if (!s)
    return NULL;
#ifdef _OPENMP
#pragma omp critical(fp_ckpt)
#endif
  {
    if (r->c->checkpoint_stop > 0 && r->saved >= r->c->checkpoint_stop)
      r->halted = 1;
    s->halt = r->halted;
  }
  if (s->halt || fp_eval_pair_new(r->in, &s->e, &s->e2)) {
    s->nf = r->nf;
    s->keep_split = r->c->extended;
    r->br[b] = s;
    return s;
  }
  free(s);
  return NULL;
}

/* Saves a finished branch's records (--checkpoint) and reports progress:
 * graphs so far, of an estimated total (the graphs per weight so far times
 * the weight still to do). */
static void branch_end(void *u, int b, void *state) {
  run *r = u;
  branch *s = state;
  fp_eval_pair_free(&s->e, &s->e2);
  if (s->halt || s->failed)
    return;
  if (r->c->checkpoint) {
    fp_ckpt_meta m = {s->recs.n, (uint64_t)s->dropped, (uint64_t)r->nf_count};
    s->werr = fp_ckpt_write(r->c->checkpoint, b, r->key, &m, s->recs.r,
                            sizeof *s->recs.r, &s->wd);
  }
#ifdef _OPENMP
#pragma omp critical(fp_ckpt)
#endif
  {
    r->saved += r->c->checkpoint && !s->werr;
    r->w_done += r->w ? (double)r->w[b] : 1;
    r->graphs_done += (double)s->recs.n;
    if (r->c->progress)
      r->c->progress(r->c->u, "enumerate", r->graphs_done,
                     r->graphs_done * r->w_todo / r->w_done);
  }
}

static uint64_t renamed_struct(const en_graph *g, uint32_t code) {
  uint8_t map[EN_NINPUT_IDS];
  fp_renaming_map(code, map);
  en_graph r = en_graph_rename(g, map);
  return struct_hash(&r);
}

/* Records r's graph once more for each renaming in alt that gives its value
 * but a structure not seen yet. */
static base_status push_variants(branch *s, const fp_rec *r,
                                 const uint32_t *alt, int nalt) {
  uint64_t seen[FP_MAX_ALT + 1];
  int ns = 0;
  seen[ns++] = renamed_struct(&r->g, r->code);
  for (int i = 0; i < nalt; i++) {
    uint64_t h = renamed_struct(&r->g, alt[i]);
    int k = 0;
    while (k < ns && seen[k] != h)
      k++;
    if (k < ns)
      continue;
    seen[ns++] = h;
    fp_rec v = *r;
    v.code = alt[i] | SYM_VARIANT;
    if (rec_push(&s->recs, &v))
      return BASE_ERR_NOMEM;
  }
  return BASE_OK;
}

/* Whether g's last node is a split (its parts are g's outputs, and g may
 * have one more: the other part of an outer split, nested). With
 * --opset extended such a graph is kept although the split is not in
 * normal form: each part has a smaller form (split(conv(x, concat(w1, w2)))
 * part 0 is conv(x, w1)), but the rule from the two separate forms to the
 * split, a sibling merge, does not follow from single-output rules the
 * search can apply (backward, conv(x, w1) -> split(...) would make up w2).
 * The split is still not extended. */
static int split_leaf(const en_graph *g, int nouts) {
  return nouts >= 2 && en_node_split_axis(&g->n[g->nops - 1]) >= 0;
}

static base_status visit_graph(void *state, const en_graph *g,
                               const ir_shape (*shapes)[EN_NSLOTS],
                               int is_graph) {
  branch *s = state;
  fp_rec r;
  (void)shapes;
  r.g = *g;
  s->nn = 0;
  if (g->nops) {
    base_status st = fp_eval_node(s->e, g, g->nops - 1, NULL);
    if (st)
      return st;
    s->nn = fp_nf_last_non_normal(s->nf, s->e, g);
    if (!is_graph)
      return BASE_OK;
    uint8_t outs[EN_MAX_OUTPUTS];
    int nouts = s->nn ? en_graph_outputs(g, outs) : 1;
    if (nouts > 1 && !(s->keep_split && split_leaf(g, nouts))) {
      s->dropped++; /* follows from the output's smaller form */
      return BASE_OK;
    }
  }
  uint32_t alt[FP_MAX_ALT];
  int nalt;
  base_status st = fp_min_renaming(s->e, s->e2, g, &r.fp, &r.code, alt, &nalt);
  if (st || rec_push(&s->recs, &r))
    return st ? st : BASE_ERR_NOMEM;
  return push_variants(s, &r, alt, nalt);
}

static base_status visit(void *state, const en_graph *g,
                         const ir_shape (*shapes)[EN_NSLOTS], int is_graph) {
  branch *s = state;
  if (s->halt)
    return BASE_ERR_INTERRUPTED;
  base_status st = visit_graph(state, g, shapes, is_graph);
  s->failed |= st != BASE_OK;
  return st;
}

/* A graph whose last node is not in normal form is not extended: every
 * extension reads it (not normal) or keeps it as one of several outputs. */
static int stop(void *state, const en_graph *g) {
  (void)g;
  return ((branch *)state)->nn;
}

static int rec_cmp(const void *a, const void *b) {
  const fp_rec *x = a, *y = b;
  if (x->fp != y->fp)
    return x->fp < y->fp ? -1 : 1;
  return memcmp(&x->g, &y->g, sizeof x->g);
}

/* Records are sorted in 2^SORT_BITS ranges of the fingerprint's top bits,
 * side by side on the threads. */
#define SORT_BITS 10

static size_t sort_range(const fp_rec *x) {
  return (size_t)(x->fp >> (64 - SORT_BITS));
}

/* Gathers the branches' records into all, sorted: each goes to the range of
 * its fingerprint's top bits (counted first, so no copy is needed), then
 * the ranges are sorted on the threads. The order (fingerprint, graph) is
 * total, so this is the order one sort of all records gives. */
static base_status merge(run *r, int nb, rec_vec *all, fp_stats *st) {
  size_t n = 0, *start = base_calloc((size_t)1 << SORT_BITS, sizeof *start);
  size_t *next = base_calloc((size_t)1 << SORT_BITS, sizeof *next);
  for (int b = 0; b < nb; b++)
    n += r->br[b] ? r->br[b]->recs.n : 0;
  for (int b = 0; b < nb; b++)
    st->nf_dropped += r->br[b] ? r->br[b]->dropped : 0;
  all->r = base_malloc((n ? n : 1) * sizeof *all->r);
  if (!all->r || !start || !next) {
    free(start);
    free(next);
    return BASE_ERR_NOMEM;
  }
  for (int b = 0; b < nb; b++)
    for (size_t i = 0; r->br[b] && i < r->br[b]->recs.n; i++)
      next[sort_range(&r->br[b]->recs.r[i])]++;
  for (size_t k = 0, at = 0; k < (size_t)1 << SORT_BITS; k++)
    start[k] = at, at += next[k], next[k] = start[k];
  for (int b = 0; b < nb; b++) {
    if (!r->br[b])
      continue;
    for (size_t i = 0; i < r->br[b]->recs.n; i++) {
      const fp_rec *x = &r->br[b]->recs.r[i];
      all->r[next[sort_range(x)]++] = *x;
    }
    free(r->br[b]->recs.r);
    free(r->br[b]);
    r->br[b] = NULL;
  }
  all->n = n;
  int threads = r->c->threads;
#ifdef _OPENMP
  threads = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads)
#endif
  for (size_t k = 0; k < (size_t)1 << SORT_BITS; k++)
    qsort(all->r + start[k], next[k] - start[k], sizeof *all->r, rec_cmp);
  (void)threads;
  free(start);
  free(next);
  return BASE_OK;
}

/* Branch b's records from its checkpoint into r->br[b]; *found = 0 when
 * it has none. */
static base_status load_branch(run *r, int b, int *found, fp_stats *fs,
                               base_diag *d) {
  fp_ckpt_meta m;
  void *recs = NULL;
  base_status st = fp_ckpt_read(r->c->checkpoint, b, r->key, sizeof(fp_rec), &m,
                                &recs, found, d);
  if (st || !*found)
    return st;
  branch *s = base_calloc(1, sizeof *s);
  if (!s) {
    free(recs);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  s->recs.r = recs;
  s->recs.n = s->recs.cap = (size_t)m.n;
  s->dropped = (long long)m.dropped;
  r->br[b] = s;
  if ((long long)m.nf_values > fs->nf_values)
    fs->nf_values = (long long)m.nf_values;
  return BASE_OK;
}

/* The first error of the enumeration's branches, into d. */
static base_status branch_error(run *r, int nb, base_status st, base_diag *d) {
  for (int b = 0; b < nb; b++)
    if (r->br[b] && r->br[b]->werr) {
      *d = r->br[b]->wd;
      return r->br[b]->werr;
    }
  if (st == BASE_ERR_INTERRUPTED && r->halted)
    return base_diag_set(d, st, 0, 0,
                         "stopped after saving %d branches to '%s' "
                         "(SUPEROPT_CHECKPOINT_STOP)",
                         r->saved, r->c->checkpoint);
  return st;
}

/* Whether `need` is non-zero on any rank (a collective; the ranks
 * agree on st first). */
static base_status any_rank(const fp_comm *comm, base_status st, int *need,
                            base_diag *d) {
  if (!comm || comm->size <= 1 || (st = fp_comm_agree(comm, st, d)))
    return st;
  size_t *n = base_calloc((size_t)comm->size, sizeof *n);
  int32_t mine = *need, *all = NULL;
  st = n ? comm->allgatherv(comm->u, &mine, sizeof mine, (void **)&all, n, d)
         : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int r = 0; !st && r < comm->size; r++)
    *need |= all[r] != 0;
  free(n);
  free(all);
  return st;
}

/* Benchmarks (scripts/bench-mpi-5 --saved-only): SUPEROPT_SAVED_ONLY=1
 * takes the saved branches alone, the rest as empty, to time the stages
 * after the enumeration on part of a run too long to finish. Its file
 * holds the rules among those branches' graphs only. */
static int saved_only(void) {
  const char *e = getenv("SUPEROPT_SAVED_ONLY");
  return e && *e == '1';
}

/* Enumerates c's branches (c->branches: this rank's share) into all,
 * sorted: those saved in c->checkpoint are loaded, the rest enumerated
 * (and saved there), building the normal-form table only if any rank has
 * any left (with comm: a collective, shared over the ranks). w: branch
 * weights for progress (may be NULL). */
static base_status enumerate(const en_config *c, const long long *w,
                             const fp_comm *comm, rec_vec *all, fp_stats *fs,
                             base_diag *d) {
  run r = {0};
  fp_nf *nf = NULL;
  int nb = en_branch_count(c), ntodo = 0;
  uint8_t *todo = base_calloc((size_t)nb, 1);
  r.br = base_calloc((size_t)nb, sizeof *r.br);
  r.c = c, r.w = w, r.key = fp_ckpt_key(c, sizeof(fp_rec));
  base_status st = todo && r.br ? BASE_OK : BASE_ERR_NOMEM;
  int only_saved = saved_only();
  if (!st && c->checkpoint)
    st = fp_ckpt_dir(c->checkpoint, d);
  if (!st && c->checkpoint && w)
    st = fp_ckpt_write_weights(c->checkpoint, w, nb, d);
  for (int b = 0; b < nb && !st; b++) {
    int found = 0;
    if (c->branches && !c->branches[b])
      continue;
    if (c->checkpoint)
      st = load_branch(&r, b, &found, fs, d);
    if (!st && !found && !only_saved) {
      todo[b] = 1, ntodo++;
      r.w_todo += w ? (double)w[b] : 1;
    }
  }
  double t0 = base_now();
  int need = !st && ntodo > 0;
  st = any_rank(comm, st, &need, d);
  if (!st && need && !c->keep_non_normal && c->max_ops >= 2) {
    int found = 0, build; /* saved by an earlier run, or built by all */
    if (c->checkpoint)
      st = fp_nf_load(c->checkpoint, r.key, c->max_ops - 1, &nf, &found, d);
    build = !found;
    st = any_rank(comm, st, &build, d);
    if (!st && build) {
      fp_nf_free(nf);
      nf = NULL;
      st = fp_nf_build_comm(c, c->max_ops - 1, comm, c->branches, &nf, d);
      if (!st && c->checkpoint && (!comm || comm->rank == 0)) /* one copy */
        st = fp_nf_save(nf, c->checkpoint, r.key, c->max_ops - 1, d);
    }
    fs->nf_loaded = !st && !build;
    fs->nf_values = r.nf_count = fp_nf_count(nf);
  }
  fs->t_nf = base_now() - t0;
  r.nf = nf;
  if (!st && ntodo) {
    en_config lc = *c;
    lc.branches = todo;
    lc.progress = NULL; /* branch_end reports it */
    r.in = fp_inputs_new(FP_SEED1);
    en_visitor v = {branch_begin, visit, branch_end, &r, stop};
    st = r.in ? en_enumerate(&lc, &v, d) : BASE_ERR_NOMEM;
    if (st != BASE_ERR_NOMEM)
      st = branch_error(&r, nb, st, d);
  }
  fp_nf_free(nf);
  if (!st)
    st = merge(&r, nb, all, fs);
  if (st == BASE_ERR_NOMEM)
    base_diag_set(d, st, 0, 0, "out of memory");
  for (int b = 0; r.br && b < nb; b++)
    if (r.br[b]) {
      free(r.br[b]->recs.r);
      free(r.br[b]);
    }
  free(r.br);
  free(todo);
  fp_inputs_free(r.in);
  return st;
}

/* ---- stage 2: buckets and pairs ------------------------------------------
 */

/* Structural hash: the multiset of node hashes, each over its operator and
 * its arguments (inputs by id, nodes by their hash). */
static uint64_t struct_hash(const en_graph *g) {
  uint64_t nh[EN_MAX_OPS], s[EN_MAX_OPS];
  if (g->nops == 0)
    return XXH3_64bits(&g->root, 1);
  for (int i = 0; i < g->nops; i++) {
    const en_node *n = &g->n[i];
    uint64_t b[5] = {n->gop, n->p, 0, 0, 0};
    for (int j = 0; j < en_gop_nin(n->gop); j++) {
      uint8_t v = en_arg(n, j); /* the third argument in b[1], a fourth
                                   (a residual gop's r) in b[4] */
      b[j < 2    ? 2 + j
        : j == 2 ? 1
                 : 4] =
          EN_IS_INPUT(v) ? v : nh[EN_NODE_OF(v)] + EN_SLOT_OF(v) + 64;
    }
    if ((n->gop == EN_EWADD || n->gop == EN_EWMUL) && b[2] > b[3]) {
      uint64_t t = b[2]; /* commutative: argument order does not matter */
      b[2] = b[3], b[3] = t;
    }
    nh[i] = XXH3_64bits(b, (en_gop_res(n->gop) ? 5 : 4) * sizeof *b);
  }
  memcpy(s, nh, (size_t)g->nops * sizeof *s);
  for (int i = 1; i < g->nops; i++)
    for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
      uint64_t t = s[j];
      s[j] = s[j - 1], s[j - 1] = t;
    }
  return XXH3_64bits(s, (size_t)g->nops * sizeof *s);
}

/* Structural hash minimised over renamings: equal for graphs that are
 * renamings of each other. */
static uint64_t struct_canon(const en_graph *g) {
  uint8_t used[EN_NCLASSES], map[EN_NINPUT_IDS];
  uint64_t best = UINT64_MAX;
  en_graph_used(g, used);
  uint32_t n = fp_renaming_count(used);
  for (uint32_t i = 0; i < n; i++) {
    fp_renaming_map(fp_renaming_code(used, i), map);
    en_graph r = en_graph_rename(g, map);
    uint64_t h = struct_hash(&r);
    best = h < best ? h : best;
  }
  return best;
}

typedef struct pair {
  en_graph src, dst;
} pair;

typedef struct pair_vec {
  pair *p;
  size_t n, cap;
} pair_vec;

static void first_use(const en_graph *g, uint8_t map[EN_NINPUT_IDS],
                      uint8_t seen[EN_NINPUT_IDS], uint8_t next[EN_NCLASSES]) {
  for (int i = 0; i <= g->nops; i++)
    for (int j = 0; j < EN_MAX_NIN; j++) {
      uint8_t v;
      if (i == g->nops) {
        if (g->nops || j)
          break;
        v = g->root;
      } else if (j < en_gop_nin(g->n[i].gop)) {
        v = en_arg(&g->n[i], j);
      } else {
        break;
      }
      if (!EN_IS_INPUT(v) || seen[v])
        continue;
      seen[v] = 1;
      map[v] =
          (uint8_t)en_input_id(en_input_class(v), next[en_input_class(v)]++);
    }
}

/* Renames src and dst jointly so copies are numbered by first use in src,
 * then in dst. */
static void joint_normalise(pair *p) {
  uint8_t map[EN_NINPUT_IDS] = {0}, seen[EN_NINPUT_IDS] = {0};
  uint8_t next[EN_NCLASSES] = {0};
  first_use(&p->src, map, seen, next);
  first_use(&p->dst, map, seen, next);
  p->src = en_graph_rename(&p->src, map);
  p->dst = en_graph_rename(&p->dst, map);
}

static pair make_pair(const fp_rec *a, const fp_rec *b) {
  uint8_t ma[EN_NINPUT_IDS], mb[EN_NINPUT_IDS];
  pair p;
  if (b->g.nops > a->g.nops) { /* src: more operators; tie: a (smaller) */
    const fp_rec *t = a;
    a = b, b = t;
  }
  fp_renaming_map(a->code & ~SYM_VARIANT, ma);
  fp_renaming_map(b->code & ~SYM_VARIANT, mb);
  p.src = en_graph_rename(&a->g, ma);
  p.dst = en_graph_rename(&b->g, mb);
  joint_normalise(&p);
  return p;
}

static int pair_push(pair_vec *v, pair p) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 1024;
    pair *np = base_realloc(v->p, cap * sizeof *np);
    if (!np)
      return -1;
    v->p = np, v->cap = cap;
  }
  v->p[v->n++] = p;
  return 0;
}

/* The members of bucket r[0..n-1] into u: records that are not renamings
 * of an earlier member, and every symmetric variant (canon: scratch). */
static size_t bucket_members(const fp_rec *r, size_t n, const fp_rec **u,
                             uint64_t *canon, long long *dups) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t h = struct_canon(&r[i].g);
    size_t j = r[i].code & SYM_VARIANT ? m : 0; /* variants are members */
    while (j < m && canon[j] != h)
      j++;
    if (j < m) {
      (*dups)++;
      continue;
    }
    canon[m] = h;
    u[m++] = &r[i];
  }
  return m;
}

/* Pairs the members of one bucket r[0..n-1]. */
static int bucket_pairs(const fp_rec *r, size_t n, fp_pairs mode, pair_vec *out,
                        fp_stats *st) {
  const fp_rec **u = base_malloc(n * sizeof *u);
  uint64_t *canon = base_malloc(n * sizeof *canon);
  int err = !u || !canon;
  size_t m = err ? 0 : bucket_members(r, n, u, canon, &st->dups);
  size_t small = 0; /* members of the smallest size (first in the bucket) */
  while (small < m && u[small]->g.nops == u[0]->g.nops)
    small++;
  int star = mode == FP_PAIRS_SMALLEST && small > FP_CLIQUE_MAX;
  for (size_t i = 0; i < m && !err; i++)
    for (size_t j = i + 1; j < m && !err; j++)
      if (mode == FP_PAIRS_ALL ||
          (i == 0 || (!star && j < small && u[i]->g.nops == u[0]->g.nops)))
        err = pair_push(out, make_pair(u[i], u[j]));
  free(u);
  free(canon);
  return err;
}

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  int c = memcmp(&x->src, &y->src, sizeof x->src);
  return c ? c : memcmp(&x->dst, &y->dst, sizeof x->dst);
}

static base_status make_pairs(const rec_vec *all, fp_pairs mode, pair_vec *out,
                              fp_stats *st, base_diag *d) {
  for (size_t i = 0, j; i < all->n; i = j) {
    for (j = i + 1; j < all->n && all->r[j].fp == all->r[i].fp;)
      j++;
    if (j - i < 2)
      continue;
    st->buckets++;
    if (bucket_pairs(all->r + i, j - i, mode, out, st))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  if (out->n)
    qsort(out->p, out->n, sizeof *out->p, pair_cmp);
  st->pairs = (long long)out->n;
  return BASE_OK;
}

/* ---- stage 3: confirmation ------------------------------------------------
 */

enum { V_OK, V_SEED, V_FLOAT, V_INPUTS, V_FILTERED, V_ERR };

typedef struct verdict {
  int kind;
  int filtered;        /* with V_FILTERED: the filter's kind */
  base_status st;      /* with V_ERR */
  ir_graph *src, *dst; /* with V_OK */
} verdict;

/* Output permutation: dst output perm[i] matches src output i on both
 * seeds. Returns 0, or -1 when no such matching exists. */
static int match_outputs(fp_eval *e1, fp_eval *e2, const pair *p,
                         int perm[EN_MAX_OUTPUTS], int *nout) {
  uint64_t s1[EN_MAX_OUTPUTS], d1[EN_MAX_OUTPUTS], s2[EN_MAX_OUTPUTS],
      d2[EN_MAX_OUTPUTS];
  int ns, nd, taken[EN_MAX_OUTPUTS] = {0};
  if (fp_eval_graph(e1, &p->src, NULL, s1, &ns) ||
      fp_eval_graph(e2, &p->src, NULL, s2, &ns) ||
      fp_eval_graph(e1, &p->dst, NULL, d1, &nd) ||
      fp_eval_graph(e2, &p->dst, NULL, d2, &nd) || ns != nd)
    return -1;
  for (int i = 0; i < ns; i++) {
    int j = 0;
    while (j < nd && (taken[j] || d1[j] != s1[i] || d2[j] != s2[i]))
      j++;
    if (j == nd)
      return -1;
    taken[j] = 1;
    perm[i] = j;
  }
  *nout = ns;
  return 0;
}

static int inputs_covered(const pair *p) {
  uint8_t us[EN_NCLASSES], ud[EN_NCLASSES];
  en_graph_used(&p->src, us);
  en_graph_used(&p->dst, ud);
  for (int c = 0; c < EN_NCLASSES; c++)
    if (ud[c] > us[c])
      return 0;
  return 1;
}

/* Runs g on the reference executor with FLOAT_SEED inputs; with f (the
 * other graph, run already: fv), its inputs and weights of g's names take
 * their values from there (a weight is drawn by its first reader's hint,
 * which may differ between the graphs: the extended set's batchnorm
 * parameters). */
static ex_values *run_float(const ir_graph *g, const ir_graph *f,
                            const ex_values *fv, base_status *st) {
  ex_values *v = ex_values_new(g);
  ex_options o = {1, 0};
  base_diag d;
  for (int t = 0; v && f && fv && t < g->ntensors; t++) {
    int u = g->tensors[t].kind == IR_T_VALUE
                ? -1
                : ir_find_tensor(f, g->tensors[t].name);
    size_t n = (size_t)ir_shape_numel(&g->tensors[t].shape);
    if (u < 0 || !fv->v[u] ||
        !ir_shape_eq(&f->tensors[u].shape, &g->tensors[t].shape))
      continue;
    if (!(v->v[t] = base_malloc(n * sizeof(float)))) {
      *st = BASE_ERR_NOMEM;
      return v;
    }
    memcpy(v->v[t], fv->v[u], n * sizeof(float));
  }
  *st = v ? ex_fill_random(g, v, FLOAT_SEED, &d) : BASE_ERR_NOMEM;
  if (!*st)
    *st = ex_run(g, v, &o, &d);
  return v;
}

static int close_enough(const float *a, const float *b, int64_t n) {
  double scale = 1e-3;
  for (int64_t i = 0; i < n; i++)
    scale = scale > (double)(a[i] < 0 ? -a[i] : a[i])
                ? scale
                : (double)(a[i] < 0 ? -a[i] : a[i]);
  for (int64_t i = 0; i < n; i++) {
    double diff = (double)a[i] - (double)b[i];
    if (!(diff <= FLOAT_RTOL * scale && -diff <= FLOAT_RTOL * scale))
      return 0;
  }
  return 1;
}

static base_status float_check(const ir_graph *s, const ir_graph *t, int *ok) {
  base_status st1, st2;
  ex_values *a = run_float(s, NULL, NULL, &st1);
  ex_values *b = run_float(t, s, st1 ? NULL : a, &st2);
  *ok = 1;
  for (int i = 0; !st1 && !st2 && i < s->noutputs && *ok; i++) {
    int32_t x = s->outputs[i], y = t->outputs[i];
    *ok = close_enough(a->v[x], b->v[y], ir_shape_numel(&s->tensors[x].shape));
  }
  ex_values_free(a);
  ex_values_free(b);
  return st1 ? st1 : st2;
}

typedef struct confirm_ctx {
  fp_inputs *in1, *in2;
  fp_inputs *inv; /* seeded by name: the filter's value hashes */
  int threads;
  fp_filter filter;
  void *fu;
  int filtered; /* the pairs passed the filter already (FP_PAIRS_SPANNING) */
} confirm_ctx;

static void drop_graphs(verdict *v) {
  ir_graph_free(v->src);
  ir_graph_free(v->dst);
  v->src = v->dst = NULL;
}

/* Builds p's two ir_graphs (dst's outputs in the order matching src's on
 * both seeds) into v (V_OK), or says why not (V_SEED, V_INPUTS, V_ERR). */
static void build_pair(fp_eval *e1, fp_eval *e2, const pair *p, verdict *v) {
  int perm[EN_MAX_OUTPUTS], n;
  uint8_t so[EN_MAX_OUTPUTS], dout[EN_MAX_OUTPUTS], dp[EN_MAX_OUTPUTS];
  base_diag d;
  memset(v, 0, sizeof *v);
  if (match_outputs(e1, e2, p, perm, &n)) {
    v->kind = V_SEED;
    return;
  }
  if (!inputs_covered(p)) {
    v->kind = V_INPUTS;
    return;
  }
  en_graph_outputs(&p->src, so);
  en_graph_outputs(&p->dst, dout);
  for (int i = 0; i < n; i++)
    dp[i] = dout[perm[i]];
  v->src = en_graph_build(&p->src, so, n, "src", &d);
  v->dst = v->src ? en_graph_build(&p->dst, dp, n, "dst", &d) : NULL;
  if (!v->dst) {
    v->kind = V_ERR, v->st = d.code ? d.code : BASE_ERR_NOMEM;
    drop_graphs(v);
  }
}

#define MAX_TENSORS (EN_NINPUT_IDS + EN_MAX_OUTPUTS)

/* The value hash of every tensor of b, built from g by en_graph_build
 * (its used inputs in id order, then each node's outputs), into h, as
 * fp_value_hashes(b, FP_SEED1, h) gives them: ev evaluates g over inputs
 * seeded by name (fp_inputs_named), with its caches kept across pairs. */
static base_status graph_values(fp_eval *ev, const en_graph *g,
                                const ir_graph *b, uint64_t *h) {
  uint8_t use[EN_NINPUT_IDS] = {0};
  int t = 0, n = 0;
  if (g->nops == 0)
    use[g->root] = 1;
  for (int i = 0; i < g->nops; i++) {
    n += en_gop_nout(g->n[i].gop);
    for (int j = 0; j < en_gop_nin(g->n[i].gop); j++)
      if (EN_IS_INPUT(en_arg(&g->n[i], j)))
        use[en_arg(&g->n[i], j)] = 1;
  }
  for (int v = 0; v < EN_NINPUT_IDS; v++)
    n += use[v];
  base_status st = n == b->ntensors ? BASE_OK : BASE_ERR_INTERNAL;
  for (int i = 0; !st && i < g->nops; i++)
    st = fp_eval_node(ev, g, i, NULL);
  if (st) /* not as built (a batchnorm gop: several IR nodes, four
           * parameter weights): the ir_graph's own */
    return fp_value_hashes(b, FP_SEED1, h);
  for (int v = 0; v < EN_NINPUT_IDS; v++)
    if (use[v])
      h[t++] =
          fp_tensor_hash(&en_class_of(en_input_class(v))->shape, ev->in->v[v]);
  for (int i = 0; i < g->nops; i++)
    for (int sl = 0; sl < en_gop_nout(g->n[i].gop); sl++)
      h[t++] = fp_value_hash(ev, EN_VNODE(i, sl), NULL);
  return BASE_OK;
}

struct fp_vals {
  fp_eval *ev;
  const pair *p;
  const verdict *v;
  int done;
  base_status st;
  uint64_t vs[MAX_TENSORS + 1], vd[MAX_TENSORS + 1];
};

base_status fp_vals_get(fp_vals *x, const uint64_t **vs, const uint64_t **vd) {
  if (!x->done) {
    x->done = 1;
    if (x->v->src->ntensors > MAX_TENSORS || x->v->dst->ntensors > MAX_TENSORS)
      x->st = BASE_ERR_INTERNAL; /* never so: en_graph_build's tensors */
    if (!x->st)
      x->st = graph_values(x->ev, &x->p->src, x->v->src, x->vs);
    if (!x->st)
      x->st = graph_values(x->ev, &x->p->dst, x->v->dst, x->vd);
  }
  *vs = x->vs, *vd = x->vd;
  return x->st;
}

/* The filter's verdict on p, built in v (V_OK): 0 keep, > 0 its kind, -1
 * out of memory. */
static int run_filter(const confirm_ctx *c, fp_eval *ev, const pair *p,
                      const verdict *v) {
  fp_vals x = {.ev = ev, .p = p, .v = v};
  ir_rule r = {.src = v->src, .dst = v->dst};
  return c->filter(c->fu, &r, &x);
}

/* Confirms one pair: built, filtered (unless the pairing did already),
 * float-checked. */
static void confirm_one(const confirm_ctx *c, fp_eval *e1, fp_eval *e2,
                        fp_eval *ev, const pair *p, verdict *v) {
  int ok = 0;
  build_pair(e1, e2, p, v);
  if (v->kind != V_OK)
    return;
  if (c->filter && !c->filtered) {
    if ((v->filtered = run_filter(c, ev, p, v)) != 0) {
      v->kind = v->filtered > 0 ? V_FILTERED : V_ERR;
      v->st = v->filtered > 0 ? BASE_OK : BASE_ERR_NOMEM;
      v->filtered = v->filtered > 0 ? v->filtered : 0;
      drop_graphs(v);
      return;
    }
  }
  v->st = float_check(v->src, v->dst, &ok);
  if (v->st || !ok) {
    v->kind = v->st ? V_ERR : V_FLOAT;
    drop_graphs(v);
  }
}

/* ---- spanning pairs (FP_PAIRS_SPANNING) -----------------------------------
 *
 * The members of a bucket are one equivalence class. Two members joined by
 * a pair the filter drops (redundant on its own: it follows from smaller
 * pairs) are connected for free; only pairs joining the components that
 * remain are new rules. Pairs are taken by size, smallest first (a minimum
 * spanning forest), so each rule is as small as the class allows.
 */

#define SPAN_TESTS_MAX 256 /* a member is tested against this many others */

typedef struct span {
  const confirm_ctx *cx;
  fp_eval *e1, *e2, *ev; /* seeds 1, 2; the filter's (confirm_ctx.inv) */
  pair_vec out;
  long long tests, joined, dups;
  int err;
} span;

static int uf_find(int *parent, int i) {
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

/* Whether the pair of a and b is redundant on its own. */
static int span_free(span *s, const fp_rec *a, const fp_rec *b) {
  pair p = make_pair(a, b);
  verdict v;
  build_pair(s->e1, s->e2, &p, &v);
  if (v.kind == V_ERR)
    s->err = 1;
  if (v.kind != V_OK)
    return 0;
  int f = run_filter(s->cx, s->ev, &p, &v);
  if (f < 0)
    s->err = 1; /* out of memory */
  drop_graphs(&v);
  return f > 0;
}

static void uf_union(int *parent, int a, int b) {
  parent[a > b ? a : b] = a < b ? a : b; /* roots are first members */
}

typedef struct edge_vec {
  uint32_t (*e)[2];
  size_t n, cap;
} edge_vec;

static int edge_push(edge_vec *v, size_t i, size_t j) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 64;
    uint32_t(*ne)[2] = base_realloc(v->e, cap * sizeof *ne);
    if (!ne)
      return -1;
    v->e = ne, v->cap = cap;
  }
  v->e[v->n][0] = (uint32_t)i, v->e[v->n++][1] = (uint32_t)j;
  return 0;
}

/* Joins members by the pairs whose two sides have `size` operators in all,
 * Kruskal-style: first every free pair, then each other pair that still
 * joins two components becomes a candidate. Smaller pairs go first, so a
 * small rule is never left out for a detour through larger graphs. */
static void span_size(span *s, const fp_rec **u, size_t m, int *parent,
                      int size, edge_vec *rest) {
  rest->n = 0;
  for (size_t j = 1; j < m && !s->err; j++)
    for (size_t i = 0; i < j && i < SPAN_TESTS_MAX; i++) {
      int a = uf_find(parent, (int)i), b = uf_find(parent, (int)j);
      if (a == b || u[i]->g.nops + u[j]->g.nops != size)
        continue;
      s->tests++;
      if (span_free(s, u[i], u[j])) {
        uf_union(parent, a, b);
        s->joined++;
      } else if (edge_push(rest, i, j)) {
        s->err = 1;
      }
    }
  for (size_t k = 0; k < rest->n && !s->err; k++) {
    int a = uf_find(parent, (int)rest->e[k][0]);
    int b = uf_find(parent, (int)rest->e[k][1]);
    if (a == b)
      continue;
    uf_union(parent, a, b);
    if (pair_push(&s->out, make_pair(u[rest->e[k][0]], u[rest->e[k][1]])))
      s->err = 1;
  }
}

static void span_bucket(span *s, const fp_rec *r, size_t n) {
  const fp_rec **u = base_malloc(n * sizeof *u);
  uint64_t *canon = base_malloc(n * sizeof *canon);
  int *parent = base_malloc(n * sizeof *parent);
  edge_vec rest = {0};
  if (!u || !canon || !parent) {
    s->err = 1;
    goto done;
  }
  size_t m = bucket_members(r, n, u, canon, &s->dups);
  for (size_t i = 0; i < m; i++)
    parent[i] = (int)i;
  if (m > 1) /* members are in size order */
    for (int size = u[0]->g.nops + u[1]->g.nops;
         size <= 2 * u[m - 1]->g.nops && !s->err; size++)
      span_size(s, u, m, parent, size, &rest);
done:
  free(rest.e);
  free(u);
  free(canon);
  free(parent);
}

static base_status make_pairs_span(const en_config *c, const rec_vec *all,
                                   const confirm_ctx *cx, pair_vec *out,
                                   fp_stats *st, base_diag *d) {
  size_t nb = 0, *start = base_malloc((all->n + 1) * sizeof *start);
  if (!start)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (size_t i = 0, j; i < all->n; i = j) {
    for (j = i + 1; j < all->n && all->r[j].fp == all->r[i].fp;)
      j++;
    if (j - i >= 2)
      start[nb++] = i;
  }
  st->buckets = (long long)nb;
  int err = 0;
  long long done = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(cx->threads) reduction(| : err)
#endif
  {
    span s = {cx,
              fp_eval_new(cx->in1),
              fp_eval_new(cx->in2),
              fp_eval_new(cx->inv),
              {0},
              0,
              0,
              0,
              0};
    s.err = !s.e1 || !s.e2 || !s.ev;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 64)
#endif
    for (size_t b = 0; b < nb; b++) {
      size_t i = start[b], j = i + 1;
      while (j < all->n && all->r[j].fp == all->r[i].fp)
        j++;
      if (!s.err)
        span_bucket(&s, all->r + i, j - i);
#ifdef _OPENMP
#pragma omp critical
#endif
      if (c->progress && ++done % 4096 == 0)
        c->progress(c->u, "pair", (double)done, (double)nb);
    }
#ifdef _OPENMP
#pragma omp critical
#endif
    {
      for (size_t k = 0; k < s.out.n && !s.err; k++)
        s.err = pair_push(out, s.out.p[k]);
      st->span_tests += s.tests;
      st->span_joined += s.joined;
      st->dups += s.dups;
    }
    err |= s.err;
    free(s.out.p);
    fp_eval_free(s.e1);
    fp_eval_free(s.e2);
    fp_eval_free(s.ev);
  }
  free(start);
  if (err)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                         "out of memory while pairing buckets");
  if (out->n) /* content order: the same for any thread count */
    qsort(out->p, out->n, sizeof *out->p, pair_cmp);
  st->pairs = (long long)out->n;
  return BASE_OK;
}

/* Confirms p[0..n-1] into v[0..n-1] on the context's threads. */
static base_status confirm_chunk(const confirm_ctx *c, const pair *p, size_t n,
                                 verdict *v) {
  int nomem = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(c->threads) reduction(| : nomem)
#endif
  {
    fp_eval *e1 = fp_eval_new(c->in1), *e2 = fp_eval_new(c->in2);
    fp_eval *ev = fp_eval_new(c->inv);
    nomem = !e1 || !e2 || !ev;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 8)
#endif
    for (size_t i = 0; i < n; i++) {
      if (nomem) {
        v[i].kind = V_ERR, v[i].st = BASE_ERR_NOMEM;
        continue;
      }
      confirm_one(c, e1, e2, ev, &p[i], &v[i]);
    }
    fp_eval_free(e1);
    fp_eval_free(e2);
    fp_eval_free(ev);
  }
  return nomem ? BASE_ERR_NOMEM : BASE_OK;
}

/* Counts a rejected verdict in st: 0; V_OK: 1; V_ERR: -1. */
static int tally(const verdict *v, fp_stats *st) {
  switch (v->kind) {
  case V_SEED: st->rej_seed++; return 0;
  case V_FLOAT: st->rej_float++; return 0;
  case V_INPUTS: st->rej_inputs++; return 0;
  case V_FILTERED:
    st->filtered[v->filtered < FP_FILTER_KINDS ? v->filtered : 0]++;
    return 0;
  case V_ERR: return -1;
  }
  return 1;
}

/* Tallies a chunk's verdicts and adds its rules in order. */
static base_status collect(verdict *v, size_t n, ir_ruleset *out, fp_stats *st,
                           base_diag *d) {
  base_status err = BASE_OK;
  for (size_t i = 0; i < n; i++) {
    char id[32];
    int t = tally(&v[i], st);
    if (t < 0 && !err)
      err = base_diag_set(d, v[i].st, 0, 0, "confirming a candidate: %s",
                          base_status_name(v[i].st));
    if (t <= 0)
      continue;
    if (err) {
      ir_graph_free(v[i].src);
      ir_graph_free(v[i].dst);
      continue;
    }
    snprintf(id, sizeof id, "c%06lld", ++st->rules);
    if (!ir_ruleset_add(out, id, v[i].src, v[i].dst, d))
      err = d->code ? d->code : BASE_ERR_INTERNAL;
  }
  return err;
}

static base_status confirm(const en_config *c, const confirm_ctx *cx,
                           const pair_vec *pv, ir_ruleset *out, fp_stats *st,
                           base_diag *d) {
  enum { CHUNK = 4096 };
  verdict *v = base_malloc(CHUNK * sizeof *v);
  base_status err = v ? BASE_OK : BASE_ERR_NOMEM;
  for (size_t i = 0; i < pv->n && !err; i += CHUNK) {
    size_t n = pv->n - i < CHUNK ? pv->n - i : CHUNK;
    err = confirm_chunk(cx, pv->p + i, n, v);
    if (!err)
      err = collect(v, n, out, st, d);
    if (c->progress)
      c->progress(c->u, "confirm", (double)(i + n), (double)pv->n);
  }
  if (err == BASE_ERR_NOMEM)
    base_diag_set(d, err, 0, 0, "out of memory");
  free(v);
  return err;
}

static base_status candidates_dist(const en_config *c, fp_pairs mode,
                                   const confirm_ctx *cx, const fp_comm *comm,
                                   base_status err, ir_ruleset *out,
                                   fp_stats *st, base_diag *d);
static base_status branch_weights(const en_config *c, const fp_comm *comm,
                                  long long *w, int nb, base_diag *d);

base_status fp_candidates(const en_config *c, fp_pairs mode, fp_filter f,
                          void *fu, ir_ruleset *out, fp_stats *st,
                          base_diag *d) {
  return fp_candidates_comm(c, mode, f, fu, NULL, out, st, d);
}

base_status fp_candidates_comm(const en_config *c, fp_pairs mode, fp_filter f,
                               void *fu, const fp_comm *comm, ir_ruleset *out,
                               fp_stats *st, base_diag *d) {
  rec_vec all = {0};
  pair_vec pv = {0};
  base_status err = BASE_OK;
  confirm_ctx cx = {fp_inputs_new(FP_SEED1),
                    fp_inputs_new(SEED2),
                    fp_inputs_named(FP_SEED1),
                    1,
                    f,
                    fu,
                    mode == FP_PAIRS_SPANNING && f};
  memset(st, 0, sizeof *st);
#ifdef _OPENMP
  cx.threads = c->threads > 0 ? c->threads : omp_get_max_threads();
#endif
  if (!cx.in1 || !cx.in2 || !cx.inv)
    err = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (comm && comm->size > 1) {
    err = candidates_dist(c, mode, &cx, comm, err, out, st, d);
    fp_inputs_free(cx.in1);
    fp_inputs_free(cx.in2);
    fp_inputs_free(cx.inv);
    return err;
  }
  double t0 = base_now();
  long long *w = NULL; /* branch weights, for progress */
  if (!err && c->progress) {
    int nb = en_branch_count(c);
    w = base_calloc((size_t)nb, sizeof *w);
    err = w ? branch_weights(c, NULL, w, nb, d)
            : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  if (!err)
    err = enumerate(c, w, NULL, &all, st, d);
  free(w);
  st->graphs = st->graphs_here = (long long)all.n;
  st->t_enum = base_now() - t0 - st->t_nf;
  st->rss_enum_kb = (long)(base_peak_rss_mib() * 1024);
  if (!err) {
    t0 = base_now();
    err =
        cx.filtered
            ? make_pairs_span(c, &all, &cx, &pv, st, d)
            : make_pairs(&all, mode == FP_PAIRS_ALL ? mode : FP_PAIRS_SMALLEST,
                         &pv, st, d);
    st->t_fp = base_now() - t0;
    st->rss_fp_kb = (long)(base_peak_rss_mib() * 1024);
  }
  free(all.r);
  if (!err) {
    t0 = base_now();
    err = confirm(c, &cx, &pv, out, st, d);
    st->t_confirm = base_now() - t0;
  }
  st->peak_rss_kb = (long)(base_peak_rss_mib() * 1024);
  free(pv.p);
  fp_inputs_free(cx.in1);
  fp_inputs_free(cx.in2);
  fp_inputs_free(cx.inv);
  return err;
}

/* ---- several processes (fp_candidates_comm) ------------------------------
 *
 * Every rank builds the normal-form table, enumerates its share of the
 * branches and sends each record to the rank of its fingerprint's shard
 * (fp mod ranks), so a bucket lies whole on one rank. Each rank pairs and
 * confirms its buckets; the confirmed pairs go to every rank, which sorts
 * them (the order fp_candidates confirms them in) and builds the rules.
 * Before each exchange the ranks agree that none failed.
 */

static void *count_begin(void *u, int b) { return (long long *)u + b; }

static base_status count_visit(void *state, const en_graph *g,
                               const ir_shape (*shapes)[EN_NSLOTS],
                               int is_graph) {
  (void)g, (void)shapes;
  *(long long *)state += is_graph;
  return BASE_OK;
}

static void count_end(void *u, int b, void *state) {
  (void)u, (void)b, (void)state;
}

/* Branch weights: 1 + the graphs each branch has with one operator fewer
 * (counted without evaluating them: a fraction of the enumeration; read
 * from the checkpoint directory when it lists them on every rank). With
 * comm (a collective) rank r counts branches r, r + N, ... and the ranks
 * exchange their counts. */
static base_status branch_weights(const en_config *c, const fp_comm *comm,
                                  long long *w, int nb, base_diag *d) {
  int need = !(c->checkpoint && fp_ckpt_read_weights(c->checkpoint, w, nb));
  base_status st = any_rank(comm, BASE_OK, &need, d);
  if (st || !need)
    return st;
  int dist = comm && comm->size > 1;
  uint8_t *mask = dist ? base_calloc((size_t)nb, 1) : NULL;
  long long *all = NULL;
  en_config lc = *c;
  for (int b = 0; b < nb; b++)
    w[b] = 0;
  for (int b = 0; mask && b < nb; b++)
    mask[b] = b % comm->size == comm->rank;
  lc.max_ops = c->max_ops - 1;
  lc.progress = NULL;
  lc.branches = mask;
  if (dist && !mask)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st && lc.max_ops > 0) {
    en_visitor v = {count_begin, count_visit, count_end, w, NULL};
    st = en_enumerate(&lc, &v, d);
  }
  if (dist && !(st = fp_comm_agree(comm, st, d))) {
    size_t *n = base_calloc((size_t)comm->size, sizeof *n);
    st = n ? comm->allgatherv(comm->u, w, (size_t)nb * sizeof *w, (void **)&all,
                              n, d)
           : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    for (int b = 0; !st && b < nb; b++)
      w[b] = all[(size_t)(b % comm->size) * (size_t)nb + (size_t)b];
    free(n);
  }
  free(all);
  free(mask);
  for (int b = 0; b < nb; b++)
    w[b]++;
  return st;
}

/* The weight of dealing branch b: a saved branch (checkpoint) is only
 * loaded, at a small fraction of its enumeration's cost. */
static long long deal_weight(const long long *w, const uint8_t *saved, int b) {
  return saved[b] ? 1 + w[b] / 32 : w[b];
}

/* This rank's branches into mask[nb]: the heaviest branch first to the
 * least loaded rank (the lowest on ties), the same on every rank. A
 * resumed run deals what is left to enumerate evenly: every rank looks for
 * saved branches before the first collective, which no rank passes (and so
 * saves nothing) before all have looked. */
static base_status partition(const en_config *c, const fp_comm *comm,
                             uint8_t **mask, long long **weights,
                             base_diag *d) {
  int nb = en_branch_count(c);
  long long *w = base_calloc((size_t)nb, sizeof *w);
  long long *load = base_calloc((size_t)comm->size, sizeof *load);
  uint8_t *m = base_calloc((size_t)nb, 1), *taken = base_calloc((size_t)nb, 1);
  uint8_t *saved = base_calloc((size_t)nb, 1);
  base_status st = w && load && m && taken && saved ? BASE_OK : BASE_ERR_NOMEM;
  if (st)
    base_diag_set(d, st, 0, 0, "out of memory");
  for (int b = 0; !st && c->checkpoint && b < nb; b++)
    saved[b] = (uint8_t)fp_ckpt_exists(c->checkpoint, b);
  if (!(st = fp_comm_agree(comm, st, d))) /* counting is a collective */
    st = branch_weights(c, comm, w, nb, d);
  for (int k = 0; k < nb && !st; k++) {
    int b = -1, r = 0;
    for (int i = 0; i < nb; i++)
      if (!taken[i] &&
          (b < 0 || deal_weight(w, saved, i) > deal_weight(w, saved, b)))
        b = i;
    for (int j = 1; j < comm->size; j++)
      if (load[j] < load[r])
        r = j;
    taken[b] = 1;
    load[r] += deal_weight(w, saved, b);
    m[b] = r == comm->rank;
  }
  free(saved);
  free(load);
  free(taken);
  if (st) {
    free(w);
    free(m);
    return st; /* d says why */
  }
  *mask = m;
  *weights = w;
  return BASE_OK;
}

/* Sends each record to its shard's rank; all then holds this rank's shard,
 * sorted. */
static base_status exchange_records(const fp_comm *comm, rec_vec *all,
                                    base_diag *d) {
  size_t sz = (size_t)comm->size;
  size_t *cnt = base_calloc(sz, sizeof *cnt),
         *off = base_calloc(sz, sizeof *off);
  size_t *recvn = base_calloc(sz, sizeof *recvn);
  fp_rec *send = base_malloc((all->n ? all->n : 1) * sizeof *send);
  void *recv = NULL;
  base_status st = cnt && off && recvn && send ? BASE_OK : BASE_ERR_NOMEM;
  for (size_t i = 0; !st && i < all->n; i++)
    cnt[all->r[i].fp % sz]++;
  for (size_t j = 1; !st && j < sz; j++)
    off[j] = off[j - 1] + cnt[j - 1];
  for (size_t i = 0; !st && i < all->n; i++)
    send[off[all->r[i].fp % sz]++] = all->r[i];
  for (size_t j = 0; !st && j < sz; j++)
    cnt[j] *= sizeof *send;
  if (!st) {
    free(all->r);
    all->r = NULL;
    all->n = 0;
    st = comm->alltoallv(comm->u, send, cnt, &recv, recvn, d);
  } else {
    base_diag_set(d, st, 0, 0, "out of memory");
  }
  if (!st) {
    size_t n = 0;
    for (size_t j = 0; j < sz; j++)
      n += recvn[j];
    all->r = recv;
    all->n = all->cap = n / sizeof *all->r;
    if (all->n)
      qsort(all->r, all->n, sizeof *all->r, rec_cmp);
  }
  free(cnt);
  free(off);
  free(recvn);
  free(send);
  return st;
}

/* Confirms pv's pairs, keeping those that pass (as pairs) in keep. */
static base_status confirm_keep(const en_config *c, const confirm_ctx *cx,
                                const pair_vec *pv, pair_vec *keep,
                                fp_stats *st, base_diag *d) {
  enum { CHUNK = 4096 };
  verdict *v = base_malloc(CHUNK * sizeof *v);
  base_status err = v ? BASE_OK : BASE_ERR_NOMEM;
  for (size_t i = 0; i < pv->n && !err; i += CHUNK) {
    size_t n = pv->n - i < CHUNK ? pv->n - i : CHUNK;
    err = confirm_chunk(cx, pv->p + i, n, v);
    for (size_t k = 0; k < n && !err; k++) {
      int t = tally(&v[k], st);
      if (t < 0)
        err = base_diag_set(d, v[k].st, 0, 0, "confirming a candidate: %s",
                            base_status_name(v[k].st));
      else if (t > 0 && pair_push(keep, pv->p[i + k]))
        err = BASE_ERR_NOMEM;
    }
    for (size_t k = 0; k < n; k++)
      if (v[k].kind == V_OK)
        drop_graphs(&v[k]);
    if (c->progress)
      c->progress(c->u, "confirm", (double)(i + n), (double)pv->n);
  }
  if (err == BASE_ERR_NOMEM)
    base_diag_set(d, err, 0, 0, "out of memory");
  free(v);
  return err;
}

/* Builds the rules of confirmed pairs p[0..n-1] into out, in order. */
static base_status build_rules(const confirm_ctx *cx, const pair *p, size_t n,
                               ir_ruleset *out, fp_stats *st, base_diag *d) {
  enum { CHUNK = 4096 };
  verdict *v = base_malloc(CHUNK * sizeof *v);
  base_status err = v ? BASE_OK : BASE_ERR_NOMEM;
  for (size_t i = 0; i < n && !err; i += CHUNK) {
    size_t m = n - i < CHUNK ? n - i : CHUNK;
    int nomem = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(cx->threads) reduction(| : nomem)
#endif
    {
      fp_eval *e1 = fp_eval_new(cx->in1), *e2 = fp_eval_new(cx->in2);
      nomem = !e1 || !e2;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 64)
#endif
      for (size_t k = 0; k < m; k++) {
        if (nomem)
          v[k].kind = V_ERR, v[k].st = BASE_ERR_NOMEM,
          v[k].src = v[k].dst = NULL;
        else
          build_pair(e1, e2, &p[i + k], &v[k]);
      }
      fp_eval_free(e1);
      fp_eval_free(e2);
    }
    for (size_t k = 0; k < m; k++) {
      char id[32];
      if (!err && v[k].kind != V_OK)
        err = base_diag_set(d, v[k].kind == V_ERR ? v[k].st : BASE_ERR_INTERNAL,
                            0, 0, "rebuilding a confirmed candidate failed");
      if (err) {
        drop_graphs(&v[k]);
        continue;
      }
      snprintf(id, sizeof id, "c%06lld", ++st->rules);
      if (!ir_ruleset_add(out, id, v[k].src, v[k].dst, d))
        err = d->code ? d->code : BASE_ERR_INTERNAL;
    }
  }
  if (err == BASE_ERR_NOMEM && !v)
    base_diag_set(d, err, 0, 0, "out of memory");
  free(v);
  return err;
}

/* Sums every rank's counts into st (times and memory stay this rank's). */
static base_status sum_stats(const fp_comm *comm, fp_stats *st, base_diag *d) {
  size_t *n = base_calloc((size_t)comm->size, sizeof *n);
  fp_stats *all = NULL;
  base_status err =
      n ? comm->allgatherv(comm->u, st, sizeof *st, (void **)&all, n, d)
        : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  free(n);
  if (err)
    return err;
  fp_stats s = *st;
  s.graphs = s.buckets = s.dups = s.pairs = s.rej_seed = s.rej_float = 0;
  s.rej_inputs = s.nf_dropped = s.span_tests = s.span_joined = 0;
  memset(s.filtered, 0, sizeof s.filtered);
  for (int r = 0; r < comm->size; r++) {
    const fp_stats *a = &all[r];
    s.graphs += a->graphs, s.buckets += a->buckets, s.dups += a->dups;
    s.pairs += a->pairs, s.rej_seed += a->rej_seed;
    s.rej_float += a->rej_float, s.rej_inputs += a->rej_inputs;
    s.nf_dropped += a->nf_dropped, s.span_tests += a->span_tests;
    s.span_joined += a->span_joined;
    for (int k = 0; k < FP_FILTER_KINDS; k++)
      s.filtered[k] += a->filtered[k];
  }
  *st = s;
  free(all);
  return BASE_OK;
}

/* Every rank's confirmed pairs to every rank, in fp_candidates' order. */
static base_status gather_pairs(const fp_comm *comm, pair_vec *keep,
                                base_diag *d) {
  size_t *n = base_calloc((size_t)comm->size, sizeof *n);
  pair *all = NULL;
  base_status err =
      n ? comm->allgatherv(comm->u, keep->p, keep->n * sizeof *keep->p,
                           (void **)&all, n, d)
        : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!err) {
    size_t total = 0;
    for (int r = 0; r < comm->size; r++)
      total += n[r];
    free(keep->p);
    keep->p = all;
    keep->n = keep->cap = total / sizeof *all;
    if (keep->n)
      qsort(keep->p, keep->n, sizeof *keep->p, pair_cmp);
  }
  free(n);
  return err;
}

static base_status candidates_dist(const en_config *c, fp_pairs mode,
                                   const confirm_ctx *cx, const fp_comm *comm,
                                   base_status err, ir_ruleset *out,
                                   fp_stats *st, base_diag *d) {
  rec_vec all = {0};
  pair_vec pv = {0}, keep = {0};
  uint8_t *mask = NULL;
  long long *w = NULL;
  en_config lc = *c;
  double t0 = base_now();
  if (!(err = fp_comm_agree(comm, err, d))) /* partition is a collective */
    err = partition(c, comm, &mask, &w, d);
  lc.branches = mask;
  if (!(err = fp_comm_agree(comm, err, d))) /* enumerate is a collective */
    err = enumerate(&lc, w, comm, &all, st, d);
  free(mask);
  free(w);
  st->graphs = st->graphs_here = (long long)all.n;
  st->t_enum = base_now() - t0 - st->t_nf;
  st->rss_enum_kb = (long)(base_peak_rss_mib() * 1024);
  t0 = base_now();
  if (!(err = fp_comm_agree(comm, err, d)))
    err = exchange_records(comm, &all, d);
  if (!(err = fp_comm_agree(comm, err, d)))
    err =
        cx->filtered
            ? make_pairs_span(c, &all, cx, &pv, st, d)
            : make_pairs(&all, mode == FP_PAIRS_ALL ? mode : FP_PAIRS_SMALLEST,
                         &pv, st, d);
  st->t_fp = base_now() - t0;
  st->rss_fp_kb = (long)(base_peak_rss_mib() * 1024);
  free(all.r);
  t0 = base_now();
  if (!err)
    err = confirm_keep(c, cx, &pv, &keep, st, d);
  free(pv.p);
  if (!(err = fp_comm_agree(comm, err, d)))
    err = gather_pairs(comm, &keep, d);
  if (!(err = fp_comm_agree(comm, err, d)))
    err = sum_stats(comm, st, d);
  if (!err)
    err = build_rules(cx, keep.p, keep.n, out, st, d);
  st->t_confirm = base_now() - t0;
  st->peak_rss_kb = (long)(base_peak_rss_mib() * 1024);
  free(keep.p);
  return err;
}
