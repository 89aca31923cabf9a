/* ruleio_int.h: internals shared by the files of src/ruleio/.
 *
 * Both TASO importers first produce a term DAG in TASO's own vocabulary
 * (ruleio_terms): operators with TASO's integer parameters, abstract inputs
 * input_N and shape-less constants (Iconv, Cpool, Imatmul). ruleio_build then
 * turns the two sides of a rule into ir_graphs: it gives the inputs their
 * shapes, infers each constant's shape from where it is used, finds the
 * split point of each split, and merges common subterms.
 */
#ifndef SUPEROPT_RI_INT_H
#define SUPEROPT_RI_INT_H

#include "ruleio.h"

/* TASO-level term kinds. */
typedef enum ruleio_tk {
  RT_INPUT,     /* input_N: p[0] = N */
  RT_CONV,      /* p = sh sw pad act; in = x w */
  RT_POOLAVG,   /* p = kh kw sh sw pad */
  RT_POOLMAX,   /* p = kh kw sh sw pad */
  RT_CONCAT,    /* p[0] = axis; in = 2 or more */
  RT_SPLIT,     /* p[0] = axis, p[1] = which output (0 or 1), p[2] = size
                   of the first part (0: where a concat joined) */
  RT_ENLARGE,   /* p = kh kw; in = w */
  RT_ICONV,     /* p = kh kw, then p[2] = rank (0: from context), p[3..] */
  RT_CPOOL,     /* p = kh kw, then as RT_ICONV */
  RT_IMATMUL,   /* p[0] = n of its [n,n] shape (0: from context) */
  RT_SMUL,      /* in = a s */
  RT_EWADD,     /* in = a b */
  RT_EWMUL,     /* in = a b */
  RT_MATMUL,    /* p[0] = act; in = a b */
  RT_RELU,      /* in = a */
  RT_SIGMOID,   /* in = a */
  RT_TANH,      /* in = a */
  RT_TRANSPOSE, /* p[0] = n, p[1..n] = perm; empty perm (n = 0): [1,0] */
  RT_CONES,     /* const_ones: p[0] = rank, p[1..rank] = shape */
  RT_NKINDS
} ruleio_tk;

#define RULEIO_MAX_TP 8     /* parameters of one term */
#define RULEIO_MAX_TIN 8    /* inputs of one term */
#define RULEIO_MAX_INPUT 64 /* largest N of input_N */

typedef struct ruleio_term {
  ruleio_tk k;
  int np, nin;
  int p[RULEIO_MAX_TP];
  int in[RULEIO_MAX_TIN]; /* term indices */
  int col;                /* where it starts in its line (text import), or 0 */
} ruleio_term;

/* A growable table of hash-consed terms: equal terms get one index. */
typedef struct ruleio_terms {
  ruleio_term *t;
  int n, cap;
} ruleio_terms;

void ruleio_terms_free(ruleio_terms *ts);
/* Index of term x, adding it if new; -1 on out of memory. */
int ruleio_terms_intern(ruleio_terms *ts, const ruleio_term *x);

/* Shapes chosen for inputs input_1..input_N (rank -1: not set), with the
 * name and kind an input carries (name NULL: "input_N"; weight 0: input). */
typedef struct ruleio_inshapes {
  ir_shape s[RULEIO_MAX_INPUT + 1];
  const char *name[RULEIO_MAX_INPUT + 1];
  char weight[RULEIO_MAX_INPUT + 1];
} ruleio_inshapes;

/* TASO's shapes for input_1..input_20 (rank -1 elsewhere). */
void ruleio_taso_inshapes(ruleio_inshapes *sh);

/* Builds the rule whose outputs are terms src[0..n-1] and dst[0..n-1] and
 * appends it to rs with id `id` and `note`, status unverified. On a term
 * that cannot be expressed returns BASE_ERR_SHAPE (or another code) with a
 * short reason in why (why_n bytes). */
base_status ruleio_build_rule(const ruleio_terms *ts, const int *src,
                              const int *dst, int n, const ruleio_inshapes *sh,
                              const char *id, const char *note, ir_ruleset *rs,
                              char *why, size_t why_n);

/* Growable text buffer: base_buf (ir.h). */
typedef base_buf ruleio_buf;
#define ruleio_put base_buf_put
#define ruleio_puts base_buf_puts
#define ruleio_printf base_buf_printf

/* Exporters: append rs's rules in one format to b, counting into st.
 * `use[i]` says whether rule i is to be exported. */
/* Tensat: multi = 0 writes the one-output rules (Tensat's --rules file),
 * multi = 1 the two-output ones (its --multi_rules file). */
base_status ruleio_write_tensat(const ir_ruleset *rs, const char *use,
                                int multi, ruleio_buf *b, ruleio_stats *st,
                                base_diag *d);
base_status ruleio_write_json(const ir_ruleset *rs, const char *use,
                              ruleio_buf *b, ruleio_stats *st, base_diag *d);
base_status ruleio_write_taso_pb(const ir_ruleset *rs, const char *use,
                                 ruleio_buf *b, ruleio_stats *st, base_diag *d);

/* Index of input_N's N in a tensor name "input_N", or 0 if not of that
 * form (or N out of 1..RULEIO_MAX_INPUT). */
int ruleio_input_number(const char *name);

#endif
