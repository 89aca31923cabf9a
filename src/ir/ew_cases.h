/* ew_cases.h: the case labels of every ew.def row (case IR_OP_RELU: ...),
 * included inside a switch on an ir_opcode: the backend then handles the
 * whole family in one place, behind one capability check where it covers
 * a subset (ir_ew_of(op)->flags, its column). No include guard: it is
 * meant to be included once per switch.
 */
#define EW(ID, ...) case IR_OP_##ID:
#include "ew.def"
#undef EW
