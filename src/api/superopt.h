/* superopt.h: the embedding API of libsuperopt (module src/api/, prefix
 * api_), installed as <superopt/superopt.h>.
 *
 * A small C interface for programs that embed the optimizer: load a graph
 * (.graph text or ONNX, with `superopt import`'s options), optimize it with
 * proven rules, run it on the CPU or a CUDA GPU with buffers the caller owns
 * (float32, int64, int32, bool), set weight values, export it as ONNX (as a
 * drop-in for the original model), generate and export rules, free it. Each
 * call runs the library function the matching CLI command runs. This
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

/* ---- element types --------------------------------------------------- */

/* The element type of a tensor or a caller's buffer. A graph's tensors are
 * API_F32, API_I64 (token ids, indices) or API_BOOL; API_I32 is a buffer
 * type only, accepted for and converted to an API_I64 tensor (ONNX int32
 * inputs are imported as int64). The executors hold integers in float32
 * slots: int64 values must lie within +-2^24 (16777216). */
typedef enum api_dtype {
  API_F32 = 0,  /* float, 4 bytes */
  API_I64 = 1,  /* int64_t, 8 bytes */
  API_BOOL = 2, /* one byte, 0 or not */
  API_I32 = 3   /* int32_t, 4 bytes (buffers only) */
} api_dtype;

/* "float32", "int64", "bool", "int32"; NULL for anything else. */
const char *api_dtype_name(int dtype);
/* Bytes per element; 0 for an unknown dtype. */
size_t api_dtype_size(int dtype);
/* Element type (api_dtype) of input/output i; -1 when out of range or g is
 * NULL. */
int api_graph_input_dtype(const api_graph *g, int i);
int api_graph_output_dtype(const api_graph *g, int i);

/* Weights: the tensors a runner fills once (values from the model, or
 * seeded random ones), by index 0..api_graph_nweights-1 in declaration
 * order; NULL / -1 as for inputs. */
int api_graph_nweights(const api_graph *g);
const char *api_graph_weight_name(const api_graph *g, int i);
int api_graph_weight_shape(const api_graph *g, int i, int64_t *dims, int max);
int api_graph_weight_dtype(const api_graph *g, int i);
/* 1 when weight i has values (ONNX initializers, a sidecar, set), 0 when
 * a runner draws seeded random ones, -1 out of range. */
int api_graph_weight_has_values(const api_graph *g, int i);

/* A caller's host buffer: nbytes must be the tensor's element count times
 * api_dtype_size(dtype). */
typedef struct api_tensor {
  int dtype;     /* api_dtype */
  void *data;    /* not NULL (read only where the call reads it) */
  size_t nbytes; /* size of data */
} api_tensor;

/* Gives weight `name` of g the values in v (dims[0..rank-1] must be the
 * weight's shape, v->dtype its type, API_I32 for API_I64), copied into g;
 * a runner made from g after uses them, and so do api_graph_save and the
 * ONNX export. API_ERR_INPUT when g has no weight of that name, the shape
 * differs or an int64 value is beyond +-2^24; API_ERR_USAGE when v's dtype
 * or nbytes does not fit (as api_runner_run_typed); g is then unchanged. g,
 * name, v: not NULL; dims may be NULL when rank is 0. */
api_code api_graph_set_weight(api_graph *g, const char *name,
                              const api_tensor *v, const int64_t *dims,
                              int rank, api_error *err);
/* Reads weight values from a safetensors file (the .graph sidecar format,
 * docs/graph-format.md): every tensor in it must be a weight of g of the
 * same shape and type; on an error g is unchanged. g, path: not NULL. */
api_code api_graph_load_weights(api_graph *g, const char *path, api_error *err);

/* ---- import and export options (`superopt import` / `export`) -------- */

/* The options of `superopt import` (src/onnx: ox_options): input shape
 * overrides as --input-shape's "NAME=1x3x224x224" (for inputs the model
 * leaves dynamic), --data-input names (the inputs that are data: every
 * other float input becomes a weight), and --dim's "NAME=SIZE" (the size
 * of the dynamic dimension NAME, its dim_param, in every input: "seq=128").
 * At most 16 of each. Arrays may be NULL when their count is 0; a caller
 * that zero-fills the struct gets no dims. */
