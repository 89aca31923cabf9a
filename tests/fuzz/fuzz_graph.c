/* fuzz_graph.c: libFuzzer target for the .graph text parser (ir_parse).
 * Any input must give a graph or an error with a position, never a crash,
 * a leak or undefined behaviour; a graph that parses must print to text
 * that parses again and prints the same (the canonical form is stable). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  base_diag d;
  ir_graph *g = ir_parse((const char *)data, len, "fuzz.graph", &d);
  if (!g)
    return 0;
  char *a = ir_print(g);
  ir_graph *h = a ? ir_parse(a, strlen(a), "printed.graph", &d) : NULL;
  char *b = h ? ir_print(h) : NULL;
  if (a && (!b || strcmp(a, b)))
    abort(); /* printed text that does not parse back to itself */
  free(a);
  free(b);
  ir_graph_free(g);
  ir_graph_free(h);
  return 0;
}
