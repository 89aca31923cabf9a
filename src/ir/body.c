/* body.c: bodies of `fused` nodes (see ir.h): checking, interning, shape
 * inference, and the fused operator's shape rule.
 *
 * Interned bodies live for the whole process in one table guarded by a
 * mutex; an id is the XXH3 hash of the body's content, so it is the same in
 * every process and ir_graph_hash of a graph with fused nodes is stable.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "ir_int.h"

int ir_body_op_ok(ir_opcode op) {
  return (unsigned)op < IR_NOPS && (ir_op(op)->flags & IR_OPF_BODY);
}

int ir_move_op_ok(ir_opcode op) {
  return op == IR_OP_SLICE || op == IR_OP_PAD || op == IR_OP_TRANSPOSE ||
         op == IR_OP_RESHAPE || op == IR_OP_CONCAT;
}

int ir_move_cl(void) {
  const char *e = getenv("SUPEROPT_MOVE_CL");
  return !e || strcmp(e, "0");
}

int ir_body_row_op(ir_opcode op) {
  return (unsigned)op < IR_NOPS && (ir_op(op)->flags & IR_OPF_BODY_ROW);
}

static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static char names[512], row_names[128];

static void list(char *buf, size_t size, unsigned flag) {
  size_t len = 0;
  for (int op = 0; op < IR_NOPS; op++)
    if ((ir_op((ir_opcode)op)->flags & flag) && len < size)
      len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "",
                              ir_op((ir_opcode)op)->name);
}

static void list_names(void) {
  list(names, sizeof names, IR_OPF_BODY);
  list(row_names, sizeof row_names, IR_OPF_BODY_ROW);
}

const char *ir_body_op_names(void) {
  pthread_once(&names_once, list_names);
  return names;
}

const char *ir_body_row_op_names(void) {
  pthread_once(&names_once, list_names);
  return row_names;
}

const ir_body_op *ir_body_row(const ir_body *b) {
  return b && ir_body_row_op(b->ops[b->nops - 1].op) ? &b->ops[b->nops - 1]
                                                     : NULL;
}

static uint64_t body_hash(int nin, int nops, const ir_body_op *ops) {
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  int32_t hdr[2] = {nin, nops};
  XXH3_64bits_update(&s, hdr, sizeof hdr);
  for (int i = 0; i < nops; i++) {
    int32_t w[2] = {(int32_t)ops[i].op, ops[i].nin};
    XXH3_64bits_update(&s, w, sizeof w);
    XXH3_64bits_update(&s, ops[i].in, sizeof(int32_t) * (size_t)ops[i].nin);
    XXH3_64bits_update(&s, &ops[i].a, sizeof ops[i].a);
  }
  uint64_t h = XXH3_64bits_digest(&s);
  return h ? h : 1;
}

/* Whether body operator o (the i-th of nops) may be in a body: a fused
 * one's (element-wise, a row reduction last), or a move program's. */
static int op_allowed(const ir_body_op *o, int i, int nops, int move) {
  if (move)
    return ir_move_op_ok(o->op) &&
           (o->op != IR_OP_CONCAT || o->a.act == IR_ACT_NONE);
  return ir_body_op_ok(o->op) || (ir_body_row_op(o->op) && i + 1 == nops);
}

static base_status check_move(int nin, int nops, const ir_body_op *ops,
                              base_diag *d) {
  if (nin != 1)
    return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                         "move: %d inputs (expected 1)", nin);
  if (nops < 1 || nops > IR_MOVE_MAX_OPS)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "move: program has %d operators (expected 1 to %d)",
                         nops, IR_MOVE_MAX_OPS);
  for (int i = 0; i < nops; i++)
    if ((unsigned)ops[i].op >= IR_NOPS || !op_allowed(&ops[i], i, nops, 1))
      return base_diag_set(
          d, BASE_ERR_PARAM, 0, 0,
          "move: program operator %d is %s, which is not a movement (allowed: "
          "slice pad transpose reshape concat, concat without act=)",
          i + 1,
          (unsigned)ops[i].op < IR_NOPS ? ir_op(ops[i].op)->name : "unknown");
  return BASE_OK;
}

