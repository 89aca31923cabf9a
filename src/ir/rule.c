/* rule.c: rule sets (pairs of equivalent graphs) and their text format.
 *
 * A rule file is a sequence of blocks (docs/rules-format.md):
 *
 *   rule ID STATUS            STATUS: proven | unproven | unverified
 *   axioms: NAME...           optional: the axioms the proof used
 *   note: TEXT                optional: one line
 *   src:
 *   ...a .graph text...
 *   dst:
 *   ...a .graph text...
 *   end
 *
 * The two graphs are parsed by ir_parse(); their messages keep the rule
 * file's name and line numbers.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ir_int.h"

static const char *status_names[] = {"unverified", "proven", "unproven"};

const char *ir_rule_status_name(ir_rule_status s) {
  return (unsigned)s < 3 ? status_names[s] : "?";
}

void ir_ruleset_init(ir_ruleset *rs) { memset(rs, 0, sizeof *rs); }

void ir_rule_clear(ir_rule *r) {
  free(r->id);
  ir_graph_free(r->src);
  ir_graph_free(r->dst);
  for (int i = 0; i < r->naxioms; i++)
    free(r->axioms[i]);
  free(r->axioms);
  free(r->note);
  free(r->owned);
  memset(r, 0, sizeof *r);
}

void ir_ruleset_free(ir_ruleset *rs) {
  for (int i = 0; i < rs->n; i++)
    ir_rule_clear(&rs->rules[i]);
  free(rs->rules);
  ir_ruleset_init(rs);
}

int ir_rule_loaded(const ir_rule *r) { return r->src != NULL; }

static int valid_id(const char *id) {
  if (!*id)
    return 0;
  for (const char *p = id; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
      return 0;
  return 1;
}

base_status ir_rule_validate(const ir_rule *r, base_diag *d) {
  char b1[64], b2[64];
  if (!r->src || !r->dst)
    return base_diag_set(d, BASE_ERR_INTERNAL, r->line, 0,
                         "rule %s: missing a graph", r->id);
  if (r->src->noutputs != r->dst->noutputs)
    return base_diag_set(d, BASE_ERR_SHAPE, r->line, 0,
                         "rule %s: src has %d outputs, dst has %d", r->id,
                         r->src->noutputs, r->dst->noutputs);
  for (int i = 0; i < r->src->noutputs; i++) {
    const ir_tensor *a = &r->src->tensors[r->src->outputs[i]];
    const ir_tensor *b = &r->dst->tensors[r->dst->outputs[i]];
    if (!ir_shape_eq(&a->shape, &b->shape))
      return base_diag_set(d, BASE_ERR_SHAPE, r->line, 0,
                           "rule %s: output %d is %s in src but %s in dst",
                           r->id, i + 1, ir_shape_str(&a->shape, b1, sizeof b1),
                           ir_shape_str(&b->shape, b2, sizeof b2));
  }
  for (int i = 0; i < r->dst->ntensors; i++) {
    const ir_tensor *t = &r->dst->tensors[i];
    if (t->kind == IR_T_VALUE)
      continue;
    int j = ir_find_tensor(r->src, t->name);
    const ir_tensor *s = j >= 0 ? &r->src->tensors[j] : NULL;
    if (!s || s->kind != t->kind || !ir_shape_eq(&s->shape, &t->shape))
      return base_diag_set(
          d, BASE_ERR_UNDEFINED, t->line ? t->line : r->line, t->col,
          "rule %s: dst %s '%s' %s is not %s of src with that shape", r->id,
          t->kind == IR_T_INPUT ? "input" : "weight", t->name,
          ir_shape_str(&t->shape, b1, sizeof b1),
          t->kind == IR_T_INPUT ? "an input" : "a weight");
  }
  return BASE_OK;
}

/* A zeroed rule with a copy of id after rs's last (not counted in rs->n
 * yet), or NULL on out of memory (d set). */
