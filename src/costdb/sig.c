/* sig.c: canonical operator signatures, the keys of the cost database.
 *
 * A signature is a function of the operator, its parameters and its input
 * shapes only (output shapes follow from those), so two nodes computing the
 * same kernel on the same shapes share one measurement, whatever their
 * tensors are called. Every parameter is written, defaults included, so a
 * change of default never changes what a stored key means; padding is
 * written resolved ([top,left,bottom,right]) so pad=same and the equal
 * explicit padding are one key.
 */
#include <stdio.h>
#include <string.h>

#include "costdb.h"

/* Appends to buf[*k..n) like snprintf, tracking the untruncated length. */
static void add(char *buf, size_t n, size_t *k, const char *s) {
  size_t len = strlen(s);
  if (*k < n) {
    size_t room = n - *k - 1;
    memcpy(buf + *k, s, len < room ? len : room);
    buf[*k + (len < room ? len : room)] = '\0';
  }
  *k += len;
}

static void add_inputs(const ir_graph *g, const ir_node *nd, char *buf,
                       size_t n, size_t *k) {
  const ir_opinfo *r = ir_op(nd->op);
  char item[160], sh[96];
  for (int i = 0; i < nd->nin; i++) {
    const ir_shape *s = &g->tensors[nd->in[i]].shape;
    ir_shape_str(s, sh, sizeof sh);
    if (r->max_in < 0) /* variadic: x0, x1, ... */
      snprintf(item, sizeof item, " %s%d=%s", r->in_name[0], i, sh);
    else
      snprintf(item, sizeof item, " %s=%s", r->in_name[i], sh);
    add(buf, n, k, item);
  }
}

static void add_params(const ir_node *nd, char *buf, size_t n, size_t *k) {
  const ir_opinfo *r = ir_op(nd->op);
  ir_attrs a = nd->a;
  if (ir_op_param_index(nd->op, IR_P_PAD) >= 0)
    a.padmode = IR_PAD_EXPLICIT; /* write the resolved pads */
  char v[256];
  for (int i = 0; i < r->nparams; i++) {
    ir_param_format(r->params[i], &a, v, sizeof v);
    add(buf, n, k, " ");
    add(buf, n, k, ir_param_name(r->params[i]));
    add(buf, n, k, "=");
    add(buf, n, k, v);
  }
}

size_t cd_node_sig(const ir_graph *g, int node, char *buf, size_t n) {
  const ir_node *nd = &g->nodes[node];
  size_t k = 0;
  if (n)
    buf[0] = '\0';
  add(buf, n, &k, ir_op(nd->op)->name);
  add_inputs(g, nd, buf, n, &k);
  add_params(nd, buf, n, &k);
  if (nd->op == IR_OP_FUSED) { /* the body by its content hash */
    char body[32];
    snprintf(body, sizeof body, " body=%016llx",
             (unsigned long long)nd->a.body);
    add(buf, n, &k, body);
  }
  return k;
}
