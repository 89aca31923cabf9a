/* fuzz_cost_tsv.c: libFuzzer target for the cost tables' TSV parser and
 * row checks (cd_check_tsv, what cd_import_tsv runs before storing):
 * rows or an error with file:line:col, never a crash. */
#include <stdint.h>

#include "costdb/costdb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  base_diag d;
  int rows;
  cd_check_tsv((const char *)data, len, "fuzz.tsv", &rows, &d);
  return 0;
}
