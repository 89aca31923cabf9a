/* diag.c: error values with positions, and how they are printed.
 *
 * Library code fills an base_diag and returns its code; only the CLI prints.
 * Printing follows chibicc: "file:line:col: error: message", then the
 * source line and a caret under the column.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base.h"

base_status base_diag_set(base_diag *d, base_status code, int line, int col,
                          const char *fmt, ...) {
  if (!d)
    return code;
  d->code = code;
  d->file[0] = '\0';
  d->line = line;
  d->col = col;
  d->src[0] = '\0';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  return code;
}

const char *base_status_name(base_status s) {
  static const char *names[] = {"ok",
                                "syntax error",
                                "unknown operator",
                                "unknown parameter",
                                "bad parameter",
                                "wrong arity",
                                "shape mismatch",
                                "undefined name",
                                "duplicate name",
                                "cycle",
                                "missing output",
                                "i/o error",
                                "out of memory",
                                "internal error",
                                "interrupted"};
  if ((unsigned)s < sizeof names / sizeof *names)
    return names[s];
  return "error";
}

void base_diag_print(const base_diag *d, FILE *f) {
  if (d->file[0] && d->line > 0)
    fprintf(f, "%s:%d:%d: ", d->file, d->line, d->col > 0 ? d->col : 1);
  else if (d->file[0])
    fprintf(f, "%s: ", d->file);
  fprintf(f, "error: %s\n", d->msg);
  if (d->src[0] && d->line > 0) {
    fprintf(f, "  %s\n  ", d->src);
    for (int i = 1; i < d->col && d->src[i - 1]; i++)
      fputc(d->src[i - 1] == '\t' ? '\t' : ' ', f);
    fputs("^\n", f);
  }
}
