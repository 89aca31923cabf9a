/* ew.c: the element-wise unary operators' table (ew.def) as ir_ew rows:
 * each row's C expression as a function, its CUDA expression as text, and
 * lookups by operator and by ONNX name.
 */
#include <math.h>
#include <string.h>

#include "ir.h"

#define EW(ID, name, c, ...)                                                   \
  static float ew_c_##ID(float x) { return c; }
#include "ew.def"
#undef EW

static const ir_ew rows[IR_EW_NROWS] = {
#define EW(ID, name, c, cuda, onnx, taso, tensat, flags)                       \
  {IR_EW_ROW_##ID, onnx, tensat, #cuda, ew_c_##ID, flags},
#include "ew.def"
#undef EW
};

static const ir_ew *const by_op[IR_NOPS] = {
#define EW(ID, ...) [IR_OP_##ID] = &rows[IR_EW_ROW_##ID],
#include "ew.def"
#undef EW
};

static const ir_opcode ops_of[IR_EW_NROWS] = {
#define EW(ID, ...) IR_OP_##ID,
#include "ew.def"
#undef EW
};

const ir_ew *ir_ew_of(ir_opcode op) {
  return (unsigned)op < IR_NOPS ? by_op[op] : NULL;
}

ir_opcode ir_ew_op(int i) { return ops_of[i]; }

int ir_ew_by_onnx(const char *name) {
  for (int i = 0; i < IR_EW_NROWS; i++)
    if (rows[i].onnx && !strcmp(rows[i].onnx, name))
      return ops_of[i];
  return -1;
}
