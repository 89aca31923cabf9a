/* exec.h: the CPU reference executor.
 *
 * Runs an ir_graph on float32 data. It is the ground truth for fingerprints,
 * rule re-tests and end-to-end checks, so every kernel is written to be
 * obviously correct first and reasonably fast second (im2col + a matrix
 * product for conv, large products by OpenBLAS's sgemm where the build has
 * it, OpenMP over the cores where it matters). Results do not depend on the
 * thread count: every output element is computed by one thread in a fixed
 * order.
 *
 * Threads: the executor and OpenBLAS share OpenMP's threads, never more:
 * ex_options.threads when non-zero (`run --threads`), else OMP_NUM_THREADS,
 * else every core. Processes that run side by side (several optimizes at
 * once) each get OMP_NUM_THREADS = cores / processes; the CLI's executor
 * commands let idle threads sleep (OMP_WAIT_POLICY=passive, src/cli/main.c;
 * docs/notes/benchmarks.md, "CPU seconds of optimize").
 *
 * Values live in an ex_values: one float buffer per tensor of the graph
 * (NULL until computed). Inputs and weights are filled by ex_fill_random
 * (seeded, per tensor name, so two graphs that share input names get the
 * same values) or by the caller.
 */
#ifndef SUPEROPT_EXEC_H
#define SUPEROPT_EXEC_H

#include "../ir/ir.h"

/* One kernel argument: a shape and its row-major data. */
typedef struct ex_arg {
  ir_shape shape;
  float *data;
} ex_arg;

/* A reference kernel: computes out[0..n->nout-1] (buffers allocated by the
 * caller, shapes set) from in[0..n->nin-1]. Returns BASE_OK, or BASE_ERR_NOMEM
 * when scratch memory runs out. Shapes have passed the operator's shape rule
 * and n->a holds normalised parameters (resolved pads and axes). */
typedef base_status (*ex_kernel)(const ir_node *n, const ex_arg *in,
                                 ex_arg *out);

#define OP(ID, name, inputs, params, ...)                                      \
  base_status ex_ref_##name(const ir_node *n, const ex_arg *in, ex_arg *out);
#include "../ir/ops.def"
#undef OP

ex_kernel ex_kernel_of(ir_opcode op);

typedef struct ex_values {
  int32_t n; /* = graph's ntensors */
  float **v; /* v[t]: data of tensor t (malloc'd), or NULL */
} ex_values;

ex_values *ex_values_new(const ir_graph *g); /* all NULL; NULL on OOM */
void ex_values_free(ex_values *v);

/* Deterministic pseudo-random uniform floats in [lo, hi), from (seed, key). */
void ex_random_fill(float *dst, int64_t n, uint64_t seed, uint64_t key,
                    float lo, float hi);
/* Fills every input and weight of g that has no value yet: weights with
 * known data get a copy of it, the rest seeded random values drawn by the
 * init hint of their first consumer (see ops.def), looking through
 * weight-only nodes of the weight's own shape (docs/architecture.md). */
base_status ex_fill_random(const ir_graph *g, ex_values *v, uint64_t seed,
                           base_diag *d);
/* The same with every float input and weight drawn (not those with known
 * data) multiplied by scale, but for the gains: fan-in and positive weights
 * (convolution kernels, matmul weights, batchnorm and layernorm scales and
 * variances, divisors), which keep their range so that a deep network's
 * activations do not grow by the scale at every layer. */
base_status ex_fill_random_scaled(const ir_graph *g, ex_values *v,
                                  uint64_t seed, float scale, base_diag *d);
/* The same, but that with redraw the fan-in weights with known data
 * (convolution kernels and matmul weights) are drawn as if they
 * had none: the check's rounds where the values given make every output
 * zero (torchvision's ViT zeroes its classifier head). */
base_status ex_fill_random_as(const ir_graph *g, ex_values *v, uint64_t seed,
                              float scale, int redraw, base_diag *d);

