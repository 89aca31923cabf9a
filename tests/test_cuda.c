/* test_cuda.c: the CUDA executor against the CPU reference executor.
 *
 * Without a GPU (or in a CPU-only build) the device tests report skipped;
 * the memory planner and rebatching need no GPU and always run. On a GPU:
 * every operator on random data with odd shapes (TF32 and strict fp32),
 * every_op.graph whole, NaN poisoning of released buffers, per-node
 * measurement and profiling, and a failing allocation as a clean error.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/exec.h"
#include "fuse/lower.h"

#define SRC SUPEROPT_SOURCE_DIR

#ifndef SUPEROPT_HAVE_CUDA
Test(cuda, not_built) { cr_skip_test("CPU-only build: no CUDA executor"); }
#else
#include "fuse/fuse.h"
#include "fuse/lower.h"
#include "gpu/gpu.h"
#include "maxvit_block.h"

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "%d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

/* ---- no GPU needed
 * ----------------------------------------------------------- */

Test(cuda, memplan_never_overlaps_live_blocks) {
  enum { N = 300 };
  size_t sz[N], off[N], sum = 0;
  int32_t first[N], last[N];
  srand(7);
  for (int k = 0; k < N; k++) {
    sz[k] = (size_t)(rand() % 5000) * 4 + (k % 17 == 0 ? 0 : 4);
    first[k] = rand() % 100;
    last[k] = first[k] + rand() % 10;
    sum += sz[k];
  }
  size_t total = gpu_memplan(N, sz, first, last, off);
  cr_assert_lt(total, sum, "no reuse at all: %zu of %zu", total, sum);
  for (int a = 0; a < N; a++) {
    cr_assert_eq(off[a] % 256, 0);
    cr_assert_leq(off[a] + sz[a], total);
    for (int b = a + 1; b < N; b++) {
      int live = first[a] <= last[b] && first[b] <= last[a];
      int bytes = off[a] < off[b] + sz[b] && off[b] < off[a] + sz[a];
      cr_assert(!(live && bytes && sz[a] && sz[b]),
                "blocks %d and %d are live together and share bytes", a, b);
    }
  }
}

/* Random DAGs on 1-4 streams: the schedule orders every dependency before
 * its reader, pins what must stay on stream 0, and sync[a] is exact: every
 * running node from sync[a] on is ordered after a, and node sync[a] - 1
 * (when after a) is not. The order is recomputed here as the closure of
 * each stream's order and the emitted waits. */
Test(cuda, sched_orders_dependencies_and_sync_is_exact) {
  enum { N = 40 };
  static unsigned char reach[N][N];
  int side_by_side = 0;
  srand(11);
  for (int seed = 0; seed < 300; seed++) {
    int n = 2 + rand() % (N - 1), k = 1 + rand() % GPU_STREAMS_MAX;
    unsigned char runs[N], pin[N];
    int32_t at[N + 1], on[N * 4];
    int nd = 0;
    for (int v = 0; v < n; v++) {
      runs[v] = rand() % 6 != 0;
      pin[v] = rand() % 10 == 0;
      at[v] = nd;
      for (int j = rand() % 4; j > 0 && v > 0; j--)
        on[nd++] = rand() % 8 == 0 ? -1 : rand() % v;
    }
    at[n] = nd;
    gpu_sched s;
    cr_assert_eq(gpu_sched_build(n, runs, at, on, pin, k, &s), 0);
    cr_assert(s.nstreams >= 0 && s.nstreams <= k);
    memset(reach, 0, sizeof reach);
    int tail[GPU_STREAMS_MAX];
    for (int q = 0; q < GPU_STREAMS_MAX; q++)
      tail[q] = -1;
    for (int v = 0; v < n; v++) {
      if (!runs[v]) {
        cr_assert_eq(s.stream[v], -1);
        cr_assert_eq(s.sync[v], v + 1);
        cr_assert_eq(s.wait_at[v], s.wait_at[v + 1]);
        continue;
      }
      int q = s.stream[v];
      cr_assert(q >= 0 && q < s.nstreams, "node %d on stream %d", v, q);
      cr_assert(!pin[v] || q == 0, "pinned node %d on stream %d", v, q);
      int pre[N], np = 0; /* v's immediate predecessors */
      if (tail[q] >= 0)
        pre[np++] = tail[q];
      tail[q] = v;
      for (int j = s.wait_at[v]; j < s.wait_at[v + 1]; j++) {
        int u = s.wait_on[j];
        cr_assert(u >= 0 && u < v && runs[u] && s.ev[u]);
        cr_assert_neq(s.stream[u], q, "a wait within one stream");
        pre[np++] = u;
      }
      for (int j = 0; j < np; j++) {
        reach[pre[j]][v] = 1;
        for (int a = 0; a < pre[j]; a++)
          reach[a][v] |= reach[a][pre[j]];
      }
      for (int j = at[v]; j < at[v + 1]; j++)
        if (on[j] >= 0 && runs[on[j]])
          cr_assert(reach[on[j]][v], "seed %d: %d does not wait for %d", seed,
                    v, on[j]);
    }
    for (int a = 0; a < n; a++) {
      if (!runs[a])
        continue;
      for (int b = s.sync[a]; b < n; b++)
        cr_assert(!runs[b] || reach[a][b], "seed %d: %d not after %d (sync %d)",
                  seed, b, a, s.sync[a]);
      int b = s.sync[a] - 1;
      cr_assert(b == a || (b > a && runs[b] && !reach[a][b]),
                "seed %d: sync of %d is %d", seed, a, s.sync[a]);
      side_by_side |= b > a;
    }
    gpu_sched_free(&s);
  }
  cr_assert(side_by_side, "no two nodes ever ran side by side");
}

/* A fork and a join on two streams: the branches side by side, one wait
 * at the join, none at the fork (the second branch waits for its input). */
Test(cuda, sched_runs_branches_side_by_side) {
  /* 0 -> 1 -> 3, 0 -> 2 -> 3 */
  unsigned char runs[4] = {1, 1, 1, 1};
  int32_t at[5] = {0, 0, 1, 2, 4}, on[4] = {0, 0, 1, 2};
  gpu_sched s;
  cr_assert_eq(gpu_sched_build(4, runs, at, on, NULL, 2, &s), 0);
  cr_assert_eq(s.nstreams, 2);
  cr_assert_eq(s.stream[0], s.stream[1]);
  cr_assert_neq(s.stream[1], s.stream[2]);
  cr_assert_eq(s.wait_at[3] - s.wait_at[2], 1, "branch 2 waits for node 0");
  cr_assert_eq(s.wait_at[4] - s.wait_at[3], 1, "the join waits once");
  cr_assert_eq(s.sync[1], 3, "node 2 may run beside node 1");
  cr_assert_eq(s.sync[0], 1);
  gpu_sched_free(&s);
  cr_assert_eq(gpu_sched_build(4, runs, at, on, NULL, 1, &s), 0);
  cr_assert_eq(s.nstreams, 1);
  cr_assert_eq(s.wait_at[4], 0, "one stream needs no waits");
  for (int a = 0; a < 4; a++)
    cr_assert_eq(s.sync[a], a + 1);
  gpu_sched_free(&s);
}

/* ---- on the GPU
 * ---------------------------------------------------------------- */

static void need_gpu(void) {
  if (gpu_device_count() < 1)
    cr_skip_test("no CUDA device");
}

static double rel_error(const float *x, const float *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = (double)x[i] - ref[i];
    num += e * e;
    den += (double)ref[i] * ref[i];
  }
  return isfinite(num) ? sqrt(num / (den > 0 ? den : 1)) : INFINITY;
}

/* Called by compare with each plan, where a test sets it: assertions on
 * how the plan runs the graph. */
static void (*plan_hook)(const ir_graph *g, const gpu_plan *p,
                         const char *what);

/* Runs g on the GPU (with o; twice, the second a replay) and on the CPU
 * on the same seeded values: the plan in *p (its context in *c), the CPU's
 * values returned. */
