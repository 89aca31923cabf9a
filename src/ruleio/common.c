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

/* ---- text buffer --------------------------------------------------------- */

void ri_put(ri_buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}

void ri_puts(ri_buf *b, const char *s) { ri_put(b, s, strlen(s)); }

void ri_printf(ri_buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof tmp) {
    ri_put(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ri_put(b, big, (size_t)n);
  free(big);
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
  *len = b.n;
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
