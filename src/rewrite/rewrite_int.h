/* rewrite_int.h: the rewrite module's internals, shared with the
 * optimizer's other modules (src/pass, src/search) and white-box tests, not
 * a library API: the graph index used by matching, prepared patterns,
 * compiled rule directions grouped by anchor, structural hashes, and probes
 * that price a rewrite without making it. */
#ifndef SUPEROPT_REWRITE_INT_H
#define SUPEROPT_REWRITE_INT_H

#include "../costdb/costdb.h"
#include "rewrite.h"

/* Bits of a node-signature filter (a small Bloom filter). */
#define REWRITE_SIG_WORDS 4

/* Who reads each tensor, and the nodes of each operator, for one graph. */
typedef struct rewrite_index {
  int32_t *use_start; /* ntensors + 1: uses of t in use_node[start..start+1) */
  int32_t *use_node;  /* consumer node of each use (a node once per slot) */
  uint8_t *is_output; /* ntensors: tensor is a graph output */
  int32_t *op_start;  /* IR_NOPS + 1 */
  int32_t *op_node;   /* nodes grouped by opcode, in graph order */
  uint64_t *sig;      /* nnodes: rewrite_node_sig of each node */
  int32_t *by_sig;    /* nnodes: nodes sorted by (signature, index) */
  uint64_t sigset[REWRITE_SIG_WORDS]; /* the signatures present (Bloom) */
  uint8_t *busy;  /* nnodes: matcher scratch, all zero between matches */
  uint8_t *pad;   /* nnodes: rewrite_pad_modes of each node */
  uint64_t *ssig; /* nnodes: rewrite_node_ssig of each node */
  uint64_t ssigset[REWRITE_SIG_WORDS]; /* the strict signatures (Bloom) */
  /* the edges present, as the pattern's (rewrite_cpat) */
  uint64_t esigset[REWRITE_SIG_WORDS], essigset[REWRITE_SIG_WORDS];
} rewrite_index;

/* A node's signature: a hash of its operator, arity, parameters (shape-
 * dependent ones cleared) and the ranks of its inputs and outputs. Two nodes
 * the matcher may pair have equal signatures (the converse needs the full
 * comparison). */
uint64_t rewrite_node_sig(const ir_graph *g, const ir_node *n);
/* The strict signature: as rewrite_node_sig, but a convolution's stride,
 * groups, act and bias count too (what exact matching compares). */
uint64_t rewrite_node_ssig(const ir_graph *g, const ir_node *n);
/* The Bloom filter bits of signature s. */
void rewrite_sig_bits(uint64_t s, uint64_t set[REWRITE_SIG_WORDS]);
/* The edge filter bits of every edge of g (node j reading node i's output:
 * the pair of their signatures sig[i], sig[j]) into set. */
void rewrite_edge_bits(const ir_graph *g, const uint64_t *sig,
                       uint64_t set[REWRITE_SIG_WORDS]);

base_status rewrite_index_build(const ir_graph *g, rewrite_index *ix,
                                base_diag *d);
void rewrite_index_free(rewrite_index *ix);
/* The node that alone reads tensor t (once), when t is no graph output;
 * else -1. */
int rewrite_sole_reader(const rewrite_index *ix, int32_t t);

typedef struct rewrite_icache rewrite_icache;

/* A pattern prepared for matching: node signatures, the signature filter,
 * the operator counts it needs, and per-tensor facts. */
typedef struct rewrite_cpat {
  const ir_graph *g;
  const ir_graph *repl; /* the direction's replacement (instances) */
  rewrite_icache *ic;   /* proven instances; NULL: exact matching only */
  int dir;              /* the direction's index (instance cache key) */
  int off;              /* 1: never matches (its rule was demoted by
                           rewrite_reprove) */
  uint64_t sig[REWRITE_MAX_PNODES];
  uint64_t sigset[REWRITE_SIG_WORDS];
  uint64_t ssig[REWRITE_MAX_PNODES]; /* strict signatures */
  uint64_t ssigset[REWRITE_SIG_WORDS];
  /* its edges (a node reading another's output) by the two nodes'
   * signatures, and by their strict signatures (Bloom) */
  uint64_t esigset[REWRITE_SIG_WORDS], essigset[REWRITE_SIG_WORDS];
  uint64_t ops; /* bit op: the pattern has a node of operator op */
  int nneed;
  uint8_t need_op[REWRITE_MAX_PNODES], need_count[REWRITE_MAX_PNODES];
  uint8_t
      uses[REWRITE_MAX_PTENSORS];    /* readers of each tensor in the pattern */
  uint8_t out[REWRITE_MAX_PTENSORS]; /* tensor is a pattern output */
} rewrite_cpat;

