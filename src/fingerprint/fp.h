/* fp.h: fingerprints of enumerated graphs and candidate rule pairs
 * (stage 2 of gen-rules).
 *
 * Each graph is evaluated on seeded random inputs in arithmetic modulo the
 * prime FP_P = 2^31-1, where every element-wise non-linearity (relu, and
 * conv2d's act=relu) is a random function of its argument: graphs agree
 * exactly when a law holds for every element-wise function. The hash of a
 * graph's outputs (order-independent), minimised over renamings of the
 * copies of each input class, is its fingerprint. Graphs with equal
 * fingerprints are candidate equivalents; every pair is confirmed with a
 * second seed and a float32 run on the reference executor before it becomes
 * a candidate rule (IR_RULE_UNVERIFIED). Details: docs/generation.md.
 */
#ifndef SUPEROPT_FP_H
#define SUPEROPT_FP_H

#include <stdint.h>

#include "../enumerate/enum.h"
#include "../ir/ir.h"

#define FP_P 2147483647u /* 2^31 - 1 */

/* ---- modular kernels ------------------------------------------------------
 */

/* The random function standing for element-wise non-linearity `act`
 * (IR_ACT_RELU, ...) under key: a residue of the residue x. */
uint32_t fp_act(int act, uint64_t key, uint32_t x);

/* Evaluates one operator on residues: in[i] has shape ins[i] (row-major),
 * out[i] receives outs[i] (shapes and normalised attributes as ir_infer
 * leaves them). key keys the random functions. Supported: the generation
 * operators (matmul 2-D, conv2d with groups and zero padding, ewadd, ewmul
 * of equal shapes, smul, relu, concat, split, transpose, avgpool with
 * count_include_pad=1 (window sum times the inverse of the count), maxpool
 * (largest residue, padding excluded), enlarge, the four constants).
 * Returns BASE_OK or BASE_ERR_PARAM for another operator. */
base_status fp_kernel(ir_opcode op, const ir_attrs *a,
                      const ir_shape *const *ins, const uint32_t *const *in,
                      int nin, const ir_shape *outs, uint32_t *const *out,
                      uint64_t key);
/* The extended set's batchnorm gops (en_gop_is_bn) on residues: with f a
 * keyed random function of (scale, var) per channel (the stand-in for
 * scale / sqrt(var + eps), so exactly the laws that hold for every such
 * f hold), batchnorm(x, n) = (x - mean) f + bias per channel (axis 1),
 * bnfold_w(w, n) = w f per output channel (axis 0), bnfold_b(n) = bias -
 * mean f, bnfold_c(c, n) = (c - mean) f + bias. in[] are the gop's
 * arguments (n: its rows scale, bias, mean, var); out the output's
 * shape. */
base_status fp_bn_kernel(int gop, const ir_shape *const *ins,
                         const uint32_t *const *in, const ir_shape *out,
                         uint32_t *y, uint64_t key);

/* Residues of seeded random inputs: fp_inputs(seed, v) for pool input v
 * (EN_MAX_NUMEL residues at most). The same values for every graph. */
void fp_random(uint32_t *dst, int64_t n, uint64_t seed, uint64_t stream);

/* ---- candidates -----------------------------------------------------------
 */

#define FP_FILTER_KINDS 8

/* The value hashes of a pair's tensors, computed when asked for. */
typedef struct fp_vals fp_vals;
/* The value hash of every tensor of the pair's src and dst into *vs and
 * *vd (valid until the filter returns), as fp_value_hashes(g, 1, ...)
 * gives them, computed by fp_candidates' cached evaluator. */
base_status fp_vals_get(fp_vals *v, const uint64_t **vs, const uint64_t **vd);

/* A filter on candidate pairs, applied after the second seed and before the
 * float check (the costly part), so redundant pairs are never kept: returns
 * 0 to keep r, or a kind 1..FP_FILTER_KINDS-1 to drop it (counted in
 * fp_stats.filtered[kind]), or -1 when out of memory (fp_candidates then
 * fails with BASE_ERR_NOMEM). v gives r's value hashes (fp_vals_get).
 * Called from several threads at once. */
typedef int (*fp_filter)(void *u, const ir_rule *r, fp_vals *v);

typedef struct fp_stats {
  long long graphs;      /* graphs enumerated (including zero-operator ones) */
  long long graphs_here; /* ... by this rank (fp_candidates_comm) */
  long long buckets;     /* fingerprint buckets holding >= 2 graphs */
  long long dups;      /* graphs identical to another up to renaming, dropped */
  long long pairs;     /* candidate pairs before confirmation */
  long long rej_seed;  /* rejected by the second seed */
  long long rej_float; /* rejected by the float32 check */
  long long rej_inputs; /* dropped: dst reads an input src does not */
  long long rules;      /* pairs returned */
  long long nf_values;  /* normal-form table entries (0: not used) */
  long long nf_dropped; /* multi-output graphs with a non-normal output */
  long long filtered[FP_FILTER_KINDS]; /* dropped by the filter, by kind */
  long long span_tests;  /* FP_PAIRS_SPANNING: member pairs filtered */
  long long span_joined; /* ... and joined by a pair the filter drops */
  double t_nf;           /* seconds: building the normal-form table */
  int nf_loaded;         /* it came from the checkpoint (nf.tab) */
  double t_enum;         /* seconds: enumeration and fingerprinting */
  double t_fp;           /* seconds: bucketing and pairing */
  double t_confirm; /* seconds: second seed, float check, building graphs */
  long rss_enum_kb, rss_fp_kb, peak_rss_kb; /* peak RSS after each stage */
} fp_stats;

