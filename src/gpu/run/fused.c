/* fused.c: run-time code generation for `fused` nodes.
 *
 * At plan time each fused node's body is written out as CUDA C++
 * specialised to its shapes (dimensions and broadcast strides are
 * constants, so index divisions become multiplications), compiled by NVRTC
 * to a cubin for the device's architecture, loaded with the driver API and
 * launched with cuLaunchKernel (capturable into the plan's CUDA graph).
 *
 * One thread computes one output element, or four consecutive ones in
 * memory (float4 loads and stores) when the output's innermost dimension
 * is a multiple of 4, every pointer is 16-byte aligned and every input is
 * either contiguous or constant along that dimension. Threads walk the
 * output in its memory order (NCHW, or NHWC where plan/layout.c chose
 * channels-last); each input is read at the output coordinate through its
 * own memory strides (any layout) with broadcasting; batch-norm parameters
 * by the channel of the batch norm's own input.
 *
 * A half node (f16, bf16: docs/half.md; every input and the output of its
 * one type) loads each element as a float (ldh), computes the body in
 * float32 and rounds once as it stores (sth); its vector form is 8
 * elements a thread, 16-byte loads and stores (uint4), under the same
 * conditions with 8 for 4. The float32 source is the same as before.
 *
 * A body ending with a row reduction over the last axis (softmax, layer
 * norm, reduce_mean) takes a warp a row up to 1024 values (a block a row
 * beyond), as many warps a block, up to 8, as still make two blocks an
 * SM (row_warps). Its vector form: where the row is a multiple of 8 halves
 * (4 floats) and every load, and the output, is contiguous along it from
 * 16-byte aligned row bases or constant along it, a lane holds chunks of
 * 8 (4) consecutive columns, each read and written with one 16-byte
 * access (row_vec_ok), a row of fewer than 32 chunks the fewest lanes
 * that hold them (several rows a warp); else a lane holds columns lane,
 * lane + 32, ....
 *
 * Kernels are cached: in the context (a body at given shapes is compiled
 * once per process) and on disk as <cache>/<key>.cubin, the key hashing the
 * generated source (body, shapes, vector width), the architecture and the
 * NVRTC version; <cache> is $SUPEROPT_KERNEL_CACHE ("off": no disk
 * cache), else $XDG_CACHE_HOME/superopt/kernels, else
 * ~/.cache/superopt/kernels. Every NVRTC and driver status is checked; a
 * failure names the call and the generated source (fused_<key>.cu).
 */
#include <cuda.h>
#include <errno.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "../gpu_int.h"

#define THREADS 256

/* Driver API entry points, resolved through the runtime
 * (cudaGetDriverEntryPointByVersion) rather than linked: linking libcuda
 * would stop the binary from loading on machines without a driver. */
typedef struct drv_api {
  CUresult (*load)(CUmodule *, const void *);
  CUresult (*get_fn)(CUfunction *, CUmodule, const char *);
  CUresult (*unload)(CUmodule);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                     unsigned, unsigned, unsigned, CUstream, void **, void **);
  CUresult (*err_name)(CUresult, const char **);
  CUresult (*err_str)(CUresult, const char **);
} drv_api;

static drv_api drv;
static int drv_state; /* 0 unresolved, 1 ok, -1 failed */

static base_status drv_init(base_diag *d) {
  static const char *const names[] = {"cuModuleLoadData", "cuModuleGetFunction",
                                      "cuModuleUnload",   "cuLaunchKernel",
                                      "cuGetErrorName",   "cuGetErrorString"};
  void **slots[] = {(void **)&drv.load,     (void **)&drv.get_fn,
                    (void **)&drv.unload,   (void **)&drv.launch,
                    (void **)&drv.err_name, (void **)&drv.err_str};
  if (drv_state == 0) {
    drv_state = 1;
    for (int i = 0; i < 6; i++) {
      enum cudaDriverEntryPointQueryResult q;
      if (cudaGetDriverEntryPointByVersion(names[i], slots[i], 12000,
                                           cudaEnableDefault,
                                           &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess || !*slots[i]) {
        cudaGetLastError();
        drv_state = -1;
        return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                             "CUDA driver entry point %s not found", names[i]);
      }
    }
  }
  return drv_state > 0 ? BASE_OK
                       : base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                                       "CUDA driver entry points not found");
}

struct gpu_fk {
  uint64_t key;
  CUmodule mod;
  CUfunction fn;
};

static base_status drv_fail(base_diag *d, CUresult r, const char *what,
                            const char *src) {
  const char *name = NULL, *msg = NULL;
  if (drv.err_name)
    drv.err_name(r, &name);
  if (drv.err_str)
    drv.err_str(r, &msg);
  return base_diag_set(
      d, r == CUDA_ERROR_OUT_OF_MEMORY ? BASE_ERR_NOMEM : BASE_ERR_INTERNAL, 0,
      0, "CUDA driver error %s (%s) in %s for %s", name ? name : "?",
      msg ? msg : "?", what, src);
}

static base_status rtc_fail(base_diag *d, nvrtcResult r, const char *what,
                            const char *src, const char *log) {
  return base_diag_set(
      d, BASE_ERR_INTERNAL, 0, 0, "NVRTC error %s in %s for %s%s%.300s",
      nvrtcGetErrorString(r), what, src, log ? ": " : "", log ? log : "");
}

/* ---- code generation ----------------------------------------------------- */

/* One load: input k read with strides st over the output coordinates. */
typedef struct load {
  int in;
  int64_t st[IR_MAX_RANK];
} load;

typedef struct gen {
  int dt; /* the element type of every input and the output (CXK_*) */
  int vw; /* elements a thread in the vector form: 4 (float4), 8 (half) */
  const ir_body *b;
  const ir_shape *out;
  const int64_t (*phys)[IR_MAX_RANK]; /* memory strides per input, then the
                                         output; NULL: row-major */
  int order[IR_MAX_RANK];   /* output dims, outermost in memory first */
  int inner;                /* the output dim innermost in memory */
  int64_t ost[IR_MAX_RANK]; /* the output's strides, 0 for size-1 dims */
  load loads[IR_BODY_MAX_OPS * IR_MAX_FIXED_IN];
  int nloads;
  int ref[IR_BODY_MAX_OPS][IR_MAX_FIXED_IN]; /* body operand -> load */
  int recip;  /* the half vector form: a division by a load constant along
                 the vector as a product with its reciprocal (body_fn) */
  int rowvec; /* a row kernel's vector form: a lane holds chunks of vw
                 consecutive columns, 16 bytes a load (row_vec_ok) */
  int warps;  /* a row kernel's warps a block */
  int lanes;  /* lanes a row in the warp form: 32, or in the vector form
                 the fewest (a power of two) that hold a row's chunks, 32 /
                 lanes rows a warp */
} gen;

static int add_load(gen *G, int in, const int64_t *st) {
  for (int i = 0; i < G->nloads; i++)
    if (G->loads[i].in == in &&
        !memcmp(G->loads[i].st, st, sizeof(int64_t) * IR_MAX_RANK))
      return i;
  G->loads[G->nloads].in = in;
  memcpy(G->loads[G->nloads].st, st, sizeof(int64_t) * IR_MAX_RANK);
  return G->nloads++;
}

