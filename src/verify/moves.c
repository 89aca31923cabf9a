/* moves.c: movement chains by their strided walks (verify_moves_*).
 *
 * A chain of reshapes, transposes and slices re-indexes its base tensor:
 * output element i is base element map[i]. Two chains over one base with
 * the same output shape and the same map are the same tensor, however
 * their moves are written (ViT's head split: a rank-5 transpose of the
 * packed projection, slices on its first axis and three reshapes; the row
 * layout's definition: a transpose to batch-first, a slice of columns, a
 * reshape and the head transpose). The axioms relate moves a few at a time
 * (transpose_inv, reshape_reshape...); this relates whole chains at once.
 *
 * While a rule is encoded (verify_encode_graph, with e->moves set), each
 * move node's output term t gets a record: its base term b (the nearest
 * term that is not a move's output) and its chain from b, a move program
 * (ir_move_intern, as the lower stage writes one). The map is the
 * program's strided walk of b laid out contiguously (ir_move_walk, the
 * executor's own view of a move node: size-1 dimensions dropped,
 * contiguous neighbours merged): the chain's id is interned by (b's
 * shape, the output shape, the walk), compared exactly, so ids are equal
 * only where maps are. The fact asserted is t = (movemap id b), movemap
 * an uninterpreted function: congruence makes two chains with one walk
 * equal, and nothing else follows from it. A chain that is no walk (a
 * slice inside merged dimensions, a reshape whose sizes do not divide)
 * or longer than IR_MOVE_MAX_OPS gets no fact. Sound because the walk is
 * computed from the moves' definitions on the rule's concrete shapes
 * (docs/verify.md).
 */
#include <stdlib.h>
#include <string.h>

#include "encode.h"

typedef struct mv_rec { /* a move's output term and its chain from base */
  Z3_ast t, base;
  ir_shape bshape;
  const ir_body *chain; /* interned (ir_move_intern): never freed */
} mv_rec;

typedef struct mv_id { /* an interned walk: its base's and output's shapes */
  ir_shape base, out;
  int rank;
  int64_t dim[IR_MAX_RANK], st[IR_MAX_RANK], off;
} mv_id;

struct verify_moves {
  mv_rec *rec;
  int nrec, caprec;
  mv_id *ids;
  int nids, capids;
  Z3_func_decl f; /* (movemap id x) */
};

verify_moves *verify_moves_new(void) {
  return base_calloc(1, sizeof(verify_moves));
}

void verify_moves_free(verify_moves *m) {
  if (!m)
    return;
  free(m->rec);
  free(m->ids);
  free(m);
}

/* Whether a rule has a row-layout attention: its proofs relate moves. */
int verify_moves_wanted(const ir_graph *a, const ir_graph *b) {
  const ir_graph *g[2] = {a, b};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < g[k]->nnodes; i++)
      if (g[k]->nodes[i].op == IR_OP_ATTENTION && g[k]->nodes[i].a.groups > 0)
        return 1;
  return 0;
}

static const mv_rec *rec_of(const verify_moves *m, Z3_ast t) {
  for (int i = m->nrec - 1; i >= 0; i--)
    if (m->rec[i].t == t)
      return &m->rec[i];
  return NULL;
}

/* Room for one more element of size sz in *v (n used of *cap); -1 on
 * OOM. */
static int grow(void **v, int *cap, int n, size_t sz) {
  if (n < *cap)
    return 0;
  int c = *cap ? 2 * *cap : 16;
  void *p = base_realloc(*v, (size_t)c * sz);
  if (!p)
    return -1;
  *v = p, *cap = c;
  return 0;
}

static int same_walk(const mv_id *a, const mv_id *b) {
  size_t r = sizeof(int64_t) * (size_t)a->rank;
  return ir_shape_eq(&a->base, &b->base) && ir_shape_eq(&a->out, &b->out) &&
         a->rank == b->rank && a->off == b->off && !memcmp(a->dim, b->dim, r) &&
         !memcmp(a->st, b->st, r);
}

