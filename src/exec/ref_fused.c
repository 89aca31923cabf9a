/* ref_fused.c: reference kernel of `fused`: runs the body operator by
 * operator with the reference kernels of those operators, so a fused node
 * computes exactly what its unfused subgraph computes (same kernels, same
 * order of float operations). A body may end with a row reduction
 * (softmax, layernorm, reduce_mean over the last axis): its kernel too.
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

base_status ex_ref_fused(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_body *b = ir_body_get(n->a.body);
  if (!b || b->nin != n->nin)
    return BASE_ERR_INTERNAL;
  const ir_shape *ins[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++)
    ins[k] = &in[k].shape;
  ir_shape shapes[IR_BODY_MAX_OPS];
  if (ir_body_shapes(b, ins, shapes, NULL))
    return BASE_ERR_INTERNAL;
  float *tmp[IR_BODY_MAX_OPS] = {0};
  base_status st = BASE_OK;
  for (int i = 0; i < b->nops && !st; i++) {
    const ir_body_op *o = &b->ops[i];
    ex_arg a[IR_MAX_FIXED_IN], r;
    for (int k = 0; k < o->nin; k++)
      a[k] = o->in[k] < 0 ? in[-1 - o->in[k]]
                          : (ex_arg){shapes[o->in[k]], tmp[o->in[k]]};
    r.shape = shapes[i];
    if (i + 1 == b->nops) {
      r.data = out[0].data;
    } else {
      r.data = base_malloc(sizeof(float) * (size_t)ir_shape_numel(&shapes[i]));
      if (!r.data) {
        st = BASE_ERR_NOMEM;
        break;
      }
      tmp[i] = r.data;
    }
    ir_node bn;
    memset(&bn, 0, sizeof bn);
    bn.op = o->op;
    bn.nin = o->nin;
    bn.nout = 1;
    bn.a = o->a;
    const ir_shape *as[IR_MAX_FIXED_IN];
    for (int k = 0; k < o->nin; k++)
      as[k] = &a[k].shape;
    ir_shape chk; /* normalised parameters (a row reduction's axis) */
    if (ir_infer(o->op, &bn.a, as, o->nin, &chk, NULL)) {
      st = BASE_ERR_INTERNAL;
      break;
    }
    st = ex_kernel_of(o->op)(&bn, a, &r);
  }
  for (int i = 0; i < b->nops; i++)
    free(tmp[i]);
  return st;
}
