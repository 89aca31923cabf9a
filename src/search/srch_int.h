/* srch_int.h: internals shared by the search module's files: the graph
 * index used by matching, compiled rule directions, and graph rebuilding. */
#ifndef SUPEROPT_SRCH_INT_H
#define SUPEROPT_SRCH_INT_H

#include "search.h"

/* Bits of a node-signature filter (a small Bloom filter). */
#define SRCH_SIG_WORDS 4

/* Who reads each tensor, and the nodes of each operator, for one graph. */
typedef struct srch_index {
  int32_t *use_start; /* ntensors + 1: uses of t in use_node[start..start+1) */
  int32_t *use_node;  /* consumer node of each use (a node once per slot) */
  uint8_t *is_output; /* ntensors: tensor is a graph output */
  int32_t *op_start;  /* IR_NOPS + 1 */
  int32_t *op_node;   /* nodes grouped by opcode, in graph order */
  uint64_t *sig;      /* nnodes: srch_node_sig of each node */
  int32_t *by_sig;    /* nnodes: nodes sorted by (signature, index) */
  uint64_t sigset[SRCH_SIG_WORDS]; /* the signatures present (Bloom) */
  uint8_t *busy; /* nnodes: matcher scratch, all zero between matches */
} srch_index;

/* A node's signature: a hash of its operator, arity, parameters (shape-
 * dependent ones cleared) and the ranks of its inputs and outputs. Two nodes
 * the matcher may pair have equal signatures (the converse needs the full
 * comparison). */
uint64_t srch_node_sig(const ir_graph *g, const ir_node *n);
/* The Bloom filter bits of signature s. */
void srch_sig_bits(uint64_t s, uint64_t set[SRCH_SIG_WORDS]);

base_status srch_index_build(const ir_graph *g, srch_index *ix, base_diag *d);
void srch_index_free(srch_index *ix);

/* A pattern prepared for matching: node signatures, the signature filter,
 * the operator counts it needs, and per-tensor facts. */
typedef struct srch_cpat {
  const ir_graph *g;
  uint64_t sig[SRCH_MAX_PNODES];
  uint64_t sigset[SRCH_SIG_WORDS];
  uint64_t ops; /* bit op: the pattern has a node of operator op */
  int nneed;
  uint8_t need_op[SRCH_MAX_PNODES], need_count[SRCH_MAX_PNODES];
  uint8_t uses[SRCH_MAX_PTENSORS]; /* readers of each tensor in the pattern */
  uint8_t out[SRCH_MAX_PTENSORS];  /* tensor is a pattern output */
} srch_cpat;

/* Prepares pat (which must outlive cp); BASE_ERR_PARAM when too large. */
base_status srch_cpat_init(srch_cpat *cp, const ir_graph *pat, base_diag *d);
/* Whether the indexed graph has every signature and enough nodes of every
 * operator cp needs: a necessary condition for a match. */
int srch_cpat_may_match(const srch_cpat *cp, const srch_index *ix);

/* Matches with an index built by the caller (see srch_match_graph). */
base_status srch_match_indexed(const ir_graph *pat, const ir_graph *g,
                               const srch_index *ix, srch_matches *ms,
                               base_diag *d);
/* The same with a prepared pattern. */
base_status srch_match_cpat(const srch_cpat *cp, const ir_graph *g,
                            const srch_index *ix, srch_matches *ms,
                            base_diag *d);
/* Checks that pat fits the matcher's limits. */
base_status srch_pattern_ok(const ir_graph *pat, base_diag *d);

/* One usable direction of a rule. */
typedef struct srch_dir {
  int rule;     /* index in the ruleset */
  int backward; /* 0: src -> dst, 1: dst -> src */
  const ir_graph *pat, *repl;
  srch_cpat cp; /* pat prepared */
} srch_dir;

/* Directions by the signature of their anchor (the pattern node the
 * matcher places first, the last one): an open-addressing table of
 * signatures, each with its directions in increasing order. */
typedef struct srch_anchors {
  uint64_t *key;  /* cap slots; 0 = empty (a signature 0 is stored as 1) */
  int32_t *start; /* cap slots: first of its directions in dir[] */
  int32_t *count; /* cap slots */
  int32_t *dir;   /* ndirs direction indices grouped by anchor */
  int cap;
} srch_anchors;

struct srch_rules {
  const ir_ruleset *rs;
  srch_dir *dirs;
  int ndirs;
  srch_anchors an;
};

