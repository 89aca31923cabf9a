/* encode.h: the verifier context and the Z3 encoding of graphs and axioms
 * (private to src/verify/).
 */
#ifndef SUPEROPT_VF_ENCODE_H
#define SUPEROPT_VF_ENCODE_H

#include <z3.h>

#include "verify_int.h"

#define VERIFY_MAX_AXIOMS 256

struct verify_ctx {
  Z3_context z; /* non-refcounted: ASTs live until the scope is popped */
  Z3_solver s;  /* axioms asserted at the base scope */
  Z3_sort T, I; /* Tensor (uninterpreted) and Int */
  Z3_func_decl fn[VERIFY_NOPFN];
  unsigned timeout_ms;
  const verify_axiom *ax[VERIFY_MAX_AXIOMS]; /* the active axioms */
  Z3_ast track[VERIFY_MAX_AXIOMS];           /* their tracking literals */
  int nax;
};

/* State of one graph encoding. */
typedef struct verify_enc {
  char generic[200]; /* operators encoded without axioms, ", "-separated */
} verify_enc;

Z3_ast verify_shape_code(verify_ctx *c, const ir_shape *s);
Z3_ast verify_input_const(verify_ctx *c, const char *name);
/* Fills t[i] with the term of every tensor i of g. */
base_status verify_encode_graph(verify_ctx *c, verify_enc *e, const ir_graph *g,
                                Z3_ast *t);
void verify_assert_shapes(verify_ctx *c, const ir_graph *g, const Z3_ast *t);
/* Compiles a parsed axiom to a quantified formula with patterns. */
Z3_ast verify_compile_axiom(verify_ctx *c, const verify_form *f);

#endif
