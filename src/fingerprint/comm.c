/* comm.c: fp_comm_agree, how the ranks of a distributed run learn that one
 * of them failed. Each rank's status and diagnostic go to every rank; all
 * stop with the lowest failing rank's error, named by its rank, so that no
 * rank waits forever in a later collective and nothing is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp.h"

base_status fp_comm_agree(const fp_comm *c, base_status st, base_diag *d) {
  if (!c || c->size <= 1)
    return st;
  base_diag mine = {0}, *all = NULL;
  size_t *n = base_calloc((size_t)c->size, sizeof *n);
  if (st) {
    mine = *d;
    mine.code = st;
  }
  base_diag tmp;
  base_status s =
      n ? c->allgatherv(c->u, &mine, sizeof mine, (void **)&all, n, &tmp)
        : BASE_ERR_NOMEM;
  free(n);
  if (s) { /* the collective itself failed: this rank's view only */
    if (!st)
      *d = tmp;
    return st ? st : s;
  }
  for (int r = 0; r < c->size; r++)
    if (all[r].code) {
      base_diag f = all[r];
      char pre[32];
      int k = snprintf(pre, sizeof pre, "rank %d: ", r);
      *d = f; /* agreed on already (a later stage's check): named once */
      if (strncmp(f.msg, pre, (size_t)k))
        snprintf(d->msg, sizeof d->msg, "%.31s%.470s", pre, f.msg);
      st = f.code;
      break;
    }
  free(all);
  return st;
}
