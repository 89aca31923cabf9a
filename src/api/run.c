/* run.c: api_runner: a graph prepared for repeated runs with caller
 * buffers, on the CPU reference executor or (CUDA builds) the CUDA
 * executor. Weights are filled once (their values, else seeded random; on
 * CUDA uploaded once, with the weight preprocessing); each CPU run borrows
 * the caller's input buffers and copies the outputs out; each CUDA run
 * copies the inputs in from host or device memory and the outputs out.
 * Typed runs (api_runner_run_typed) convert int64, int32 and bool buffers
 * to and from the executors' float32 slots around the same run; weights
 * set on a CPU runner replace its filled values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "api_int.h"
#ifdef SUPEROPT_HAVE_CUDA
#include "../gpu/gpu.h"
#endif

struct api_runner {
  ir_graph *g;        /* own copy */
  ex_values *weights; /* weights filled; inputs NULL */
  int cuda, threads;
  int *inputs; /* tensor index of input i */
  int ninputs;
#ifdef SUPEROPT_HAVE_CUDA
  gpu_ctx *ctx;
  gpu_plan *plan;
#endif
};

void api_run_options_default(api_run_options *o) {
  if (!o)
    return;
  memset(o, 0, sizeof *o);
  o->device = "cpu";
  o->seed = 1;
}

void api_runner_free(api_runner *r) {
  if (!r)
    return;
#ifdef SUPEROPT_HAVE_CUDA
  if (r->plan)
    gpu_plan_free(r->plan);
  if (r->ctx)
    gpu_ctx_free(r->ctx);
#endif
  if (r->weights)
    ex_values_free(r->weights);
  ir_graph_free(r->g);
  free(r->inputs);
  free(r);
}

/* Fills every weight and, until drop_inputs, every input (CUDA uploads
 * them all once; the inputs then come from the caller at each run). */
static api_code fill_weights(api_runner *r, uint64_t seed, api_error *err) {
  base_diag d;
  if (!(r->weights = ex_values_new(r->g)) ||
      !(r->inputs = base_malloc(sizeof(int) * ((size_t)r->g->ntensors + 1))))
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  if (ex_fill_random(r->g, r->weights, seed, &d))
    return api_fail_diag(err, &d);
  for (int t = 0; t < r->g->ntensors; t++)
    if (r->g->tensors[t].kind == IR_T_INPUT)
      r->inputs[r->ninputs++] = t;
  return API_OK;
}

static void drop_inputs(api_runner *r) {
  for (int i = 0; i < r->ninputs; i++) {
    free(r->weights->v[r->inputs[i]]);
    r->weights->v[r->inputs[i]] = NULL;
  }
}

static api_code cuda_prepare(api_runner *r, const api_run_options *o,
                             api_error *err) {
#ifdef SUPEROPT_HAVE_CUDA
  gpu_options go = {0};
  base_diag d;
  go.fp32_strict = o->fp32_strict;
  go.streams = o->streams;
  if (gpu_device_count() <= 0)
    return api_fail(err, API_ERR_UNSUPPORTED,
                    "device cuda: no usable CUDA GPU on this machine");
  if (gpu_ctx_new(&go, &r->ctx, &d) ||
      gpu_plan_new(r->ctx, r->g, &r->plan, &d) ||
      gpu_plan_upload(r->plan, r->weights, &d))
    return api_fail_diag(err, &d);
  return API_OK;
#else
  (void)r;
  (void)o;
  return api_fail(err, API_ERR_UNSUPPORTED,
                  "device cuda: this libsuperopt was built without CUDA");
#endif
}

