// SPDX-License-Identifier: BSD-3-Clause
/* Internal: the four BLACS routines the drop-ins call (from the reference ScaLAPACK
 * library, which creates the contexts Conveyor is handed). */
#ifndef CONVEYOR_SCALAPACK_BLACS_H
#define CONVEYOR_SCALAPACK_BLACS_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
/* Element-wise sum over a scope of the grid ("All"); rdest = -1: everyone gets it. */
void Cigsum2d(int ctxt, const char* scope, const char* top, int m, int n, int* a, int lda, int rdest, int cdest);
MPI_Comm Cblacs2sys_handle(int sys_ctxt);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_SCALAPACK_BLACS_H */
