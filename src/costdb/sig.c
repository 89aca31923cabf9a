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
#include <stdlib.h>
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

/* as: IR_DT_F32, or a half type that float32 inputs are written as
 * (cd_node_sig_as). */
static void add_inputs(const ir_graph *g, const ir_node *nd, ir_dtype as,
                       char *buf, size_t n, size_t *k) {
  const ir_opinfo *r = ir_op(nd->op);
  char item[160], sh[104];
  for (int i = 0; i < nd->nin; i++) {
    const ir_tensor *t = &g->tensors[nd->in[i]];
    char shape[96];
    /* rows of rank > 3 (MaxViT's [1,W,N,C]) as the rank-3 rows of the
     * same kernel */
    ir_shape fs = nd->op == IR_OP_ATTENTION && nd->a.groups > 0 && i < 3 &&
                          t->shape.rank > 3
                      ? ir_att_rows3(&t->shape)
                      : t->shape;
    ir_shape_str(&fs, shape, sizeof shape);
    ir_dtype ty = (ir_dtype)t->dtype;
    if (ty == IR_DT_F32 && ir_dtype_is_half(as))
      ty = as;
    /* a half input's type before its shape, as in .graph text (float32
     * and the integer types: none, the keys stored before half types) */
    snprintf(sh, sizeof sh, "%s%s",
             ir_dtype_is_half(ty) ? ir_dtype_name(ty) : "", shape);
    if (r->max_in < 0) /* variadic: x0, x1, ... */
      snprintf(item, sizeof item, " %s%d=%s", r->in_name[0], i, sh);
    else
      snprintf(item, sizeof item, " %s=%s", r->in_name[i], sh);
    add(buf, n, k, item);
  }
}

/* Parameters added to an operator after its keys were stored (the
 * activation of concat and split, lower_move.c; attention's row layout,
 * lower_att.c; layernorm's rms, pass/rmsnorm.c): written only when set, so
 * that the stored keys keep their meaning. */
static int added_later(ir_opcode op, ir_param_id p) {
  if (op == IR_OP_LAYERNORM)
    return p == IR_P_RMS;
  if (op == IR_OP_ATTENTION)
    return p == IR_P_HEADS || p == IR_P_COLS || p == IR_P_HDIM ||
           p == IR_P_SEQFIRST;
  return (op == IR_OP_CONCAT || op == IR_OP_SPLIT) &&
         (p == IR_P_ACT || p == IR_P_ACTED);
}

static void add_params(const ir_node *nd, char *buf, size_t n, size_t *k) {
  const ir_opinfo *r = ir_op(nd->op);
  ir_attrs a = nd->a;
  if (ir_op_param_index(nd->op, IR_P_PAD) >= 0)
    a.padmode = IR_PAD_EXPLICIT; /* write the resolved pads */
  char v[256], dv[256];
  for (int i = 0; i < r->nparams; i++) {
    ir_param_id p = r->params[i];
    if ((p == IR_P_MIN || p == IR_P_MAX) && nd->op == IR_OP_CONV2D &&
        a.act != IR_ACT_CLIP)
      continue; /* act=clip's bounds: no other convolution's signature (the
                   rows measured before they existed) has them */
    ir_param_format(r->params[i], &a, v, sizeof v);
    ir_param_format(r->params[i], &r->defaults, dv, sizeof dv);
    if (added_later(nd->op, r->params[i]) && !strcmp(v, dv))
      continue;
    add(buf, n, k, " ");
    add(buf, n, k, ir_param_name(r->params[i]));
    add(buf, n, k, "=");
    add(buf, n, k, v);
  }
}

size_t cd_node_sig(const ir_graph *g, int node, char *buf, size_t n) {
  return cd_node_sig_as(g, node, IR_DT_F32, buf, n);
}

size_t cd_node_sig_as(const ir_graph *g, int node, ir_dtype as, char *buf,
                      size_t n) {
  const ir_node *nd = &g->nodes[node];
  size_t k = 0;
  if (n)
    buf[0] = '\0';
  /* an operator the policy keeps in float32 is float32 in the half graph */
  if (ir_dtype_is_half(as) && ir_op_half_policy(nd->op) == IR_HALF_F32)
    as = IR_DT_F32;
  add(buf, n, &k, ir_op(nd->op)->name);
  add_inputs(g, nd, as, buf, n, &k);
  add_params(nd, buf, n, &k);
  if (nd->op == IR_OP_FUSED || nd->op == IR_OP_MOVE) { /* body's hash */
    char body[32];
    snprintf(body, sizeof body, " body=%016llx",
             (unsigned long long)nd->a.body);
    add(buf, n, &k, body);
  }
  return k;
}

