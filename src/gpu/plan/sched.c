/* sched.c: which stream each node of a plan runs on (no CUDA).
 *
 * Branches that do not depend on each other (Inception's and NASNet's
 * parallel convolutions, a ResNet's projection shortcut beside its main
 * path) can run side by side: the plan's CUDA graph is captured over
 * several streams, each cross-stream dependency an event the consumer's
 * stream waits for (streams.c). At batch 1 most kernels fill a fraction of
 * the GPU, so the branches' kernels overlap instead of queueing.
 *
 * Greedy, in the plan's node order: a node continues the stream of a
 * dependency that is the last node there (a chain stays on one stream);
 * else it takes a stream whose last node is already ordered before it, or
 * an unused one; else the stream used least recently. Vector clocks (one
 * counter per stream) record what each node is ordered after, so a wait
 * is emitted only where the order is not implied already, and so the
 * arena can tell which nodes may still run when a node has finished:
 * sync[a] is the lowest node index from which every running node is
 * ordered after a. A block whose accessors all finished before index k
 * may be reused from k on only if k >= sync of each (gpu_streams_extend
 * in streams.c extends the lifetimes the memory planner sees).
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu.h"

void gpu_sched_free(gpu_sched *s) {
  if (!s)
    return;
  free(s->stream), free(s->wait_at), free(s->wait_on), free(s->ev);
  free(s->sync);
  memset(s, 0, sizeof *s);
}

/* The stream node v continues: one whose last node is a dependency (the
 * latest such); else one whose last node v is already ordered after, or
 * an unused one; else the least recently used. join: v's joined clock. */
static int pick_stream(const int32_t *dep, int ndep, const int *tail,
                       const int *count, const int32_t *join, int k) {
  int s = -1;
  for (int q = 0; q < k; q++)
    for (int j = 0; j < ndep && tail[q] >= 0; j++)
      if (dep[j] == tail[q] && (s < 0 || tail[q] > tail[s]))
        s = q;
  for (int q = 0; s < 0 && q < k; q++)
    if (tail[q] < 0 || join[q] >= count[q])
      s = q;
  if (s >= 0)
    return s;
  s = 0;
  for (int q = 1; q < k; q++)
    if (tail[q] < tail[s])
      s = q;
  return s;
}

/* sync[a] = 1 + the last running node b not ordered after a (b > a), else
 * a + 1. b is ordered after a iff vc[b][stream a] >= pos[a], so with
 * late[q][c] the last node whose clock for stream q is c, the last node
 * not ordered after a is the latest of late[q][0 .. pos[a] - 1]. */
static int sync_points(int n, const unsigned char *runs, const int32_t *vc,
                       const int32_t *pos, const int *count, int k,
                       gpu_sched *s) {
  int32_t *late[GPU_STREAMS_MAX] = {0};
  int ok = 1;
  for (int q = 0; q < k; q++) {
    late[q] = base_malloc(sizeof(int32_t) * (size_t)(count[q] + 1));
    ok = ok && late[q];
    for (int c = 0; late[q] && c <= count[q]; c++)
      late[q][c] = -1;
  }
  for (int b = 0; ok && b < n; b++)
    for (int q = 0; runs[b] && q < k; q++)
      late[q][vc[(size_t)b * k + q]] = b; /* b ascending: the last wins */
  for (int q = 0; ok && q < k; q++)
    for (int c = 1; c <= count[q]; c++)
      if (late[q][c - 1] > late[q][c])
        late[q][c] = late[q][c - 1];
  for (int a = 0; ok && a < n; a++) {
    int32_t b = runs[a] ? late[s->stream[a]][pos[a] - 1] : -1;
    s->sync[a] = (b > a ? b : a) + 1;
  }
  for (int q = 0; q < k; q++)
    free(late[q]);
  return ok ? 0 : -1;
}

static int by_desc(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x < y) - (x > y);
}

int gpu_sched_build(int n, const unsigned char *runs, const int32_t *dep_at,
                    const int32_t *dep_on, const unsigned char *pin0, int k,
                    gpu_sched *s) {
  memset(s, 0, sizeof *s);
  if (k < 1)
    k = 1;
  if (k > GPU_STREAMS_MAX)
    k = GPU_STREAMS_MAX;
  size_t nn = (size_t)n + 1, ndeps = (size_t)dep_at[n] + 1;
  s->stream = base_malloc(nn * sizeof *s->stream);
  s->wait_at = base_malloc(nn * sizeof *s->wait_at);
  s->wait_on = base_malloc(ndeps * sizeof *s->wait_on);
  s->ev = base_calloc(nn, sizeof *s->ev);
  s->sync = base_malloc(nn * sizeof *s->sync);
  int32_t *vc = base_calloc(nn * (size_t)k, sizeof *vc); /* per node */
  int32_t *pos = base_calloc(nn, sizeof *pos);
  int32_t *dep = base_malloc(ndeps * sizeof *dep);
  if (!s->stream || !s->wait_at || !s->wait_on || !s->ev || !s->sync || !vc ||
      !pos || !dep) {
    free(vc), free(pos), free(dep);
    gpu_sched_free(s);
    return -1;
  }
  int tail[GPU_STREAMS_MAX], count[GPU_STREAMS_MAX] = {0};
  int32_t join[GPU_STREAMS_MAX], cur[GPU_STREAMS_MAX];
  for (int q = 0; q < k; q++)
    tail[q] = -1;
  int nw = 0;
  for (int v = 0; v < n; v++) {
    s->wait_at[v] = nw;
    s->stream[v] = -1;
    if (!runs[v])
      continue;
    int nd = 0; /* v's dependencies that run, latest first, once each */
    for (int j = dep_at[v]; j < dep_at[v + 1]; j++)
      if (dep_on[j] >= 0 && dep_on[j] < v && runs[dep_on[j]])
        dep[nd++] = dep_on[j];
    qsort(dep, (size_t)nd, sizeof *dep, by_desc);
    int m = 0;
    for (int j = 0; j < nd; j++)
      if (!m || dep[m - 1] != dep[j])
        dep[m++] = dep[j];
    nd = m;
    memset(join, 0, sizeof join);
    for (int j = 0; j < nd; j++)
      for (int q = 0; q < k; q++)
        if (vc[(size_t)dep[j] * k + q] > join[q])
          join[q] = vc[(size_t)dep[j] * k + q];
    int st = pin0 && pin0[v] ? 0 : pick_stream(dep, nd, tail, count, join, k);
    if (tail[st] >= 0)
      memcpy(cur, &vc[(size_t)tail[st] * k], sizeof(int32_t) * (size_t)k);
    else
      memset(cur, 0, sizeof cur);
    for (int j = 0; j < nd; j++) { /* latest first: later waits imply more */
      int u = dep[j], su = s->stream[u];
      if (su == st || cur[su] >= pos[u])
        continue;
      s->wait_on[nw++] = u;
      s->ev[u] = 1;
      for (int q = 0; q < k; q++)
        if (vc[(size_t)u * k + q] > cur[q])
          cur[q] = vc[(size_t)u * k + q];
    }
    cur[st] = pos[v] = ++count[st];
    memcpy(&vc[(size_t)v * k], cur, sizeof(int32_t) * (size_t)k);
    s->stream[v] = st;
    tail[st] = v;
  }
  s->wait_at[n] = nw;
  s->nstreams = 0;
  for (int q = 0; q < k; q++)
    if (count[q])
      s->nstreams = q + 1;
  int rc = sync_points(n, runs, vc, pos, count, k, s);
  free(vc), free(pos), free(dep);
  if (rc)
    gpu_sched_free(s);
  return rc;
}