api_code api_runner_new(const api_graph *g, const api_run_options *o,
                        api_runner **out, api_error *err) {
  api_run_options def;
  if (!g || !out)
    return api_fail(err, API_ERR_USAGE, "api_runner_new: NULL argument");
  if (!o) {
    api_run_options_default(&def);
    o = &def;
  }
  const char *dev = o->device ? o->device : "cpu";
  if (strcmp(dev, "cpu") && strcmp(dev, "cuda"))
    return api_fail(err, API_ERR_USAGE, "unknown run device '%s' (cpu or cuda)",
                    dev);
  if (o->streams < 0 || o->streams > 8)
    return api_fail(err, API_ERR_USAGE, "streams must be 0..8, not %d",
                    o->streams);
  if (o->threads < 0 || o->threads > 1024) /* the CLI's --threads */
    return api_fail(err, API_ERR_USAGE, "threads must be 0..1024, not %d",
                    o->threads);
  if (o->fp32_strict != 0 && o->fp32_strict != 1)
    return api_fail(err, API_ERR_USAGE, "fp32_strict must be 0 or 1, not %d",
                    o->fp32_strict);
  api_runner *r = base_calloc(1, sizeof *r);
  /* the canonical node order (the tensors g's): the GPU's streams follow
   * the order, so one program's files run alike (`run` tries more) */
  if (!r || !(r->g = ir_graph_canonical(g->g)) ||
      ir_graph_own_data(r->g, NULL)) {
    if (r)
      ir_graph_free(r->g);
    free(r);
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  }
  r->cuda = !strcmp(dev, "cuda");
  r->threads = o->threads;
  api_code rc = fill_weights(r, o->seed, err);
  if (!rc && r->cuda)
    rc = cuda_prepare(r, o, err);
  if (r->weights)
    drop_inputs(r);
  if (rc) {
    api_runner_free(r);
    return rc;
  }
  *out = r;
  return api_ok(err);
}

static api_code copy_outputs(const api_runner *r, const ex_values *v,
                             float *const *outputs, api_error *err) {
  for (int i = 0; i < r->g->noutputs; i++) {
    int t = r->g->outputs[i];
    if (!v->v[t])
      return api_fail(err, API_ERR_INTERNAL, "output %s was not computed",
                      r->g->tensors[t].name);
    memcpy(outputs[i], v->v[t],
           sizeof(float) * (size_t)ir_shape_numel(&r->g->tensors[t].shape));
  }
  return API_OK;
}

/* One CUDA run: inputs copied in, outputs copied out (from/to device
 * memory when on_device). */
static api_code cuda_run(api_runner *r, const void *const *inputs,
                         void *const *outputs, int on_device, api_error *err) {
#ifdef SUPEROPT_HAVE_CUDA
  base_diag d;
  for (int i = 0; i < r->ninputs; i++)
    if (gpu_plan_write(r->plan, r->inputs[i], inputs[i], on_device, &d))
      return api_fail_diag(err, &d);
  if (gpu_plan_run(r->plan, &d))
    return api_fail_diag(err, &d);
  for (int i = 0; i < r->g->noutputs; i++)
    if (gpu_plan_read(r->plan, r->g->outputs[i], outputs[i], on_device, &d))
      return api_fail_diag(err, &d);
  return api_ok(err);
#else
  (void)r;
  (void)inputs;
  (void)outputs;
  (void)on_device;
  return api_fail(err, API_ERR_INTERNAL, "no CUDA executor in this build");
#endif
}

/* API_ERR_USAGE naming the first NULL among r, the arrays and their
 * buffers; API_OK when none is. */
static api_code check_buffers(const char *fn, const api_runner *r,
                              const void *const *inputs,
                              const void *const *outputs, api_error *err) {
  if (!r)
    return api_fail(err, API_ERR_USAGE, "%s: NULL runner", fn);
  if (!inputs && r->ninputs)
    return api_fail(err, API_ERR_USAGE, "%s: NULL inputs", fn);
  if (!outputs && r->g->noutputs)
    return api_fail(err, API_ERR_USAGE, "%s: NULL outputs", fn);
  for (int i = 0; i < r->ninputs; i++)
    if (!inputs[i])
      return api_fail(err, API_ERR_USAGE, "%s: input %d (%s) is NULL", fn, i,
                      r->g->tensors[r->inputs[i]].name);
  for (int i = 0; i < r->g->noutputs; i++)
    if (!outputs[i])
      return api_fail(err, API_ERR_USAGE, "%s: output %d (%s) is NULL", fn, i,
                      r->g->tensors[r->g->outputs[i]].name);
  return API_OK;
}

api_code api_runner_run_device(api_runner *r, const void *const *inputs,
                               void *const *outputs, api_error *err) {
  api_code rc = check_buffers("api_runner_run_device", r, inputs,
                              (const void *const *)outputs, err);
  if (rc)
    return rc;
  if (!r->cuda)
    return api_fail(err, API_ERR_USAGE,
                    "api_runner_run_device: the runner is not on cuda");
  return cuda_run(r, inputs, outputs, 1, err);
}