static base_status check(int nin, int nops, const ir_body_op *ops, base_diag *d,
                         int move) {
  base_status ms = move ? check_move(nin, nops, ops, d) : BASE_OK;
  if (ms)
    return ms;
  const char *what = move ? "move" : "fused";
  if (nin < 1 || nin > IR_MAX_IN)
    return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                         "%s: %d inputs (expected 1 to %d)", what, nin,
                         IR_MAX_IN);
  if (nops < 1 || nops > IR_BODY_MAX_OPS)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "%s: body has %d operators (expected 1 to %d)", what,
                         nops, IR_BODY_MAX_OPS);
  char used_in[IR_MAX_IN] = {0}, used_op[IR_BODY_MAX_OPS] = {0};
  for (int i = 0; i < nops; i++) {
    const ir_body_op *o = &ops[i];
    if ((unsigned)o->op >= IR_NOPS || !op_allowed(o, i, nops, move))
      return base_diag_set(
          d, BASE_ERR_PARAM, 0, 0,
          "fused: body operator %d is %s, which is not element-wise (allowed: "
          "%s; as the last operator also, over the last axis: %s)",
          i + 1, (unsigned)o->op < IR_NOPS ? ir_op(o->op)->name : "unknown",
          ir_body_op_names(), ir_body_row_op_names());
    if (o->op == IR_OP_LAYERNORM &&
        ((o->nin > 1 && o->in[1] >= 0) || (o->nin > 2 && o->in[2] >= 0) ||
         o->nin > 3))
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "fused: body operator %d (layernorm) must read "
                           "gamma and beta from inputs of the fused node "
                           "(and take no xb)",
                           i + 1);
    if (o->op == IR_OP_LAYERNORM && ir_ln_rms(&o->a))
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "fused: body operator %d (layernorm rms=1) is not "
                           "supported in a fused body (a node of its own)",
                           i + 1);
    if (o->nin > IR_MAX_FIXED_IN || ir_check_arity(ir_op(o->op), o->nin, d))
      return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                           "%s: body operator %d (%s) has %d inputs", what,
                           i + 1, ir_op(o->op)->name, o->nin);
    if (o->a.body)
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "%s: body operator %d has a body", what, i + 1);
    for (int k = 0; k < o->nin; k++) {
      int r = o->in[k];
      if (r >= i || r < -nin)
        return base_diag_set(
            d, BASE_ERR_UNDEFINED, 0, 0,
            "%s: body operator %d (%s) reads %s%d, which is not defined "
            "before it",
            what, i + 1, ir_op(o->op)->name, r < 0 ? "$" : "body operator ",
            r < 0 ? -1 - r : r + 1);
      if (r < 0)
        used_in[-1 - r] = 1;
      else
        used_op[r] = 1;
    }
  }
  for (int i = 0; i < nin; i++)
    if (!used_in[i])
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "%s: input $%d is never read by the body", what, i);
  for (int i = 0; i + 1 < nops; i++)
    if (!used_op[i])
      return base_diag_set(
          d, BASE_ERR_PARAM, 0, 0,
          "%s: body operator %d (%s) is never read (the last operator is "
          "the output)",
          what, i + 1, ir_op(ops[i].op)->name);
  return BASE_OK;
}

/* ---- the intern table --------------------------------------------------- */

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static ir_body **table; /* open addressing by id; cap a power of two */
static size_t table_cap, table_n;

static ir_body **slot_of(uint64_t id) {
  size_t mask = table_cap - 1;
  for (size_t i = (size_t)id & mask;; i = (i + 1) & mask)
    if (!table[i] || table[i]->id == id)
      return &table[i];
}

static int grow(void) {
  size_t cap = table_cap ? table_cap * 2 : 64;
  ir_body **old = table, **nt = base_calloc(cap, sizeof *nt);
  size_t oldcap = table_cap;
  if (!nt)
    return -1;
  table = nt;
  table_cap = cap;
  for (size_t i = 0; i < oldcap; i++)
    if (old[i])
      *slot_of(old[i]->id) = old[i];
  free(old);
  return 0;
}

