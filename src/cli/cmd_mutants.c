/* cmd_mutants.c: `superopt mutants`: the partially equivalent mutants of a
 * model's convolutions, with the boxes where each differs from the
 * original, the correction that makes it exact and its float check
 * (src/mutant/, docs/mutants.md). A listing for researchers: nothing in the
 * model is changed. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "../mutant/mutant.h"
#include "cli.h"

typedef struct mut_opts {
  const char *path, *dump, *sigs;
  unsigned mask;
  uint64_t seed;
  int batch, limit, check;
} mut_opts;

/* --class C: adds class C to the mask (conv: every class, matmul-batch
 * included). */
static int set_class(void *u, const char *v, char *msg, size_t n) {
  mut_opts *o = u;
  int k = mutant_class_lookup(v);
  if (k < 0 && strcmp(v, "conv") != 0) {
    snprintf(msg, n,
             "unknown class '%s' (conv, concat-w, split-h, dilated, batch-w, "
             "pad-split-h, group-merge, matmul-batch)",
             v);
    return -1;
  }
  o->mask |= k < 0 ? ~0u : 1u << k;
  return 0;
}

#define T mut_opts
static const cli_opt mutants_table[] = {
    CLI_CALL("class", "C", set_class,
             "only class C (repeatable; conv = every class)"),
    CLI_U64(T, "seed", seed, "S",
            "seed of the random residues and floats (default 1)"),
    CLI_INT(T, "batch", batch, "N", 1, 65536,
            "rescale the batch (dim 0 of the inputs) to N"),
    CLI_INT(T, "limit", limit, "K", 0, 1000000,
            "analyse only the first K mutants"),
    CLI_STR(T, "dump", 0, dump, "DIR", "write DIR/mNNN.{f,g,corrected}.graph"),
    CLI_STR(T, "signatures", 0, sigs, "F",
            "write the operator signatures of every mutant's f,\n"
            "g and corrected graph to F (sorted, once each; for\n"
            "'costdb measure --signatures F' on a GPU)"),
    CLI_FLAG(T, "no-check", check, 0, "skip the float check"),
    CLI_END};
#undef T

static int parse_opts(const cli_command *c, int argc, char **argv,
                      mut_opts *o) {
  *o = (mut_opts){.seed = 1, .check = 1};
  int rc = cli_parse_opts(c, argc, argv, o);
  if (rc)
    return rc;
  if (!o->mask)
    o->mask = ~0u;
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one MODEL");
  o->path = argv[optind];
  return CLI_OK;
}

static void print_box(const mutant_box *b, int rank) {
  printf("[");
  for (int k = 0; k < rank; k++)
    printf("%s%" PRId64 ":%" PRId64, k ? "," : "", b->lo[k], b->hi[k]);
  printf("]");
}

/* Site of mutant m: the model's output names of its nodes. */
static void print_site(const ir_graph *model, const mutant *m) {
  for (int i = 0; i < 2 && m->site[i] >= 0; i++)
    printf("%s%s (node %d)", i ? " + " : "",
           model->tensors[model->nodes[m->site[i]].out[0]].name, m->site[i]);
}

static int dump(const char *dir, int i, const mutant *m, const ir_graph *h) {
  char path[4096];
  base_diag d;
  const ir_graph *gs[3] = {m->f, m->g, h};
  const char *what[3] = {"f", "g", "corrected"};
  for (int k = 0; k < 3; k++) {
    if (!gs[k])
      continue;
    snprintf(path, sizeof path, "%s/m%03d.%s.graph", dir, i + 1, what[k]);
    if (ir_write_file(gs[k], path, &d))
      return cli_report(&d);
  }
  return CLI_OK;
}

/* The signatures of g's nodes that run per inference (not weight-only),
 * appended to b one a line. */
