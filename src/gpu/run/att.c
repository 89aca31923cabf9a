/* att.c: an attention node on the GPU in one of three forms, whichever
 * was timed fastest on the node's own buffers: katt.cu's kernel, split
 * into cuBLAS's batched GEMMs and the scaled softmax (with the bias and
 * the guard; float32 only), or kflash.cu's flash kernel (tensor cores:
 * TF32 for float32, f16/bf16 operands for half graphs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* The packed strides of a rank >= 2 tensor of shape s as cxk_att takes
 * them ([d0, d1, rows, cols]: rank 4 as it is; rank 3 and 2 with their
 * leading dimension in d1; rank 5 and more with the dimension before the
 * last two in d1 and the ones before it folded into d0: MaxViT's
 * [1, windows, heads, ..] scores, whose bias varies along the heads
 * alone, 2026-12-01). */
static void att_strides(const ir_shape *s, int64_t st[4]) {
  int r = s->rank;
  st[3] = 1, st[2] = s->dim[r - 1];
  st[1] = st[2] * s->dim[r - 2];
  st[0] = st[1] * (r > 2 ? s->dim[r - 3] : 1);
}

/* cxk_att's d0 and d1 for q's shape (att_strides' folding). */
static void att_lead(const ir_shape *q, int64_t *d0, int64_t *d1) {
  int r = q->rank;
  *d0 = 1, *d1 = r > 2 ? q->dim[r - 3] : 1;
  for (int i = 0; i < r - 3; i++)
    *d0 *= q->dim[i];
}

/* The strides over [d0, d1, rows, cols] (att_strides' folding) of
 * attention's bias b (rank <= r, aligned from the last dimension, 0 where
 * it broadcasts) for scores of shape sc; 0 where the dimensions folded
 * into d0 have no one stride (a bias broadcast along some of several
 * folded ones). */
static int att_bias_strides(const ir_shape *b, const ir_shape *sc,
                            int64_t bst[4]) {
  int r = sc->rank;
  int64_t full[IR_MAX_RANK], s = 1;
  for (int i = r - 1; i >= 0; i--) {
    int j = i - (r - b->rank);
    full[i] = j >= 0 && b->dim[j] != 1 ? s : 0;
    s *= j >= 0 ? b->dim[j] : 1;
  }
  bst[2] = full[r - 2], bst[3] = full[r - 1];
  bst[1] = r > 2 ? full[r - 3] : 0, bst[0] = r > 3 ? full[r - 4] : 0;
  int64_t span = 1; /* the folded index's step at dimension i */
  for (int i = r - 4; i >= 0; i--) {
    if (sc->dim[i] > 1 && full[i] != bst[0] * span)
      return 0;
    span *= sc->dim[i];
  }
  return 1;
}

/* An attention node's arguments: packed strides unless plan/layout.c set them
 * (reading through transposes and a split); d and e within the kernel's
 * limit. */
