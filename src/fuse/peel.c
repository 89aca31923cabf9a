/* peel.c: a product's bias and residual taken out of its epilogue where a
 * lone layer norm reads it (fuse.h, fuse_peel).
 *
 * The rules fold a bias add and a residual add into the matmul before them
 * (e00727, e00604: the product's epilogue), which the search prices as two
 * element-wise launches saved. Where a layer norm alone reads that product
 * (BERT's and DistilBERT's post-norm layers: dense, + bias, + residual,
 * LayerNorm), the fusion stage could instead make the two adds and the norm
 * one row kernel after a plain product; the search never sees that graph
 * among its cheapest unfused ones, so it is made here, and fuse_graph keeps
 * it only where the fused result is priced lower (measured on the H200,
 * BERT-base b1: 24 lone norms 72.5 us and the epilogues 9.7 us more than
 * plain products, against 48.8 us for the 24 fused row kernels;
 * docs/notes/results.md).
 *
 *   y = matmul(a, w, b[, r])          m = matmul(a, w)
 *   z = layernorm(y, g, e)      ->    s = ewadd(m, b); y = ewadd(s, r)
 *                                     z = layernorm(y, g, e)
 *
 * Where the matmul has no activation, is not computed from weights alone,
 * its output is no graph output and is read by the layer norm alone (as
 * its x, normalising the last axis). A zero bias (ewsub(o, o), the lower
 * stage's and the fifth tier's bias-free residual) is dropped rather than
 * added. The same sums, in the order the epilogue adds them.
 */
#include <stdlib.h>

#include "../rewrite/rewrite_int.h"
#include "fuse.h"

/* Whether tensor t is a zero bias: ewsub(o, o). */
static int zero_bias(const ir_graph *g, int32_t t) {
  int p = g->tensors[t].node;
  return p >= 0 && g->nodes[p].op == IR_OP_EWSUB &&
         g->nodes[p].in[0] == g->nodes[p].in[1];
}

/* Whether node i is a site. */
static int site(const ir_graph *g, const rewrite_index *ix,
                const uint8_t *wonly, int i) {
  const ir_node *m = &g->nodes[i];
  if (m->op != IR_OP_MATMUL || m->nin < 3 || m->a.act != IR_ACT_NONE ||
      wonly[i] || (m->nin == 3 && zero_bias(g, m->in[2])))
    return 0;
  int l = rewrite_sole_reader(ix, m->out[0]);
  if (l < 0)
    return 0;
  const ir_node *ln = &g->nodes[l];
  int r = g->tensors[m->out[0]].shape.rank;
  return ln->op == IR_OP_LAYERNORM && ln->in[0] == m->out[0] &&
         ln->a.axis == r - 1;
}

/* Emits site i: the plain product, then the bias and residual adds, the
 * last one under the product's name. */
static base_status emit(rewrite_builder *b, int i) {
  const ir_graph *g = b->g;
  const ir_node *m = &g->nodes[i];
  const char *name = g->tensors[m->out[0]].name;
  int32_t in[2] = {b->map[m->in[0]], b->map[m->in[1]]};
  int k = rewrite_build_node(b, IR_OP_MATMUL, in, 2, &m->a, name);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  int32_t x = b->h->nodes[k].out[0];
  int32_t add[2];
  int n = 0;
  if (!zero_bias(g, m->in[2]))
    add[n++] = b->map[m->in[2]];
  if (m->nin == 4)
    add[n++] = b->map[m->in[3]];
  ir_attrs a;
  ir_attrs_default(IR_OP_EWADD, &a);
  for (int u = 0; u < n; u++) {
    int32_t e[2] = {x, add[u]};
    if (u == n - 1) {
      k = ir_add_node(b->h, IR_OP_EWADD, e, 2, &a, &name, b->d);
    } else {
      k = rewrite_build_node(b, IR_OP_EWADD, e, 2, &a, name);
    }
    if (k < 0)
      return b->d ? b->d->code : BASE_ERR_INTERNAL;
    x = b->h->nodes[k].out[0];
  }
  b->map[m->out[0]] = x;
  return BASE_OK;
}

base_status fuse_peel(const ir_graph *g, ir_graph **out, int *count,
                      base_diag *d) {
  rewrite_index ix;
  uint8_t *peel = base_calloc((size_t)g->nnodes + 1, 1);
  uint8_t *wonly = base_calloc((size_t)g->nnodes + 1, 1);
  rewrite_builder b;
  *out = NULL;
  *count = 0;
  if (!peel || !wonly || rewrite_index_build(g, &ix, d)) {
    free(peel), free(wonly);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  ir_weight_only(g, wonly);
  for (int i = 0; i < g->nnodes; i++)
    if (site(g, &ix, wonly, i))
      peel[i] = 1, ++*count;
  rewrite_index_free(&ix);
  free(wonly);
  base_status st = *count ? rewrite_build_begin(&b, g, NULL, d) : BASE_OK;
  if (st || !*count) { /* no site: no graph built */
    free(peel);
    return st;
  }
  for (int i = 0; i < g->nnodes && !st; i++)
    st = peel[i] ? emit(&b, i) : rewrite_build_copy(&b, i, NULL);
  free(peel);
  *out = rewrite_build_finish(&b, st);
  return *out ? BASE_OK : (d && d->code ? d->code : BASE_ERR_NOMEM);
}