static int same(const ir_body *b, int nin, int nops, const ir_body_op *ops) {
  if (b->nin != nin || b->nops != nops)
    return 0;
  for (int i = 0; i < nops; i++)
    if (b->ops[i].op != ops[i].op || b->ops[i].nin != ops[i].nin ||
        memcmp(b->ops[i].in, ops[i].in, sizeof(int32_t) * (size_t)ops[i].nin) ||
        memcmp(&b->ops[i].a, &ops[i].a, sizeof ops[i].a))
      return 0;
  return 1;
}

static const ir_body *intern(int nin, int nops, const ir_body_op *ops,
                             base_diag *d, int move) {
  if (check(nin, nops, ops, d, move))
    return NULL;
  /* canonical bytes: unused input slots zero */
  ir_body *b = base_calloc(1, sizeof *b + sizeof(ir_body_op) * (size_t)nops);
  if (!b) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  b->nin = nin;
  b->nops = nops;
  for (int i = 0; i < nops; i++) {
    b->ops[i].op = ops[i].op;
    b->ops[i].nin = ops[i].nin;
    memcpy(b->ops[i].in, ops[i].in, sizeof(int32_t) * (size_t)ops[i].nin);
    b->ops[i].a = ops[i].a;
  }
  b->id = body_hash(nin, nops, b->ops);
  pthread_mutex_lock(&table_mu);
  const ir_body *r = NULL;
  if ((table_n + 1) * 2 > table_cap && grow()) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  } else {
    ir_body **s = slot_of(b->id);
    if (!*s) {
      *s = b;
      table_n++;
      r = b;
      b = NULL;
    } else if (same(*s, nin, nops, b->ops)) {
      r = *s;
    } else {
      base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                    "fused: two different bodies hash to %016llx",
                    (unsigned long long)b->id);
    }
  }
  pthread_mutex_unlock(&table_mu);
  free(b);
  return r;
}

/* Set in a copy of the IR inside a separately loaded object: the host's
 * registry, which holds every body the host's graphs refer to. */
static const ir_body *(*host_get)(uint64_t id);

void ir_body_use_host(const ir_body *(*get)(uint64_t id)) { host_get = get; }

const ir_body *ir_body_intern(int nin, int nops, const ir_body_op *ops,
                              base_diag *d) {
  return intern(nin, nops, ops, d, 0);
}

const ir_body *ir_move_intern(int nops, const ir_body_op *ops, base_diag *d) {
  return intern(1, nops, ops, d, 1);
}

const ir_body *ir_body_get(uint64_t id) {
  if (host_get)
    return host_get(id);
  const ir_body *r = NULL;
  pthread_mutex_lock(&table_mu);
  if (table_cap && id)
    r = *slot_of(id);
  pthread_mutex_unlock(&table_mu);
  return r;
}

/* ---- shapes ---------------------------------------------------------------
 */

static base_status body_shapes(const ir_body *b, const ir_shape *const *in,
                               ir_shape *shapes, base_diag *d,
                               const char *what) {
  for (int i = 0; i < b->nops; i++) {
    const ir_body_op *o = &b->ops[i];
    const ir_shape *ins[IR_MAX_FIXED_IN];
    for (int k = 0; k < o->nin; k++)
      ins[k] = o->in[k] < 0 ? in[-1 - o->in[k]] : &shapes[o->in[k]];
    ir_attrs a = o->a;
    base_status rs = ir_infer(o->op, &a, ins, o->nin, &shapes[i], d);
    if (!rs && ir_body_row_op(o->op)) { /* over the last axis only */
      int last = ins[0]->rank - 1;
      int ok = o->op == IR_OP_REDUCE_MEAN ? a.nlist == 1 && a.list[0] == last
                                          : a.axis == last;
      if (!ok)
        rs = d ? base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                               "%s in a fused body must reduce over the last "
                               "axis (%d) only",
                               ir_op(o->op)->name, last)
               : BASE_ERR_PARAM;
    }
    if (rs) {
      if (d) {
        char msg[sizeof d->msg];
        memcpy(msg, d->msg, sizeof msg);
        msg[sizeof msg - 40] = '\0';
        snprintf(d->msg, sizeof d->msg, "%s: body operator %d: %.*s", what,
                 i + 1, (int)sizeof msg - 40, msg);
      }
      return d ? d->code : BASE_ERR_SHAPE;
    }
  }
  return BASE_OK;
}

