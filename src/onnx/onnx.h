/* onnx.h: ONNX import and export (module prefix ox_).
 *
 * ox_import reads an ONNX model (protobuf, through protobuf-c and the
 * onnx.proto Debian's libonnx-dev ships) into an ir_graph: each supported
 * ONNX operator maps onto IR operators, constants (initializers, Constant
 * nodes, Shape/Gather/Unsqueeze/Concat chains over them) are folded at
 * import, and graph inputs that only feed parameter slots (convolution and
 * Gemm weights, normalisation parameters) become weights. Initializers keep
 * their values. ox_export writes an ir_graph back as an ONNX model, as a
 * drop-in replacement of the original (its names and opset, weight
 * preprocessing folded into initializers).
 * The supported operators and their mapping are listed in docs/onnx.md.
 */
#ifndef SUPEROPT_ONNX_H
#define SUPEROPT_ONNX_H

#include "../ir/ir.h"

#define OX_MAX_SHAPES 16
/* doc_string of a graph input that export marks as a weight */
#define OX_WEIGHT_DOC "superopt:weight"

/* A user-given input shape, as in --input-shape name=1x3x224x224. */
typedef struct ox_shape_arg {
  char name[256];
  ir_shape shape;
} ox_shape_arg;

typedef struct ox_options {
  int nshapes;
  ox_shape_arg shapes[OX_MAX_SHAPES];
  /* --data-input: when ndata > 0, the graph inputs named here are the
   * data and every other float graph input is a weight (a model exported
   * with export_params=False lists its parameters as inputs; those read
   * by element-wise operators, such as biases and layer scales, are not
   * recognised by their uses) */
  int ndata;
  char data[OX_MAX_SHAPES][256];
  /* --dim NAME=SIZE: the size of the model's dynamic dimensions named NAME
   * (dim_param) wherever they appear in the graph inputs */
  int ndims;
  char dim_name[OX_MAX_SHAPES][64];
  int64_t dim_size[OX_MAX_SHAPES];
  /* > 0 (--batch of optimize and run): the size of a dynamic first
   * dimension of a graph input that no --dim names */
  int64_t batch;
} ox_options;

/* Parses "name=1x3x224x224" into a; non-zero on malformed text. */
int ox_parse_shape_arg(const char *text, ox_shape_arg *a);
/* Adds one --input-shape "name=1x3x224x224" / one --data-input name to o
 * (options.c): 0, or -1 with the message (naming the option) in msg: a
 * malformed value, more than OX_MAX_SHAPES. */
int ox_options_add_shape(ox_options *o, const char *text, char *msg, size_t n);
int ox_options_add_data(ox_options *o, const char *name, char *msg, size_t n);
/* Adds one --dim "NAME=SIZE" to o: 0, or -1 with the message in msg. */
int ox_options_add_dim(ox_options *o, const char *text, char *msg, size_t n);
/* Does o set anything (an --input-shape, --data-input or --dim)? */
int ox_options_any(const ox_options *o);

/* Imports an ONNX model from bytes (len) / from a file. NULL + d on error;
 * d->file is the path, d->line the 1-based node index when the error is
 * about a node (col 0). */
ir_graph *ox_import(const uint8_t *data, size_t len, const char *file,
                    const ox_options *o, base_diag *d);
ir_graph *ox_import_file(const char *path, const ox_options *o, base_diag *d);

/* Opset of an export without an original model (and the least when the
 * original's is lower than the operators need: see ox_export_report). */
#define OX_DEFAULT_OPSET 17

typedef struct ox_export_options {
  /* the original ONNX model (NULL: none): graph inputs, outputs and
   * initializers get back its names, and its opset is kept where the
   * operators allow */
  const char *like;
  /* keep weight preprocessing as nodes even when the weights' values are
   * known (default 0: computed here and written as initializers) */
  int keep_preprocessing;
} ox_export_options;

typedef struct ox_export_report {
  int opset;           /* opset written */
  int like_opset;      /* the original's (0: no original) */
  char opset_why[160]; /* why opset > like_opset ("" when not raised) */
  int folded;          /* weight-only nodes computed into initializers */
  int at_load;         /* weight-only nodes kept (weights without values):
                          they run once at load, not per inference */
  int renamed;         /* tensors given back their original names */
  /* the original's graph inputs (not initializers) and outputs, and how
   * many of them the export writes under the same name (a Hugging Face
   * dynamo export's names are IR names already: 0 given back, all kept) */
  int io_total, io_same;
  /* the original's named dynamic dimensions of its graph inputs
   * (dim_param): those the file keeps (comma-separated: written as
   * dim_params, reshape targets with 0 and -1, so that it runs at any size
   * of them; docs/onnx.md), and those fixed at the graph's sizes, each with
   * why ("seq = 16: ewadd 'x' fails with it changed (...)"; "; "-separated);
   * "" when none */
  char kept_dims[160];
  char fixed_dims[720];
} ox_export_report;

/* Writes g as an ONNX model to path, atomically. Weights with values
 * become initializers; weights without stay graph inputs (doc_string
 * OX_WEIGHT_DOC). o may be NULL (no original, preprocessing folded); r (may
 * be NULL) says what was done. */
base_status ox_export_file_ex(const ir_graph *g, const char *path,
                              const ox_export_options *o, ox_export_report *r,
                              base_diag *d);
/* ox_export_file_ex with no options. */
base_status ox_export_file(const ir_graph *g, const char *path, base_diag *d);

/* Comma-separated names of the supported ONNX operators. */
const char *ox_supported_ops(void);

#endif
