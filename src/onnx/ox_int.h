/* ox_int.h: what import.c and fold.c share (private to src/onnx).
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

#endif