base_status ir_body_shapes(const ir_body *b, const ir_shape *const *in,
                           ir_shape *shapes, base_diag *d) {
  return body_shapes(b, in, shapes, d, "fused");
}

base_status ir_shape_move(ir_attrs *a, const ir_shape *const *in, int nin,
                          ir_shape *out, base_diag *d) {
  const ir_body *b = ir_body_get(a->body);
  if (!b || check_move(b->nin, b->nops, b->ops, NULL))
    return d ? base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                             "move: node has no program of movement operators "
                             "(write { ... } after its input)")
             : BASE_ERR_PARAM;
  if (nin != 1)
    return d ? base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                             "move: %d inputs (expected 1)", nin)
             : BASE_ERR_ARITY;
  ir_shape shapes[IR_BODY_MAX_OPS];
  base_status st = body_shapes(b, in, shapes, d, "move");
  if (st)
    return st;
  *out = shapes[b->nops - 1];
  return BASE_OK;
}

base_status ir_shape_fused(ir_attrs *a, const ir_shape *const *in, int nin,
                           ir_shape *out, base_diag *d) {
  const ir_body *b = ir_body_get(a->body);
  if (!b)
    return d ? base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                             "fused: node has no body (write { ... } after "
                             "its inputs)")
             : BASE_ERR_PARAM;
  if (nin != b->nin)
    return d ? base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                             "fused: body reads %d inputs but the node has %d",
                             b->nin, nin)
             : BASE_ERR_ARITY;
  ir_shape shapes[IR_BODY_MAX_OPS];
  base_status st = ir_body_shapes(b, in, shapes, d);
  if (st)
    return st;
  *out = shapes[b->nops - 1];
  return BASE_OK;
}

ir_init_hint ir_node_in_hint(const ir_node *n, int slot, ir_opcode *op) {
  const ir_opinfo *r = ir_op(n->op);
  if (n->op == IR_OP_FUSED) {
    const ir_body *b = ir_body_get(n->a.body);
    for (int i = 0; b && i < b->nops; i++)
      for (int k = 0; k < b->ops[i].nin; k++)
        if (b->ops[i].in[k] == -1 - slot) {
          const ir_opinfo *br = ir_op(b->ops[i].op);
          *op = b->ops[i].op;
          return br->in_hint[k < br->nnamed ? k : br->nnamed - 1];
        }
  }
  *op = n->op;
  return r->in_hint[slot < r->nnamed ? slot : r->nnamed - 1];
}

/* ---- unfusing ------------------------------------------------------------ */

/* A name for body operator k of the fused node writing `out` that g does
 * not hold yet. */
static const char *unfused_name(const ir_graph *g, const char *out, int k,
                                char *buf, size_t size) {
  snprintf(buf, size, "%s.u%d", out, k);
  for (int i = 1; ir_find_tensor(g, buf) >= 0; i++)
    snprintf(buf, size, "%s.u%d_%d", out, k, i);
  return buf;
}

/* Adds the body of fused node nd (its inputs mapped through map) to h as
 * one node per body operator; the last writes nd's output. */