typedef struct ex_options {
  int threads;  /* 0 = all cores */
  int keep_all; /* keep intermediates (else freed after their last use) */
} ex_options;

/* Computes every node of g in order. Inputs and weights must be filled.
 * Output tensors (and, with keep_all, every tensor) hold values after. */
base_status ex_run(const ir_graph *g, ex_values *v, const ex_options *o,
                   base_diag *d);

/* Applies a fused activation in place. */
void ex_activate(float *x, int64_t n, int act);
/* o[i] = op(x[i]) for i < n (o may be x), op an ew.def row (its C
 * expression); BASE_ERR_PARAM for any other operator. */
base_status ex_ew_apply(ir_opcode op, const float *x, float *o, int64_t n);

/* C[m,n] (+)= A[m,k] * B[k,n], all row-major with leading dimensions lda,
 * ldb, ldc. accumulate=0 overwrites C. Parallel over tiles of C; products of
 * 2^17 multiply-adds or more by OpenBLAS where built with it (gemm.c). */
void ex_gemm(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc,
             int accumulate);

/* Gives b (an optimized or mutated graph) a's inputs and weights, a filled
 * (ex_fill_random): each leaf of b that a has by name and shape points at
 * a's buffer (vb->v[t] = va->v[s], shared[t] = 1; shared holds
 * b->ntensors bytes, zeroed), a half leaf reading a wider one gets its own
 * rounded copy. A leaf of b with known values runs on them: it is shared
 * only when a's namesake holds the same type and bits, else left for
 * ex_fill_random(b, vb, ...) to copy (call it next). BASE_ERR_SHAPE when a
 * leaf of b without values of its own is not an input or weight of a of
 * that shape; BASE_ERR_PARAM when b reads a weight without values whose
 * namesake has some (written, b would run on others). The rule of the
 * end-to-end check and of mutant_float_check. */
base_status ex_share_leaves(const ir_graph *a, const ex_values *va,
                            const ir_graph *b, ex_values *vb,
                            unsigned char *shared, base_diag *d);
/* Frees vb but for the buffers it shares with a (ex_share_leaves). */
void ex_values_free_shared(ex_values *vb, const unsigned char *shared);

/* ---- end-to-end check ---------------------------------------------- */

/* Runs a and b on the CPU executor with the same inputs and weights (drawn
 * for a with seed at scale 1; b reads the same buffers of those a has by
 * name, but for a weight of b with known values, which runs on its own
 * values unless they are a's bit for bit) and sets *max_err to the largest
 * |a - b| over each output divided by that output's largest finite |a|
 * (elements where a is not finite are not compared). One round of
 * ex_check_rounds, which optimize runs. BASE_ERR_SHAPE when the outputs do
 * not correspond, or b needs a weight a lacks; BASE_ERR_PARAM when a weight
 * of b has no values and a's has (written, b would run on others). */
base_status ex_check(const ir_graph *a, const ir_graph *b, uint64_t seed,
                     double *max_err, base_diag *d);

/* The end-to-end check of an optimization (optimize, api_optimize): a and b
 * run in rounds, round i with seed seed + i and every input and weight drawn
 * at scale[i] (ex_fill_random_scaled: 1, 10, 1000 by default, so that
 * activations cross clip bounds and exp and division see large values), and
 * compared element by element: |a - b| <= atol * max|a| + rtol * |a|, with
 * max|a| the largest finite |a| of that output in that round. Elements where
 * a is not finite are not compared (the original itself overflowed); b not
 * finite where a is fails. At a batch over late_batch the rounds after the
 * first run on both graphs rebatched (EX_CHECK_LATE_BATCH). Where the
 * original's outputs are all zero in every round on the weights' known
 * values, the rounds run again with the fan-in weights drawn
 * (ex_check_result.redrawn). A test on a few points, not a proof. */
