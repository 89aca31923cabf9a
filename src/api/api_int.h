/* api_int.h: what the files of src/api/ share: the graph handle and the
 * conversion of a base_diag into an api_error. Not installed. */
#ifndef SUPEROPT_API_INT_H
#define SUPEROPT_API_INT_H

#include "../ir/ir.h"
#include "superopt.h"

struct api_graph {
  ir_graph *g; /* owned */
};

/* Sets *err (if non-NULL) to code and the formatted message; returns code. */
api_code api_fail(api_error *err, api_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets *err from d ("file:line:col: message" where known); returns the
 * code for d->code (input errors 2, out of memory and bugs 3). */
api_code api_fail_diag(api_error *err, const base_diag *d);
/* Clears *err (if non-NULL) and returns API_OK. */
api_code api_ok(api_error *err);
/* Wraps g (taking ownership) in a new handle; API_ERR_INTERNAL on OOM. */
api_code api_wrap(ir_graph *g, api_graph **out, api_error *err);

#endif
