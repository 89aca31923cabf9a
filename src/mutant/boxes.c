/* boxes.c: the box analysis of a mutant (PET's multi-linear argument).
 *
 * Each output of f and g is cut into a grid: the union of both graphs' cut
 * lines on that output (cuts.c). Inside one cell both graphs compute, at
 * every position, the same expression with its inputs translated, so the
 * difference f - g is either the zero polynomial at every position of the
 * cell or at none. The cell is tested at its corners (up to 2^rank points:
 * one would do, the others guard the cut rules) on seeded random residues;
 * a different cell is missed only when its non-zero difference polynomial
 * vanishes at every tested point, with probability at most deg / p at each
 * (Schwartz-Zippel, p = 2^31 - 1). Different cells are then merged into a
 * small disjoint cover of boxes, the regions the correction recomputes.
 */
#include <stdlib.h>
#include <string.h>

#include "../fingerprint/fp.h"
#include "mutant_int.h"

static base_status check_pair(const ir_graph *f, const ir_graph *g,
                              base_diag *d) {
  char b0[96], b1[96];
  if (f->noutputs != g->noutputs)
    return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                         "mutant: f has %d outputs, g has %d", f->noutputs,
                         g->noutputs);
  for (int i = 0; i < f->noutputs; i++) {
    const ir_shape *a = &f->tensors[f->outputs[i]].shape,
                   *b = &g->tensors[g->outputs[i]].shape;
    if (!ir_shape_eq(a, b))
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "mutant: output %d has shape %s in f but %s in g", i,
                           ir_shape_str(a, b0, sizeof b0),
                           ir_shape_str(b, b1, sizeof b1));
  }
  return BASE_OK;
}

/* The grid of output i: interval starts 0 and every cut of either graph. */
static int make_grid(mutant_grid *gr, const ir_shape *s, const mutant_cuts *a,
                     const mutant_cuts *b) {
  mutant_cuts u = {{0}, {NULL}};
  gr->shape = *s;
  gr->ncells = 1;
  for (int k = 0; k < s->rank; k++) {
    for (int i = 0; i < a->n[k]; i++)
      if (mutant_cut_add(&u, k, a->c[k][i], s->dim[k]))
        goto oom;
    for (int i = 0; i < b->n[k]; i++)
      if (mutant_cut_add(&u, k, b->c[k][i], s->dim[k]))
        goto oom;
  }
  mutant_cut_norm(&u);
  for (int k = 0; k < s->rank; k++) {
    gr->ncut[k] = u.n[k] + 1;
    if (!(gr->cut[k] = base_malloc(sizeof(int64_t) * (size_t)gr->ncut[k])))
      goto oom;
    gr->cut[k][0] = 0;
    if (u.n[k])
      memcpy(gr->cut[k] + 1, u.c[k], sizeof(int64_t) * (size_t)u.n[k]);
    gr->ncells *= gr->ncut[k];
  }
  for (int k = 0; k < IR_MAX_RANK; k++)
    free(u.c[k]);
  gr->diff = base_calloc((size_t)gr->ncells + 1, 1);
  return gr->diff ? 0 : -1;
oom:
  for (int k = 0; k < IR_MAX_RANK; k++)
    free(u.c[k]);
  return -1;
}

static int64_t cell_hi(const mutant_grid *gr, int k, int64_t c) {
  return c + 1 < gr->ncut[k] ? gr->cut[k][c + 1] : gr->shape.dim[k];
}

/* The values of one output: a whole evaluated tensor v, or (v NULL) graph
 * g's tensor t evaluated position by position under seed (point.c). */
typedef struct vals {
  const uint32_t *v;
  const mutant_pt *p;
  int t;
} vals;

static uint32_t val_at(const vals *x, int64_t j, const int64_t *idx) {
  return x->v ? x->v[j] : mutant_point(x->p, x->t, idx);
}