static ex_values *run_both(const ir_graph *g, const gpu_options *o,
                           const char *what, gpu_ctx **c, gpu_plan **p) {
  base_diag d;
  ex_values *v = ex_values_new(g);
  cr_assert_eq(ex_fill_random(g, v, 11, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_ctx_new(o, c, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_new(*c, g, p, &d), BASE_OK, "%s: %s", what, d.msg);
  if (plan_hook)
    plan_hook(g, *p, what);
  cr_assert_eq(gpu_plan_upload(*p, v, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_run(*p, &d), BASE_OK, "%s: %s", what, d.msg);
  cr_assert_eq(gpu_plan_run(*p, &d), BASE_OK, "%s: %s", what,
               d.msg); /* replay */
  ex_options eo = {0, 0};
  cr_assert_eq(ex_run(g, v, &eo, &d), BASE_OK, "%s", d.msg);
  return v;
}

/* Output tensor t of plan p, downloaded (the caller frees it). */
static float *download(const ir_graph *g, gpu_plan *p, int t) {
  base_diag d;
  float *y =
      malloc(sizeof(float) * (size_t)ir_shape_numel(&g->tensors[t].shape));
  cr_assert_eq(gpu_plan_download(p, t, y, &d), BASE_OK, "%s", d.msg);
  return y;
}

/* Runs g on the GPU and the CPU on the same seeded values; asserts every
 * output's relative L2 error is within tol and that outputs are not all
 * zero. */
static void compare(const ir_graph *g, const gpu_options *o, double tol,
                    const char *what) {
  gpu_ctx *c;
  gpu_plan *p;
  ex_values *v = run_both(g, o, what, &c, &p);
  for (int i = 0; i < g->noutputs; i++) {
    int t = g->outputs[i];
    int64_t n = ir_shape_numel(&g->tensors[t].shape);
    float *y = download(g, p, t);
    double e = rel_error(y, v->v[t], n), mag = 0;
    for (int64_t k = 0; k < n; k++)
      mag += fabs(v->v[t][k]);
    cr_expect(e <= tol, "%s: output %s: rel error %.3e > %.0e", what,
              g->tensors[t].name, e, tol);
    cr_expect(mag > 0, "%s: output %s is all zero", what, g->tensors[t].name);
    free(y);
  }
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ex_values_free(v);
}

/* BERT's merged Q, K and V: one matmul, a split along the last axis, and
 * the heads' batched matmuls reading its three column blocks in place
 * (layout.c, split_block: the split a view, no copy). In the second graph
 * the split's v is also an output: the split runs. */
#define QKV_BODY                                                               \
  "input x: [2,5,24]\nweight wqkv: [24,72]\nweight wo: [24,24]\n"              \
  "y = matmul(x, wqkv)\nv, k, q = split(y) axis=2 sizes=[24,24,24]\n"          \
  "qs = reshape(q) shape=[2,5,4,6]\nqh = transpose(qs) perm=[0,2,1,3]\n"       \
  "ks = reshape(k) shape=[2,5,4,6]\nkh = transpose(ks) perm=[0,2,3,1]\n"       \
  "vs = reshape(v) shape=[2,5,4,6]\nvh = transpose(vs) perm=[0,2,1,3]\n"       \
  "s = matmul(qh, kh)\np = softmax(s) axis=3\nc = matmul(p, vh)\n"             \
  "ct = transpose(c) perm=[0,2,1,3]\ncm = reshape(ct) shape=[2,5,24]\n"        \
  "o = matmul(cm, wo)\n"
/* The same heads as one attention node (katt.cu: s = 4 rows, t = 5 keys,
 * d = e = 6), the scale a weight. */
#define QKV_ATT_BODY                                                           \
  "input x: [2,5,24]\nweight wqkv: [24,72]\nweight wo: [24,24]\n"              \
  "weight sc: []\n"                                                            \
  "y = matmul(x, wqkv)\nv, k, q = split(y) axis=2 sizes=[24,24,24]\n"          \
  "qs = reshape(q) shape=[2,5,4,6]\nqh = transpose(qs) perm=[0,2,1,3]\n"       \
  "ks = reshape(k) shape=[2,5,4,6]\nkh = transpose(ks) perm=[0,2,3,1]\n"       \
  "vs = reshape(v) shape=[2,5,4,6]\nvh = transpose(vs) perm=[0,2,1,3]\n"       \
  "c = attention(qh, kh, vh, sc)\n"                                            \
  "ct = transpose(c) perm=[0,2,1,3]\ncm = reshape(ct) shape=[2,5,24]\n"        \
  "o = matmul(cm, wo)\n"
static const char *const qkv_graph[4] = {
    QKV_BODY "output o\n", QKV_BODY "output o, v\n", QKV_ATT_BODY "output o\n",
    QKV_ATT_BODY "output o, v\n"};

static int qkv_case;
/* The split is folded (read in place) in qkv_graph[0] and [2], runs in [1]
 * and [3]; the attention node of [2] reads and writes its transposes'
 * bytes (they are views). */
static void qkv_engines(const ir_graph *g, const gpu_plan *p,
                        const char *what) {
  for (int i = 0; i < g->nnodes; i++) {
    const char *e = gpu_plan_engine(p, i);
    if (g->nodes[i].op == IR_OP_SPLIT)
      cr_expect(qkv_case % 2 == 0 ? !strcmp(e, "view") : !!strcmp(e, "view"),
                "%s: the split runs on %s", what, e);
    if (g->nodes[i].op == IR_OP_TRANSPOSE && qkv_case == 2)
      cr_expect_str_eq(e, "view", "%s: transpose %s runs", what,
                       g->tensors[g->nodes[i].out[0]].name);
  }
}

/* Squeeze-and-excitation chains, lowered to se nodes (lower_se.c, kse.cu):
 * channels-last after a convolution, sigmoid in the convolution; on the
 * NCHW input, no biases, the second convolution act=clip (ReLU6); 300
 * channels-last channels, with 8 and with 120 hidden channels; and three
 * that stay node by node: one whose hidden result and one whose pooled
 * result is also an output, one with more weights than the fold takes
 * (lower_se.c, SE_MAX_WEIGHTS). */
#define SE_GRAPH                                                               \
  "input x: [2,40,20,24]\ninput z: [2,300,5,4]\nweight w3: [40,40,3,3]\n"      \
  "weight w1: [10,40,1,1]\nweight b1: [10]\nweight w2: [40,10,1,1]\n"          \
  "weight b2: [40]\nweight wa: [6,40,1,1]\nweight wb: [40,6,1,1]\n"            \
  "weight wz: [300,300,1,1]\nweight wc: [8,300,1,1]\n"                         \
  "weight wd: [300,8,1,1]\nweight we: [120,300,1,1]\n"                         \
  "weight wf: [300,120,1,1]\n"                                                 \
  "c = conv2d(x, w3) act=relu\ng = global_avgpool(c)\n"                        \
  "f1 = conv2d(g, w1, b1) act=relu\nf2 = conv2d(f1, w2, b2) act=sigmoid\n"     \
  "m = ewmul(c, f2)\ng2 = global_avgpool(x)\nh1 = conv2d(g2, wa)\n"            \
  "h2 = conv2d(h1, wb) act=clip max=1\nn2 = ewmul(x, h2)\n"                    \
  "g3 = global_avgpool(m)\nk1 = conv2d(g3, w1) act=relu\n"                     \
  "k2 = conv2d(k1, w2, b2) act=sigmoid\nzc = conv2d(z, wz) act=relu\n"         \
  "g4 = global_avgpool(zc)\nd1 = conv2d(g4, wc) act=relu\n"                    \
  "d2 = conv2d(d1, wd) act=sigmoid\n"                                          \
  "g5 = global_avgpool(zc)\nl1 = conv2d(g5, we) act=relu\n"                    \
  "l2 = conv2d(l1, wf) act=sigmoid\n"                                          \
  "g6 = global_avgpool(zc)\no1 = conv2d(g6, wc) act=relu\n"                    \
  "o2 = conv2d(o1, wd)\nweight wu: [200,300,1,1]\nweight wv: [300,200,1,1]\n"  \
  "g7 = global_avgpool(zc)\nu1 = conv2d(g7, wu) act=relu\n"                    \
  "u2 = conv2d(u1, wv) act=sigmoid\n"                                          \
  "output m, n2, k1, k2, d2, l2, g6, o2, u2\n"

/* Relus that the lower stage folds into the concat or split that copies
 * their input (src/fuse/lower_move.c: act=, acted=): channels-last parts
 * of odd and float4 widths, rank 3 with more than CXK_PARTS parts (a
 * relu'd part in the second launch), a split part read by its relu and an
 * add (the split writes both); and relus that must not fold (the concat
 * is an output; the relu's result is an NCHW output or a reshape's input,
 * with a channels-last split). */
#define MOVE_RELU_GRAPH                                                        \
  "input x: [2,8,9,7]\ninput u: [2,3,5]\ninput v: [2,4,5]\n"                   \
  "input y: [2,35,5]\nweight w: [12,8,3,3]\nweight w5: [5,8,3,3]\n"            \
  "weight wa: [4,17,1,1]\n"                                                    \
  "c = conv2d(x, w)\nc5 = conv2d(x, w5)\nk = concat(c, c5) axis=1\n"           \
  "kr = relu(k)\nf = conv2d(kr, wa)\n"                                         \
  "a, b, e = split(c) axis=1 sizes=[4,3,5]\nar = relu(a)\nbr = relu(b)\n"      \
  "bs = ewadd(b, br)\ner = relu(e)\nm = concat(ar, bs, er) axis=1\n"           \
  "mr = relu(m)\ng, h = split(c) axis=1 sizes=[4,8]\nhr = relu(h)\n"           \
  "hs = reshape(hr) shape=[2,-1]\n"                                            \
  "g2, h2 = split(c) axis=1 sizes=[4,8]\nh2r = relu(h2)\n"                     \
  "h2m = ewmul(h2, h2r)\ncc = concat(c, c) axis=1\nccr = relu(cc)\n"           \
  "ccq = ewmul(ccr, ccr)\nn = concat(u, v, u, v, u, v, u, v, u, v) axis=1\n"   \
  "nr = relu(n)\nnq = ewmul(nr, nr)\n"                                         \
  "p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = split(y) axis=1 "                  \
  "sizes=[3,4,3,4,3,4,3,4,3,4]\np0r = relu(p0)\np9r = relu(p9)\n"              \
  "q = concat(p0r, p1, p9r) axis=1\n"                                          \
  "output f, m, mr, g, hs, h2r, h2m, ccq, nq, q\n"

/* A convolution's bias moved into the layer norm that reads it through a
 * transpose to channels-last (ConvNeXt's block), depthwise and plain, and
 * over 1040 channels (the block-a-row kernel); and one whose transposed
 * result has a second reader (keeps its bias). */
#define LN_GRAPH                                                               \
  "input x: [2,16,9,7]\nweight wd: [16,1,7,7]\nweight bd: [16]\n"              \
  "weight g: [16]\nweight b: [16]\nweight w2: [16,16,3,3]\n"                   \
  "weight b2: [16]\n"                                                          \
  "d = conv2d(x, wd, bd) groups=16\nt = transpose(d) perm=[0,2,3,1]\n"         \
  "l = layernorm(t, g, b) axis=3 eps=1e-5\nc = conv2d(x, w2, b2)\n"            \
  "u = transpose(c) perm=[0,2,3,1]\nm = layernorm(u, g, b) axis=3\n"           \
  "e = conv2d(x, w2, b2)\nv = transpose(e) perm=[0,2,3,1]\n"                   \
  "k = layernorm(v, g, b) axis=3\nq = relu(v)\n"                               \
  "input y: [1,1040,3,2]\nweight wy: [1040,1,3,3]\nweight by: [1040]\n"        \
  "weight gy: [1040]\nweight ey: [1040]\n"                                     \
  "yd = conv2d(y, wy, by) groups=1040\nyt = transpose(yd) perm=[0,2,3,1]\n"    \
  "yl = layernorm(yt, gy, ey) axis=3\noutput l, m, k, q, yl\n"

/* Convolutions as GEMMs on their patches (im2col, and always under
 * SUPEROPT_GEMM=always): a chain of channels-last convolutions of 3x3
 * same padding with bias and relu, stride 2 (asymmetric padding),
 * dilated, 5x5 with explicit uneven pads, a strided 1x1, and a 3x3 on
 * 6 channels (no float4 rows) */
#define IM2COL_GRAPH                                                           \
  "input x: [2,8,12,10]\nweight w1: [16,8,3,3]\nweight b1: [16]\n"             \
  "weight w2: [12,16,3,3]\nweight w3: [16,12,3,3]\nweight b3: [16]\n"          \
  "weight w4: [8,16,5,5]\nweight w5: [6,8,1,1]\nweight w6: [5,6,3,3]\n"        \
  "weight w7: [3,5,1,1]\n"                                                     \
  "a = conv2d(x, w1, b1) act=relu\nb = conv2d(a, w2) stride=[2,2]\n"           \
  "c = conv2d(b, w3, b3) dilation=[2,2] pad=[2,2,2,2]\n"                       \
  "d = conv2d(c, w4) pad=[1,2,3,0] act=relu\n"                                 \
  "e = conv2d(d, w5) stride=[2,1] pad=valid\nf = conv2d(e, w6)\n"              \
  "g = conv2d(f, w7)\noutput g\n"

/* Small graphs with odd shapes, one feature each. */
static const char *const op_graphs[] = {
    /* attention (katt.cu): rank 3 without a scale, d 100 and e 128 (four
     * columns a lane), t 70 (a partial chunk of keys), s 20 (a partial
     * block of rows); rank 2, e 33; rank 4 with k read through a transpose
     * that stays a copy (its input is also an output); t 150 and 600 (past
     * the tensor-core kernel's 128: the fp32 kernel, keys in stages; the
     * split form's softmax with rows in registers and in three passes) */
    "input q3: [3,20,100]\ninput k3: [3,100,70]\ninput v3: [3,70,128]\n"
    "input q2: [5,8]\ninput k2: [8,40]\ninput v2: [40,33]\nweight s2: []\n"
    "input q4: [2,3,9,16]\ninput k4: [2,3,17,16]\ninput v4: [2,3,17,48]\n"
    "input q5: [1,6,16]\ninput k5: [1,16,150]\ninput v5: [1,150,24]\n"
    "input q6: [1,2,16]\ninput k6: [1,16,600]\ninput v6: [1,600,8]\n"
    "b = attention(q3, k3, v3)\nc = attention(q2, k2, v2, s2)\n"
    "e = attention(q5, k5, v5, s2)\nf = attention(q6, k6, v6)\n"
    "kt = transpose(k4) perm=[0,1,3,2]\nd = attention(q4, kt, v4, s2)\n"
    "output b, c, d, kt, e, f\n",
    /* int64 and bool: embedding gather, mask equal / not / where, casts */
    "input ids: i64[2,7]\ninput m: i64[2,7]\nweight emb: [11,33]\n"
    "input s: [2,7,33]\n"
    "weight emb4: [11,32]\ne4 = gather(emb4, ids)\n" /* rows of 4s */
    "e = gather(emb, ids)\neq = equal(ids, m)\nnt = not(eq)\n"
    "f = cast(nt) to=f32\ner: bool[2,7,1] = reshape(eq) shape=[2,7,1]\n"
    "w = where(er, s, e)\ni = cast(f) to=i64\nb = cast(s) to=bool\n"
    /* where with two scalars over a mask laid out like its output
     * (BERT's mask): four elements a thread; true everywhere, then false */
    "input i8: i64[2,1,2,8]\nweight sa: []\nweight sb: []\n"
    "t8 = equal(i8, i8)\nf8 = not(t8)\n"
    "wt = where(t8, sa, sb)\nwf = where(f8, sa, sb)\n"
    /* T5's: a position bias [1,H,S,S] under a padding mask [B,1,S,S] (about
     * half true), a scalar the other value: four outputs of a row a
     * thread */
    "input x9: [2,1,8,8]\ninput pb: [1,3,8,8]\nweight s9: []\n"
    "r9 = relu(x9)\nc9 = cast(r9) to=bool\nw9 = where(c9, pb, s9)\n"
    "output w, f, i, b, wt, wf, w9, e4\n",
    /* conv: asymmetric same padding (stride 2), bias + sigmoid */
    "input x: [3,5,13,11]\nweight w: [7,5,3,3]\nweight b: [7]\n"
    "y = conv2d(x, w, b) stride=[2,2] act=sigmoid\noutput y\n",
    /* conv: 7x7 stride 2 same (pads 2/3), fused bias + relu */
    "input x: [2,3,23,19]\nweight w: [9,3,7,7]\nweight b: [9]\n"
    "y = conv2d(x, w, b) stride=[2,2] act=relu\noutput y\n",
    /* conv: dilated, no bias, tanh; grouped and depthwise */
    "input x: [1,6,17,9]\nweight w: [4,6,3,3]\nweight wg: [6,2,1,3]\n"
    "weight wd: [6,1,3,3]\n"
    "a = conv2d(x, w) dilation=[2,3] act=tanh\n"
    "b = conv2d(x, wg) groups=3 pad=valid stride=[1,2]\n"
    "c = conv2d(x, wd) groups=6 pad=[1,0,2,1] act=gelu\noutput a, b, c\n",
    /* matmul: plain with bias+relu (epilogue), bias+gelu, no bias relu */
    "input a: [37,53]\nweight b: [53,29]\nweight bias: [29]\n"
    "x = matmul(a, b, bias) act=relu\ny = matmul(a, b, bias) act=gelu\n"
    "z = matmul(a, b) act=relu\nw = matmul(a, b, bias)\noutput x, y, z, "
    "w\n",
    /* matmul: batched with batched b, bias + tanh; rank 4 with shared b */
    "input a: [3,17,31]\ninput b: [3,31,19]\nweight bias: [19]\n"
    "input c: [2,3,5,7]\nweight q: [7,11]\n"
    "x = matmul(a, b, bias) act=tanh\ny = matmul(c, q) act=sigmoid\n"
    "z = matmul(a, b)\noutput x, y, z\n",
    /* broadcast binaries and smul */
    "input a: [3,4,5]\ninput b: [4,1]\ninput c: [5]\nweight dv: [3,1,5]\n"
    "input s: []\n"
    "x = ewadd(a, b)\ny = ewsub(c, a)\nz = ewmul(x, y)\nq = ewdiv(z, dv)\n"
    "r = smul(q, s)\nt = ewadd(a, a)\noutput x, y, z, q, r, t\n",
    /* unary maps */
    "input x: [7,13,3]\nweight v: [5,3]\n"
    "a = relu(x)\nb = sigmoid(x)\nc = tanh(x)\nd = gelu(x)\ne = erf(x)\n"
    "f = sqrt(v)\ng = clip(x) min=-0.25 max=0.5\noutput a, b, c, d, e, f, "
    "g\n",
    /* data movement: concat, split, transpose, reshape as a view, slice,
     * pad
     */
    "input x: [2,3,5]\ninput y: [2,4,5]\ninput z: [2,1,5]\n"
    "c = concat(x, y, z) axis=1\np, q, r = split(c) axis=2 sizes=[1,3,1]\n"
    "t = transpose(c) perm=[2,0,1]\nv = reshape(t) shape=[5,16]\n"
    "w = relu(v)\ns = slice(c) starts=[1,2,1] ends=[2,7,4]\n"
    "d = pad(x) pads=[0,1,2,1,0,3] value=-2\noutput p, q, r, w, s, d\n",
    /* pooling */
    "input x: [2,3,11,9]\n"
    "a = avgpool(x) kernel=[3,3] stride=[2,2] pad=same "
    "count_include_pad=1\n"
    "b = avgpool(x) kernel=[3,2] pad=[1,1,1,0] count_include_pad=0\n"
    "c = maxpool(x) kernel=[3,3] stride=[2,2] pad=same\n"
    "d = global_avgpool(x)\noutput a, b, c, d\n",
    /* normalisations and reductions */
    "input x: [3,7,5,3]\ninput s: [4,9,1000]\nweight g: [7]\nweight b: "
    "[7]\n"
    "weight m: [7]\nweight v: [7]\nweight lg: [1000]\nweight lb: [1000]\n"
    /* layer norm rows of 96 floats, over 8192 of them (8 lanes a row), and
     * of 200 without scale or shift */
    "input q: [2,4100,96]\nweight qg: [96]\nweight qb: [96]\n"
    "input p: [5,3,200]\n"
    "bn = batchnorm(x, g, b, m, v) eps=0.001\n"
    "r1 = reduce_mean(x) axes=[1,3]\nr2 = reduce_mean(s) axes=[0,2] "
    "keepdims=0\nsm = softmax(s)\nsm1 = softmax(x) axis=1\n"
    "ln = layernorm(s, lg, lb)\nln2 = layernorm(x) axis=1\n"
    "lq = layernorm(q, qg, qb)\nlp = layernorm(p)\n"
    /* RMSNorm (rms=1) in each layer norm kernel: float4 rows of 1000 and
     * of 96 (8 lanes), the warp kernel (rows of 105), with a shift */
    "rs = layernorm(s, lg) rms=1\nrx = layernorm(x) axis=1 rms=1 eps=1e-6\n"
    "rq = layernorm(q, qg, qb) rms=1\n"
    "output bn, r1, r2, sm, sm1, ln, ln2, lq, lp, rs, rx, rq\n",
    /* constants and enlarge */
    "weight w: [4,3,1,3]\ninput x: [4,6,5,5]\n"
    "e = enlarge(w) kernel=[5,5]\nic = const_iconv() shape=[6,3,3,3]\n"
    "y = conv2d(x, ic) groups=2\nim = const_imm() shape=[5,5]\n"
    "on = const_ones() shape=[2,3,2]\ncp = const_pool() shape=[6,1,3,3]\n"
    "z = conv2d(x, cp) groups=6\noutput e, y, im, on, z\n",
    /* clips (ReLU6) folded into convolutions' bias kernels (plain, with a
     * bias, depthwise, channels-last), and one that must not be (the
     * convolution has its own activation) */
    "input x: [2,6,9,7]\nweight w: [8,6,3,3]\nweight b: [8]\n"
    "weight wd: [8,1,3,3]\nweight bd: [8]\nweight w1: [4,8,1,1]\n"
    "c = conv2d(x, w)\nc6 = clip(c) min=0 max=6\n"
    "d = conv2d(c6, wd, bd) groups=8\nd6 = clip(d) min=-0.5 max=0.75\n"
    "e = conv2d(d6, w1) act=relu\ne6 = clip(e) min=0 max=0.25\n"
    "f = conv2d(x, w, b) stride=[2,2]\nf6 = clip(f) min=0 max=6\n"
    "output e6, f6\n",
    /* relus the lower stage folds into their producers (act=, or a fused
     * node with an element-wise producer; compare_op_graphs runs the
     * graph lowered too), and relus that must not be (the producer is
     * read twice, is an output, or has its own act) */
    "input x: [2,4,9,7]\nweight w: [4,4,3,3]\nweight b: [4]\ninput m: "
    "[6,5]\n"
    "weight q: [5,3]\nweight g: [4]\nweight gb: [4]\nweight mu: [4]\n"
    "weight var: [4]\nweight dv: [4,1,1]\n"
    "c = conv2d(x, w, b)\ncr = relu(c)\na = ewadd(cr, x)\nar = relu(a)\n"
    "n = batchnorm(ar, g, gb, mu, var)\nnr = relu(n)\nmm = matmul(m, q)\n"
    "mr = relu(mm)\nt = conv2d(nr, w) act=tanh\ntr = relu(t)\n"
    "s = ewsub(nr, x)\nsr = relu(s)\nsq = ewmul(s, sr)\n"
    "o = ewdiv(sq, dv)\nor = relu(o)\nr2 = reshape(or) shape=[2,-1]\n"
    "rr = relu(r2)\noutput mr, tr, sq, o, or, rr\n",
    /* residual adds folded into the convolution's bias kernel (with and
     * without bias, either operand order, then relu, clip or nothing; odd
     * and float4 channel counts; residual NCHW while the convolution runs
     * channels-last, and the reverse where the sum is an output), and adds
     * that must not fold (the residual is computed after the convolution,
     * broadcasts, or the convolution is read twice or has an act) */
    "input x: [2,8,9,7]\nweight w: [8,8,3,3]\nweight b: [8]\n"
    "weight w7: [7,8,3,3]\nweight b7: [7]\nweight wp: [7,8,1,1]\n"
    "weight cb: [7,1,1]\nweight w77: [7,7,3,3]\n"
    "c = conv2d(x, w, b)\na = ewadd(c, x)\nar = relu(a)\n"
    "c2 = conv2d(ar, w)\na2 = ewadd(ar, c2)\na2c = clip(a2) min=-1 "
    "max=0.5\n"
    "p = conv2d(a2c, wp)\nc3 = conv2d(a2c, w7, b7)\na3 = ewadd(p, c3)\n"
    "c4 = conv2d(a3, w77, b7) act=relu\na4 = ewadd(c4, a3)\n"
    "c5 = conv2d(x, w7, b7)\na5 = ewadd(c5, cb)\n"
    "c6 = conv2d(x, w7)\na6 = ewadd(c6, a3)\nm6 = ewmul(c6, a6)\n"
    "c7 = conv2d(ar, w, b) stride=[2,2]\nd7 = maxpool(ar) kernel=[2,2] "
    "stride=[2,2] pad=same\na7 = ewadd(d7, c7)\n"
    "output a4, a5, m6, a7\n",
    /* data-movement and reduction fast paths (kmove.cu, kred.cu):
     * tiled transposes with partial tiles, float4 and scalar row copies,
     * a float4 slice, concat and split of more than CXK_PARTS parts,
     * float4 broadcasts (SE-style scale, per-channel bias), row and column
     * reductions (sliced into partial sums), warp and block layer norms,
     * and channels-last pooling, global_avgpool and conversions */
    "input x: [2,40,9,12]\ninput y: [2,9,7,12]\ninput z: [2,9,7,6]\n"
    "input g: [2,40,1,1]\nweight cb: [40,1,1]\ninput u: [1,300,4,8]\n"
    "input l: [5,7,96]\ninput lw: [3,1500]\nweight lg: [96]\n"
    "input im: [1,3,40,40]\nweight wc: [8,3,3,3]\nweight w2: [12,8,3,3]\n"
    "t1 = transpose(x) perm=[0,2,3,1]\nt2 = transpose(y) perm=[0,2,1,3]\n"
    "t3 = transpose(z) perm=[0,2,1,3]\ns1 = slice(x) starts=[0,8,0,0] "
    "ends=[2,24,9,12]\n"
    "c9 = concat(x, s1, x, x, s1, x, x, x, x) axis=1\n"
    "c3 = concat(z, y, z, z, y, z, z, z, z, z) axis=3\n"
    "p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = split(c3) axis=3 "
    "sizes=[1,2,3,4,5,6,7,8,9,27]\n"
    "m = ewmul(x, g)\nb = ewadd(x, cb)\nga = global_avgpool(x)\n"
    "r1 = reduce_mean(x) axes=[1]\nr2 = reduce_mean(u) axes=[1]\n"
    "ln = layernorm(l, lg)\nlb = layernorm(lw)\n"
    "rl = layernorm(l, lg) rms=1\nrb = layernorm(lw) rms=1\n"
    "cv = conv2d(im, wc)\ngc = global_avgpool(cv)\n"
    "mp = maxpool(cv) kernel=[3,3] stride=[2,2] pad=same\n"
    "ap = avgpool(cv) kernel=[3,3] pad=same count_include_pad=0\n"
    "ac = conv2d(ap, w2)\n"
    "mc = conv2d(mp, w2)\ntc = transpose(cv) perm=[0,1,3,2]\n"
    "output t1, t2, t3, s1, c9, p0, p3, p9, m, b, ga, r1, r2, ln, lb, rl, "
    "rb, gc, mc, ac, tc\n",
    /* a ConvNeXt block: transposes to and from [N,H,W,C] around a layer
     * norm and matmuls read and write channels-last tensors directly
     * (layout.c: a copy of bytes, no conversion) */
    "input x: [2,16,10,9]\nweight wd: [16,1,7,7]\nweight bd: [16]\n"
    "weight g: [16]\nweight b: [16]\nweight m1: [16,64]\nweight m2: "
    "[64,16]\n"
    "weight ls: [16,1,1]\nweight w2: [8,16,3,3]\nweight w3: [8,8,3,3]\n"
    "d = conv2d(x, wd, bd) groups=16\nt = transpose(d) perm=[0,2,3,1]\n"
    "n = layernorm(t, g, b)\nh = matmul(n, m1) act=gelu\nq = matmul(h, "
    "m2)\n"
    "u = transpose(q) perm=[0,3,1,2]\ns = ewmul(u, ls)\nr = ewadd(s, x)\n"
    "c = conv2d(r, w2)\nsl = slice(d) starts=[0,4,0,0] ends=[2,12,10,9]\n"
    "e = conv2d(sl, w3) stride=[2,2]\npd = pad(d) pads=[0,0,0,1,0,0,1,0] "
    "value=0.5\npc = conv2d(pd, w2) pad=valid\noutput c, e, pc\n",
    /* the same block after scale folding: lowered, the bias and the
     * residual (the block's channels-last input) go into the second
     * matmul, the residual through a transpose (lower_epi.c; both
     * transposes views, layout.c); then one whose residual is the NCHW
     * graph input, not lowered */
    "input x: [2,16,10,9]\nweight wd: [16,1,7,7]\nweight m1: [16,32]\n"
    "weight m2: [32,16]\nweight bm: [16]\nweight m3: [16,16]\n"
    "weight w2: [8,16,3,3]\n"
    "d = conv2d(x, wd) groups=16\nt = transpose(d) perm=[0,2,3,1]\n"
    "h = matmul(t, m1) act=relu\nq = matmul(h, m2)\nqb = ewadd(bm, q)\n"
    "u = transpose(qb) perm=[0,3,1,2]\nr = ewadd(u, d)\n"
    "t2 = transpose(r) perm=[0,2,3,1]\nq2 = matmul(t2, m3)\n"
    "u2 = transpose(q2) perm=[0,3,1,2]\nr2 = ewadd(x, u2)\n"
    "c = conv2d(r2, w2)\noutput c, r\n",
    /* attention heads: the batched matmuls read q, k and v through their
     * transposes and write the context through its transpose (cuBLAS's
     * pointer-array GEMM, layout.c), except where a transpose has another
     * reader (e, also an output) */
    "input x: [2,5,24]\nweight wq: [24,24]\nweight wk: [24,24]\n"
    "weight wv: [24,24]\nweight wo: [24,24]\n"
    "q = matmul(x, wq)\nqs = reshape(q) shape=[2,5,4,6]\n"
    "qh = transpose(qs) perm=[0,2,1,3]\nk = matmul(x, wk)\n"
    "ks = reshape(k) shape=[2,5,4,6]\nkh = transpose(ks) perm=[0,2,3,1]\n"
    "v = matmul(x, wv)\nvs = reshape(v) shape=[2,5,4,6]\n"
    "vh = transpose(vs) perm=[0,2,1,3]\ns = matmul(qh, kh)\n"
    "p = softmax(s) axis=3\nc = matmul(p, vh)\n"
    "ct = transpose(c) perm=[0,2,1,3]\ncm = reshape(ct) shape=[2,5,24]\n"
    "o = matmul(cm, wo)\ne = transpose(vs) perm=[0,2,1,3]\n"
    "f = matmul(p, e)\noutput o, f, e\n",
    /* depthwise convolutions channels-last (kconv.cu where it is faster,
     * and always in the test below, which checks that nodes named dw* run
     * it): every result read by another convolution (outputs stay NCHW and
     * go to cuDNN). 3 x 3 with asymmetric padding; 5 x 5 with bias and relu
     * into a residual add; 7 x 7 valid; stride 2: 3 x 3 with bias and a
     * clip (MobileNet's relu6), 5 x 5 with bias, 7 x 7, 3 x 3 with
     * asymmetric padding, 3 x 3 with bias into a residual add; 3 x 3 with a
     * sigmoid (not the kernel's epilogue: a kernel after it); widths not a
     * multiple of the pixels a thread computes */
    "input x: [2,12,11,13]\nweight w0: [12,12,1,1]\nweight d3: [12,1,3,3]\n"
    "weight d5: [12,1,5,5]\nweight b5: [12]\nweight d7: [12,1,7,7]\n"
    "weight w1: [8,12,3,3]\nweight s3: [12,1,3,3]\nweight t3: [12]\n"
    "weight s5: [12,1,5,5]\nweight s7: [12,1,7,7]\nweight wo: [8,12,1,1]\n"
    "a = conv2d(x, w0)\ndw1 = conv2d(a, d3) groups=12 pad=[1,0,1,2]\n"
    "dw2 = conv2d(dw1, d5, b5) groups=12 act=relu\nr = ewadd(dw2, a)\n"
    "dw3 = conv2d(r, d7) groups=12 pad=valid\nf = conv2d(dw3, w1)\n"
    "dw4 = conv2d(r, s3, t3) groups=12 stride=[2,2] pad=[1,1,1,1]\n"
    "g6 = clip(dw4) min=0 max=0.5\n"
    "dw5 = conv2d(g6, s5, t3) groups=12 stride=[2,2] pad=[2,2,2,2]\n"
    "h = conv2d(dw5, wo)\n"
    "dw6 = conv2d(r, s7) groups=12 stride=[2,2] pad=[3,3,3,3]\n"
    "dw7 = conv2d(dw6, s3, t3) groups=12 stride=[2,2] pad=[0,0,1,1]\n"
    "v = conv2d(dw7, wo)\n"
    "dw8 = conv2d(dw6, s3, t3) groups=12 pad=[1,1,1,1] act=sigmoid\n"
    "w = conv2d(dw8, wo)\n"
    "dw9 = conv2d(r, s3, t3) groups=12 stride=[2,2] pad=[1,1,1,1]\n"
    "q = ewadd(dw9, dw6)\nu = conv2d(q, wo)\noutput f, h, v, w, u\n",
    /* 6 channels: the kernel's one- and two-channel thread shapes only
     * (the four-channel ones refused: cuDNN runs them) */
    "input x: [1,6,9,10]\nweight w6: [6,6,1,1]\nweight d3: [6,1,3,3]\n"
    "weight b: [6]\nweight d5: [6,1,5,5]\nweight wo: [4,6,1,1]\n"
    "x0 = conv2d(x, w6)\n"
    "dwa = conv2d(x0, d3, b) groups=6 stride=[2,2] pad=[1,1,1,1] act=relu\n"
    "dwb = conv2d(x0, d5) groups=6 pad=[2,2,2,2]\na = conv2d(dwa, wo)\n"
    "c = conv2d(dwb, wo)\noutput a, c\n",
    /* convolutions whose kernel equals their stride (ConvNeXt's stem and
     * downsampling: patches and a GEMM where that is faster, and
     * always under SUPEROPT_GEMM=always): 2x2 with bias and relu, 4x4 on
     * three channels, 2x1 */
    "input x: [2,3,16,8]\nweight w4: [8,3,4,4]\nweight b4: [8]\n"
    "weight w2: [12,8,2,2]\nweight b2: [12]\nweight w21: [4,8,2,1]\n"
    "a = conv2d(x, w4, b4) stride=[4,4] pad=valid\n"
    "b = conv2d(a, w2, b2) stride=[2,2] pad=valid act=relu\n"
    "c = conv2d(a, w21) stride=[2,1] pad=valid\noutput b, c\n",
    IM2COL_GRAPH,
    /* residual adds folded into channels-last convolutions (under
     * SUPEROPT_GEMM=always GEMMs reading the residual as C): with bias and
     * the relu after the add, and with neither (read by a convolution, so
     * channels-last: a graph output would be NCHW) */
    "input x: [2,8,9,7]\nweight w1: [8,8,3,3]\nweight b1: [8]\n"
    "weight w2: [8,8,3,3]\nweight b2: [8]\n"
    "a = conv2d(x, w1, b1) pad=same act=relu\nb = conv2d(a, w2, b2) pad=same\n"
    "s = ewadd(b, a)\nr = relu(s)\nc = conv2d(r, w2) pad=same\n"
    "s2 = ewadd(c, r)\nd = conv2d(s2, w1) pad=same\noutput d\n",
    /* ShuffleNet blocks: a channel shuffle (reshape, transpose [0,2,1,3,4],
     * reshape) between a concat of channels-last convolutions and slices,
     * and one whose result is a graph output */
    "input x: [2,8,9,7]\nweight w1: [8,8,1,1]\nweight wd: [8,1,3,3]\n"
    "weight w2: [8,8,1,1]\nweight w3: [16,16,1,1]\n"
    "a = conv2d(x, w1) act=relu\nb = conv2d(a, wd) groups=8\n"
    "c = conv2d(b, w2) act=relu\nk = concat(a, c) axis=1\n"
    "r = reshape(k) shape=[2,2,8,9,7]\nt = transpose(r) perm=[0,2,1,3,4]\n"
    "s = reshape(t) shape=[2,16,9,7]\n"
    "s1 = slice(s) starts=[0,0,0,0] ends=[2,8,9,7]\n"
    "s2 = slice(s) starts=[0,8,0,0] ends=[2,16,9,7]\n"
    "e = conv2d(s2, w2) act=relu\nk2 = concat(s1, e) axis=1\n"
    "f = conv2d(k2, w3)\nr2 = reshape(k2) shape=[2,4,4,9,7]\n"
    "t2 = transpose(r2) perm=[0,2,1,3,4]\ns3 = reshape(t2) "
    "shape=[2,16,9,7]\n"
    "output f, s3\n",
    /* squeeze-and-excitation: 1x1 convolutions on 1x1 images (the GEMM
     * path in either layout), with bias, relu, then none */
    "input x: [2,8,5,6]\nweight w1: [4,8,1,1]\nweight b1: [4]\n"
    "weight w2: [8,4,1,1]\nweight b2: [8]\nweight w3: [8,8,3,3]\n"
    "c = conv2d(x, w3) act=relu\ng = global_avgpool(c)\n"
    "f1 = conv2d(g, w1, b1) act=relu\nf2 = conv2d(f1, w2, b2)\n"
    "s = sigmoid(f2)\nm = ewmul(c, s)\noutput m\n",
    SE_GRAPH,
    LN_GRAPH,
    MOVE_RELU_GRAPH,
    /* the lower stage's moves with other activations (one in place after
     * the copy), every acted= form, channels-last, and a pad that crops */
    "input x: [2,8,9,7]\nweight w: [12,8,3,3]\nc = conv2d(x, w)\n"
    "a, ar, b, e = split(c) axis=1 sizes=[4,3,5] act=sigmoid "
    "acted=[2,1,0]\nk = concat(a, ar, b, e) axis=1 act=tanh\n"
    "p = pad(k) pads=[0,0,-1,1,0,0,2,-2]\n"
    "q, r = split(c) axis=1 sizes=[6,6] act=relu\noutput k, p, q, r\n",
    /* channel shuffles (lowered to concat_shuffle: lower_se.c): g = 4 of
     * three inputs (one an NCHW graph input) into three uneven slices, one
     * of them also an output; a shuffle read by a slice and a convolution
     * (written whole); g = 2 of NCHW inputs only */
    "input x: [2,8,5,6]\ninput z: [2,4,5,6]\nweight w1: [8,8,1,1]\n"
    "weight w2: [4,4,3,3]\nweight w4: [5,20,1,1]\n"
    "a = conv2d(x, w1) act=relu\nb = conv2d(z, w2)\n"
    "k = concat(a, b, z) axis=1\nr = reshape(k) shape=[2,4,4,5,6]\n"
    "t = transpose(r) perm=[0,2,1,3,4]\ns = reshape(t) shape=[2,16,5,6]\n"
    "s1 = slice(s) starts=[0,0,0,0] ends=[2,3,5,6]\n"
    "s2 = slice(s) starts=[0,3,0,0] ends=[2,11,5,6]\n"
    "s3 = slice(s) starts=[0,11,0,0] ends=[2,16,5,6]\n"
    "c2 = conv2d(s2, w1) act=relu\nk2 = concat(s1, c2, s3, b) axis=1\n"
    "r2 = reshape(k2) shape=[2,2,10,5,6]\nt2 = transpose(r2) "
    "perm=[0,2,1,3,4]\ny2 = reshape(t2) shape=[2,20,5,6]\n"
    "q = slice(y2) starts=[0,4,0,0] ends=[2,20,5,6]\nf = conv2d(y2, w4)\n"
    "k3 = concat(x, z) axis=1\nr3 = reshape(k3) shape=[2,2,6,5,6]\n"
    "t3 = transpose(r3) perm=[0,2,1,3,4]\ny3 = reshape(t3) "
    "shape=[2,12,5,6]\n"
    "h1 = slice(y3) starts=[0,0,0,0] ends=[2,6,5,6]\n"
    "h2 = slice(y3) starts=[0,6,0,0] ends=[2,12,5,6]\n"
    "m = ewmul(h1, h2)\noutput s3, q, f, m\n",
};

/* The graphs above parse, and the CPU runs them (no GPU needed). */
static const char *const cl_graph,
    *const residual_graph, *const bias_fused_graph, *const mm_fold_graph;
Test(cuda, op_graphs_are_valid) {
  ir_graph *cg = parse(cl_graph);
  ir_graph_free(cg);
  cg = parse(residual_graph);
  ir_graph_free(cg);
  cg = parse(bias_fused_graph);
  ir_graph_free(cg);
  cg = parse(mm_fold_graph);
  ir_graph_free(cg);
  for (int q = 0; q < 4; q++) {
    cg = parse(qkv_graph[q]);
    ir_graph_free(cg);
  }
  for (size_t i = 0; i < sizeof op_graphs / sizeof *op_graphs; i++) {
    ir_graph *g = parse(op_graphs[i]);
    base_diag d;
    ex_values *v = ex_values_new(g);
    cr_assert_eq(ex_fill_random(g, v, 3, &d), BASE_OK, "%s", d.msg);
    ex_options eo = {1, 0};
    cr_assert_eq(ex_run(g, v, &eo, &d), BASE_OK, "graph %zu: %s", i, d.msg);
    ex_values_free(v);
    ir_graph_free(g);
  }
}

/* Every op graph run on the GPU with o, against the CPU reference within
 * tol; failures name "op graph I (label)". */
static void compare_op_graphs(const gpu_options *o, double tol,
                              const char *label) {
  for (size_t i = 0; i < sizeof op_graphs / sizeof *op_graphs; i++) {
    ir_graph *g = parse(op_graphs[i]);
    char what[80];
    snprintf(what, sizeof what, "op graph %zu (%s)", i, label);
    compare(g, o, tol, what);
    /* lowered (src/fuse/lower.h): residual inputs, act=clip, ... */
    base_diag d;
    lower_stats st;
    ir_graph *h = lower_graph(g, &st, &d);
    cr_assert(h, "%s", d.msg);
    snprintf(what, sizeof what, "op graph %zu lowered (%s)", i, label);
    if (st.epilogues + st.moves + st.se + st.shuffles)
      compare(h, o, tol, what);
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* TF32: 2e-3 (chains of three tensor-core convolutions with clips came to
 * 1.3e-3 where cuDNN's fused engines run them); 1e-3 on the legacy path,
 * which has none. */
Test(cuda, every_operator_tf32) {
  need_gpu();
  gpu_options o = {.fp32_strict = 0}, legacy = {.legacy_conv = 1};
  compare_op_graphs(&o, 2e-3, "tf32");
  compare_op_graphs(&legacy, 1e-3, "tf32, legacy conv");
}

/* The channels a thread of each of kconv.cu's thread shapes computes (its
 * kWidth; the library is dlopened, its tables are not visible here). */
static const int dw_width[] = {1, 2, 2, 2, 2, 2, 2, 4, 4, 4};
static int dw_var, dw_half; /* dw_half: half types take twice the channels
                               but in shape 0 */

/* Every node named dw* runs kconv.cu's kernel where shape dw_var's
 * channels a thread divide its channels, cuDNN where not. */
static void dw_engines(const ir_graph *g, const gpu_plan *p, const char *what) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_tensor *y = &g->tensors[g->nodes[i].out[0]];
    if (strncmp(y->name, "dw", 2))
      continue;
    int width = dw_width[dw_var] * (dw_half && dw_var ? 2 : 1);
    int own = y->shape.dim[1] % width == 0;
    const char *e = gpu_plan_engine(p, i);
    cr_expect(own ? !strcmp(e, "kconv depthwise") : !!strstr(e, "cuDNN"),
              "%s: %s runs on %s", what, y->name, e);
  }
}

/* The same graphs with the executor's depthwise kernel wherever it runs
 * (not only where it beats cuDNN), in each of its thread shapes. */
Test(cuda, every_operator_own_depthwise) {
  need_gpu();
  gpu_options o = {.fp32_strict = 1};
  int nv = (int)(sizeof dw_width / sizeof *dw_width);
  plan_hook = dw_engines;
  for (dw_var = 0; dw_var < nv; dw_var++) {
    char var[16], label[32];
    snprintf(var, sizeof var, "%d", dw_var);
    setenv("SUPEROPT_DW", var, 1);
    snprintf(label, sizeof label, "own depthwise %d", dw_var);
    compare_op_graphs(&o, 1e-5, label);
  }
  plan_hook = NULL;
  unsetenv("SUPEROPT_DW");
}

/* kwg.cu's warpgroup matmul wherever it runs ($SUPEROPT_WG=1: not only
 * where it beats cuBLASLt and its epilogue kernel): bias with gelu, relu
 * alone, bias alone and a residual folded in by the lowering (q), rows
 * past a 128-row tile (m 150), a partial n-tile (n 200); h's k (200) is
 * not a multiple of 32: cuBLASLt. On an sm_90 device x, y and z run it. */
static int wg_sm90;
static void wg_engines(const ir_graph *g, const gpu_plan *p, const char *what) {
  for (int i = 0; i < g->nnodes; i++) {
    const char *name = g->tensors[g->nodes[i].out[0]].name, *e;
    e = gpu_plan_engine(p, i);
    if (strchr("xyz", name[0]) && !name[1] && g->nodes[i].op == IR_OP_MATMUL)
      cr_expect(!wg_sm90 || !strcmp(e, "wgmma kernel"), "%s: %s runs on %s",
                what, name, e);
    if (!strcmp(name, "h"))
      cr_expect_str_eq(e, "cuBLASLt", "%s: h", what);
  }
}

Test(cuda, matmul_wgmma_epilogues) {
  need_gpu();
  setenv("SUPEROPT_WG", "1", 1);
  base_diag d;
  gpu_ctx *c;
  char desc[256];
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  gpu_ctx_describe(c, desc, sizeof desc);
  wg_sm90 = strstr(desc, "(sm_90)") != NULL;
  gpu_ctx_free(c);
  ir_graph *g = parse("input a: [3,50,96]\nweight b: [96,200]\n"
                      "weight bias: [200]\ninput r: [3,50,200]\n"
                      "weight w2: [200,64]\n"
                      "x = matmul(a, b, bias) act=gelu\ny = matmul(a, b) "
                      "act=relu\nz = matmul(a, b, bias)\nq = ewadd(z, r)\n"
                      "h = matmul(x, w2)\noutput x, y, q, h\n");
  gpu_options o = {.fp32_strict = 0};
  plan_hook = wg_engines;
  compare(g, &o, 2e-3, "wgmma");
  lower_stats st;
  ir_graph *h = lower_graph(g, &st, &d);
  cr_assert(h, "%s", d.msg);
  compare(h, &o, 2e-3, "wgmma, lowered");
  plan_hook = NULL;
  ir_graph_free(h);
  ir_graph_free(g);
  unsetenv("SUPEROPT_WG");
}

/* The same graphs with every channels-last convolution of groups 1 run as
 * a cuBLASLt GEMM (ops.c: over its patches unless 1x1, stride 1 and
 * unpadded), not only where it beats cuDNN: bias, relu and a channels-last
 * residual (as C) in the epilogue, or the convolution's own epilogue after
 * it (a residual in the other layout, clip, a bias moved into a fused
 * reader). */
Test(cuda, every_operator_conv_gemm) {
  need_gpu();
  setenv("SUPEROPT_GEMM", "always", 1);
  ir_graph *g = parse(IM2COL_GRAPH);
  base_diag d;
  gpu_ctx *c;
  gpu_plan *p;
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
  for (int i = 0; i < g->nnodes - 1; i++) /* all but g (NCHW, 1x1) */
    cr_expect_str_eq(gpu_plan_engine(p, i), "cuBLASLt GEMM on im2col patches",
                     "node %d", i);
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ir_graph_free(g);
  gpu_options strict = {.fp32_strict = 1}, tf32 = {.fp32_strict = 0};
  compare_op_graphs(&strict, 1e-5, "conv GEMM");
  compare_op_graphs(&tf32, 1e-3, "conv GEMM, tf32");
  unsetenv("SUPEROPT_GEMM");
}

Test(cuda, split_read_in_place_by_attention) {
  need_gpu();
  gpu_options tf32 = {0}, strict = {.fp32_strict = 1}, poison = {.poison = 1},
              eager = {.no_graph = 1};
  const gpu_options *runs[] = {&tf32, &strict, &poison, &eager};
  plan_hook = qkv_engines;
  for (qkv_case = 0; qkv_case < 4; qkv_case++) {
    ir_graph *g = parse(qkv_graph[qkv_case]);
    for (int r = 0; r < 4; r++) {
      char what[64];
      snprintf(what, sizeof what, "qkv graph %d, run %d", qkv_case, r);
      compare(g, runs[r], r == 1 ? 1e-5 : 2e-3, what);
    }
    ir_graph_free(g);
  }
  plan_hook = NULL;
}

/* Attention in each form ($SUPEROPT_ATTENTION): katt.cu's kernel (tensor
 * cores where t <= 128, else fp32), split (cuBLAS's batched GEMMs and a
 * softmax) and kflash.cu's flash kernel, TF32 and strict (where flash,
 * TF32 only, falls back to the kernel), against the CPU; the nodes do run
 * in that form. */
static const char *att_form;
static int att_strict;
static void att_engines(const ir_graph *g, const gpu_plan *p,
                        const char *what) {
  const char *want = !strcmp(att_form, "split") ? "cuBLAS batched GEMMs and "
                                                  "softmax"
                     : !strcmp(att_form, "flash") && !att_strict
                         ? "flash attention kernel"
                         : "attention kernel";
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_ATTENTION)
      cr_expect_str_eq(gpu_plan_engine(p, i), want, "%s: node %d", what, i);
}

static void att_compare_forms(const char *text, const char *label) {
  static const char *const forms[] = {"kernel", "split", "flash"};
  gpu_options tf32 = {0}, strict = {.fp32_strict = 1};
  plan_hook = att_engines;
  ir_graph *g = parse(text);
  for (int f = 0; f < 3; f++) {
    att_form = forms[f];
    setenv("SUPEROPT_ATTENTION", att_form, 1);
    char what[96];
    snprintf(what, sizeof what, "%s, %s, tf32", att_form, label);
    att_strict = 0;
    compare(g, &tf32, 2e-3, what);
    snprintf(what, sizeof what, "%s, %s, strict", att_form, label);
    att_strict = 1;
    compare(g, &strict, 1e-5, what);
  }
  ir_graph_free(g);
  unsetenv("SUPEROPT_ATTENTION");
  plan_hook = NULL;
}

/* The attention op graph and the heads read in place. */
Test(cuda, attention_both_forms) {
  need_gpu();
  const char *graphs[] = {op_graphs[0], qkv_graph[2], qkv_graph[3]};
  for (int k = 0; k < 3; k++) {
    char label[32];
    snprintf(label, sizeof label, "graph %d", k);
    att_compare_forms(graphs[k], label);
  }
}

/* Attention's row layout (heads=, what the lower stage makes of ViT's
 * packed QKV and BERT's separate projections): q, k and v read in the
 * projection's rows at their column offsets, the result written [B,S,H*E]
 * (no copy), packed [B,S,3C] with a scale, sequence-first [S,B,3C] at
 * batch 2, and separate [B,S,C] tensors with a mask and the guard. */
static const char att_rows_graph[] =
    "input x: [2,7,96]\ninput xs: [7,2,96]\nweight s: []\n"
    "input pq: [2,7,32]\ninput pk: [2,9,32]\ninput pv: [2,9,48]\n"
    "input w: [2,1,1,9]\n"
    "n = neg(w)\nm = relu(n)\nb = log(m)\n"
    "a = attention(x, x, x, s) heads=2 cols=[0,32,64] hdim=[16,16]\n"
    "c = attention(xs, xs, xs) heads=4 cols=[0,32,64] hdim=[8,8] "
    "seqfirst=1\n"
    "e = attention(pq, pk, pv, s, b) guard=1 heads=2 cols=[0,0,8] "
    "hdim=[16,20]\n"
    "output a, c, e\n";

Test(cuda, attention_row_layout) {
  need_gpu();
  att_compare_forms(att_rows_graph, "rows");
}

/* Attention with a bias: -inf masks (log(relu(-w))) per head broadcast
 * over the batch, rows masked everywhere with the guard (0, as the CPU),
 * a finite bias of rank 2 on rank-3 scores with 150 keys (the fp32
 * kernel, past the tensor cores' 128; three key tiles of the flash
 * kernel). The masks' w are inputs, drawn from [-1, 1] (as weights they
 * would be drawn for the bias slot's hint through the weight-only chain,
 * all positive: every row masked, the CPU's a all NaN and c all 0). */
static const char att_bias_graph[] =
    "input q: [2,3,9,16]\ninput k: [2,3,16,20]\ninput v: [2,3,20,24]\n"
    "weight s: []\ninput w1: [3,9,20]\ninput w2: [2,1,9,1]\n"
    "input q3: [4,5,8]\ninput k3: [4,8,150]\ninput v3: [4,150,8]\n"
    "weight b3: [5,150]\n"
    "n1 = neg(w1)\nm1 = relu(n1)\nb1 = log(m1)\nn2 = neg(w2)\n"
    "m2 = relu(n2)\nb2 = log(m2)\n"
    "a = attention(q, k, v, s, b1)\nc = attention(q, k, v, s, b2) guard=1\n"
    "e = attention(q3, k3, v3, s, b3) guard=1\noutput a, c, e\n";

Test(cuda, attention_bias_and_guard) {
  need_gpu();
  att_compare_forms(att_bias_graph, "bias");
}

/* The transformers' shapes at batch 2 (kflash.cu's tiles at their
 * edges): ViT-B/16's packed QKV rows (197 tokens: a last query block of
 * 5 rows, three warps idle, a last key tile of 5 keys; 2 heads of 64);
 * Swin's windows (49 tokens, 3 heads of 32) with a relative-position bias
 * [3,49,49] broadcast over the windows, a shift mask of large finite
 * negatives (-100 padded in: keys 30..48 of every row, and five rows
 * masked everywhere) broadcast over the heads, and both added; BERT's
 * separate projections (128 tokens, 2 heads of 64) with a padding mask
 * of -10000 past each sequence's 100 tokens; d 64 with e 48 over 90 keys
 * (two tiles, the second partial). */
static const char att_flash_graph[] =
    "input x: [2,197,384]\nweight s: []\n"
    "a = attention(x, x, x, s) heads=2 cols=[0,128,256] hdim=[64,64]\n"
    "input xw: [8,49,288]\ninput rp: [3,49,49]\ninput mw: [8,1,44,30]\n"
    "mk = pad(mw) pads=[0,0,5,0,0,0,0,19] value=-100\nbw = ewadd(rp, mk)\n"
    "c = attention(xw, xw, xw, s, rp) heads=3 cols=[0,96,192] hdim=[32,32]\n"
    "e = attention(xw, xw, xw, s, mk) heads=3 cols=[0,96,192] hdim=[32,32]\n"
    "f = attention(xw, xw, xw, s, bw) heads=3 cols=[0,96,192] hdim=[32,32]\n"
    "input bq: [2,128,128]\ninput bk: [2,128,128]\ninput bv: [2,128,128]\n"
    "input pm: [2,1,1,100]\n"
    "pb = pad(pm) pads=[0,0,0,0,0,0,0,28] value=-10000\n"
    "h = attention(bq, bk, bv, s, pb) heads=2 cols=[0,0,0] hdim=[64,64]\n"
    "input eq: [2,70,128]\ninput ek: [2,90,128]\ninput ev: [2,90,96]\n"
    "i = attention(eq, ek, ev, s) heads=2 cols=[0,0,0] hdim=[64,48]\n"
    "output a, c, e, f, h, i\n";

Test(cuda, attention_transformer_shapes) {
  need_gpu();
  att_compare_forms(att_flash_graph, "transformers");
}

/* ---- half precision (docs/half.md, docs/cuda.md) ---------------------
 * A half graph runs on the GPU against the CPU executor on the same
 * seeded values (ex_fill_random rounds them to the graph's types), each
 * output element within the check's half tolerance: |gpu - cpu| <= tol *
 * (max|cpu| + |cpu|), tol = ex_half_tolerance(type, depth) (as --check).
 * The executor's half kernels accumulate in float32 as the CPU does, so
 * the two differ by the order of sums and a rounding step or two. Run
 * them alone: build/test_cuda --filter='cuda/half*'. */

static void compare_half_as(const ir_graph *g, const gpu_options *opt,
                            const char *what) {
  gpu_ctx *c;
  gpu_plan *p;
  ir_dtype t = ir_graph_float_type(g);
  cr_assert(ir_dtype_is_half(t), "%s: not a half graph", what);
  double tol = ex_half_tolerance(t, ex_graph_depth(g));
  ex_values *v = run_both(g, opt, what, &c, &p);
  for (int i = 0; i < g->noutputs; i++) {
    int o = g->outputs[i];
    int64_t n = ir_shape_numel(&g->tensors[o].shape);
    float *y = download(g, p, o);
    const float *r = v->v[o];
    double mx = 0, worst = 0, mag = 0;
    for (int64_t k = 0; k < n; k++)
      mx = fmax(mx, fabs(r[k]));
    int64_t at = 0;
    for (int64_t k = 0; k < n; k++) {
      double e = fabs((double)y[k] - r[k]) / (tol * (mx + fabs(r[k])) + 1e-30);
      if (!(e <= worst)) /* NaN too */
        worst = e, at = k;
      mag += fabs(r[k]);
      /* an output of the graph's half type holds values of that type */
      if (ir_dtype_is_half(g->tensors[o].dtype))
        cr_assert_eq(y[k], ir_dtype_round(y[k], g->tensors[o].dtype),
                     "%s: %s[%lld] = %g is no %s value", what,
                     g->tensors[o].name, (long long)k, y[k],
                     ir_dtype_name(g->tensors[o].dtype));
    }
    cr_expect(worst <= 1.0,
              "%s: output %s: element %lld gpu %g cpu %g: %.2f x the "
              "tolerance %.3g",
              what, g->tensors[o].name, (long long)at, y[at], r[at], worst,
              tol);
    cr_expect(mag > 0, "%s: output %s is all zero", what, g->tensors[o].name);
    free(y);
  }
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ex_values_free(v);
}

/* Channels-last (the default) and NCHW (--nchw). */
static void compare_half(const ir_graph *g, const char *what) {
  gpu_options cl = {0}, nchw = {.nchw = 1};
  char w[96];
  snprintf(w, sizeof w, "%s, channels-last", what);
  compare_half_as(g, &cl, w);
  snprintf(w, sizeof w, "%s, NCHW", what);
  compare_half_as(g, &nchw, w);
}

/* g's text with every "@" replaced by the type name (f16, bf16), parsed. */
static ir_graph *parse_typed(const char *text, const char *ty) {
  char buf[4096];
  size_t k = 0;
  for (const char *q = text; *q && k + 8 < sizeof buf; q++)
    if (*q == '@')
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%s", ty);
    else
      buf[k++] = *q;
  buf[k] = 0;
  return parse(buf);
}

static const char *const half_types[] = {"bf16", "f16"};

/* text parsed in bf16 and in f16 (parse_typed), each against the CPU. */
static void compare_half_types(const char *text) {
  for (int i = 0; i < 2; i++) {
    ir_graph *g = parse_typed(text, half_types[i]);
    compare_half(g, half_types[i]);
    ir_graph_free(g);
  }
}

/* g converted to bf16 and to f16 as run --dtype converts a model
 * (ir_graph_to_dtype), each against the CPU; with any set, a conversion
 * the policy leaves in float32 is passed over, else refused. */
static void compare_converted(const ir_graph *g, const char *what, int any) {
  for (int i = 0; i < 2; i++) {
    base_diag d;
    ir_graph *h = ir_graph_to_dtype(g, i ? IR_DT_F16 : IR_DT_BF16, &d);
    cr_assert_not_null(h, "%s: %s", what, d.msg);
    char w[64];
    snprintf(w, sizeof w, "%s %s", what, half_types[i]);
    if (!any || ir_dtype_is_half(ir_graph_float_type(h)))
      compare_half(h, w);
    ir_graph_free(h);
  }
}

/* Splits along the last axis that only fused nodes read, directly or
 * through a reshape splitting the last dimension (Llama's merged
 * projections: layout.c, gpu_layout_fused_splits): the split a view, each
 * fused kernel reading its column block in place. Parts of 8 and 16
 * columns (the vector forms), an unread part, odd widths (the scalar form,
 * a row reduction reading a block); the same split runs where a part is an
 * output ([1]) or a reshape merges rows ([2]). @: the type. */
#define FSPLIT_BODY                                                            \
  "input x: @[2,5,16]\nweight w: @[16,48]\nweight c: @[1,5,1,4]\n"             \
  "weight wo: @[16,27]\n"                                                      \
  "y = matmul(x, w)\na, b, q, r = split(y) axis=2 sizes=[8,8,16,16]\n"         \
  "g = fused(a, b) { t0 = sigmoid($0); t1 = ewmul($0, t0); "                   \
  "t2 = ewmul(t1, $1) }\nqs = reshape(q) shape=[2,5,4,4]\n"                    \
  "h = fused(qs, c) { t0 = ewmul($0, $1); t1 = ewadd(t0, $0) }\n"              \
  "z = matmul(x, wo)\nu, v, e = split(z) axis=2 sizes=[9,9,9]\n"               \
  "n = fused(u, v) { t0 = ewadd($0, $1); t1 = softmax(t0) axis=2 }\n"          \
  "m = fused(e) { t0 = relu($0) }\n"
static const char *const fsplit_graph[3] = {
    FSPLIT_BODY "output g, h, n, m\n", FSPLIT_BODY "output g, h, n, m, a, v\n",
    FSPLIT_BODY "qm = reshape(q) shape=[10,16]\n"
                "k = fused(qm) { t0 = relu($0) }\noutput g, h, n, m, k\n"};

static int fsplit_case;
static void fsplit_engines(const ir_graph *g, const gpu_plan *p,
                           const char *what) {
  int nsplit = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_SPLIT) {
      const char *e = gpu_plan_engine(p, i);
      int first = nsplit++ == 0; /* y's split; z's second */
      int view = fsplit_case == 0 || (fsplit_case == 2 && !first);
      cr_expect(view ? !strcmp(e, "view") : !!strcmp(e, "view"),
                "%s: split %d runs on %s", what, nsplit, e);
    }
  cr_expect_eq(nsplit, 2, "%s", what);
}

Test(cuda, split_read_in_place_by_fused) {
  need_gpu();
  gpu_options tf32 = {0}, poison = {.poison = 1}, eager = {.no_graph = 1};
  const gpu_options *runs[] = {&tf32, &poison, &eager};
  plan_hook = fsplit_engines;
  for (fsplit_case = 0; fsplit_case < 3; fsplit_case++) {
    ir_graph *g = parse_typed(fsplit_graph[fsplit_case], "");
    for (int r = 0; r < 3; r++) {
      char what[64];
      snprintf(what, sizeof what, "fused split graph %d, run %d", fsplit_case,
               r);
      compare(g, runs[r], 2e-3, what);
    }
    ir_graph_free(g);
    compare_half_types(fsplit_graph[fsplit_case]);
  }
  plan_hook = NULL;
}

/* A split of a part read in place (Llama's merged projection under
 * --passes none: v and a wide part, the wide part split in two, one of
 * them reshaped to heads): both splits run as views, each fused kernel
 * reading its block at its offset in the product's rows; equal to the CPU
 * executor, poisoned and eager too. */
static void nsplit_engines(const ir_graph *g, const gpu_plan *p,
                           const char *what) {
  int nsplit = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_SPLIT) {
      nsplit++;
      cr_expect(!strcmp(gpu_plan_engine(p, i), "view"), "%s: split %d runs",
                what, nsplit);
    }
  cr_expect_eq(nsplit, 2, "%s", what);
}

Test(cuda, nested_split_read_in_place) {
  need_gpu();
  const char *text =
      "input x: [2,5,16]\nweight w: [16,48]\nweight c: [1,5,1,4]\n"
      "y = matmul(x, w)\nv, p = split(y) axis=2 sizes=[16,32]\n"
      "q, r = split(p) axis=2 sizes=[16,16]\nqs = reshape(q) "
      "shape=[2,5,4,4]\nh = fused(qs, c) { t0 = ewmul($0, $1); "
      "t1 = ewadd(t0, $0) }\ng = fused(r, v) { t0 = ewmul($0, $1) }\n"
      "output h, g\n";
  gpu_options tf32 = {0}, poison = {.poison = 1}, eager = {.no_graph = 1};
  const gpu_options *runs[] = {&tf32, &poison, &eager};
  plan_hook = nsplit_engines;
  ir_graph *g = parse(text);
  for (int r = 0; r < 3; r++) {
    char what[64];
    snprintf(what, sizeof what, "nested split graph, run %d", r);
    compare(g, runs[r], 2e-3, what);
  }
  ir_graph_free(g);
  plan_hook = NULL;
}

/* A node whose float operands are not of one type (which the IR's type
 * rule forbids: the graph is altered after parsing) is refused, named,
 * rather than run with its operands read as the wrong type. */
Test(cuda, half_mixed_types_refused) {
  need_gpu();
  ir_graph *g = parse("input x: bf16[2,8]\ninput y: bf16[2,8]\n"
                      "z = ewadd(x, y)\noutput z\n");
  g->tensors[ir_find_tensor(g, "y")].dtype = IR_DT_F32;
  base_diag d;
  gpu_ctx *c;
  gpu_plan *p = NULL;
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  cr_assert_neq(gpu_plan_new(c, g, &p, &d), BASE_OK);
  cr_assert_null(p);
  cr_assert(strstr(d.msg, "node 'z' (ewadd)") && strstr(d.msg, "one type"),
            "%s", d.msg);
  gpu_ctx_free(c);
  ir_graph_free(g);
}

/* cuBLASLt in f16 and bf16 with float32 accumulation: bias and relu in
 * its epilogue, a batched matmul (the bias then by khalf.cu's kernel), a
 * folded residual as C. */
Test(cuda, half_matmul_bias_relu) {
  need_gpu();
  compare_half_types(
      "input x: @[4,40,64]\nweight w: @[64,48]\nweight b: @[48]\n"
      "weight wb: @[4,48,24]\nweight bb: @[24]\n"
      "y = matmul(x, w, b) act=relu\n"
      "z = matmul(y, wb, bb) act=relu\n"
      "u = matmul(x, w, b, y)\noutput y, z, u\n");
}

/* cuDNN in half (NCHW, tensor cores): bias + relu by khalf.cu, a strided
 * and grouped convolution, asymmetric padding (padded by a 2-byte copy
 * first) and a residual input. */
Test(cuda, half_conv) {
  need_gpu();
  compare_half_types(
      "input x: @[2,16,14,14]\nweight w: @[32,16,3,3]\nweight b: @[32]\n"
      "weight wg: @[32,8,3,3]\nweight w7: @[32,32,2,2]\n"
      "a = conv2d(x, w, b) pad=[1,1,1,1] act=relu\n"
      "c = conv2d(a, wg) groups=4 stride=[2,2] pad=[1,1,1,1]\n"
      "e = conv2d(a, w7, b) pad=[0,0,1,1]\n"
      "f = conv2d(x, w, b, a) pad=[1,1,1,1] act=relu\n"
      "output c, e, f\n");
}

/* A fused element-wise body (fuse_graph on a half graph; NVRTC's kernel on
 * its inputs converted to float32 copies, run/half.c) beside the
 * element-wise kernels of khalf.cu (broadcast, vectorised flat, unary). */
Test(cuda, half_fused_elementwise) {
  need_gpu();
  for (int i = 0; i < 2; i++) {
    ir_graph *g = parse_typed(
        "input x: @[8,16,64]\ninput y: @[8,16,64]\ninput b: @[64]\n"
        "s = ewadd(x, y)\nt = ewmul(s, b)\nu = tanh(t)\nv = ewsub(u, x)\n"
        "w = sigmoid(v)\noutput w\n",
        half_types[i]);
    base_diag d;
    fuse_stats st;
    ir_graph *h = fuse_graph(g, NULL, &st, &d);
    cr_assert_not_null(h, "%s", d.msg);
    cr_expect_geq(st.groups, 1, "nothing fused");
    compare_half(h, half_types[i]);
    compare_half(g, half_types[i]); /* the same unfused: khalf.cu */
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* No node runs staged (the float32 kernels on float32 copies). */
static void not_staged(const ir_graph *g, const gpu_plan *p, const char *what) {
  for (int i = 0; i < g->nnodes; i++)
    cr_expect(strcmp(gpu_plan_engine(p, i), "float32 kernels on copies"),
              "%s: node %d (%s) staged", what, i,
              g->tensors[g->nodes[i].out[0]].name);
}

/* Layer norm (rms too), softmax and batch norm of half tensors, each by a
 * kernel of its type (no staging): rows of 8k elements 16 bytes a load
 * (96: 8 lanes a row when many, 768: BERT's hidden size, 128: its
 * attention rows), odd rows (10) and strided softmax by the scalar kernels;
 * float32 statistics, the result rounded once. */
Test(cuda, half_layernorm_softmax) {
  need_gpu();
  plan_hook = not_staged;
  compare_half_types(
      "input x: @[6,10,96]\nweight g: @[96]\nweight b: @[96]\n"
      "input z: @[4,3,128,128]\ninput h: @[2,64,768]\n"
      "weight gh: @[768]\nweight bh: @[768]\n"
      "input m: @[16384,96]\n"
      "l = layernorm(x, g, b) axis=2 eps=1e-5\n"
      "lr = layernorm(x, g) axis=2 eps=1e-5 rms=1\n"
      "lh = layernorm(h, gh, bh) axis=2\n"
      "lm = layernorm(m, g, b) axis=1\n"
      "s = softmax(x) axis=2\nt = softmax(x) axis=1\nu = softmax(z) axis=3\n"
      "output l, lr, lh, lm, s, t, u\n");
  compare_half_types(
      "input x: @[2,16,5,7]\nweight sc: @[16]\nweight bi: @[16]\n"
      "weight mu: @[16]\nweight va: @[16]\n"
      "y = batchnorm(x, sc, bi, mu, va) eps=1e-5\noutput y\n");
  plan_hook = NULL;
}

/* Fused row bodies in half (fused.c's row kernels): BERT's residual add +
 * layer norm over rows of 768 (128 rows: a warp a row, one a block on an
 * H200), 64 (999 rows: 8 lanes a row, 4 rows a warp, the last warp's
 * fourth row past the end) and 24 (4001 rows: 4 lanes a row, 3 of them
 * busy, 8 rows a warp, the last warp's one row live), a softmax with a
 * per-row value, each in the vector form (16-byte chunks;
 * row_kernel_vector_form_chosen checks the choice), and rows of 770 in
 * the element form. */
Test(cuda, half_fused_row_vector) {
  need_gpu();
  compare_half_types(
      "input x: @[2,64,768]\ninput r: @[2,64,768]\nweight g: @[768]\n"
      "weight b: @[768]\ninput p: @[3,333,64]\ninput q: @[3,333,64]\n"
      "weight g2: @[64]\nweight b2: @[64]\ninput u: @[4001,24]\n"
      "input w: @[4001,24]\nweight g3: @[24]\nweight b3: @[24]\n"
      "input m: @[3,333,1]\ninput e: @[3,5,770]\ninput f: @[3,5,770]\n"
      "weight g4: @[770]\nweight b4: @[770]\n"
      "y = fused(x, r, g, b) { a = ewadd($0, $1); "
      "n = layernorm(a, $2, $3) axis=2 eps=1e-5 }\n"
      "z = fused(p, q, g2, b2) { a = ewadd($0, $1); "
      "n = layernorm(a, $2, $3) axis=2 eps=1e-5 }\n"
      "t = fused(u, w, g3, b3) { a = ewadd($0, $1); "
      "n = layernorm(a, $2, $3) axis=1 eps=1e-5 }\n"
      "s = fused(p, m) { a = ewsub($0, $1); c = softmax(a) axis=2 }\n"
      "o = fused(e, f, g4, b4) { a = ewadd($0, $1); "
      "n = layernorm(a, $2, $3) axis=2 eps=1e-5 }\n"
      "output y, z, t, s, o\n");
}

/* BERT's head permutes ([B,S,H,D] <-> [B,H,S,D]: rows of D halves, 16
 * bytes a thread), a matrix transpose (the tiled kernel on 2-byte
 * elements), and odd rows (2-byte pairs, single elements). */
Test(cuda, half_transpose_paths) {
  need_gpu();
  compare_half_types(
      "input x: @[2,16,12,64]\ninput y: @[3,40,72]\ninput w: @[2,5,6,7]\n"
      "a = transpose(x) perm=[0,2,1,3]\nb = transpose(y) perm=[0,2,1]\n"
      "c = transpose(w) perm=[0,2,1,3]\nd = transpose(w) perm=[0,1,3,2]\n"
      "output a, b, c, d\n");
}

/* Attention heads in half: BERT's merged projection, its split, the
 * heads' transposes (2-byte copies) and an attention node (katt.cu's
 * kernel on the half operands). */
Test(cuda, half_attention) {
  need_gpu();
  ir_graph *g = parse(QKV_ATT_BODY "output o\n");
  compare_converted(g, "attention", 0);
  ir_graph_free(g);
}

/* Moves of 2-byte elements: transposes, a slice, concat and split with
 * an activation on the way, reshape, a pad that also crops. Even widths
 * move in pairs (one float32 launch: q, e, f channels-last; all of them
 * NCHW), odd ones a walk a part (r, a, b channels-last). */
Test(cuda, half_movement) {
  need_gpu();
  compare_half_types(
      "input x: @[2,12,10,6]\ninput y: @[2,5,10,6]\n"
      "t = transpose(x) perm=[0,3,1,2]\nu = transpose(x) perm=[3,2,1,0]\n"
      "c = concat(x, y) axis=1\nr = concat(x, y) axis=1 act=relu\n"
      "a, b = split(c) axis=1 sizes=[9,8]\n"
      "q = concat(x, x) axis=1\ne, f = split(x) axis=1 sizes=[4,8]\n"
      "s = slice(x) starts=[0,2,1,0] ends=[2,9,10,5]\n"
      "m = reshape(s) shape=[2,7,45]\n"
      "pd = pad(x) pads=[0,1,-1,2,0,0,3,-1] value=-2\n"
      "output t, u, r, a, b, q, e, f, m, pd\n");
}

/* Pooling in half between channels-last convolutions: eight channels a
 * thread where C is a multiple of 8 (2x2 and 3x3 windows unrolled, others
 * looped; max and average, padding counted or not), the scalar form for
 * C = 12. */
Test(cuda, half_pooling_channels_last) {
  need_gpu();
  compare_half_types(
      "input x: @[2,16,13,11]\nweight w: @[16,16,3,3]\n"
      "weight w12: @[12,16,1,1]\nweight u: @[8,16,1,1]\n"
      "weight u12: @[8,12,1,1]\n"
      "c = conv2d(x, w) act=relu\n"
      "m2 = maxpool(c) kernel=[2,2] stride=[2,2]\n"
      "m3 = maxpool(c) kernel=[3,3] stride=[2,2] pad=same\n"
      "a3 = avgpool(c) kernel=[3,3] pad=same count_include_pad=0\n"
      "a5 = avgpool(c) kernel=[5,5] stride=[2,2] pad=same count_include_pad=1\n"
      "d = conv2d(c, w12)\np12 = maxpool(d) kernel=[2,2] stride=[2,2]\n"
      "y2 = conv2d(m2, u)\ny3 = conv2d(m3, u)\nz3 = conv2d(a3, u)\n"
      "z5 = conv2d(a5, u)\ny12 = conv2d(p12, u12)\n"
      "output y2, y3, z3, z5, y12\n");
}

/* Broadcasts in half eight outputs a thread (khalf.cu's k_binary_bv8):
 * squeeze-and-excitation's x * s[n, c, 1, 1] channels-last (C = 16), a
 * row bias over the last axis, a column broadcast (stride 0 along the last
 * axis) and a scalar; C = 12 and a last axis of 5 on the scalar form. */
Test(cuda, half_broadcast_vectors) {
  need_gpu();
  compare_half_types(
      "input x: @[2,16,9,7]\ninput r: @[3,5,24]\nweight w: @[16,16,3,3]\n"
      "weight w12: @[12,16,1,1]\nweight b: @[24]\nweight cb: @[3,5,1]\n"
      "weight s: @[]\nweight cq: @[24,1]\nweight u: @[8,16,1,1]\n"
      "weight u12: @[8,12,1,1]\nc = conv2d(x, w) act=relu\ng = "
      "global_avgpool(c)\nsg = sigmoid(g)\n"
      "m = ewmul(c, sg)\ny = conv2d(m, u)\n"
      "d = conv2d(c, w12)\ngd = global_avgpool(d)\nmd = ewmul(gd, d)\n"
      "y12 = conv2d(md, u12)\n"
      "rb = ewadd(r, b)\nrc = ewsub(r, cb)\nrs = ewmul(s, r)\n"
      "q = reshape(r) shape=[3,24,5]\nqb = ewadd(q, cq)\n"
      "output y, y12, rb, rc, rs, qb\n");
}

/* A whole zoo network converted as `run --dtype` converts it
 * (ir_graph_to_dtype: batch norms in float32 between casts), in bf16 and
 * f16. */
Test(cuda, half_network_resnet18) {
  need_gpu();
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/models/resnet18.graph", &d);
  cr_assert_not_null(g, "%s", d.msg);
  compare_converted(g, "resnet18", 0);
  ir_graph_free(g);
}

/* Every graph of op_graphs converted by the policy (ir_graph_to_dtype, as
 * run --dtype converts a model) in bf16 and f16: each operator family in
 * half (natively, or staged through float32 copies) against the CPU. */
Test(cuda, half_op_graphs) {
  need_gpu();
  for (size_t i = 0; i < sizeof op_graphs / sizeof *op_graphs; i++) {
    ir_graph *g = parse(op_graphs[i]);
    char what[32];
    snprintf(what, sizeof what, "op graph %zu", i);
    compare_converted(g, what, 1);
    ir_graph_free(g);
  }
}

/* ---- half precision on float32's fast paths ---------------------------
 * The float32 graph text converted by the policy (ir_graph_to_dtype, as
 * run --dtype converts a model) to bf16 and to f16, each run under opt
 * against the CPU (compare_half_as), with plan_hook's assertions on the
 * engines. */
static void half_fast_path(const char *text, const gpu_options *opt,
                           const char *what) {
  ir_graph *g = parse(text);
  for (int i = 0; i < 2; i++) {
    base_diag d;
    ir_graph *h = ir_graph_to_dtype(g, i ? IR_DT_F16 : IR_DT_BF16, &d);
    cr_assert_not_null(h, "%s: %s", what, d.msg);
    char w[96];
    snprintf(w, sizeof w, "%s, %s", what, half_types[i]);
    compare_half_as(h, opt, w);
    ir_graph_free(h);
  }
  ir_graph_free(g);
}

/* Counts the convolutions that run cuDNN's plan with their epilogue; while
 * ep_graph is set (conv_ep_graph), also those of the one computing "e"
 * (with a residual add). */
static int fused_convs, fused_res, ep_graph;
static void count_fused(const ir_graph *g, const gpu_plan *p,
                        const char *what) {
  (void)what;
  for (int i = 0; i < g->nnodes; i++) {
    int fused = g->nodes[i].op == IR_OP_CONV2D &&
                !strcmp(gpu_plan_engine(p, i), "cuDNN graph API with epilogue");
    fused_convs += fused;
    fused_res +=
        fused && ep_graph && !strcmp(g->tensors[g->nodes[i].out[0]].name, "e");
  }
}

/* Channels-last convolutions whose epilogue cuDNN's fusion engines may
 * compute: bias + relu, bias + clip (to 0.1: it does clip), relu alone,
 * bias alone, strided, grouped, and bias + residual input + relu. */
static const char *const conv_ep_graph =
    "input x: [2,8,12,10]\nweight w: [8,8,3,3]\nweight b: [8]\n"
    "weight w1: [16,8,1,1]\nweight b1: [16]\nweight wg: [16,4,3,3]\n"
    "weight bg: [16]\n"
    "a = conv2d(x, w, b) act=relu\n"
    "c6 = conv2d(a, w, b) act=clip max=0.1\n"
    "d = conv2d(c6, w) act=relu\n"
    "e = conv2d(d, w, b, a) act=relu\n"
    "f = conv2d(e, w1, b1) stride=[2,2]\n"
    "h = conv2d(f, wg, bg) groups=4 act=relu\n"
    "output h\n";

/* The op graphs and conv_ep_graph with cuDNN's fused plan (the bias,
 * residual and activation in the convolution's plan) wherever cuDNN offers
 * one ($SUPEROPT_CONV_FUSE=always), not only where it is faster: each
 * against the CPU (replayed from a CUDA graph, whose programmatic edges
 * gpu_end_capture makes full, and launched one by one, where a memset
 * stands before the residual's plan), and some convolution does run it,
 * the one with the residual add among them. TF32: the fusion engines
 * compute with tensor cores. */
Test(cuda, conv_epilogue_fused_by_cudnn) {
  need_gpu();
  setenv("SUPEROPT_CONV_FUSE", "always", 1);
  gpu_options tf32 = {0}, poison = {.poison = 1}, eager = {.no_graph = 1};
  const gpu_options *runs[] = {&tf32, &poison, &eager};
  static const char *const what[] = {"conv epilogues, fused",
                                     "conv epilogues, fused, poisoned",
                                     "conv epilogues, fused, one by one"};
  ep_graph = 1;
  plan_hook = count_fused;
  ir_graph *g = parse(conv_ep_graph);
  for (int r = 0; r < 3; r++) {
    fused_convs = fused_res = 0;
    compare(g, runs[r], 2e-3, what[r]);
    cr_expect_gt(fused_convs, 0,
                 "%s: no convolution of conv_ep_graph ran cuDNN's fused plan",
                 what[r]);
    cr_expect_gt(fused_res, 0,
                 "%s: the convolution with a residual add did not run "
                 "cuDNN's fused plan",
                 what[r]);
  }
  ir_graph_free(g);
  ep_graph = 0;
  compare_op_graphs(&tf32, 2e-3, "fused conv epilogues");
  plan_hook = NULL;
  unsetenv("SUPEROPT_CONV_FUSE");
}

/* conv_ep_graph in bf16 and f16 with cuDNN's fused plans wherever offered:
 * half inputs, filters, bias and residual, float32 inside, one rounding;
 * the residual's convolution among those that run it. */
Test(cuda, half_conv_epilogue_fused_by_cudnn) {
  need_gpu();
  setenv("SUPEROPT_CONV_FUSE", "always", 1);
  ep_graph = 1;
  plan_hook = count_fused;
  fused_convs = fused_res = 0;
  gpu_options cl = {0};
  half_fast_path(conv_ep_graph, &cl, "half conv epilogues, fused");
  cr_expect_geq(fused_convs, 2, "no half convolution ran cuDNN's fused plan");
  cr_expect_geq(fused_res, 2,
                "the half convolution with a residual add (bf16, f16) did "
                "not run cuDNN's fused plan");
  plan_hook = NULL;
  ep_graph = 0;
  unsetenv("SUPEROPT_CONV_FUSE");
}

/* Depthwise convolutions (3x3, 5x5 stride 2, 7x7; bias with relu, with a
 * clip, and a residual after) of 16 and 12 channels in half, kconv.cu's
 * kernel in each of its thread shapes wherever they divide the channels
 * (shapes 7 to 9 take 8 halves: the 12-channel one is cuDNN's); read by
 * convolutions, so channels-last (a graph output is NCHW). */
static const char *const dw_half_graph =
    "input x: [2,16,13,11]\nweight w3: [16,1,3,3]\nweight w5: [16,1,5,5]\n"
    "weight w7: [12,1,7,7]\nweight wp: [12,16,1,1]\nweight b: [16]\n"
    "weight b12: [12]\nweight wq: [4,16,1,1]\nweight wr: [4,12,1,1]\n"
    "dwa = conv2d(x, w3, b) groups=16 pad=[1,1,1,1] act=relu\n"
    "dwb = conv2d(dwa, w5, b) groups=16 stride=[2,2] pad=[2,2,2,2] act=clip "
    "max=0.5\n"
    "dwc = conv2d(x, w3, b, dwa) groups=16 pad=[1,1,1,1]\n"
    "p = conv2d(dwc, wp, b12)\n"
    "dwd = conv2d(p, w7, b12) groups=12 pad=[3,3,3,3] act=relu\n"
    "ob = conv2d(dwb, wq)\nod = conv2d(dwd, wr)\noutput ob, od\n";

Test(cuda, half_own_depthwise) {
  need_gpu();
  gpu_options cl = {0};
  int nv = (int)(sizeof dw_width / sizeof *dw_width);
  plan_hook = dw_engines;
  dw_half = 1;
  for (dw_var = 0; dw_var < nv; dw_var++) {
    char var[16], label[48];
    snprintf(var, sizeof var, "%d", dw_var);
    setenv("SUPEROPT_DW", var, 1);
    snprintf(label, sizeof label, "half own depthwise %d", dw_var);
    half_fast_path(dw_half_graph, &cl, label);
  }
  dw_half = 0;
  plan_hook = NULL;
  unsetenv("SUPEROPT_DW");
}

/* Every node named dw* runs the own depthwise engine where its stride is
 * 1 (kdwt.cu's tiles take no other), cuDNN where not. */
static void dwt_engines(const ir_graph *g, const gpu_plan *p,
                        const char *what) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    const char *y = g->tensors[n->out[0]].name, *e = gpu_plan_engine(p, i);
    if (!strncmp(y, "dw", 2))
      cr_expect(n->a.stride[0] == 1 ? !strcmp(e, "kconv depthwise")
                                    : !!strstr(e, "cuDNN"),
                "%s: %s runs on %s", what, y, e);
  }
}

/* kdwt.cu's tiled depthwise kernel (the own engine's variants past
 * kconv.cu's ten), forced in each of its tiles, against the CPU: 7x7,
 * 5x5 and 3x3 of 40 channels (a block of 32 and a partial one) on 13 x 19
 * images (partial tiles), bias with relu, with a clip, none with a
 * residual after; a stride-2 one it does not take stays cuDNN's. */
static const char *const dwt_graph =
    "input x: [2,40,13,19]\nweight wa: [40,1,7,7]\nweight wb: [40,1,5,5]\n"
    "weight wc: [40,1,3,3]\nweight b: [40]\nweight wo: [4,40,1,1]\n"
    "dwa = conv2d(x, wa, b) groups=40 pad=[3,3,3,3] act=relu\n"
    "dwb = conv2d(dwa, wb, b) groups=40 pad=[2,2,2,2] act=clip max=0.5\n"
    "dwc = conv2d(dwb, wc, b, dwa) groups=40 pad=[1,1,1,1]\n"
    "dwe = conv2d(dwa, wa, b) groups=40 stride=[2,2] pad=[3,3,3,3]\n"
    "o = conv2d(dwc, wo)\noe = conv2d(dwe, wo)\noutput o, oe\n";

Test(cuda, half_tiled_depthwise) {
  need_gpu();
  gpu_options cl = {0};
  ir_graph *g = parse(dwt_graph);
  plan_hook = dwt_engines;
  for (int var = 10; var < 13; var++) /* after kconv.cu's ten shapes */
    for (int ty = 0; ty < 2; ty++) {
      if (ty && var > 10)
        continue;
      base_diag d;
      ir_graph *h = ir_graph_to_dtype(g, ty ? IR_DT_F16 : IR_DT_BF16, &d);
      cr_assert_not_null(h, "%s", d.msg);
      char v[16], label[48];
      snprintf(v, sizeof v, "%d", var);
      setenv("SUPEROPT_DW", v, 1);
      snprintf(label, sizeof label, "half tiled depthwise %d, %s", var,
               half_types[ty]);
      compare_half_as(h, &cl, label);
      ir_graph_free(h);
    }
  plan_hook = NULL;
  unsetenv("SUPEROPT_DW");
  ir_graph_free(g);
}

/* Every 1x1 convolution of the graph (named g*) runs as a half cuBLASLt
 * GEMM. */
static void gemm_engines(const ir_graph *g, const gpu_plan *p,
                         const char *what) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->tensors[g->nodes[i].out[0]].name[0] == 'g')
      cr_expect_str_eq(gpu_plan_engine(p, i), "cuBLASLt GEMM", "%s: node %d",
                       what, i);
}

