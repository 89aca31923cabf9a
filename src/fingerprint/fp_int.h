/* fp_int.h: internals of the fingerprint module shared by its files:
 * seeded input residues, the evaluator of compact graphs, output hashes and
 * the renamings of input copies.
 */
#ifndef SUPEROPT_FP_INT_H
#define SUPEROPT_FP_INT_H

#include <stdio.h>

#include "fp.h"

#define FP_SEED1 1 /* the seed of fingerprints and the normal-form table */

/* Residues of every pool input under one seed; key keys fp_act. */
typedef struct fp_inputs {
  uint64_t seed, key;
  uint32_t *v[EN_NINPUT_IDS]; /* NULL for ids no class has */
} fp_inputs;

fp_inputs *fp_inputs_new(uint64_t seed);
/* Inputs seeded by name, as fp_value_hashes seeds a graph's inputs (and
 * its activation key), so an evaluator over them computes the values
 * fp_value_hashes does for the ir_graph en_graph_build makes. */
fp_inputs *fp_inputs_named(uint64_t seed);
void fp_inputs_free(fp_inputs *in);

typedef struct fp_leaf fp_leaf;
typedef struct fp_cone fp_cone;

/* Scratch holding the values of one graph's nodes (reused across graphs:
 * node i's values stay valid while the graph's prefix does not change).
 * cur[i][s] is node i's value s: its own buffer val[i][s], a value of the
 * leaf cache (a node reading pool inputs alone is computed once per
 * evaluator), or, during a renaming, the identity evaluation's value of a
 * node the renaming does not change; costly nodes' values are also kept
 * by cone (eval.c). */
typedef struct fp_eval {
  const fp_inputs *in;
  uint32_t *val[EN_MAX_OPS][EN_NSLOTS]; /* EN_MAX_NUMEL residues each */
  const uint32_t *cur[EN_MAX_OPS][EN_NSLOTS];
  ir_shape shapes[EN_MAX_OPS][EN_NSLOTS];
  fp_leaf *leaf; /* FP_LEAF_SLOTS entries, open addressing */
  int nleaf;
  fp_cone *cone; /* FP_CONE_SLOTS entries, direct-mapped */
} fp_eval;

fp_eval *fp_eval_new(const fp_inputs *in);
void fp_eval_free(fp_eval *e);
/* Two evaluators over in (the pair a branch uses for its two seeds);
 * returns 0 with both NULL when out of memory. */
int fp_eval_pair_new(const fp_inputs *in, fp_eval **e, fp_eval **e2);
void fp_eval_pair_free(fp_eval **e, fp_eval **e2); /* both; sets NULL */
/* Evaluates node i of g (nodes before i evaluated already), input v
 * reading the values of map[v] (map NULL: v itself). */
base_status fp_eval_node(fp_eval *e, const en_graph *g, int i,
                         const uint8_t *map);
/* Evaluates all of g; hashes of its outputs (in g's output order) into
 * h[EN_MAX_OUTPUTS], their number into *nout. */
base_status fp_eval_graph(fp_eval *e, const en_graph *g, const uint8_t *map,
                          uint64_t *h, int *nout);
/* Hash of a tensor of residues (seeded by its shape). */
uint64_t fp_tensor_hash(const ir_shape *s, const uint32_t *val);
/* Hash of value v of the graph evaluated in e (inputs through map). */
uint64_t fp_value_hash(const fp_eval *e, uint8_t v, const uint8_t *map);
/* Output hashes of g after its nodes were evaluated in e. */
int fp_out_hashes(const fp_eval *e, const en_graph *g, const uint8_t *map,
                  uint64_t *h);
/* Order-independent combination of n output hashes. */
uint64_t fp_combine(const uint64_t *h, int n);

/* Evaluates node k of ir_graph g into val (indexed by tensor; its outputs
 * malloc'd): 0, or -1 when an input is missing, an output has more than
 * EN_MAX_NUMEL elements or fp_kernel lacks the operator, or -2 when out of
 * memory. */
int fp_ir_node(const ir_graph *g, int k, uint32_t **val, uint64_t key);

/* Renamings: per class, a permutation of the copies g uses, coded in
 * mixed radix (6 per class); code 0 is the identity. */