typedef struct api_import_options {
  const char *const *input_shapes;
  int ninput_shapes;
  const char *const *data_inputs;
  int ndata_inputs;
  const char *const *dims;
  int ndims;
} api_import_options;

/* api_graph_load / api_graph_load_onnx with import options (o NULL: none,
 * as the plain calls). A bad option is API_ERR_USAGE with the CLI's
 * message ("bad --input-shape 'x=3xq' (expected NAME=1x3x224x224)", "bad
 * --dim 'seq' (expected NAME=SIZE, e.g. seq=128)"); an
 * option naming no input of the model API_ERR_INPUT. api_graph_load_ex
 * refuses options for a .graph file (API_ERR_USAGE). */
api_code api_graph_load_ex(const char *path, const api_import_options *o,
                           api_graph **out, api_error *err);
api_code api_graph_load_onnx_ex(const void *data, size_t len, const char *name,
                                const api_import_options *o, api_graph **out,
                                api_error *err);

/* The options of `superopt export` (ox_export_file_ex). */
typedef struct api_export_options {
  /* --like: path of the original ONNX model (NULL: none). The export is a
   * drop-in for it: graph inputs, outputs and initializers get back its
   * names (t_191 -> 191), and its opset is kept where the operators allow
   * (docs/onnx.md). Fused and attention nodes are always written as ONNX
   * operators (their bodies). */
  const char *like;
} api_export_options;

/* What the export did (the line `superopt export` prints). */
typedef struct api_export_report {
  int opset;           /* written */
  int like_opset;      /* the original's; 0 without like */
  char opset_why[160]; /* why opset > like_opset; "" when not raised */
  int renamed;         /* names given back from the original */
  int folded;          /* weight-preprocessing operators computed into
                          initializers */
  int at_load;         /* kept as nodes (their weights have no values) */
} api_export_report;

/* Writes g as ONNX to path, atomically, as `superopt export G -o path
 * [--like o->like]`. o, rep: may be NULL. g, path: not NULL. */
api_code api_graph_save_onnx(const api_graph *g, const char *path,
                             const api_export_options *o,
                             api_export_report *rep, api_error *err);
/* The same as serialized bytes: *data malloc'd (free() it). g, data, len:
 * not NULL. */
api_code api_graph_export_onnx_ex(const api_graph *g,
                                  const api_export_options *o, void **data,
                                  size_t *len, api_export_report *rep,
                                  api_error *err);

/* ---- optimize -------------------------------------------------------- */

/* Progress of api_optimize: the stage starting ("rules", "batch", "costs",
 * "passes", "search", "splits", "prune", "reprove", "fuse", "lower",
 * "check": the
 * stages of `superopt optimize --list-stages`), elapsed seconds since the
 * call began; in "search", called again before each region: done regions
 * of total searched in the current pass (the search makes 2 passes over
 * shifted regions, done restarting at 0), else done and total are 0.
 * Called from the calling thread. */
typedef void (*api_progress_fn)(void *u, const char *stage, int done, int total,
                                double elapsed_s);

/* api_optimize_options.passes: what runs before the search. */
typedef enum api_passes {
  API_PASSES_NONE = 0,  /* the default: no pass (`--passes none`); the rules
                           fold, fuse and merge */
  API_PASSES_HAND = 1,  /* the ablation: the hand-written passes
                           (`--passes hand`) */
  API_PASSES_RULES = 2, /* the ablation, the old default: activation fusion
                           and sibling merging as the pass rules
                           (rules/passes.rules), the rest by hand
                           (`--passes rules`) */
} api_passes;

