/* util.c: helpers shared by the CLI's commands: errors, exit codes, loading. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <sys/stat.h>

#include "../onnx/onnx.h"
#include "../opt/opt.h"
#include "cli.h"

int cli_usage_error(const cli_command *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "superopt %s: ", c->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'superopt %s --help')\n", c->name);
  return CLI_USAGE;
}

int cli_report(const base_diag *d) {
  fputs("superopt: ", stderr);
  base_diag_print(d, stderr);
  switch (d->code) {
  case BASE_OK: return CLI_OK;
  case BASE_ERR_NOMEM:
  case BASE_ERR_INTERNAL: return CLI_INTERNAL;
  default: return CLI_BAD_INPUT;
  }
}

int cli_oom(void) {
  base_diag d;
  base_diag_set(&d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return cli_report(&d);
}

int cli_make_dir(const char *cmd, const char *opt, const char *dir) {
  struct stat sb;
  if (!mkdir(dir, 0777) || (!stat(dir, &sb) && S_ISDIR(sb.st_mode)))
    return CLI_OK;
  fprintf(stderr, "superopt %s: %s: cannot create directory '%s': %s\n", cmd,
          opt, dir, strerror(errno));
  return CLI_BAD_INPUT;
}

long long cli_parse_count(const char *s) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0)
    return -1;
  return v;
}

int cli_parse_patience(const char *s, int *out, char *msg, size_t n) {
  long long v = cli_parse_count(s);
  if (v < 0 || v > 1000000000) {
    snprintf(msg, n, "--patience must be 0..1000000000, not '%s'", s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int cli_parse_passes(const char *s, int *rules, char *msg, size_t n) {
  if (strcmp(s, "rules") && strcmp(s, "hand") && strcmp(s, "none")) {
    snprintf(msg, n,
             "bad value '%s' for --passes: expected rules, hand or none", s);
    return -1;
  }
  *rules = !strcmp(s, "rules")  ? CLI_PASSES_RULES
           : !strcmp(s, "hand") ? CLI_PASSES_HAND
                                : CLI_PASSES_NONE;
  return 0;
}

int cli_add_rules(void *rules, const char *file, char *msg, size_t n) {
  cli_rules *r = rules;
  size_t have = strlen(r->list), add = strlen(file);
  if (!*file) {
    snprintf(msg, n, "--rules needs a file, not ''");
    return -1;
  }
  if (have + add + 2 > sizeof r->list) {
    snprintf(msg, n, "--rules: the files given are longer than %zu bytes",
             sizeof r->list - 1);
    return -1;
  }
  snprintf(r->list + have, sizeof r->list - have, "%s%s",
           have ? (const char[]){OPT_RULES_SEP, '\0'} : "", file);
  return 0;
}

int cli_parse_dtype(const char *s, int *dtype, char *msg, size_t n) {
  int t = ir_dtype_lookup(s, strlen(s));
  if (!ir_dtype_is_half((ir_dtype)t)) {
    snprintf(msg, n, "bad value '%s' for --dtype: expected f16 or bf16", s);
    return -1;
  }
  *dtype = t;
  return 0;
}

int cli_to_dtype(ir_graph **g, int dtype) {
  if (!ir_dtype_is_half((ir_dtype)dtype))
    return CLI_OK;
  base_diag d;
  ir_graph *h = ir_graph_to_dtype(*g, (ir_dtype)dtype, &d);
  if (!h)
    return cli_report(&d);
  ir_graph_free(*g);
  *g = h;
  return CLI_OK;
}

int cli_write_graph(const ir_graph *g, const char *out, int drop) {
  base_diag d;
  int nw = ir_weights_count(g);
  if (nw && !drop && !out) {
    fprintf(stderr,
            "superopt: the graph has %d weight%s with values, which standard "
            "output would drop; give -o OUT.graph (the values go to "
            "OUT.safetensors beside it) or --drop-weights\n",
            nw, nw == 1 ? "" : "s");
    return CLI_USAGE;
  }
  if (out)
    return ir_save(g, out, !drop, &d) ? cli_report(&d) : CLI_OK;
  char *s = ir_print(g);
  if (!s)
    return cli_oom();
  fputs(s, stdout);
  free(s);
  return CLI_OK;
}

/* Lists into buf the weights without values that weight-only nodes read
 * (at most a few names, then how many more); sets *bn when one of those
 * nodes is a batchnorm (what folding a batch norm into a convolution
 * computes from its parameters). */
