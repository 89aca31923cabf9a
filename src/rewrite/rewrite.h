/* rewrite.h: rule matching and rewriting, the directions of a rule set
 * compiled for matching, and rebuilding graphs (what the built-in passes and
 * the search are made of).
 *
 * IR in, IR out: every function takes const graphs and returns fresh ones.
 * A rule (ir_rule) is used in a direction: forward matches its src graph and
 * substitutes its dst graph, backward the other way round. Matching is
 * shape-generic: a pattern proven on small shapes applies to any tensors of
 * the same ranks; the substituted side is re-typed with the graph's shapes
 * (ir_infer) and must reproduce the replaced tensors' shapes exactly.
 * docs/search.md explains the algorithms.
 */
#ifndef SUPEROPT_REWRITE_H
#define SUPEROPT_REWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"
#include "../ir/ir.h"

/* most nodes of one pattern (ViT's head split around an attention: 25) */
#define REWRITE_MAX_PNODES 32
#define REWRITE_MAX_PTENSORS 64 /* most tensors of one pattern */

/* ---- matching -------------------------------------------------------------
 */

/* One occurrence of a pattern graph in a graph. A rule direction may match
 * as a proven instance of the rule (a convolution with another stride,
 * groups, a bias or a fused activation: docs/search.md, "Why each
 * generalisation is sound"); then pat and repl are that instance's sides,
 * which node[] and tensor[] refer to, and apply in place of the
 * direction's (they live as long as the compiled rules). NULL otherwise. */
typedef struct rewrite_match {
  int32_t node[REWRITE_MAX_PNODES];     /* pattern node i -> graph node */
  int32_t tensor[REWRITE_MAX_PTENSORS]; /* pattern tensor i -> graph tensor */
  const ir_graph *pat, *repl;           /* a proven instance, or NULL */
} rewrite_match;

typedef struct rewrite_matches {
  rewrite_match *m; /* malloc'd */
  int n, cap;
} rewrite_matches;

void rewrite_matches_free(rewrite_matches *ms);

/* Appends to ms every match of pat in g: operators, arities and parameters
 * equal (parameters that follow shapes excepted: split sizes, const_*
 * shapes; padding compares by the pads it resolves to on the graph node's
 * shapes, so explicit pads equal to 'same' match 'same'), ranks equal, a
 * pattern input used twice binds one tensor, distinct pattern nodes bind
 * distinct graph nodes, and no intermediate tensor of the match (not an output
 * of pat) is read outside the match or is an output of g. Patterns with more
 * than REWRITE_MAX_PNODES nodes or REWRITE_MAX_PTENSORS tensors are an
 * BASE_ERR_PARAM. */
base_status rewrite_match_graph(const ir_graph *pat, const ir_graph *g,
                                rewrite_matches *ms, base_diag *d);

/* ---- rewriting ------------------------------------------------------------
 */

/* Replaces match m of pat in g by repl (same input names as pat, outputs by
 * position). Returns a new graph in topological order without dead nodes or
 * unused weights. NULL with d set (BASE_ERR_SHAPE, BASE_ERR_CYCLE, ...) when
 * repl does not type-check on g's shapes, its outputs' shapes differ from the
 * replaced tensors', or the result would have a cycle. The result may share
 * weight values (tensor data) with g: keep g alive, or ir_graph_clone it. */
ir_graph *rewrite_apply(const ir_graph *g, const ir_graph *pat,
                        const ir_graph *repl, const rewrite_match *m,
                        base_diag *d);

/* ---- rules compiled for the search ----------------------------------------
 */

enum { REWRITE_FORWARD = 1, REWRITE_BACKWARD = 2, REWRITE_BOTH = 3 };

typedef struct rewrite_rules rewrite_rules;

/* Compiles the usable directions of rs's rules (directions: SRCH_*). Rules
 * whose status is not proven are refused (BASE_ERR_PARAM naming the first
 * one) unless allow_unproven. A direction is unusable, and skipped, when its
 * pattern has no operator, an output that is not computed by the pattern,
 * or an input the replacement needs but the pattern never reads. rs must
 * outlive the result. */
rewrite_rules *rewrite_rules_compile(const ir_ruleset *rs, int directions,
                                     int allow_unproven, base_diag *d);
