/* move.c: the launch of a move node (ops.def: a program of slices, pads,
 * transposes, reshapes and concats of one tensor; the lower stage makes
 * it, src/fuse/lower_chain.c): the program compiled into kern.h's
 * cxk_move_args, one kern/kmprog.cu kernel. The input is read through its
 * strides in its layout; the output is written contiguous: NCHW, or, where
 * the planner made it channels-last (ir_move_cl(), plan/layout.c),
 * as the program followed by a transpose [0,2,3,1] (run_program): [N,H,W,C]
 * contiguous is the NHWC bytes of [N,C,H,W]. A
 * program that is one strided walk of its input (ir_move_walk: no pad, no
 * concat) runs as a strided copy instead (cxk_move_view: tiled where the
 * output's innermost dimension is strided in the source, vectorised where
 * it is contiguous).
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

static void dims32(int32_t *dst, const ir_shape *s) {
  for (int d = 0; d < s->rank; d++)
    dst[d] = (int32_t)s->dim[d];
}

/* Step k of program b (shapes sh, source x) in kernel form. */
static void compile_step(const ir_body *b, int k, const ir_shape *x,
                         const ir_shape *sh, cxk_mstep *m) {
  const ir_body_op *o = &b->ops[k];
  const ir_shape *in = o->in[0] < 0 ? x : &sh[o->in[0]];
  m->rank = sh[k].rank, m->irank = in->rank;
  dims32(m->odim, &sh[k]);
  dims32(m->idim, in);
  m->nparts = o->nin;
  for (int j = 0; j < o->nin; j++)
    m->next[j] = o->in[j] < 0 ? -1 : o->in[j];
  switch (o->op) {
  case IR_OP_SLICE: m->kind = CXK_MV_SLICE; break;
  case IR_OP_PAD: m->kind = CXK_MV_PAD; break;
  case IR_OP_TRANSPOSE: m->kind = CXK_MV_TRANSPOSE; break;
  case IR_OP_CONCAT: m->kind = CXK_MV_CONCAT; break;
  default: m->kind = CXK_MV_RESHAPE; break;
  }
  switch (m->kind) {
  case CXK_MV_SLICE:
  case CXK_MV_PAD:
  case CXK_MV_TRANSPOSE:
    for (int d = 0; d < m->rank; d++)
      m->a[d] = (int32_t)o->a.list[d]; /* starts, befores, perm */
    m->value = o->a.value;
    break;
  case CXK_MV_CONCAT: {
    m->axis = o->a.axis < 0 ? o->a.axis + m->rank : o->a.axis;
    int64_t end = 0;
    for (int j = 0; j < o->nin; j++) {
      const ir_shape *p = o->in[j] < 0 ? x : &sh[o->in[j]];
      end += p->dim[m->axis];
      m->a[j] = (int32_t)end;
    }
    break;
  }
  default: break;
  }
}

/* Whether groups of v elements along the innermost output dimension stay
 * contiguous and v-aligned through step m (the group aligned on entry). */
static int keeps_groups(const cxk_mstep *m, int v) {
  int r = m->rank - 1, ir = m->irank - 1;
  if (r < 0 || ir < 0 || m->odim[r] % v || m->idim[ir] % v)
    return 0;
  switch (m->kind) {
  case CXK_MV_SLICE:
  case CXK_MV_PAD: return m->a[r] % v == 0;
  case CXK_MV_TRANSPOSE: return m->a[r] == r;
  case CXK_MV_CONCAT:
    for (int j = 0; m->axis == r && j < m->nparts; j++)
      if (m->a[j] % v)
        return 0;
    return 1;
  default: return 1;
  }
}

/* The widest group (4, 2 or 1) every step and the source keep. */
static int group_width(const cxk_move_args *a, const ir_shape *x) {
  for (int v = 4; v > 1; v /= 2) {
    int ok = x->rank > 0 && a->sst[x->rank - 1] == 1 &&
             x->dim[x->rank - 1] % v == 0 && a->n % v == 0;
    for (int d = 0; ok && d + 1 < x->rank; d++)
      ok = a->sst[d] % v == 0;
    for (int k = 0; ok && k < a->nsteps; k++)
      ok = keeps_groups(&a->step[k], v);
    if (ok)
      return v;
  }
  return 1;
}

/* Node n's program as it runs: its own, or where its output is
 * channels-last (plan/layout.c checked that it is rank 4 and that the
 * program has room for a step more) that program followed by a transpose
 * [0,2,3,1], writing [N,H,W,C] contiguous: a copy in *own (malloc'd, not
 * interned: only its operators are read; the caller frees it). NULL: no
 * program, or out of memory. */