/* A half input t's borrowed values replaced by a copy rounded to its type
 * (freed with v). */
static api_code half_input(const ir_graph *g, int t, ex_values *v,
                           api_error *err) {
  if (!ir_dtype_is_half((ir_dtype)g->tensors[t].dtype))
    return API_OK;
  int64_t n = ir_shape_numel(&g->tensors[t].shape);
  float *c = base_malloc(sizeof(float) * (size_t)(n ? n : 1));
  if (!c) {
    v->v[t] = NULL;
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  }
  memcpy(c, v->v[t], sizeof(float) * (size_t)n);
  ir_dtype_round_n(c, n, (ir_dtype)g->tensors[t].dtype);
  v->v[t] = c;
  return API_OK;
}

/* One run on host buffers of float32 slots (checked), on the runner's
 * device. */
static api_code host_run(api_runner *r, const float *const *inputs,
                         float *const *outputs, api_error *err) {
  if (r->cuda)
    return cuda_run(r, (const void *const *)inputs, (void *const *)outputs, 0,
                    err);
  ex_values *v = ex_values_new(r->g);
  if (!v)
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  for (int t = 0; t < r->g->ntensors; t++)
    if (r->g->tensors[t].kind == IR_T_WEIGHT)
      v->v[t] = r->weights->v[t];
  api_code rc = API_OK;
  for (int i = 0; i < r->ninputs; i++)
    v->v[r->inputs[i]] = (float *)inputs[i]; /* read only */
  for (int i = 0; i < r->ninputs; i++)       /* after a failure: none copied */
    if (rc && ir_dtype_is_half((ir_dtype)r->g->tensors[r->inputs[i]].dtype))
      v->v[r->inputs[i]] = NULL;
    else if (!rc)
      rc = half_input(r->g, r->inputs[i], v, err);
  base_diag d;
  ex_options eo = {.threads = r->threads, .keep_all = 0};
  if (!rc)
    rc = ex_run(r->g, v, &eo, &d) ? api_fail_diag(err, &d)
                                  : copy_outputs(r, v, outputs, err);
  for (int t = 0; t < r->g->ntensors; t++)
    if (r->g->tensors[t].kind == IR_T_WEIGHT ||
        (r->g->tensors[t].kind == IR_T_INPUT &&
         !ir_dtype_is_half((ir_dtype)r->g->tensors[t].dtype)))
      v->v[t] = NULL; /* borrowed: not ours to free */
  ex_values_free(v);
  return rc ? rc : api_ok(err);
}

api_code api_runner_run(api_runner *r, const float *const *inputs,
                        float *const *outputs, api_error *err) {
  api_code rc = check_buffers("api_runner_run", r, (const void *const *)inputs,
                              (const void *const *)outputs, err);
  return rc ? rc : host_run(r, inputs, outputs, err);
}

/* "input 0 (x)" / "output 1 (y)" */
static void label(char *buf, size_t n, const char *kind, int i,
                  const ir_tensor *t) {
  snprintf(buf, n, "%s %d (%s)", kind, i, t->name);
}

/* Checks the typed buffers against the interface. */
static api_code check_typed(api_runner *r, const api_tensor *inputs,
                            const api_tensor *outputs, api_error *err) {
  static const char fn[] = "api_runner_run_typed";
  char what[300];
  if (!r)
    return api_fail(err, API_ERR_USAGE, "%s: NULL runner", fn);
  if ((!inputs && r->ninputs) || (!outputs && r->g->noutputs))
    return api_fail(err, API_ERR_USAGE, "%s: NULL %s", fn,
                    !inputs && r->ninputs ? "inputs" : "outputs");
  api_code rc = API_OK;
  for (int i = 0; !rc && i < r->ninputs; i++) {
    const ir_tensor *t = &r->g->tensors[r->inputs[i]];
    label(what, sizeof what, "input", i, t);
    rc = api_tensor_check(fn, what, t, &inputs[i], err);
  }
  for (int i = 0; !rc && i < r->g->noutputs; i++) {
    const ir_tensor *t = &r->g->tensors[r->g->outputs[i]];
    label(what, sizeof what, "output", i, t);
    rc = api_tensor_check(fn, what, t, &outputs[i], err);
  }
  return rc;
}

/* Float32 slots for each buffer that is not float32 (NULL for those that
 * are: used in place); inputs converted. */