static ir_rule *rule_slot(ir_ruleset *rs, const char *id, base_diag *d) {
  if (rs->n == rs->cap) {
    int cap = rs->cap ? 2 * rs->cap : 64;
    ir_rule *nr = base_realloc(rs->rules, (size_t)cap * sizeof *nr);
    if (!nr) {
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      return NULL;
    }
    rs->rules = nr;
    rs->cap = cap;
  }
  ir_rule *r = &rs->rules[rs->n];
  memset(r, 0, sizeof *r);
  if (!(r->id = base_strdup(id))) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  return r;
}

ir_rule *ir_ruleset_add(ir_ruleset *rs, const char *id, ir_graph *src,
                        ir_graph *dst, base_diag *d) {
  if (!valid_id(id)) {
    base_diag_set(d, BASE_ERR_SYNTAX, 0, 0, "bad rule id '%s'", id);
    goto fail;
  }
  ir_rule *r = rule_slot(rs, id, d);
  if (!r)
    goto fail;
  r->src = src;
  r->dst = dst;
  if (ir_rule_validate(r, d) != BASE_OK) {
    ir_rule_clear(r);
    return NULL;
  }
  rs->n++;
  return r;
fail:
  ir_graph_free(src);
  ir_graph_free(dst);
  return NULL;
}

base_status ir_rule_set_axioms(ir_rule *r, const char *const *names, int n) {
  char **a = n ? base_calloc((size_t)n, sizeof *a) : NULL;
  if (n && !a)
    return BASE_ERR_NOMEM;
  for (int i = 0; i < n; i++)
    if (!(a[i] = base_strdup(names[i]))) {
      while (i--)
        free(a[i]);
      free(a);
      return BASE_ERR_NOMEM;
    }
  for (int i = 0; i < r->naxioms; i++)
    free(r->axioms[i]);
  free(r->axioms);
  r->axioms = a;
  r->naxioms = n;
  return BASE_OK;
}

