/* ruleio.h: rule interop with peer superoptimizers (prefix ruleio_).
 *
 * Imports TASO's published substitutions (the `LHS == RHS` text of
 * taso_rules.txt and the GraphSubst RuleCollection protobuf of
 * graph_subst.pb) as ir_rules, and exports rule sets as TASO .pb, as
 * Tensat's S-expression rewrite text and as a self-describing JSON document.
 * The mapping between TASO's operators and ours, how shapes are chosen and
 * every format are described in docs/interop.md.
 *
 * A rule that cannot be expressed on the other side (an unknown term, a
 * shape that does not type-check, an operator the target lacks) is not an
 * error: it is skipped and counted in an ruleio_stats, grouped by reason. Input
 * that is malformed (a bad term, a truncated protobuf) is an error with its
 * position, and nothing is imported or written.
 */
#ifndef SUPEROPT_RULEIO_H
#define SUPEROPT_RULEIO_H

#include "../ir/ir.h"

typedef enum ruleio_format {
  RULEIO_TASO_TEXT, /* TASO's terms, one `LHS == RHS` per line (import only) */
  RULEIO_TASO_PB,   /* TASO's GraphSubst.RuleCollection protobuf */
  RULEIO_TENSAT, /* Tensat's rewrite text: `(lhs)=>(rhs)` per line (export) */
  RULEIO_JSON,   /* this project's JSON schema (export) */
  RULEIO_TENSAT_MULTI /* Tensat's multi-pattern rules: two lines per rule */
} ruleio_format;

/* Format by name ("taso-text", "taso-pb", "tensat", "json",
 * "tensat-multi"); -1 if none. */
int ruleio_format_lookup(const char *name);
const char *ruleio_format_name(ruleio_format f);

/* What kind of reason left a rule out: the format cannot express it, it is
 * the same as an earlier rule, or the other Tensat format writes it
 * (tensat: one output, tensat-multi: two). */
typedef enum ruleio_skip_kind {
  RULEIO_SKIP_UNSUPPORTED,
  RULEIO_SKIP_DUPLICATE,
  RULEIO_SKIP_OTHER_FORMAT,
  RULEIO_SKIP_KINDS
} ruleio_skip_kind;

/* One reason rules were skipped, with where each skipped rule came from:
 * its line (TASO text), its 1-based position in the collection (TASO .pb)
 * or its 1-based position in the exported set (export). */
typedef struct ruleio_reason {
  char *what;            /* e.g. "unknown term 'Iewmul'" (malloc'd) */
  ruleio_skip_kind kind; /* the kind of every rule counted here */
  int count;             /* rules skipped for this reason */
  int *where;            /* count positions (malloc'd) */
  int capwhere;          /* allocated length of where */
} ruleio_reason;

typedef struct ruleio_stats {
  int done;    /* rules imported or exported */
  int skipped; /* rules skipped (sum of the reasons' counts) */
  int by_kind[RULEIO_SKIP_KINDS]; /* skipped, by kind of reason */
  int filtered; /* export: rules left out because not proven (no --all) */
  ruleio_reason *reasons;
  int nreasons, capreasons;
} ruleio_stats;

void ruleio_stats_init(ruleio_stats *st);
void ruleio_stats_free(ruleio_stats *st);
/* Counts one skipped rule at position `where` under reason `what` (an
 * unsupported rule: ruleio_stats_skip; or of the given kind). */
base_status ruleio_stats_skip(ruleio_stats *st, const char *what, int where);
base_status ruleio_stats_skip_as(ruleio_stats *st, ruleio_skip_kind kind,
                                 const char *what, int where);

/* ---- import -------------------------------------------------------------- */

/* Reads TASO's rule text (one `LHS == RHS` a line; blank lines and lines
 * starting with '#' are ignored) into out (initialised here), each rule
 * unverified with id "taso-<line>". st (may be NULL) counts imported and
 * skipped rules. On a malformed line returns an error with d holding
 * file:line:col, and out is left empty. */
base_status ruleio_import_taso_text(const char *path, ir_ruleset *out,
                                    ruleio_stats *st, base_diag *d);
base_status ruleio_import_taso_text_mem(const char *text, size_t len,
                                        const char *file, ir_ruleset *out,
                                        ruleio_stats *st, base_diag *d);

/* Reads a TASO GraphSubst.RuleCollection (.pb) into out, ids "taso-pb-<n>"
 * (n from 1). Abstract inputs (opId -N) become inputs named input_N with the
 * shapes of TASO's text rules where those type-check, else the nearest
 * assignment of TASO's shapes that does (docs/interop.md). A truncated or
 * malformed message is an error; out is left empty. */
base_status ruleio_import_taso_pb(const char *path, ir_ruleset *out,
                                  ruleio_stats *st, base_diag *d);
base_status ruleio_import_taso_pb_mem(const uint8_t *data, size_t len,
                                      const char *file, ir_ruleset *out,
                                      ruleio_stats *st, base_diag *d);

/* ---- export -------------------------------------------------------------- */

enum { RULEIO_EXPORT_ALL = 1 }; /* flags: export every rule, not only proven */

/* Serialises rs in format f (RULEIO_TASO_PB, RULEIO_TENSAT or RULEIO_JSON) into
 * a malloc'd buffer *out of *len bytes (NUL-terminated for text formats). Only
 * proven rules unless flags has RULEIO_EXPORT_ALL; rules the format cannot
 * express are skipped and counted in st (may be NULL). */
base_status ruleio_export_mem(const ir_ruleset *rs, ruleio_format f, int flags,
                              char **out, size_t *len, ruleio_stats *st,
                              base_diag *d);
/* The same, written atomically to path. */
base_status ruleio_export(const ir_ruleset *rs, ruleio_format f, int flags,
                          const char *path, ruleio_stats *st, base_diag *d);

#endif