/* Strides of x seen through the output (NumPy broadcasting): x's memory
 * strides mem (NULL: row-major), 0 where x broadcasts. */
static void bcast(const ir_shape *x, const int64_t *mem, const ir_shape *o,
                  int64_t *st) {
  int64_t acc = 1;
  memset(st, 0, sizeof(int64_t) * IR_MAX_RANK);
  for (int i = x->rank - 1; i >= 0; i--) {
    int oi = i + o->rank - x->rank;
    st[oi] = x->dim[i] == 1 ? 0 : mem ? mem[i] : acc;
    acc *= x->dim[i];
  }
}

/* The output's memory order: dims by decreasing memory stride (size-1
 * dims, stride 0 here, in logical order: they take no room). */
static void out_order(gen *G) {
  const ir_shape *o = G->out;
  bcast(o, G->phys ? G->phys[G->b->nin] : NULL, o, G->ost);
  for (int j = 0; j < o->rank; j++)
    G->order[j] = j;
  for (int a = 1; a < o->rank; a++) /* insertion sort, stable */
    for (int b = a; b > 0; b--) {
      int x = G->order[b - 1], y = G->order[b];
      int64_t sx = o->dim[x] == 1 ? INT64_MAX : G->ost[x];
      int64_t sy = o->dim[y] == 1 ? INT64_MAX : G->ost[y];
      if (sx >= sy)
        break;
      G->order[b - 1] = y, G->order[b] = x;
    }
  G->inner = o->rank > 0 ? G->order[o->rank - 1] : 0;
  for (int k = o->rank - 1; k >= 0; k--) /* a size-1 dim is never inner */
    if (o->dim[G->order[k]] != 1) {
      G->inner = G->order[k];
      break;
    }
}

/* Plans every load; fails (returns -1) on a batch-norm parameter computed
 * in the body (only inputs can be indexed by channel). */
static int plan_loads(gen *G, const ir_shape *ins, const ir_shape *shapes) {
  const ir_body *b = G->b;
  for (int i = 0; i < b->nops; i++) {
    const ir_body_op *o = &b->ops[i];
    for (int k = 0; k < o->nin; k++) {
      int r = o->in[k];
      G->ref[i][k] = -1;
      if (o->op == IR_OP_BATCHNORM && k > 0) {
        if (r >= 0)
          return -1;
        const ir_shape *x =
            o->in[0] < 0 ? &ins[-1 - o->in[0]] : &shapes[o->in[0]];
        int64_t st[IR_MAX_RANK] = {0};
        int oc = G->out->rank - x->rank + 1;
        if (x->dim[1] != 1)
          st[oc] = 1;
        G->ref[i][k] = add_load(G, -1 - r, st);
      } else if (r < 0) {
        int64_t st[IR_MAX_RANK];
        bcast(&ins[-1 - r], G->phys ? G->phys[-1 - r] : NULL, G->out, st);
        G->ref[i][k] = add_load(G, -1 - r, st);
      }
    }
  }
  return 0;
}

static void operand(base_buf *s, const gen *G, int i, int k) {
  int r = G->b->ops[i].in[k];
  if (r >= 0)
    base_buf_printf(s, "t%d", r);
  else
    base_buf_printf(s, "a%d", G->ref[i][k]);
}

static void fbits(base_buf *s, float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  base_buf_printf(s, "__int_as_float(0x%08x)", u);
}

/* Operand 0, the operator sym, operand 1. */
static void binop(base_buf *s, const gen *G, int i, const char *sym) {
  operand(s, G, i, 0);
  base_buf_printf(s, "%s", sym);
  operand(s, G, i, 1);
}

/* Whether body op i (a division) divides by a load that is constant
 * along the half vector form's 8 elements (a scalar constant, a
 * per-channel one of NCHW): written as a product with the reciprocal, the
 * reciprocal is computed once a thread where the inlined body would divide
 * 8 times (ConvNeXt's erf gelu divides by sqrt 2: a [16,56,56,384] bf16
 * node took 36 us on an H200, compute-bound; float32 division is some 10
 * instructions). x * (1 / c) differs from x / c by at most an ulp of
 * float32, far below the half type's rounding that follows. */
static int div_by_constant(const gen *G, int i) {
  int r = G->b->ops[i].in[1];
  return G->recip && r < 0 && G->loads[G->ref[i][1]].st[G->inner] == 0;
}

/* One device function ew_<name>(x) per ew.def row: its CUDA expression. */
static void ew_prelude(base_buf *s) {
  for (int r = 0; r < IR_EW_NROWS; r++) {
    ir_opcode op = ir_ew_op(r);
    base_buf_printf(s,
                    "__device__ __forceinline__ float ew_%s(float x) "
                    "{ return %s; }\n",
                    ir_op(op)->name, ir_ew_of(op)->cuda);
  }
}

static void body_fn(base_buf *s, const gen *G) {
  ew_prelude(s);
  const ir_body *b = G->b;
  base_buf_printf(s, "__device__ __forceinline__ float body(");
  for (int l = 0; l < G->nloads; l++)
    base_buf_printf(s, "%sfloat a%d", l ? ", " : "", l);
  base_buf_printf(s, ") {\n");
  int nmap = ir_body_row(b) ? b->nops - 1 : b->nops; /* a row op: its x */
  if (!G->nloads)
    base_buf_printf(s, "  (void)0;\n");
  for (int i = 0; i < nmap; i++) {
    const ir_body_op *o = &b->ops[i];
    base_buf_printf(s, "  const float t%d = ", i);
    switch (o->op) {
    case IR_OP_EWADD: binop(s, G, i, " + "); break;
    case IR_OP_EWSUB: binop(s, G, i, " - "); break;
    case IR_OP_EWDIV:
      if (div_by_constant(G, i)) { /* one division a thread, not eight */
        operand(s, G, i, 0);
        base_buf_printf(s, " * (1.0f / ");
        operand(s, G, i, 1);
        base_buf_printf(s, ")");
      } else
        binop(s, G, i, " / ");
      break;
    case IR_OP_EWMUL:
    case IR_OP_SMUL: binop(s, G, i, " * "); break;
#include "../../ir/ew_cases.h"
      /* ew_<name>(): its CUDA expression (ew.def), from ew_prelude */
      base_buf_printf(s, "ew_%s(", ir_op(o->op)->name);
      operand(s, G, i, 0);
      base_buf_printf(s, ")");
      break;
    case IR_OP_CLIP:
      base_buf_printf(s, "fminf_(fmaxf_(");
      operand(s, G, i, 0);
      base_buf_printf(s, ", ");
      fbits(s, o->a.lo);
      base_buf_printf(s, "), ");
      fbits(s, o->a.hi);
      base_buf_printf(s, ")");
      break;
    case IR_OP_BATCHNORM:
      base_buf_printf(s, "(");
      operand(s, G, i, 0);
      base_buf_printf(s, " - ");
      operand(s, G, i, 3);
      base_buf_printf(s, ") / sqrtf(");
      operand(s, G, i, 4);
      base_buf_printf(s, " + ");
      fbits(s, o->a.eps);
      base_buf_printf(s, ") * ");
      operand(s, G, i, 1);
      base_buf_printf(s, " + ");
      operand(s, G, i, 2);
      break;
    case IR_OP_CONV2D:
    case IR_OP_MATMUL:
    case IR_OP_CONCAT:
    case IR_OP_SPLIT:
    case IR_OP_TRANSPOSE:
    case IR_OP_RESHAPE:
    case IR_OP_AVGPOOL:
    case IR_OP_MAXPOOL:
    case IR_OP_GLOBAL_AVGPOOL:
    case IR_OP_ENLARGE:
    case IR_OP_REDUCE_MEAN:
    case IR_OP_SOFTMAX:
    case IR_OP_LAYERNORM:
    case IR_OP_PAD:
    case IR_OP_SLICE:
    case IR_OP_CONST_ICONV:
    case IR_OP_CONST_IMM:
    case IR_OP_CONST_ONES:
    case IR_OP_CONST_POOL:
    case IR_OP_GATHER:
    case IR_OP_WHERE:
    case IR_OP_EQUAL:
    case IR_OP_NOT:
    case IR_OP_CAST:
    case IR_OP_ATTENTION:
    case IR_OP_SE:
    case IR_OP_CONCAT_SHUFFLE:
    case IR_OP_MOVE:
    case IR_OP_FUSED: /* not IR_OPF_BODY (ir_body_intern refuses them; a
                         body's IR_OPF_BODY_ROW last operator is the row
                         code's, below); a body operator left here fails the
                         kernel's compile */
      base_buf_printf(s, "0.0f\n#error \"%s: no fused-body code\"\n",
                      ir_op(o->op)->name);
      break;
    }
    base_buf_printf(s, ";\n");
  }
  if (nmap < b->nops) {
    base_buf_printf(s, "  return ");
    operand(s, G, b->nops - 1, 0);
    base_buf_printf(s, ";\n}\n");
  } else
    base_buf_printf(s, "  return t%d;\n}\n", b->nops - 1);
}

