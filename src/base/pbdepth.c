/* pbdepth.c: how deeply a protobuf message nests, found without recursion.
 *
 * protobuf-c unpacks a submessage by calling itself, so a schema that can
 * nest (ONNX: graph -> node -> attribute -> graph ...) lets a few kilobytes
 * of input overflow the stack. Before unpacking, base_pb_check_depth walks
 * the wire format with an explicit stack of (message type, end offset),
 * descending only into fields the schema declares as messages, and refuses
 * input nested deeper than a bound. Anything malformed it leaves to
 * protobuf-c, whose own checks then reject it.
 */
#include <protobuf-c/protobuf-c.h>

#include "base.h"

/* Reads a varint at *p (< end); 0 on success. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; *p < end && shift < 64; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return 0;
  }
  return -1;
}

base_status base_pb_check_depth(const struct ProtobufCMessageDescriptor *desc,
                                const uint8_t *data, size_t len, int max_depth,
                                base_diag *d) {
  enum { CAP = 256 };
  struct frame {
    const ProtobufCMessageDescriptor *desc;
    const uint8_t *end;
  } stack[CAP];
  if (max_depth > CAP - 1)
    max_depth = CAP - 1;
  int top = 0;
  const uint8_t *p = data;
  stack[0].desc = desc;
  stack[0].end = data + len;
  for (;;) {
    while (top > 0 && p == stack[top].end)
      top--;
    if (p >= stack[top].end)
      return BASE_OK; /* the end, or malformed: left to protobuf-c */
    uint64_t tag, n;
    if (varint(&p, stack[top].end, &tag))
      return BASE_OK;
    switch (tag & 7) {
    case 0: /* varint */
      if (varint(&p, stack[top].end, &n))
        return BASE_OK;
      break;
    case 1: /* 64-bit */
    case 5: /* 32-bit */
      n = (tag & 7) == 1 ? 8 : 4;
      if ((uint64_t)(stack[top].end - p) < n)
        return BASE_OK;
      p += n;
      break;
    case 2: { /* length-delimited: a submessage, or bytes */
      if (varint(&p, stack[top].end, &n) || (uint64_t)(stack[top].end - p) < n)
        return BASE_OK;
      const ProtobufCFieldDescriptor *f =
          tag >> 3 > UINT32_MAX ? NULL
                                : protobuf_c_message_descriptor_get_field(
                                      stack[top].desc, (unsigned)(tag >> 3));
      if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || !f->descriptor) {
        p += n;
        break;
      }
      if (top + 1 > max_depth)
        return base_diag_set(d, BASE_ERR_SYNTAX, 0, 0,
                             "messages nested more than %d deep (field %s of "
                             "%s at byte %zu)",
                             max_depth, f->name, stack[top].desc->name,
                             (size_t)(p - data));
      top++;
      stack[top].desc = f->descriptor;
      stack[top].end = p + n;
      break;
    }
    default: /* groups and invalid wire types */ return BASE_OK;
    }
  }
}
