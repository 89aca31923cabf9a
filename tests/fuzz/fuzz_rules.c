/* fuzz_rules.c: libFuzzer target for the .rules parser (ir_rules_parse).
 * Any input must give a rule set or an error with a position; a set that
 * parses must print to text that parses again and prints the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  base_diag d;
  ir_ruleset rs, rs2;
  if (ir_rules_parse((const char *)data, len, "fuzz.rules", &rs, &d))
    return 0;
  char *a = ir_rules_print(&rs, NULL);
  int back = a && !ir_rules_parse(a, strlen(a), "printed.rules", &rs2, &d);
  char *b = back ? ir_rules_print(&rs2, NULL) : NULL;
  if (a && (!b || strcmp(a, b)))
    abort(); /* printed rules that do not parse back to themselves */
  free(a);
  free(b);
  ir_ruleset_free(&rs);
  if (back)
    ir_ruleset_free(&rs2);
  return 0;
}
