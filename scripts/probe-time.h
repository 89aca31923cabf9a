/* probe-time.h: what the scripts/probe-*.c programs share: the median
 * time in microseconds of one call of run(u), which enqueues on s and
 * returns nonzero where it fails. Run once, then 20 calls captured in a
 * CUDA graph, the graph replayed 60 times and the median of the last 50
 * divided by 20 (so launch overhead is that of a replay); -1 where a call,
 * the capture or the instantiation fails. */
#ifndef PROBE_TIME_H
#define PROBE_TIME_H

#include <cuda_runtime.h>
#include <stdlib.h>

static int probe_cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static float probe_time_us(cudaStream_t s, int (*run)(void *), void *u) {
  float t = -1, ts[60];
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  if (run(u) || cudaStreamSynchronize(s))
    goto out;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  int bad = 0;
  for (int i = 0; i < 20; i++)
    bad |= run(u) != 0;
  if (cudaStreamEndCapture(s, &g) || bad || cudaGraphInstantiate(&ge, g, 0))
    goto out;
  for (int r = 0; r < 60; r++) {
    cudaEventRecord(e0, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ts[r], e0, e1);
  }
  qsort(ts + 10, 50, sizeof(float), probe_cmpf);
  t = ts[35] * 1000.0f / 20;
out:
  if (ge)
    cudaGraphExecDestroy(ge);
  if (g)
    cudaGraphDestroy(g);
  cudaGetLastError();
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  return t;
}

#endif