/* 1x1 convolutions as cuBLASLt GEMMs in half ($SUPEROPT_GEMM=always): bias
 * and relu in the epilogue, a channels-last residual as C, no epilogue,
 * a clip after (the convolution's own epilogue kernel), a 1x1 image (an
 * output: NCHW, the same bytes); o, an output of more pixels, is NCHW:
 * cuDNN. */
Test(cuda, half_conv_gemm_1x1) {
  need_gpu();
  setenv("SUPEROPT_GEMM", "always", 1);
  plan_hook = gemm_engines;
  gpu_options cl = {0};
  half_fast_path("input x: [2,24,7,9]\ninput z: [3,24,1,1]\n"
                 "weight w: [32,24,1,1]\nweight b: [32]\n"
                 "weight v: [32,32,1,1]\nweight u: [24,32,1,1]\n"
                 "ga = conv2d(x, w, b) act=relu\n"
                 "gb = conv2d(ga, v, b, ga) act=relu\n"
                 "gc = conv2d(gb, u)\n"
                 "gd = conv2d(gc, w, b) act=clip max=0.25\n"
                 "ge = conv2d(z, w, b) act=relu\n"
                 "o = conv2d(gd, v)\noutput o, ge\n",
                 &cl, "half 1x1 conv GEMM");
  plan_hook = NULL;
  unsetenv("SUPEROPT_GEMM");
}

