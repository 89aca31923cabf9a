/* srch_int.h: internals of the search module's files. */
#ifndef SUPEROPT_SRCH_INT_H
#define SUPEROPT_SRCH_INT_H

#include "../pass/pass.h"
#include "../rewrite/rewrite_int.h"
#include "search.h"

/* srch_search with an absolute deadline (0: none), no time accounting. */
ir_graph *srch_search_until(const ir_graph *g, const rewrite_rules *rules,
                            const srch_options *o, double deadline,
                            srch_stats *st, base_diag *d);

#endif
