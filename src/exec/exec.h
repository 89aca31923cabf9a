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
 * docs/benchmarks.md, "CPU seconds of optimize").
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

/* C[m,n] (+)= A[m,k] * B[k,n], all row-major with leading dimensions lda,
 * ldb, ldc. accumulate=0 overwrites C. Parallel over tiles of C; products of
 * 2^17 multiply-adds or more by OpenBLAS where built with it (gemm.c). */
void ex_gemm(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc,
             int accumulate);

/* ---- end-to-end check ---------------------------------------------- */

/* Runs a and b on the CPU executor with the same inputs and weights (drawn
 * for a with seed; b's inputs and weights copied from a's by name) and sets
 * *max_err to the largest |a - b| over each output divided by that output's
 * largest |a|. BASE_ERR_SHAPE when the outputs do not correspond, or b needs
 * a weight a lacks. */
base_status ex_check(const ir_graph *a, const ir_graph *b, uint64_t seed,
                     double *max_err, base_diag *d);

#endif