/* Every convolution named s* or p* runs ksmallk.cu's kernel. */
static void smallk_engines(const ir_graph *g, const gpu_plan *p,
                           const char *what) {
  for (int i = 0; i < g->nnodes; i++) {
    const char *y = g->tensors[g->nodes[i].out[0]].name;
    if (y[0] == 's' || y[0] == 'p')
      cr_expect_str_eq(gpu_plan_engine(p, i), "ksmallk tensor cores", "%s: %s",
                       what, y);
  }
}

/* Convolutions with a short reduction in half on the tensor cores
 * (ksmallk.cu), forced in each of its tiles ($SUPEROPT_SK=K), against the
 * CPU: stems of 3 channels reading the NCHW input image as it is (3x3
 * stride 2 with a clip, ConvNeXt's 4x4 stride 4, a 7x7 stride 2 of 147
 * taps with relu and no bias, one of asymmetric padding: padded into
 * scratch first), pointwise convolutions of 16 and 24 input channels (relu;
 * a channels-last residual), odd image sizes throughout; the outputs
 * through convolutions cuDNN runs (channels-last results). */
static const char *const smallk_graph =
    "input x: [2,3,17,19]\nweight ws: [16,3,3,3]\nweight bs: [16]\n"
    "weight wc: [24,3,4,4]\nweight bc: [24]\nweight w7: [8,3,7,7]\n"
    "weight wp: [40,16,1,1]\nweight bp: [40]\nweight wq: [24,24,1,1]\n"
    "weight wo: [4,40,1,1]\nweight wz: [4,24,3,3]\nweight wy: [4,8,3,3]\n"
    "weight wt: [4,16,3,3]\n"
    "sa = conv2d(x, ws, bs) stride=[2,2] pad=[1,1,1,1] act=clip max=6\n"
    "pa = conv2d(sa, wp, bp) act=relu\n"
    "sb = conv2d(x, wc, bc) stride=[4,4]\n"
    "pb = conv2d(sb, wq, bc, sb)\n"
    "sc = conv2d(x, w7) stride=[2,2] pad=[3,3,3,3] act=relu\n"
    "sd = conv2d(x, ws, bs) stride=[2,2] pad=[0,0,1,1] act=relu\n"
    "oa = conv2d(pa, wo)\nob = conv2d(pb, wz) pad=[1,1,1,1]\n"
    "oc = conv2d(sc, wy) pad=[1,1,1,1]\nod = conv2d(sd, wt) pad=[1,1,1,1]\n"
    "output oa, ob, oc, od\n";