base_status gpu_att_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                            base_diag *d) {
  const ir_shape *q = shp(p, n->in[0]), *y = shp(p, n->out[0]);
  int r = q->rank;
  if (!s->att) {
    if (!(s->att = base_calloc(1, sizeof *s->att)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    for (int k = 0; k < 3; k++)
      att_strides(shp(p, n->in[k]), s->att->a.st[k]);
    att_strides(y, s->att->a.st[3]);
  }
  cxk_att *a = &s->att->a;
  ir_shape rq; /* the row layout's q as [b, h, s, d] */
  if (n->a.groups > 0) {
    ir_att_geom g;
    if (ir_att_geom_of(&n->a, q, shp(p, n->in[1]), shp(p, n->in[2]), &g))
      return base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                           "attention: malformed row layout");
    memcpy(a->st, g.st, sizeof a->st); /* the rows read in place */
    memcpy(s->att->off, g.off, sizeof g.off);
    rq = (ir_shape){4, {g.b, g.h, g.s, g.d}};
    q = &rq, r = 4;
    a->d0 = g.b, a->d1 = g.h, a->s = g.s, a->d = g.d, a->t = g.t, a->e = g.e;
  } else {
    att_lead(q, &a->d0, &a->d1);
    a->s = q->dim[r - 2], a->d = q->dim[r - 1];
    a->t = shp(p, n->in[1])->dim[r - 1], a->e = y->dim[r - 1];
  }
  if (ir_shape_numel(y) > 0 && !cxk_attention_ok(a))
    return base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                         "attention: the GPU kernel takes q's and v's last "
                         "dimensions up to %d, got %lld and %lld",
                         CXK_ATT_MAX_DIM, (long long)a->d, (long long)a->e);
  a->guard = n->a.keepdims;
  a->dt = gpu_dt_of(p->g, n->out[0]); /* q, k, v, scale, bias alike */
  if (n->nin > 4) {
    ir_shape sc = *q;
    sc.dim[r - 1] = a->t;
    if (gpu_is_cl(p, n->in[4]) ||
        !att_bias_strides(shp(p, n->in[4]), &sc, a->bst))
      return base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                           "attention: the GPU reads its bias packed, "
                           "broadcast along all or none of the dimensions "
                           "before the last two");
  }
  gpu_att *t = s->att;
  /* kflash.cu: float32 on TF32, f16 and bf16 on their own tensor cores
   * (float32 sums); strict float32 takes neither */
  t->flash_ok = !p->ctx->opt.fp32_strict && p->ctx->prop.major >= 8 &&
                cxk_flash_ok(a) && ir_shape_numel(y) > 0 &&
                cxk_flash_runs_here();
  t->rw = 2;
  if (!p->ctx->opt.fp32_strict && a->t <= cxk_attention_tc_t() &&
      p->ctx->prop.major >= 9)
    t->rw = 0; /* TF32 tensor cores, like the matmuls (sm_90 code) */
  /* the split form: scores [d0, d1, s, t] packed in scratch */
  int64_t sst[4] = {a->d1 * a->s * a->t, a->s * a->t, a->t, 1};
  t->split_ok = gpu_smm_layout(a->st[0], a->s, a->d, NULL) &&
                gpu_smm_layout(a->st[1], a->d, a->t, NULL) &&
                gpu_smm_layout(a->st[2], a->t, a->e, NULL) &&
                gpu_smm_layout(a->st[3], a->s, a->e, NULL) == 1 &&
                ir_shape_numel(y) > 0 &&
                a->dt == CXK_F32; /* cuBLAS's float32 GEMMs, float32 scores */
  if (!t->split_ok)
    return BASE_OK;
  for (int k = 0; k < 2; k++) {
    gpu_smm *m = &t->mm[k];
    *m = (gpu_smm){.d0 = a->d0,
                   .d1 = a->d1,
                   .m = a->s,
                   .n = k ? a->e : a->t,
                   .k = k ? a->t : a->d,
                   .off = {k ? 0 : t->off[0], k ? t->off[2] : t->off[1]}};
    memcpy(m->st[0], k ? sst : a->st[0], sizeof sst);
    memcpy(m->st[1], k ? a->st[2] : a->st[1], sizeof sst);
    memcpy(m->st[2], k ? a->st[3] : sst, sizeof sst);
    base_status st = gpu_smm_alloc(m, d);
    if (st)
      return st;
  }
  size_t bytes = sizeof(float) * (size_t)(a->d0 * sst[0]);
  if (s->scratch_bytes < bytes)
    s->scratch_bytes = bytes;
  return BASE_OK;
}

/* Operand k (q, k or v) of attention node n as the kernels read it: its
 * buffer at the row layout's element offset. */
static const void *att_in(gpu_plan *p, const ir_node *n, const gpu_att *t,
                          int k) {
  return (const char *)IN(p, n, k) + cxk_dt_size((int)t->a.dt) * t->off[k];
}

/* One run of attention node n in form `form` (GPU_ATT_*). */
base_status gpu_att_run(gpu_plan *p, const ir_node *n, const gpu_att *t,
                        int form, base_diag *d) {
  const float *sc = n->nin > 3 ? IN(p, n, 3) : NULL;
  const float *bias = n->nin > 4 ? IN(p, n, 4) : NULL;
  gpu_ctx *c = p->ctx;
  if (form == GPU_ATT_FLASH) {
    GPU_CUDA(d,
             cxk_flash(c->stream, att_in(p, n, t, 0), att_in(p, n, t, 1),
                       att_in(p, n, t, 2), sc, bias, p->ptr[n->out[0]], &t->a));
    return BASE_OK;
  }
  if (form == GPU_ATT_SPLIT) {
    base_status st = gpu_smm_run(c, &t->mm[0], d);
    if (!st)
      GPU_CUDA(d, cxk_scaled_softmax(c->stream, STEP(p, n)->scratch,
                                     t->a.d0 * t->a.d1 * t->a.s, t->a.t, sc,
                                     bias, &t->a));
    return st ? st : gpu_smm_run(c, &t->mm[1], d);
  }
  GPU_CUDA(d, cxk_attention(c->stream, att_in(p, n, t, 0), att_in(p, n, t, 1),
                            att_in(p, n, t, 2), sc, bias, p->ptr[n->out[0]],
                            &t->a, t->rw));
  return BASE_OK;
}

typedef struct att_timed {
  gpu_plan *p;
  const ir_node *n;
  int form;
} att_timed;

