/* onnx.h: ONNX import and export (module prefix ox_).
 *
 * ox_import reads an ONNX model (protobuf, through protobuf-c and the
 * onnx.proto Debian's libonnx-dev ships) into an ir_graph: each supported
 * ONNX operator maps onto IR operators, constants (initializers, Constant
 * nodes, Shape/Gather/Unsqueeze/Concat chains over them) are folded at
 * import, and graph inputs that only feed parameter slots (convolution and
 * Gemm weights, normalisation parameters) become weights. Initializers keep
 * their values. ox_export writes an ir_graph back as an ONNX model (opset 17).
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
} ox_options;

/* Parses "name=1x3x224x224" into a; non-zero on malformed text. */
int ox_parse_shape_arg(const char *text, ox_shape_arg *a);

/* Imports an ONNX model from bytes (len) / from a file. NULL + d on error;
 * d->file is the path, d->line the 1-based node index when the error is
 * about a node (col 0). */
ir_graph *ox_import(const uint8_t *data, size_t len, const char *file,
                    const ox_options *o, base_diag *d);
ir_graph *ox_import_file(const char *path, const ox_options *o, base_diag *d);

/* Writes g as an ONNX model (opset 17) to path, atomically. Weights with
 * values become initializers; weights without stay graph inputs. */
base_status ox_export_file(const ir_graph *g, const char *path, base_diag *d);

/* Comma-separated names of the supported ONNX operators. */
const char *ox_supported_ops(void);

#endif
