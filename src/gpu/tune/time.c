/* time.c: the autotuners' clock (gpu_tune_time): a candidate's median
 * time as inside a graph replay, GPU_TUNE_BATCH back-to-back runs captured
 * into a CUDA graph, median of GPU_DNN_REPS replays after a warm-up.
 */
#include <stdlib.h>

#include "../gpu_int.h"

#define GPU_DNN_REPS 5

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Milliseconds between e0 and e1 around one launch of x (or one run(c, u)
 * where x is NULL); huge on failure. */
static float timed_once(gpu_ctx *c, cudaGraphExec_t x, gpu_timed_run run,
                        const void *u, cudaEvent_t e0, cudaEvent_t e1) {
  float ms = 1e30f;
  if (cudaEventRecord(e0, c->stream) != cudaSuccess ||
      (x ? cudaGraphLaunch(x, c->stream) != cudaSuccess : run(c, u)) ||
      cudaEventRecord(e1, c->stream) != cudaSuccess ||
      cudaEventSynchronize(e1) != cudaSuccess ||
      cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
    ms = 1e30f;
  return ms;
}

float gpu_tune_time(gpu_ctx *c, gpu_timed_run run, const void *u,
                    cudaEvent_t e0, cudaEvent_t e1) {
  float t[GPU_DNN_REPS], one = 1e30f;
  if (!run(c, u)) /* the first run loads modules: not timed */
    one = timed_once(c, NULL, run, u, e0, e1);
  if (one >= 1e29f) { /* it does not run */
    cudaGetLastError();
    return 1e30f;
  }
  /* The same batch for every candidate of one choice: a single launch's
   * time is mostly the launch below 0.5 ms, and a batch of 4 instead of 10
   * added about 1 us a run (the replay's own cost shared by fewer runs),
   * enough to hide a kernel 1 us faster */
  int batch = one > 0.5f ? 1 : GPU_TUNE_BATCH;
  cudaGraph_t g = NULL;
  cudaGraphExec_t x = NULL;
  if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) ==
      cudaSuccess) {
    int failed = 0;
    for (int k = 0; k < batch && !failed; k++)
      failed = run(c, u);
    if (gpu_end_capture(c->stream, &g) != cudaSuccess || failed || !g ||
        cudaGraphInstantiate(&x, g, 0) != cudaSuccess ||
        cudaGraphLaunch(x, c->stream) != cudaSuccess || /* upload, warm */
        cudaStreamSynchronize(c->stream) != cudaSuccess) {
      if (x)
        cudaGraphExecDestroy(x);
      x = NULL;
    }
    if (g)
      cudaGraphDestroy(g);
  }
  cudaGetLastError();
  if (!x) /* not capturable: single launches, overhead included */
    batch = 1;
  for (int r = 0; r < GPU_DNN_REPS; r++)
    t[r] = timed_once(c, x, run, u, e0, e1) / (float)batch;
  if (x)
    cudaGraphExecDestroy(x);
  cudaGetLastError();
  qsort(t, GPU_DNN_REPS, sizeof *t, cmp_float);
  return t[GPU_DNN_REPS / 2];
}
