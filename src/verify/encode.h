/* encode.h: the verifier context and the Z3 encoding of graphs and axioms
 * (private to src/verify/).
 */
#ifndef SUPEROPT_VF_ENCODE_H
#define SUPEROPT_VF_ENCODE_H

#include <z3.h>

#include "verify_int.h"

#define VERIFY_MAX_AXIOMS 256
/* Address space a context needs (guard.c; measured: a context with the
 * built-in axioms and a proof of a small rule take about 60 MiB of it). */
#define VERIFY_MIN_MEM ((uint64_t)96 << 20)

typedef struct verify_watch verify_watch;

struct verify_ctx {
  Z3_context z; /* non-refcounted: ASTs live until the scope is popped */
  Z3_solver s;  /* axioms asserted at the base scope */
  Z3_sort T, I; /* Tensor (uninterpreted) and Int */
  Z3_func_decl fn[VERIFY_NOPFN];
  unsigned timeout_ms;
  const verify_axiom *ax[VERIFY_MAX_AXIOMS]; /* the active axioms */
  Z3_ast track[VERIFY_MAX_AXIOMS];           /* their tracking literals */
  int nax;
  verify_watch *watch; /* interrupts a check past timeout_ms (guard.c) */
  base_status broken;  /* set by a failed proof: the solver's scopes are
                          unknown, so later proofs fail the same way */
};

/* ---- guard.c: errors, memory, the timeout -------------------------------
 * The error handler records the first Z3 error of the calling thread;
 * verify_z3_reset clears it (at the start of each public entry point).
 * While verify_z3_bad() holds, results of earlier Z3 calls may be NULL and
 * must not be passed to Z3 again. */
void verify_z3_on_error(Z3_context z, Z3_error_code e);
void verify_z3_reset(void);
int verify_z3_bad(void);
/* The recorded error as a status: BASE_ERR_NOMEM for Z3's out of memory,
 * else BASE_ERR_INTERNAL "Z3 failed WHAT: ...". */
base_status verify_z3_failed(verify_ctx *c, base_diag *d, const char *what);
/* Under an address-space limit: BASE_ERR_NOMEM when less than
 * VERIFY_MIN_MEM is left, else caps Z3's allocator below what is left. */
base_status verify_mem_check(base_diag *d);
/* A thread that calls Z3_interrupt(z) when a check runs past its deadline. */
verify_watch *verify_watch_start(Z3_context z, base_diag *d);
void verify_watch_arm(verify_watch *w, unsigned ms);
void verify_watch_disarm(verify_watch *w);
void verify_watch_stop(verify_watch *w);

/* moves.c: movement chains by their strided walks (see there). */
typedef struct verify_moves verify_moves;
verify_moves *verify_moves_new(void); /* NULL on OOM */
void verify_moves_free(verify_moves *m);
int verify_moves_wanted(const ir_graph *a, const ir_graph *b);
/* Records move node nd's output term out over its input term in and
 * asserts out = (movemap id base); nothing for other nodes. */
void verify_moves_note(verify_ctx *c, verify_moves *m, const ir_graph *g,
                       const ir_node *nd, Z3_ast in, Z3_ast out);

/* State of one graph encoding. */
typedef struct verify_enc {
  char generic[200];   /* operators encoded without axioms, ", "-separated */
  verify_moves *moves; /* where set, move chains by their walks (moves.c) */
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