/* Tests every cell of gr at its corners; returns the points evaluated. */
static int64_t test_cells(mutant_grid *gr, const vals *fv, const vals *gv) {
  int r = gr->shape.rank;
  int64_t cell[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK], idx[IR_MAX_RANK],
      points = 0;
  ir_shape gs = {r, {0}};
  for (int k = 0; k < r; k++)
    gs.dim[k] = gr->ncut[k];
  for (int64_t c = 0; c < gr->ncells; c++) {
    mutant_unravel(&gs, c, cell);
    int wide = 0; /* axes where the cell spans more than one position */
    for (int k = 0; k < r; k++) {
      lo[k] = gr->cut[k][cell[k]];
      hi[k] = cell_hi(gr, k, cell[k]) - 1;
      wide |= (lo[k] != hi[k]) << k;
    }
    for (int m = 0; m < 1 << r; m++) {
      if (m & ~wide)
        continue; /* the same point as a corner already tested */
      int64_t j = 0;
      for (int k = 0; k < r; k++) {
        idx[k] = m >> k & 1 ? hi[k] : lo[k];
        j = j * gr->shape.dim[k] + idx[k];
      }
      points++;
      if (val_at(fv, j, idx) != val_at(gv, j, idx)) {
        gr->diff[c] = 1;
        break;
      }
    }
    gr->ndiff += gr->diff[c];
  }
  return points;
}

/* Whether every cell of [clo, chi) is different and not yet covered. */
static int slab_free(const mutant_grid *gr, const uint8_t *cov,
                     const int64_t *clo, const int64_t *chi) {
  int r = gr->shape.rank;
  int64_t idx[IR_MAX_RANK];
  memcpy(idx, clo, sizeof(int64_t) * (size_t)r);
  for (;;) {
    int64_t j = 0;
    for (int k = 0; k < r; k++)
      j = j * gr->ncut[k] + idx[k];
    if (!gr->diff[j] || cov[j])
      return 0;
    int k = r - 1;
    while (k >= 0 && ++idx[k] == chi[k])
      idx[k] = clo[k], k--;
    if (k < 0)
      return 1;
  }
}

static void cover(const mutant_grid *gr, uint8_t *cov, const int64_t *clo,
                  const int64_t *chi) {
  int r = gr->shape.rank;
  int64_t idx[IR_MAX_RANK];
  memcpy(idx, clo, sizeof(int64_t) * (size_t)r);
  for (;;) {
    int64_t j = 0;
    for (int k = 0; k < r; k++)
      j = j * gr->ncut[k] + idx[k];
    cov[j] = 1;
    int k = r - 1;
    while (k >= 0 && ++idx[k] == chi[k])
      idx[k] = clo[k], k--;
    if (k < 0)
      return;
  }
}

static int push_box(mutant_boxes *b, const mutant_box *x, int *cap) {
  if (b->nwrong == *cap) {
    int nc = *cap ? 2 * *cap : 8;
    mutant_box *w = base_realloc(b->wrong, sizeof *w * (size_t)nc);
    if (!w)
      return -1;
    b->wrong = w, *cap = nc;
  }
  b->wrong[b->nwrong++] = *x;
  return 0;
}

/* Greedy cover of the different cells of output i: from each uncovered
 * different cell in row-major order, grow along the last axis, then the one
 * before, ... while the whole slab is different and uncovered. */
static int merge(mutant_boxes *b, int i, int *cap) {
  const mutant_grid *gr = &b->grid[i];
  int r = gr->shape.rank;
  ir_shape gs = {r, {0}};
  for (int k = 0; k < r; k++)
    gs.dim[k] = gr->ncut[k];
  uint8_t *cov = base_calloc((size_t)gr->ncells + 1, 1);
  if (!cov)
    return -1;
  for (int64_t c = 0; c < gr->ncells; c++) {
    if (!gr->diff[c] || cov[c])
      continue;
    int64_t clo[IR_MAX_RANK], chi[IR_MAX_RANK];
    mutant_unravel(&gs, c, clo);
    for (int k = 0; k < r; k++)
      chi[k] = clo[k] + 1;
    for (int k = r - 1; k >= 0; k--)
      while (chi[k] < gr->ncut[k]) {
        int64_t slo[IR_MAX_RANK], shi[IR_MAX_RANK];
        memcpy(slo, clo, sizeof slo);
        memcpy(shi, chi, sizeof shi);
        slo[k] = chi[k], shi[k] = chi[k] + 1;
        if (!slab_free(gr, cov, slo, shi))
          break;
        chi[k]++;
      }
    cover(gr, cov, clo, chi);
    mutant_box x = {.out = i};
    int64_t n = 1;
    for (int k = 0; k < r; k++) {
      x.lo[k] = gr->cut[k][clo[k]];
      x.hi[k] = cell_hi(gr, k, chi[k] - 1);
      n *= x.hi[k] - x.lo[k];
    }
    b->wrong_numel += n;
    if (push_box(b, &x, cap)) {
      free(cov);
      return -1;
    }
  }
  free(cov);
  return 0;
}

