/* options.c: the import options of `superopt import` (--input-shape,
 * --data-input, --dim) added one at a time into an ox_options, with the
 * messages both the CLI (src/cli/cmd_onnx.c) and the C API (api_graph_load_ex)
 * give. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

int ox_options_add_shape(ox_options *o, const char *text, char *msg, size_t n) {
  if (o->nshapes < OX_MAX_SHAPES &&
      ox_parse_shape_arg(text, &o->shapes[o->nshapes]) == 0) {
    o->nshapes++;
    return 0;
  }
  if (o->nshapes == OX_MAX_SHAPES)
    snprintf(msg, n, "more than %d --input-shape options", OX_MAX_SHAPES);
  else
    snprintf(msg, n, "bad --input-shape '%s' (expected NAME=1x3x224x224)",
             text);
  return -1;
}

int ox_options_add_data(ox_options *o, const char *name, char *msg, size_t n) {
  if (o->ndata == OX_MAX_SHAPES) {
    snprintf(msg, n, "more than %d --data-input options", OX_MAX_SHAPES);
    return -1;
  }
  if (!*name || strlen(name) >= sizeof o->data[0]) {
    snprintf(msg, n, "bad --data-input '%s' (expected an input's name)", name);
    return -1;
  }
  strcpy(o->data[o->ndata++], name);
  return 0;
}

int ox_options_add_dim(ox_options *o, const char *text, char *msg, size_t n) {
  const char *eq = strchr(text, '=');
  if (o->ndims == OX_MAX_SHAPES) {
    snprintf(msg, n, "more than %d --dim options", OX_MAX_SHAPES);
    return -1;
  }
  char *end = NULL;
  errno = 0;
  long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
  size_t len = eq ? (size_t)(eq - text) : 0;
  if (!eq || len == 0 || len >= sizeof o->dim_name[0] || end == eq + 1 ||
      *end || errno || v < 1 || v > ((int64_t)1 << 31)) {
    snprintf(msg, n, "bad --dim '%s' (expected NAME=SIZE, e.g. seq=128)", text);
    return -1;
  }
  memcpy(o->dim_name[o->ndims], text, len);
  o->dim_name[o->ndims][len] = '\0';
  o->dim_size[o->ndims++] = v;
  return 0;
}

int ox_options_any(const ox_options *o) {
  return o->nshapes > 0 || o->ndata > 0 || o->ndims > 0;
}
