/* verify.h: the Z3 verifier. Proves rules (pairs of graphs, ir_rule) from
 * quantified axioms about the operators, in the style of TASO (SOSP'19).
 *
 * Tensors are one uninterpreted Z3 sort; every operator is an uninterpreted
 * function of its Int parameters and its tensor inputs; each axiom is a
 * universally quantified equation (with Int guards and e-matching
 * patterns). A rule is proven when the axioms and "src output != dst output"
 * are unsatisfiable, for every output pair. Operators without axioms are
 * still encoded (keyed by name and parameters), so rules over them are
 * provable by congruence only. The encoding is described in docs/verify.md.
 *
 * Axioms are written in a small S-expression term language (verify_axiom.text)
 * and each carries a concrete instance (verify_axiom.inst) from which
 * verify_axiom_graphs builds both sides as ir_graphs, so that tests can check
 * every axiom numerically on the CPU reference executor.
 */
#ifndef SUPEROPT_VF_H
#define SUPEROPT_VF_H

#include "../ir/ir.h"

typedef struct verify_opts {
  unsigned timeout_ms; /* per Z3 query; 0 = default 10000 */
} verify_opts;

typedef struct verify_result {
  ir_rule_status status; /* IR_RULE_PROVEN or IR_RULE_UNPROVEN */
  char reason[256];      /* when unproven: "sat (counter-model)",
                            "unknown: timeout", "unsupported operator ..." */
  const char *core[64];  /* axioms in the unsat core (static strings) */
  int ncore;
  double ms; /* wall time of the whole proof */
} verify_result;

/* An axiom. text is one formula of the term language (docs/verify.md):
 *   (= LHS RHS)  or  (=> GUARD (= LHS RHS))
 * over operator terms such as (conv2d sh sw pad g act x w), Int arithmetic
 * and named constants (SAME, RELU, T10, ...); free identifiers are
 * universally quantified variables whose sort (Tensor or Int) follows from
 * where they occur. inst gives one concrete instance: "x=[2,3] s=[] a=1
 * c=[2,3]" (a shape for each tensor variable; an integer for each Int
 * variable, or a shape for a shape-code variable). */
typedef struct verify_axiom {
  const char *name; /* unique, [a-z0-9_] */
  const char *op;   /* the operator (ops.def name) it belongs to */
  const char *text; /* the formula */
  const char *inst; /* a concrete instance for numeric validation */
} verify_axiom;

typedef struct verify_ctx verify_ctx; /* one Z3 context: use one per thread */

/* A verifier with the built-in axioms. NULL on failure. */
verify_ctx *verify_new(const verify_opts *o);
/* A verifier with extra axioms added to the built-in ones (replace = 0) or
 * instead of them (replace = 1); used by tests to plant a wrong axiom. The
 * verify_axiom array must outlive the context. NULL with d set when an axiom
 * does not parse or Z3 fails. */
verify_ctx *verify_new_with(const verify_opts *o, const verify_axiom *extra,
                            int nextra, int replace, base_diag *d);
void verify_free(verify_ctx *c);

/* Proves r: every output pair of src and dst. Returns BASE_OK with res filled
 * whether proven or not; an error (d set) only for a Z3 failure or an
 * internal error. */
base_status verify_prove(verify_ctx *c, const ir_rule *r, verify_result *res,
                         base_diag *d);

/* The built-in axiom table (grouped by operator, in ops.def order). */
int verify_naxioms(void);
const verify_axiom *verify_axiom_at(int i);

/* Builds an axiom's instance as two graphs: *lhs and *rhs, each with one
 * output, whose inputs are the instance's tensor variables (IR_T_INPUT,
 * named after the variables). Fails with d set when the text or instance is
 * malformed, the guard is false for the instance, or a parameter the
 * encoding carries (such as concat's first-part size) disagrees with the
 * shapes. */
base_status verify_axiom_graphs(const verify_axiom *ax, ir_graph **lhs,
                                ir_graph **rhs, base_diag *d);

#endif