#define EX_CHECK_MAX_ROUNDS 8
/* The memo of a round's products (the optimized graph reuses the results of
 * products the original computed on the same values: memo.c), at most this
 * many bytes of results (a quarter of it in the first round); the outputs
 * are the same bits without it. */
#define EX_CHECK_MEMO_BYTES ((size_t)1 << 30)
/* Rounds after the first run on copies of both graphs rebatched to this
 * batch (ir_rebatch) when the graphs' batch (dim 0 of their first input) is
 * larger and both rebatch: ir_rebatch proves that no operator of either
 * graph computes across the batch's rows, and the copies' inputs are the
 * first rows of what the whole batch would have drawn, their weights the
 * same. The first round runs the graphs as written, every row. */
#define EX_CHECK_LATE_BATCH 2

typedef struct ex_check_opts {
  uint64_t seed;                    /* round i: seed + i (1) */
  int rounds;                       /* 1..EX_CHECK_MAX_ROUNDS (3) */
  float scale[EX_CHECK_MAX_ROUNDS]; /* (1, 10, 1000) */
  double rtol, atol;                /* (1e-4, 1e-5) */
  size_t memo_bytes;  /* EX_CHECK_MEMO_BYTES; 0: every product computed */
  int64_t late_batch; /* EX_CHECK_LATE_BATCH; 0: every round as written */
  int run_same;       /* 0: graphs with the same text and weights are not run */
  int all_late;       /* 1: round 0 also at the late batch (more seeds) */
} ex_check_opts;

void ex_check_opts_default(ex_check_opts *o);

typedef struct ex_check_result {
  double rtol, atol; /* the tolerance applied (opts', or a half type's) */
  double worst;      /* largest |a - b| / tolerance: the check passes if <= 1 */
  double max_err;    /* largest |a - b| / max|a| of an output (as ex_check) */
  /* each round's largest relative L2 error of an output: ||a - b|| / ||a||
   * over the elements where a is finite */
  double round_l2[EX_CHECK_MAX_ROUNDS];
  int rounds;                /* rounds run */
  int64_t compared, skipped; /* elements compared; not (a not finite) */
  /* where worst is: round, its seed and scale, output, element, values */
  int round, output;
  uint64_t seed;
  float scale;
  int64_t index;
  float va, vb;
  /* products of the original's runs recorded in the memo; products of the
   * optimized graph's runs taken from it instead of computed */
  int64_t products_recorded, products_reused;
  /* the graphs' batch; the batch the rounds after the first ran at (batch:
   * the graphs as written, then late_refused says why when a copy was
   * refused: an operator computes across the batch's rows) */
  int64_t batch, late_batch;
  /* the graphs have the same canonical text and weight values: the
   * executor being deterministic, their outputs are the same bits, so no
   * round ran (rounds 0, worst and max_err 0) */
  int same;
  /* rounds whose original gave all-zero outputs (it could show no error);
   * redrawn: every round was, so they ran again with the fan-in weights'
   * values drawn (ex_fill_random_as), and these are those rounds' figures;
   * blind == rounds after that: no round could be redrawn (the optimized
   * graph has a fan-in weight's values of its own) or none showed more */
  int blind, redrawn;
  char late_refused[512]; /* ir_rebatch's message */
} ex_check_result;

/* Half precision (docs/half.md): when a or b holds f16 or bf16 tensors
 * (ir_graph_float_type), rtol and atol are at least
 *   ex_half_tolerance(t, D) = EX_HALF_TOL_K * u(t) * sqrt(D),
 * u the type's unit roundoff (ir_dtype_unit_roundoff: 2^-11 f16, 2^-8 bf16)
 * and D the longer of the two graphs' longest chains of nodes
 * (ex_graph_depth): each tensor rounded on the way errs by up to u, and
 * independent roundings add up like a random walk over the D steps. */