/* The offset expression of load l (coordinates c0..c{r-1}). */
static void offset(base_buf *s, const load *l, int rank, const char *I) {
  int any = 0;
  for (int j = 0; j < rank; j++)
    if (l->st[j]) {
      base_buf_printf(s, "%s(%s)c%d * %lld", any ? " + " : "", I, j,
                      (long long)l->st[j]);
      any = 1;
    }
  if (!any)
    base_buf_printf(s, "0");
}

/* Half: the element conversions (PTX cvt, round to nearest even, as
 * khalf.cu's; no header needed) and the elements' type. */
static void half_prelude(base_buf *s, int dt) {
  if (dt == CXK_F16)
    base_buf_printf(s, "__device__ __forceinline__ float ldh(unsigned short h) "
                       "{ float f; asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f) : "
                       "\"h\"(h)); return f; }\n");
  else
    base_buf_printf(s, "__device__ __forceinline__ float ldh(unsigned short h) "
                       "{ return __int_as_float(((unsigned)h) << 16); }\n");
  base_buf_printf(s,
                  "__device__ __forceinline__ unsigned short sth(float v) "
                  "{ unsigned short h; asm(\"cvt.rn.%s.f32 %%0, %%1;\" : "
                  "\"=h\"(h) : \"f\"(v)); return h; }\n",
                  dt == CXK_F16 ? "f16" : "bf16");
}

/* The half form of kernel_src: elements of 2 bytes, vec: 8 a thread. */
static void kernel_half_src(base_buf *s, gen *G, int nin, int vec,
                            const char *name) {
  const ir_shape *o = G->out;
  int64_t n = ir_shape_numel(o);
  const char *I = n * 8 < ((int64_t)1 << 31) ? "unsigned" : "long long";
  base_buf_printf(s,
                  "// generated by superopt (src/gpu/fused.c), %s\n"
                  "__device__ __forceinline__ float fminf_(float a, float b) "
                  "{ return a > b ? b : a; }\n"
                  "__device__ __forceinline__ float fmaxf_(float a, float b) "
                  "{ return a < b ? b : a; }\n",
                  G->dt == CXK_F16 ? "f16" : "bf16");
  half_prelude(s, G->dt);
  G->recip = vec && o->rank > 0;
  body_fn(s, G);
  G->recip = 0;
  base_buf_printf(s, "extern \"C\" __global__ void __launch_bounds__(%d) %s(",
                  THREADS, name);
  for (int k = 0; k < nin; k++)
    base_buf_printf(s, "const unsigned short *__restrict__ in%d, ", k);
  base_buf_printf(s, "unsigned short *__restrict__ out) {\n");
  int64_t work = vec ? n / 8 : n;
  base_buf_printf(s,
                  "  const %s i = (%s)blockIdx.x * %d + threadIdx.x;\n"
                  "  if (i >= (%s)%lld) return;\n",
                  I, I, THREADS, I, (long long)work);
  base_buf_printf(s, "  %s r = i%s;\n", I, vec ? " * 8" : "");
  for (int k = o->rank - 1; k >= 0; k--) {
    int j = G->order[k];
    base_buf_printf(s, "  const %s c%d = r %% %lld; r /= %lld;\n", I, j,
                    (long long)o->dim[j], (long long)o->dim[j]);
  }
  if (o->rank == 0)
    base_buf_printf(s, "  (void)r;\n");
  for (int l = 0; l < G->nloads; l++) {
    const load *ld = &G->loads[l];
    int last = o->rank > 0 ? (int)ld->st[G->inner] : 0;
    base_buf_printf(s, "  const %s o%d = ", I, l);
    if (o->rank > 0 &&
        !memcmp(G->ost, ld->st, sizeof(int64_t) * (size_t)o->rank))
      base_buf_printf(s, "%s", vec ? "i * 8" : "i");
    else
      offset(s, ld, o->rank, I);
    base_buf_printf(s, ";\n");
    if (vec && last == 1)
      base_buf_printf(s,
                      "  const uint4 u%d = *(const uint4 *)(in%d + o%d);\n"
                      "  const unsigned short *v%d = (const unsigned short "
                      "*)&u%d;\n",
                      l, ld->in, l, l, l);
    else
      base_buf_printf(s, "  const float v%d = ldh(in%d[o%d]);\n", l, ld->in, l);
  }
  if (!vec) {
    base_buf_printf(s, "  out[i] = sth(body(");
    for (int l = 0; l < G->nloads; l++)
      base_buf_printf(s, "%sv%d", l ? ", " : "", l);
    base_buf_printf(s, "));\n}\n");
    return;
  }
  base_buf_printf(s, "  uint4 yv;\n  unsigned short *y = (unsigned short "
                     "*)&yv;\n");
  for (int q = 0; q < 8; q++) {
    base_buf_printf(s, "  y[%d] = sth(body(", q);
    for (int l = 0; l < G->nloads; l++) {
      int last = (int)G->loads[l].st[G->inner];
      if (last == 1)
        base_buf_printf(s, "%sldh(v%d[%d])", l ? ", " : "", l, q);
      else
        base_buf_printf(s, "%sv%d", l ? ", " : "", l);
    }
    base_buf_printf(s, "));\n");
  }
  base_buf_printf(s, "  *(uint4 *)(out + (%s)i * 8) = yv;\n}\n", I);
}

