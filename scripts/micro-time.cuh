/* micro-time.cuh: what the scripts/micro-*.cu benchmarks share: CK() exits
 * on a failed CUDA call, and time_us() times a launch the way the
 * executor's autotuning does (10 launches captured in a CUDA graph, three
 * warm-up replays, the median of 21, per launch). */
#ifndef MICRO_TIME_CUH
#define MICRO_TIME_CUH

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,               \
              cudaGetErrorString(e_));                                         \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

/* Median time in us of one call of launch(), which enqueues on st. */
template <typename F> static float time_us(cudaStream_t st, F launch) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 10; i++)
    launch();
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++)
    CK(cudaGraphLaunch(ge, st));
  std::vector<float> t;
  for (int r = 0; r < 21; r++) {
    float ms;
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return t[10] * 100.0f; /* ms for 10 launches -> us for one */
}

#endif