void mutant_boxes_free(mutant_boxes *b) {
  for (int i = 0; b->grid && i < b->nout; i++) {
    for (int k = 0; k < IR_MAX_RANK; k++)
      free(b->grid[i].cut[k]);
    free(b->grid[i].diff);
  }
  free(b->grid);
  free(b->wrong);
  memset(b, 0, sizeof *b);
}

base_status mutant_analyze(const ir_graph *f, const ir_graph *g, uint64_t seed,
                           mutant_boxes *out, base_diag *d) {
  mutant_cuts *cf = NULL, *cg = NULL;
  uint32_t **vf = NULL, **vg = NULL;
  int cap = 0;
  memset(out, 0, sizeof *out);
  base_status st = check_pair(f, g, d);
  if (!st)
    st = mutant_cut_graph(f, &cf, d);
  if (!st)
    st = mutant_cut_graph(g, &cg, d);
  /* only corners are read: position by position when both graphs allow it
   * (the same residues as whole tensors, far fewer operations) */
  int point = mutant_point_ok(f) && mutant_point_ok(g);
  mutant_pt pf = {0}, pg = {0};
  if (!st && point)
    st = mutant_pt_init(&pf, f, seed, d);
  if (!st && point)
    st = mutant_pt_init(&pg, g, seed, d);
  if (!st && !point)
    st = mutant_eval(f, seed, &vf, d);
  if (!st && !point)
    st = mutant_eval(g, seed, &vg, d);
  if (!st && !(out->grid = base_calloc((size_t)f->noutputs, sizeof *out->grid)))
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; !st && i < f->noutputs; i++) {
    int tf = f->outputs[i], tg = g->outputs[i];
    mutant_grid *gr = &out->grid[i];
    out->nout = i + 1;
    vals xf = {vf ? vf[tf] : NULL, &pf, tf}, xg = {vg ? vg[tg] : NULL, &pg, tg};
    if (make_grid(gr, &f->tensors[tf].shape, &cf[tf], &cg[tg]) ||
        (out->points += test_cells(gr, &xf, &xg), merge(out, i, &cap)))
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    out->numel += ir_shape_numel(&gr->shape);
  }
  if (st)
    mutant_boxes_free(out);
  mutant_cuts_free(cf, cf ? f->ntensors : 0);
  mutant_cuts_free(cg, cg ? g->ntensors : 0);
  mutant_vals_free(f, vf);
  mutant_vals_free(g, vg);
  mutant_pt_free(&pf);
  mutant_pt_free(&pg);
  return st;
}

int mutant_in_wrong(const mutant_boxes *b, int out, const int64_t *idx) {
  for (int i = 0; i < b->nwrong; i++) {
    const mutant_box *x = &b->wrong[i];
    int in = x->out == out;
    for (int k = 0; in && k < b->grid[out].shape.rank; k++)
      in = idx[k] >= x->lo[k] && idx[k] < x->hi[k];
    if (in)
      return 1;
  }
  return 0;
}

/* mutant_diff_all position by position (graphs the whole-tensor evaluator
 * has no kernel for: batched matmuls, broadcast adds). */