/* Prepares pat (which must outlive cp); BASE_ERR_PARAM when too large. */
base_status rewrite_cpat_init(rewrite_cpat *cp, const ir_graph *pat,
                              base_diag *d);
/* Whether the indexed graph has every signature, every edge between two
 * signatures and enough nodes of every operator cp needs: a necessary
 * condition for a match (matched nodes have the pattern nodes'
 * signatures, and a pattern edge maps onto a graph edge). */
int rewrite_cpat_may_match(const rewrite_cpat *cp, const rewrite_index *ix);

/* Matches with an index built by the caller (see rewrite_match_graph). */
base_status rewrite_match_indexed(const ir_graph *pat, const ir_graph *g,
                                  const rewrite_index *ix, rewrite_matches *ms,
                                  base_diag *d);
/* The same with a prepared pattern. */
base_status rewrite_match_cpat(const rewrite_cpat *cp, const ir_graph *g,
                               const rewrite_index *ix, rewrite_matches *ms,
                               base_diag *d);
/* Checks that pat fits the matcher's limits. */
base_status rewrite_pattern_ok(const ir_graph *pat, base_diag *d);

/* One direction of a rule: slot 2 i (forward) or 2 i + 1 (backward) of
 * rule i. A slot that is not usable, or whose rule is not loaded yet, is
 * all zero (pat and cp.g NULL: it never matches; untouched memory). */
typedef struct rewrite_dir {
  int rule;     /* index in the ruleset */
  int backward; /* 0: src -> dst, 1: dst -> src */
  const ir_graph *pat, *repl;
  rewrite_cpat cp; /* pat prepared */
} rewrite_dir;

/* Directions by the signature of their anchor (the pattern node the
 * matcher places first, the last one): an open-addressing table of
 * signatures, each with a chain of its directions (the search takes them
 * in increasing order through a bit mask). Grows as rules are loaded. */
typedef struct rewrite_anchors {
  uint64_t *key; /* cap slots; 0 = empty (a signature 0 is stored as 1) */
  int32_t *head; /* cap slots: its first direction, -1 none */
  int32_t *next; /* ndirs: the next direction of the same anchor, -1 */
  int cap, nkeys;
} rewrite_anchors;

/* The rules of a set read lazily (ir_rules_read_file_lazy) not loaded yet,
 * grouped by the operators of a side (ir_rule.ops): a rule is loaded, and
 * both its directions compiled, once a searched graph has every operator
 * of a side it may be matched by. */
typedef struct rewrite_pending {
  uint64_t *mask; /* ngroups: the operators of the group's sides */
  int32_t *start; /* ngroups + 1: its rules in rule[start..start+1) */
  int32_t *rule;  /* rule indices grouped by mask */
  uint8_t *done;  /* ngroups: loaded */
  uint64_t *seen; /* operator sets already loaded for (nseen) */
  int ngroups, nseen, capseen, left; /* left: groups not loaded */
} rewrite_pending;

struct rewrite_rules {
  const ir_ruleset *rs; /* lazily read rules are loaded into it */
  rewrite_icache *ic;   /* proven instances of the directions */
  rewrite_dir *dirs;    /* 2 * rs->n slots */
  int ndirs;            /* slots */
  int nlive;            /* usable directions compiled */
  int directions;       /* REWRITE_FORWARD, ... */
  int instances;        /* rewrite_rules_set_instances */
  uint8_t *loaded;      /* per rule: compiled */
  rewrite_anchors an;
  rewrite_pending pend;
};