/* Writes the kernel `name` into s. vec: 4 elements per thread. */
static void kernel_src(base_buf *s, gen *G, int nin, int vec,
                       const char *name) {
  if (G->dt != CXK_F32) {
    kernel_half_src(s, G, nin, vec, name);
    return;
  }
  const ir_shape *o = G->out;
  int64_t n = ir_shape_numel(o);
  const char *I = n * 4 < ((int64_t)1 << 31) ? "unsigned" : "long long";
  base_buf_printf(s,
                  "// generated by superopt (src/gpu/fused.c)\n"
                  "__device__ __forceinline__ float fminf_(float a, float b) "
                  "{ return a > b ? b : a; }\n"
                  "__device__ __forceinline__ float fmaxf_(float a, float b) "
                  "{ return a < b ? b : a; }\n");
  body_fn(s, G);
  base_buf_printf(s, "extern \"C\" __global__ void __launch_bounds__(%d) %s(",
                  THREADS, name);
  for (int k = 0; k < nin; k++)
    base_buf_printf(s, "const float *__restrict__ in%d, ", k);
  base_buf_printf(s, "float *__restrict__ out");
  base_buf_printf(s, ") {\n");
  int64_t work = vec ? n / 4 : n;
  base_buf_printf(s,
                  "  const %s i = (%s)blockIdx.x * %d + threadIdx.x;\n"
                  "  if (i >= (%s)%lld) return;\n",
                  I, I, THREADS, I, (long long)work);
  /* coordinates from the output's memory offset, innermost first; in vec
   * mode i counts 4s */
  base_buf_printf(s, "  %s r = i%s;\n", I, vec ? " * 4" : "");
  for (int k = o->rank - 1; k >= 0; k--) {
    int j = G->order[k];
    base_buf_printf(s, "  const %s c%d = r %% %lld; r /= %lld;\n", I, j,
                    (long long)o->dim[j], (long long)o->dim[j]);
  }
  if (o->rank == 0)
    base_buf_printf(s, "  (void)r;\n");
  for (int l = 0; l < G->nloads; l++) {
    const load *ld = &G->loads[l];
    int last = o->rank > 0 ? (int)ld->st[G->inner] : 0;
    base_buf_printf(s, "  const %s o%d = ", I, l);
    if (o->rank > 0 &&
        !memcmp(G->ost, ld->st, sizeof(int64_t) * (size_t)o->rank))
      base_buf_printf(s, "%s", vec ? "i * 4" : "i"); /* the output's layout */
    else
      offset(s, ld, o->rank, I);
    base_buf_printf(s, ";\n");
    if (vec && last == 1)
      base_buf_printf(s,
                      "  const float4 v%d = *(const float4 *)(in%d + o%d);\n",
                      l, ld->in, l);
    else
      base_buf_printf(s, "  const float v%d = in%d[o%d];\n", l, ld->in, l);
  }
  if (!vec) {
    base_buf_printf(s, "  out[i] = body(");
    for (int l = 0; l < G->nloads; l++)
      base_buf_printf(s, "%sv%d", l ? ", " : "", l);
    base_buf_printf(s, ");\n}\n");
    return;
  }
  static const char lane[4] = {'x', 'y', 'z', 'w'};
  base_buf_printf(s, "  float4 y;\n");
  for (int q = 0; q < 4; q++) {
    base_buf_printf(s, "  y.%c = body(", lane[q]);
    for (int l = 0; l < G->nloads; l++) {
      int last = (int)G->loads[l].st[G->inner];
      if (last == 1)
        base_buf_printf(s, "%sv%d.%c", l ? ", " : "", l, lane[q]);
      else
        base_buf_printf(s, "%sv%d", l ? ", " : "", l);
    }
    base_buf_printf(s, ");\n");
  }
  base_buf_printf(s, "  *(float4 *)(out + (%s)i * 4) = y;\n}\n", I);
}

/* Rows of at most ROW_WARP_MAX values take one warp each, the row in
 * registers (G->warps warps a block, at most ROW_WARPS); longer rows one
 * block each. */
#define ROW_WARP_MAX 1024
#define ROW_WARPS 8

/* Warps a block for rows of len taking `units` warps (a row each, or
 * 32 / lanes rows each) on a GPU of sms multiprocessors (0: unknown,
 * ROW_WARPS): the most, a power of two up to ROW_WARPS, that still makes
 * 2 * sms blocks, else 1. Eight rows a block left most of an H200's 132
 * SMs idle at BERT batch 1 (128 rows: 16 blocks). */
static int row_warps(int64_t units, int64_t len, int sms) {
  int w = ROW_WARPS;
  if (len > ROW_WARP_MAX || sms <= 0)
    return w;
  while (w > 1 && (units + w - 1) / w < 2 * (int64_t)sms)
    w /= 2;
  return w;
}

/* Threads per block of a row-reduction kernel (a multiple of 32). */
static int row_threads(int64_t len, int warps) {
  return len <= ROW_WARP_MAX ? 32 * warps : 256;
}

/* Its blocks: for rows of len taking `units` warps, or a block a row. */
static int64_t row_blocks(int64_t units, int64_t len, int warps) {
  return len <= ROW_WARP_MAX ? (units + warps - 1) / warps : units;
}

/* Whether pointer k of ptrs is 16-byte aligned (NULL ptrs: assumed). */
static int aligned16(const float *const *ptrs, int k) {
  return !ptrs || ((uintptr_t)ptrs[k] & 15) == 0;
}

/* Whether a warp-a-row kernel takes the vector form (G->rowvec): rows of
 * a multiple of vw values, every load contiguous along the row (16 bytes
 * a chunk of vw columns: its row bases multiples of vw, its pointer
 * 16-byte aligned) or constant along it (a value a row, or a scalar), and
 * the output written the same way unless it is a value a row
 * (reduce_mean). ptrs: the node's inputs, then its output (nin). */
static int row_vec_ok(const gen *G, const ir_shape *o, const int64_t *ost,
                      const float *const *ptrs, int nin) {
  const ir_shape *x = G->out;
  int R = x->rank, W = G->vw;
  int64_t len = R ? x->dim[R - 1] : 0;
  if (len == 0 || len > ROW_WARP_MAX || len % W)
    return 0;
  for (int l = 0; l < G->nloads; l++) {
    const load *ld = &G->loads[l];
    if (ld->st[R - 1] == 0)
      continue;
    if (ld->st[R - 1] != 1 || !aligned16(ptrs, ld->in))
      return 0;
    for (int d = 0; d < R - 1; d++)
      if (ld->st[d] % W)
        return 0;
  }
  if (G->b->ops[G->b->nops - 1].op == IR_OP_REDUCE_MEAN)
    return 1;
  if (o->rank != R || ost[R - 1] != 1 || !aligned16(ptrs, nin))
    return 0;
  for (int d = 0; d < R - 1; d++)
    if (ost[d] % W)
      return 0;
  return 1;
}

/* Load l of input at column j of the row (its base offset b<l>); a half
 * element converted (ldh). In the vector form a load along the row is
 * element k of the lane's chunks staged in g<l> (row_vec_loads), one
 * constant along it the element at b<l>. */
static void row_load(base_buf *s, const gen *G, int l, int rank) {
  const load *ld = &G->loads[l];
  long long st = rank > 0 ? (long long)ld->st[rank - 1] : 0;
  const char *cv = G->dt ? "ldh(" : "", *cz = G->dt ? ")" : "";
  if (G->rowvec && st == 1)
    base_buf_printf(s, "%sg%d[k]%s", cv, l, cz);
  else if (G->rowvec)
    base_buf_printf(s, "%sin%d[b%d]%s", cv, ld->in, l, cz);
  else
    base_buf_printf(s, "%sin%d[b%d + j * %lld]%s", cv, ld->in, l, st, cz);
}