/* The id of r's walk (output shape out): an interned one equal to it, or
 * a new one; -1 where the chain is no walk, or on OOM. */
static int intern(verify_moves *m, const mv_rec *r, const ir_shape *out) {
  mv_id w = {.base = r->bshape, .out = *out};
  int64_t xst[IR_MAX_RANK], s = 1;
  for (int k = r->bshape.rank - 1; k >= 0; k--)
    xst[k] = s, s *= r->bshape.dim[k];
  if (!ir_move_walk(r->chain, &r->bshape, xst, &w.rank, w.dim, w.st, NULL,
                    &w.off))
    return -1;
  for (int i = 0; i < m->nids; i++)
    if (same_walk(&m->ids[i], &w))
      return i;
  if (grow((void **)&m->ids, &m->capids, m->nids, sizeof *m->ids))
    return -1;
  m->ids[m->nids] = w;
  return m->nids++;
}

/* Records out as the chain of in's record (or of in, a base) with nd
 * appended; NULL where it is full (IR_MOVE_MAX_OPS) or on OOM. */
static const mv_rec *add_rec(verify_moves *m, const ir_node *nd,
                             const ir_shape *is, Z3_ast in, Z3_ast out) {
  const mv_rec *prev = rec_of(m, in);
  int n = prev ? prev->chain->nops : 0;
  if (n == IR_MOVE_MAX_OPS)
    return NULL;
  ir_body_op ops[IR_MOVE_MAX_OPS];
  if (n)
    memcpy(ops, prev->chain->ops, sizeof(ir_body_op) * (size_t)n);
  ir_body_op *o = &ops[n];
  memset(o, 0, sizeof *o);
  o->op = nd->op, o->nin = 1, o->a = nd->a;
  o->a.body = 0;
  o->in[0] = n - 1; /* the move before, or $0 (-1) */
  base_diag d = {0};
  mv_rec r = {out, prev ? prev->base : in, prev ? prev->bshape : *is,
              ir_move_intern(n + 1, ops, &d)};
  if (!r.chain || grow((void **)&m->rec, &m->caprec, m->nrec, sizeof *m->rec))
    return NULL;
  m->rec[m->nrec] = r;
  return &m->rec[m->nrec++];
}

void verify_moves_note(verify_ctx *c, verify_moves *m, const ir_graph *g,
                       const ir_node *nd, Z3_ast in, Z3_ast out) {
  const ir_shape *is = &g->tensors[nd->in[0]].shape,
                 *os = &g->tensors[nd->out[0]].shape;
  if (!m || !in || !out || in == out || verify_z3_bad() ||
      (nd->op != IR_OP_RESHAPE && nd->op != IR_OP_TRANSPOSE &&
       nd->op != IR_OP_SLICE) ||
      (nd->op != IR_OP_RESHAPE && nd->a.nlist != is->rank) ||
      ir_shape_numel(is) <= 0)
    return;
  const mv_rec *r = add_rec(m, nd, is, in, out);
  int id = r ? intern(m, r, os) : -1;
  if (id < 0)
    return;
  if (!m->f) {
    Z3_sort dom[2] = {c->I, c->T};
    Z3_symbol s = Z3_mk_string_symbol(c->z, "movemap");
    m->f = verify_z3_bad() ? NULL : Z3_mk_func_decl(c->z, s, 2, dom, c->T);
  }
  Z3_ast a[2] = {verify_z3_bad() ? NULL : Z3_mk_int64(c->z, id, c->I), r->base};
  Z3_ast t = verify_z3_bad() ? NULL : Z3_mk_app(c->z, m->f, 2, a);
  Z3_ast eq = verify_z3_bad() ? NULL : Z3_mk_eq(c->z, out, t);
  if (!verify_z3_bad())
    Z3_solver_assert(c->z, c->s, eq);
}