/* Loads and compiles the rules not loaded yet of which a side has only
 * operators of ops (bit op); quick for a set already loaded for ops. An
 * error (d: file:line of the rule) when such a rule's text is bad. The
 * loaded part of r is mutable state, as its instance cache is. */
base_status rewrite_rules_load(const rewrite_rules *r, uint64_t ops,
                               base_diag *d);

/* Sets bit k of mask (ndirs bits) for every direction k whose anchor
 * signature is that of some node of the indexed graph. */
void rewrite_anchors_mark(const rewrite_rules *r, const rewrite_index *ix,
                          int nnodes, uint64_t *mask);

/* Node parameters with the shape-dependent ones cleared, for comparison:
 * those marked '~' in ops.def, and pads a padding mode resolved. */
void rewrite_attrs_generic(ir_opcode op, ir_attrs *a);

/* The padding modes (bit 1 << ir_padmode) whose pads node n of g has on
 * its own shapes: its own mode, and 'same' or 'valid' where its pads are
 * what they resolve to (explicit [1,1,1,1] on a 3x3 stride-1 conv is
 * 'same'). 0 for operators without padding. */
uint8_t rewrite_pad_modes(const ir_graph *g, const ir_node *n);

/* How pattern node p may bind graph node n (whose rewrite_pad_modes are
 * modes): 0 not at all, REWRITE_EXACT (the parameters are equal, padding
 * compared by modes), REWRITE_INSTANCE (p, without the input marked '!' in
 * ops.def, equals n but for the parameters marked '!' and that input:
 * conv2d's stride, groups, act and bias; only through a proven instance,
 * inst.c). */
enum { REWRITE_EXACT = 1, REWRITE_INSTANCE = 2 };

/* Whether the n operands of an element-wise operator op broadcast alike
 * with the pattern's shapes p and the graph's g: on every axis (aligned
 * from the last) equal in both, or the same operand of size 1 in both, or
 * of size 1 in both graph operands; 1 for other operators. A match that
 * differs so is a rule instance (match.c), a replacement that would is
 * refused (rewrite.c). */
int rewrite_bcast_alike(ir_opcode op, const ir_shape *const *p,
                        const ir_shape *const *g, int n);
int rewrite_params_match(const ir_node *p, const ir_node *n, uint8_t modes);

/* ---- rule instances (inst.c) ----------------------------------------------
 */

/* A match m of cp's pattern in g with nodes bound as REWRITE_INSTANCE (busy:
 * g's nodes bound by m) is turned into a match *out of the rule instance
 * whose sides are the pattern and replacement with the graph nodes'
 * parameters, typed on g's shapes, proven by the verifier (cached by
 * direction, parameters and shapes). *ok = 0 when no proven instance
 * covers the match (refused). BASE_ERR_NOMEM only. */
base_status rewrite_inst_resolve(const rewrite_cpat *cp, const ir_graph *g,
                                 const rewrite_match *m, const uint8_t *busy,
                                 rewrite_match *out, int *ok, base_diag *d);
/* A cache for ndirs directions; NULL on OOM. */
rewrite_icache *rewrite_icache_new(int ndirs);
/* Whether direction dir's instances are given up: INST_HOPELESS of them
 * refused and none proven (its matching is then exact only, as cheap as
 * without instances). */
int rewrite_icache_hopeless(const rewrite_icache *c, int dir);
void rewrite_icache_free(rewrite_icache *c);

/* What an instance changes in the replacement (rewrite_type_instance). */
typedef struct rewrite_edits {
  /* pattern value -> graph value of each convolution parameter */
  int nsh, nsw, ngroups;
  int32_t sh_from[REWRITE_MAX_PNODES], sh_to[REWRITE_MAX_PNODES];
  int32_t sw_from[REWRITE_MAX_PNODES], sw_to[REWRITE_MAX_PNODES];
  int32_t groups_from[REWRITE_MAX_PNODES], groups_to[REWRITE_MAX_PNODES];
  /* explicit pads [t,l,b,r] of the pattern -> the graph node's */
  int npad;
  int32_t pad_from[REWRITE_MAX_PNODES][4], pad_to[REWRITE_MAX_PNODES][4];
  /* a batchnorm's eps of the pattern -> the graph node's (as float bits) */
  int neps;
  int32_t eps_from[REWRITE_MAX_PNODES], eps_to[REWRITE_MAX_PNODES];
  int bias_node; /* replacement conv given a bias; -1: none */
  int bias_kind; /* REWRITE_BIAS_* */
  char bias_name[2][32];
  ir_shape bias_shape[2];
  int act[REWRITE_MAX_PTENSORS]; /* per output: activation to apply */
} rewrite_edits;

