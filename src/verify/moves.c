/* moves.c: movement chains by their index maps (verify_moves_*).
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
 * term that is not a move's output) and its chain from b. Its map is
 * computed (the moves walked back per element), hashed (XXH3 128) and
 * interned with its output shape: an equal hash is checked element by
 * element against the first chain that had it, so ids are equal only where
 * maps are. The fact asserted is t = (movemap id b), movemap an
 * uninterpreted function: congruence makes two chains with one map equal,
 * and nothing else follows from it. Sound because the map is computed from
 * the moves' definitions on the rule's concrete shapes (docs/verify.md).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "encode.h"

#define MV_MAXCHAIN 24        /* moves of a chain */
#define MV_MAXNUMEL (1 << 25) /* elements of a mapped tensor */

typedef struct mv_step {
  ir_opcode op;
  ir_shape in, out; /* the move's input and output shapes */
  int64_t list[IR_MAX_RANK];
} mv_step;

typedef struct mv_chain {
  Z3_ast base;
  ir_shape bshape;
  mv_step st[MV_MAXCHAIN];
  int n;
} mv_chain;

typedef struct mv_rec { /* a move's output term and its chain */
  Z3_ast t;
  mv_chain *ch;
} mv_rec;

typedef struct mv_id { /* an interned map: its shape, hash, first chain */
  ir_shape out;
  XXH128_hash_t h;
  mv_chain *ch;
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
  for (int i = 0; i < m->nrec; i++)
    free(m->rec[i].ch);
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

static const mv_chain *chain_of(const verify_moves *m, Z3_ast t) {
  for (int i = m->nrec - 1; i >= 0; i--)
    if (m->rec[i].t == t)
      return m->rec[i].ch;
  return NULL;
}

/* Coordinates of flat index f in shape s (row-major). */
static void unflat(const ir_shape *s, int64_t f, int64_t *x) {
  for (int k = s->rank - 1; k >= 0; k--) {
    int64_t d = s->dim[k] > 0 ? s->dim[k] : 1;
    x[k] = f % d, f /= d;
  }
}

static int64_t flat(const ir_shape *s, const int64_t *x) {
  int64_t f = 0;
  for (int k = 0; k < s->rank; k++)
    f = f * s->dim[k] + x[k];
  return f;
}

/* The map of ch into map[0..numel(out)): each output element's base
 * index, the moves walked back from the last. */
static void fill_map(const mv_chain *ch, int64_t *map) {
  const ir_shape *o = &ch->st[ch->n - 1].out;
  int64_t n = ir_shape_numel(o), x[IR_MAX_RANK], y[IR_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    int64_t f = i;
    for (int s = ch->n - 1; s >= 0; s--) {
      const mv_step *p = &ch->st[s];
      if (p->op == IR_OP_RESHAPE)
        continue; /* row-major: the flat index stays */
      unflat(&p->out, f, x);
      if (p->op == IR_OP_TRANSPOSE) /* out[k] = in[perm[k]] */
        for (int k = 0; k < p->out.rank; k++)
          y[p->list[k]] = x[k];
      else /* slice: starts added */
        for (int k = 0; k < p->out.rank; k++)
          y[k] = x[k] + p->list[k];
      f = flat(&p->in, y);
    }
    map[i] = f;
  }
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

/* The id of ch's map: an interned one with the same shape and elements,
 * or a new one; -1 on OOM or a map too large. */
static int intern(verify_moves *m, mv_chain *ch) {
  const ir_shape *o = &ch->st[ch->n - 1].out;
  int64_t n = ir_shape_numel(o);
  if (n <= 0 || n > MV_MAXNUMEL)
    return -1;
  int64_t *a = base_malloc((size_t)n * sizeof *a), *b = NULL;
  if (!a)
    return -1;
  fill_map(ch, a);
  XXH128_hash_t h = XXH3_128bits(a, (size_t)n * sizeof *a);
  int id = -1;
  for (int i = 0; i < m->nids && id < 0; i++) {
    mv_id *e = &m->ids[i];
    if (!XXH128_isEqual(e->h, h) || !ir_shape_eq(&e->out, o) ||
        !ir_shape_eq(&e->ch->bshape, &ch->bshape))
      continue;
    if (!b && !(b = base_malloc((size_t)n * sizeof *b)))
      break;
    fill_map(e->ch, b); /* exact: equal hashes, then every element */
    if (!memcmp(a, b, (size_t)n * sizeof *a))
      id = i;
  }
  free(a);
  free(b);
  if (id >= 0)
    return id;
  if (grow((void **)&m->ids, &m->capids, m->nids, sizeof *m->ids))
    return -1;
  m->ids[m->nids] = (mv_id){*o, h, ch};
  return m->nids++;
}

static int add_rec(verify_moves *m, Z3_ast t, mv_chain *ch) {
  if (grow((void **)&m->rec, &m->caprec, m->nrec, sizeof *m->rec))
    return -1;
  m->rec[m->nrec++] = (mv_rec){t, ch};
  return 0;
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
  const mv_chain *prev = chain_of(m, in);
  if (prev && prev->n == MV_MAXCHAIN)
    return;
  mv_chain *ch = base_malloc(sizeof *ch);
  if (!ch)
    return;
  if (prev)
    *ch = *prev;
  else
    ch->base = in, ch->bshape = *is, ch->n = 0;
  mv_step *p = &ch->st[ch->n++];
  p->op = nd->op, p->in = *is, p->out = *os;
  memset(p->list, 0, sizeof p->list);
  if (nd->op != IR_OP_RESHAPE)
    memcpy(p->list, nd->a.list, sizeof(int64_t) * (size_t)is->rank);
  if (add_rec(m, out, ch)) {
    free(ch);
    return;
  }
  int id = intern(m, ch);
  if (id < 0)
    return;
  if (!m->f) {
    Z3_sort dom[2] = {c->I, c->T};
    Z3_symbol s = Z3_mk_string_symbol(c->z, "movemap");
    m->f = verify_z3_bad() ? NULL : Z3_mk_func_decl(c->z, s, 2, dom, c->T);
  }
  Z3_ast a[2] = {verify_z3_bad() ? NULL : Z3_mk_int64(c->z, id, c->I),
                 ch->base};
  Z3_ast t = verify_z3_bad() ? NULL : Z3_mk_app(c->z, m->f, 2, a);
  Z3_ast eq = verify_z3_bad() ? NULL : Z3_mk_eq(c->z, out, t);
  if (!verify_z3_bad())
    Z3_solver_assert(c->z, c->s, eq);
}