Test(cuda, half_smallk_convs) {
  need_gpu();
  gpu_options cl = {0};
  ir_graph *g = parse(smallk_graph);
  plan_hook = smallk_engines;
  /* every tile in bf16, the first and the last in f16 (each plan tunes
     its ten convolutions afresh: the tuning cache is off while forced) */
  for (int var = 0; var < 6; var++) /* cxk_smallk_variants() */
    for (int ty = 0; ty < 2; ty++) {
      if (ty && var % 5)
        continue;
      base_diag d;
      ir_graph *h = ir_graph_to_dtype(g, ty ? IR_DT_F16 : IR_DT_BF16, &d);
      cr_assert_not_null(h, "%s", d.msg);
      char v[16], label[48];
      snprintf(v, sizeof v, "%d", var);
      setenv("SUPEROPT_SK", v, 1);
      snprintf(label, sizeof label, "half small-K tile %d, %s", var,
               half_types[ty]);
      compare_half_as(h, &cl, label);
      ir_graph_free(h);
    }
  plan_hook = NULL;
  unsetenv("SUPEROPT_SK");
  ir_graph_free(g);
}

/* Every attention node runs katt.cu's kernel or, where it was timed
 * faster, kflash.cu's, on its half operands (not staged through float32
 * copies). */
static void att_native(const ir_graph *g, const gpu_plan *p, const char *what) {
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].op != IR_OP_ATTENTION)
      continue;
    const char *e = gpu_plan_engine(p, i);
    cr_expect(!strcmp(e, "attention kernel") ||
                  !strcmp(e, "flash attention kernel"),
              "%s: node %d runs %s", what, i, e);
  }
}

/* Attention natively in half: the row layout (heads=, cols=, hdim=,
 * seqfirst=: q, k and v read in their rows at element offsets), -inf masks
 * and a finite bias with the guard, 150 keys (the float32-math kernel),
 * rank 3, and 128 keys or fewer on the tensor cores (TF32 on half values,
 * exact) or not (strict). */
Test(cuda, half_attention_native) {
  need_gpu();
  gpu_options tc = {0}, strict = {.fp32_strict = 1};
  plan_hook = att_native;
  half_fast_path(att_rows_graph, &tc, "half attention rows");
  half_fast_path(att_bias_graph, &tc, "half attention bias");
  half_fast_path(att_bias_graph, &strict, "half attention bias, strict");
  plan_hook = NULL;
}

/* Every attention node runs kflash.cu's half kernel (mma.sync m16n8k16
 * on f16 or bf16 operands, float32 sums). */
static void att_flash_half(const ir_graph *g, const gpu_plan *p,
                           const char *what) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_ATTENTION)
      cr_expect_str_eq(gpu_plan_engine(p, i), "flash attention kernel",
                       "%s: node %d", what, i);
}

/* The flash form in half ($SUPEROPT_ATTENTION=flash) against the CPU at
 * the half tolerance: the transformers' shapes (197 tokens: a last query
 * block of 5 rows and a last key tile of 5 keys; Swin's windows with a
 * relative-position bias and -100 shift masks; BERT's -10000 padding
 * mask; d 64 with e 48), the row layout at element offsets, -inf masks
 * with the guard, k read [d, t] (keys contiguous: the 2-byte loads, not
 * the 16-byte copies) and 150 keys (three tiles). */
Test(cuda, half_attention_flash) {
  need_gpu();
  gpu_options tc = {0};
  setenv("SUPEROPT_ATTENTION", "flash", 1);
  plan_hook = att_flash_half;
  half_fast_path(att_flash_graph, &tc, "half flash transformers");
  half_fast_path(att_rows_graph, &tc, "half flash rows");
  half_fast_path(att_bias_graph, &tc, "half flash bias");
  plan_hook = NULL;
  unsetenv("SUPEROPT_ATTENTION");
}

/* --fast-gelu in half: the matmul's bias + gelu in cuBLASLt's epilogue, a
 * bias vector of the operands' type. */
Test(cuda, half_matmul_fast_gelu_epilogue) {
  need_gpu();
  gpu_options fast = {.fast_gelu = 1};
  half_fast_path("input a: [64,96]\nweight w: [96,80]\nweight b: [80]\n"
                 "x = matmul(a, w, b) act=gelu\ny = matmul(a, w) act=gelu\n"
                 "output x, y\n",
                 &fast, "half matmul gelu (fast)");
}

static int node_of(const ir_graph *g, const char *out) {
  for (int i = 0; i < g->nnodes; i++)
    if (!strcmp(g->tensors[g->nodes[i].out[0]].name, out))
      return i;
  cr_assert_fail("no node computes %s", out);
  return -1;
}

/* Index of SHUFFLE_GRAPH in op_graphs: channel shuffles that lower to
 * concat_shuffle nodes. */
static int shuffle_graph_at(void) {
  for (size_t i = 0; i < sizeof op_graphs / sizeof *op_graphs; i++)
    if (strstr(op_graphs[i], "k3 = concat(x, z) axis=1"))
      return (int)i;
  cr_assert_fail("no shuffle graph");
  return -1;
}

static ir_graph *lowered_st(const ir_graph *g, lower_stats *st) {
  base_diag d;
  ir_graph *h = lower_graph(g, st, &d);
  cr_assert(h, "%s", d.msg);
  return h;
}

/* SE_GRAPH's chains through f, h, d and l lower to se nodes (the lower
 * stage, src/fuse/lower_se.c), those through k, o and u stay; the se
 * nodes run kse.cu's kernel (thread block clusters where the GPU has
 * them, else a block a sample) against the CPU, poisoned and in several
 * launch shapes, the block-a-sample kernel forced too. */
Test(cuda, squeeze_excitation_nodes) {
  need_gpu();
  ir_graph *g = parse(SE_GRAPH);
  lower_stats st;
  ir_graph *h = lowered_st(g, &st);
  cr_expect_eq(st.se, 4);
  gpu_options strict = {.fp32_strict = 1}, poison = {.poison = 1},
              nchw = {.fp32_strict = 1, .nchw = 1};
  compare(h, &poison, 1e-3, "SE graph lowered, poisoned");
  compare(h, &nchw, 1e-5, "SE graph lowered, NCHW");
  /* launch shapes (cluster, threads): the default, one block a sample,
   * blocks narrower than the 300 channels (a thread a channel), and no
   * cluster (k_se_block) */
  const char *shape[][2] = {
      {"", ""}, {"1", "256"}, {"4", "64"}, {"2", "512"}, {"0", ""}};
  for (int k = 0; k < 5; k++) {
    char what[64];
    snprintf(what, sizeof what, "SE graph, strict, cluster %s threads %s",
             shape[k][0], shape[k][1]);
    setenv("SUPEROPT_SE_CLUSTER", shape[k][0], 1);
    setenv("SUPEROPT_SE_THREADS", shape[k][1], 1);
    compare(h, &strict, 1e-5, what);
  }
  unsetenv("SUPEROPT_SE_CLUSTER");
  unsetenv("SUPEROPT_SE_THREADS");
  ir_graph_free(h);
  ir_graph_free(g);
}

/* The shuffle graph's three channel shuffles lower to concat_shuffle
 * nodes (three slices, the whole result, two halves), which run one
 * kernel each, channels-last and NCHW, bit for bit the CPU's. */
Test(cuda, channel_shuffle_nodes) {
  need_gpu();
  ir_graph *g = parse(op_graphs[shuffle_graph_at()]);
  lower_stats st;
  ir_graph *h = lowered_st(g, &st);
  cr_expect_eq(st.shuffles, 3);
  gpu_options strict = {.fp32_strict = 1}, poison = {.poison = 1},
              nchw = {.fp32_strict = 1, .nchw = 1}, four = {.streams = 4};
  compare(h, &strict, 1e-5, "shuffles lowered, strict");
  compare(h, &poison, 1e-3, "shuffles lowered, poisoned");
  compare(h, &nchw, 1e-5, "shuffles lowered, NCHW");
  compare(h, &four, 1e-3, "shuffles lowered, 4 streams");
  /* in bf16 and f16: kmove.cu's kernel on 2-byte elements (run/half.c) */
  for (int i = 0; i < 2; i++) {
    base_diag d;
    ir_graph *gh = ir_graph_to_dtype(g, i ? IR_DT_F16 : IR_DT_BF16, &d);
    cr_assert_not_null(gh, "%s", d.msg);
    ir_graph *hh = lowered_st(gh, &st);
    cr_expect_eq(st.shuffles, 3, "%s", half_types[i]);
    compare_half(hh, half_types[i]);
    ir_graph_free(hh);
    ir_graph_free(gh);
  }
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Movement chains lowered to move nodes (src/fuse/lower_chain.c): a
 * Swin-like block (pad to a window multiple, cyclic shift, window
 * partition, a matmul, window reverse, shift back, crop; 8 channels: the
 * kernel moves 4 elements a thread) and a roll of a channels-last
 * convolution's padded, transposed output (read through its strides, 2
 * channels: one element a thread); bit for bit the CPU's. */
static const char *const move_texts[] = {
    "input x: [1,7,7,8]\nweight w: [8,8]\n"
    "p = pad(x) pads=[0,0,0,0,0,1,1,0]\n"
    "a1 = slice(p) starts=[0,2,0,0] ends=[1,8,8,8]\n"
    "a2 = slice(p) starts=[0,0,0,0] ends=[1,2,8,8]\n"
    "r1 = concat(a1, a2) axis=1\n"
    "b1 = slice(r1) starts=[0,0,2,0] ends=[1,8,8,8]\n"
    "b2 = slice(r1) starts=[0,0,0,0] ends=[1,8,2,8]\n"
    "r2 = concat(b1, b2) axis=2\n"
    "w1 = reshape(r2) shape=[1,2,4,2,4,8]\n"
    "w2 = transpose(w1) perm=[0,1,3,2,4,5]\n"
    "w3 = reshape(w2) shape=[4,16,8]\n"
    "m = matmul(w3, w)\n"
    "v1 = reshape(m) shape=[1,2,2,4,4,8]\n"
    "v2 = transpose(v1) perm=[0,1,3,2,4,5]\n"
    "v3 = reshape(v2) shape=[1,8,8,8]\n"
    "c1 = slice(v3) starts=[0,6,0,0] ends=[1,8,8,8]\n"
    "c2 = slice(v3) starts=[0,0,0,0] ends=[1,6,8,8]\n"
    "u1 = concat(c1, c2) axis=1\n"
    "d1 = slice(u1) starts=[0,0,6,0] ends=[1,8,8,8]\n"
    "d2 = slice(u1) starts=[0,0,0,0] ends=[1,8,6,8]\n"
    "u2 = concat(d1, d2) axis=2\n"
    "y0 = slice(u2) starts=[0,0,0,0] ends=[1,7,7,8]\n"
    "y = ewadd(x, y0)\noutput y\n",
    "input x: [1,4,6,6]\nweight w: [2,4,3,3]\n"
    "c = conv2d(x, w)\n"
    "p = pad(c) pads=[0,0,1,0,0,0,0,1] value=0.5\n"
    "t = transpose(p) perm=[0,2,3,1]\n"
    "s1 = slice(t) starts=[0,3,0,0] ends=[1,7,7,2]\n"
    "s2 = slice(t) starts=[0,0,0,0] ends=[1,3,7,2]\n"
    "r = concat(s1, s2) axis=1\noutput r\n"};

Test(cuda, move_nodes) {
  need_gpu();
  const int chains[] = {2, 1};
  for (int k = 0; k < 2; k++) {
    ir_graph *g = parse(move_texts[k]);
    lower_stats st;
    ir_graph *h = lowered_st(g, &st);
    cr_expect_eq(st.chains, chains[k], "graph %d", k);
    gpu_options strict = {.fp32_strict = 1}, poison = {.poison = 1},
                nchw = {.fp32_strict = 1, .nchw = 1};
    compare(h, &strict, 1e-5, "move nodes, strict");
    compare(h, &poison, 1e-3, "move nodes, poisoned");
    compare(h, &nchw, 1e-5, "move nodes, NCHW");
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* Move programs that are one strided view (kmprog.cu, cxk_move_view),
 * MaxViT's at odd sizes 7, 49 and 14: a window partition (the tile path:
 * a source run of 196 pixels against 8 channels), from a convolution's
 * output too (read in its layout), its departition (the tile path
 * transposed), a q of a qkv projection (16-byte units), a slice of odd
 * offset (8-byte units), a column (a thread per element), Swin's shift
 * (a roll of two axes, then a transpose: wrapped coordinates, 8-byte
 * units), a roll of the innermost axis by 3 (a thread per element), its
 * patch merging (four stepped slices concatenated: a grid of offsets);
 * and a roll with a pad (the step walk). Each bit for bit the CPU's (but
 * after the convolution), with the view kernels and with
 * $SUPEROPT_MOVE=walk; the same in bf16 and f16 (2-byte units: the tile
 * path in pairs, kmprog.cu's k_vtile2). */
#define MV_PART                                                                \
  "reshape($0) shape=[2,8,2,7,2,7]; t1 = transpose(t0) "                       \
  "perm=[0,2,4,3,5,1]; t2 = reshape(t1) shape=[2,4,49,8] }\n"
static const char *const move_view_graphs[] = {
    "input x: [2,8,14,14]\ny = move(x) { t0 = " MV_PART "output y\n",
    "input x: [2,4,14,14]\nweight w: [8,4,3,3]\nc = conv2d(x, w)\n"
    "y = move(c) { t0 = " MV_PART "output y\n",
    "input x: [2,4,49,8]\ny = move(x) { t0 = reshape($0) "
    "shape=[2,2,2,7,7,8]; t1 = transpose(t0) perm=[0,5,1,3,2,4]; t2 = "
    "reshape(t1) shape=[2,8,14,14] }\noutput y\n",
    "input x: [2,4,49,24]\ny = move(x) { t0 = slice($0) starts=[0,0,0,8] "
    "ends=[2,4,49,16]; t1 = reshape(t0) shape=[2,4,49,2,4]; t2 = "
    "transpose(t1) perm=[0,1,3,2,4]; t3 = reshape(t2) shape=[16,49,4] }\n"
    "output y\n",
    "input x: [3,7,56]\ny = move(x) { t0 = slice($0) starts=[0,1,2] "
    "ends=[3,7,56] }\noutput y\n",
    "input x: [7,49]\ny = move(x) { t0 = slice($0) starts=[0,3] "
    "ends=[7,4]; t1 = reshape(t0) shape=[7] }\noutput y\n",
    "input x: [2,6,10,2]\ny = move(x) { t0 = slice($0) starts=[0,2,0,0] "
    "ends=[2,6,10,2]; t1 = slice($0) starts=[0,0,0,0] ends=[2,2,10,2]; t2 = "
    "concat(t0, t1) axis=1; t3 = slice(t2) starts=[0,0,7,0] ends=[2,6,10,2]; "
    "t4 = slice(t2) starts=[0,0,0,0] ends=[2,6,7,2]; t5 = concat(t3, t4) "
    "axis=2; t6 = transpose(t5) perm=[0,2,1,3] }\noutput y\n",
    "input x: [5,10]\ny = move(x) { t0 = slice($0) starts=[0,3] "
    "ends=[5,10]; t1 = slice($0) starts=[0,0] ends=[5,3]; t2 = concat(t0, "
    "t1) axis=1 }\noutput y\n",
    "input x: [2,4,6,8]\ny = move(x) { t0 = reshape($0) shape=[2,2,2,6,8]; "
    "t1 = slice(t0) starts=[0,0,0,0,0] ends=[2,2,1,6,8]; t2 = reshape(t1) "
    "shape=[2,2,3,2,8]; t3 = slice(t2) starts=[0,0,0,0,0] "
    "ends=[2,2,3,1,8]; t4 = reshape(t3) shape=[2,2,3,8]; t5 = slice(t0) "
    "starts=[0,0,1,0,0] ends=[2,2,2,6,8]; t6 = reshape(t5) "
    "shape=[2,2,3,2,8]; t7 = slice(t6) starts=[0,0,0,0,0] "
    "ends=[2,2,3,1,8]; t8 = reshape(t7) shape=[2,2,3,8]; t9 = slice(t2) "
    "starts=[0,0,0,1,0] ends=[2,2,3,2,8]; t10 = reshape(t9) "
    "shape=[2,2,3,8]; t11 = slice(t6) starts=[0,0,0,1,0] "
    "ends=[2,2,3,2,8]; t12 = reshape(t11) shape=[2,2,3,8]; t13 = "
    "concat(t4, t8, t10, t12) axis=3 }\noutput y\n",
    "input x: [2,7,49]\ny = move(x) { t0 = transpose($0) perm=[0,2,1]; "
    "t1 = pad(t0) pads=[0,1,0,0,0,1] value=2; t2 = slice(t1) "
    "starts=[0,0,0] ends=[2,50,7]; t3 = slice(t1) starts=[0,0,7] "
    "ends=[2,50,8]; t4 = concat(t3, t2) axis=2 }\noutput y\n"};
#undef MV_PART

/* The kernel the plan names for the move node y (gpu_plan_engine). */
static const char *move_engine;
static void move_engine_is(const ir_graph *g, const gpu_plan *p,
                           const char *what) {
  cr_expect_str_eq(gpu_plan_engine(p, node_of(g, "y")), move_engine, "%s",
                   what);
}

Test(cuda, move_views) {
  need_gpu();
  plan_hook = move_engine_is;
  gpu_options strict = {.fp32_strict = 1}, nchw = {.fp32_strict = 1, .nchw = 1};
  for (int walk = 0; walk < 2; walk++) {
    if (walk)
      setenv("SUPEROPT_MOVE", "walk", 1);
    for (size_t k = 0; k < sizeof move_view_graphs / sizeof(char *); k++) {
      ir_graph *g = parse(move_view_graphs[k]);
      char what[64];
      snprintf(what, sizeof what, "move view %zu%s", k, walk ? ", walk" : "");
      double tol = strstr(move_view_graphs[k], "conv2d") ? 1e-5 : 0;
      move_engine = walk || strstr(move_view_graphs[k], "pad(")
                        ? "kmprog step walk"
                        : "kmprog strided copy";
      compare(g, &strict, tol, what);
      compare(g, &nchw, tol, what);
      for (int ty = 0; ty < 2 && tol == 0; ty++) { /* 2-byte elements */
        base_diag d;
        ir_graph *h = ir_graph_to_dtype(g, ty ? IR_DT_F16 : IR_DT_BF16, &d);
        cr_assert_not_null(h, "%s", d.msg);
        snprintf(what, sizeof what, "move view %zu%s %s", k,
                 walk ? ", walk" : "", half_types[ty]);
        compare_half(h, what);
        ir_graph_free(h);
      }
      ir_graph_free(g);
    }
  }
  unsetenv("SUPEROPT_MOVE");
  plan_hook = NULL;
}

/* No move node is staged through float32 copies. */
static void move_native(const ir_graph *g, const gpu_plan *p,
                        const char *what) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_MOVE)
      cr_expect(strcmp(gpu_plan_engine(p, i), "float32 kernels on copies"),
                "%s: move node %d staged", what, i);
}

/* The same chains converted to bf16 and f16, then lowered: kmprog.cu
 * copies 2-byte elements (the pad value rounded to the type). */
Test(cuda, half_move_nodes) {
  need_gpu();
  plan_hook = move_native;
  for (int k = 0; k < 2; k++) {
    ir_graph *g = parse(move_texts[k]);
    for (int ty = 0; ty < 2; ty++) {
      base_diag d;
      ir_graph *h = ir_graph_to_dtype(g, ty ? IR_DT_F16 : IR_DT_BF16, &d);
      cr_assert_not_null(h, "%s", d.msg);
      lower_stats st;
      ir_graph *l = lowered_st(h, &st);
      cr_expect_geq(st.chains, 1, "graph %d %s", k, half_types[ty]);
      char what[64];
      snprintf(what, sizeof what, "half move nodes %d %s", k, half_types[ty]);
      compare_half(l, what);
      ir_graph_free(l);
      ir_graph_free(h);
    }
    ir_graph_free(g);
  }
  plan_hook = NULL;
}

/* $SUPEROPT_MOVE_CL=1 (docs/cuda.md, "Move nodes channels-last"): a
 * MaxViT block at a small size (tests/maxvit_block.h: an
 * MBConv's last 1x1 convolution with its residual, the window partition,
 * a layer norm and a matmul in window order, the departition, the next
 * 1x1 convolution with its residual, a global pool) lowered with the
 * partition and departition as move nodes of one kernel each. The
 * convolution before the partition then runs channels-last (no reshape
 * pins it), the partition writes NCHW rows for the layer norm, the
 * departition writes channels-last for the convolution after it (its
 * program and a transpose [0,2,3,1]: the strided copy, and the step walk
 * with $SUPEROPT_MOVE=walk); against the CPU strict, TF32, poisoned, NCHW,
 * and in bf16 and f16. */
static int mvcl_cl;          /* channels-last expected (not opt.nchw) */
static const char *mvcl_eng; /* the departition's engine */

static void mvcl_layouts(const ir_graph *g, const gpu_plan *p,
                         const char *what) {
  static const char *const cl[] = {"r", "d3", "z"};
  static const char *const rows[] = {"p3", "s"};
  for (int k = 0; k < 3; k++)
    cr_expect_eq(gpu_plan_channels_last(p, ir_find_tensor(g, cl[k])), mvcl_cl,
                 "%s: %s channels-last %d", what, cl[k], !mvcl_cl);
  for (int k = 0; k < 2; k++)
    cr_expect_eq(gpu_plan_channels_last(p, ir_find_tensor(g, rows[k])), 0,
                 "%s: %s channels-last", what, rows[k]);
  cr_expect_eq(g->nodes[node_of(g, "d3")].op, IR_OP_MOVE, "%s", what);
  cr_expect_str_eq(gpu_plan_engine(p, node_of(g, "d3")), mvcl_eng, "%s", what);
  cr_expect_str_eq(gpu_plan_engine(p, node_of(g, "p3")), mvcl_eng, "%s", what);
}

/* maxvit_block_text as a graph of type ty (0 float32, else bf16 / f16),
 * lowered with the switch on: two move nodes. */
static ir_graph *mvcl_graph(int ty) {
  ir_graph *g = parse(maxvit_block_text), *h = g;
  if (ty) {
    base_diag d;
    h = ir_graph_to_dtype(g, ty == 1 ? IR_DT_BF16 : IR_DT_F16, &d);
    cr_assert_not_null(h, "%s", d.msg);
  }
  lower_stats st;
  ir_graph *l = lowered_st(h, &st);
  cr_assert_eq(st.chains, 2, "type %d: %d chains", ty, st.chains);
  if (h != g)
    ir_graph_free(h);
  ir_graph_free(g);
  return l;
}

Test(cuda, move_cl_maxvit_block) {
  need_gpu();
  setenv("SUPEROPT_MOVE_CL", "1", 1);
  plan_hook = mvcl_layouts;
  gpu_options strict = {.fp32_strict = 1}, tf32 = {.fp32_strict = 0},
              poison = {.poison = 1}, nchw = {.fp32_strict = 1, .nchw = 1},
              half_cl = {0}, half_nchw = {.nchw = 1};
  for (int walk = 0; walk < 2; walk++) {
    if (walk)
      setenv("SUPEROPT_MOVE", "walk", 1);
    mvcl_eng = walk ? "kmprog step walk" : "kmprog strided copy";
    char what[80];
    ir_graph *h = mvcl_graph(0);
    mvcl_cl = 1;
    snprintf(what, sizeof what, "maxvit cl, strict, walk %d", walk);
    compare(h, &strict, 1e-5, what);
    snprintf(what, sizeof what, "maxvit cl, tf32, walk %d", walk);
    compare(h, &tf32, 2e-3, what);
    snprintf(what, sizeof what, "maxvit cl, poisoned, walk %d", walk);
    compare(h, &poison, 2e-3, what);
    mvcl_cl = 0;
    snprintf(what, sizeof what, "maxvit cl, NCHW, walk %d", walk);
    compare(h, &nchw, 1e-5, what);
    ir_graph_free(h);
    for (int ty = 1; ty <= 2; ty++) {
      h = mvcl_graph(ty);
      mvcl_cl = 1;
      snprintf(what, sizeof what, "maxvit cl, %s, walk %d", half_types[ty - 1],
               walk);
      compare_half_as(h, &half_cl, what);
      mvcl_cl = 0;
      snprintf(what, sizeof what, "maxvit cl, %s NCHW, walk %d",
               half_types[ty - 1], walk);
      compare_half_as(h, &half_nchw, what);
      ir_graph_free(h);
    }
  }
  unsetenv("SUPEROPT_MOVE");
  unsetenv("SUPEROPT_MOVE_CL");
  plan_hook = NULL;
}

/* With $SUPEROPT_MOVE_CL=0 the same graph (its moves made with it on) keeps
 * every move's output NCHW: the departition's is converted for the convolution
 * after it, and the results hold. */