static int att_timed_run(gpu_ctx *c, const void *u) {
  const att_timed *x = u;
  (void)c;
  return gpu_att_run(x->p, x->n, STEP(x->p, x->n)->att, x->form, NULL) !=
         BASE_OK;
}

static const char *const att_form_names[GPU_ATT_FORMS] = {"kernel", "split",
                                                          "flash"};

/* The form $SUPEROPT_ATTENTION names (tests, timing one form), -1 none. */
static int att_forced(void) {
  const char *env = getenv("SUPEROPT_ATTENTION");
  for (int f = 0; env && f < GPU_ATT_FORMS; f++)
    if (!strcmp(env, att_form_names[f]))
      return f;
  return -1;
}

/* Every form node n may run in timed on its own buffers; the fastest
 * taken. Untimed (no events): split where cuBLAS takes it, else the
 * kernel. */
static void att_time_forms(gpu_plan *p, const ir_node *n, gpu_att *t,
                           const int ok[GPU_ATT_FORMS]) {
  cudaEvent_t e0 = NULL, e1 = NULL;
  t->form = t->split_ok ? GPU_ATT_SPLIT : GPU_ATT_KERNEL;
  if (cudaEventCreate(&e0) != cudaSuccess ||
      cudaEventCreate(&e1) != cudaSuccess) {
    cudaGetLastError();
  } else {
    for (int f = 0; f < GPU_ATT_FORMS; f++)
      if (ok[f])
        t->ms[f] =
            gpu_tune_time(p->ctx, att_timed_run, &(att_timed){p, n, f}, e0, e1);
    t->form = GPU_ATT_KERNEL;
    for (int f = 1; f < GPU_ATT_FORMS; f++)
      if (ok[f] && t->ms[f] < t->ms[t->form])
        t->form = f;
  }
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
}

/* The tune log's rest of node n's line: the form taken, the sizes, the
 * operands' and the bias's strides (bias -1 ...: none); then a line with
 * the operands the flash kernel copies 16 bytes at a time. */
static void att_log(gpu_plan *p, const ir_node *n, const gpu_att *t) {
  const cxk_att *a = &t->a;
  fprintf(stderr, " %s (d0 %lld d1 %lld s %lld t %lld d %lld e %lld; strides",
          att_form_names[t->form], (long long)a->d0, (long long)a->d1,
          (long long)a->s, (long long)a->t, (long long)a->d, (long long)a->e);
  for (int k = 0; k < 4; k++) {
    const int64_t *st = a->st[k]; /* q, k, v, y */
    fprintf(stderr, " %c %lld %lld %lld %lld", "qkvy"[k], (long long)st[0],
            (long long)st[1], (long long)st[2], (long long)st[3]);
  }
  fprintf(stderr, "; bias %lld %lld %lld %lld)\n",
          (long long)(n->nin > 4 ? a->bst[0] : -1), (long long)a->bst[1],
          (long long)a->bst[2], (long long)a->bst[3]);
  int v = cxk_flash_vec(att_in(p, n, t, 0), att_in(p, n, t, 1),
                        att_in(p, n, t, 2), p->ptr[n->out[0]], a);
  fprintf(stderr, "superopt: flash copies 16 bytes of q %d k %d v %d y %d\n",
          v & 1, v >> 1 & 1, v >> 2 & 1, v >> 3 & 1);
}

base_status gpu_att_bind(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  gpu_step *s = &p->steps[i];
  gpu_att *t = s->att;
  base_status st = BASE_OK;
  if (t->split_ok)
    st = gpu_smm_pointers(&t->mm[0], IN(p, n, 0), IN(p, n, 1), s->scratch, d);
  if (!st && t->split_ok)
    st = gpu_smm_pointers(&t->mm[1], s->scratch, IN(p, n, 2), p->ptr[n->out[0]],
                          d);
  if (st)
    return st;
  const int ok[GPU_ATT_FORMS] = {1, t->split_ok, t->flash_ok};
  int forced = att_forced();
  t->form = GPU_ATT_KERNEL;
  if (forced >= 0) {
    t->form = ok[forced] ? forced : GPU_ATT_KERNEL;
    return BASE_OK;
  }
  if (!t->split_ok && !t->flash_ok)
    return BASE_OK; /* the kernel alone */
  att_time_forms(p, n, t, ok);
  if (p->ctx->tune_log) {
    fprintf(stderr, "superopt: attention %s:", p->g->tensors[n->out[0]].name);
    for (int f = 0; f < GPU_ATT_FORMS; f++)
      if (ok[f])
        fprintf(stderr, " %s %.4f ms,", att_form_names[f], t->ms[f]);
    att_log(p, n, t);
  }
  return BASE_OK;
}
