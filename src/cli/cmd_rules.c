/* cmd_rules.c: `superopt gen-rules` (gen_rules: enumerate -> fingerprint
 * -> prune -> verify -> a .rules file), `superopt verify-rules` (re-prove a
 * file) and `superopt compare-rules` (gen_compare). The pipelines live in
 * src/gen/; this file parses flags and prints.
 *
 * Progress goes to stderr (a bar with rate and ETA when it is a terminal,
 * else a line every 10 s; under mpirun rank 0's, with its rate times the
 * ranks as the estimate for all: the branches are balanced by weight);
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

#include "../gen/gen.h"
#include "cli.h"
#ifdef SUPEROPT_HAVE_MPI
#include "../gen/mpi/gen_mpi.h"
#endif

/* ---- progress ------------------------------------------------------------ */

typedef struct progress {
  const char *stage;
  double start, last;
  int tty;
  int ranks;     /* > 1: the bar shows rank 0's share of the work */
  int announced; /* not a terminal: the stage's line is printed */
} progress;

static void progress_begin(progress *p, const char *stage) {
  p->stage = stage;
  p->start = p->last = base_now();
  p->tty = isatty(2);
  p->ranks = 1;
  p->announced = 0;
}

static void progress_cb(void *u, const char *stage, double done, double total) {
  progress *p = u;
  double t = base_now();
  if (stage && strcmp(stage, p->stage)) { /* a new stage: restart the clock */
    if (p->tty)
      fprintf(stderr, "\n");
    p->stage = stage;
    p->start = t;
    p->announced = 0;
  }
  /* enumerate counts graphs of an estimated total (from branch weights) */
  int graphs = !strcmp(p->stage, "enumerate");
  if (!p->tty && !p->announced) { /* a log: one line when a stage starts */
    if (graphs)
      fprintf(stderr, "stage: %s\n", p->stage);
    else
      fprintf(stderr, "stage: %s (%.0f to do)\n", p->stage, total);
    p->announced = 1;
    p->last = t;
  }
  double el = t - p->start, frac = total > 0 ? done / total : 0;
  if (!p->tty) { /* a log: a line every 10 s */
    if (t - p->last < 10 || done >= total)
      return;
    p->last = t;
    fprintf(stderr, "  %s: %.0f of %s%.0f (%.1f%%), %.0f/s, ETA %.0f s",
            p->stage, done, graphs ? "~" : "", total, 100 * frac,
            el > 0 ? done / el : 0, frac > 0 ? el * (1 - frac) / frac : 0);
    if (p->ranks > 1)
      fprintf(stderr, " (rank 0; ~%.0f%s/s over %d ranks)",
              el > 0 ? p->ranks * done / el : 0, graphs ? " graphs" : "",
              p->ranks);
    fprintf(stderr, "\n");
    return;
  }
  if (t - p->last < 0.2 && done < total)
    return;
  p->last = t;
  char bar[31];
  int fill = (int)(frac * 30);
  for (int i = 0; i < 30; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  double eta = frac > 0.01 ? el * (1 - frac) / frac : 0;
  fprintf(stderr, "\r%-11s [%s] %5.1f%%  %.0f/s  ETA %4.0fs ", p->stage, bar,
          100 * frac, el > 0 ? done / el : 0, eta);
  if (p->ranks > 1)
    fprintf(stderr, "(rank 0 of %d; ~%.0f/s all) ", p->ranks,
            el > 0 ? p->ranks * done / el : 0);
  fflush(stderr);
}

static void progress_end(progress *p) {
  if (p->tty)
    fprintf(stderr, "\r%-78s\r", "");
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

/* What gen-rules prints at the end: stage counts, the first unproven
 * rules, and the table. */
static void print_summary(const gen_stats *st, const char *out) {
  const fp_stats *fs = &st->fp;
  const pr_stats *ps = &st->pr;
  fprintf(stderr,
          "normal-form table %lld values%s; enumerated %lld graphs (%lld "
          "dropped: non-normal output), %lld buckets, %lld candidate pairs\n",
          fs->nf_values, fs->nf_loaded ? " (from the checkpoint)" : "",
          fs->graphs, fs->nf_dropped, fs->buckets, fs->pairs);
  fprintf(stderr,
          "pruned: %lld trivial, %lld common subgraph, %lld common supergraph, "
          "%lld common context, %lld renamings: %lld pairs left\n",
          ps->trivial, ps->common_sub, ps->common_super, ps->common_context,
          ps->renaming, ps->out);
  fprintf(stderr, "verified: %lld proven, %lld unproven\n", st->proven,
          st->unproven);
  for (int i = 0; i < st->nunproven_list; i++)
    fprintf(stderr, "unproven: %s: %s\n", st->unproven_list[i].id,
            st->unproven_list[i].note);
  long long sub = ps->in - ps->trivial - ps->common_sub;
  stage_row rows[] = {
      {"normal-form table values", fs->nf_values, fs->t_nf, -1},
      {"enumerated graphs", fs->graphs, fs->t_enum, -1},
      {"  dropped: non-normal out", fs->nf_dropped, -1, 0},
      {"fingerprint buckets", fs->buckets, fs->t_fp, -1},
      {"  members joined (smaller)", fs->span_joined, -1, 0},
      {"candidate pairs", fs->pairs, -1, 0},
      {"  rejected: 2nd seed", fs->rej_seed, -1, 0},
      {"  rejected: float check", fs->rej_float, fs->t_confirm, -1},
      {"enumerate+fingerprint", fs->pairs - fs->rej_seed - fs->rej_float,
       st->t_fp, st->rss_fp},
      {"after trivial", ps->in - ps->trivial, -1, 0},
      {"after common subgraph", sub, -1, 0},
      {"after common supergraph", sub - ps->common_super, -1, 0},
      {"after common context", sub - ps->common_super - ps->common_context, -1,
       0},
      {"after renaming (prune)", ps->out, st->t_pr, st->rss_pr},
      {"proven (verify)", st->proven, st->t_vf, st->rss_vf},
      {"unproven", st->unproven, -1, 0},
      {"written", st->written, -1, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    if (rows[i].seconds >= 0 && rows[i].rss_mib < 0)
      rows[i].rss_mib = st->rss_fp;
  print_table(rows, (int)(sizeof rows / sizeof *rows));
  fprintf(stderr, "wrote %lld rules to %s\n", st->written, out);
}

/* Per-rank time and memory (rank 0 of a distributed run). */
static void print_ranks(const gen_stats *st) {
  fprintf(stderr, "\n%-5s %10s %7s %8s %8s %8s %7s %8s %8s %8s\n", "rank",
          "graphs", "nf (s)", "enum (s)", "pair (s)", "conf (s)", "prune",
          "verify", "proven", "RSS MiB");
  for (int r = 0; r < st->nranks; r++) {
    const gen_rank_stats *k = &st->ranks[r];
    fprintf(stderr,
            "%-5d %10lld %7.2f %8.2f %8.2f %8.2f %7.2f %8.2f %8lld %8.0f\n", r,
            k->graphs, k->t_nf, k->t_enum, k->t_pair, k->t_confirm, k->t_prune,
            k->t_verify, k->proven, k->rss_mib);
  }
}

/* Runs gen_rules, over MPI when mpirun started this process; threads 0:
 * the cores shared by the ranks on this node. */
static int run_gen(gen_options *o, int threads) {
  int local = 1, rank = 0, rc;
  base_diag d = {0};
#ifdef SUPEROPT_HAVE_MPI
  fp_comm comm;
  if (gen_mpi_launched()) {
    if (gen_mpi_init(&comm, &d) != BASE_OK)
      return cli_report(&d);
    o->comm = &comm;
    rank = comm.rank;
    local = o->local_ranks = gen_mpi_local_size();
  }
#else
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK")) {
    fprintf(stderr, "superopt gen-rules: started by mpirun, but this build "
                    "has no MPI (build with Open MPI installed)\n");
    return CLI_USAGE;
  }
#endif
  o->threads = threads ? threads : omp_get_num_procs() / local;
  o->threads = o->threads > 0 ? o->threads : 1;
  progress pg;
  progress_begin(&pg, "enumerate");
  pg.ranks = o->comm ? o->comm->size : 1;
  o->progress = rank == 0 ? progress_cb : NULL;
  o->u = &pg;
  gen_stats st;
  base_status s = gen_rules(o, &st, &d);
  if (rank == 0)
    progress_end(&pg);
  if (s)
    rc = rank == 0
             ? cli_report(&d)
             : (s == BASE_ERR_NOMEM || s == BASE_ERR_INTERNAL ? CLI_INTERNAL
                                                              : CLI_BAD_INPUT);
  else
    rc = CLI_OK;
  if (!s && rank == 0) {
    print_summary(&st, o->output);
    if (st.nranks > 1)
      print_ranks(&st);
  }
  gen_stats_free(&st);
#ifdef SUPEROPT_HAVE_MPI
  if (o->comm)
    gen_mpi_finish();
#endif
  return rc;
}

typedef struct gen_args {
  const char *ops, *out, *ckpt;
  int max_ops, threads, z3_timeout, keep, no_nf, split, node_mem, max_out;
  int mine, depth;
  ox_options ox; /* --mine's .onnx models' import options */
  int pairs;     /* index into "spanning|smallest|all" */
  int opset;     /* index into
                    "default|extended|extended2|...|extended6" */
} gen_args;

#define T gen_args
static const cli_opt gen_table[] = {
    CLI_INT(T, "max-ops", max_ops, "N", 1, GEN_MAX_OPS,
            "largest graph, in operators (1..4; 5 with --ops,\n"
            "or over MPI where the ranks' memory holds it;\n"
            "default 3)"),
    CLI_STR(T, "ops", 0, ops, "LIST",
            "comma-separated operators to use (default: all of\n"
            "docs/generation.md)"),
    CLI_CHOICE(T, "opset", opset, "SET",
               "default|extended|extended2|extended3|extended4|extended5|"
               "extended6",
               "default: the operators of docs/generation.md;\n"
               "extended: also conv2d with a bias input, valid\n"
               "padding, batchnorm and its folds, matmul with a\n"
               "bias (2-D or rank 3) (docs/generation.md);\n"
               "extended2: also sigmoid, tanh, gelu (fused too)\n"
               "and matmul of rank 3 without a bias;\n"
               "extended3: also conv2d and matmul with a residual\n"
               "input (r, then act none or relu);\n"
               "extended4: also softmax and attention (2-D, with\n"
               "and without a scale);\n"
               "extended5: also a bias vector added by its own\n"
               "ewadd (broadcast along the last axis);\n"
               "extended6: also the transpose of a rank-3 value's\n"
               "two leading axes (perm [1,0,2])"),
    CLI_INT(T, "max-outputs", max_out, "K", 1, 3,
            "most outputs of a graph (default 2; 3 with\n"
            "--opset extended adds the three-part split, split3)"),
    CLI_STR(T, "output", 'o', out, "F",
            "the rule file (default generated.rules)"),
    CLI_INT(T, "threads", threads, "T", 1, 1024,
            "threads (default: all cores; under mpirun, per\n"
            "rank: the node's cores shared among its ranks)"),
    CLI_INT(T, "z3-timeout", z3_timeout, "MS", 1, 3600000,
            "per proof (default 10000)"),
    CLI_FLAG(T, "keep-unproven", keep, 1,
             "also write unproven rules, marked unproven"),
    CLI_CHOICE(T, "pairs", pairs, "P", "spanning|smallest|all",
               "spanning (default): only pairs that smaller rules do\n"
               "not imply, a minimum spanning forest of each bucket;\n"
               "smallest: each graph of a bucket with its smallest\n"
               "member; all: every pair of a bucket"),
    CLI_FLAG(T, "no-normal-form", no_nf, 1,
             "also enumerate graphs with a non-normal intermediate\n"
             "value (docs/generation.md; far slower)"),
    CLI_INT(T, "split", split, "K", 1, 256,
            "deal each first-level enumeration branch as K\n"
            "branches (smaller units for ranks and checkpoints;\n"
            "same file; default 16 at --max-ops 5, else 1)"),
    CLI_INT(T, "node-memory", node_mem, "GIB", 1, 1 << 20,
            "memory of each node for --max-ops 5's check\n"
            "(default: this node's physical memory; virtual\n"
            "machines may report less than they can grow to)"),
    CLI_STR(T, "checkpoint", 0, ckpt, "DIR",
            "save each finished enumeration branch in DIR; a\n"
            "rerun with the same arguments (any rank count)\n"
            "loads them instead and writes the same file"),
    CLI_FLAG(T, "mine", mine, 1,
             "mine the graphs or ONNX models named after the\n"
             "options instead of enumerating: rules whose one\n"
             "side is a node of a fused operator and whose\n"
             "other a subgraph they contain (docs/generation.md,\n"
             "\"Mined rules\")"),
    CLI_INT(T, "depth", depth, "N", 1, GEN_MINE_MAX_DEPTH,
            "with --mine: how many operators above a value its\n"
            "operands may be (default 10)"),
    CLI_IMPORT_OPTS(T, ox),
    CLI_END};
#undef T

/* gen-rules --mine G...: loads every graph first (a bad one names
 * itself, nothing written), then gen_mine. */
static int run_mine(const cli_command *c, const gen_args *a, int argc,
                    char **argv) {
  if (optind == argc)
    return cli_usage_error(c, "--mine needs one or more graphs or models");
  int n = argc - optind, rc = CLI_OK;
  ir_graph **g = base_calloc((size_t)n, sizeof *g);
  if (!g) {
    base_diag d = {0};
    return cli_report(
        (base_diag_set(&d, BASE_ERR_NOMEM, 0, 0, "out of memory"), &d));
  }
  for (int i = 0; i < n && rc == CLI_OK; i++)
    if (!(g[i] =
              cli_load_ex(argv[optind + i],
                          cli_is_onnx(argv[optind + i]) ? &a->ox : NULL, &rc)))
      rc = rc ? rc : CLI_BAD_INPUT;
  gen_mine_options o = {.depth = a->depth ? a->depth : GEN_MINE_DEPTH,
                        .threads =
                            a->threads ? a->threads : omp_get_num_procs(),
                        .z3_timeout_ms = (unsigned)a->z3_timeout,
                        .output = a->out};
  progress pg;
  gen_mine_stats st;
  base_diag d = {0};
  if (rc == CLI_OK) {
    progress_begin(&pg, "mine");
    o.progress = progress_cb, o.u = &pg;
    base_status s = gen_mine(&o, (const ir_graph *const *)g, n, &st, &d);
    progress_end(&pg);
    rc = s ? cli_report(&d) : CLI_OK;
    if (!s)
      fprintf(stderr,
              "mined %lld values: %lld candidate pairs, %lld distinct pairs "
              "agree, %lld proven\nwrote %lld rules to %s\n",
              st.targets, st.candidates, st.agreed, st.proven, st.written,
              a->out);
  }
  for (int i = 0; i < n; i++)
    ir_graph_free(g[i]);
  free(g);
  return rc;
}

static int gen_rules_cmd(const cli_command *c, int argc, char **argv) {
  static const fp_pairs pairs[] = {FP_PAIRS_SPANNING, FP_PAIRS_SMALLEST,
                                   FP_PAIRS_ALL};
  gen_args a = {.out = "generated.rules", .max_ops = 3, .z3_timeout = 10000};
  int rc = cli_parse_opts(c, argc, argv, &a);
  if (rc)
    return rc;
  if (a.mine)
    return run_mine(c, &a, argc, argv);
  if (a.depth)
    return cli_usage_error(c, "--depth is an option of --mine");
  if (optind != argc)
    return cli_usage_error(c, "unexpected argument '%s'", argv[optind]);
  gen_options o = {0};
  o.max_ops = a.max_ops;
  o.ops = a.ops;
  o.extended = a.opset; /* 0..6 */
  o.max_outputs = a.max_out;
  o.pairs = pairs[a.pairs];
  o.z3_timeout_ms = (unsigned)a.z3_timeout;
  o.keep_unproven = a.keep;
  o.no_normal_form = a.no_nf;
  o.output = a.out;
  o.checkpoint = a.ckpt;
  o.split = a.split;
  o.mem_mib = (long long)a.node_mem * 1024;
  /* tests: stop after saving this many branches (resumed by a rerun) */
  const char *stop = getenv("SUPEROPT_CHECKPOINT_STOP");
  o.checkpoint_stop = stop && a.ckpt ? atoi(stop) : 0;
#ifdef SUPEROPT_HAVE_MPI
  if (gen_mpi_launched()) { /* for the memory check, before MPI starts */
    o.ranks = gen_mpi_world_size();
    o.local_ranks = gen_mpi_local_size();
  }
#endif
  base_diag d = {0};
  if (gen_options_check(&o, &d) != BASE_OK)
    return cli_usage_error(c, "%s", d.msg);
  return run_gen(&o, a.threads);
}

const cli_command cli_cmd_gen_rules = {
    "gen-rules",
    "discover and prove graph substitutions (a .rules file)",
    "gen-rules [--max-ops N] [--ops LIST] [-o OUT.rules] [options]\n"
    "       superopt gen-rules --mine [--depth N] [-o OUT.rules] GRAPH...",
    "Enumerates every graph of 1..N operators over the generation operator\n"
    "set and TASO's input pool, fingerprints them, pairs equal ones, prunes\n"
    "redundant pairs and proves the rest with Z3; writes the proven rules\n"
    "atomically, in a stable order (docs/rules-format.md). Progress and a\n"
    "summary table (counts, time, peak memory per stage) go to stderr.\n",
    gen_table,
    "Under `mpirun -np N` (MPI builds) the work is spread over N processes\n"
    "and the same file is written by rank 0; a per-rank table of time and\n"
    "memory follows the summary (docs/generation.md).\n",
    gen_rules_cmd};

/* ---- verify-rules -------------------------------------------------------- */

typedef struct verify_args {
  const char *out;
  int threads, z3_timeout;
} verify_args;

#define T verify_args
static const cli_opt verify_table[] = {
    CLI_STR(T, "output", 'o', out, "OUT",
            "write the rules with their new status and the\n"
            "axioms each proof used"),
    CLI_INT(T, "threads", threads, "T", 1, 1024,
            "threads (default: all cores)"),
    CLI_INT(T, "z3-timeout", z3_timeout, "MS", 1, 3600000,
            "per proof (default 10000)"),
    CLI_END};
#undef T

static int verify_rules(const cli_command *c, int argc, char **argv) {
  verify_args a = {NULL, omp_get_num_procs(), 10000};
  int rc = cli_parse_opts(c, argc, argv, &a);
  if (rc)
    return rc;
  if (optind != argc - 1)
    return cli_usage_error(c, "expected one rules file");
  const char *out = a.out;
  int threads = a.threads;
  long long timeout = a.z3_timeout;
  ir_ruleset rs;
  base_diag d = {0};
  if (ir_rules_read_file(argv[optind], &rs, &d) != BASE_OK)
    return cli_report(&d);
  long long proven, unproven;
  progress pg;
  progress_begin(&pg, "verify");
  double t0 = base_now();
  base_status s = gen_verify_all(&rs, (unsigned)timeout, threads, progress_cb,
                                 &pg, &proven, &unproven, &d);
  double seconds = base_now() - t0;
  progress_end(&pg);
  if (s != BASE_OK) {
    ir_ruleset_free(&rs);
    return cli_report(&d);
  }
  for (int i = 0; i < rs.n; i++)
    if (rs.rules[i].status != IR_RULE_PROVEN)
      fprintf(stderr, "%s:%d: rule %s not proven: %s\n", argv[optind],
              rs.rules[i].line, rs.rules[i].id,
              rs.rules[i].note ? rs.rules[i].note : "?");
  printf("%lld of %d rules proven (%.2f s)\n", proven, rs.n, seconds);
  rc = unproven ? CLI_BAD_INPUT : CLI_OK;
  if (out && ir_rules_write_file(&rs, NULL, out, &d) != BASE_OK)
    rc = cli_report(&d);
  ir_ruleset_free(&rs);
  return rc;
}

const cli_command cli_cmd_verify_rules = {
    "verify-rules",
    "re-prove every rule of a .rules file with Z3",
    "verify-rules RULES [-o OUT.rules] [options]",
    "Proves each rule of RULES from the operator axioms (docs/verify.md);\n"
    "lists the rules not proven with the reason. Exit 0 when all are\n"
    "proven, 2 otherwise.\n",
    verify_table,
    NULL,
    verify_rules};

/* ---- compare-rules --------------------------------------------------------*/

static void print_missing(void *u, const ir_rule *r) {
  (void)u;
  printf("missing: %s (line %d)\n", r->id, r->line);
}

typedef struct compare_args {
  int max_ops, depth, list;
} compare_args;

#define T compare_args
static const cli_opt compare_table[] = {
    CLI_INT(T, "max-ops", max_ops, "N", 1, 64,
            "reference rules with both sides <= N operators\n"
            "(default 4)"),
    CLI_INT(T, "depth", depth, "D", 0, 8,
            "rewrites a derivation may take (default 4; 0: do\n"
            "not try)"),
    CLI_FLAG(T, "list", list, 1, "name the missing rules"), CLI_END};
#undef T

static int compare_rules(const cli_command *c, int argc, char **argv) {
  compare_args a = {.max_ops = 4, .depth = 4};
  int rc = cli_parse_opts(c, argc, argv, &a);
  if (rc)
    return rc;
  if (optind != argc - 2)
    return cli_usage_error(c, "expected REFERENCE.rules LIBRARY.rules");
  int max_ops = a.max_ops, depth = a.depth, list = a.list;
  ir_ruleset ref, lib;
  base_diag d = {0};
  if (ir_rules_read_file(argv[optind], &ref, &d) != BASE_OK)
    return cli_report(&d);
  if (ir_rules_read_file(argv[optind + 1], &lib, &d) != BASE_OK) {
    ir_ruleset_free(&ref);
    return cli_report(&d);
  }
  gen_compare_options o = {max_ops, depth, 0, list ? print_missing : NULL,
                           NULL};
  gen_compare_stats st;
  if (gen_compare(&ref, &lib, &o, &st, &d) != BASE_OK) {
    rc = cli_report(&d);
  } else {
    long long small = st.small;
    printf("reference rules with both sides <= %d operators: %lld\n", max_ops,
           small);
    printf("  in the library up to renaming:   %lld (%.1f%%)\n", st.found,
           small ? 100.0 * (double)st.found / (double)small : 0.0);
    printf("  derived by rewriting with library rules (<= %d steps): %lld "
           "(%.1f%% with the above)\n",
           depth, st.derived,
           small ? 100.0 * (double)(st.found + st.derived) / (double)small
                 : 0.0);
    printf("  redundant (trivial, common sub/supergraph): %lld\n", st.implied);
    printf("  redundant (non-normal intermediate, docs/generation.md): "
           "%lld\n",
           st.non_normal);
    printf("  missing: %lld\n", st.missing);
  }
  ir_ruleset_free(&ref);
  ir_ruleset_free(&lib);
  return rc;
}

const cli_command cli_cmd_compare_rules = {
    "compare-rules",
    "how much of a reference rule set a library covers",
    "compare-rules REFERENCE.rules LIBRARY.rules [options]",
    "Counts the reference rules with both sides <= N operators (default 4)\n"
    "that LIBRARY contains up to renaming of inputs, swapping sides and\n"
    "commutative argument order, those LIBRARY's proven rules derive by at\n"
    "most D rewrites (default 4; 0: do not try), and those redundant by the\n"
    "prune rules.\n",
    compare_table,
    NULL,
    compare_rules};