/* The layer norm's scale and shift of column j: y = y * in[...] + .... */
static void row_affine(base_buf *s, const gen *G, int R) {
  const ir_body_op *row = &G->b->ops[G->b->nops - 1];
  for (int k = 1; k < row->nin; k++) {
    base_buf_printf(s, "    y = y %s ", k == 1 ? "*" : "+");
    row_load(s, G, G->ref[G->b->nops - 1][k], R);
    base_buf_printf(s, ";\n");
  }
}

/* How a row kernel walks its row: head opens a loop over this thread's
 * values k (column j in the scalar forms; a brace the pass closes), v is
 * the value there, sum and max reduce a float over the row's threads
 * (printf formats of one %s), lead is true in the thread that writes a
 * per-row result, store writes the output there (a format of one %s, the
 * value) and post follows the output's pass (the vector form's stores). */
typedef struct row_form {
  const char *head, *v, *sum, *max, *lead, *store, *post;
} row_form;

/* Softmax (a body ending in one): max, sum of exponentials (ex, in the
 * sum's pass), output (the exponential as ex2 there). */
static void row_softmax_src(base_buf *s, const row_form *f, const char *ex,
                            const char *ex2, int half) {
  base_buf_printf(s,
                  "  float mx = __int_as_float(0xff800000);\n"
                  "  %s mx = fmaxf_(mx, %s); }\n  mx = ",
                  f->head, f->v);
  base_buf_printf(s, f->max, "mx");
  base_buf_printf(
      s, ";\n  float sum = 0.0f;\n  %s sum += %s; }\n  sum = ", f->head, ex);
  base_buf_printf(s, f->sum, "sum");
  char y[96];
  snprintf(y, sizeof y, "%s%s / sum%s", half ? "sth(" : "", ex2,
           half ? ")" : "");
  base_buf_printf(s, ";\n  %s ", f->head);
  base_buf_printf(s, f->store, y);
  base_buf_printf(s, " }\n%s}\n", f->post);
}

/* Reduce_mean or layer norm: the mean, then (layer norm) the variance and
 * the output with its scale and shift. */
static void row_norm_src(base_buf *s, const gen *G, const row_form *f,
                         int64_t len) {
  const ir_body_op *row = &G->b->ops[G->b->nops - 1];
  base_buf_printf(s,
                  "  float sum = 0.0f;\n  %s sum += %s; }\n"
                  "  const float mean = ",
                  f->head, f->v);
  base_buf_printf(s, f->sum, "sum");
  base_buf_printf(s, " / %lld.0f;\n", (long long)len);
  if (row->op == IR_OP_REDUCE_MEAN) {
    base_buf_printf(s, "  if (%s) out[ob] = %s;\n}\n", f->lead,
                    G->dt ? "sth(mean)" : "mean");
    return;
  }
  base_buf_printf(s,
                  "  float q = 0.0f;\n"
                  "  %s const float d = %s - mean; q += d * d; }\n"
                  "  const float inv = 1.0f / sqrtf(",
                  f->head, f->v);
  base_buf_printf(s, f->sum, "q");
  base_buf_printf(s, " / %lld.0f + ", (long long)len);
  fbits(s, row->a.eps);
  base_buf_printf(s, ");\n  %s\n    float y = (%s - mean) * inv;\n", f->head,
                  f->v);
  row_affine(s, G, G->out->rank);
  base_buf_printf(s, "    ");
  base_buf_printf(s, f->store, G->dt ? "sth(y)" : "y");
  base_buf_printf(s, "\n  }\n%s}\n", f->post);
}

/* The vector form's loads, a lane's chunks c = lane, lane + 32, ... (nc
 * of them a lane, ch a row) of W = vw columns W*c..W*c+W-1: the layer
 * norm's scale and shift 16 bytes a chunk staged in g<l>[] (first, so that
 * they are in flight during the reductions), the body's loads constant
 * along the row once (s<l>), those along it 16 bytes a chunk, unpacked
 * into body()'s arguments: v[W*i + q] is column W*c + q of chunk i. */
static void row_vec_loads(base_buf *s, const gen *G, const char *I, int nc,
                          long long ch) {
  const ir_body *b = G->b;
  int R = G->out->rank, W = G->vw, last = b->nops - 1;
  const char *vt = G->dt ? "uint4" : "float4";
  const char *et = G->dt ? "unsigned short" : "float";
  const char *cv = G->dt ? "ldh(" : "", *cz = G->dt ? ")" : "";
  char use[IR_BODY_MAX_OPS * IR_MAX_FIXED_IN] = {0}, aff[sizeof use] = {0};
  for (int i = 0; i < b->nops; i++)
    for (int k = 0; k < b->ops[i].nin; k++)
      if (G->ref[i][k] >= 0) { /* the row op's x is the body's result */
        if (i == last && k > 0)
          aff[G->ref[i][k]] = 1;
        else
          use[G->ref[i][k]] = 1;
      }
  for (int l = 0; l < G->nloads; l++)
    if (aff[l] && G->loads[l].st[R - 1] == 1)
      base_buf_printf(s,
                      "  %s gv%d[%d];\n#pragma unroll\n"
                      "  for (int k = 0; k < %d; k++) if (lane + 32u * k < "
                      "%lldu) gv%d[k] = *(const %s *)(in%d + b%d + (lane + "
                      "32u * k) * %d);\n"
                      "  const %s *g%d = (const %s *)gv%d;\n",
                      vt, l, nc, nc, ch, l, vt, G->loads[l].in, l, W, et, l, et,
                      l);
  for (int l = 0; l < G->nloads; l++)
    if (use[l] && G->loads[l].st[R - 1] == 0)
      base_buf_printf(s, "  const float s%d = %sin%d[b%d]%s;\n", l, cv,
                      G->loads[l].in, l, cz);
  base_buf_printf(s,
                  "  float v[%d];\n#pragma unroll\n"
                  "  for (int k = 0; k < %d; k++) if (lane + 32u * k < "
                  "%lldu) {\n"
                  "    const %s c = (lane + 32u * k) * %d;\n    (void)c;\n",
                  nc * W, nc, ch, I, W);
  for (int l = 0; l < G->nloads; l++)
    if (use[l] && G->loads[l].st[R - 1] == 1)
      base_buf_printf(s,
                      "    const %s u%d = *(const %s *)(in%d + b%d + c);\n"
                      "    const %s *h%d = (const %s *)&u%d;\n",
                      vt, l, vt, G->loads[l].in, l, et, l, et, l);
  base_buf_printf(s,
                  "#pragma unroll\n    for (int q = 0; q < %d; q++) "
                  "v[k * %d + q] = body(",
                  W, W);
  for (int l = 0; l < G->nloads; l++) {
    base_buf_printf(s, "%s", l ? ", " : "");
    if (!use[l])
      base_buf_printf(s, "0.0f");
    else if (G->loads[l].st[R - 1] == 0)
      base_buf_printf(s, "s%d", l);
    else
      base_buf_printf(s, "%sh%d[q]%s", cv, l, cz);
  }
  base_buf_printf(s, ");\n  }\n");
  if (b->ops[last].op != IR_OP_REDUCE_MEAN)
    base_buf_printf(s, "  %s yv[%d];\n  %s *yo = (%s *)yv;\n", vt, nc, et, et);
}

