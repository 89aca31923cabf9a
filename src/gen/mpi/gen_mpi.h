/* gen_mpi.h: the collectives of a distributed gen-rules (fp_comm) on MPI,
 * for `mpirun -np N superopt gen-rules ...`. Built into the superopt tool
 * (not libsuperopt) when CMake finds MPI; the CLI calls gen_mpi_init only
 * when the process was started by mpirun (gen_mpi_launched), so without
 * mpirun nothing of MPI runs. docs/generation.md: "Several processes".
 */
#ifndef SUPEROPT_GEN_MPI_H
#define SUPEROPT_GEN_MPI_H

#include "../../fingerprint/fp.h"

/* Whether a launcher (Open MPI's mpirun, or a PMI/PMIx one) started this
 * process: its environment names a rank. Needs no MPI. */
int gen_mpi_launched(void);
/* Processes the launcher started on this node (1 if it does not say). */
int gen_mpi_local_size(void);
/* Processes the launcher started in all (1 if it does not say). */
int gen_mpi_world_size(void);

/* Initialises MPI and fills c (rank, size, collectives on
 * MPI_COMM_WORLD). */
base_status gen_mpi_init(fp_comm *c, base_diag *d);
/* Finalises MPI (after gen_mpi_init). */
void gen_mpi_finish(void);

#endif
