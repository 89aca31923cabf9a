/* common.c: what the importers and exporters of src/ruleio/ share: format
 * names, skip statistics, a growable text buffer, and ri_export's choice of
 * rules and atomic write. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ri_int.h"

static const char *format_names[] = {"taso-text", "taso-pb", "tensat", "json"};

int ri_format_lookup(const char *name) {
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, format_names[i]))
      return i;
  return -1;
}

const char *ri_format_name(ri_format f) {
  return (unsigned)f < 4 ? format_names[f] : "?";
}

/* ---- statistics ---------------------------------------------------------- */

void ri_stats_init(ri_stats *st) { memset(st, 0, sizeof *st); }

void ri_stats_free(ri_stats *st) {
  for (int i = 0; i < st->nreasons; i++) {
    free(st->reasons[i].what);
    free(st->reasons[i].where);
  }
  free(st->reasons);
  ri_stats_init(st);
}

static ri_reason *find_reason(ri_stats *st, const char *what) {
  for (int i = 0; i < st->nreasons; i++)
    if (!strcmp(st->reasons[i].what, what))
      return &st->reasons[i];
  if (st->nreasons == st->capreasons) {
    int cap = st->capreasons ? 2 * st->capreasons : 8;
    ri_reason *nr = realloc(st->reasons, (size_t)cap * sizeof *nr);
    if (!nr)
      return NULL;
    st->reasons = nr;
    st->capreasons = cap;
  }
  ri_reason *r = &st->reasons[st->nreasons];
  memset(r, 0, sizeof *r);
  if (!(r->what = strdup(what)))
    return NULL;
  st->nreasons++;
  return r;
}

ir_status ri_stats_skip(ri_stats *st, const char *what, int where) {
  if (!st)
    return IR_OK;
  ri_reason *r = find_reason(st, what);
  if (!r)
    return IR_ERR_NOMEM;
  if (r->count == r->capwhere) {
    int cap = r->capwhere ? 2 * r->capwhere : 8;
    int *nw = realloc(r->where, (size_t)cap * sizeof *nw);
    if (!nw)
      return IR_ERR_NOMEM;
    r->where = nw;
    r->capwhere = cap;
  }
  r->where[r->count++] = where;
  st->skipped++;
  return IR_OK;
}

/* ---- export -------------------------------------------------------------- */

ir_status ri_export_mem(const ir_ruleset *rs, ri_format f, int flags,
                        char **out, size_t *len, ri_stats *st, ir_diag *d) {
  ri_buf b = {0};
  ir_status s;
  *out = NULL;
  *len = 0;
  char *use = calloc((size_t)rs->n + 1, 1);
  if (!use)
    return ir_diag_set(d, IR_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < rs->n; i++) {
    use[i] = (flags & RI_EXPORT_ALL) || rs->rules[i].status == IR_RULE_PROVEN;
    if (!use[i] && st)
      st->filtered++;
  }
  ri_put(&b, "", 0);
  switch (f) {
  case RI_TASO_PB: s = ri_write_taso_pb(rs, use, &b, st, d); break;
  case RI_TENSAT: s = ri_write_tensat(rs, use, &b, st, d); break;
  case RI_JSON: s = ri_write_json(rs, use, &b, st, d); break;
  default:
    s = ir_diag_set(d, IR_ERR_PARAM, 0, 0, "cannot export as %s",
                    ri_format_name(f));
  }
  free(use);
  if (s == IR_OK && b.oom)
    s = ir_diag_set(d, IR_ERR_NOMEM, 0, 0, "out of memory");
  if (s != IR_OK) {
    free(b.s);
    return s;
  }
  *out = b.s;
  *len = b.len;
  return IR_OK;
}

ir_status ri_export(const ir_ruleset *rs, ri_format f, int flags,
                    const char *path, ri_stats *st, ir_diag *d) {
  char *data;
  size_t len;
  ir_status s = ri_export_mem(rs, f, flags, &data, &len, st, d);
  if (s != IR_OK)
    return s;
  s = ir_write_atomic(path, data, len, d);
  free(data);
  return s;
}