static void mvcl_off_layouts(const ir_graph *g, const gpu_plan *p,
                             const char *what) {
  cr_expect_eq(gpu_plan_channels_last(p, ir_find_tensor(g, "d3")), 0, "%s",
               what);
  cr_expect_eq(gpu_plan_channels_last(p, ir_find_tensor(g, "r")), 1, "%s",
               what);
}

Test(cuda, move_cl_switch_off) {
  need_gpu();
  setenv("SUPEROPT_MOVE_CL", "1", 1);
  ir_graph *h = mvcl_graph(0);
  setenv("SUPEROPT_MOVE_CL", "0", 1);
  plan_hook = mvcl_off_layouts;
  gpu_options strict = {.fp32_strict = 1};
  compare(h, &strict, 1e-5, "maxvit moves, switch off");
  unsetenv("SUPEROPT_MOVE_CL");
  plan_hook = NULL;
  ir_graph_free(h);
}

/* MOVE_RELU_GRAPH lowered (src/fuse/lower_move.c): the relus the lower
 * stage folds are gone, the concats and splits applying them run as one
 * kernel each, and the results hold in both layouts, strict, poisoned and
 * node by node. */
Test(cuda, relu_folded_into_concat_and_split) {
  need_gpu();
  ir_graph *g = parse(MOVE_RELU_GRAPH);
  base_diag d;
  lower_stats st;
  ir_graph *h = lower_graph(g, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(st.moves, 8); /* kr ar br er ccr nr p0r p9r; not mr hr h2r */
  static const char *const kept[] = {"mr", "hr", "h2r"};
  int relus = 0;
  for (int i = 0; i < h->nnodes; i++)
    relus += h->nodes[i].op == IR_OP_RELU;
  cr_assert_eq(relus, 3);
  for (size_t k = 0; k < sizeof kept / sizeof *kept; k++)
    cr_assert_eq(h->nodes[node_of(h, kept[k])].op, IR_OP_RELU, "%s", kept[k]);
  gpu_options strict = {.fp32_strict = 1}, poison = {.poison = 1},
              nchw = {.nchw = 1, .fp32_strict = 1}, eager = {.no_graph = 1};
  compare(h, &strict, 1e-5, "move relus, strict");
  compare(h, &poison, 1e-3, "move relus, poisoned");
  compare(h, &nchw, 1e-5, "move relus, NCHW");
  compare(h, &eager, 1e-3, "move relus, node by node");
  ir_graph_free(h);
  ir_graph_free(g);
}

/* g lowered (src/fuse/lower.h): its residual adds as inputs of the
 * convolutions and matmuls, at least `least` epilogues folded. */
static ir_graph *lowered(const ir_graph *g, int least) {
  base_diag d;
  lower_stats st;
  ir_graph *h = lower_graph(g, &st, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_geq(st.epilogues, least);
  return h;
}

/* ConvNeXt's block ends, lowered (src/fuse/lower_epi.c): the residual
 * add after each channels-last matmul (its own bias, or one from a bias
 * add) is the matmul's residual input through a transpose; on the GPU
 * every transpose is a view of channels-last bytes and the matmul adds
 * the residual as cuBLASLt's C. Both layouts, poisoned. */
static const char *const convnext_res_graph =
    "input x: [2,16,10,9]\nweight wd: [16,1,7,7]\nweight bd: [16]\n"
    "weight m1: [16,32]\nweight m2: [32,16]\nweight bm: [16]\n"
    "weight w2: [8,16,3,3]\n"
    "d = conv2d(x, wd, bd) groups=16\nt = transpose(d) perm=[0,2,3,1]\n"
    "h = matmul(t, m1) act=relu\nq = matmul(h, m2, bm)\n"
    "u = transpose(q) perm=[0,3,1,2]\nr = ewadd(u, d)\n"
    "t2 = transpose(r) perm=[0,2,3,1]\nh2 = matmul(t2, m1) act=relu\n"
    "q2 = matmul(h2, m2)\nqb2 = ewadd(q2, bm)\n"
    "u2 = transpose(qb2) perm=[0,3,1,2]\nr2 = ewadd(r, u2)\n"
    "c = conv2d(r2, w2)\noutput c\n";

static void transposes_are_views(const ir_graph *g, const gpu_plan *p,
                                 const char *what) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == IR_OP_TRANSPOSE)
      cr_expect_eq(gpu_plan_computed_by(p, i), -1, "%s: %s is no view", what,
                   g->tensors[g->nodes[i].out[0]].name);
}

Test(cuda, convnext_residual_through_views) {
  need_gpu();
  ir_graph *g0 = parse(convnext_res_graph), *g = lowered(g0, 3);
  cr_assert_eq(g->nodes[g->tensors[ir_find_tensor(g, "q")].node].nin, 4);
  cr_assert_eq(g->nodes[g->tensors[ir_find_tensor(g, "qb2")].node].nin, 4);
  gpu_options cl = {0}, nchw = {.nchw = 1}, strict = {.fp32_strict = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1};
  compare(g0, &strict, 1e-5, "convnext residual as it is (strict)");
  plan_hook = transposes_are_views;
  compare(g, &cl, 1e-3, "convnext residual (tf32)");
  compare(g, &strict, 1e-5, "convnext residual (strict)");
  compare(g, &poison, 1e-5, "convnext residual (strict, poisoned)");
  plan_hook = NULL;
  compare(g, &nchw, 1e-3, "convnext residual nchw (tf32: copies)");
  ir_graph_free(g0), ir_graph_free(g);
}

/* Relus after element-wise nodes, lowered to fused nodes of the two
 * (src/fuse/lower_epi.c: the executor's former relu fold), channels-last
 * and NCHW, poisoned; the relu after a node read twice stays. */
static const char *const relu_fused_graph =
    "input x: [2,8,9,7]\nweight w: [8,8,3,3]\nweight b: [8]\n"
    "weight g: [8]\nweight gb: [8]\nweight mu: [8]\nweight var: [8]\n"
    "weight dv: [8,1,1]\n"
    "c = conv2d(x, w, b) act=relu\na = ewadd(c, x)\nar = relu(a)\n"
    "n = batchnorm(ar, g, gb, mu, var)\nnr = relu(n)\n"
    "s = ewsub(nr, c)\nsr = relu(s)\nm = ewmul(s, sr)\n"
    "o = ewdiv(m, dv)\nor = relu(o)\noutput or, m\n";

Test(cuda, relu_after_elementwise_fused) {
  need_gpu();
  ir_graph *g0 = parse(relu_fused_graph), *g = lowered(g0, 3);
  cr_assert_eq(g->nodes[g->tensors[ir_find_tensor(g, "ar")].node].op,
               IR_OP_FUSED);
  gpu_options cl = {0}, nchw = {.nchw = 1}, strict = {.fp32_strict = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1};
  compare(g0, &strict, 1e-5, "relus on their own (strict)");
  compare(g, &cl, 1e-3, "relus fused (tf32)");
  compare(g, &nchw, 1e-3, "relus fused nchw (tf32)");
  compare(g, &strict, 1e-5, "relus fused (strict)");
  compare(g, &poison, 1e-5, "relus fused (strict, poisoned)");
  ir_graph_free(g0), ir_graph_free(g);
}

/* LN_GRAPH lowered (the convolutions' biases the layer norms' xb inputs)
 * in both layouts (the transpose a view of channels-last bytes, or a
 * copy), poisoned, and without folds; and as it is. */
Test(cuda, conv_bias_into_layernorm) {
  need_gpu();
  ir_graph *g0 = parse(LN_GRAPH), *g = lowered(g0, 3);
  compare(g0, NULL, 1e-3, "LN graph as it is (tf32)");
  ir_graph_free(g0);
  gpu_options strict = {.fp32_strict = 1}, nchw = {.fp32_strict = 1, .nchw = 1};
  gpu_options poison = {.poison = 1}, nofold = {.fp32_strict = 1, .no_fold = 1};
  compare(g, &strict, 1e-5, "LN graph, strict");
  compare(g, &nchw, 1e-5, "LN graph, NCHW");
  compare(g, &poison, 1e-3, "LN graph, poisoned");
  compare(g, &nofold, 1e-5, "LN graph, no folds");
  ir_graph_free(g);
}

/* NASNet's factorized reduction, a slice of a pad it alone reads (s, from
 * a channels-last convolution, both channels-last; s2, cropping channels
 * too, with a value, from the NCHW input; s4, a graph output and so NCHW,
 * from a channels-last pad; s5, 40 channels-last channels a row, and pz,
 * rows of 43: a warp a row) becomes one pad with negative pads in the
 * lower stage (src/fuse/lower_move.c); s3's pad has a second reader and
 * stays two kernels. */
#define PAD_SLICE_GRAPH                                                        \
  "input x: [2,6,9,9]\nweight w: [8,6,3,3]\nweight w2: [4,8,1,1]\n"            \
  "c = conv2d(x, w) act=relu\np = pad(c) pads=[0,0,0,0,0,0,1,1]\n"             \
  "s = slice(p) starts=[0,0,1,1] ends=[2,8,10,10]\n"                           \
  "a = avgpool(s) kernel=[1,1] stride=[2,2] count_include_pad=0\n"             \
  "k = conv2d(a, w2)\n"                                                        \
  "p2 = pad(x) pads=[0,1,2,0,0,2,1,3] value=0.5\n"                             \
  "s2 = slice(p2) starts=[0,1,1,2] ends=[2,9,12,12]\n"                         \
  "p3 = pad(c) pads=[0,0,1,1,0,0,1,1]\n"                                       \
  "s3 = slice(p3) starts=[0,2,0,1] ends=[2,7,10,11]\nr3 = relu(p3)\n"          \
  "p4 = pad(c) pads=[0,0,1,0,0,0,0,1]\n"                                       \
  "s4 = slice(p4) starts=[0,1,0,1] ends=[2,7,10,10]\n"                         \
  "weight w5: [40,6,3,3]\nc5 = conv2d(x, w5) act=relu\n"                       \
  "p5 = pad(c5) pads=[0,0,0,0,0,0,1,1]\n"                                      \
  "s5 = slice(p5) starts=[0,0,1,1] ends=[2,40,10,10]\n"                        \
  "a5 = avgpool(s5) kernel=[1,1] stride=[2,2] count_include_pad=0\n"           \
  "input z: [2,3,4,40]\npz = pad(z) pads=[0,0,1,2,0,1,0,3] value=2\n"          \
  "output k, s2, s3, r3, s4, a5, pz\n"

Test(cuda, pad_slice_folded) {
  need_gpu();
  ir_graph *g = parse(PAD_SLICE_GRAPH);
  base_diag d;
  ir_graph *h = lower_graph(g, NULL, &d);
  cr_assert(h, "%s", d.msg);
  const char *sl[] = {"s", "s2", "s3", "s4", "s5"};
  for (int k = 0; k < 5; k++) /* the pad computes it; s3 stays a slice */
    cr_assert_eq(h->nodes[node_of(h, sl[k])].op,
                 k == 2 ? IR_OP_SLICE : IR_OP_PAD, "%s", sl[k]);
  gpu_options o[] = {{.fp32_strict = 1},
                     {.fp32_strict = 1, .nchw = 1},
                     {.poison = 1},
                     {.fp32_strict = 1, .no_fold = 1}};
  const char *what[] = {"strict", "NCHW", "poisoned", "no folds"};
  for (int m = 0; m < 4; m++) {
    char w[64];
    snprintf(w, sizeof w, "pad-slice graph, %s", what[m]);
    compare(h, &o[m], m == 2 ? 1e-3 : 1e-5, w);
  }
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(cuda, every_operator_fp32_strict) {
  need_gpu();
  gpu_options o = {.fp32_strict = 1};
  compare_op_graphs(&o, 1e-5, "strict");
}

Test(cuda, every_op_graph_with_poisoned_buffers) {
  need_gpu();
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/tests/data/good/every_op.graph", &d);
  cr_assert(g, "%s", d.msg);
  gpu_options strict = {.fp32_strict = 1, .no_fold = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1};
  gpu_options eager = {.poison = 1, .no_graph = 1};
  compare(g, &strict, 1e-5, "every_op (strict)");
  compare(g, &poison, 1e-5, "every_op (poisoned)");
  compare(g, &eager, 1e-3, "every_op (poisoned, no CUDA graph)");
  ir_graph_free(g);
}

/* Convolution chains run channels-last (layout.c): every node kind that
 * can, mixed layouts through strides, conversions at the boundaries
 * (transpose, slice, the input), an output that must stay NCHW, prepadding
 * and filters converted to KRSC; the same graph with --nchw as a control. */
static const char *const cl_graph =
    "input x: [2,5,13,11]\nweight w1: [8,5,3,3]\nweight b1: [8]\n"
    "weight w2: [8,8,3,3]\nweight wd: [8,1,3,3]\nweight wg: [8,4,1,1]\n"
    "weight g: [8]\nweight bb: [8]\nweight mu: [8]\nweight var: [8]\n"
    "weight cb: [8,1,1]\nweight wf: [16,10]\n"
    "a = conv2d(x, w1, b1) act=relu\n"
    "p = maxpool(a) kernel=[3,3] stride=[2,2] pad=same\n"
    "c = conv2d(p, w2) stride=[2,2]\n"
    "n = batchnorm(c, g, bb, mu, var)\nr = relu(n)\ne = ewadd(r, cb)\n"
    "dw = conv2d(e, wd) groups=8 act=relu\nk = concat(e, dw) axis=1\n"
    "k2 = concat(k, k) axis=3\ns1, s2 = split(k2) axis=2 sizes=[1,3]\n"
    "gp = global_avgpool(k)\nsg = sigmoid(gp)\nm = ewmul(k, sg)\n"
    "gc = conv2d(m, wg) groups=4\n"
    "ap = avgpool(gc) kernel=[2,2] count_include_pad=0\n"
    "t = transpose(ap) perm=[0,2,3,1]\n"
    "sl = slice(s2) starts=[0,0,0,1] ends=[2,16,3,5]\n"
    "rm = reduce_mean(gc) axes=[1,3]\nf = reshape(gp) shape=[2,16]\n"
    "y = matmul(f, wf)\noutput e, s1, t, sl, rm, y, m\n";

/* The residual epilogue in mixed layouts: residuals NCHW (the graph input)
 * under a channels-last convolution and channels-last under a convolution
 * kept NCHW (its sum is a graph output), then relu; float4 (8 channels)
 * and scalar (5) paths. */
static const char *const residual_graph =
    "input x: [3,8,11,9]\nweight w: [8,8,3,3]\nweight b: [8]\n"
    "weight w5: [5,8,1,1]\nweight b5: [5]\nweight w55: [5,5,3,3]\n"
    "c = conv2d(x, w, b)\na = ewadd(x, c)\nr = relu(a)\n"
    "d = conv2d(r, w)\ne = ewadd(d, r)\n"
    "f = conv2d(r, w5, b5)\ng = conv2d(f, w55)\nh = ewadd(g, f)\n"
    "hr = relu(h)\nk = conv2d(hr, w55, b5)\nl = ewadd(hr, k)\n"
    "output e, l\n";

Test(cuda, residual_epilogue_layouts) {
  need_gpu();
  ir_graph *g0 = parse(residual_graph), *g = lowered(g0, 3);
  compare(g0, NULL, 1e-3, "residual adds on their own (tf32)");
  ir_graph_free(g0);
  gpu_options cl = {0}, nchw = {.nchw = 1}, strict = {.fp32_strict = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1};
  gpu_options nofold = {.fp32_strict = 1, .no_fold = 1};
  gpu_options legacy = {.fp32_strict = 1, .legacy_conv = 1};
  compare(g, &cl, 1e-3, "residual (tf32)");
  compare(g, &nchw, 1e-3, "residual nchw (tf32)");
  compare(g, &strict, 1e-5, "residual (strict)");
  compare(g, &poison, 1e-5, "residual (strict, poisoned)");
  compare(g, &nofold, 1e-5, "residual (strict, not folded)");
  compare(g, &legacy, 1e-5, "residual (strict, legacy conv)");
  ir_graph_free(g);
}

Test(cuda, channels_last_chain) {
  need_gpu();
  ir_graph *g = parse(cl_graph);
  gpu_options cl = {0}, nchw = {.nchw = 1}, strict = {.fp32_strict = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1};
  compare(g, &cl, 1e-3, "channels-last (tf32)");
  compare(g, &nchw, 1e-3, "nchw (tf32)");
  compare(g, &strict, 1e-5, "channels-last (strict)");
  compare(g, &poison, 1e-5, "channels-last (strict, poisoned)");
  ir_graph_free(g);
}

/* A chain whose buffers are reused many times over, poisoned. */
Test(cuda, memory_reuse_with_poison) {
  need_gpu();
  ir_graph *g = parse("input x: [2,8,15,15]\nweight w: [8,8,3,3]\n"
                      "weight b: [8]\n"
                      "a = conv2d(x, w, b) act=relu\nb1 = conv2d(a, w)\n"
                      "c = ewadd(b1, x)\nd = conv2d(c, w, b) act=tanh\n"
                      "e = ewadd(d, c)\nf = conv2d(e, w, b)\n"
                      "g = ewmul(f, a)\nh = concat(g, e) axis=1\n"
                      "output h\n");
  gpu_options o = {.fp32_strict = 1, .poison = 1};
  compare(g, &o, 1e-5, "reuse chain (poisoned)");
  base_diag d;
  gpu_ctx *c;
  gpu_plan *p;
  cr_assert_eq(gpu_ctx_new(&o, &c, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
  size_t arena, persist, ws;
  gpu_plan_memory(p, &arena, &persist, &ws);
  cr_expect_lt(arena, gpu_plan_unplanned_bytes(p), "no buffer was reused");
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ir_graph_free(g);
}

Test(cuda, absurd_allocation_is_a_clean_error) {
  need_gpu();
  ir_graph *g = parse("input x: [65536,65536,16]\ny = relu(x)\noutput y\n");
  base_diag d;
  gpu_ctx *c;
  gpu_plan *p = (gpu_plan *)1;
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_ERR_NOMEM, "%s", d.msg);
  cr_assert_null(p);
  cr_assert(strstr(d.msg, "cudaMalloc"), "%s", d.msg);
  /* the context still works afterwards */
  ir_graph *h = parse("input x: [3,5]\ny = tanh(x)\noutput y\n");
  cr_assert_eq(gpu_plan_new(c, h, &p, &d), BASE_OK, "%s", d.msg);
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(cuda, measure_and_profile) {
  need_gpu();
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/models/resnet50.graph", &d);
  cr_assert(g, "%s", d.msg);
  gpu_ctx *c;
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  double conv = 0, relu = 0;
  int iconv = -1, irelu = -1;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].op == IR_OP_CONV2D && iconv < 0)
      iconv = i;
    if (g->nodes[i].op == IR_OP_RELU && irelu < 0)
      irelu = i;
  }
  cr_assert_eq(gpu_measure_node(c, g, iconv, 3, 20, &conv, &d), BASE_OK, "%s",
               d.msg);
  cr_assert_eq(gpu_measure_node(c, g, irelu, 3, 20, &relu, &d), BASE_OK, "%s",
               d.msg);
  cr_expect(conv > 0 && conv < 50 && relu > 0 && relu < 50, "%g %g", conv,
            relu);
  gpu_plan *p;
  ex_values *v = ex_values_new(g);
  cr_assert_eq(ex_fill_random(g, v, 1, &d), BASE_OK);
  cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_upload(p, v, &d), BASE_OK, "%s", d.msg);
  double *ms = calloc((size_t)g->nnodes, sizeof *ms), sum = 0, whole = 0;
  cr_assert_eq(gpu_plan_profile(p, 3, ms, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_time(p, 3, 10, &whole, &d), BASE_OK, "%s", d.msg);
  int folded = 0;
  for (int i = 0; i < g->nnodes; i++) {
    sum += ms[i];
    int own = gpu_plan_computed_by(p, i) == i;
    folded += !own;
    if (!own || g->nodes[i].op == IR_OP_CONV2D)
      cr_expect(own ? ms[i] > 0 : ms[i] == 0, "node %d (%s): %g ms", i,
                g->tensors[g->nodes[i].out[0]].name, ms[i]);
  }
  /* each node alone, without the gaps between kernels of a whole replay */
  cr_expect(folded > 0 && sum > 0 && whole > 0 && sum < 1.5 * whole,
            "folded %d, sum %g, whole %g", folded, sum, whole);
  free(ms);
  gpu_plan_free(p);
  ex_values_free(v);
  gpu_ctx_free(c);
  ir_graph_free(g);
}

Test(cuda, no_device_is_a_clean_error) {
  if (gpu_device_count() > 0)
    cr_skip_test("a device is present");
  base_diag d;
  gpu_ctx *c = (gpu_ctx *)1;
  cr_assert_neq(gpu_ctx_new(NULL, &c, &d), BASE_OK);
  cr_assert_null(c);
  cr_assert(strstr(d.msg, "no CUDA device"), "%s", d.msg);
}
/* ---- fused nodes: generated kernels
 * ---------------------------------------------------- */

/* Fused bodies with odd shapes: every body operator, broadcasting from
 * every side, per-channel batch norm, float4 and scalar paths, ranks 0..5. */
static const char *const fused_graphs[] = {
    /* every unary, odd last dimension (scalar path) */
    "input x: [3,5,7]\n"
    "y = fused(x) { a = relu($0); b = sigmoid($0); c = tanh($0); d = gelu($0); "
    "e = erf($0); f = ewadd(a, b); g = ewmul(c, d); h = ewsub(f, g); "
    "i = ewadd(h, e); j = clip(i) min=-0.25 max=0.5 }\noutput y\n",
    /* binary with broadcasting on both sides, last dim a multiple of 4
       (sqrt of a square: a negative argument would be NaN on both sides) */
    "input x: [2,3,9,8]\nweight w: [8]\nweight u: [3,1,1]\nweight s: []\n"
    "y = fused(x, w, u, s) { a = ewmul($0, $1); b = ewadd(a, $2); "
    "c = smul(b, $3); d = ewdiv(c, $2); e = ewmul(d, d); f = sqrt(e); "
    "g = ewsub($1, f) }\n"
    "output y\n",
    /* batch norm + residual + relu (a conv epilogue), both vector paths */
    "input x: [1,6,5,12]\ninput r: [1,6,5,12]\nweight g: [6]\nweight b: [6]\n"
    "weight m: [6]\nweight v: [6]\n"
    "y = fused(x, g, b, m, v, r) { n = batchnorm($0, $1, $2, $3, $4) "
    "eps=0.001; a = ewadd(n, $5); o = relu(a) }\noutput y\n",
    /* batch norm on rank 2: the channel is the last dimension */
    "input x: [7,12]\nweight g: [12]\nweight b: [12]\nweight m: [12]\n"
    "weight v: [12]\n"
    "y = fused(x, g, b, m, v) { n = batchnorm($0, $1, $2, $3, $4); "
    "s = sigmoid(n); o = ewmul(n, s) }\noutput y\n",
    /* the output wider than every input; rank 5 */
    "input x: [2,1,3,1,5]\ninput z: [4,1]\n"
    "y = fused(x, z) { a = ewadd($0, $1); b = tanh(a) }\noutput y\n",
    /* scalars */
    "input x: []\ninput z: []\n"
    "y = fused(x, z) { a = ewmul($0, $1); b = sigmoid(a) }\noutput y\n",
    /* row reductions ending a body, odd row lengths: softmax of a scaled
     * sum with a broadcast row (37), BERT's residual + layer norm (1000:
     * several elements per thread), reduce_mean without keepdims (33),
     * rows of one element, one row of 1025 */
    "input x: [3,5,37]\ninput s: []\nweight m: [37]\n"
    "y = fused(x, s, m) { a = smul($0, $1); b = ewadd(a, $2); "
    "c = softmax(b) axis=2 }\noutput y\n",
    "input x: [2,7,1000]\ninput r: [2,7,1000]\nweight g: [1000]\n"
    "weight b: [1000]\n"
    "y = fused(x, r, g, b) { a = ewadd($0, $1); "
    "n = layernorm(a, $2, $3) axis=2 eps=0.001 }\noutput y\n",
    "input x: [4,3,33]\ninput z: [3,1]\n"
    "y = fused(x, z) { a = ewsub($0, $1); q = ewmul(a, a); "
    "m = reduce_mean(q) axes=[2] keepdims=0 }\noutput y\n",
    "input x: [6,1]\ny = fused(x) { a = sigmoid($0); b = softmax(a) axis=1 }\n"
    "z = fused(x) { a = tanh($0); b = reduce_mean(a) axes=[1] }\n"
    "output y, z\n",
    "input x: [1025]\ny = fused(x) { a = relu($0); b = reduce_mean(a) "
    "axes=[0] }\noutput y\n",
    /* a block a row (over 1024 values): softmax and residual + layer norm */
    "input x: [3,1100]\ninput s: []\n"
    "y = fused(x, s) { a = smul($0, $1); b = softmax(a) axis=1 }\noutput y\n",
    "input x: [2,1030]\ninput r: [2,1030]\nweight g: [1030]\n"
    "weight b: [1030]\ny = fused(x, r, g, b) { a = ewadd($0, $1); "
    "n = layernorm(a, $2, $3) axis=1 eps=0.001 }\noutput y\n",
    /* the warp form's 16-byte chunks (rows of a multiple of 8): a softmax
     * with a per-row value and a column vector, rows of 64 */
    "input x: [3,10,64]\ninput m: [3,10,1]\nweight w: [64]\n"
    "y = fused(x, m, w) { a = ewsub($0, $1); b = ewmul(a, $2); "
    "c = softmax(b) axis=2 }\noutput y\n",
};