static api_code typed_slots(api_runner *r, const api_tensor *inputs,
                            const api_tensor *outputs, float **in, float **out,
                            api_error *err) {
  char what[300];
  int no = r->g->noutputs;
  for (int i = 0; i < r->ninputs + no; i++) {
    int isin = i < r->ninputs;
    const api_tensor *b = isin ? &inputs[i] : &outputs[i - r->ninputs];
    const ir_tensor *t =
        &r->g->tensors[isin ? r->inputs[i] : r->g->outputs[i - r->ninputs]];
    float **slot = isin ? &in[i] : &out[i - r->ninputs];
    if (b->dtype == API_F32)
      continue;
    if (!(*slot = base_malloc(
              sizeof(float) * (size_t)ir_shape_numel(&t->shape) + 1)))
      return api_fail(err, API_ERR_INTERNAL, "out of memory");
    label(what, sizeof what, isin ? "input" : "output",
          isin ? i : i - r->ninputs, t);
    api_code rc = isin ? api_tensor_to_f32(what, t, b, *slot, err) : API_OK;
    if (rc)
      return rc;
  }
  return API_OK;
}

api_code api_runner_run_typed(api_runner *r, const api_tensor *inputs,
                              const api_tensor *outputs, api_error *err) {
  api_code rc = check_typed(r, inputs, outputs, err);
  if (rc)
    return rc;
  int ni = r->ninputs, no = r->g->noutputs;
  float **in = base_calloc((size_t)ni + 1, sizeof *in);
  float **out = base_calloc((size_t)no + 1, sizeof *out);
  const float **pin = base_calloc((size_t)ni + 1, sizeof *pin);
  float **pout = base_calloc((size_t)no + 1, sizeof *pout);
  if (!in || !out || !pin || !pout)
    rc = api_fail(err, API_ERR_INTERNAL, "out of memory");
  else
    rc = typed_slots(r, inputs, outputs, in, out, err);
  for (int i = 0; !rc && i < ni; i++)
    pin[i] = in[i] ? in[i] : (const float *)inputs[i].data;
  for (int i = 0; !rc && i < no; i++)
    pout[i] = out[i] ? out[i] : (float *)outputs[i].data;
  if (!rc)
    rc = host_run(r, pin, pout, err);
  for (int i = 0; !rc && i < no; i++)
    if (out[i])
      api_tensor_from_f32(&r->g->tensors[r->g->outputs[i]], out[i],
                          &outputs[i]);
  for (int i = 0; in && i < ni; i++)
    free(in[i]);
  for (int i = 0; out && i < no; i++)
    free(out[i]);
  free(in);
  free(out);
  free(pin);
  free(pout);
  return rc ? rc : api_ok(err);
}

api_code api_runner_set_weight(api_runner *r, const char *name,
                               const api_tensor *v, const int64_t *dims,
                               int rank, api_error *err) {
  static const char fn[] = "api_runner_set_weight";
  if (!r || !name || !v)
    return api_fail(err, API_ERR_USAGE, "%s: NULL argument", fn);
  if (r->cuda)
    return api_fail(err, API_ERR_UNSUPPORTED,
                    "%s: a cuda runner prepares its weights once on the GPU: "
                    "set '%s' on the graph (api_graph_set_weight) before "
                    "api_runner_new",
                    fn, name);
  int t;
  api_code rc = api_weight_find(fn, r->g, name, v, dims, rank, &t, err);
  if (rc)
    return rc;
  const ir_tensor *w = &r->g->tensors[t];
  float *buf =
      base_malloc(sizeof(float) * (size_t)ir_shape_numel(&w->shape) + 1);
  if (!buf)
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  char what[300];
  snprintf(what, sizeof what, "%s: weight '%s'", fn, name);
  if ((rc = api_tensor_to_f32(what, w, v, buf, err))) {
    free(buf);
    return rc;
  }
  free(r->weights->v[t]);
  r->weights->v[t] = buf;
  return api_ok(err);
}

api_code api_graph_run(const api_graph *g, const api_run_options *o,
                       const float *const *inputs, float *const *outputs,
                       api_error *err) {
  api_runner *r;
  api_code rc = api_runner_new(g, o, &r, err);
  if (rc)
    return rc;
  rc = api_runner_run(r, inputs, outputs, err);
  api_runner_free(r);
  return rc;
}