static void unvalued_weights(const ir_graph *g, const unsigned char *wo,
                             char *buf, size_t n, int *bn) {
  unsigned char *seen = base_calloc((size_t)g->ntensors + 1, 1);
  size_t k = 0;
  int named = 0, more = 0;
  buf[0] = 0;
  *bn = 0;
  for (int i = 0; seen && i < g->nnodes; i++) {
    const ir_node *nd = &g->nodes[i];
    *bn |= wo[i] && nd->op == IR_OP_BATCHNORM;
    for (int j = 0; wo[i] && j < nd->nin; j++) {
      const ir_tensor *t = &g->tensors[nd->in[j]];
      if (t->kind != IR_T_WEIGHT || t->data || seen[nd->in[j]])
        continue;
      seen[nd->in[j]] = 1;
      if (named < 6 && k < n) {
        k += (size_t)snprintf(buf + k, n - k, "%s%s", named ? ", " : "",
                              t->name);
        named++;
      } else {
        more++;
      }
    }
  }
  if (more && k < n)
    snprintf(buf + k, n - k, " and %d more", more);
  free(seen);
}

/* The weight preprocessing export left as nodes (weights without values),
 * in one line: what it is, why, and how to have it folded. */
static void print_kept(const ir_graph *g, int kept) {
  unsigned char *wo = base_calloc((size_t)g->nnodes + 1, 1);
  char names[400] = "";
  int bn = 0;
  if (wo) {
    ir_weight_only(g, wo);
    unvalued_weights(g, wo, names, sizeof names, &bn);
  }
  free(wo);
  fprintf(stderr,
          "export: %s left as %d nodes: the weights they read are graph "
          "inputs without values (%s), so onnxruntime runs them on every "
          "inference; export the model with its weights as initializers "
          "(torch.onnx.export's default, export_params=True) or give a "
          ".graph its .safetensors sidecar, and optimize again to have them "
          "folded\n",
          bn ? "batch-norm folding" : "weight preprocessing", kept,
          names[0] ? names : "unnamed");
}

int cli_export_onnx(const ir_graph *g, const char *out, const char *like) {
  base_diag d;
  ox_export_options o = {like, 0};
  ox_export_report r;
  if (ox_export_file_ex(g, out, &o, &r, &d))
    return cli_report(&d);
  fprintf(stderr, "export: opset %d", r.opset);
  if (r.like_opset && r.opset == r.like_opset)
    fprintf(stderr, " (as %s)", like);
  else if (r.like_opset)
    fprintf(stderr, " (%s has %d: %s)", like, r.like_opset, r.opset_why);
  if (like)
    fprintf(stderr,
            "; %d of its %d input and output names kept (%d names given "
            "back)",
            r.io_same, r.io_total, r.renamed);
  fprintf(stderr,
          "; %d weight-preprocessing operators computed into "
          "initializers\n",
          r.folded);
  if (r.kept_dims[0])
    fprintf(stderr, "export: %s's dynamic dimensions kept: %s\n", like,
            r.kept_dims);
  if (r.fixed_dims[0])
    fprintf(stderr,
            "export: %s's dynamic dimensions fixed at this graph's sizes: "
            "%s\n",
            like, r.fixed_dims);
  if (r.at_load)
    print_kept(g, r.at_load);
  return CLI_OK;
}

int cli_is_onnx(const char *path) {
  size_t n = path ? strlen(path) : 0;
  return n > 5 && !strcmp(path + n - 5, ".onnx");
}

ir_graph *cli_load(const char *path, int *rc) {
  return cli_load_ex(path, NULL, rc);
}

ir_graph *cli_load_ex(const char *path, const ox_options *o, int *rc) {
  base_diag d;
  int onnx = cli_is_onnx(path);
  if (!onnx && o && ox_options_any(o)) {
    fprintf(stderr,
            "superopt: %s: --input-shape, --dim and --data-input are for an "
            ".onnx model (a .graph has its shapes)\n",
            path);
    *rc = CLI_USAGE;
    return NULL;
  }
  ir_graph *g = onnx ? ox_import_file(path, o, &d) : ir_load(path, &d);
  if (!g)
    *rc = cli_report(&d);
  return g;
}

int cli_set_input_shape(void *o, const char *v, char *msg, size_t n) {
  return ox_options_add_shape(o, v, msg, n);
}

int cli_set_dim(void *o, const char *v, char *msg, size_t n) {
  return ox_options_add_dim(o, v, msg, n);
}

int cli_set_data_input(void *o, const char *v, char *msg, size_t n) {
  return ox_options_add_data(o, v, msg, n);
}

int cli_rebatch(ir_graph **g, int batch) {
  base_diag d;
  ir_graph *h;
  if (ir_rebatch(*g, batch, &h, &d))
    return cli_report(&d);
  ir_graph_free(*g);
  *g = h;
  return CLI_OK;
}