static void add_sigs(base_buf *b, const ir_graph *g) {
  uint8_t *wo = base_calloc((size_t)g->nnodes + 1, 1);
  char sig[CD_SIG_MAX];
  if (!wo) {
    b->oom = 1;
    return;
  }
  ir_weight_only(g, wo);
  for (int i = 0; i < g->nnodes; i++)
    if (!wo[i]) {
      cd_node_sig(g, i, sig, sizeof sig);
      base_buf_printf(b, "%s\n", sig);
    }
  free(wo);
}

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* b's lines sorted, each once, written atomically to path. */
static int write_sigs(const char *path, const char *model, base_buf *b) {
  base_diag d;
  size_t n = 0;
  for (size_t i = 0; i < b->len; i++)
    n += b->s[i] == '\n';
  char **v = base_malloc(sizeof *v * (n + 1));
  base_buf out = {0};
  if (!v || b->oom)
    return free(v), cli_oom();
  size_t k = 0;
  for (char *p = b->s, *e; p && (e = strchr(p, '\n')); p = e + 1)
    *e = 0, v[k++] = p;
  qsort(v, k, sizeof *v, cmp_line);
  size_t m = 0;
  for (size_t i = 0; i < k; i++)
    m += !i || strcmp(v[i], v[i - 1]);
  base_buf_printf(&out,
                  "# superopt mutants %s --signatures: %zu operator "
                  "signatures of its mutants (f, g, corrected)\n",
                  model, m);
  for (size_t i = 0; i < k; i++)
    if (!i || strcmp(v[i], v[i - 1]))
      base_buf_printf(&out, "%s\n", v[i]);
  free(v);
  base_status st = base_buf_write(&out, path, &d);
  free(out.s);
  if (st)
    return cli_report(&d);
  printf("wrote %s (%zu operator signatures)\n", path, m);
  return CLI_OK;
}

/* Analyses, corrects and checks one mutant; prints its block. */
static int show(const mut_opts *o, const ir_graph *model, int i,
                const mutant *m, int64_t *wrong, int64_t *total,
                base_buf *sigs) {
  base_diag d;
  mutant_boxes b;
  ir_graph *h = NULL;
  if (mutant_analyze(m->f, m->g, o->seed, &b, &d))
    return cli_report(&d);
  printf("mutant %d: %s at ", i + 1, mutant_class_name(m->cls));
  print_site(model, m);
  printf(": %d -> %d operators\n", m->f->nnodes, m->g->nnodes);
  for (int k = 0; k < b.nout; k++) {
    const mutant_grid *gr = &b.grid[k];
    char sb[96];
    printf("  output %s %s: %" PRId64 " boxes (",
           m->f->tensors[m->f->outputs[k]].name,
           ir_shape_str(&gr->shape, sb, sizeof sb), gr->ncells);
    for (int a = 0; a < gr->shape.rank; a++)
      printf("%s%d", a ? "x" : "", gr->ncut[a]);
    printf("), %" PRId64 " different\n", gr->ndiff);
  }
  for (int k = 0; k < b.nwrong; k++) {
    printf("    wrong box output %d ", b.wrong[k].out);
    print_box(&b.wrong[k], b.grid[b.wrong[k].out].shape.rank);
    printf("\n");
  }
  printf("  corrected region: %" PRId64 " of %" PRId64
         " outputs (%.2f%%); %" PRId64 " box corners evaluated\n",
         b.wrong_numel, b.numel,
         100.0 * (double)b.wrong_numel / (double)b.numel, b.points);
  *wrong += b.wrong_numel, *total += b.numel;
  int rc = CLI_OK;
  if (mutant_correct(m->f, m->g, b.wrong, b.nwrong, &h, &d))
    rc = cli_report(&d);
  if (!rc)
    printf("  verified by the box argument: P(a different box passes as "
           "equal) <= %.1e per box (seed %" PRIu64 ")\n",
           mutant_false_equal_bound(m->f, m->g), o->seed);
  double err = 0;
  if (!rc && o->check && mutant_float_check(m->f, h, o->seed, &err, &d))
    rc = cli_report(&d);
  if (!rc && o->check) {
    printf("  float check, mutant + correction vs original: max relative "
           "error %.2e%s\n",
           err, err <= 1e-4 ? "" : "  FAILED");
    rc = err <= 1e-4 ? CLI_OK : CLI_INTERNAL;
  }
  if (!rc && o->dump)
    rc = dump(o->dump, i, m, h);
  if (!rc && o->sigs) {
    add_sigs(sigs, m->f);
    add_sigs(sigs, m->g);
    add_sigs(sigs, h);
  }
  ir_graph_free(h);
  mutant_boxes_free(&b);
  return rc;
}

