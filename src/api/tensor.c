/* tensor.c: typed host buffers (api_tensor) against the graph's tensors:
 * the dtype names and sizes, the checks every typed call makes (type,
 * size), and the conversion to and from the executors' float32 slots
 * (int64 values within +-2^24, bool 0 or 1). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api_int.h"

const char *api_dtype_name(int dtype) {
  static const char *const names[] = {"float32", "int64", "bool", "int32"};
  return dtype >= 0 && dtype < 4 ? names[dtype] : NULL;
}

size_t api_dtype_size(int dtype) {
  static const size_t sizes[] = {4, 8, 1, 4};
  return dtype >= 0 && dtype < 4 ? sizes[dtype] : 0;
}

int api_dtype_of(int32_t t) {
  return ir_dtype_is_half((ir_dtype)t) ? API_F32 : (int)t;
}

/* The buffer types a tensor of type t takes (a half tensor's: float32,
 * rounded to its type on the way in). */
static int accepts(int32_t t, int dtype) {
  return dtype == api_dtype_of(t) || (t == IR_DT_I64 && dtype == API_I32);
}

api_code api_tensor_check(const char *fn, const char *what, const ir_tensor *t,
                          const api_tensor *v, api_error *err) {
  const char *want = api_dtype_name(api_dtype_of(t->dtype));
  if (!v->data)
    return api_fail(err, API_ERR_USAGE, "%s: %s is NULL", fn, what);
  if (!api_dtype_name(v->dtype))
    return api_fail(err, API_ERR_USAGE, "%s: %s: unknown dtype %d", fn, what,
                    v->dtype);
  if (!accepts(t->dtype, v->dtype))
    return api_fail(err, API_ERR_USAGE, "%s: %s is %s, not %s%s", fn, what,
                    want, api_dtype_name(v->dtype),
                    t->dtype == IR_DT_I64 ? " (int64 or int32)" : "");
  int64_t numel = ir_shape_numel(&t->shape);
  size_t need = (size_t)numel * api_dtype_size(v->dtype);
  if (v->nbytes != need)
    return api_fail(err, API_ERR_USAGE,
                    "%s: %s: %zu bytes, expected %" PRId64 " %s elements (%zu "
                    "bytes)",
                    fn, what, v->nbytes, numel, api_dtype_name(v->dtype), need);
  return API_OK;
}

api_code api_tensor_to_f32(const char *what, const ir_tensor *t,
                           const api_tensor *v, float *dst, api_error *err) {
  int64_t n = ir_shape_numel(&t->shape);
  if (v->dtype == API_F32) {
    memcpy(dst, v->data, sizeof(float) * (size_t)n);
    ir_dtype_round_n(dst, n, (ir_dtype)t->dtype);
    return API_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t x = v->dtype == API_I64   ? ((const int64_t *)v->data)[i]
                : v->dtype == API_I32 ? ((const int32_t *)v->data)[i]
                                      : ((const uint8_t *)v->data)[i] != 0;
    if (x > IR_I64_EXACT || x < -IR_I64_EXACT)
      return api_fail(err, API_ERR_INPUT,
                      "%s: element %" PRId64 " is %" PRId64
                      ", beyond +-2^24 (the executors hold integers in "
                      "float32)",
                      what, i, x);
    dst[i] = (float)x;
  }
  return API_OK;
}

void api_tensor_from_f32(const ir_tensor *t, const float *src,
                         const api_tensor *v) {
  int64_t n = ir_shape_numel(&t->shape);
  if (v->dtype == API_F32)
    memcpy(v->data, src, sizeof(float) * (size_t)n);
  else if (v->dtype == API_I64)
    for (int64_t i = 0; i < n; i++)
      ((int64_t *)v->data)[i] = (int64_t)src[i];
  else if (v->dtype == API_I32)
    for (int64_t i = 0; i < n; i++)
      ((int32_t *)v->data)[i] = (int32_t)src[i];
  else
    for (int64_t i = 0; i < n; i++)
      ((uint8_t *)v->data)[i] = src[i] != 0.0f;
}
