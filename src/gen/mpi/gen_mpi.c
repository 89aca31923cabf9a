/* gen_mpi.c: fp_comm on MPI (MPI_COMM_WORLD). alltoallv is a pairwise
 * exchange in steps (rank + k, rank - k), each message cut into pieces of
 * at most 1 GiB, so that no count overflows MPI's int; allgatherv gathers
 * the sizes first. MPI errors abort the job (MPI's default handler), which
 * mpirun reports naming the rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_mpi.h"

#define PIECE (1u << 30) /* bytes per message at most */

int gen_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
         getenv("PMI_RANK");
}

int gen_mpi_local_size(void) {
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int n = s ? atoi(s) : 1;
  return n > 0 ? n : 1;
}

int gen_mpi_world_size(void) {
  const char *s = getenv("OMPI_COMM_WORLD_SIZE");
  int n = s ? atoi(s) : 1;
  return n > 0 ? n : 1;
}

/* A rank that cannot hold an exchange's buffers stops the job: its peers
 * are already waiting for its data. */
static void oom_abort(void) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "superopt: rank %d: out of memory in an exchange\n", rank);
  MPI_Abort(MPI_COMM_WORLD, 3);
  exit(3);
}

/* Sends n bytes to peer `to` while receiving m bytes from `from`. */
static void sendrecv(const char *send, size_t n, int to, char *recv, size_t m,
                     int from) {
  while (n || m) {
    int a = (int)(n < PIECE ? n : PIECE), b = (int)(m < PIECE ? m : PIECE);
    MPI_Sendrecv(send, a, MPI_BYTE, to, 0, recv, b, MPI_BYTE, from, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    send += a, n -= (size_t)a, recv += b, m -= (size_t)b;
  }
}

static base_status mpi_alltoallv(void *u, const void *send, const size_t *sendn,
                                 void **recv, size_t *recvn, base_diag *d) {
  int rank, size;
  (void)u;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  uint64_t *sn = base_malloc((size_t)size * sizeof *sn);
  uint64_t *rn = base_malloc((size_t)size * sizeof *rn);
  size_t *soff = base_calloc((size_t)size + 1, sizeof *soff);
  size_t *roff = base_calloc((size_t)size + 1, sizeof *roff);
  (void)d;
  if (!sn || !rn || !soff || !roff)
    oom_abort();
  for (int j = 0; j < size; j++)
    sn[j] = sendn[j];
  MPI_Alltoall(sn, 1, MPI_UINT64_T, rn, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (int j = 0; j < size; j++) {
    recvn[j] = rn[j];
    soff[j + 1] = soff[j] + sendn[j];
    roff[j + 1] = roff[j] + recvn[j];
  }
  char *r = base_malloc(roff[size] ? roff[size] : 1);
  if (!r)
    oom_abort();
  for (int k = 0; k < size; k++) {
    int to = (rank + k) % size, from = (rank - k + size) % size;
    sendrecv((const char *)send + soff[to], sendn[to], to, r + roff[from],
             recvn[from], from);
  }
  *recv = r;
  free(sn), free(rn), free(soff), free(roff);
  return BASE_OK;
}

static base_status mpi_allgatherv(void *u, const void *send, size_t n,
                                  void **recv, size_t *recvn, base_diag *d) {
  int size;
  (void)u;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  uint64_t mine = n, *all = base_malloc((size_t)size * sizeof *all);
  int *cnt = base_malloc((size_t)size * sizeof *cnt);
  int *off = base_malloc((size_t)size * sizeof *off);
  if (!all || !cnt || !off)
    oom_abort();
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  uint64_t total = 0;
  for (int j = 0; j < size; j++) {
    recvn[j] = all[j];
    off[j] = (int)total;
    cnt[j] = (int)all[j];
    total += all[j];
  }
  free(all);
  if (total > INT32_MAX) { /* the same on every rank */
    free(cnt), free(off);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                         "gathering %llu bytes: over 2 GiB",
                         (unsigned long long)total);
  }
  char *r = base_malloc(total ? total : 1);
  if (!r)
    oom_abort();
  MPI_Allgatherv(send, (int)n, MPI_BYTE, r, cnt, off, MPI_BYTE, MPI_COMM_WORLD);
  free(cnt), free(off);
  *recv = r;
  return BASE_OK;
}

base_status gen_mpi_init(fp_comm *c, base_diag *d) {
  int provided;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "MPI_Init failed");
  memset(c, 0, sizeof *c);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size);
  c->alltoallv = mpi_alltoallv;
  c->allgatherv = mpi_allgatherv;
  return BASE_OK;
}

void gen_mpi_finish(void) { MPI_Finalize(); }