static int mutants(const cli_command *c, int argc, char **argv) {
  mut_opts o;
  int rc = parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  ir_graph *model = cli_load(o.path, &rc);
  if (!model)
    return rc;
  if (o.batch && (rc = cli_rebatch(&model, o.batch))) {
    ir_graph_free(model);
    return rc;
  }
  if (o.dump && (rc = cli_make_dir("mutants", "--dump", o.dump))) {
    ir_graph_free(model);
    return rc;
  }
  mutant_list l = {0};
  base_diag d;
  if (mutant_generate(model, o.mask, &l, &d)) {
    ir_graph_free(model);
    return cli_report(&d);
  }
  int n = o.limit && o.limit < l.n ? o.limit : l.n,
      count[MUTANT_NCLASSES] = {0};
  int64_t wrong = 0, total = 0;
  base_buf sigs = {0};
  printf("%s: %d mutants", o.path, l.n);
  if (n < l.n)
    printf(" (showing the first %d)", n);
  printf("\n");
  for (int i = 0; i < n && !rc; i++) {
    rc = show(&o, model, i, &l.m[i], &wrong, &total, &sigs);
    count[l.m[i].cls]++;
  }
  if (!rc) {
    printf("by class:");
    for (int k = 0; k < MUTANT_NCLASSES; k++)
      printf(" %s %d", mutant_class_name((mutant_class)k), count[k]);
    printf("; corrected outputs, summed over the mutants: %" PRId64
           " of %" PRId64 " (%.2f%%)\n",
           wrong, total, total ? 100.0 * (double)wrong / (double)total : 0.0);
  }
  if (!rc && o.sigs)
    rc = write_sigs(o.sigs, o.path, &sigs);
  free(sigs.s);
  mutant_list_free(&l);
  ir_graph_free(model);
  return rc;
}

const cli_command cli_cmd_mutants = {
    "mutants",
    "list a model's partially equivalent mutants and their boxes",
    "mutants MODEL [options]",
    "Lists the mutants of MODEL's convolutions (docs/mutants.md): for each,\n"
    "the grid of boxes of every output, the boxes where the mutant differs\n"
    "from the original (box analysis in arithmetic modulo 2^31-1, seed S),\n"
    "the corrected fraction, the error bound, and a float check of mutant +\n"
    "correction against the original on the CPU. MODEL is not changed.\n",
    mutants_table,
    NULL,
    mutants};

void cli_print_mutants(const mutant_apply_stats *st, const char *device) {
  printf("mutants applied: %d of %d considered (%d not cheaper, %d "
         "not chosen, %d refused, %d cheaper by estimates only)%s\n",
         st->napplied, st->considered, st->not_cheaper, st->overlapping,
         st->refused, st->unmeasured,
         st->napplied ? "; verified by the box argument, not proven" : "");
  if (st->candidates || st->capped)
    printf("  joint search: %d mutant rewrites offered to the search beside "
           "the rules' (%d graphs cut at %d)\n",
           st->candidates, st->capped, MUTANT_JOINT_CAP);
  if (st->considered) {
    printf("  by class (considered / cheaper by estimates only):");
    for (int c = 0; c < MUTANT_NCLASSES; c++)
      if (st->cls_considered[c])
        printf(" %s %d/%d", mutant_class_name((mutant_class)c),
               st->cls_considered[c], st->cls_unmeasured[c]);
    printf("\n");
  }
  if (st->unmeasured)
    printf("  not taken: %d mutant%s cheaper only where the cost model "
           "estimates (measure them: --measure on a GPU, or costdb measure "
           "--signatures; or take them anyway: --mutants-estimated)\n",
           st->unmeasured, st->unmeasured == 1 ? "" : "s");
  double saved = 0;
  for (int i = 0; i < st->napplied; i++) {
    const mutant_applied *a = &st->applied[i];
    printf("  [mutant] %s at %s%s%s: corrected %" PRId64 " of %" PRId64
           " outputs (%.2f%%), cost %.2f -> %.2f us on %s (saving %.2f), "
           "P(false equal) <= %.1e per box\n",
           mutant_class_name(a->cls), a->site[0], a->site[1][0] ? " + " : "",
           a->site[1], a->wrong_numel, a->numel,
           100.0 * (double)a->wrong_numel / (double)a->numel, a->ms_before,
           a->ms_after, device, a->ms_before - a->ms_after, a->bound);
    saved += a->ms_before - a->ms_after;
  }
  if (st->napplied)
    printf("mutants saved: %.2f us on %s (included in 'cost after')\n", saved,
           device);
  printf("rewrites: proven (rules, listed under 'rules applied'); verified "
         "by the box argument and the end-to-end check (mutants): %d\n",
         st->napplied);
}