/* Sets bit k of mask (ndirs bits) for every direction k whose anchor
 * signature is that of some node of the indexed graph. */
void srch_anchors_mark(const srch_rules *r, const srch_index *ix, int nnodes,
                       uint64_t *mask);

/* Node parameters with the shape-dependent ones cleared, for comparison. */
void srch_attrs_generic(ir_opcode op, ir_attrs *a);

/* ---- rebuilding graphs ------------------------------------------------------
 */

/* A graph h under construction from g: map[t] is h's tensor for g's t (-1
 * until added). Inputs and weights are added up front (weights only where
 * used[] says so, or all when used is NULL). */
typedef struct srch_builder {
  const ir_graph *g;
  ir_graph *h;
  int32_t *map;
  int fresh; /* counter for new names */
  base_diag *d;
} srch_builder;

base_status srch_build_begin(srch_builder *b, const ir_graph *g,
                             const uint8_t *used, base_diag *d);
/* Adds a copy of g's node i with attributes a (NULL: its own), its inputs
 * mapped through b->map; maps its outputs. */
base_status srch_build_copy(srch_builder *b, int i, const ir_attrs *a);
/* Adds a new node to h over h's tensors; outputs get fresh names based on
 * base. Returns the node index or -1. */
int srch_build_node(srch_builder *b, ir_opcode op, const int32_t *in, int nin,
                    const ir_attrs *a, const char *base);
/* Sets h's outputs to map[g's outputs]; returns h (b no longer owns it). */
ir_graph *srch_build_end(srch_builder *b);
void srch_build_abort(srch_builder *b);
/* How a pass ends its build: the graph (srch_build_end) when st is BASE_OK,
 * else NULL after srch_build_abort (an BASE_ERR_NOMEM gets its message). */
ir_graph *srch_build_finish(srch_builder *b, base_status st);
/* A name unused in g and in h, from base. */
void srch_fresh_name(const ir_graph *g, const ir_graph *h, const char *base,
                     int *counter, char *buf, size_t n);

/* ---- structural hashes and rewrite probes ---------------------------------
 */

/* The search's Merkle hash (hash.c): leaves by kind, name and shape; node
 * outputs by operator, parameters, slot and input hashes; graphs by their
 * outputs' hashes. */
uint64_t srch_leaf_hash(const ir_tensor *t);
uint64_t srch_out_hash(ir_opcode op, const ir_attrs *a, const uint64_t *in,
                       int nin, int slot);
uint64_t srch_outputs_hash(const uint64_t *out, int n);
/* A graph's hash (*st set on out of memory). */
uint64_t srch_graph_shash(const ir_graph *g, base_diag *d, base_status *st);

/* What probing rewrites of one graph needs: its tensors' hashes, its
 * weight-only nodes, its node costs (costed on first use), and scratch. */
typedef struct srch_gsum {
  const ir_graph *g;
  srch_cost_fn f;
  void *u;
  uint64_t hash; /* the graph's */
  uint64_t *th;  /* ntensors */
  uint8_t *wo;   /* nnodes: weight-only */
  double *nc;    /* nnodes: node cost, NAN until needed */
  uint64_t *nh;  /* scratch: a result's hashes of g's tensors */
  uint8_t *cwo;  /* scratch: a result's weight-only items */
} srch_gsum;

base_status srch_gsum_build(srch_gsum *s, const ir_graph *g, srch_cost_fn f,
                            void *u, base_diag *d);
void srch_gsum_free(srch_gsum *s);
/* Cost of g's node i (sets *estimated when it is costed and estimated). */
double srch_gsum_node_cost(srch_gsum *s, int i, int *estimated);

/* What srch_rewrite would make of a match, without making it: the result's
 * hash, and its cost as the sum of its nodes' costs (the cost of a node
 * depending on the node and its tensors' shapes only; exact up to the
 * order of summation). BASE_OK, or the error srch_rewrite would fail with. */
typedef struct srch_probe {
  uint64_t hash;
  double cost;
  int estimated;
} srch_probe;

base_status srch_rewrite_probe(srch_gsum *s, const ir_graph *pat,
                               const ir_graph *repl, const srch_match *m,
                               srch_probe *out, base_diag *d);

/* srch_search with an absolute deadline (0: none), no time accounting. */
ir_graph *srch_search_until(const ir_graph *g, const srch_rules *rules,
                            const srch_options *o, double deadline,
                            srch_stats *st, base_diag *d);

#endif
