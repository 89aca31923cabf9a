/* superopt.h: the embedding API of libsuperopt (module src/api/, prefix
 * api_), installed as <superopt/superopt.h>.
 *
 * A small C interface for programs that embed the optimizer: load a graph
 * (.graph text or ONNX), optimize it with proven rules, run it on the CPU or
 * a CUDA GPU with buffers the caller owns, export it as ONNX, free it. This
 * header is self-contained: it includes only standard headers and exposes
 * opaque handles, so the library's internals can change freely.
 *
 * Errors are values: every fallible function returns an api_code (API_OK is
 * 0) and, when err is not NULL, fills *err with the code and a one-line
 * message (with file:line:col where there is one). Nothing is printed and
 * the process never exits. A failed call leaves its outputs untouched and
 * allocates nothing. Handles are not thread-safe; distinct handles are.
 *
 * NULL: no function crashes on a NULL pointer argument. A fallible function
 * given NULL where it needs a pointer (a handle, a path, an output, an
 * options struct where noted, a buffer of an input/output array) returns
 * API_ERR_USAGE with a message naming it; err itself may always be NULL.
 * The accessors that cannot return a code say what they return for a NULL
 * graph: -1 for counts and ranks, NULL for names and text; the *_free
 * functions and the *_options_default functions do nothing with NULL.
 * Options out of the ranges documented below (those of the CLI's flags) are
 * API_ERR_USAGE too, never clamped.
 *
 * Data files (rules/default.rules, costdb/<device>.tsv) are found by
 * api_data_path: $SUPEROPT_DATA, then share/superopt next to the library or
 * the program that contains it (../share/superopt), then the build tree's
 * share/superopt. See docs/api.md.
 */
#ifndef SUPEROPT_API_H
#define SUPEROPT_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit-status-like codes, the same as the superopt CLI's (README.md). */
typedef enum api_code {
  API_OK = 0,
  API_ERR_USAGE = 1,      /* a bad argument (unknown device, NULL, range) */
  API_ERR_INPUT = 2,      /* bad input: file, syntax, shape, missing data */
  API_ERR_INTERNAL = 3,   /* out of memory, a broken invariant */
  API_ERR_UNSUPPORTED = 4 /* not in this build or on this machine (CUDA) */
} api_code;

typedef struct api_error {
  api_code code;
  char message[1024]; /* NUL-terminated; "" when code is API_OK */
} api_error;

/* "0.1.0" */
const char *api_version(void);
/* Several lines: version, git commit, build type, backends (CPU; CUDA with
 * the runtime, cuDNN and cuBLASLt versions and the executor's path, or why
 * not). Loads the CUDA executor (0.3 s, 200 MB) in CUDA builds. Static
 * storage, shared with api_build_info_brief. */
const char *api_build_info(void);
/* The same without loading the CUDA executor: its line is "CUDA: built
 * (executor not loaded)" in CUDA builds. */
const char *api_build_info_brief(void);
/* 1 when this build has the CUDA executor and a GPU is usable, else 0. */
int api_cuda_available(void);

/* ---- graphs ---------------------------------------------------------- */

typedef struct api_graph api_graph;

/* Loads a .graph file (with the values of its .safetensors sidecar, if
 * any: docs/reliability.md), or an ONNX model when path ends in ".onnx".
 * path, out: not NULL. */
api_code api_graph_load(const char *path, api_graph **out, api_error *err);
/* Parses .graph text (len bytes); name is used in messages (NULL:
 * "<text>"). text, out: not NULL. */
api_code api_graph_parse(const char *text, size_t len, const char *name,
                         api_graph **out, api_error *err);
/* Imports a serialized ONNX ModelProto (len bytes); name as above. data,
 * out: not NULL. */
api_code api_graph_load_onnx(const void *data, size_t len, const char *name,
                             api_graph **out, api_error *err);
void api_graph_free(api_graph *g); /* NULL is fine */

/* Counts; -1 when g is NULL. */
int api_graph_nnodes(const api_graph *g);  /* operators */
int api_graph_ninputs(const api_graph *g); /* graph inputs (not weights) */
int api_graph_noutputs(const api_graph *g);
/* Name of input/output i (0-based; NULL when out of range or g is NULL).
 * Owned by g. */