void rewrite_rules_free(rewrite_rules *r);
int rewrite_rules_count(const rewrite_rules *r); /* usable directed patterns */
/* Whether the directions also match as proven rule instances (1, the
 * default) or only exactly (0: how matching was before instances). */
void rewrite_rules_set_instances(rewrite_rules *r, int on);
/* Rule instances tried on real graphs: proven and used, refused (not
 * proven, or past the proof budget). */
void rewrite_rules_instance_counts(const rewrite_rules *r, int *proven,
                                   int *refused);

/* ---- re-proving the rules a search applied ---------------------------------
 */

/* A rule whose re-proof failed. */
typedef struct rewrite_demotion {
  int rule;         /* its index in the rule set */
  char reason[256]; /* the verifier's: "sat (counter-model)", ... */
} rewrite_demotion;

/* What rewrite_reprove did over one optimization (its calls add up).
 * Zero it before the first call; rewrite_reproof_free after the last. */
typedef struct rewrite_reproof {
  int reproved;              /* distinct applied rules proven again */
  int unproven;              /* distinct applied rules not labelled proven
                                (--allow-unproven): not re-proven, not claimed */
  double ms;                 /* time in the verifier */
  rewrite_demotion *demoted; /* malloc'd, ndemoted entries */
  int ndemoted;
  uint8_t *state; /* per rule: 0 not seen, 1 re-proven, 2 demoted, 3 unproven */
  int nrules;
} rewrite_reproof;

/* Re-proves, with the verifier (a fresh context, default timeout), every
 * rule of r's set labelled proven that was applied (fw[i] + bw[i] > 0: the
 * forward and backward uses of rule i in the result, as srch_stats counts
 * them) and that p has not re-proven yet. A rule whose proof fails
 * (counter-model, unknown, timeout, unsupported operator) is demoted: its
 * directions are disabled in r and in also (NULL, or a set compiled from
 * the first rules of the same ruleset, such as the pass rules), so that no
 * later search applies it, and it is added to p->demoted. *ndemoted gets
 * the number this call demoted: when it is not 0, the result that applied
 * them must be dropped and the optimization run again. An error (d set)
 * only when the verifier cannot start or memory runs out. */
base_status rewrite_reprove(rewrite_reproof *p, rewrite_rules *r,
                            rewrite_rules *also, const int *fw, const int *bw,
                            int *ndemoted, base_diag *d);
void rewrite_reproof_free(rewrite_reproof *p);

/* ---- rebuilding graphs ------------------------------------------------------
 */

/* A graph h under construction from g: map[t] is h's tensor for g's t (-1
 * until added). Inputs and weights are added up front (weights only where
 * used[] says so, or all when used is NULL). */
typedef struct rewrite_builder {
  const ir_graph *g;
  ir_graph *h;
  int32_t *map;
  int fresh; /* counter for new names */
  base_diag *d;
} rewrite_builder;

base_status rewrite_build_begin(rewrite_builder *b, const ir_graph *g,
                                const uint8_t *used, base_diag *d);
/* Adds a copy of g's node i with attributes a (NULL: its own), its inputs
 * mapped through b->map; maps its outputs. */
base_status rewrite_build_copy(rewrite_builder *b, int i, const ir_attrs *a);
/* Adds a new node to h over h's tensors; outputs get fresh names based on
 * base. Returns the node index or -1. */
int rewrite_build_node(rewrite_builder *b, ir_opcode op, const int32_t *in,
                       int nin, const ir_attrs *a, const char *base);
/* Sets h's outputs to map[g's outputs]; returns h (b no longer owns it). */
ir_graph *rewrite_build_end(rewrite_builder *b);
void rewrite_build_abort(rewrite_builder *b);
/* How a pass ends its build: the graph (rewrite_build_end) when st is BASE_OK,
 * else NULL after rewrite_build_abort (an BASE_ERR_NOMEM gets its message). */
ir_graph *rewrite_build_finish(rewrite_builder *b, base_status st);
/* A name unused in g and in h, from base. */
void rewrite_fresh_name(const ir_graph *g, const ir_graph *h, const char *base,
                        int *counter, char *buf, size_t n);

#endif