enum {
  REWRITE_BIAS_ONE = 1, /* the bias is bias_name[0] */
  REWRITE_BIAS_SUM,     /* ewadd(bias 0, bias 1) */
  REWRITE_BIAS_CONCAT   /* concat(bias 0, bias 1) axis 0 */
};

/* The replacement of direction (pat, repl) for match m of g, edited by e,
 * as a standalone graph typed on g's shapes: its inputs are named as the
 * pattern's (with the bound tensors' shapes) plus e's biases. NULL with d
 * set when it does not type-check. */
ir_graph *rewrite_type_instance(const ir_graph *g, const ir_graph *pat,
                                const ir_graph *repl, const rewrite_match *m,
                                const rewrite_edits *e, base_diag *d);

/* The pattern and replacement a match of direction dr applies. */
static inline const ir_graph *rewrite_match_pat(const rewrite_dir *dr,
                                                const rewrite_match *m) {
  return m->pat ? m->pat : dr->pat;
}
static inline const ir_graph *rewrite_match_repl(const rewrite_dir *dr,
                                                 const rewrite_match *m) {
  return m->repl ? m->repl : dr->repl;
}

/* ---- structural hashes and rewrite probes ---------------------------------
 */

/* The search's Merkle hash (hash.c): leaves by kind, name and shape; node
 * outputs by operator, parameters, slot and input hashes; graphs by their
 * outputs' hashes. */
uint64_t rewrite_leaf_hash(const ir_tensor *t);
uint64_t rewrite_out_hash(ir_opcode op, const ir_attrs *a, const uint64_t *in,
                          int nin, int slot);
uint64_t rewrite_outputs_hash(const uint64_t *out, int n);
/* A graph's hash (*st set on out of memory). */
uint64_t rewrite_graph_shash(const ir_graph *g, base_diag *d, base_status *st);

/* What probing rewrites of one graph needs: its tensors' hashes, its
 * weight-only nodes, its node costs (costed on first use), and scratch. */
typedef struct rewrite_gsum {
  const ir_graph *g;
  cd_cost_fn f;
  void *u;
  uint64_t hash; /* the graph's */
  uint64_t *th;  /* ntensors */
  uint8_t *wo;   /* nnodes: weight-only */
  double *nc;    /* nnodes: node cost, NAN until needed */
  uint64_t *nh;  /* scratch: a result's hashes of g's tensors */
  uint8_t *cwo;  /* scratch: a result's weight-only items */
} rewrite_gsum;

base_status rewrite_gsum_build(rewrite_gsum *s, const ir_graph *g, cd_cost_fn f,
                               void *u, base_diag *d);
void rewrite_gsum_free(rewrite_gsum *s);
/* Cost of g's node i (sets *estimated when it is costed and estimated). */
base_status rewrite_gsum_node_cost(rewrite_gsum *s, int i, double *cost,
                                   int *estimated, base_diag *d);

/* What rewrite_apply would make of a match, without making it: the result's
 * hash, and its cost as the sum of its nodes' costs (the cost of a node
 * depending on the node and its tensors' shapes only; exact up to the
 * order of summation). BASE_OK, or the error rewrite_apply would fail with. */
typedef struct rewrite_probe {
  uint64_t hash;
  double cost;
  int estimated;
} rewrite_probe;

base_status rewrite_apply_probe(rewrite_gsum *s, const ir_graph *pat,
                                const ir_graph *repl, const rewrite_match *m,
                                rewrite_probe *out, base_diag *d);

#endif
