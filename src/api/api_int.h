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

/* tensor.c: the API dtype of an IR type: a half tensor (f16, bf16) takes
 * and gives float32 buffers (API_F32), its values rounded to its type. */
int api_dtype_of(int32_t t);
/* tensor.c: API_ERR_USAGE unless v is a buffer for tensor t (data not
 * NULL, a dtype t takes, nbytes its element count times the dtype's size);
 * what names the tensor in the message ("input 0 (x)"), after fn. */
api_code api_tensor_check(const char *fn, const char *what, const ir_tensor *t,
                          const api_tensor *v, api_error *err);
/* v's values (checked) into the float32 slots dst (t's element count);
 * API_ERR_INPUT for an integer beyond +-2^24. */
api_code api_tensor_to_f32(const char *what, const ir_tensor *t,
                           const api_tensor *v, float *dst, api_error *err);
/* The float32 slots src of tensor t into v (checked), converted. */
void api_tensor_from_f32(const ir_tensor *t, const float *src,
                         const api_tensor *v);
/* graph.c: the tensor index of weight `name` of g, or API_ERR_INPUT; then
 * v checked against it and the shape dims[0..rank-1] (fn names the call in
 * messages). */
api_code api_weight_find(const char *fn, const ir_graph *g, const char *name,
                         const api_tensor *v, const int64_t *dims, int rank,
                         int *t, api_error *err);

#endif
