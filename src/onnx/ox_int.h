/* ox_int.h: what import.c and fold.c share, and export.c's dynamic
 * dimensions (dyn.c) (private to src/onnx).
 *
 * The importer folds every ONNX node whose inputs are all constants
 * (shape computations, masks built from shapes) on the host, through
 * ox_fold: values in double (int64 and bool too: exact for the integers
 * shapes hold), typed by ir_dtype.
 */
#ifndef SUPEROPT_OX_INT_H
#define SUPEROPT_OX_INT_H

#include "onnx.h"
#include "onnx.pb-c.h"

/* ONNX TensorProto data types the importer reads. */
enum {
  OX_DT_FLOAT = 1,
  OX_DT_UINT8 = 2,
  OX_DT_INT8 = 3,
  OX_DT_INT32 = 6,
  OX_DT_INT64 = 7,
  OX_DT_BOOL = 9,
  OX_DT_FLOAT16 = 10,
  OX_DT_DOUBLE = 11
};

/* The IR type an ONNX element type is held as (floats -> f32, integers ->
 * i64, bool -> bool); -1 for strings, complex and the like. */
int ox_ir_dtype(int64_t onnx_type);

/* A host constant: shape, IR type, values (malloc'd, numel of them, at
 * least one slot). */
typedef struct ox_host {
  ir_shape shape;
  int dtype; /* ir_dtype */
  double *v;
} ox_host;

/* Folds node n over its constant inputs in[0..nin-1] (in[k].v == NULL: an
 * absent optional input) into out[0..n->n_output-1]. BASE_ERR_UNKNOWN_OP
 * (nothing set): the operator has no folding here, its handler runs.
 * Other errors: err holds the message. */
base_status ox_fold(const Onnx__NodeProto *n, const ox_host *in, int nin,
                    ox_host *out, char *err, size_t errn);

/* Tensors whose bytes live in files beside the model (extdata.c). */
typedef struct ox_extdata {
  const char *model; /* the model's path (NULL: from bytes, no folder) */
  struct ox_extfile *files;
  int n;
} ox_extdata;

/* Whether t's bytes are external (data_location EXTERNAL or entries). */
int ox_ext_is_external(const Onnx__TensorProto *t);
/* t's raw bytes (*p, *len: mapped until ox_ext_close); errors (a location
 * outside the model's folder, a missing file, a range past its end) in
 * err. */
base_status ox_ext_bytes(ox_extdata *x, const Onnx__TensorProto *t,
                         const uint8_t **p, size_t *len, char *err,
                         size_t errn);
/* Unmaps every file x opened. */
void ox_ext_close(ox_extdata *x);

/* The original model's dynamic dimensions (dim_param) an export keeps
 * (dyn.c): param p (name[p], size val[p] in the graph) is kept when every
 * node carries it; e[p] holds, per tensor t and dimension k, the exponent
 * e[p][t * IR_MAX_RANK + k] of P in that dimension (c * val^e). */
#define OX_DYN_MAX 8
typedef struct ox_dyn_in {
  int tensor, axis, param; /* a graph input's dimension named param */
} ox_dyn_in;
typedef struct ox_dyn {
  int np;
  const char *name[OX_DYN_MAX];
  int64_t val[OX_DYN_MAX];
  int kept[OX_DYN_MAX];
  char why[OX_DYN_MAX][240]; /* why param p is fixed ("" when kept) */
  int8_t *e[OX_DYN_MAX];
  ox_dyn_in *in; /* malloc'd */
  int nin;
} ox_dyn;

/* Probes every kept param through g (nodes with skip[i] set are left out:
 * computed at export) and fixes those a node fixes (why[p]). */
base_status ox_dyn_solve(ox_dyn *y, const ir_graph *g,
                         const unsigned char *skip);
/* Reshape n's target written with 0 (a dimension copied from its input)
 * and -1 where a kept param lives, into t[0..n->a.nlist-1]; 0 when two
 * dimensions need -1 (*p_bad: a param of the second; may be NULL). */
int ox_dyn_reshape(const ox_dyn *y, const ir_graph *g, const ir_node *n,
                   int64_t *t, int *p_bad);
/* Whether dimension k of tensor t carries a kept param. */
int ox_dyn_has(const ox_dyn *y, int t, int k);
void ox_dyn_free(ox_dyn *y);

#endif