uint32_t fp_renaming_count(const uint8_t used[EN_NCLASSES]);
/* The idx-th renaming of the group of used (0 <= idx < count) as its code. */
uint32_t fp_renaming_code(const uint8_t used[EN_NCLASSES], uint32_t idx);
/* map[v] for input id v under code. */
void fp_renaming_map(uint32_t code, uint8_t map[EN_NINPUT_IDS]);

#define FP_MAX_ALT 4

/* Fingerprint under e's seed: min over renamings, e2 scratch for the full
 * re-evaluations; *code receives the minimising renaming, and alt[*nalt]
 * (if nalt; at most FP_MAX_ALT) later renamings reaching the same value:
 * the value is symmetric under them, which gives a rule when the graph is
 * not. Nodes of g must be evaluated in e (identity) already. */
base_status fp_min_renaming(fp_eval *e, fp_eval *e2, const en_graph *g,
                            uint64_t *fp, uint32_t *code, uint32_t *alt,
                            int *nalt);

/* Whether g's last node (evaluated in e) computes a value that t has with
 * fewer operators than the node's sub-DAG (t NULL: 0). */
int fp_nf_last_non_normal(const fp_nf *t, const fp_eval *e, const en_graph *g);

/* ---- checkpoints of a resumable enumeration (ckpt.c) ------------------- */

typedef struct fp_ckpt_meta {
  uint64_t n;         /* records */
  uint64_t dropped;   /* graphs dropped: a non-normal output */
  uint64_t nf_values; /* the normal-form table's size when it was made */
} fp_ckpt_meta;

/* The key of what determines a branch's records: c's enumeration settings,
 * the record size and the branch count. */
uint64_t fp_ckpt_key(const en_config *c, size_t rec_size);
/* Creates dir if it does not exist (BASE_ERR_IO if it cannot). */
base_status fp_ckpt_dir(const char *dir, base_diag *d);
/* Whether branch b's file exists in dir (read it to know it is sound). */
int fp_ckpt_exists(const char *dir, int b);
/* Writes branch b's m->n records (rec_size bytes each) atomically. Safe
 * from several threads and processes (different branches). */
base_status fp_ckpt_write(const char *dir, int b, uint64_t key,
                          const fp_ckpt_meta *m, const void *recs,
                          size_t rec_size, base_diag *d);
/* Writes parts[0..nparts) to path atomically: a temporary file named by
 * path and process, synced, then renamed. */
base_status fp_ckpt_atomic_write(const char *path, const void *const *part,
                                 const size_t *len, int nparts, base_diag *d);
/* Opens checkpoint file path for reading; *f = NULL (BASE_OK) when there is
 * none. */
base_status fp_ckpt_open(const char *path, FILE **f, base_diag *d);
/* The error for a checkpoint file found unusable: why ("out of memory":
 * BASE_ERR_NOMEM, else BASE_ERR_IO). */
base_status fp_ckpt_bad(const char *path, const char *why, base_diag *d);
/* The normal-form table of sizes 0..max_size in dir/nf.tab (nf.c), keyed
 * like the branch files. Loading: *found = 0 when there is none; a file of
 * another key, size or checksum is an error (BASE_ERR_IO), never used. */
base_status fp_nf_save(const fp_nf *t, const char *dir, uint64_t key,
                       int max_size, base_diag *d);
base_status fp_nf_load(const char *dir, uint64_t key, int max_size, fp_nf **out,
                       int *found, base_diag *d);
/* Writes dir/weights (branch weights w[nb], one "b w" line each) unless
 * it exists. */
base_status fp_ckpt_write_weights(const char *dir, const long long *w, int nb,
                                  base_diag *d);
/* Reads dir/weights into w[nb]: 1 if it lists exactly nb weights. */
int fp_ckpt_read_weights(const char *dir, long long *w, int nb);
/* Reads branch b's file: *found = 0 when there is none; else *recs
 * (malloc'd) and m. A file of another key, size or checksum is an error
 * (BASE_ERR_IO), never used. */
base_status fp_ckpt_read(const char *dir, int b, uint64_t key, size_t rec_size,
                         fp_ckpt_meta *m, void **recs, int *found,
                         base_diag *d);

#endif
