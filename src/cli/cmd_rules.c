/* cmd_rules.c: `superopt gen-rules` (enumerate -> fingerprint -> prune ->
 * verify -> a .rules file) and `superopt verify-rules` (re-prove a file).
 *
 * Progress goes to stderr (a bar with rate and ETA when it is a terminal);
 * the summary table at the end gives counts, time and peak memory per stage.
 */
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../fingerprint/fp.h"
#include "../prune/prune.h"
#include "../verify/verify.h"
#include "cli.h"

#define GEN_MAX_OPS 5 /* beyond this the enumeration does not fit in memory */
#define GEN_MAX_OPS_ALL 4 /* ... and this with every operator */

/* ---- progress ------------------------------------------------------------ */

typedef struct progress {
  const char *stage;
  double start, last;
  int tty;
} progress;

static void progress_begin(progress *p, const char *stage) {
  p->stage = stage;
  p->start = p->last = base_now();
  p->tty = isatty(2);
}

static void progress_cb(void *u, const char *stage, double done, double total) {
  progress *p = u;
  double t = base_now();
  if (stage && strcmp(stage, p->stage)) { /* a new stage: restart the clock */
    if (p->tty)
      fprintf(stderr, "\n");
    p->stage = stage;
    p->start = t;
  }
  if (!p->tty || (t - p->last < 0.2 && done < total))
    return;
  p->last = t;
  double el = t - p->start, frac = total > 0 ? done / total : 0;
  char bar[31];
  int fill = (int)(frac * 30);
  for (int i = 0; i < 30; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  double eta = frac > 0.01 ? el * (1 - frac) / frac : 0;
  fprintf(stderr, "\r%-11s [%s] %5.1f%%  %.0f/s  ETA %4.0fs ", p->stage, bar,
          100 * frac, el > 0 ? done / el : 0, eta);
  fflush(stderr);
}

static void progress_end(progress *p) {
  if (p->tty)
    fprintf(stderr, "\r%-78s\r", "");
}

/* ---- verification over threads --------------------------------------------*/

typedef struct vstats {
  long long proven, unproven;
  double seconds;
} vstats;

/* Proves every rule of rs with `threads` Z3 contexts; records status, core
 * and note in each rule. */
static base_status verify_all(ir_ruleset *rs, unsigned timeout_ms, int threads,
                              vstats *vs, base_diag *d) {
  double t0 = base_now();
  base_status status = BASE_OK;
  long long done = 0;
  progress pg;
  progress_begin(&pg, "verify");
  verify_opts o = {timeout_ms};
#pragma omp parallel num_threads(threads)
  {
    verify_ctx *c = verify_new(&o);
    base_diag local = {0};
    if (!c) {
#pragma omp critical
      status = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cannot start Z3");
    }
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < rs->n; i++) {
      if (!c || status != BASE_OK)
        continue;
      ir_rule *r = &rs->rules[i];
      verify_result res;
      if (verify_prove(c, r, &res, &local) != BASE_OK) {
#pragma omp critical
        {
          if (status == BASE_OK) {
            *d = local;
            status = local.code ? local.code : BASE_ERR_INTERNAL;
          }
        }
        continue;
      }
      r->status = res.status;
      ir_rule_set_axioms(r, res.core, res.ncore);
      ir_rule_set_note(r, res.status == IR_RULE_PROVEN ? NULL : res.reason);
#pragma omp critical
      {
        done++;
        if (omp_get_thread_num() == 0 || done == rs->n)
          progress_cb(&pg, "verify", (double)done, (double)rs->n);
      }
    }
    verify_free(c);
  }
  progress_end(&pg);
  vs->proven = vs->unproven = 0;
  for (int i = 0; i < rs->n; i++)
    rs->rules[i].status == IR_RULE_PROVEN ? vs->proven++ : vs->unproven++;
  vs->seconds = base_now() - t0;
  return status;
}

/* ---- stable order -------------------------------------------------------- */

typedef struct sorted_rule {
  int ops;
  char *text;
  ir_rule r;
} sorted_rule;

static int cmp_sorted(const void *a, const void *b) {
  const sorted_rule *x = a, *y = b;
  if (x->ops != y->ops)
    return x->ops - y->ops;
  return strcmp(x->text, y->text);
}