/* Graph i's generated source compiles with NVRTC for sm_90. The sanitizer
 * build compiles graph 0's only (NVRTC's time there checks none of our
 * code: about a third of test_cuda's 35 s under ASan in CI) and still
 * generates, and checks, every source; the plain build compiles them all. */
static void expect_compiles(const char *src, const char *name, size_t i) {
#ifdef __SANITIZE_ADDRESS__
  if (i > 0)
    return;
#endif
  base_diag d;
  char *cubin = NULL;
  size_t len = 0;
  cr_assert_eq(gpu_fused_compile(src, name, "sm_90", &cubin, &len, &d), BASE_OK,
               "graph %zu: %s\n%s", i, d.msg, src);
  cr_assert_gt(len, 0);
  free(cubin);
}

Test(cuda, fused_sources_compile_with_nvrtc) {
  for (size_t i = 0; i < sizeof fused_graphs / sizeof *fused_graphs; i++) {
    ir_graph *g = parse(fused_graphs[i]);
    for (int vecok = 0; vecok < 2; vecok++) {
      base_diag d;
      char *src = NULL, name[40];
      uint64_t key = 0;
      int vec = -1;
      const float *unaligned[IR_MAX_IN + 1];
      for (int k = 0; k <= IR_MAX_IN; k++)
        unaligned[k] = (const float *)(uintptr_t)4;
      cr_assert_eq(gpu_fused_source(g, &g->nodes[0], vecok ? NULL : unaligned,
                                    NULL, "sm_90", 0, &src, name, &key, &vec,
                                    &d),
                   BASE_OK, "graph %zu: %s", i, d.msg);
      cr_assert(!vecok ? !vec : 1, "unaligned pointers took float4");
      if (getenv("SUPEROPT_TEST_SHOW_SOURCE")) /* for reading them */
        fprintf(stderr, "---- graph %zu (vec %d)\n%s", i, vec, src);
      expect_compiles(src, name, i);
      free(src);
    }
    ir_graph_free(g);
  }
}

/* The same bodies in bf16 and f16 (ir_graph_to_dtype, as --dtype): the
 * half kernels (2-byte loads converted to float, 8 elements a thread with
 * 16-byte accesses where aligned, each result rounded once by sth)
 * compile with NVRTC, and unaligned pointers take the scalar form. No GPU
 * needed. */
Test(cuda, half_fused_sources_compile_with_nvrtc) {
  for (size_t i = 0; i < sizeof fused_graphs / sizeof *fused_graphs; i++)
    for (int ty = 0; ty < 2; ty++) {
      base_diag d;
      ir_graph *g0 = parse(fused_graphs[i]);
      ir_graph *g = ir_graph_to_dtype(g0, ty ? IR_DT_F16 : IR_DT_BF16, &d);
      ir_graph_free(g0);
      cr_assert_not_null(g, "graph %zu: %s", i, d.msg);
      int f = -1;
      for (int j = 0; j < g->nnodes; j++)
        if (g->nodes[j].op == IR_OP_FUSED)
          f = j;
      cr_assert_geq(f, 0, "graph %zu: no fused node", i);
      int half = ir_dtype_is_half(g->tensors[g->nodes[f].out[0]].dtype);
      for (int vecok = 0; vecok < 2; vecok++) {
        char *src = NULL, name[40];
        uint64_t key = 0;
        int vec = -1;
        const float *unaligned[IR_MAX_IN + 1];
        for (int k = 0; k <= IR_MAX_IN; k++)
          unaligned[k] = (const float *)(uintptr_t)4;
        cr_assert_eq(gpu_fused_source(g, &g->nodes[f], vecok ? NULL : unaligned,
                                      NULL, "sm_90", 0, &src, name, &key, &vec,
                                      &d),
                     BASE_OK, "graph %zu: %s", i, d.msg);
        cr_assert(vecok || !vec, "unaligned pointers took the vector form");
        cr_assert(!half || strstr(src, "sth("), "graph %zu: no half store\n%s",
                  i, src);
        cr_assert(!half || !vec || strstr(src, "uint4"),
                  "graph %zu: vector form without 16-byte accesses\n%s", i,
                  src);
        if (getenv("SUPEROPT_TEST_SHOW_SOURCE"))
          fprintf(stderr, "---- graph %zu %s (vec %d)\n%s", i,
                  ty ? "f16" : "bf16", vec, src);
        expect_compiles(src, name, i);
        free(src);
      }
      ir_graph_free(g);
    }
}

/* A division by a value constant along the half vector form's 8 elements
 * (fused_graphs[1]'s ewdiv(c, u), u [3,1,1]) is a product with its
 * reciprocal there, computed once a thread (ConvNeXt's erf gelu divides by
 * sqrt 2); the scalar half form and float32 divide as before. */
Test(cuda, half_fused_divides_once_a_thread) {
  for (int ty = 0; ty < 3; ty++) { /* f32, bf16, f16 */
    base_diag d;
    ir_graph *g = parse(fused_graphs[1]);
    if (ty) {
      ir_graph *h = ir_graph_to_dtype(g, ty == 2 ? IR_DT_F16 : IR_DT_BF16, &d);
      ir_graph_free(g);
      cr_assert_not_null(h, "%s", d.msg);
      g = h;
    }
    int f = -1;
    for (int j = 0; j < g->nnodes; j++)
      if (g->nodes[j].op == IR_OP_FUSED)
        f = j;
    cr_assert_geq(f, 0);
    for (int vecok = 0; vecok < 2; vecok++) {
      char *src = NULL, name[40];
      uint64_t key = 0;
      int vec = -1;
      const float *unaligned[IR_MAX_IN + 1];
      for (int k = 0; k <= IR_MAX_IN; k++)
        unaligned[k] = (const float *)(uintptr_t)4;
      cr_assert_eq(gpu_fused_source(g, &g->nodes[f], vecok ? NULL : unaligned,
                                    NULL, "sm_90", 0, &src, name, &key, &vec,
                                    &d),
                   BASE_OK, "%s", d.msg);
      int recip = strstr(src, " * (1.0f / a") != NULL;
      cr_expect_eq(recip, ty && vec,
                   "type %d, vector form %d: reciprocal %d\n%s", ty, vec, recip,
                   src);
      cr_expect(ty && vec ? 1 : strstr(src, " / a") != NULL,
                "type %d: no division\n%s", ty, src);
      free(src);
    }
    ir_graph_free(g);
  }
}

/* ---- row kernels' vector form (fused.c, row_vec_ok): a lane holds
 * chunks of 8 consecutive columns (4 in float32), one 16-byte load a
 * chunk per input, one 16-byte store a chunk. */

/* BERT's residual add + layer norm over rows of `len`, of type ty (bf16,
 * f16, f32), rows of [rows,len] as [b,rows/b,len]. */
static ir_graph *res_ln_graph(const char *ty, int b, int rows, int len) {
  char t[512];
  snprintf(t, sizeof t,
           "input x: %s[%d,%d,%d]\ninput r: %s[%d,%d,%d]\n"
           "weight g: %s[%d]\nweight bt: %s[%d]\n"
           "y = fused(x, r, g, bt) { a = ewadd($0, $1); "
           "n = layernorm(a, $2, $3) axis=2 eps=1e-5 }\noutput y\n",
           ty, b, rows / b, len, ty, b, rows / b, len, ty, len, ty, len);
  return parse(t);
}

/* Node 0's source (sms multiprocessors, ptrs, phys), which must compile;
 * *vec its form. */
static char *row_source(const ir_graph *g, const float *const *ptrs,
                        const int64_t (*phys)[IR_MAX_RANK], int sms, int *vec,
                        uint64_t *key, const char *what) {
  base_diag d;
  char *src = NULL, name[40];
  cr_assert_eq(gpu_fused_source(g, &g->nodes[0], ptrs, phys, "sm_90", sms, &src,
                                name, key, vec, &d),
               BASE_OK, "%s: %s", what, d.msg);
  if (getenv("SUPEROPT_TEST_SHOW_SOURCE"))
    fprintf(stderr, "---- %s (vec %d)\n%s", what, *vec, src);
  expect_compiles(src, name, 0);
  return src;
}

Test(cuda, row_kernel_vector_form_chosen) {
  static const char *const tys[] = {"bf16", "f16", "f32"};
  for (int t = 0; t < 3; t++) {
    const char *vt = t < 2 ? "uint4" : "float4";
    int vec = -1;
    uint64_t key;
    char what[64];
    /* rows of 768, aligned (NULL pointers: assumed) */
    ir_graph *g = res_ln_graph(tys[t], 16, 2048, 768);
    snprintf(what, sizeof what, "%s rows of 768", tys[t]);
    char *src = row_source(g, NULL, NULL, 0, &vec, &key, what);
    cr_expect_eq(vec, 1, "%s: scalar form", what);
    cr_expect(strstr(src, "16-byte chunks") && strstr(src, vt), "%s:\n%s", what,
              src);
    /* gamma and beta 16 bytes a chunk too: no 2-byte load of them */
    cr_expect(!strstr(src, "in2[b") && !strstr(src, "in3[b"),
              "%s: scale or shift read an element at a time\n%s", what, src);
    free(src);
    /* one input 8 bytes off 16: scalar */
    const float *ptrs[5] = {0};
    for (int k = 0; k < 5; k++)
      ptrs[k] = (const float *)(uintptr_t)(4096 * (k + 1));
    ptrs[1] = (const float *)(uintptr_t)(4096 + 8);
    snprintf(what, sizeof what, "%s rows of 768, r unaligned", tys[t]);
    free(row_source(g, ptrs, NULL, 0, &vec, &key, what));
    cr_expect_eq(vec, 0, "%s", what);
    ptrs[1] = ptrs[0];
    ptrs[4] = (const float *)(uintptr_t)(4096 + 4);
    snprintf(what, sizeof what, "%s rows of 768, y unaligned", tys[t]);
    free(row_source(g, ptrs, NULL, 0, &vec, &key, what));
    cr_expect_eq(vec, 0, "%s", what);
    /* x's rows 770 apart (a row base no multiple of 8), x transposed
     * (columns strided): scalar */
    int64_t phys[5][IR_MAX_RANK] = {{128 * 770, 770, 1},
                                    {128 * 768, 768, 1},
                                    {1},
                                    {1},
                                    {128 * 768, 768, 1}};
    snprintf(what, sizeof what, "%s rows 770 apart", tys[t]);
    free(row_source(g, NULL, (const int64_t(*)[IR_MAX_RANK])phys, 0, &vec, &key,
                    what));
    cr_expect_eq(vec, 0, "%s", what);
    phys[0][1] = 1, phys[0][2] = 128;
    snprintf(what, sizeof what, "%s x transposed", tys[t]);
    free(row_source(g, NULL, (const int64_t(*)[IR_MAX_RANK])phys, 0, &vec, &key,
                    what));
    cr_expect_eq(vec, 0, "%s", what);
    ir_graph_free(g);
    /* rows of 770: scalar */
    g = res_ln_graph(tys[t], 1, 10, 770);
    snprintf(what, sizeof what, "%s rows of 770", tys[t]);
    src = row_source(g, NULL, NULL, 0, &vec, &key, what);
    cr_expect_eq(vec, 0, "%s", what);
    cr_expect(!strstr(src, vt), "%s: 16-byte accesses\n%s", what, src);
    free(src);
    ir_graph_free(g);
  }
}

/* A softmax row body with a per-row value (constant along the row: read
 * once) and a column vector, and a reduce_mean (one value a row, so any
 * output), take the vector form, short rows the fewest lanes that hold
 * their chunks: 64 (8 chunks) and 40 (5) 8 lanes, 24 (3) 4. */
Test(cuda, row_kernel_vector_form_softmax_mean) {
  static const char *const lanes[] = {"threadIdx.x & 7;", "threadIdx.x & 3;",
                                      "threadIdx.x & 7;"};
  static const char *const texts[] = {
      "input x: @[3,10,64]\ninput m: @[3,10,1]\nweight w: @[64]\n"
      "y = fused(x, m, w) { a = ewsub($0, $1); b = ewmul(a, $2); "
      "c = softmax(b) axis=2 }\noutput y\n",
      "input x: @[5,7,24]\ninput s: @[]\n"
      "y = fused(x, s) { a = smul($0, $1); c = softmax(a) axis=2 }\n"
      "output y\n",
      "input x: @[6,40]\ny = fused(x) { a = tanh($0); "
      "m = reduce_mean(a) axes=[1] keepdims=0 }\noutput y\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    for (int t = 0; t < 2; t++) {
      ir_graph *g = parse_typed(texts[i], half_types[t]);
      int vec = -1;
      uint64_t key;
      char what[64];
      snprintf(what, sizeof what, "row body %zu %s", i, half_types[t]);
      char *src = row_source(g, NULL, NULL, 0, &vec, &key, what);
      cr_expect_eq(vec, 1, "%s: scalar form", what);
      cr_expect(strstr(src, "uint4"), "%s:\n%s", what, src);
      cr_expect(strstr(src, lanes[i]), "%s: not %s\n%s", what, lanes[i], src);
      free(src);
      ir_graph_free(g);
    }
}

/* Warps a block: 8 (no GPU known, or many rows), fewer where 8 would make
 * fewer than 2 blocks an SM (an H200's 132: BERT b1's 128 rows one a
 * block, b16's 2048 four; rows of 64, 4 a warp: 8192 rows 4 warps a
 * block); the number is in the source, hence the key. */
Test(cuda, row_kernel_rows_a_block) {
  static const struct {
    int b, rows, len, sms, threads;
  } cases[] = {{1, 128, 768, 0, 256},     {1, 128, 768, 132, 32},
               {16, 2048, 768, 132, 128}, {16, 2048, 768, 0, 256},
               {64, 8192, 768, 132, 256}, {4, 600, 768, 132, 64},
               {64, 8192, 64, 132, 128},  {64, 8192, 64, 0, 256}};
  uint64_t key0 = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ir_graph *g = res_ln_graph("bf16", cases[i].b, cases[i].rows, cases[i].len);
    int vec = -1;
    uint64_t key;
    char what[64], lb[48];
    snprintf(what, sizeof what, "%d rows of %d, %d SMs", cases[i].rows,
             cases[i].len, cases[i].sms);
    char *src = row_source(g, NULL, NULL, cases[i].sms, &vec, &key, what);
    snprintf(lb, sizeof lb, "__launch_bounds__(%d)", cases[i].threads);
    cr_expect(strstr(src, lb), "%s: no %s\n%s", what, lb, src);
    if (i == 0)
      key0 = key;
    if (i == 1)
      cr_expect_neq(key, key0, "rows a block are part of the key");
    free(src);
    ir_graph_free(g);
  }
}

/* Channels-last operands (layout.c): the kernel walks the output in NHWC
 * order and reads each input through its own strides. */
Test(cuda, fused_source_channels_last_compiles) {
  ir_graph *g = parse(fused_graphs[2]); /* [1,6,5,12] bn + residual + relu */
  int64_t nhwc[4] = {6 * 5 * 12, 1, 12 * 6, 6}, nchw[4] = {360, 60, 12, 1};
  int64_t phys[7][IR_MAX_RANK] = {{0}};
  for (int k = 0; k < 7; k++) {
    const int64_t *st = k == 0 || k == 6 ? nhwc : k == 5 ? nchw : NULL;
    if (st)
      memcpy(phys[k], st, sizeof nhwc);
    else
      phys[k][0] = 1; /* the 1-D batch-norm parameters */
  }
  base_diag d;
  char *src = NULL, name[40], *cubin = NULL;
  uint64_t key = 0, key_nchw = 0;
  int vec = -1;
  cr_assert_eq(gpu_fused_source(g, &g->nodes[0], NULL, NULL, "sm_90", 0, &src,
                                name, &key_nchw, &vec, &d),
               BASE_OK, "%s", d.msg);
  free(src);
  cr_assert_eq(gpu_fused_source(g, &g->nodes[0], NULL,
                                (const int64_t(*)[IR_MAX_RANK])phys, "sm_90", 0,
                                &src, name, &key, &vec, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_neq(key, key_nchw, "the layout is part of the kernel's key");
  cr_assert(!vec, "NHWC: the innermost dimension is C = 6, no float4");
  if (getenv("SUPEROPT_TEST_SHOW_SOURCE"))
    fprintf(stderr, "---- NHWC\n%s", src);
  size_t len;
  cr_assert_eq(gpu_fused_compile(src, name, "sm_90", &cubin, &len, &d), BASE_OK,
               "%s\n%s", d.msg, src);
  free(cubin);
  free(src);
  ir_graph_free(g);
}

Test(cuda, fused_compile_error_names_the_source) {
  base_diag d;
  char *cubin = NULL;
  size_t len;
  cr_assert_neq(gpu_fused_compile("this is not C++", "fused_bad", "sm_90",
                                  &cubin, &len, &d),
                BASE_OK);
  cr_assert(strstr(d.msg, "fused_bad.cu"), "%s", d.msg);
  cr_assert(strstr(d.msg, "nvrtcCompileProgram"), "%s", d.msg);
  cr_assert_null(cubin);
}

Test(cuda, fused_kernels_match_cpu) {
  need_gpu();
  for (size_t i = 0; i < sizeof fused_graphs / sizeof *fused_graphs; i++) {
    ir_graph *g = parse(fused_graphs[i]);
    char what[32];
    snprintf(what, sizeof what, "fused graph %zu", i);
    compare(g, NULL, 1e-5, what);
    ir_graph_free(g);
  }
}

/* A fused node after a convolution runs channels-last (layout.c) and
 * reads a residual in NCHW; also with channels-last off. */
Test(cuda, fused_after_conv_any_layout) {
  need_gpu();
  ir_graph *g =
      parse("input x: [2,5,7,9]\ninput r: [2,8,7,9]\nweight w: [8,5,3,3]\n"
            "weight s: [8]\nweight b: [8]\nweight m: [8]\nweight v: [8]\n"
            "c = conv2d(x, w)\n"
            "y = fused(c, s, b, m, v, r) { n = batchnorm($0, $1, $2, $3, $4); "
            "a = ewadd(n, $5); o = clip(a) min=0 max=6 }\n"
            "z = conv2d(y, w2)\nweight w2: [4,8,1,1]\noutput z\n");
  gpu_options o = {.fp32_strict = 1};
  compare(g, &o, 1e-5, "fused after conv, channels-last");
  o.nchw = 1;
  compare(g, &o, 1e-5, "fused after conv, NCHW");
  ir_graph_free(g);
}

/* Convolution biases moved into the fused node that alone reads the
 * convolution (plan.c, fused.c): a residual add + relu (both operands
 * convolutions with biases), SiLU, float4 with channels innermost (8
 * channels, channels-last) and along W (NCHW, W = 12), scalar (5
 * channels, W = 7), a batch norm in the body; a convolution read twice keeps
 * its bias kernel. */
static const char *const bias_fused_graph =
    "input x: [2,8,6,12]\nweight w: [8,8,3,3]\nweight b: [8]\n"
    "weight w2: [8,8,1,1]\nweight b2: [8]\nweight w5: [5,8,3,3]\n"
    "weight b5: [5]\nweight g: [5]\nweight gb: [5]\nweight mu: [5]\n"
    "weight var: [5]\nweight w55: [5,5,1,1]\nweight w56: [5,5,1,1]\n"
    "c = conv2d(x, w, b)\nd = conv2d(x, w2, b2)\n"
    "y = fused(c, d) { a = ewadd($0, $1); r = relu(a) }\n"
    "e = conv2d(y, w, b)\n"
    "s = fused(e) { g = sigmoid($0); m = ewmul($0, g) }\n"
    "f = conv2d(s, w5, b5) pad=[1,0,1,0]\n"
    "t = fused(f) { g = tanh($0); m = ewmul(g, $0) }\n"
    "h = conv2d(t, w55, b5)\nh2 = conv2d(t, w56, b5)\n"
    "u = fused(h, h2) { a = ewsub($0, $1); q = ewmul(a, $1) }\n"
    "k = conv2d(t, w55, b5)\n"
    "v = fused(k, g, gb, mu, var) { n = batchnorm($0, $1, $2, $3, $4); "
    "r = relu(n) }\nkk = ewadd(k, v)\n"
    "output u, kk, y\n";

Test(cuda, conv_bias_moved_into_fused) {
  need_gpu();
  ir_graph *g = parse(bias_fused_graph);
  lower_stats st;
  base_diag d;
  ir_graph *h = lower_graph(g, &st, &d); /* the biases into the fused nodes */
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(h->nodes[h->tensors[ir_find_tensor(h, "c")].node].nin, 2,
               "c's bias moved into y");
  cr_assert_eq(h->nodes[h->tensors[ir_find_tensor(h, "k")].node].nin, 3,
               "k is read twice: it keeps its bias");
  gpu_options cl = {0}, nchw = {.nchw = 1}, strict = {.fp32_strict = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1, .nchw = 1};
  compare(g, &strict, 1e-5, "bias not moved (strict)");
  compare(h, &cl, 1e-3, "bias into fused (tf32)");
  compare(h, &nchw, 1e-3, "bias into fused nchw (tf32)");
  compare(h, &strict, 1e-5, "bias into fused (strict)");
  compare(h, &poison, 1e-5, "bias into fused (strict, nchw, poisoned)");
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A fused node adding a per-channel bias input [C,1,1] (a convolution's,
 * moved there by the lower stage) compiles (no GPU needed): NCHW float4
 * (the bias constant per float4), NHWC float4 (four channels) and
 * scalar. */
Test(cuda, fused_source_with_channel_bias_compiles) {
  ir_graph *g = parse("input c: [2,8,6,12]\ninput d: [2,8,6,12]\n"
                      "input b: [8,1,1]\n"
                      "y = fused(c, d, b) { a = ewadd($0, $1); e = ewadd(a, "
                      "$2); r = relu(e) }\noutput y\n");
  int64_t nhwc[4] = {8 * 6 * 12, 1, 12 * 8, 8};
  int64_t phys[4][IR_MAX_RANK] = {{0}};
  for (int k = 0; k < 4; k++)
    memcpy(phys[k], nhwc, sizeof nhwc);
  memset(phys[2], 0, sizeof phys[2]); /* b: [8,1,1], row-major */
  phys[2][0] = phys[2][1] = phys[2][2] = 1;
  const float *unaligned[4] = {
      (const float *)(uintptr_t)4, (const float *)(uintptr_t)4,
      (const float *)(uintptr_t)4, (const float *)(uintptr_t)4};
  for (int v = 0; v < 3; v++) {
    base_diag d;
    char *src = NULL, name[40], *cubin = NULL;
    uint64_t key = 0;
    int vec = -1;
    cr_assert_eq(
        gpu_fused_source(g, &g->nodes[0], v == 2 ? unaligned : NULL,
                         v == 1 ? (const int64_t(*)[IR_MAX_RANK])phys : NULL,
                         "sm_90", 0, &src, name, &key, &vec, &d),
        BASE_OK, "%s", d.msg);
    cr_assert_eq(vec, v < 2, "variant %d", v);
    if (getenv("SUPEROPT_TEST_SHOW_SOURCE"))
      fprintf(stderr, "---- channel bias %d\n%s", v, src);
    size_t len;
    cr_assert_eq(gpu_fused_compile(src, name, "sm_90", &cubin, &len, &d),
                 BASE_OK, "%s\n%s", d.msg, src);
    free(cubin);
    free(src);
  }
  ir_graph_free(g);
}

/* Adds folded into matmuls: a bias vector into a matmul without one
 * (cuBLASLt's bias epilogue, then a relu in it too; batched b: the bias
 * kernel), residuals as cuBLASLt's C with beta = 1 (rank 2 and 3, a relu
 * after one by the kernel), and adds that must not fold (the residual is
 * computed after the matmul, the other has an act; the matmul is read
 * twice; a bias-shaped add
 * on a matmul with its own bias). */
static const char *const mm_fold_graph =
    "input a: [2,37,53]\nweight w: [53,29]\nweight b: [29]\n"
    "weight bv: [1,29]\ninput r: [2,37,29]\ninput bb: [2,53,29]\n"
    "weight w2: [29,29]\n"
    "m = matmul(a, w)\nmb = ewadd(m, b)\nmr = relu(mb)\n"
    "m2 = matmul(mr, w2, b)\nres = ewadd(r, m2)\n"
    "m3 = matmul(res, w2)\nres3 = ewadd(m3, res)\nrr = relu(res3)\n"
    "m4 = matmul(a, bb)\nm4b = ewadd(bv, m4)\n"
    "m5 = matmul(rr, w2, b)\nm6 = matmul(rr, w2) act=tanh\n"
    "late = ewadd(m5, m6)\n"
    "m7 = matmul(rr, w2, b)\nt7 = ewadd(m7, b)\n"
    "m8 = matmul(rr, w2)\nt8 = ewadd(m8, rr)\nu8 = ewmul(m8, t8)\n"
    "output m4b, late, t7, u8\n";

Test(cuda, matmul_bias_and_residual_folds) {
  need_gpu();
  ir_graph *g0 = parse(mm_fold_graph), *g = lowered(g0, 3);
  compare(g0, NULL, 1e-3, "matmul adds on their own (tf32)");
  ir_graph_free(g0);
  gpu_options tf = {0}, strict = {.fp32_strict = 1};
  gpu_options poison = {.fp32_strict = 1, .poison = 1};
  gpu_options nofold = {.fp32_strict = 1, .no_fold = 1};
  compare(g, &tf, 1e-3, "matmul folds (tf32)");
  compare(g, &strict, 1e-5, "matmul folds (strict)");
  compare(g, &poison, 1e-5, "matmul folds (strict, poisoned)");
  compare(g, &nofold, 1e-5, "matmul folds (strict, not folded)");
  ir_graph_free(g);
}

/* --fast-gelu: the matmul's bias + gelu in cuBLASLt's epilogue (tanh
 * approximation, within the TF32 tolerance), with and without a bias. */
Test(cuda, matmul_fast_gelu_epilogue) {
  need_gpu();
  ir_graph *g =
      parse("input a: [64,96]\nweight w: [96,80]\nweight b: [80]\n"
            "x = matmul(a, w, b) act=gelu\ny = matmul(a, w) act=gelu\n"
            "output x, y\n");
  gpu_options fast = {.fast_gelu = 1}, exact = {.fp32_strict = 1};
  compare(g, &fast, 1e-3, "matmul gelu (fast)");
  compare(g, &exact, 1e-5, "matmul gelu (exact, strict)");
  ir_graph_free(g);
}

/* $SUPEROPT_MM_SWEEP (tune/blas.c, an experiment): the matmuls' kernels
 * chosen among each algorithm id's configurations as well compute what
 * the CPU does: float32 (TF32 and strict) with the folds of mm_fold_graph,
 * f16 and bf16 with a bias, relu and a residual as C. */
Test(cuda, matmul_sweep_candidates) {
  need_gpu();
  setenv("SUPEROPT_MM_SWEEP", "1", 1);
  ir_graph *g0 = parse(mm_fold_graph), *g = lowered(g0, 3);
  gpu_options tf = {0}, strict = {.fp32_strict = 1};
  compare(g, &tf, 1e-3, "matmul folds, swept (tf32)");
  compare(g, &strict, 1e-5, "matmul folds, swept (strict)");
  compare_half_types("input x: @[4,40,64]\nweight w: @[64,48]\n"
                     "weight b: @[48]\ny = matmul(x, w, b) act=relu\n"
                     "u = matmul(x, w, b, y)\noutput y, u\n");
  unsetenv("SUPEROPT_MM_SWEEP");
  ir_graph_free(g);
  ir_graph_free(g0);
}

/* costdb measure times fused nodes like any other (gpu_measure_node puts
 * the node alone in a graph): a fused epilogue after a convolution. */
Test(cuda, measure_fused_node) {
  need_gpu();
  ir_graph *g = parse(bias_fused_graph);
  base_diag d;
  gpu_ctx *c;
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  int nf = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].op != IR_OP_FUSED)
      continue;
    double ms = -1;
    cr_assert_eq(gpu_measure_node(c, g, i, 3, 10, &ms, &d), BASE_OK, "%s",
                 d.msg);
    cr_expect(ms > 0 && ms < 1, "fused node %d: %g ms", i, ms);
    nf++;
  }
  cr_assert_eq(nf, 5); /* y, s, t, u, v */
  gpu_ctx_free(c);
  ir_graph_free(g);
}