#define EX_HALF_TOL_K 4.0
double ex_half_tolerance(ir_dtype t, int depth); /* 0 for f32 */
int ex_graph_depth(const ir_graph *g); /* nodes on the longest path; -1 OOM */

/* Runs the check (opts NULL: the defaults). BASE_OK with r filled whether
 * the graphs agree or not (r->worst <= 1: they do); errors as ex_check's. */
base_status ex_check_rounds(const ir_graph *a, const ir_graph *b,
                            const ex_check_opts *opts, ex_check_result *r,
                            base_diag *d);

/* The half check's second test (docs/half.md, "When a half result fails
 * the check"): a half graph amplifies its roundings as its function does,
 * so a network whose outputs the model's own half copy already misses by
 * more than ex_half_tolerance (measured: MobileNet-V3 with calibrated
 * batch norms, inputs at scale 10, 0.43 of max|a| in bf16) fails the check
 * however right the rewrites are. A result res that failed it against ref
 * (the model f in the half type) is still taken when both of
 *   (1) wide, the result as it stood before the dtype stage (float32),
 *       matches f at opts' float32 tolerance in every round: every rule,
 *       pass and search step checked as a float32 optimize checks them;
 *   (2) in every round i, res's relative L2 error against f (round_l2:
 *       ||res - f|| / ||f||, the largest over the outputs; steadier than
 *       the largest element's) is at most max(tol, EX_HALF_REF_K times
 *       ref's largest in rounds 1..i): what the dtype, fuse and lower
 *       stages add rounds no worse than twice the model's own half copy
 *       (the accuracy issue 42 asks) at the first round's scale, and at
 *       the larger scales of the later ones no worse than twice what the
 *       half copy already missed by at a scale up to theirs (where both are
 *       mostly noise, one seed's error varies by more than 2x: RegNetY's
 *       half copy 0.19 to 0.54 at scale 1000); once the half copy has
 *       overflowed where f has not (its error infinite: f16 at scale
 *       1000), later rounds can only show that res does too.
 * A round over its bound where the half copy itself is over tol (both
 * mostly noise: on MobileNet-V3 f16 at scale 10, res's error over the
 * copy's ranged 0.43 to 1.5 over eight seeds here, 2.3 on the H200 with
 * another export) is judged again over EX_HALF_MORE_SEEDS more seeds at
 * its scale (seeds after the rounds', every graph at the late batch): it
 * holds when wide stays within float32's tolerance on them and res's root
 * mean square error over the round's seed and those is at most
 * max(tol, EX_HALF_REF_K times the copy's, and its largest of the earlier
 * rounds). All run at opts' seeds and scales. */
#define EX_HALF_REF_K 2.0
#define EX_HALF_MORE_SEEDS 4
typedef struct ex_half_second {
  ex_check_result wide; /* wide against f: (1), at float32's tolerance */
  ex_check_result ref;  /* the model in the half type against f */
  ex_check_result res;  /* the result against f */
  double tol;           /* ex_half_tolerance: each round's bound's floor */
  int round;            /* the first round over its bound, -1: none */
  int pass;             /* (1) and (2) hold */
  /* the round judged again over more seeds (-1: none), the seeds in all,
   * res's and the copy's root mean square error over them, wide's worst
   * on the added seeds */
  int more_round, more_seeds, more_pass;
  double more_res, more_ref, more_wide;
} ex_half_second;
base_status ex_check_half_second(const ir_graph *f, const ir_graph *wide,
                                 const ir_graph *ref, const ir_graph *res,
                                 const ex_check_opts *opts, ex_half_second *r,
                                 base_diag *d);
/* "e1 (r1), e2 (r2), ...": each round's L2 error of the result and, in
 * brackets, of the model's half copy (for messages); then, when a round
 * was judged over more seeds, "; round i over n seeds: e (r)". */
void ex_half_second_rounds(const ex_half_second *h, char *buf, size_t n);

#endif