static base_status diff_points(const ir_graph *f, const ir_graph *g,
                               uint64_t seed, int out, uint8_t *mask,
                               base_diag *d) {
  mutant_pt pf = {0}, pg = {0};
  base_status st = mutant_pt_init(&pf, f, seed, d);
  if (!st)
    st = mutant_pt_init(&pg, g, seed, d);
  int tf = f->outputs[out], tg = g->outputs[out];
  const ir_shape *s = &f->tensors[tf].shape;
  int64_t idx[IR_MAX_RANK];
  for (int64_t j = 0; !st && j < ir_shape_numel(s); j++) {
    mutant_unravel(s, j, idx);
    mask[j] = mutant_point(&pf, tf, idx) != mutant_point(&pg, tg, idx);
  }
  mutant_pt_free(&pf);
  mutant_pt_free(&pg);
  return st;
}

base_status mutant_diff_all(const ir_graph *f, const ir_graph *g, uint64_t seed,
                            int out, uint8_t *mask, base_diag *d) {
  uint32_t **vf = NULL, **vg = NULL;
  base_status st = check_pair(f, g, d);
  if (!st && (out < 0 || out >= f->noutputs))
    st = base_diag_set(d, BASE_ERR_PARAM, 0, 0, "mutant: no output %d", out);
  if (st)
    return st;
  /* no whole-tensor kernel (batched matmuls, broadcast adds): by points */
  int points = mutant_point_ok(f) && mutant_point_ok(g);
  base_diag q;
  st = mutant_eval(f, seed, &vf, &q);
  if (!st)
    st = mutant_eval(g, seed, &vg, &q);
  if (st == BASE_ERR_PARAM && points) {
    mutant_vals_free(f, vf);
    mutant_vals_free(g, vg);
    return diff_points(f, g, seed, out, mask, d);
  }
  if (st)
    base_diag_set(d, st, q.line, q.col, "%s", q.msg);
  if (!st) {
    int tf = f->outputs[out], tg = g->outputs[out];
    int64_t n = ir_shape_numel(&f->tensors[tf].shape);
    for (int64_t j = 0; j < n; j++)
      mask[j] = vf[tf][j] != vg[tg][j];
  }
  mutant_vals_free(f, vf);
  mutant_vals_free(g, vg);
  return st;
}

/* Largest degree of a value as a polynomial in the inputs and weights
 * (products add degrees, sums take the largest); a random element-wise
 * function (an activation) starts afresh at 1 after its argument and counts
 * one collision chance in *acts. */
static int graph_degree(const ir_graph *g, int *acts) {
  int *deg = base_calloc((size_t)g->ntensors + 1, sizeof *deg), best = 1;
  if (!deg)
    return 64; /* out of memory: a loose bound */
  for (int i = 0; i < g->ntensors; i++)
    deg[i] = 1;
  for (int k = 0; k < g->nnodes; k++) {
    const ir_node *nd = &g->nodes[k];
    int m = 0, s = 0;
    for (int j = 0; j < nd->nin; j++) {
      m = deg[nd->in[j]] > m ? deg[nd->in[j]] : m;
      s += deg[nd->in[j]];
    }
    int prod = nd->op == IR_OP_CONV2D || nd->op == IR_OP_MATMUL ||
               nd->op == IR_OP_EWMUL || nd->op == IR_OP_SMUL;
    int v = prod ? (nd->op == IR_OP_CONV2D || nd->op == IR_OP_MATMUL
                        ? deg[nd->in[0]] + deg[nd->in[1]]
                        : s)
                 : m;
    best = v > best ? v : best; /* the argument of an activation too */
    if ((nd->op == IR_OP_CONV2D || nd->op == IR_OP_MATMUL) && nd->a.act)
      v = 1, (*acts)++;
    if (nd->op == IR_OP_RELU)
      v = 1, (*acts)++;
    for (int j = 0; j < nd->nout; j++)
      deg[nd->out[j]] = v;
  }
  free(deg);
  return best;
}

double mutant_false_equal_bound(const ir_graph *f, const ir_graph *g) {
  int acts = 0, a = graph_degree(f, &acts), b = graph_degree(g, &acts);
  return (double)((a > b ? a : b) + acts) / (double)FP_P;
}