static int unfuse_node(ir_graph *h, const ir_graph *g, const ir_node *nd,
                       const int32_t *map, base_diag *d) {
  const ir_body *b = ir_body_get(nd->a.body);
  if (!b) {
    base_diag_set(d, BASE_ERR_INTERNAL, nd->line, nd->col,
                  "fused node with an unknown body");
    return -1;
  }
  int32_t val[IR_BODY_MAX_OPS];
  const char *out = g->tensors[nd->out[0]].name;
  int node = -1;
  for (int k = 0; k < b->nops; k++) {
    const ir_body_op *bo = &b->ops[k];
    int32_t in[IR_MAX_FIXED_IN];
    for (int j = 0; j < bo->nin; j++)
      in[j] = bo->in[j] < 0 ? map[nd->in[-1 - bo->in[j]]] : val[bo->in[j]];
    char buf[512];
    const char *name =
        k == b->nops - 1 ? out : unfused_name(g, out, k, buf, sizeof buf);
    node = ir_add_node(h, bo->op, in, bo->nin, &bo->a, &name, d);
    if (node < 0)
      return -1;
    h->nodes[node].line = nd->line;
    h->nodes[node].col = nd->col;
    val[k] = h->nodes[node].out[0];
  }
  return node;
}

/* Adds node nd of g to h with inputs in[0..nin-1] and attributes a,
 * writing `out`, or a fresh name derived from nd's output and k where out
 * is NULL. Its output's index in h, or -1. */
static int add_part(ir_graph *h, const ir_graph *g, const ir_node *nd,
                    ir_opcode op, const int32_t *in, int nin, const ir_attrs *a,
                    const char *out, int k, base_diag *d) {
  char buf[512];
  const char *name =
      out ? out : unfused_name(g, g->tensors[nd->out[0]].name, k, buf, 512);
  int node = ir_add_node(h, op, in, nin, a, &name, d);
  return node < 0 ? -1 : h->nodes[node].out[0];
}

/* Adds lowered conv2d or matmul node nd (src/fuse/lower.h) to h as the
 * product without its residual input (its fourth) and activation, an
 * ewadd of the residual, then the activation as the operator computing it
 * (ir_act_op; act=clip with its bounds): the last writes nd's output.
 * Returns that node, or -1. */
static int unlower_product(ir_graph *h, const ir_graph *g, const ir_node *nd,
                           const int32_t *map, base_diag *d) {
  const char *out = g->tensors[nd->out[0]].name;
  int act = ir_act_op((ir_act)nd->a.act), res = nd->nin == 4;
  ir_attrs a = nd->a, none, bounds;
  a.act = IR_ACT_NONE;
  a.lo = a.hi = 0;
  memset(&none, 0, sizeof none);
  bounds = none;
  bounds.lo = nd->a.lo, bounds.hi = nd->a.hi;
  int32_t in[3] = {map[nd->in[0]], map[nd->in[1]], 0};
  if (nd->nin > 2)
    in[2] = map[nd->in[2]];
  int32_t y = add_part(h, g, nd, nd->op, in, nd->nin < 3 ? nd->nin : 3, &a,
                       res || act >= 0 ? NULL : out, 0, d);
  int32_t sum[2] = {y, res ? map[nd->in[3]] : 0};
  if (y >= 0 && res)
    y = add_part(h, g, nd, IR_OP_EWADD, sum, 2, &none, act >= 0 ? NULL : out, 1,
                 d);
  if (y >= 0 && act >= 0)
    y = add_part(h, g, nd, (ir_opcode)act, &y, 1,
                 nd->a.act == IR_ACT_CLIP ? &bounds : &none, out, 2, d);
  return y < 0 ? -1 : h->tensors[y].node;
}

static int32_t add_prim(ir_graph *h, const ir_node *nd, ir_opcode op,
                        const int32_t *in, int nin, const ir_attrs *a,
                        const char *name, base_diag *d);

/* Adds layer norm nd with an xb input (its fourth) to h as an ewadd of
 * xb (broadcast over the rows) and the layer norm of the sum. */
static int unlower_layernorm(ir_graph *h, const ir_graph *g, const ir_node *nd,
                             const int32_t *map, base_diag *d) {
  ir_attrs none;
  memset(&none, 0, sizeof none);
  int32_t sum[2] = {map[nd->in[0]], map[nd->in[3]]};
  int32_t in[3] = {add_part(h, g, nd, IR_OP_EWADD, sum, 2, &none, NULL, 0, d),
                   map[nd->in[1]], map[nd->in[2]]};
  int32_t y = in[0] < 0 ? -1
                        : add_prim(h, nd, nd->op, in, 3, &nd->a,
                                   g->tensors[nd->out[0]].name, d);
  return y < 0 ? -1 : h->tensors[y].node;
}

