/* fuzz_onnx.c: libFuzzer target for the ONNX importer (ox_import): any
 * bytes give a graph or an error, never a crash, a stack overflow (nesting
 * is bounded before protobuf-c recurses), a leak or undefined behaviour. */
#include <stdint.h>

#include "onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  base_diag d;
  ir_graph *g = ox_import(data, len, "fuzz.onnx", NULL, &d);
  ir_graph_free(g);
  return 0;
}
