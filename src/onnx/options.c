/* options.c: the import options of `superopt import` (--input-shape,
 * --data-input) added one at a time into an ox_options, with the messages
 * both the CLI (src/cli/cmd_onnx.c) and the C API (api_graph_load_ex)
 * give. */
#include <stdio.h>
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