int ir_node_unfuses(const ir_node *n) {
  return n->op == IR_OP_FUSED || n->op == IR_OP_MOVE || n->op == IR_OP_SE ||
         n->op == IR_OP_CONCAT_SHUFFLE || ir_move_lowered(n) ||
         ((n->op == IR_OP_CONV2D || n->op == IR_OP_MATMUL) &&
          (n->nin == 4 || n->a.act == IR_ACT_CLIP)) ||
         (n->op == IR_OP_LAYERNORM && n->nin == 4);
}

/* Adds node op(in) a to h named name (line of nd); its output tensor. */
static int32_t add_prim(ir_graph *h, const ir_node *nd, ir_opcode op,
                        const int32_t *in, int nin, const ir_attrs *a,
                        const char *name, base_diag *d) {
  int node = ir_add_node(h, op, in, nin, a, &name, d);
  if (node < 0)
    return -1;
  h->nodes[node].line = nd->line;
  h->nodes[node].col = nd->col;
  return h->nodes[node].out[0];
}

/* se node nd as global_avgpool, two conv2d and, with bounds, a clip; the
 * last writes nd's output. Returns that node, or -1. */
static int unlower_se(ir_graph *h, const ir_graph *g, const ir_node *nd,
                      const int32_t *map, base_diag *d) {
  const char *out = g->tensors[nd->out[0]].name;
  int clip = !isinf(nd->a.lo) || !isinf(nd->a.hi);
  char buf[3][512];
  ir_attrs a;
  ir_attrs_default(IR_OP_GLOBAL_AVGPOOL, &a);
  int32_t in[3] = {map[nd->in[0]]};
  int32_t p = add_prim(h, nd, IR_OP_GLOBAL_AVGPOOL, in, 1, &a,
                       unfused_name(g, out, 0, buf[0], sizeof buf[0]), d);
  if (p < 0)
    return -1;
  ir_attrs_default(IR_OP_CONV2D, &a);
  a.act = nd->a.groups; /* act1 */
  in[0] = p, in[1] = map[nd->in[1]];
  if (nd->nin > 3)
    in[2] = map[nd->in[3]];
  int32_t q = add_prim(h, nd, IR_OP_CONV2D, in, nd->nin > 3 ? 3 : 2, &a,
                       unfused_name(g, out, 1, buf[1], sizeof buf[1]), d);
  if (q < 0)
    return -1;
  a.act = nd->a.axis;
  in[0] = q, in[1] = map[nd->in[2]];
  if (nd->nin > 4)
    in[2] = map[nd->in[4]];
  q = add_prim(h, nd, IR_OP_CONV2D, in, nd->nin > 4 ? 3 : 2, &a,
               clip ? unfused_name(g, out, 2, buf[2], sizeof buf[2]) : out, d);
  if (q >= 0 && clip) {
    ir_attrs_default(IR_OP_CLIP, &a);
    a.lo = nd->a.lo, a.hi = nd->a.hi;
    q = add_prim(h, nd, IR_OP_CLIP, &q, 1, &a, out, d);
  }
  return q < 0 ? -1 : h->tensors[q].node;
}

/* concat_shuffle node nd as concat, reshape, transpose, reshape and, for
 * outputs other than the whole result, slices writing nd's outputs.
 * Returns the last node, or -1. */