/* A warp a row. Scalar form: lane l holds columns l, l + 32, ... in v[],
 * evaluated once. Vector form (G->rowvec, row_vec_loads): chunks of vw
 * columns, v[k] in chunk k / vw, 16-byte loads, the output staged in
 * yv[] and stored 16 bytes a chunk; with G->lanes < 32 (short rows)
 * 32 / lanes rows a warp, lane counting within the row's lanes and live
 * false in a row past the last. The softmax keeps the exponentials in
 * v[]. */
static void row_warp_src(base_buf *s, const gen *G, const char *I, int64_t len,
                         long long os) {
  const ir_body_op *row = &G->b->ops[G->b->nops - 1];
  int W = G->rowvec ? G->vw : 1;
  long long ch = (long long)(len / W); /* chunks (columns: W = 1) a row */
  int nc = (int)((ch + 31) / 32);
  char head[224], store[64], post[256] = "";
  if (G->rowvec) {
    snprintf(head, sizeof head,
             "#pragma unroll\n  for (int k = 0; k < %d; k++) if (lane + 32u * "
             "(k / %d) < %lldu) {",
             nc * W, W, ch);
    snprintf(store, sizeof store, "yo[k] = %%s;");
    snprintf(post, sizeof post,
             "#pragma unroll\n  for (int k = 0; k < %d; k++) if (%slane + 32u "
             "* k < %lldu) *(%s *)(out + ob + (lane + 32u * k) * %d) = "
             "yv[k];\n",
             nc, G->lanes < 32 ? "live && " : "", ch,
             G->dt ? "uint4" : "float4", W);
    row_vec_loads(s, G, I, nc, ch);
  } else {
    snprintf(head, sizeof head,
             "#pragma unroll\n  for (int k = 0; k < %d; k++) if (lane + 32u * "
             "k < %lldu) { const %s j = lane + 32u * k; (void)j;",
             nc, (long long)len, I);
    snprintf(store, sizeof store, "out[ob + j * %lld] = %%s;", os);
    base_buf_printf(s, "  float v[%d];\n  %s v[k] = val(j); }\n", nc, head);
  }
  const char *lead = G->lanes < 32 ? "live && lane == 0" : "lane == 0";
  row_form f = {head, "v[k]", "wsum(%s)", "wmax(%s)", lead, store, post};
  if (row->op == IR_OP_SOFTMAX)
    row_softmax_src(s, &f, "(v[k] = expf(v[k] - mx))", "v[k]", G->dt);
  else
    row_norm_src(s, G, &f, len);
}

/* A block of T threads a row, passes over the row through val(). */
static void row_block_src(base_buf *s, const gen *G, const char *I, int64_t len,
                          long long os, int T) {
  const ir_body_op *row = &G->b->ops[G->b->nops - 1];
  char head[160], store[64];
  snprintf(head, sizeof head,
           "for (%s j = threadIdx.x; j < (%s)%lld; j += %d) {", I, I,
           (long long)len, T);
  snprintf(store, sizeof store, "out[ob + j * %lld] = %%s;", os);
  row_form f = {
      head,  "val(j)", "bsum(%s, sh)", "bmax(%s, sh)", "threadIdx.x == 0",
      store, ""};
  if (row->op == IR_OP_SOFTMAX) /* the exponentials computed again */
    row_softmax_src(s, &f, "expf(val(j) - mx)", "expf(val(j) - mx)", G->dt);
  else
    row_norm_src(s, G, &f, len);
}

/* A body ending with a row reduction over the last axis of its input x
 * (G->out is x's shape, loads planned over it). Rows up to ROW_WARP_MAX
 * long: one warp a row, the element-wise prefix (body()) evaluated once
 * per value into registers, warp-shuffle reductions (row_warp_src); longer
 * rows: one block of T threads a row, the prefix recomputed in each pass
 * (two or three), block reductions (row_block_src). The result is written
 * through the output's memory strides ost. G->warps rows a block (a warp
 * each), G->rowvec the warp form's 16-byte chunks. */
static void row_kernel_src(base_buf *s, const gen *G, int nin,
                           const ir_shape *o, const int64_t *ost,
                           const char *name) {
  const ir_shape *x = G->out;
  int R = x->rank;
  int64_t len = R ? x->dim[R - 1] : 1, n = ir_shape_numel(x);
  int T = row_threads(len, G->warps), warp = len <= ROW_WARP_MAX;
  int L = warp ? G->lanes : 32; /* lanes a row, the reductions' width */
  long long rows = (long long)(n / (len ? len : 1));
  const char *I = n < ((int64_t)1 << 31) ? "unsigned" : "long long";
  base_buf_printf(
      s,
      "// generated by superopt (src/gpu/fused.c): row reduction%s\n"
      "__device__ __forceinline__ float fminf_(float a, float b) "
      "{ return a > b ? b : a; }\n"
      "__device__ __forceinline__ float fmaxf_(float a, float b) "
      "{ return a < b ? b : a; }\n"
      "__device__ __forceinline__ float wsum(float v) {\n"
      "  for (int o = %d; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, "
      "v, o);\n"
      "  return v;\n}\n"
      "__device__ __forceinline__ float wmax(float v) {\n"
      "  for (int o = %d; o > 0; o >>= 1) v = fmaxf_(v, "
      "__shfl_xor_sync(0xffffffffu, v, o));\n"
      "  return v;\n}\n"
      "__device__ __forceinline__ float bsum(float v, float *sh) {\n"
      "  v = wsum(v);\n"
      "  if (%d > 32) {\n"
      "    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;\n"
      "    __syncthreads();\n"
      "    v = wsum((threadIdx.x & 31) < %d ? sh[threadIdx.x & 31] : 0.0f);\n"
      "    __syncthreads();\n"
      "  }\n"
      "  return v;\n}\n"
      "__device__ __forceinline__ float bmax(float v, float *sh) {\n"
      "  v = wmax(v);\n"
      "  if (%d > 32) {\n"
      "    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;\n"
      "    __syncthreads();\n"
      "    v = wmax((threadIdx.x & 31) < %d ? sh[threadIdx.x & 31] : "
      "__int_as_float(0xff800000));\n"
      "    __syncthreads();\n"
      "  }\n"
      "  return v;\n}\n",
      G->rowvec ? ", 16-byte chunks" : "", L / 2, L / 2, T, T / 32, T, T / 32);
  if (G->dt)
    half_prelude(s, G->dt);
  body_fn(s, G);
  base_buf_printf(s, "extern \"C\" __global__ void __launch_bounds__(%d) %s(",
                  T, name);
  const char *et = G->dt ? "unsigned short" : "float";
  for (int k = 0; k < nin; k++)
    base_buf_printf(s, "const %s *__restrict__ in%d, ", et, k);
  base_buf_printf(s,
                  "%s *__restrict__ out) {\n"
                  "  __shared__ float sh[32];\n  (void)sh;\n",
                  et);
  if (warp && L == 32) /* a warp a row; a warp past the last row leaves
                          whole */
    base_buf_printf(s,
                    "  %s r = (%s)blockIdx.x * %d + (threadIdx.x >> 5);\n"
                    "  if (r >= (%s)%lld) return;\n"
                    "  const unsigned lane = threadIdx.x & 31;\n",
                    I, I, G->warps, I, rows);
  else if (warp) /* L lanes a row: a row past the last, in a warp that
                    has rows, reads the last row and stores nothing (the
                    shuffles take the whole warp) */
    base_buf_printf(s,
                    "  const %s r0 = ((%s)blockIdx.x * %d + (threadIdx.x >> "
                    "5)) * %d;\n"
                    "  if (r0 >= (%s)%lld) return;\n"
                    "  %s r = r0 + ((threadIdx.x & 31) / %d);\n"
                    "  const bool live = r < (%s)%lld;\n"
                    "  if (!live) r = (%s)%lld;\n"
                    "  const unsigned lane = threadIdx.x & %d;\n",
                    I, I, G->warps, 32 / L, I, rows, I, L, I, rows, I, rows - 1,
                    L - 1);
  else
    base_buf_printf(s, "  %s r = (%s)blockIdx.x;\n", I, I);
  for (int d = R - 2; d >= 0; d--)
    base_buf_printf(s, "  const %s c%d = r %% %lld; r /= %lld;\n", I, d,
                    (long long)x->dim[d], (long long)x->dim[d]);
  base_buf_printf(s, "  (void)r;\n");
  for (int l = 0; l < G->nloads; l++) {
    base_buf_printf(s, "  const %s b%d = 0", I, l);
    for (int d = 0; d < R - 1; d++)
      if (G->loads[l].st[d])
        base_buf_printf(s, " + c%d * (%s)%lld", d, I,
                        (long long)G->loads[l].st[d]);
    base_buf_printf(s, ";\n");
  }
  /* the output's row base: its first R-1 dims are x's (reduce_mean with
   * keepdims=0 drops the last) */
  base_buf_printf(s, "  const %s ob = 0", I);
  for (int d = 0; d < R - 1 && d < o->rank; d++)
    if (ost[d])
      base_buf_printf(s, " + c%d * (%s)%lld", d, I, (long long)ost[d]);
  base_buf_printf(s, ";\n");
  long long os = R > 0 && o->rank == R ? (long long)ost[R - 1] : 0;
  if (!G->rowvec) { /* the vector form reads 16 bytes a chunk instead */
    base_buf_printf(s, "  auto val = [&](%s j) -> float { return body(", I);
    for (int l = 0; l < G->nloads; l++) {
      base_buf_printf(s, "%s", l ? ", " : "");
      row_load(s, G, l, R);
    }
    base_buf_printf(s, "); };\n");
  }
  if (warp)
    row_warp_src(s, G, I, len, os);
  else
    row_block_src(s, G, I, len, os, T);
}