base_status ir_rule_set_note(ir_rule *r, const char *note) {
  char *s = NULL;
  if (note) {
    if (!(s = base_strdup(note)))
      return BASE_ERR_NOMEM;
    /* one line of printable text without surrounding blanks: what printing
     * and parsing it again give back */
    size_t start = SIZE_MAX, end = 0;
    for (size_t k = 0; s[k]; k++) {
      if ((unsigned char)s[k] < 0x20 || s[k] == 0x7f)
        s[k] = ' ';
      if (s[k] != ' ') {
        start = start == SIZE_MAX ? k : start;
        end = k + 1;
      }
    }
    start = start == SIZE_MAX ? 0 : start;
    memmove(s, s + start, end - start);
    s[end - start] = '\0';
  }
  free(r->note);
  r->note = s;
  return BASE_OK;
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct rparser {
  const char *text, *end, *file;
  const char *line; /* start of the current line */
  const char *next; /* start of the following line */
  int lineno;       /* of the current line */
  base_diag *d;
  int32_t *ids; /* rule ids seen: open addressing, rule index + 1 */
  int capids;   /* power of two, > 2 * rules */
  int lazy;     /* graphs left unparsed (ir_rules_read_file_lazy) */
} rparser;

/* The rule of rs with this id, or -1; remembers index `add` (>= 0) under
 * id when absent. Returns -2 on out of memory. */
static int id_lookup(rparser *p, const ir_ruleset *rs, const char *id,
                     int add) {
  if (2 * (rs->n + 1) >= p->capids) { /* grow and rehash */
    int cap = p->capids ? 2 * p->capids : 256;
    int32_t *t = base_calloc((size_t)cap, sizeof *t);
    if (!t)
      return -2;
    for (int i = 0; i < rs->n; i++) {
      uint64_t h = XXH3_64bits(rs->rules[i].id, strlen(rs->rules[i].id));
      size_t j = h & (size_t)(cap - 1);
      while (t[j])
        j = (j + 1) & (size_t)(cap - 1);
      t[j] = i + 1;
    }
    free(p->ids);
    p->ids = t;
    p->capids = cap;
  }
  size_t j = XXH3_64bits(id, strlen(id)) & (size_t)(p->capids - 1);
  for (; p->ids[j]; j = (j + 1) & (size_t)(p->capids - 1))
    if (!strcmp(rs->rules[p->ids[j] - 1].id, id))
      return p->ids[j] - 1;
  if (add >= 0)
    p->ids[j] = add + 1;
  return -1;
}

/* Advances to the next line; returns 0 at the end of the text. */
static int next_line(rparser *p) {
  if (p->next >= p->end)
    return 0;
  p->line = p->next;
  const char *nl = memchr(p->line, '\n', (size_t)(p->end - p->line));
  p->next = nl ? nl + 1 : p->end;
  p->lineno++;
  return 1;
}

static size_t line_len(const rparser *p) {
  size_t n = (size_t)(p->next - p->line);
  while (n && (p->line[n - 1] == '\n' || p->line[n - 1] == '\r'))
    n--;
  return n;
}

/* The current line without comment and surrounding blanks: its start in
 * the text, and its length in *len. */
static const char *span(const rparser *p, size_t *len) {
  size_t n = line_len(p);
  const char *s = p->line;
  const char *h = memchr(s, '#', n);
  if (h)
    n = (size_t)(h - s);
  while (n && isspace((unsigned char)*s))
    s++, n--;
  while (n && isspace((unsigned char)s[n - 1]))
    n--;
  *len = n;
  return s;
}

/* The current line's span, into buf: cut to cap - 1 characters, so only
 * for lines compared with short keywords (a cut line never equals one). */
static const char *stripped(const rparser *p, char *buf, size_t cap) {
  size_t n;
  const char *s = span(p, &n);
  if (n >= cap)
    n = cap - 1;
  memcpy(buf, s, n);
  buf[n] = 0;
  return buf;
}

static base_status perr(rparser *p, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static base_status perr(rparser *p, int col, const char *fmt, ...) {
  if (!p->d)
    return BASE_ERR_SYNTAX;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  base_diag_set(p->d, BASE_ERR_SYNTAX, p->lineno, col, "%s", msg);
  snprintf(p->d->file, sizeof p->d->file, "%s", p->file);
  size_t n = line_len(p);
  if (n >= sizeof p->d->src)
    n = sizeof p->d->src - 1;
  memcpy(p->d->src, p->line, n);
  p->d->src[n] = 0;
  return BASE_ERR_SYNTAX;
}

/* Column (1-based) of the first non-blank character of the line. */
static int first_col(const rparser *p) {
  int c = 1;
  while (p->line + c - 1 < p->next &&
         (p->line[c - 1] == ' ' || p->line[c - 1] == '\t'))
    c++;
  return c;
}

/* Finds the graph text from the line after the current one up to (not
 * including) the next line that strips to `stop`; leaves that line current.
 * Its start, length and first line into *start, *len, *startline; 0, or -1
 * (d set) when the file ends first. */
static int find_section(rparser *p, const char *stop, const char **start,
                        size_t *len, int *startline) {
  char buf[64];
  *start = p->next;
  *startline = p->lineno + 1;
  while (next_line(p))
    if (!strcmp(stripped(p, buf, sizeof buf), stop)) {
      *len = (size_t)(p->line - *start);
      return 0;
    }
  perr(p, 1, "missing '%s' before the end of the file", stop);
  return -1;
}

/* Parses a graph's text that starts on line startline of a rule file; its
 * messages and positions are the rule file's. */
static ir_graph *parse_text(const char *start, size_t len, int startline,
                            const char *file, base_diag *d) {
  ir_graph *g = ir_parse(start, len, file, d);
  if (!g && d && d->line > 0)
    d->line += startline - 1;
  for (int i = 0; g && i < g->ntensors; i++) /* positions in the rule file */
    if (g->tensors[i].line)
      g->tensors[i].line += startline - 1;
  for (int i = 0; g && i < g->nnodes; i++)
    if (g->nodes[i].line)
      g->nodes[i].line += startline - 1;
  return g;
}

static ir_graph *parse_section(rparser *p, const char *stop) {
  const char *start;
  size_t len;
  int startline;
  if (find_section(p, stop, &start, &len, &startline))
    return NULL;
  return parse_text(start, len, startline, p->file, p->d);
}

/* The operator of one line of graph text (comment and blanks stripped, n
 * characters): 0 and *op = -1 for a blank line or a declaration (graph,
 * input, weight, output), 0 and *op for NAME... = OP(...), -1 for anything
 * else (what only the parser can judge). */
static int line_op(const char *s, size_t n, int *op) {
  static const char *const kw[] = {"graph", "input", "weight", "output"};
  *op = -1;
  if (!n)
    return 0;
  for (int k = 0; k < 4; k++) {
    size_t m = strlen(kw[k]);
    if (n > m + 1 && !memcmp(s, kw[k], m) && (s[m] == ' ' || s[m] == '\t')) {
      size_t j = m;
      while (j < n && (s[j] == ' ' || s[j] == '\t'))
        j++;
      const char *eq = memchr(s, '=', n), *co = memchr(s, ':', n);
      if (j < n && ir_name_start((unsigned char)s[j]) &&
          (!eq || (co && co < eq))) /* else 'input = op(...)': a tensor
                                       'input'; a ':' first: a declaration
                                       with value= */
        return 0;
    }
  }
  const char *eq = memchr(s, '=', n);
  if (!eq)
    return -1;
  const char *e = s + n, *q = eq + 1;
  while (q < e && (*q == ' ' || *q == '\t'))
    q++;
  const char *o = q;
  while (q < e && ir_name_char((unsigned char)*q))
    q++;
  *op = ir_op_lookup(o, (size_t)(q - o));
  return *op >= 0 && *op < 64 && q < e && *q == '(' ? 0 : -1;
}

/* The operators of a graph's text as a bit set into *ops; -1 when some
 * line is not one line_op reads (the rule is then parsed at once). */
static int text_ops(const char *s, size_t len, uint64_t *ops) {
  uint64_t m = 0;
  for (const char *e = s + len; s < e;) {
    const char *nl = memchr(s, '\n', (size_t)(e - s));
    const char *end = nl ? nl : e, *h = memchr(s, '#', (size_t)(end - s));
    const char *t = s, *u = h ? h : end;
    while (t < u && isspace((unsigned char)*t))
      t++;
    while (u > t && isspace((unsigned char)u[-1]))
      u--;
    int op;
    if (line_op(t, (size_t)(u - t), &op))
      return -1;
    if (op >= 0)
      m |= (uint64_t)1 << op;
    s = nl ? nl + 1 : e;
  }
  *ops = m;
  return 0;
}

base_status ir_rule_load(ir_rule *r, base_diag *d) {
  const char *file = r->file ? r->file : "";
  if (r->src)
    return BASE_OK;
  base_diag local;
  if (!d)
    d = &local;
  memset(d, 0, sizeof *d);
  ir_graph *g[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    ir_graph *h =
        parse_text(r->text[k], r->textlen[k], r->textline[k], file, d);
    /* kept for the whole run, thousands of them: without the room the
     * parser's arrays grew by (about half the memory) */
    if (h && !(g[k] = ir_graph_compact(h)))
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    ir_graph_free(h);
    if (!g[k]) {
      ir_graph_free(g[0]);
      return d->code ? d->code : BASE_ERR_SYNTAX;
    }
  }
  r->src = g[0];
  r->dst = g[1];
  base_status st = ir_rule_validate(r, d);
  if (st) {
    ir_graph_free(g[0]);
    ir_graph_free(g[1]);
    r->src = r->dst = NULL;
    if (!d->file[0])
      snprintf(d->file, sizeof d->file, "%s", file);
    return st;
  }
  r->text[0] = r->text[1] = NULL;
  return BASE_OK;
}

/* The src and dst sections of a rule read lazily: found, their operators
 * scanned, both parsed at once when the scan cannot read them. Into r,
 * which has its id; -1 on error (d set). */
static int lazy_sections(rparser *p, ir_rule *r) {
  int odd = 0;
  for (int k = 0; k < 2; k++) {
    int line;
    if (find_section(p, k ? "end" : "dst:", &r->text[k], &r->textlen[k], &line))
      return -1;
    r->textline[k] = line;
    odd |= text_ops(r->text[k], r->textlen[k], &r->ops[k]);
  }
  if (!odd)
    return 0;
  r->file = p->file;
  return ir_rule_load(r, p->d) ? -1 : 0;
}

static base_status parse_axioms(rparser *p, ir_rule *r, const char *s) {
  const char *names[256];
  char *copy = base_strdup(s);
  int n = 0;
  if (!copy)
    return base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (char *t = strtok(copy, " \t"); t; t = strtok(NULL, " \t")) {
    if (n == 256) {
      free(copy);
      return perr(p, first_col(p), "more than 256 axioms");
    }
    names[n++] = t;
  }
  base_status st = ir_rule_set_axioms(r, names, n);
  free(copy);
  if (st != BASE_OK)
    return base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return BASE_OK;
}

/* One line between "rule" and "src:" (s: the line, stripped): 'axioms:'
 * or 'note:' into r (any length), or 'src:'. Returns 1 at 'src:', 0 for
 * another line, -1 on error. */
static int meta_line(rparser *p, ir_rule *r, const char *s) {
  if (!strncmp(s, "axioms:", 7))
    return parse_axioms(p, r, s + 7) != BASE_OK ? -1 : 0;
  if (!strncmp(s, "note:", 5)) {
    const char *t = s + 5;
    while (*t == ' ' || *t == '\t')
      t++;
    if (ir_rule_set_note(r, t) == BASE_OK)
      return 0;
    base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return -1;
  }
  if (!strcmp(s, "src:"))
    return 1;
  if (*s)
    perr(p, first_col(p), "expected 'axioms:', 'note:' or 'src:'");
  return *s ? -1 : 0;
}

/* Parses one block whose "rule" line is current. */
static base_status parse_rule(rparser *p, ir_ruleset *rs, const char *head) {
  char id[256], st[64], extra[8];
  int rule_line = p->lineno, col = first_col(p);
  int k = sscanf(head, "rule %255s %63s %7s", id, st, extra);
  if (k != 2)
    return perr(p, col, "expected 'rule ID STATUS'");
  if (!valid_id(id))
    return perr(p, col + 5, "bad rule id '%s' (letters, digits, _ . -)", id);
  int dup = id_lookup(p, rs, id, -1);
  if (dup == -2)
    return base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (dup >= 0)
    return perr(p, col + 5, "rule '%s' already defined on line %d", id,
                rs->rules[dup].line);
  int status = -1;
  for (int i = 0; i < 3; i++)
    if (!strcmp(st, status_names[i]))
      status = i;
  if (status < 0)
    return perr(p, col + 6 + (int)strlen(id),
                "unknown status '%s' (proven, unproven or unverified)", st);
  ir_rule tmp = {0};
  for (;;) { /* axioms: / note: lines, then src: */
    if (!next_line(p)) {
      perr(p, 1, "rule '%s' ends before 'src:'", id);
      goto fail;
    }
    size_t n;
    const char *raw = span(p, &n);
    char *s = base_malloc(n + 1);
    if (s) {
      memcpy(s, raw, n);
      s[n] = '\0';
    } else {
      base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      goto fail;
    }
    int k = meta_line(p, &tmp, s);
    free(s);
    if (k < 0)
      goto fail;
    if (k > 0)
      break;
  }
  if (p->lazy) {
    ir_rule *r = rule_slot(rs, id, p->d);
    if (!r)
      goto fail;
    r->line = rule_line;
    if (lazy_sections(p, r)) {
      ir_rule_clear(r);
      goto fail;
    }
    rs->n++;
    id_lookup(p, rs, r->id, rs->n - 1);
    r->status = (ir_rule_status)status;
    r->axioms = tmp.axioms;
    r->naxioms = tmp.naxioms;
    r->note = tmp.note;
    return BASE_OK;
  }
  ir_graph *src = parse_section(p, "dst:");
  if (!src)
    goto fail;
  ir_graph *dst = parse_section(p, "end");
  if (!dst) {
    ir_graph_free(src);
    goto fail;
  }
  ir_rule *r = ir_ruleset_add(rs, id, src, dst, p->d);
  if (!r) {
    if (p->d && !p->d->line) {
      p->d->line = rule_line;
      snprintf(p->d->file, sizeof p->d->file, "%s", p->file);
    }
    goto fail;
  }
  id_lookup(p, rs, r->id, rs->n - 1); /* the table has room: grown above */
  r->status = (ir_rule_status)status;
  r->axioms = tmp.axioms;
  r->naxioms = tmp.naxioms;
  r->note = tmp.note;
  r->line = rule_line;
  return BASE_OK;
fail:
  ir_rule_clear(&tmp);
  return p->d && p->d->code ? p->d->code : BASE_ERR_SYNTAX;
}

static base_status rules_parse(const char *text, size_t len, const char *file,
                               ir_ruleset *rs, base_diag *d, int lazy) {
  rparser p = {text, text + len, file, text, text, 0, d, NULL, 0, lazy};
  base_diag local;
  if (!p.d)
    p.d = &local;
  memset(p.d, 0, sizeof *p.d);
  ir_ruleset_init(rs);
  const char *nul = memchr(text, '\0', len);
  if (nul) { /* text, not binary: C strings would cut it there */
    while (next_line(&p) && p.next <= nul)
      ;
    perr(&p, (int)(nul - p.line) + 1, "a NUL byte");
    goto fail;
  }
  char buf[4096];
  while (next_line(&p)) {
    size_t n;
    span(&p, &n);
    if (n >= sizeof buf) { /* a rule line: never silently cut */
      perr(&p, first_col(&p), "line longer than %zu characters",
           sizeof buf - 1);
      goto fail;
    }
    const char *s = stripped(&p, buf, sizeof buf);
    if (!*s)
      continue;
    if (strncmp(s, "rule ", 5) && strncmp(s, "rule\t", 5)) {
      perr(&p, first_col(&p), "expected 'rule ID STATUS'");
      goto fail;
    }
    if (parse_rule(&p, rs, s) != BASE_OK)
      goto fail;
  }
  free(p.ids);
  return BASE_OK;
fail:
  free(p.ids);
  ir_ruleset_free(rs);
  if (!p.d->file[0])
    snprintf(p.d->file, sizeof p.d->file, "%s", file);
  return p.d->code ? p.d->code : BASE_ERR_SYNTAX;
}

base_status ir_rules_parse(const char *text, size_t len, const char *file,
                           ir_ruleset *rs, base_diag *d) {
  return rules_parse(text, len, file, rs, d, 0);
}

#define RULES_HEADER "# superopt rules v1"

/* Whether a line of text[0..len) starts with RULES_HEADER. */
static int has_header(const char *text, size_t len) {
  size_t k = strlen(RULES_HEADER);
  for (const char *p = text; p && (size_t)(p - text) + k <= len;) {
    if (!memcmp(p, RULES_HEADER, k))
      return 1;
    p = memchr(p, '\n', len - (size_t)(p - text));
    p = p ? p + 1 : NULL;
  }
  return 0;
}

/* A file without a rule is an error unless it says it is a rule file (its
 * header): a 0-byte or truncated default.rules was read as zero rules, and
 * optimize went on with none. */
static base_status read_file(const char *path, ir_ruleset *rs, base_diag *d,
                             int lazy) {
  size_t len;
  ir_ruleset_init(rs);
  char *text = base_read_file(path, &len, d);
  if (!text)
    return d ? d->code : BASE_ERR_IO;
  char *file = NULL; /* lazily: the path after the text, as rules name it */
  if (lazy) {
    size_t k = strlen(path);
    char *t = base_realloc(text, len + k + 2);
    if (!t) {
      free(text);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    text = t;
    file = memcpy(text + len + 1, path, k + 1);
  }
  base_status st = rules_parse(text, len, file ? file : path, rs, d, lazy);
  if (st == BASE_OK && rs->n == 0 && !has_header(text, len)) {
    st = base_diag_set(d, BASE_ERR_SYNTAX, 0, 0,
                       "%s and no '" RULES_HEADER
                       "' line: not a rules file (docs/rules-format.md)",
                       len ? "no rule" : "an empty file (0 bytes): no rule");
    if (d)
      snprintf(d->file, sizeof d->file, "%s", path);
  }
  for (int i = 0; lazy && !st && i < rs->n; i++)
    rs->rules[i].file = file;
  if (lazy && !st && rs->n) { /* the unparsed rules point into text */
    rs->rules[0].owned = text;
    text = NULL;
  }
  if (st)
    ir_ruleset_free(rs);
  free(text);
  return st;
}

base_status ir_rules_read_file(const char *path, ir_ruleset *rs, base_diag *d) {
  return read_file(path, rs, d, 0);
}

base_status ir_rules_read_file_lazy(const char *path, ir_ruleset *rs,
                                    base_diag *d) {
  return read_file(path, rs, d, 1);
}

/* ---- printing ----------------------------------------------------------- */

/* A graph's canonical text without its "graph NAME" line. */
static void sb_graph(base_buf *b, const ir_graph *g) {
  char *t = ir_print(g);
  if (!t) {
    b->oom = 1;
    return;
  }
  const char *s = t;
  if (!strncmp(s, "graph ", 6)) {
    const char *nl = strchr(s, '\n');
    s = nl ? nl + 1 : s + strlen(s);
  }
  base_buf_puts(b, s);
  free(t);
}

char *ir_rules_print(const ir_ruleset *rs, const char *header) {
  base_buf b = {0};
  base_buf_puts(&b, "");
  /* an empty set says what it is, so that reading it back is not the
   * error of a file with no rule (ir_rules_read_file) */
  if (!rs->n && !(header && has_header(header, strlen(header))))
    base_buf_puts(&b, RULES_HEADER "\n");
  if (header)
    base_buf_puts(&b, header);
  for (int i = 0; i < rs->n; i++) {
    const ir_rule *r = &rs->rules[i];
    if (i || header)
      base_buf_puts(&b, "\n");
    base_buf_puts(&b, "rule ");
    base_buf_puts(&b, r->id);
    base_buf_puts(&b, " ");
    base_buf_puts(&b, ir_rule_status_name(r->status));
    base_buf_puts(&b, "\n");
    if (r->naxioms) {
      base_buf_puts(&b, "axioms:");
      for (int j = 0; j < r->naxioms; j++) {
        base_buf_puts(&b, " ");
        base_buf_puts(&b, r->axioms[j]);
      }
      base_buf_puts(&b, "\n");
    }
    if (r->note) {
      base_buf_puts(&b, "note: ");
      base_buf_puts(&b, r->note);
      base_buf_puts(&b, "\n");
    }
    base_buf_puts(&b, "src:\n");
    sb_graph(&b, r->src);
    base_buf_puts(&b, "dst:\n");
    sb_graph(&b, r->dst);
    base_buf_puts(&b, "end\n");
  }
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

base_status ir_rules_write_file(const ir_ruleset *rs, const char *header,
                                const char *path, base_diag *d) {
  char *s = ir_rules_print(rs, header);
  if (!s)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = base_write_atomic(path, s, strlen(s), d);
  free(s);
  return st;
}
