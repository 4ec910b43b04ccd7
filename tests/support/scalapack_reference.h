// SPDX-License-Identifier: BSD-3-Clause
/* Test and benchmark support: the prototypes of BLACS and reference ScaLAPACK (the
 * oracle of the tests, the baseline of the benchmark). Fortran routines take every
 * argument by pointer. */
#ifndef CONVEYOR_SCALAPACK_REFERENCE_H
#define CONVEYOR_SCALAPACK_REFERENCE_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* BLACS */
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridmap(int* ctxt, int* usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
void Cblacs_pinfo(int* mypnum, int* nprocs);
/* Element-wise sum over a scope of the grid ("All"); rdest = -1: everyone gets it.
 * (BLACS's max and min, Cigamx2d / Cigamn2d, compare absolute values.) */
void Cigsum2d(int ctxt, const char* scope, const char* top, int m, int n, int* a, int lda, int rdest, int cdest);
MPI_Comm Cblacs2sys_handle(int sys_ctxt);

/* ScaLAPACK tools */
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);

/* The reference routines the drop-ins replace */
void pdgemr2d_(const int* m, const int* n, const double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
void pzgemr2d_(const int* m, const int* n, const double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
void Cpdgemr2d(int m, int n, double* a, int ia, int ja, int* desca, double* b, int ib, int jb, int* descb, int ictxt);
void pdtrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const double* a, const int* ia,
               const int* ja, const int* desca, double* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
void pztrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const double* a, const int* ia,
               const int* ja, const int* desca, double* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
void pdtran_(const int* m, const int* n, const double* alpha, const double* a, const int* ia, const int* ja,
             const int* desca, const double* beta, double* c, const int* ic, const int* jc, const int* descc);
void pztranu_(const int* m, const int* n, const double* alpha, const double* a, const int* ia, const int* ja,
              const int* desca, const double* beta, double* c, const int* ic, const int* jc, const int* descc);
void pztranc_(const int* m, const int* n, const double* alpha, const double* a, const int* ia, const int* ja,
              const int* desca, const double* beta, double* c, const int* ic, const int* jc, const int* descc);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_SCALAPACK_REFERENCE_H */