const char *api_graph_input_name(const api_graph *g, int i);
const char *api_graph_output_name(const api_graph *g, int i);
/* Rank of input/output i, its dims into dims[0..min(rank,max)-1]; -1 when
 * i is out of range, g is NULL, or dims is NULL with max > 0 (dims may be
 * NULL with max <= 0: the rank alone). */
int api_graph_input_shape(const api_graph *g, int i, int64_t *dims, int max);
int api_graph_output_shape(const api_graph *g, int i, int64_t *dims, int max);

/* The graph as canonical .graph text; malloc'd (free() it), NULL on OOM
 * or when g is NULL. */
char *api_graph_print(const api_graph *g);
/* Writes the graph atomically: ONNX (opset 17) when path ends in ".onnx",
 * where weights with values become initializers; else .graph text with the
 * values in the .safetensors sidecar beside it, the two as one unit. g, path:
 * not NULL. */
api_code api_graph_save(const api_graph *g, const char *path, api_error *err);
/* The graph as a serialized ONNX ModelProto: *data malloc'd (free() it).
 * g, data, len: not NULL. */
api_code api_graph_export_onnx(const api_graph *g, void **data, size_t *len,
                               api_error *err);

/* ---- optimize -------------------------------------------------------- */

/* Progress of api_optimize: the stage starting ("rules", "batch", "costs",
 * "passes", "search", "splits", "prune", "reprove", "fuse", "order",
 * "check": the
 * stages of `superopt optimize --list-stages`), elapsed seconds since the
 * call began; in "search", called again before each region: done regions
 * of total searched in the current pass (the search makes 2 passes over
 * shifted regions, done restarting at 0), else done and total are 0.
 * Called from the calling thread. */
typedef void (*api_progress_fn)(void *u, const char *stage, int done, int total,
                                double elapsed_s);

typedef struct api_optimize_options {
  const char *device; /* cost model: h100 (default; also for NULL), h200,
                         h100-tf32, h200-tf32, cpu */
  const char *rules;  /* rule file; NULL: $SUPEROPT_RULES when set, else
                         the installed default.rules (as the CLI) */
  const char *db;     /* cost database; NULL: as `superopt costdb` */
  double alpha;       /* expand graphs costing <= alpha x the best (1.05);
                         0.5..100 */
  int budget;         /* expansions per region (1000); 0..1e9 */
  int patience;       /* expansions without progress per region (100); 0..1e9 */
  int max_depth;      /* rewrites from the input (-1: unlimited); -1..1e6 */
  double time_limit;  /* seconds, at most 1e6; <= 0: none */
  int batch;          /* 1..1e6: rebatch the graph to this batch first; 0:
                         keep it */
  int check;          /* 1 (default): check the result on the CPU executor
                         (relative error <= 1e-4), fail if it differs; 0 */
  int allow_unproven; /* 1: also use unproven and unverified rules; 0 */
  int mutants;        /* 1 (default): partially equivalent mutants with
                         corrections join the search where they pay
                         (verified by the box argument, not proven);
                         0: proven rewrites only */
  int fuse;           /* 1 (default): element-wise chains and attention
                         into fused nodes where cheaper (the CLI's default;
                         0 as `optimize --no-fuse` or an .onnx output: ONNX
                         has no fused operator) */
  int hand_passes;    /* 0 (default): activation fusion and sibling merging
                         as the pass rules (rules/passes.rules); 1: the
                         hand-written passes (`--passes hand`) */
  api_progress_fn progress; /* NULL (default): none */
  void *progress_u;         /* passed to progress */
} api_optimize_options;

/* Fills o with the defaults above (nothing when o is NULL). */
void api_optimize_options_default(api_optimize_options *o);

