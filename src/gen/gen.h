/* gen.h: rule generation and rule comparison as library calls.
 *
 * gen_rules runs the whole pipeline of `superopt gen-rules`:
 *   enumerate -> fingerprint -> prune -> verify -> write
 * (src/enumerate, src/fingerprint, src/prune, src/verify) and writes the
 * .rules file atomically; gen_verify_all proves every rule of a set on
 * several Z3 contexts (`verify-rules`); gen_compare measures how much of a
 * reference rule set a library covers (`compare-rules`). The CLI only parses
 * flags and prints what these return. Details: docs/generation.md.
 */
#ifndef SUPEROPT_GEN_H
#define SUPEROPT_GEN_H

#include <signal.h>

#include "../fingerprint/fp.h"
#include "../ir/ir.h"
#include "../prune/prune.h"

#define GEN_MAX_OPS 5        /* beyond this the enumeration does not fit */
#define GEN_MAX_OPS_ALL 4    /* ... and this with every operator */
#define GEN_SPLIT_DEEP 16    /* branches per first node at --max-ops 5 */
#define GEN_UNPROVEN_LIST 20 /* unproven rules named in gen_stats */
/* --max-ops 5 over every operator: graphs (extrapolated by the branch
 * weights from the branches an 8-rank run finished, docs/notes/results.md),
 * bytes per graph's record, and an allowance per process for the
 * normal-form table (<= 4-operator values) and the rest. One process holds its
 * records twice while merging or exchanging them. */
#define GEN_GRAPHS_5_ALL 770e6
#define GEN_RECORD_BYTES 40
#define GEN_TABLE_MIB_5 1024

/* Progress of a stage ("enumerate", "pair", "confirm", "verify"):
 * done of total units. Called from one thread at a time. */
typedef void (*gen_progress_fn)(void *u, const char *stage, double done,
                                double total);

typedef struct gen_options {
  int max_ops;              /* 1..GEN_MAX_OPS (> GEN_MAX_OPS_ALL needs ops) */
  const char *ops;          /* comma-separated operator names; NULL: all */
  int extended;             /* 1: the extended operator set (--opset
                               extended, docs/generation.md); 2: and its
                               second tier (--opset extended2); 3: and
                               its third (--opset extended3); 4: and its
                               fourth (--opset extended4); 5: and its
                               fifth (--opset extended5); 6: and its
                               seventh (--opset extended6) */
  int max_outputs;          /* most outputs of a graph (1..3); 0: 2. 3
                               (extended set) enables split3 */
  fp_pairs pairs;           /* which pairs of a fingerprint bucket (fp.h) */
  int threads;              /* threads per process; 0: all cores */
  unsigned z3_timeout_ms;   /* per Z3 query; 0: 10000 */
  int keep_unproven;        /* 1: write unproven rules too (marked) */
  int no_normal_form;       /* 1: no normal-form pruning */
  const char *output;       /* the .rules file, written atomically */
  gen_progress_fn progress; /* may be NULL */
  void *u;                  /* passed to progress */
  /* May be NULL. Non-zero: stop at the next stage boundary, with
   * BASE_ERR_INTERRUPTED and nothing written. */
  const volatile sig_atomic_t *interrupt;
  /* NULL: this process alone. Else the ranks of a distributed run (MPI:
   * gen_mpi.h); every rank calls gen_rules with the same options, rank 0
   * alone calls progress and writes the file. */
  const fp_comm *comm;
  /* May be NULL. A directory where every finished enumeration branch is
   * saved (atomically); a rerun with the same arguments loads the saved
   * branches instead of enumerating them again and writes the same file
   * (any rank count). docs/generation.md, "Checkpoints". */
  const char *checkpoint;
  int checkpoint_stop; /* tests: > 0: stop after saving this many branches */
  /* Each first-level enumeration branch dealt as this many (en_config's
   * split); 0: GEN_SPLIT_DEEP at max_ops >= 5, else 1. Same file. */
  int split;
  /* The memory check of --max-ops 5 over every operator (GEN_GRAPHS_5_ALL
   * records spread over the processes): ranks, the processes in all (0:
   * comm's size, or 1), local_ranks, those on this node (0: 1), sharing
   * mem_mib MiB (0: this node's physical memory). */
  int ranks, local_ranks;
  long long mem_mib;
} gen_options;

/* One rule that Z3 did not prove (for the CLI to list). */
typedef struct gen_unproven {
  char id[16];
  char note[240];
} gen_unproven;

/* Time and memory of one process (rank) of a run. */
typedef struct gen_rank_stats {
  double t_nf, t_enum, t_pair, t_confirm; /* fp_stats' stage times */
  double t_prune, t_verify;               /* seconds */
  long long graphs;                       /* graphs (records) it enumerated */
  long long proven; /* rules it proved (of those it was given) */
  double rss_mib;   /* its peak RSS */
} gen_rank_stats;