/* Sorts rules by operator count then text, renumbers them r00001... */
static base_status stable_order(ir_ruleset *rs, base_diag *d) {
  sorted_rule *s = calloc((size_t)rs->n + 1, sizeof *s);
  if (!s)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < rs->n; i++) {
    ir_ruleset one = {&rs->rules[i], 1, 1};
    char *saved = rs->rules[i].id;
    rs->rules[i].id = (char *)"x";
    s[i].text = ir_rules_print(&one, NULL);
    rs->rules[i].id = saved;
    s[i].ops = rs->rules[i].src->nnodes + rs->rules[i].dst->nnodes;
    s[i].r = rs->rules[i];
    if (!s[i].text) {
      for (int j = 0; j < i; j++)
        free(s[j].text);
      free(s);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
  }
  qsort(s, (size_t)rs->n, sizeof *s, cmp_sorted);
  for (int i = 0; i < rs->n; i++) {
    rs->rules[i] = s[i].r;
    char id[32];
    snprintf(id, sizeof id, "r%05d", i + 1);
    char *nid = strdup(id);
    if (nid) {
      free(rs->rules[i].id);
      rs->rules[i].id = nid;
    }
    free(s[i].text);
  }
  free(s);
  return BASE_OK;
}

/* Removes rules that are not proven (freed). */
static void keep_proven(ir_ruleset *rs) {
  int w = 0;
  for (int i = 0; i < rs->n; i++) {
    if (rs->rules[i].status == IR_RULE_PROVEN)
      rs->rules[w++] = rs->rules[i];
    else
      ir_rule_clear(&rs->rules[i]);
  }
  rs->n = w;
}

/* ---- gen-rules ------------------------------------------------------------
 */

typedef struct stage_row {
  const char *name;
  long long count;
  double seconds, rss_mib;
} stage_row;

static void print_table(const stage_row *rows, int n) {
  fprintf(stderr, "\n%-26s %12s %10s %12s\n", "stage", "count", "time (s)",
          "peak RSS MiB");
  for (int i = 0; i < n; i++) {
    fprintf(stderr, "%-26s %12lld ", rows[i].name, rows[i].count);
    if (rows[i].seconds >= 0)
      fprintf(stderr, "%10.2f %12.0f\n", rows[i].seconds, rows[i].rss_mib);
    else
      fprintf(stderr, "%10s %12s\n", "", "");
  }
}

static void list_unproven(const ir_ruleset *rs, int max) {
  int shown = 0;
  for (int i = 0; i < rs->n && shown < max; i++)
    if (rs->rules[i].status != IR_RULE_PROVEN) {
      char *s = ir_print(rs->rules[i].src);
      fprintf(stderr, "unproven: %s: %s\n", rs->rules[i].id,
              rs->rules[i].note ? rs->rules[i].note : "?");
      free(s);
      shown++;
    }
}

/* Options gen-rules and verify-rules share: --threads, --z3-timeout, -o. */
static int prover_opt(const cli_command *c, int ch, int *threads,
                      long long *timeout, const char **out) {
  long long v = ch == 'o' ? 0 : cli_parse_count(optarg);
  if (ch == 'o')
    *out = optarg;
  else if (ch == 't' && v >= 1 && v <= 1024)
    *threads = (int)v;
  else if (ch == 'z' && v >= 1 && v <= 3600000)
    *timeout = v;
  else if (ch == 't')
    return cli_usage_error(c, "--threads must be 1..1024, not '%s'", optarg);
  else
    return cli_usage_error(c, "--z3-timeout must be 1..3600000 ms, not '%s'",
                           optarg);
  return CLI_OK;
}

/* Drops pairs redundant on their own before their float check, so they are
 * never kept in memory (at --max-ops 4 most of the millions of candidates). */
static int prune_filter(void *u, const ir_rule *r) {
  (void)u;
  pr_kind k = pr_redundant(r);
  if (k != PR_KEEP)
    return (int)k;
  uint64_t *vs = malloc(((size_t)r->src->ntensors + 1) * sizeof *vs);
  uint64_t *vd = malloc(((size_t)r->dst->ntensors + 1) * sizeof *vd);
  if (vs && vd && !fp_value_hashes(r->src, 1, vs) &&
      !fp_value_hashes(r->dst, 1, vd) && pr_has_common_context(r, vs, vd))
    k = PR_COMMON_CONTEXT;
  free(vs);
  free(vd);
  return (int)k;
}