/* The same counts `superopt optimize` prints, from the same pipeline. */
typedef struct api_report {
  double cost_before_us, cost_after_us; /* the cost model's totals (after:
                                           of the graph returned, fused) */
  int estimated; /* 1: some operator cost was a roofline estimate */
  int nodes_before, nodes_after;
  int rules, rules_applied; /* usable rule directions; rule uses in the
                               result (forward and backward, pass rules
                               included) */
  int expanded;             /* graphs expanded by the search */
  int bn_folded;
  int acts_fused;       /* activations fused into convolutions and matmuls, by
                           the hand-written pass and by pass rules */
  int merged;           /* sibling groups merged, by hand and by pass rules */
  double seconds;       /* search time (passes to dead code) */
  double max_rel_error; /* of the check; -1 when not checked */
  int mutants_applied;  /* mutants taken (verified, not proven) */
  double mutants_saved_us; /* their saving, included in cost_after_us */
  int pass_rules_applied;  /* of rules_applied, uses of pass rules */
  int acts_unfused;        /* activations a pass rule used backward took
                              back out of a convolution or matmul */
  int fused_nodes, attention_nodes; /* made by fusion */
  int fused_ops;                    /* operators the fused nodes replace */
  int moved;                        /* shortcuts the node order moved */
  double cost_unfused_us; /* the search's result's cost, before fusion */
  /* seconds: reading and compiling the rules, fusion, the check */
  double rules_seconds, fuse_seconds, check_seconds;
  int rules_reproved; /* applied rules the verifier proved again */
  int rules_demoted;  /* labelled proven, not proven again: not applied
                         (the optimization was run again without them) */
} api_report;

/* Optimizes g into a new graph *out (g is unchanged). g, out: not NULL; o
 * NULL: the defaults; rep may be NULL. */
api_code api_optimize(const api_graph *g, const api_optimize_options *o,
                      api_graph **out, api_report *rep, api_error *err);

/* ---- run ------------------------------------------------------------- */

/* A graph prepared for repeated runs on one device ("cpu" or "cuda"):
 * weights are loaded once (their values, or seeded random ones for weights
 * without values); each run reads the inputs from caller buffers and writes
 * the outputs to caller buffers. Host buffers, float32, row-major, in the
 * order of api_graph_input_name / api_graph_output_name (or, on CUDA,
 * device memory: api_runner_run_device). The runner keeps its own copy of
 * the graph: g may be freed after. */
typedef struct api_runner api_runner;

typedef struct api_run_options {
  const char *device; /* "cpu" (default; also for NULL) or "cuda" */
  int threads;        /* CPU threads, 0..1024 (0: all cores) */
  uint64_t seed;      /* seed of weights without values (1) */
  int fp32_strict;    /* CUDA, 1: no TF32 in convolutions and matmuls; 0 */
  int streams;        /* CUDA: independent branches side by side on up to
                         this many streams, 0..8 (0, the default: up to 8
                         where the replay is faster; 1: one stream) */
} api_run_options;

void api_run_options_default(api_run_options *o); /* nothing for NULL */

/* g, out: not NULL; o NULL: the defaults. */
api_code api_runner_new(const api_graph *g, const api_run_options *o,
                        api_runner **out, api_error *err);
/* inputs[i]: api_graph_input_shape's element count floats; outputs[i]
 * likewise for the outputs. r, the arrays and every buffer in them: not
 * NULL (an array may be NULL when the graph has no input / output). */
api_code api_runner_run(api_runner *r, const float *const *inputs,
                        float *const *outputs, api_error *err);
/* CUDA runners: inputs and outputs in GPU memory of the runner's device
 * (e.g. torch tensors' data_ptr()), copied on the runner's own stream: the
 * caller makes sure its inputs are ready (synchronizes its stream) before;
 * the outputs are complete when the call returns. */
api_code api_runner_run_device(api_runner *r, const void *const *inputs,
                               void *const *outputs, api_error *err);
void api_runner_free(api_runner *r); /* NULL is fine */

/* One-shot: api_runner_new + api_runner_run + api_runner_free (their NULL
 * rules). */
api_code api_graph_run(const api_graph *g, const api_run_options *o,
                       const float *const *inputs, float *const *outputs,
                       api_error *err);

/* ---- data files ------------------------------------------------------ */

/* Finds data file rel (e.g. "rules/default.rules", "costdb") in the data
 * directories (see the top of this file) and writes its path to buf. When
 * none has it: API_ERR_INPUT, with a message listing every path tried.
 * rel, buf: not NULL; n > 0. */
api_code api_data_path(const char *rel, char *buf, size_t n, api_error *err);

#ifdef __cplusplus
}
#endif

#endif