static const ir_body *run_program(const gpu_plan *p, const ir_node *n,
                                  ir_body **own) {
  const ir_body *b = ir_body_get(n->a.body);
  *own = NULL;
  if (!b || !gpu_is_cl(p, n->out[0]))
    return b;
  if (shp(p, n->out[0])->rank != 4)
    return NULL;
  ir_body *c = *own =
      base_malloc(sizeof *c + (size_t)(b->nops + 1) * sizeof *c->ops);
  if (!c)
    return NULL;
  c->id = b->id, c->nin = b->nin, c->nops = b->nops + 1;
  memcpy(c->ops, b->ops, (size_t)b->nops * sizeof *b->ops);
  ir_body_op *t = &c->ops[b->nops];
  memset(t, 0, sizeof *t);
  t->op = IR_OP_TRANSPOSE;
  t->nin = 1;
  t->in[0] = b->nops - 1;
  ir_attrs_default(IR_OP_TRANSPOSE, &t->a);
  t->a.nlist = 4;
  t->a.list[0] = 0, t->a.list[1] = 2, t->a.list[2] = 3, t->a.list[3] = 1;
  return c;
}

/* Node n's program (b, input shape x) as the strided walk cxk_move_view
 * runs (ir_move_walk over the input's strides in its layout, the output
 * contiguous; rolls as wrapped coordinates), where it is one whose indices fit
 * 32 bits (kutil.cuh's fits32) and $SUPEROPT_MOVE=walk does not ask for the
 * step walk (tests, timings). */
static int move_walk(const gpu_plan *p, const ir_node *n, const ir_body *b,
                     const ir_shape *x, cxk_walk *w) {
  const char *force = getenv("SUPEROPT_MOVE");
  if (!b || (force && !strcmp(force, "walk")))
    return 0;
  int64_t xst[CXK_RANK];
  memset(w, 0, sizeof *w);
  gpu_strides(p, n->in[0], xst);
  if (!ir_move_walk(b, x, xst, &w->rank, w->dim, w->sst, w->wrap, &w->soff))
    return 0;
  int64_t step = 1, far = w->soff;
  const int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 28);
  for (int d = w->rank - 1; d >= 0; d--) {
    if (w->sst[d] < 0)
      return 0;
    w->dst[d] = step;
    step *= w->dim[d];
    far += (w->dim[d] - 1) * w->sst[d];
  }
  return step < lim && far + 1 < lim;
}

const char *gpu_move_engine(const gpu_plan *p, int j) {
  const ir_node *n = &p->g->nodes[j];
  cxk_walk w;
  ir_body *own;
  int walk = move_walk(p, n, run_program(p, n, &own), shp(p, n->in[0]), &w);
  free(own);
  return walk ? "kmprog strided copy" : "kmprog step walk";
}

/* Node n's program b (run_program) enqueued: the strided copy where it is
 * one, else the step walk. */
static cudaError_t move_run(gpu_plan *p, const ir_node *n, const ir_body *b) {
  const ir_shape *x = shp(p, n->in[0]);
  ir_shape sh[IR_BODY_MAX_OPS];
  cxk_walk w;
  if (move_walk(p, n, b, x, &w)) {
    cudaError_t ev =
        cxk_move_view(p->ctx->stream, cxk_dt_size(gpu_dt_of(p->g, n->out[0])),
                      p->ptr[n->in[0]], p->ptr[n->out[0]], &w);
    if (ev != cudaErrorNotSupported)
      return ev;
  }
  if (!b)
    return cudaErrorNotSupported;
  if (b->nops > CXK_MSTEPS || ir_body_shapes(b, &x, sh, NULL))
    return cudaErrorNotSupported;
  cxk_move_args a;
  memset(&a, 0, sizeof a);
  a.nsteps = b->nops, a.last = b->nops - 1, a.srank = x->rank;
  a.n = ir_shape_numel(shp(p, n->out[0]));
  gpu_strides(p, n->in[0], a.sst);
  a.extent = 1;
  for (int d = 0; d < x->rank; d++)
    a.extent += (x->dim[d] - 1) * a.sst[d];
  for (int k = 0; k < b->nops; k++) {
    compile_step(b, k, x, sh, &a.step[k]);
    int64_t e = ir_shape_numel(&sh[k]);
    a.extent = e > a.extent ? e : a.extent;
  }
  a.vec = group_width(&a, x);
  return cxk_move(p->ctx->stream, gpu_dt_of(p->g, n->out[0]), p->ptr[n->in[0]],
                  p->ptr[n->out[0]], &a);
}

cudaError_t gpu_move_enqueue(gpu_plan *p, int j) {
  const ir_node *n = &p->g->nodes[j];
  ir_body *own;
  const ir_body *b = run_program(p, n, &own);
  cudaError_t e = move_run(p, n, b);
  free(own);
  return e;
}
