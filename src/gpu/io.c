/* io.c: one tensor of a plan written from, or read into, host or device
 * memory, for callers that upload the weights once (gpu_plan_upload) and
 * then only change the inputs between runs: the embedding API's runner
 * (src/api/run.c), which may hold its data on the GPU already (a torch
 * tensor's device pointer). Copies run on the plan's stream, so a write is
 * ordered before the next gpu_plan_run; a read waits for its copy. The
 * caller's buffers are float32 also for a half tensor (f16, bf16), whose
 * values are converted on the way (run/tensor.c). */
#include "gpu_int.h"

base_status gpu_plan_write(gpu_plan *p, int t, const void *src, int on_device,
                           base_diag *d) {
  if (t < 0 || t >= p->g->ntensors || p->g->tensors[t].kind != IR_T_INPUT)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "gpu_plan_write: tensor %d is not an input", t);
  return gpu_write_values(p, t, src, on_device, 1, d);
}

base_status gpu_plan_read(gpu_plan *p, int t, void *dst, int on_device,
                          base_diag *d) {
  if (t < 0 || t >= p->g->ntensors)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "gpu_plan_read: no tensor %d", t);
  return gpu_read_values(p, t, dst, on_device, 1, d);
}
