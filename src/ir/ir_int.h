/* ir_int.h: internals shared by the IR's source files (not public API). */
#ifndef SUPEROPT_IR_INT_H
#define SUPEROPT_IR_INT_H

#include "ir.h"

/* Parses the text of one parameter value (s, len) into the field of a that
 * holds parameter p. On error returns non-zero and writes why into err. */
int ir_param_parse(ir_param_id p, const char *s, size_t len, ir_attrs *a,
                   char *err, size_t errn);

/* One shape rule per operator, defined in shape.c. */
#define OP(ID, name, inputs, params, ...)                                      \
  base_status ir_shape_##name(ir_attrs *a, const ir_shape *const *in, int nin, \
                              ir_shape *out, base_diag *d);
#include "ops.def"
#undef OP

/* Checks an operator's input count; the message lists its inputs. */
base_status ir_check_arity(const ir_opinfo *r, int nin, base_diag *d);

/* Whether name is a valid tensor name (NAME in docs/graph-format.md). */
int ir_name_ok(const char *s, size_t len);
int ir_name_start(int c);
int ir_name_char(int c);
/* The 1-based column of byte `offset` of a line, saturated at INT_MAX (a
 * line may be longer than an int counts; parse.c). */
int ir_parse_col(size_t offset);

/* Adds node nd of g (one ir_move_lowered says is a lower-stage form) to h
 * as plain operators, its inputs through map; sets map for its outputs
 * (unlower.c). */
base_status ir_unlower_move(ir_graph *h, const ir_graph *g, const ir_node *nd,
                            int32_t *map, base_diag *d);

#endif
