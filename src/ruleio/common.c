/* common.c: what the importers and exporters of src/ruleio/ share: format
 * names, skip statistics, a growable text buffer, and ruleio_export's choice of
 * rules and atomic write. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ruleio_int.h"

static const char *format_names[] = {"taso-text", "taso-pb", "tensat", "json",
                                     "tensat-multi"};

int ruleio_format_lookup(const char *name) {
  for (int i = 0; i < 5; i++)
    if (!strcmp(name, format_names[i]))
      return i;
  return -1;
}

const char *ruleio_format_name(ruleio_format f) {
  return (unsigned)f < 5 ? format_names[f] : "?";
}

/* ---- statistics ---------------------------------------------------------- */

void ruleio_stats_init(ruleio_stats *st) { memset(st, 0, sizeof *st); }

void ruleio_stats_free(ruleio_stats *st) {
  for (int i = 0; i < st->nreasons; i++) {
    free(st->reasons[i].what);
    free(st->reasons[i].where);
  }
  free(st->reasons);
  ruleio_stats_init(st);
}

static ruleio_reason *find_reason(ruleio_stats *st, const char *what) {
  for (int i = 0; i < st->nreasons; i++)
    if (!strcmp(st->reasons[i].what, what))
      return &st->reasons[i];
  if (st->nreasons == st->capreasons) {
    int cap = st->capreasons ? 2 * st->capreasons : 8;
    ruleio_reason *nr = base_realloc(st->reasons, (size_t)cap * sizeof *nr);
    if (!nr)
      return NULL;
    st->reasons = nr;
    st->capreasons = cap;
  }
  ruleio_reason *r = &st->reasons[st->nreasons];
  memset(r, 0, sizeof *r);
  if (!(r->what = base_strdup(what)))
    return NULL;
  st->nreasons++;
  return r;
}

base_status ruleio_stats_skip(ruleio_stats *st, const char *what, int where) {
  return ruleio_stats_skip_as(st, RULEIO_SKIP_UNSUPPORTED, what, where);
}

base_status ruleio_stats_skip_as(ruleio_stats *st, ruleio_skip_kind kind,
                                 const char *what, int where) {
  if (!st)
    return BASE_OK;
  ruleio_reason *r = find_reason(st, what);
  if (!r)
    return BASE_ERR_NOMEM;
  r->kind = kind;
  if (r->count == r->capwhere) {
    int cap = r->capwhere ? 2 * r->capwhere : 8;
    int *nw = base_realloc(r->where, (size_t)cap * sizeof *nw);
    if (!nw)
      return BASE_ERR_NOMEM;
    r->where = nw;
    r->capwhere = cap;
  }
  r->where[r->count++] = where;
  st->skipped++;
  st->by_kind[kind]++;
  return BASE_OK;
}

/* ---- export -------------------------------------------------------------- */

base_status ruleio_export_mem(const ir_ruleset *rs, ruleio_format f, int flags,
                              char **out, size_t *len, ruleio_stats *st,
                              base_diag *d) {
  ruleio_buf b = {0};
  base_status s;
  *out = NULL;
  *len = 0;
  char *use = base_calloc((size_t)rs->n + 1, 1);
  if (!use)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < rs->n; i++) {
    use[i] =
        (flags & RULEIO_EXPORT_ALL) || rs->rules[i].status == IR_RULE_PROVEN;
    if (!use[i] && st)
      st->filtered++;
  }
  ruleio_put(&b, "", 0);
  switch (f) {
  case RULEIO_TASO_PB: s = ruleio_write_taso_pb(rs, use, &b, st, d); break;
  case RULEIO_TENSAT: s = ruleio_write_tensat(rs, use, 0, &b, st, d); break;
  case RULEIO_TENSAT_MULTI:
    s = ruleio_write_tensat(rs, use, 1, &b, st, d);
    break;
  case RULEIO_JSON: s = ruleio_write_json(rs, use, &b, st, d); break;
  default:
    s = base_diag_set(d, BASE_ERR_PARAM, 0, 0, "cannot export as %s",
                      ruleio_format_name(f));
  }
  free(use);
  if (s == BASE_OK && b.oom)
    s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (s != BASE_OK) {
    free(b.s);
    return s;
  }
  *out = b.s;
  *len = b.len;
  return BASE_OK;
}

base_status ruleio_export(const ir_ruleset *rs, ruleio_format f, int flags,
                          const char *path, ruleio_stats *st, base_diag *d) {
  char *data;
  size_t len;
  base_status s = ruleio_export_mem(rs, f, flags, &data, &len, st, d);
  if (s != BASE_OK)
    return s;
  s = base_write_atomic(path, data, len, d);
  free(data);
  return s;
}