/* ---- compiling and caching ------------------------------------------------
 */

base_status gpu_fused_compile(const char *src, const char *name,
                              const char *arch, char **cubin, size_t *len,
                              base_diag *d) {
  char srcname[64];
  snprintf(srcname, sizeof srcname, "%s.cu", name);
  *cubin = NULL;
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, srcname, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS)
    return rtc_fail(d, r, "nvrtcCreateProgram", srcname, NULL);
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  const char *opts[] = {archopt, "--std=c++17"};
  base_status st = BASE_OK;
  r = nvrtcCompileProgram(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t ln = 0;
    char *log = NULL;
    if (nvrtcGetProgramLogSize(prog, &ln) == NVRTC_SUCCESS &&
        (log = base_calloc(ln + 1, 1)))
      nvrtcGetProgramLog(prog, log);
    st = rtc_fail(d, r, "nvrtcCompileProgram", srcname, log);
    free(log);
  } else if ((r = nvrtcGetCUBINSize(prog, len)) != NVRTC_SUCCESS) {
    st = rtc_fail(d, r, "nvrtcGetCUBINSize", srcname, NULL);
  } else if (!(*cubin = base_malloc(*len ? *len : 1))) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  } else if ((r = nvrtcGetCUBIN(prog, *cubin)) != NVRTC_SUCCESS) {
    free(*cubin);
    *cubin = NULL;
    st = rtc_fail(d, r, "nvrtcGetCUBIN", srcname, NULL);
  }
  nvrtcDestroyProgram(&prog);
  return st;
}

/* The kernel for source src (function `name`), from the context, the disk
 * cache or NVRTC; *idx gets its index in c->fks. */
static base_status get_kernel(gpu_ctx *c, const char *src, const char *name,
                              uint64_t key, int *idx, base_diag *d) {
  for (int i = 0; i < c->nfks; i++)
    if (c->fks[i].key == key) {
      *idx = i;
      c->fk_reused++;
      return BASE_OK;
    }
  base_status st0 = drv_init(d);
  if (st0)
    return st0;
  if (c->nfks == c->capfks) {
    int cap = c->capfks ? 2 * c->capfks : 16;
    gpu_fk *f = base_realloc(c->fks, sizeof *f * (size_t)cap);
    if (!f)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    c->fks = f;
    c->capfks = cap;
  }
  char srcname[64], dir[1024], path[1200];
  snprintf(srcname, sizeof srcname, "%s.cu", name);
  int off;
  gpu_cache_dir(dir, sizeof dir, &off);
  snprintf(path, sizeof path, "%s/%016llx.cubin", dir, (unsigned long long)key);
  size_t len = 0;
  char *cubin = NULL;
  base_diag ignore;
  if (!off && (cubin = base_read_file(path, &len, &ignore)))
    c->fk_disk++;
  else {
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", c->prop.major, c->prop.minor);
    base_status st = gpu_fused_compile(src, name, arch, &cubin, &len, d);
    if (st)
      return st;
    c->fk_compiled++;
    if (!off) { /* a cache that cannot be written is no error */
      gpu_mkdirs(dir);
      base_write_atomic(path, cubin, len, &ignore);
    }
  }
  gpu_fk *f = &c->fks[c->nfks];
  CUresult r = drv.load(&f->mod, cubin);
  free(cubin);
  if (r != CUDA_SUCCESS)
    return drv_fail(d, r, "cuModuleLoadData", srcname);
  if ((r = drv.get_fn(&f->fn, f->mod, name)) != CUDA_SUCCESS) {
    drv.unload(f->mod);
    return drv_fail(d, r, "cuModuleGetFunction", srcname);
  }
  f->key = key;
  *idx = c->nfks++;
  return BASE_OK;
}

void gpu_fused_ctx_free(gpu_ctx *c) {
  for (int i = 0; i < c->nfks; i++)
    if (drv.unload)
      drv.unload(c->fks[i].mod);
  free(c->fks);
  c->fks = NULL;
  c->nfks = c->capfks = 0;
}

void gpu_kernel_stats(const gpu_ctx *c, int *compiled, int *from_disk,
                      int *reused) {
  *compiled = c->fk_compiled;
  *from_disk = c->fk_disk;
  *reused = c->fk_reused;
}

/* ---- plan and run ---------------------------------------------------------
 */

/* A fused node's kernel: its source (src, malloc'd), function name and
 * cache key, whether it takes a vector form (vec) and its launch (blocks
 * of threads). sms: the GPU's multiprocessors, which set a row kernel's
 * rows a block (row_warps; 0: ROW_WARPS), written into the source so that
 * the key tells them apart. */
