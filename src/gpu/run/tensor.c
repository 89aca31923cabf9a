/* tensor.c: what every launcher reads of the plan: a tensor's layout
 * (channels-last or NCHW) and strides, the pointer a node reads an input
 * from, a node's stream and workspace (the conversion between the two
 * layouts: rt/convert.c).
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

int gpu_is_cl(const gpu_plan *p, int t) { return p->cl && p->cl[t]; }

void gpu_strides(const gpu_plan *p, int t, int64_t st[CXK_RANK]) {
  const ir_shape *s = shp(p, t);
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->dim[i];
  }
  if (p->blk && p->blk[t].w) { /* rows of the split's input, w apart */
    int64_t rows = p->blk[t].w;
    for (int i = p->blk[t].lead - 1; i >= 0; i--) {
      st[i] = rows;
      rows *= s->dim[i];
    }
    return;
  }
  if (gpu_is_cl(p, t)) { /* (n, c, h, w) at n*HWC + c + h*WC + w*C */
    int64_t c = s->dim[1], w = s->dim[3];
    st[1] = 1;
    st[3] = c;
    st[2] = c * w;
  }
}

const float *gpu_in(const gpu_plan *p, int i, int k) {
  const gpu_step *s = &p->steps[i];
  if (s->cin_off && s->cin_off[k] != (size_t)-1)
    return (const float *)((const char *)s->scratch + s->cin_off[k]);
  return p->ptr[p->g->nodes[i].in[k]];
}

/* Node i's stream: 0 before the schedule exists and for nodes that do not
 * run. */
int gpu_stream_of(const gpu_plan *p, int i) {
  int s = p->sched.stream ? p->sched.stream[i] : 0;
  return s > 0 ? s : 0;
}

void *gpu_step_ws(const gpu_plan *p, const ir_node *n) {
  return p->ws[gpu_stream_of(p, (int)(n - p->g->nodes))];
}

/* ---- values in and out ----------------------------------------------------
 * The host and the embedding API hold every float tensor as float32 (a
 * half tensor's values rounded to its type: ex_values, API_F32); its
 * bytes on the device are of its type, so half tensors are converted on
 * the way (on the host for host memory, by cxk_convert for device memory). */

static base_status write_half(gpu_plan *p, int t, const float *src,
                              int on_device, base_diag *d) {
  int dt = gpu_dt_of(p->g, t);
  int64_t n = ir_shape_numel(&p->g->tensors[t].shape);
  cudaStream_t s = p->ctx->stream;
  if (on_device) {
    GPU_CUDA(d, cxk_convert(s, src, CXK_F32, p->ptr[t], dt, n));
    return BASE_OK;
  }
  uint16_t *h = base_malloc(sizeof *h * (size_t)(n ? n : 1));
  if (!h)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int64_t i = 0; i < n; i++)
    h[i] = dt == CXK_F16 ? ir_f16_bits(src[i]) : ir_bf16_bits(src[i]);
  cudaError_t e = cudaMemcpyAsync(p->ptr[t], h, sizeof *h * (size_t)n,
                                  cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) /* h is freed below */
    e = cudaStreamSynchronize(s);
  free(h);
  GPU_CUDA(d, e);
  return BASE_OK;
}

static base_status read_half(gpu_plan *p, int t, float *dst, int on_device,
                             base_diag *d) {
  int dt = gpu_dt_of(p->g, t);
  int64_t n = ir_shape_numel(&p->g->tensors[t].shape);
  cudaStream_t s = p->ctx->stream;
  if (on_device) {
    GPU_CUDA(d, cxk_convert(s, p->ptr[t], dt, dst, CXK_F32, n));
    GPU_CUDA(d, cudaStreamSynchronize(s));
    return BASE_OK;
  }
  uint16_t *h = base_malloc(sizeof *h * (size_t)(n ? n : 1));
  if (!h)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  cudaError_t e = cudaMemcpyAsync(h, p->ptr[t], sizeof *h * (size_t)n,
                                  cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(s);
  for (int64_t i = 0; e == cudaSuccess && i < n; i++)
    dst[i] = dt == CXK_F16 ? ir_f16_value(h[i]) : ir_bf16_value(h[i]);
  free(h);
  GPU_CUDA(d, e);
  return BASE_OK;
}

base_status gpu_write_values(gpu_plan *p, int t, const void *src, int on_device,
                             int async, base_diag *d) {
  if (gpu_dt_of(p->g, t) != CXK_F32)
    return write_half(p, t, src, on_device, d);
  size_t bytes = gpu_tensor_bytes(p->g, t);
  if (async)
    GPU_CUDA(d, cudaMemcpyAsync(p->ptr[t], src, bytes,
                                on_device ? cudaMemcpyDeviceToDevice
                                          : cudaMemcpyHostToDevice,
                                p->ctx->stream));
  else
    GPU_CUDA(d, cudaMemcpy(p->ptr[t], src, bytes, cudaMemcpyHostToDevice));
  return BASE_OK;
}

base_status gpu_read_values(gpu_plan *p, int t, void *dst, int on_device,
                            int async, base_diag *d) {
  if (gpu_dt_of(p->g, t) != CXK_F32)
    return read_half(p, t, dst, on_device, d);
  size_t bytes = gpu_tensor_bytes(p->g, t);
  if (!async) {
    GPU_CUDA(d, cudaMemcpy(dst, p->ptr[t], bytes, cudaMemcpyDeviceToHost));
    return BASE_OK;
  }
  GPU_CUDA(d, cudaMemcpyAsync(dst, p->ptr[t], bytes,
                              on_device ? cudaMemcpyDeviceToDevice
                                        : cudaMemcpyDeviceToHost,
                              p->ctx->stream));
  GPU_CUDA(d, cudaStreamSynchronize(p->ctx->stream));
  return BASE_OK;
}