/* Which pairs of a bucket's graphs (after dropping renamings of an earlier
 * member) become candidates. Members are ordered by size. */
typedef enum fp_pairs {
  FP_PAIRS_ALL,      /* every pair */
  FP_PAIRS_SMALLEST, /* pairs among the smallest members, and every larger
                       member with the first smallest one: each graph still
                       reaches every other through at most two rules */
  FP_PAIRS_SPANNING  /* members joined by a pair the filter drops are
                       connected; only pairs joining what remains are
                       candidates, smallest pairs first (a minimum spanning
                       forest). Without a filter: FP_PAIRS_SMALLEST */
} fp_pairs;

/* Enumerates graphs per c, fingerprints them and appends the confirmed
 * candidate pairs that filter f (may be NULL) keeps to out (ids
 * "c000001"... in a deterministic order: by src size, src, dst;
 * byte-identical for any thread count), filling st. */
base_status fp_candidates(const en_config *c, fp_pairs mode, fp_filter f,
                          void *fu, ir_ruleset *out, fp_stats *st,
                          base_diag *d);

/* ---- several processes ---------------------------------------------------
 *
 * Collectives over the processes (ranks) of a distributed run; gen_mpi.c
 * implements them on MPI. Every rank calls them in the same order. Byte
 * counts are per peer; a block over 2 GiB is an error (use more ranks).
 */
typedef struct fp_comm {
  int rank, size;
  /* Sends sendn[j] bytes of send (blocks in rank order) to each rank j;
   * *recv (malloc'd, the caller frees) receives recvn[j] bytes from each
   * rank j, in rank order. */
  base_status (*alltoallv)(void *u, const void *send, const size_t *sendn,
                           void **recv, size_t *recvn, base_diag *d);
  /* *recv (malloc'd) receives every rank's n bytes, in rank order,
   * recvn[j] from rank j. */
  base_status (*allgatherv)(void *u, const void *send, size_t n, void **recv,
                            size_t *recvn, base_diag *d);
  void *u;
} fp_comm;

/* A collective: BASE_OK when st is BASE_OK on every rank; otherwise the
 * status of the lowest failing rank, with d (on every rank) holding
 * "rank R: " and that rank's message. */
base_status fp_comm_agree(const fp_comm *c, base_status st, base_diag *d);

/* fp_candidates over the ranks of comm (NULL or size 1: this process
 * alone): each rank enumerates its share of the branches (balanced by their
 * graph counts one operator smaller), records move to the rank of their
 * fingerprint's shard, each rank pairs and confirms its buckets, and every
 * rank receives all confirmed pairs and builds the same out as
 * fp_candidates would (byte-identical for any rank and thread count). st's
 * counts are summed over ranks; its times and memory are this rank's. */
base_status fp_candidates_comm(const en_config *c, fp_pairs mode, fp_filter f,
                               void *fu, const fp_comm *comm, ir_ruleset *out,
                               fp_stats *st, base_diag *d);

/* ---- normal forms ---------------------------------------------------------
 *
 * A value (a node output) is in normal form when no sub-DAG with fewer
 * operators over the pool computes it (a pool input has 0). The table maps a
 * value's hash (seed-1 residues; every injective renaming of its input copies
 * is stored) to the fewest operators found. fp_candidates uses it to stop
 * extending graphs at a non-normal value and to drop multi-output graphs
 * with a non-normal output (docs/generation.md).
 */
typedef struct fp_nf fp_nf;

/* Builds the table of every value of 0..max_size operators enumerable under
 * c (c->max_ops is ignored), size by size. */
base_status fp_nf_build(const en_config *c, int max_size, fp_nf **out,
                        base_diag *d);
/* fp_nf_build over the ranks of comm (NULL or size 1: fp_nf_build): each
 * rank enumerates the branches of mask (its share) level by level and the
 * ranks exchange the values found, so every rank gets the same table. A
 * collective. */
base_status fp_nf_build_comm(const en_config *c, int max_size,
                             const fp_comm *comm, const uint8_t *mask,
                             fp_nf **out, base_diag *d);
void fp_nf_free(fp_nf *t);
long long fp_nf_count(const fp_nf *t); /* distinct value hashes */
/* Fewest operators computing the value of hash h, or -1 if not in t. */
int fp_nf_smallest(const fp_nf *t, uint64_t h);
/* Whether either side of r (an ir_graph pair over pool-shaped inputs) has
 * an intermediate value (read by a node, not an output) that t computes
 * with fewer operators than its sub-DAG in r: the rule follows from smaller
 * ones (*redundant = 1). Sides that cannot be evaluated (inputs that are
 * not pool shapes, other operators) count as normal. */
base_status fp_nf_rule_redundant(const fp_nf *t, const ir_rule *r,
                                 int *redundant, base_diag *d);

/* ---- single graphs (tests, tools) -----------------------------------------
 */

/* Value hash of every tensor of g (h[g->ntensors]) evaluated in modular
 * arithmetic under seed: inputs and weights get residues seeded by their
 * name, so graphs over the same names agree exactly where their values are
 * equal. 0 for a tensor that cannot be evaluated (an operator fp_kernel
 * lacks, more than EN_MAX_NUMEL elements, or an input of such). */
base_status fp_value_hashes(const ir_graph *g, uint64_t seed, uint64_t *h);

/* Fingerprint of compact graph g under seed (renaming-invariant), with the
 * renaming that reaches it in perm (input id -> input id; may be NULL). */
base_status fp_graph(const en_graph *g, uint64_t seed, uint64_t *fp,
                     uint8_t perm[EN_NINPUT_IDS]);

#endif