typedef struct gen_stats {
  fp_stats fp; /* enumerate, fingerprint, confirm (all ranks) */
  pr_stats pr; /* prune, with the filter's drops counted in */
  long long proven, unproven, written;
  double t_fp, t_pr, t_vf;       /* seconds per stage (wall) */
  double rss_fp, rss_pr, rss_vf; /* peak RSS MiB after each (this rank) */
  gen_unproven unproven_list[GEN_UNPROVEN_LIST];
  int nunproven_list;
  int nranks;            /* processes: 1 without comm */
  gen_rank_stats *ranks; /* [nranks] (malloc'd; gen_stats_free) */
} gen_stats;

/* BASE_OK, or BASE_ERR_PARAM with a message when o is not valid (max_ops
 * out of range, an unknown operator, no output; --max-ops 5 without ops in
 * one process, or over processes whose share of GEN_GRAPHS_5_ALL records
 * would not fit in the node's memory). */
base_status gen_options_check(const gen_options *o, base_diag *d);

/* Generates rules per o and writes them to o->output (once, atomically, by
 * rank 0; nothing is written on error, and an error on any rank is an
 * error on every rank, naming it). Fills st (zeroed first; counts over all
 * ranks, times and memory per rank in st->ranks). The output is
 * byte-identical for any thread and rank count. BASE_ERR_PARAM for bad
 * options (unknown operator, max_ops out of range). */
base_status gen_rules(const gen_options *o, gen_stats *st, base_diag *d);
void gen_stats_free(gen_stats *st);

/* Proves every rule of rs on `threads` Z3 contexts (0: all cores) with
 * timeout_ms per query; records status, axiom core and note in each rule
 * and counts proven and unproven ones. */
base_status gen_verify_all(ir_ruleset *rs, unsigned timeout_ms, int threads,
                           gen_progress_fn progress, void *u, long long *proven,
                           long long *unproven, base_diag *d);

/* ---- mined rules (`gen-rules --mine`, mine.c) ---------------------------- */

#define GEN_MINE_DEPTH 10 /* default: operators above a target searched */
#define GEN_MINE_MAX_DEPTH 24

typedef struct gen_mine_options {
  int depth;                /* 1..GEN_MINE_MAX_DEPTH: how far above a
                               target its operands may be */
  int threads;              /* Z3 contexts; 0: all cores */
  unsigned z3_timeout_ms;   /* per proof */
  const char *output;       /* the .rules file, written atomically */
  gen_progress_fn progress; /* may be NULL; stages "mine", "verify" */
  void *u;
  const volatile sig_atomic_t *interrupt; /* may be NULL */
} gen_mine_options;

typedef struct gen_mine_stats {
  long long targets;    /* values whose producers were searched */
  long long candidates; /* pairs built (a cut and a node that type-check) */
  long long agreed;     /* distinct pairs whose sides agree on random data */
  long long proven;     /* of those, proven by Z3 */
  long long written;
} gen_mine_stats;

/* Mines the graphs g[0..ng-1] for rules whose one side is a node of a
 * fused operator (a unary element-wise operator, layernorm, attention) and
 * whose other is a subgraph the graphs contain, proves them and writes the
 * proven ones (named by their hash: m4f0c...) to o->output atomically;
 * nothing is written on
 * error. Details: docs/generation.md, "Mined rules". */
base_status gen_mine(const gen_mine_options *o, const ir_graph *const *g,
                     int ng, gen_mine_stats *st, base_diag *d);

/* ---- comparison (`compare-rules`) --------------------------------------- */

typedef struct gen_compare_options {
  int max_ops; /* compare reference rules with both sides <= max_ops ops */
  int depth;   /* derivation depth with library rules (0: none) */
  int threads; /* 0: all cores */
  /* May be NULL: called for each missing reference rule. */
  void (*missing)(void *u, const ir_rule *r);
  void *u;
} gen_compare_options;

typedef struct gen_compare_stats {
  long long small;      /* reference rules with both sides <= max_ops */
  long long found;      /* in the library up to renaming */
  long long derived;    /* derived by rewriting with library rules */
  long long implied;    /* redundant: trivial, common sub/supergraph */
  long long non_normal; /* redundant: a non-normal intermediate */
  long long missing;    /* the rest */
} gen_compare_stats;

/* Classifies each rule of ref with both sides <= o->max_ops operators
 * against the library lib. */
base_status gen_compare(const ir_ruleset *ref, const ir_ruleset *lib,
                        const gen_compare_options *o, gen_compare_stats *st,
                        base_diag *d);

#endif