typedef struct fused_kernel {
  char *src;
  char name[40];
  uint64_t key;
  int vec;
  int64_t blocks;
  int threads;
} fused_kernel;

static base_status fused_source(const ir_graph *g, const ir_node *n,
                                const float *const *ptrs,
                                const int64_t (*phys)[IR_MAX_RANK],
                                const char *arch, int sms, fused_kernel *K,
                                base_diag *d) {
  const ir_body *b = ir_body_get(n->a.body);
  K->src = NULL;
  if (n->op != IR_OP_FUSED || !b || b->nin != n->nin)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "fused node has no body");
  ir_shape ins[IR_MAX_IN], shapes[IR_BODY_MAX_OPS];
  const ir_shape *inp[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++) {
    ins[k] = g->tensors[n->in[k]].shape;
    inp[k] = &ins[k];
  }
  base_status st = ir_body_shapes(b, inp, shapes, d);
  if (st)
    return st;
  gen *G = base_calloc(1, sizeof *G);
  if (!G)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  const ir_shape *o = &g->tensors[n->out[0]].shape;
  G->b = b;
  G->out = o;
  G->phys = phys;
  G->dt = gpu_dt_of(g, n->out[0]);
  G->vw = G->dt != CXK_F32 ? 8 : 4;
  const ir_body_op *row = ir_body_row(b);
  int64_t rost[IR_MAX_RANK] = {0};
  if (row) { /* loads over the reduction's input x */
    G->out = row->in[0] < 0 ? &ins[-1 - row->in[0]] : &shapes[row->in[0]];
    bcast(o, phys ? phys[b->nin] : NULL, o, rost);
  } else
    out_order(G);
  if (plan_loads(G, ins, shapes)) {
    free(G);
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "fused: CUDA code generation needs batch-norm "
                         "parameters that are inputs of the fused node");
  }
  int v;
  if (row) {
    const ir_shape *x = G->out;
    int64_t len = x->rank ? x->dim[x->rank - 1] : 1;
    int64_t rows = ir_shape_numel(x) / (len ? len : 1);
    v = G->rowvec = row_vec_ok(G, o, rost, ptrs, n->nin);
    for (G->lanes = v ? 1 : 32; G->lanes * G->vw < len && G->lanes < 32;)
      G->lanes *= 2; /* a row's chunks, a power of two */
    int64_t units = (rows + 32 / G->lanes - 1) / (32 / G->lanes); /* warps */
    G->warps = row_warps(units, len, sms);
    K->blocks = row_blocks(units, len, G->warps);
    K->threads = row_threads(len, G->warps);
  } else {
    v = o->rank > 0 && o->dim[G->inner] % G->vw == 0 &&
        (G->ost[G->inner] == 1 || o->dim[G->inner] == 1);
    for (int l = 0; v && l < G->nloads; l++) {
      int64_t last = G->loads[l].st[G->inner];
      v = last == 0 || (last == 1 && aligned16(ptrs, G->loads[l].in));
    }
    v = v && aligned16(ptrs, n->nin);
    int64_t work = ir_shape_numel(o) / (v ? G->vw : 1);
    K->blocks = (work + THREADS - 1) / THREADS;
    K->threads = THREADS;
  }
  K->vec = v;
  /* the key hashes the source written with a placeholder name */
  base_buf tmp = {0}, real = {0};
  if (row)
    row_kernel_src(&tmp, G, n->nin, o, rost, "FUSED_KERNEL");
  else
    kernel_src(&tmp, G, n->nin, v, "FUSED_KERNEL");
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  char salt[64];
  snprintf(salt, sizeof salt, "%s nvrtc %d.%d", arch, major, minor);
  XXH3_state_t *hs = tmp.oom ? NULL : XXH3_createState();
  if (hs) {
    XXH3_64bits_reset(hs);
    XXH3_64bits_update(hs, tmp.s, strlen(tmp.s));
    XXH3_64bits_update(hs, salt, strlen(salt));
    K->key = XXH3_64bits_digest(hs);
    XXH3_freeState(hs);
    snprintf(K->name, sizeof K->name, "fused_%016llx",
             (unsigned long long)K->key);
    if (row)
      row_kernel_src(&real, G, n->nin, o, rost, K->name);
    else
      kernel_src(&real, G, n->nin, v, K->name);
  }
  free(tmp.s);
  free(G);
  if (!hs || real.oom) {
    free(real.s);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  K->src = real.s;
  return BASE_OK;
}

base_status gpu_fused_source(const ir_graph *g, const ir_node *n,
                             const float *const *ptrs,
                             const int64_t (*phys)[IR_MAX_RANK],
                             const char *arch, int sms, char **src,
                             char name[40], uint64_t *key, int *vec,
                             base_diag *d) {
  fused_kernel K = {0};
  base_status st = fused_source(g, n, ptrs, phys, arch, sms, &K, d);
  *src = K.src;
  memcpy(name, K.name, sizeof K.name);
  *key = K.key;
  *vec = K.vec;
  return st;
}

base_status gpu_fused_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                              base_diag *d) {
  const float *ptrs[IR_MAX_IN + 1];
  for (int k = 0; k < n->nin; k++)
    ptrs[k] = p->ptr[n->in[k]];
  ptrs[n->nin] = p->ptr[n->out[0]];
  int64_t phys[IR_MAX_IN + 1][IR_MAX_RANK]; /* layouts (plan/layout.c) */
  for (int k = 0; k < n->nin; k++)
    gpu_strides(p, n->in[k], phys[k]);
  gpu_strides(p, n->out[0], phys[n->nin]);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", p->ctx->prop.major,
           p->ctx->prop.minor);
  fused_kernel K = {0};
  int idx = -1;
  base_status st =
      fused_source(p->g, n, ptrs, (const int64_t(*)[IR_MAX_RANK])phys, arch,
                   p->ctx->prop.multiProcessorCount, &K, d);
  if (!st)
    st = get_kernel(p->ctx, K.src, K.name, K.key, &idx, d);
  free(K.src);
  if (st)
    return st;
  s->fused = idx + 1;
  s->fused_blocks = K.blocks;
  s->fused_threads = K.threads;
  return BASE_OK;
}

base_status gpu_fused_enqueue(gpu_plan *p, const ir_node *n, const gpu_step *s,
                              base_diag *d) {
  if (s->fused < 1)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "fused node not planned");
  const gpu_fk *f = &p->ctx->fks[s->fused - 1];
  void *ptrs[IR_MAX_IN + 1], *args[IR_MAX_IN + 1];
  int na = 0;
  for (int k = 0; k < n->nin; k++)
    ptrs[na++] = p->ptr[n->in[k]];
  ptrs[na++] = p->ptr[n->out[0]];
  for (int k = 0; k < na; k++)
    args[k] = &ptrs[k];
  if (s->fused_blocks < 1) /* an empty tensor: nothing to compute */
    return BASE_OK;
  CUresult r = drv.launch(f->fn, (unsigned)s->fused_blocks, 1, 1,
                          (unsigned)s->fused_threads, 1, 1, 0,
                          (CUstream)p->ctx->stream, args, NULL);
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "fused_%016llx.cu", (unsigned long long)f->key);
    return drv_fail(d, r, "cuLaunchKernel", what);
  }
  return BASE_OK;
}