typedef struct api_optimize_options {
  const char *device; /* cost model: h100 (default; also for NULL), h200,
                         h100-tf32, h200-tf32, cpu */
  const char *rules;  /* rule file, or several separated by ':' read in
                         order as one set (a rule id once in all); NULL:
                         $SUPEROPT_RULES when set, else the installed
                         default.rules and extended.rules (as the CLI) */
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
  int passes;         /* an api_passes: API_PASSES_NONE (default), or the
                         ablation API_PASSES_HAND or API_PASSES_RULES */
  api_progress_fn progress; /* NULL (default): none */
  void *progress_u;         /* passed to progress */
  int region_size;          /* operators per search region (48); 1..100000 */
  int merge;                /* 1 (default): sibling convolutions/matmuls merged
                               by hand; 0 as `--no-merge` */
  int fuse_candidates;      /* each region's K cheapest graphs fused, the
                               cheapest kept (8); 0..1000 */
  int mutants_estimated;    /* 1: also mutants whose saving rests on estimated
                               costs (`--mutants-estimated`); 0 */
  int no_rules;             /* 1: no rules file, the pass rules only (with
                               API_PASSES_RULES) or none (`--no-rules`;
                               rules must be NULL); 0 */
  const char *dtype; /* "f16" or "bf16": the result in that type (`--dtype`,
                        docs/half.md); NULL (default): the model's own */
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
  int moved;                        /* shortcuts the lower stage moved
                                       ahead of the chain they join */
  double cost_unfused_us; /* the search's result's cost, before fusion */
  /* seconds: reading and compiling the rules, fusion, the check */
  double rules_seconds, fuse_seconds, check_seconds;
  int rules_reproved; /* applied rules the verifier proved again */
  int rules_demoted;  /* labelled proven, not proven again: not applied
                         (the optimization was run again without them) */
  /* The rest of the counts `superopt optimize` prints, line by line. */
  int rules_read;          /* "model: ... N rules" (pass rules too) */
  int cse, scales_folded;  /* passes: common subexpressions, scales */
  int acts_fused_by_rules; /* of acts_fused, by pass rules */
  int merged_by_rules;     /* of merged, by pass rules */
  int splits_merged;       /* nested splits folded */
  int generated, duplicates, rejected, queue_peak; /* search: */
  int regions, stopped_by_patience, fuse_chosen, stopped_by_time;
  int inst_proven, inst_refused; /* rule instances */
  /* mutants (mutant_apply_stats): overlapping is printed "not chosen" */
  int mutants_considered, mutants_not_cheaper, mutants_overlapping;
  int mutants_refused, mutants_unmeasured;
  int fuse_recomputed, fuse_rejected; /* fusion: */
  double fuse_cost_before_us, fuse_cost_after_us;
  int rules_unproven;       /* re-proof: applied rules not labelled proven */
  int check_rounds;         /* check: rounds run, elements compared, the */
  long long check_compared; /* worst element's share of the tolerance */
  double check_worst;       /* (-1 when not checked) */
  /* passes: movement operators removed, RMSNorms formed, rotate_halves
   * folded into projections, identities dropped after the search */
  int moves_removed, rmsnorms, rotates_folded, identities_dropped;
  /* lower: epilogues, moves (act= on concat/split parts, pad+slice),
   * squeeze-and-excitation, channel shuffles, attention in row layout,
   * move nodes and the movement operators they replace, patch embeddings
   * made matmuls */
  int lower_epilogues, lower_moves, lower_se, lower_shuffles;
  int row_attention, move_nodes, move_node_ops, patch_embeddings;
  /* fusion: products whose bias and residual went into the layer norm's
   * fused row after them (fuse_peel) */
  int fuse_peeled;
} api_report;

/* Optimizes g into a new graph *out (g is unchanged). g, out: not NULL; o
 * NULL: the defaults; rep may be NULL. */
api_code api_optimize(const api_graph *g, const api_optimize_options *o,
                      api_graph **out, api_report *rep, api_error *err);

/* ---- run ------------------------------------------------------------- */

/* A graph prepared for repeated runs on one device ("cpu" or "cuda"):
 * weights are loaded once (their values, or seeded random ones for weights
 * without values); each run reads the inputs from caller buffers and writes
 * the outputs to caller buffers. Host buffers, row-major, in the order of
 * api_graph_input_name / api_graph_output_name: float32 slots for every
 * tensor (api_runner_run: int64 and bool tensors as float32 values), or
 * typed (api_runner_run_typed); on CUDA also device memory
 * (api_runner_run_device, float32 slots). The runner keeps its own copy of
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

/* Runs with typed host buffers, in interface order: each buffer's dtype
 * must be its tensor's (api_graph_input_dtype / _output_dtype; API_I32 is
 * accepted for an API_I64 tensor, e.g. int32 token ids) and its nbytes the
 * tensor's element count times the dtype's size: else API_ERR_USAGE naming
 * the tensor, the two types or sizes. An int64 input beyond +-2^24 is
 * API_ERR_INPUT (the executors hold integers in float32). CPU and CUDA
 * runners. r, the arrays and every data pointer: not NULL (an array may be
 * NULL when the graph has no input / output). */
