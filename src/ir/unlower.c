/* unlower.c: the lower stage's data-movement forms (src/fuse/lower_move.c)
 * written back as plain operators, for tools that know only those (ONNX
 * export, through ir_graph_unfuse): a concat or split with act= becomes
 * the plain node and an activation node per activated output; a pad with
 * negative pads becomes a pad of the positive ones and a slice. */
#include <stdio.h>

#include "ir_int.h"

int ir_move_lowered(const ir_node *n) {
  if (n->op == IR_OP_CONCAT || n->op == IR_OP_SPLIT)
    return n->a.act != IR_ACT_NONE;
  if (n->op != IR_OP_PAD)
    return 0;
  for (int i = 0; i < n->a.nlist; i++)
    if (n->a.list[i] < 0)
      return 1;
  return 0;
}

/* A name for the k-th helper tensor of `out` that g does not hold. */
static const char *fresh(const ir_graph *g, const char *out, int k, char *buf,
                         size_t size) {
  snprintf(buf, size, "%s.u%d", out, k);
  for (int i = 1; ir_find_tensor(g, buf) >= 0; i++)
    snprintf(buf, size, "%s.u%d_%d", out, k, i);
  return buf;
}

/* act(x) named name into h; its output tensor, or -1. */
static int activate(ir_graph *h, int act, int32_t x, const char *name,
                    const ir_node *nd, base_diag *d) {
  ir_attrs a;
  ir_opcode op = (ir_opcode)ir_act_op((ir_act)act);
  ir_attrs_default(op, &a);
  int k = ir_add_node(h, op, &x, 1, &a, &name, d);
  if (k < 0)
    return -1;
  h->nodes[k].line = nd->line, h->nodes[k].col = nd->col;
  return h->nodes[k].out[0];
}

/* The plain node (act=none) with output names outs; its index or -1. */
static int plain(ir_graph *h, const ir_node *nd, const int32_t *map,
                 const ir_attrs *a, const char *const *outs, base_diag *d) {
  int32_t in[IR_MAX_IN];
  for (int k = 0; k < nd->nin; k++)
    in[k] = map[nd->in[k]];
  int k = ir_add_node(h, nd->op, in, nd->nin, a, outs, d);
  if (k >= 0)
    h->nodes[k].line = nd->line, h->nodes[k].col = nd->col;
  return k;
}

static base_status unlower_split(ir_graph *h, const ir_graph *g,
                                 const ir_node *nd, int32_t *map,
                                 base_diag *d) {
  ir_attrs a = nd->a;
  a.act = IR_ACT_NONE, a.nlist2 = 0;
  const char *outs[IR_MAX_LIST];
  char buf[IR_MAX_LIST][512];
  int mode[IR_MAX_LIST], at[IR_MAX_LIST]; /* part k's first output */
  for (int k = 0, o = 0; k < a.nlist; k++) {
    mode[k] = nd->a.nlist2 ? (int)nd->a.list2[k] : 1;
    at[k] = o;
    const char *name = g->tensors[nd->out[o]].name;
    outs[k] = mode[k] == 1 ? fresh(g, name, 0, buf[k], sizeof buf[k]) : name;
    o += mode[k] == 2 ? 2 : 1;
  }
  int s = plain(h, nd, map, &a, outs, d);
  if (s < 0)
    return d ? d->code : BASE_ERR_NOMEM;
  for (int k = 0; k < a.nlist; k++) {
    int32_t part = h->nodes[s].out[k];
    if (mode[k] != 1)
      map[nd->out[at[k]]] = part;
    if (mode[k] == 0)
      continue;
    int y = nd->out[at[k] + (mode[k] == 2)];
    if ((map[y] = activate(h, nd->a.act, part, g->tensors[y].name, nd, d)) < 0)
      return d ? d->code : BASE_ERR_NOMEM;
  }
  return BASE_OK;
}

static base_status unlower_concat(ir_graph *h, const ir_graph *g,
                                  const ir_node *nd, int32_t *map,
                                  base_diag *d) {
  ir_attrs a = nd->a;
  a.act = IR_ACT_NONE;
  char buf[512];
  const char *out = g->tensors[nd->out[0]].name;
  const char *raw = fresh(g, out, 0, buf, sizeof buf);
  int c = plain(h, nd, map, &a, &raw, d);
  if (c < 0 || (map[nd->out[0]] =
                    activate(h, nd->a.act, h->nodes[c].out[0], out, nd, d)) < 0)
    return d ? d->code : BASE_ERR_NOMEM;
  return BASE_OK;
}

/* pad(x) pads=[b..., e...] with some negative: pad by max(b, 0), max(e, 0)
 * (none: no pad), then slice off max(-b, 0) before and max(-e, 0) after. */
static base_status unlower_pad(ir_graph *h, const ir_graph *g,
                               const ir_node *nd, int32_t *map, base_diag *d) {
  const ir_shape *x = &g->tensors[nd->in[0]].shape;
  int r = x->rank, any = 0;
  ir_attrs a = nd->a, sa;
  ir_attrs_default(IR_OP_SLICE, &sa);
  sa.nlist = sa.nlist2 = r;
  for (int i = 0; i < r; i++) {
    int64_t b = nd->a.list[i], e = nd->a.list[i + r];
    a.list[i] = b > 0 ? b : 0;
    a.list[i + r] = e > 0 ? e : 0;
    any |= b > 0 || e > 0;
    sa.list[i] = b < 0 ? -b : 0;
    sa.list2[i] = x->dim[i] + a.list[i] + a.list[i + r] - (e < 0 ? -e : 0);
  }
  char buf[512];
  const char *out = g->tensors[nd->out[0]].name;
  int32_t t = map[nd->in[0]];
  if (any) {
    const char *raw = fresh(g, out, 0, buf, sizeof buf);
    int p = plain(h, nd, map, &a, &raw, d);
    if (p < 0)
      return d ? d->code : BASE_ERR_NOMEM;
    t = h->nodes[p].out[0];
  }
  int k = ir_add_node(h, IR_OP_SLICE, &t, 1, &sa, &out, d);
  if (k < 0)
    return d ? d->code : BASE_ERR_NOMEM;
  h->nodes[k].line = nd->line, h->nodes[k].col = nd->col;
  map[nd->out[0]] = h->nodes[k].out[0];
  return BASE_OK;
}

base_status ir_unlower_move(ir_graph *h, const ir_graph *g, const ir_node *nd,
                            int32_t *map, base_diag *d) {
  if (nd->op == IR_OP_SPLIT)
    return unlower_split(h, g, nd, map, d);
  if (nd->op == IR_OP_CONCAT)
    return unlower_concat(h, g, nd, map, d);
  return unlower_pad(h, g, nd, map, d);
}