/* ---- signature -> one-node graph ------------------------------------- */

/* Is token key (len bytes) the name of input slot i of r ("x", or "x3" for
 * a variadic operator's slot 3)? */
static int is_input(const ir_opinfo *r, const char *key, size_t len, int i) {
  char want[32];
  if (r->max_in < 0)
    snprintf(want, sizeof want, "%s%d", r->in_name[0], i);
  else if (i < r->nnamed)
    snprintf(want, sizeof want, "%s", r->in_name[i]);
  else
    return 0;
  return strlen(want) == len && !memcmp(want, key, len);
}

/* The type of input slot i that op requires whatever its data (a
 * signature writes no integer or boolean type: the keys stored before
 * types), as ir_dtype_infer checks it; "" where a float (or any) fits. */
static const char *fixed_type(int op, int i) {
  if (op == IR_OP_GATHER && i == 1)
    return "i64";
  if ((op == IR_OP_WHERE || op == IR_OP_NOT) && i == 0)
    return "bool";
  return "";
}

ir_graph *cd_sig_graph(const char *sig, base_diag *d) {
  size_t oplen = strcspn(sig, " ");
  int op = ir_op_lookup(sig, oplen);
  if (op < 0 || op == IR_OP_FUSED || op == IR_OP_MOVE) {
    base_diag_set(d, op < 0 ? BASE_ERR_UNKNOWN_OP : BASE_ERR_PARAM, 1, 1,
                  "signature of %s operator '%.*s': no graph can be built",
                  op < 0             ? "an unknown"
                  : op == IR_OP_MOVE ? "a move"
                                     : "a fused",
                  (int)(oplen > 64 ? 64 : oplen), sig);
    return NULL;
  }
  const ir_opinfo *r = ir_op((ir_opcode)op);
  base_buf decl = {0}, call = {0}, params = {0};
  int nin = 0, nout = 1;
  const char *p = sig + oplen;
  while (*p == ' ')
    p++;
  while (*p) {
    size_t len = strcspn(p, " "), key = strcspn(p, "=");
    if (key > len)
      key = len;
    if (!params.len && key < len && is_input(r, p, key, nin)) {
      base_buf_printf(&decl, "%s i%d: %s%.*s\n", nin ? "weight" : "input", nin,
                      fixed_type(op, nin), (int)(len - key - 1), p + key + 1);
      base_buf_printf(&call, "%si%d", nin ? ", " : "", nin);
      nin++;
    } else {
      base_buf_printf(&params, " %.*s", (int)len, p);
      if ((op == IR_OP_SPLIT && key == 5 && !memcmp(p, "sizes", 5)) ||
          (op == IR_OP_CONCAT_SHUFFLE && key == 6 && !memcmp(p, "starts", 6)))
        for (size_t i = key; i < len; i++)
          nout += p[i] == ',';
      if (op == IR_OP_SPLIT && key == 5 && !memcmp(p, "acted", 5))
        for (size_t i = key; i < len; i++) /* a part and its activation */
          nout += p[i] == '2' && (p[i - 1] == '[' || p[i - 1] == ',');
    }
    p += len;
    while (*p == ' ')
      p++;
  }
  base_buf text = {0};
  base_buf_printf(&text, "graph sig\n%s", decl.s ? decl.s : "");
  for (int i = 0; i < nout; i++)
    base_buf_printf(&text, "%sy%d", i ? ", " : "", i);
  base_buf_printf(&text, " = %s(%s)%s\noutput ", r->name, call.s ? call.s : "",
                  params.s ? params.s : "");
  for (int i = 0; i < nout; i++)
    base_buf_printf(&text, "%sy%d", i ? ", " : "", i);
  base_buf_puts(&text, "\n");
  ir_graph *g = NULL;
  if (decl.oom || call.oom || params.oom || text.oom)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  else
    g = ir_parse(text.s, text.len, "<signature>", d);
  free(decl.s);
  free(call.s);
  free(params.s);
  free(text.s);
  return g;
}
