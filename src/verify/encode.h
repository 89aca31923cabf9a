/* encode.h: the verifier context and the Z3 encoding of graphs and axioms
 * (private to src/verify/).
 */
#ifndef SUPEROPT_VF_ENCODE_H
#define SUPEROPT_VF_ENCODE_H

#include <z3.h>

#include "vf_int.h"

#define VF_MAX_AXIOMS 256

struct vf_ctx {
  Z3_context z; /* non-refcounted: ASTs live until the scope is popped */
  Z3_solver s;  /* axioms asserted at the base scope */
  Z3_sort T, I; /* Tensor (uninterpreted) and Int */
  Z3_func_decl fn[VF_NOPFN];
  unsigned timeout_ms;
  const vf_axiom *ax[VF_MAX_AXIOMS]; /* the active axioms */
  Z3_ast track[VF_MAX_AXIOMS];       /* their tracking literals */
  int nax;
};

/* State of one graph encoding. */
typedef struct vf_enc {
  char generic[200]; /* operators encoded without axioms, ", "-separated */
} vf_enc;

Z3_ast vf_shape_code(vf_ctx *c, const ir_shape *s);
Z3_ast vf_input_const(vf_ctx *c, const char *name);
/* Fills t[i] with the term of every tensor i of g. */
ir_status vf_encode_graph(vf_ctx *c, vf_enc *e, const ir_graph *g, Z3_ast *t);
void vf_assert_shapes(vf_ctx *c, const ir_graph *g, const Z3_ast *t);
/* Compiles a parsed axiom to a quantified formula with patterns. */
Z3_ast vf_compile_axiom(vf_ctx *c, const vf_form *f);

#endif