api_code api_runner_run_typed(api_runner *r, const api_tensor *inputs,
                              const api_tensor *outputs, api_error *err);
/* Gives weight `name` of the runner's graph the values in v, for every run
 * after (checked as api_graph_set_weight: name, shape dims[0..rank-1],
 * type; the runner unchanged on an error). CPU runners; on a CUDA runner,
 * which prepared its weights once on the GPU, API_ERR_UNSUPPORTED: set the
 * values on the graph (api_graph_set_weight) before api_runner_new. */
api_code api_runner_set_weight(api_runner *r, const char *name,
                               const api_tensor *v, const int64_t *dims,
                               int rank, api_error *err);

/* One-shot: api_runner_new + api_runner_run + api_runner_free (their NULL
 * rules). */
api_code api_graph_run(const api_graph *g, const api_run_options *o,
                       const float *const *inputs, float *const *outputs,
                       api_error *err);

/* ---- rules: generation and export ------------------------------------ */

/* Progress of api_gen_rules: stage ("enumerate", "pair", "confirm",
 * "verify"), done of total units. */
typedef void (*api_gen_progress_fn)(void *u, const char *stage, double done,
                                    double total);

/* The options of `superopt gen-rules` (src/gen: gen_rules). */
typedef struct api_gen_options {
  int max_ops;        /* largest graph, in operators (3); 1..5 (5 only with
                         ops) */
  const char *ops;    /* comma-separated operators; NULL: all of
                         docs/generation.md */
  const char *pairs;  /* "spanning" (default, also NULL), "smallest", "all" */
  int threads;        /* 0 (default): all cores; 1..1024 */
  int z3_timeout_ms;  /* per proof (10000); 1..3600000 */
  int keep_unproven;  /* 1: write unproven rules too, marked; 0 */
  int no_normal_form; /* 1: no normal-form pruning (far slower); 0 */
  int split;          /* 0 (default) or 1..256: `--split` */
  const char *checkpoint;       /* `--checkpoint DIR`; NULL: none */
  api_gen_progress_fn progress; /* NULL: none */
  void *progress_u;
} api_gen_options;

void api_gen_options_default(api_gen_options *o); /* nothing for NULL */

/* The counts of gen-rules' summary. */
typedef struct api_gen_report {
  long long graphs;  /* enumerated */
  long long buckets; /* fingerprint buckets */
  long long pairs;   /* candidate pairs */
  long long pruned;  /* pairs left after pruning */
  long long proven, unproven, written;
  double seconds; /* enumerate+fingerprint, prune, verify */
} api_gen_report;

/* Generates rules as `superopt gen-rules` and writes them atomically to
 * output (nothing written on an error). o NULL: the defaults; rep may be
 * NULL. Options out of range: API_ERR_USAGE with gen-rules' message. */
api_code api_gen_rules(const api_gen_options *o, const char *output,
                       api_gen_report *rep, api_error *err);

/* What api_export_rules did (the counts `superopt export-rules` prints). */
typedef struct api_rules_export_report {
  int exported;     /* rules written */
  int not_proven;   /* left out: not proven (all = 0) */
  int duplicates;   /* left out: the same as an earlier rule */
  int other_format; /* left out: the other Tensat format writes them */
  int unsupported;  /* left out: the format cannot express them */
} api_rules_export_report;

/* `superopt export-rules RULES --format F -o OUTPUT [--all]`: the proven
 * rules of the rule file rules (every rule when all) as format "taso-pb",
 * "tensat", "tensat-multi" or "json", written atomically to output. rep may
 * be NULL. rules, format, output: not NULL. */
api_code api_export_rules(const char *rules, const char *format, int all,
                          const char *output, api_rules_export_report *rep,
                          api_error *err);
/* The same into memory: *data malloc'd (free() it), *len bytes. */
api_code api_export_rules_mem(const char *rules, const char *format, int all,
                              void **data, size_t *len,
                              api_rules_export_report *rep, api_error *err);

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