/* $SUPEROPT_MEASURE_LAYOUT=network (src/gpu/measure.c): a node measured
 * alone runs in the layout the whole graph runs it. c2 runs channels-last
 * in the network (its output feeds a relu, not a graph output); c3's
 * output is read by a reshape, so the network runs c3 NCHW (reading r,
 * channels-last, through a conversion). "@": "" (float32) or bf16. */
static const char *const measlay_graph =
    "input x: @[2,16,14,14]\nweight w1: @[32,16,3,3]\nweight b1: @[32]\n"
    "weight w2: @[32,32,3,3]\nweight w3: @[32,32,3,3]\n"
    "c1 = conv2d(x, w1, b1) pad=[1,1,1,1]\nr = relu(c1)\n"
    "c2 = conv2d(r, w2) pad=[1,1,1,1]\ny = relu(c2)\n"
    "c3 = conv2d(r, w3) pad=[1,1,1,1]\nf = reshape(c3) shape=[2,6272]\n"
    "output y, f\n";

/* The plan gpu_measure_plan makes for g's node computing `out`: whether
 * its output and its input r are channels-last (-1 where the node is not
 * a convolution), and its engine into eng. */
static void measlay_probe(gpu_ctx *c, const ir_graph *g, const char *out,
                          int *ycl, int *xcl, char *eng, size_t n) {
  base_diag d;
  ir_graph *h = NULL;
  gpu_plan *p = NULL;
  cr_assert_eq(gpu_measure_plan(c, g, node_of(g, out), &h, &p, &d), BASE_OK,
               "%s: %s", out, d.msg);
  cr_assert_eq(h->nnodes, 1);
  cr_assert_eq(h->nodes[0].op, IR_OP_CONV2D);
  *ycl = gpu_plan_channels_last(p, ir_find_tensor(h, out));
  *xcl = gpu_plan_channels_last(p, ir_find_tensor(h, "r"));
  snprintf(eng, n, "%s", gpu_plan_engine(p, 0));
  gpu_plan_free(p);
  ir_graph_free(h);
}

Test(cuda, measure_in_network_layout) {
  need_gpu();
  static const char *const types[] = {"", "bf16"};
  base_diag d;
  gpu_ctx *c;
  cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
  for (int t = 0; t < 2; t++) {
    const char *ty = *types[t] ? types[t] : "f32";
    ir_graph *g = parse_typed(measlay_graph, types[t]);
    gpu_plan *whole;
    cr_assert_eq(gpu_plan_new(c, g, &whole, &d), BASE_OK, "%s", d.msg);
    /* the network's layouts, which the test relies on */
    cr_assert_eq(gpu_plan_channels_last(whole, ir_find_tensor(g, "c2")), 1,
                 "%s", ty);
    cr_assert_eq(gpu_plan_channels_last(whole, ir_find_tensor(g, "r")), 1, "%s",
                 ty);
    cr_assert_eq(gpu_plan_channels_last(whole, ir_find_tensor(g, "c3")), 0,
                 "%s", ty);
    char whole_eng[64], eng[64];
    snprintf(whole_eng, sizeof whole_eng, "%s",
             gpu_plan_engine(whole, node_of(g, "c2")));
    gpu_plan_free(whole);
    int ycl, xcl;
    double on = 0, off = 0, nchw_on = 0;
    setenv("SUPEROPT_MEASURE_LAYOUT", "network", 1);
    measlay_probe(c, g, "c2", &ycl, &xcl, eng, sizeof eng);
    cr_expect(ycl == 1 && xcl == 1, "%s on: c2 %d, r %d", ty, ycl, xcl);
    cr_expect_str_eq(eng, whole_eng, "%s on: c2's engine", ty);
    measlay_probe(c, g, "c3", &ycl, &xcl, eng, sizeof eng);
    cr_expect(ycl == 0 && xcl == 1, "%s on: c3 %d, r %d", ty, ycl, xcl);
    cr_assert_eq(gpu_measure_node(c, g, node_of(g, "c2"), 3, 10, &on, &d),
                 BASE_OK, "%s", d.msg);
    cr_assert_eq(gpu_measure_node(c, g, node_of(g, "c3"), 3, 10, &nchw_on, &d),
                 BASE_OK, "%s", d.msg);
    setenv("SUPEROPT_MEASURE_LAYOUT", "node", 1);
    measlay_probe(c, g, "c2", &ycl, &xcl, eng, sizeof eng);
    cr_expect(ycl == 0 && xcl == 0, "%s off: c2 %d, r %d", ty, ycl, xcl);
    cr_assert_eq(gpu_measure_node(c, g, node_of(g, "c2"), 3, 10, &off, &d),
                 BASE_OK, "%s", d.msg);
    cr_expect(on > 0 && on < 1 && off > 0 && off < 1 && nchw_on > 0 &&
                  nchw_on < 1,
              "%s: c2 %g ms in the network's layout, %g alone; c3 %g", ty, on,
              off, nchw_on);
    fprintf(stderr,
            "measure_in_network_layout %s: c2 %.4f ms (network), "
            "%.4f ms (alone); c3 %.4f ms (network, NCHW)\n",
            ty, on, off, nchw_on);
    ir_graph_free(g);
  }
  unsetenv("SUPEROPT_MEASURE_LAYOUT");
  gpu_ctx_free(c);
}

/* Removes dir and the files in it (a disk cache of the tests below). */
static void remove_cache_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));) {
    char path[512];
    if (e->d_name[0] != '.' &&
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* A second context finds every kernel in the disk cache: nothing compiled. */
Test(cuda, fused_kernel_cache_second_run_compiles_nothing) {
  need_gpu();
  char dir[] = "/tmp/superopt-kcache-XXXXXX";
  cr_assert(mkdtemp(dir));
  setenv("SUPEROPT_KERNEL_CACHE", dir, 1);
  int compiled[2], disk[2], reused[2];
  for (int run = 0; run < 2; run++) {
    base_diag d;
    gpu_ctx *c;
    cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
    for (size_t i = 0; i < sizeof fused_graphs / sizeof *fused_graphs; i++) {
      ir_graph *g = parse(fused_graphs[i]);
      gpu_plan *p;
      cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
      gpu_plan_free(p);
      ir_graph_free(g);
    }
    gpu_kernel_stats(c, &compiled[run], &disk[run], &reused[run]);
    gpu_ctx_free(c);
  }
  unsetenv("SUPEROPT_KERNEL_CACHE");
  remove_cache_dir(dir);
  cr_assert_gt(compiled[0], 0);
  cr_assert_eq(compiled[1], 0, "second run compiled %d kernels", compiled[1]);
  cr_assert_eq(disk[1], compiled[0]);
}
/* cuDNN's runtime-compiled plans (conv_ep_graph's residual convolution,
 * fused wherever cuDNN has a plan) come from the disk cache in a second
 * context: none compiled there, and the results still match the CPU. */
Test(cuda, dnn_plan_cache_second_run_compiles_nothing) {
  need_gpu();
  char dir[] = "/tmp/superopt-pcache-XXXXXX";
  cr_assert(mkdtemp(dir));
  setenv("SUPEROPT_KERNEL_CACHE", dir, 1);
  setenv("SUPEROPT_CONV_FUSE", "always", 1);
  unsetenv("SUPEROPT_DNN_RTC"); /* the default: runtime-compiled engines */
  int compiled[2], disk[2];
  ir_graph *g = parse(conv_ep_graph);
  for (int run = 0; run < 2; run++) {
    base_diag d;
    gpu_ctx *c;
    cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
    gpu_plan *p;
    cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
    gpu_plan_free(p);
    gpu_dnn_plan_stats(c, &compiled[run], &disk[run]);
    gpu_ctx_free(c);
  }
  gpu_options tf32 = {0};
  compare(g, &tf32, 2e-3, "conv epilogues, plans from the disk cache");
  ir_graph_free(g);
  unsetenv("SUPEROPT_CONV_FUSE");
  unsetenv("SUPEROPT_KERNEL_CACHE");
  remove_cache_dir(dir);
  cr_assert_gt(compiled[0], 0,
               "no runtime-compiled plan for the residual convolution "
               "(cuDNN 9.14 compiles those)");
  cr_assert_eq(compiled[1], 0, "second run compiled %d plans", compiled[1]);
  cr_assert_eq(disk[1], compiled[0] + disk[0]);
}

/* Flips one byte in the middle of every tune-*.bin in dir (a torn or
 * spliced file of the right length); returns how many there were. */
static int corrupt_tune_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[512];
    if (strncmp(e->d_name, "tune-", 5) ||
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >=
            (int)sizeof path)
      continue;
    FILE *f = fopen(path, "r+b");
    cr_assert(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long mid = ftell(f) - 8; /* inside the last record */
    cr_assert_gt(mid, 0);
    cr_assert_eq(fseek(f, mid, SEEK_SET), 0);
    int ch = fgetc(f);
    cr_assert_eq(fseek(f, mid, SEEK_SET), 0);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    n++;
  }
  if (d)
    closedir(d);
  return n;
}

/* The autotuners' choices kept on disk (tune.c): a second context times
 * nothing, takes each choice from the file, runs the same engines and
 * still matches the CPU; a corrupt file is timed again, no error. Graph:
 * convolutions with every epilogue (conv_ep_graph) and attention's
 * matmuls. */
Test(cuda, tune_cache_second_run_times_nothing) {
  need_gpu();
  char dir[] = "/tmp/superopt-tcache-XXXXXX";
  cr_assert(mkdtemp(dir));
  setenv("SUPEROPT_KERNEL_CACHE", dir, 1);
  static const char *const off[] = {"SUPEROPT_CONV_FUSE", "SUPEROPT_DW",
                                    "SUPEROPT_DNN_RTC", "SUPEROPT_GEMM",
                                    "SUPEROPT_TUNE_CACHE"};
  for (size_t i = 0; i < sizeof off / sizeof *off; i++)
    unsetenv(off[i]);
  const char *src[2] = {conv_ep_graph, qkv_graph[0]};
  for (int q = 0; q < 2; q++) {
    ir_graph *g = parse(src[q]);
    int timed[3], disk[3];
    const char *eng[3][64];
    cr_assert_leq(g->nnodes, 64);
    for (int run = 0; run < 3; run++) {
      if (run == 2)
        cr_assert_gt(corrupt_tune_files(dir), 0, "no tuning file in %s", dir);
      base_diag d;
      gpu_ctx *c;
      gpu_plan *p;
      cr_assert_eq(gpu_ctx_new(NULL, &c, &d), BASE_OK, "%s", d.msg);
      cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
      for (int i = 0; i < g->nnodes; i++)
        eng[run][i] = gpu_plan_engine(p, i); /* static strings */
      gpu_plan_free(p);
      gpu_tune_stats(c, &timed[run], &disk[run]);
      gpu_ctx_free(c);
    }
    cr_expect_gt(timed[0], 0, "graph %d: nothing was timed", q);
    cr_expect_eq(disk[0], 0);
    cr_expect_eq(timed[1], 0, "graph %d: the second run timed %d choices", q,
                 timed[1]);
    cr_expect_eq(disk[1], timed[0], "graph %d: %d of %d choices from disk", q,
                 disk[1], timed[0]);
    cr_expect_eq(timed[2], timed[0], "graph %d: a corrupt file, %d timed", q,
                 timed[2]);
    int rebuilt = 0; /* graph-API plans rebuilt from their rank */
    for (int i = 0; i < g->nnodes; i++) {
      cr_expect_str_eq(eng[1][i], eng[0][i], "graph %d node %d", q, i);
      rebuilt += !!strstr(eng[1][i], "cuDNN graph API");
    }
    if (q == 0)
      cr_expect_gt(rebuilt, 0, "no graph-API plan among the choices");
    gpu_options tf32 = {0};
    compare(g, &tf32, 2e-3, "choices from the tuning cache");
    ir_graph_free(g);
    remove_cache_dir(dir);
    cr_assert(mkdtemp(strcpy(dir, "/tmp/superopt-tcache-XXXXXX")));
    setenv("SUPEROPT_KERNEL_CACHE", dir, 1);
  }
  unsetenv("SUPEROPT_KERNEL_CACHE");
  remove_cache_dir(dir);
}

/* Four branches of an Inception-like block, a projection shortcut beside
 * a residual chain, and attention's batched GEMM (cuBLAS, kept on the
 * context's stream): run on several streams. */
static const char *const branchy_graph =
    "input x: [2,16,12,10]\nweight w1: [8,16,1,1]\nweight w3: [8,16,3,3]\n"
    "weight w5: [8,8,5,5]\nweight wp: [8,16,1,1]\nweight b: [8]\n"
    "weight wr: [32,32,3,3]\nweight ws: [32,16,1,1]\n"
    "a = conv2d(x, w1, b) act=relu\nc3 = conv2d(x, w3) act=relu\n"
    "r1 = conv2d(x, w1)\nc5 = conv2d(r1, w5, b) act=relu\n"
    "p = maxpool(x) kernel=[3,3] stride=[1,1] pad=same\n"
    "cp = conv2d(p, wp, b) act=relu\nk = concat(a, c3, c5, cp) axis=1\n"
    "m = conv2d(k, wr) act=relu\nn = conv2d(m, wr)\ns = conv2d(x, ws)\n"
    "y = ewadd(n, s)\nz = relu(y)\n"
    "input q: [2,4,9,8]\ninput kk: [2,4,8,9]\n"
    "sc = matmul(q, kk)\nsm = softmax(sc) axis=3\nv = matmul(sm, q)\n"
    "t1 = transpose(q) perm=[0,2,1,3]\nt3 = transpose(kk) perm=[0,3,2,1]\n"
    "h = matmul(t1, t3)\noutput z, v, h\n";

/* One run of g with o; the streams its replay kept, and both replays'
 * times where both were timed (gpu_plan_streams). */
static void streams_used(const ir_graph *g, const gpu_options *o, int *ns,
                         double *one, double *many) {
  base_diag d;
  gpu_ctx *c;
  gpu_plan *p;
  ex_values *v = ex_values_new(g);
  cr_assert_eq(ex_fill_random(g, v, 3, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_ctx_new(o, &c, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_new(c, g, &p, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_upload(p, v, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(gpu_plan_run(p, &d), BASE_OK, "%s", d.msg);
  gpu_plan_streams(p, ns, one, many);
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ex_values_free(v);
}

/* Node orders (ir_graph_reordered, gpu_plan_reorder): the branchy graph
 * in five random orders on 4 streams (forced) matches the CPU; timed
 * (streams 0), gpu_plan_reorder keeps a plan whose graph has g's tensors
 * and whose outputs match the CPU's, whichever order won. */
Test(cuda, node_orders_match_cpu) {
  need_gpu();
  ir_graph *g = parse(branchy_graph);
  gpu_options o = {.fp32_strict = 1, .streams = 4};
  for (uint64_t seed = 1; seed <= 5; seed++) {
    ir_graph *h = ir_graph_reordered(g, seed);
    cr_assert(h);
    char what[64];
    snprintf(what, sizeof what, "order %d on 4 streams", (int)seed);
    compare(h, &o, 1e-5, what);
    ir_graph_free(h);
  }
  gpu_options a = {.fp32_strict = 1};
  gpu_ctx *c;
  gpu_plan *p;
  ex_values *v = run_both(g, &a, "timed orders", &c, &p);
  base_diag d;
  int kept = -1;
  cr_assert_eq(gpu_plan_reorder(c, g, v, 6, &p, &kept, &d), BASE_OK, "%s",
               d.msg);
  cr_assert(kept >= 0 && kept < 6, "kept %d", kept);
  const ir_graph *h = gpu_plan_graph(p);
  cr_assert_eq(h->ntensors, g->ntensors);
  cr_assert(kept || h == g, "the graph's own order kept, another graph run");
  cr_assert_eq(gpu_plan_run(p, &d), BASE_OK, "%s", d.msg);
  for (int i = 0; i < g->noutputs; i++) {
    int t = g->outputs[i];
    cr_assert_str_eq(h->tensors[t].name, g->tensors[t].name);
    float *y = download(g, p, t);
    double e = rel_error(y, v->v[t], ir_shape_numel(&g->tensors[t].shape));
    cr_expect(e <= 1e-5, "order %d: output %s: rel error %.3e", kept,
              g->tensors[t].name, e);
    free(y);
  }
  gpu_plan_free(p);
  gpu_ctx_free(c);
  ex_values_free(v);
  ir_graph_free(g);
}

/* Every test graph with its nodes on up to 4 streams (forced, untimed):
 * the reads and writes the folds move between nodes become the right
 * waits. A graph with independent branches really uses several streams. */
Test(cuda, branches_side_by_side_match_cpu) {
  need_gpu();
  gpu_options o = {.fp32_strict = 1, .streams = 4}, tf = {.streams = 4};
  compare_op_graphs(&o, 1e-5, "4 streams, strict");
  const char *const graphs[] = {
      cl_graph,        residual_graph,   SE_GRAPH,      LN_GRAPH,
      PAD_SLICE_GRAPH, bias_fused_graph, mm_fold_graph, branchy_graph};
  for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++) {
    ir_graph *g = parse(graphs[i]);
    char what[64];
    snprintf(what, sizeof what, "graph %zu on 4 streams", i);
    compare(g, &o, 1e-5, what);
    compare(g, &tf, 1e-3, what);
    ir_graph_free(g);
  }
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/tests/data/good/every_op.graph", &d);
  cr_assert(g, "%s", d.msg);
  compare(g, &o, 1e-5, "every_op on 4 streams");
  ir_graph_free(g);
  g = parse(branchy_graph);
  for (int k = 0; k < 3; k++) { /* forced 4, forced 1, timed */
    gpu_options x = {.streams = k == 0 ? 4 : k == 1 ? 1 : 0};
    int ns;
    double one, many;
    streams_used(g, &x, &ns, &one, &many);
    if (k == 0)
      cr_expect(ns > 1 && one == 0, "forced: %d streams, timed %g", ns, one);
    if (k == 1)
      cr_expect(ns == 1, "one stream asked, %d used", ns);
    if (k == 2)
      cr_expect(one > 0 && many > 0 && (ns > 1) == (many < one),
                "timed: %d streams, %g vs %g ms", ns, one, many);
  }
  /* the multi-stream arena does not fit (simulated): auto falls back to
   * one stream, forced streams fail cleanly */
  setenv("SUPEROPT_STREAMS_OOM", "1", 1);
  gpu_options x = {0};
  int ns;
  double one, many;
  streams_used(g, &x, &ns, &one, &many);
  cr_expect(ns == 1 && one == 0 && many == 0,
            "no fallback: %d streams, timed %g and %g ms", ns, one, many);
  x.streams = 4;
  gpu_ctx *c;
  gpu_plan *p = NULL;
  cr_assert_eq(gpu_ctx_new(&x, &c, &d), BASE_OK, "%s", d.msg);
  cr_expect_eq(gpu_plan_new(c, g, &p, &d), BASE_ERR_NOMEM, "forced streams");
  cr_expect(strstr(d.msg, "activation arena"), "%s", d.msg);
  gpu_plan_free(p);
  gpu_ctx_free(c);
  gpu_options fb = {0};
  compare(g, &fb, 1e-3, "multi-stream arena out of memory, one stream");
  unsetenv("SUPEROPT_STREAMS_OOM");
  ir_graph_free(g);
}

/* A ViT-like layer (torch MHA: the transpose to [S,B,C] before the QKV
 * projection, the out projection's rows reshaped before the residual add,
 * the MLP's bias add then residual add) and a Swin-like MLP over
 * [N,H,W,C] rows, lowered (src/fuse/lower_epi.c, lower_seq.c): the
 * residuals are the matmuls' r inputs (one read through a reshape to the
 * rows, one after a zero bias), the transpose gone, the attention reading
 * batch-first; the GPU agrees with the CPU, poisoned and strict. */
static const char res_rows_graph[] =
    "input x: [2,9,32]\nweight g: [32]\nweight be: [32]\n"
    "weight wqkv: [32,96]\nweight bqkv: [96]\nweight s: []\n"
    "weight wo: [32,32]\nweight w1: [32,64]\nweight w2: [64,32]\n"
    "weight b2: [32]\ninput y: [2,4,4,32]\n"
    "n = layernorm(x, g, be) axis=2\n"
    "t = transpose(n) perm=[1,0,2]\n"
    "p = matmul(t, wqkv, bqkv)\n"
    "a = attention(p, p, p, s) heads=2 cols=[0,32,64] hdim=[16,16] "
    "seqfirst=1\n"
    "ar = reshape(a) shape=[18,32]\n"
    "o = matmul(ar, wo)\n"
    "orr = reshape(o) shape=[2,9,32]\n"
    "r1 = ewadd(orr, x)\n"
    "n2 = layernorm(r1, g, be) axis=2\n"
    "h = matmul(n2, w1) act=relu\n"
    "m = matmul(h, w2)\n"
    "mb = ewadd(m, b2)\n"
    "r2 = ewadd(r1, mb)\n"
    "ny = layernorm(y, g, be) axis=3\n"
    "hy = matmul(ny, w1) act=relu\n"
    "my = matmul(hy, w2, b2)\n"
    "ry = ewadd(y, my)\n"
    "output r2, ry\n";

Test(cuda, transformer_residuals_lowered) {
  need_gpu();
  ir_graph *g = parse(res_rows_graph);
  lower_stats st;
  ir_graph *h = lowered_st(g, &st);
  cr_expect_eq(st.moves, 1);
  cr_expect_eq(h->nodes[node_of(h, "ry")].nin, 4);
  gpu_options strict = {.fp32_strict = 1}, poison = {.poison = 1};
  compare(h, &poison, 1e-3, "transformer residuals lowered, poisoned");
  compare(h, &strict, 1e-5, "transformer residuals lowered, strict");
  ir_graph_free(h);
  ir_graph_free(g);
}

#endif