static int unlower_shuffle(ir_graph *h, const ir_graph *g, const ir_node *nd,
                           const int32_t *map, base_diag *d) {
  const char *out = g->tensors[nd->out[0]].name;
  const ir_shape *y = &g->tensors[nd->out[0]].shape;
  char buf[4][512];
  int32_t in[IR_MAX_IN];
  for (int k = 0; k < nd->nin; k++)
    in[k] = map[nd->in[k]];
  ir_attrs a;
  ir_attrs_default(IR_OP_CONCAT, &a);
  a.axis = 1;
  int64_t c = 0;
  for (int k = 0; k < nd->nin; k++)
    c += g->tensors[nd->in[k]].shape.dim[1];
  int whole = nd->nout == 1 && nd->a.list[0] == 0 && nd->a.list2[0] == c;
  int32_t t = add_prim(h, nd, IR_OP_CONCAT, in, nd->nin, &a,
                       unfused_name(g, out, 0, buf[0], sizeof buf[0]), d);
  int64_t gr = nd->a.groups;
  int64_t r5[5] = {y->dim[0], gr, c / gr, y->dim[2], y->dim[3]};
  int64_t r4[4] = {y->dim[0], c, y->dim[2], y->dim[3]};
  static const int64_t perm[5] = {0, 2, 1, 3, 4};
  for (int k = 0; k < 3 && t >= 0; k++) {
    ir_opcode op = k == 1 ? IR_OP_TRANSPOSE : IR_OP_RESHAPE;
    ir_attrs_default(op, &a);
    a.nlist = k == 2 ? 4 : 5;
    memcpy(a.list,
           k == 0   ? r5
           : k == 1 ? perm
                    : r4,
           sizeof(int64_t) * (size_t)a.nlist);
    const char *name = k == 2 && whole ? out
                                       : unfused_name(g, out, k + 1, buf[k + 1],
                                                      sizeof buf[k + 1]);
    t = add_prim(h, nd, op, &t, 1, &a, name, d);
  }
  if (t < 0)
    return -1;
  if (whole)
    return h->tensors[t].node;
  int32_t o = -1;
  for (int k = 0; k < nd->nout && (k == 0 || o >= 0); k++) {
    ir_attrs_default(IR_OP_SLICE, &a);
    a.nlist = a.nlist2 = 4;
    int64_t lo[4] = {0, nd->a.list[k], 0, 0},
            hi[4] = {y->dim[0], nd->a.list2[k], y->dim[2], y->dim[3]};
    memcpy(a.list, lo, sizeof lo);
    memcpy(a.list2, hi, sizeof hi);
    o = add_prim(h, nd, IR_OP_SLICE, &t, 1, &a, g->tensors[nd->out[k]].name, d);
  }
  return o < 0 ? -1 : h->tensors[o].node;
}

/* ir_rebuild's step for ir_graph_unfuse: node n, or the operators it
 * stands for. */
static int unfuse_step(void *u, ir_graph *h, const ir_graph *g, int n,
                       int32_t *map, base_diag *d) {
  (void)u;
  const ir_node *nd = &g->nodes[n];
  int node;
  if (ir_move_lowered(nd))
    return ir_unlower_move(h, g, nd, map, d) ? -1 : 0;
  if (nd->op == IR_OP_FUSED || nd->op == IR_OP_MOVE) {
    node = unfuse_node(h, g, nd, map, d);
  } else if (nd->op == IR_OP_SE) {
    node = unlower_se(h, g, nd, map, d);
  } else if (nd->op == IR_OP_CONCAT_SHUFFLE) {
    node = unlower_shuffle(h, g, nd, map, d);
  } else if (ir_node_unfuses(nd)) {
    node = nd->op == IR_OP_LAYERNORM ? unlower_layernorm(h, g, nd, map, d)
                                     : unlower_product(h, g, nd, map, d);
    if (node >= 0)
      h->nodes[node].line = nd->line, h->nodes[node].col = nd->col;
  } else {
    return ir_rebuild_copy(h, g, n, map, d);
  }
  if (node < 0)
    return -1;
  if (nd->op == IR_OP_CONCAT_SHUFFLE) { /* outputs: the last nout nodes */
    for (int k = 0; k < nd->nout; k++)
      map[nd->out[k]] = h->nodes[node - nd->nout + 1 + k].out[0];
    return 0;
  }
  for (int k = 0; k < nd->nout; k++)
    map[nd->out[k]] = h->nodes[node].out[k];
  return 0;
}

ir_graph *ir_graph_unfuse(const ir_graph *g, base_diag *d) {
  return ir_rebuild(g, unfuse_step, NULL, d);
}
