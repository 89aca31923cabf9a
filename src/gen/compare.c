/* compare.c: gen_compare, how much of a reference rule set (e.g. TASO's) a
 * generated library covers. Each small reference rule is, in this order:
 * in the library up to renaming (same pr_pair_key), implied by the prune
 * rules (trivial, common sub/supergraph), derivable by rewriting one side
 * into the other with library rules (pr_derivable), redundant because an
 * intermediate value has a smaller normal form (fp_nf_rule_redundant), or
 * missing.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

typedef struct keyidx {
  uint64_t key;
  int idx;
} keyidx;

static int cmp_keyidx(const void *a, const void *b) {
  const keyidx *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The library's pair keys, sorted (into *out, n = lib->n). */
static base_status lib_keys(const ir_ruleset *lib, keyidx **out, base_diag *d) {
  keyidx *k = base_calloc((size_t)lib->n + 1, sizeof *k);
  if (!k)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < lib->n; i++) {
    base_status s = pr_pair_key(&lib->rules[i], &k[i].key, d);
    if (s) {
      free(k);
      return s;
    }
    k[i].idx = i;
  }
  qsort(k, (size_t)lib->n, sizeof *k, cmp_keyidx);
  *out = k;
  return BASE_OK;
}

typedef struct compare_ctx {
  const gen_compare_options *o;
  const keyidx *keys;
  int nkeys;
  pr_lib *pl;
  const fp_nf *nf;
} compare_ctx;

/* Classifies one reference rule r into st. */
static base_status classify(const compare_ctx *c, const ir_rule *r,
                            gen_compare_stats *st, base_diag *d) {
  keyidx q = {0, 0};
  int nf_red = 0, der = 0;
  base_status s = pr_pair_key(r, &q.key, d);
  if (s)
    return s;
  if (bsearch(&q, c->keys, (size_t)c->nkeys, sizeof q, cmp_keyidx)) {
    st->found++;
    return BASE_OK;
  }
  pr_kind kind = PR_KEEP;
  if ((s = pr_redundant(r, &kind)) != BASE_OK)
    return base_diag_set(d, s, 0, 0, "out of memory");
  if (kind != PR_KEEP) {
    st->implied++; /* redundant by the prune rules: follows from a smaller one
                    */
    return BASE_OK;
  }
  if (c->o->depth &&
      (s = pr_derivable(c->pl, r, c->o->depth, 4096, &der, d)) != BASE_OK)
    return s;
  if (der) {
    st->derived++; /* library rules rewrite one side into the other */
    return BASE_OK;
  }
  if ((s = fp_nf_rule_redundant(c->nf, r, &nf_red, d)) != BASE_OK)
    return s;
  if (nf_red) {
    st->non_normal++; /* an intermediate has a smaller form: generation.md */
    return BASE_OK;
  }
  st->missing++;
  if (c->o->missing)
    c->o->missing(c->o->u, r);
  return BASE_OK;
}

base_status gen_compare(const ir_ruleset *ref, const ir_ruleset *lib,
                        const gen_compare_options *o, gen_compare_stats *st,
                        base_diag *d) {
  compare_ctx c = {o, NULL, lib->n, NULL, NULL};
  fp_nf *nf = NULL;
  keyidx *keys = NULL;
  en_config cfg = {0};
  base_status s = lib_keys(lib, &keys, d);
  memset(st, 0, sizeof *st);
  c.keys = keys;
  if (!s && !(c.pl = pr_lib_new(lib)))
    s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  cfg.threads = o->threads > 0 ? o->threads : omp_get_num_procs();
  if (!s)
    s = fp_nf_build(&cfg, o->max_ops - 1 < 3 ? o->max_ops - 1 : 3, &nf, d);
  c.nf = nf;
  for (int i = 0; !s && i < ref->n; i++) {
    const ir_rule *r = &ref->rules[i];
    if (r->src->nnodes > o->max_ops || r->dst->nnodes > o->max_ops)
      continue;
    st->small++;
    s = classify(&c, r, st, d);
  }
  pr_lib_free(c.pl);
  fp_nf_free(nf);
  free(keys);
  return s;
}