int cli_gen_rules(const cli_command *c, int argc, char **argv) {
  static const struct option opts[] = {
      {"max-ops", required_argument, 0, 'n'},
      {"ops", required_argument, 0, 'p'},
      {"threads", required_argument, 0, 't'},
      {"z3-timeout", required_argument, 0, 'z'},
      {"output", required_argument, 0, 'o'},
      {"keep-unproven", no_argument, 0, 'k'},
      {"pairs", required_argument, 0, 'P'},
      {"no-normal-form", no_argument, 0, 'N'},
      {0, 0, 0, 0}};
  int max_ops = 3, threads = omp_get_num_procs(), keep = 0, no_nf = 0;
  long long timeout = 10000;
  const char *ops = NULL, *out = "generated.rules";
  fp_pairs pairs = FP_PAIRS_SPANNING;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":o:", opts, NULL)) != -1;) {
    long long v;
    int rc;
    switch (ch) {
    case 'n':
      v = cli_parse_count(optarg);
      if (v < 1 || v > GEN_MAX_OPS)
        return cli_usage_error(c, "--max-ops must be 1..%d, not '%s'",
                               GEN_MAX_OPS, optarg);
      max_ops = (int)v;
      break;
    case 'p': ops = optarg; break;
    case 't':
    case 'z':
    case 'o':
      if ((rc = prover_opt(c, ch, &threads, &timeout, &out)))
        return rc;
      break;
    case 'k': keep = 1; break;
    case 'N': no_nf = 1; break;
    case 'P':
      if (!strcmp(optarg, "all"))
        pairs = FP_PAIRS_ALL;
      else if (!strcmp(optarg, "smallest"))
        pairs = FP_PAIRS_SMALLEST;
      else if (!strcmp(optarg, "spanning"))
        pairs = FP_PAIRS_SPANNING;
      else
        return cli_usage_error(
            c, "--pairs must be spanning, smallest or all, not '%s'", optarg);
      break;
    case ':':
      return cli_usage_error(c, "option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error(c, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc)
    return cli_usage_error(c, "unexpected argument '%s'", argv[optind]);
  if (max_ops > GEN_MAX_OPS_ALL && !ops)
    return cli_usage_error(
        c,
        "--max-ops %d needs --ops: with every operator it would enumerate "
        "about 500 million graphs (over 20 GiB; --max-ops 4: 11 million)",
        max_ops);

  en_config cfg = {0};
  cfg.max_ops = max_ops;
  cfg.threads = threads;
  cfg.keep_non_normal = no_nf;
  if (ops) {
    char err[256];
    if (en_ops_parse(ops, &cfg.ops, err, sizeof err) != 0) {
      fprintf(stderr, "superopt gen-rules: --ops: %s\n", err);
      return CLI_USAGE;
    }
  }
  progress pg;
  progress_begin(&pg, "enumerate");
  cfg.progress = progress_cb;
  cfg.u = &pg;

  ir_ruleset rs;
  ir_ruleset_init(&rs);
  fp_stats fs = {0};
  base_diag d = {0};
  double t0 = base_now();
  if (fp_candidates(&cfg, pairs, prune_filter, NULL, &rs, &fs, &d) != BASE_OK) {
    progress_end(&pg);
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  progress_end(&pg);
  double t_fp = base_now() - t0, rss_fp = base_peak_rss_mib();
  fprintf(stderr,
          "normal-form table %lld values; enumerated %lld graphs (%lld "
          "dropped: non-normal output), %lld buckets, %lld candidate pairs\n",
          fs.nf_values, fs.graphs, fs.nf_dropped, fs.buckets, fs.pairs);

  pr_stats ps;
  t0 = base_now();
  if (pr_prune(&rs, &ps, &d) != BASE_OK) {
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  double t_pr = base_now() - t0, rss_pr = base_peak_rss_mib();
  for (int k = 1; k < FP_FILTER_KINDS; k++) { /* dropped while confirming */
    ps.in += fs.filtered[k];
    pr_stats_add(&ps, (pr_kind)k, fs.filtered[k]);
  }
  fprintf(stderr,
          "pruned: %lld trivial, %lld common subgraph, %lld common supergraph, "
          "%lld common context, %lld renamings: %lld pairs left\n",
          ps.trivial, ps.common_sub, ps.common_super, ps.common_context,
          ps.renaming, ps.out);

  vstats vs;
  if (verify_all(&rs, (unsigned)timeout, threads, &vs, &d) != BASE_OK) {
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  double rss_vf = base_peak_rss_mib();
  fprintf(stderr, "verified: %lld proven, %lld unproven\n", vs.proven,
          vs.unproven);
  list_unproven(&rs, 20);

  if (!keep)
    keep_proven(&rs);
  if (stable_order(&rs, &d) != BASE_OK) {
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  char header[1024];
  snprintf(header, sizeof header,
           "# superopt rules v1\n"
           "# generated by: superopt gen-rules --max-ops %d%s%s%s%s%s\n"
           "# %d rules; proofs checked by Z3 against the axioms in "
           "docs/verify.md\n",
           max_ops, ops ? " --ops " : "", ops ? ops : "",
           pairs == FP_PAIRS_ALL        ? " --pairs all"
           : pairs == FP_PAIRS_SMALLEST ? " --pairs smallest"
                                        : "",
           keep ? " --keep-unproven" : "", no_nf ? " --no-normal-form" : "",
           rs.n);
  if (ir_rules_write_file(&rs, header, out, &d) != BASE_OK) {
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  stage_row rows[] = {
      {"normal-form table values", fs.nf_values, fs.t_nf, -1},
      {"enumerated graphs", fs.graphs, fs.t_enum, -1},
      {"  dropped: non-normal out", fs.nf_dropped, -1, 0},
      {"fingerprint buckets", fs.buckets, fs.t_fp, -1},
      {"  members joined (smaller)", fs.span_joined, -1, 0},
      {"candidate pairs", fs.pairs, -1, 0},
      {"  rejected: 2nd seed", fs.rej_seed, -1, 0},
      {"  rejected: float check", fs.rej_float, fs.t_confirm, -1},
      {"enumerate+fingerprint", fs.pairs - fs.rej_seed - fs.rej_float, t_fp,
       rss_fp},
      {"after trivial", ps.in - ps.trivial, -1, 0},
      {"after common subgraph", ps.in - ps.trivial - ps.common_sub, -1, 0},
      {"after common supergraph",
       ps.in - ps.trivial - ps.common_sub - ps.common_super, -1, 0},
      {"after common context",
       ps.in - ps.trivial - ps.common_sub - ps.common_super - ps.common_context,
       -1, 0},
      {"after renaming (prune)", ps.out, t_pr, rss_pr},
      {"proven (verify)", vs.proven, vs.seconds, rss_vf},
      {"unproven", vs.unproven, -1, 0},
      {"written", rs.n, -1, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    if (rows[i].seconds >= 0 && rows[i].rss_mib < 0)
      rows[i].rss_mib = rss_fp;
  print_table(rows, (int)(sizeof rows / sizeof *rows));
  fprintf(stderr, "wrote %d rules to %s\n", rs.n, out);
  ir_ruleset_free(&rs);
  return CLI_OK;
}

/* ---- verify-rules -------------------------------------------------------- */

int cli_verify_rules(const cli_command *c, int argc, char **argv) {
  static const struct option opts[] = {
      {"threads", required_argument, 0, 't'},
      {"z3-timeout", required_argument, 0, 'z'},
      {"output", required_argument, 0, 'o'},
      {0, 0, 0, 0}};
  int threads = omp_get_num_procs();
  long long timeout = 10000;
  const char *out = NULL;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":o:", opts, NULL)) != -1;) {
    int rc;
    switch (ch) {
    case 't':
    case 'z':
    case 'o':
      if ((rc = prover_opt(c, ch, &threads, &timeout, &out)))
        return rc;
      break;
    case ':':
      return cli_usage_error(c, "option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error(c, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage_error(c, "expected one rules file");
  ir_ruleset rs;
  base_diag d = {0};
  if (ir_rules_read_file(argv[optind], &rs, &d) != BASE_OK)
    return cli_report(&d);
  vstats vs;
  if (verify_all(&rs, (unsigned)timeout, threads, &vs, &d) != BASE_OK) {
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  for (int i = 0; i < rs.n; i++)
    if (rs.rules[i].status != IR_RULE_PROVEN)
      fprintf(stderr, "%s:%d: rule %s not proven: %s\n", argv[optind],
              rs.rules[i].line, rs.rules[i].id,
              rs.rules[i].note ? rs.rules[i].note : "?");
  printf("%lld of %d rules proven (%.2f s)\n", vs.proven, rs.n, vs.seconds);
  int rc = vs.unproven ? CLI_BAD_INPUT : CLI_OK;
  if (out && ir_rules_write_file(&rs, NULL, out, &d) != BASE_OK)
    rc = cli_report(&d);
  ir_ruleset_free(&rs);
  return rc;
}

/* ---- compare-rules --------------------------------------------------------*/

typedef struct keyidx {
  uint64_t key;
  int idx;
} keyidx;

static int cmp_keyidx(const void *a, const void *b) {
  const keyidx *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

int cli_compare_rules(const cli_command *c, int argc, char **argv) {
  static const struct option opts[] = {{"max-ops", required_argument, 0, 'n'},
                                       {"list", no_argument, 0, 'l'},
                                       {"depth", required_argument, 0, 'D'},
                                       {0, 0, 0, 0}};
  int max_ops = 4, list = 0, depth = 4;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
    long long v;
    switch (ch) {
    case 'n':
      v = cli_parse_count(optarg);
      if (v < 1 || v > 64)
        return cli_usage_error(c, "--max-ops must be 1..64, not '%s'", optarg);
      max_ops = (int)v;
      break;
    case 'l': list = 1; break;
    case 'D':
      v = cli_parse_count(optarg);
      if (v < 0 || v > 8)
        return cli_usage_error(c, "--depth must be 0..8, not '%s'", optarg);
      depth = (int)v;
      break;
    case ':':
      return cli_usage_error(c, "option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error(c, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 2)
    return cli_usage_error(c, "expected REFERENCE.rules LIBRARY.rules");
  ir_ruleset ref, lib;
  base_diag d = {0};
  if (ir_rules_read_file(argv[optind], &ref, &d) != BASE_OK)
    return cli_report(&d);
  if (ir_rules_read_file(argv[optind + 1], &lib, &d) != BASE_OK) {
    ir_ruleset_free(&ref);
    return cli_report(&d);
  }
  int rc = CLI_OK;
  fp_nf *nf = NULL;
  keyidx *k = calloc((size_t)lib.n + 1, sizeof *k);
  pr_lib *pl = pr_lib_new(&lib);
  if (!k || !pl) {
    rc = CLI_INTERNAL;
    goto done;
  }
  for (int i = 0; i < lib.n; i++) {
    if (pr_pair_key(&lib.rules[i], &k[i].key, &d) != BASE_OK) {
      rc = cli_report(&d);
      goto done;
    }
    k[i].idx = i;
  }
  qsort(k, (size_t)lib.n, sizeof *k, cmp_keyidx);
  en_config cfg = {0};
  cfg.threads = omp_get_num_procs();
  if (fp_nf_build(&cfg, max_ops - 1 < 3 ? max_ops - 1 : 3, &nf, &d) !=
      BASE_OK) {
    rc = cli_report(&d);
    goto done;
  }
  long long small = 0, found = 0, implied = 0, non_normal = 0, derived = 0;
  for (int i = 0; i < ref.n; i++) {
    const ir_rule *r = &ref.rules[i];
    if (r->src->nnodes > max_ops || r->dst->nnodes > max_ops)
      continue;
    small++;
    keyidx q = {0, 0};
    if (pr_pair_key(r, &q.key, &d) != BASE_OK) {
      rc = cli_report(&d);
      goto done;
    }
    int nf_red = 0, der = 0;
    if (bsearch(&q, k, (size_t)lib.n, sizeof *k, cmp_keyidx)) {
      found++;
    } else if (pr_is_trivial(r) || pr_has_common_sub(r) ||
               pr_has_common_super(r)) {
      implied++; /* redundant by the prune rules: follows from a smaller one */
    } else if (depth && pr_derivable(pl, r, depth, 4096, &der, &d) != BASE_OK) {
      rc = cli_report(&d);
      goto done;
    } else if (der) {
      derived++; /* library rules rewrite one side into the other */
    } else if (fp_nf_rule_redundant(nf, r, &nf_red, &d) != BASE_OK) {
      rc = cli_report(&d);
      goto done;
    } else if (nf_red) {
      non_normal++; /* an intermediate has a smaller form: see generation.md */
    } else if (list) {
      printf("missing: %s (line %d)\n", r->id, r->line);
    }
  }
  printf("reference rules with both sides <= %d operators: %lld\n", max_ops,
         small);
  printf("  in the library up to renaming:   %lld (%.1f%%)\n", found,
         small ? 100.0 * (double)found / (double)small : 0.0);
  printf("  derived by rewriting with library rules (<= %d steps): %lld "
         "(%.1f%% with the above)\n",
         depth, derived,
         small ? 100.0 * (double)(found + derived) / (double)small : 0.0);
  printf("  redundant (trivial, common sub/supergraph): %lld\n", implied);
  printf("  redundant (non-normal intermediate, docs/generation.md): %lld\n",
         non_normal);
  printf("  missing: %lld\n", small - found - derived - implied - non_normal);
done:
  pr_lib_free(pl);
  fp_nf_free(nf);
  free(k);
  ir_ruleset_free(&ref);
  ir_ruleset_free(&lib);
  return rc;
}
