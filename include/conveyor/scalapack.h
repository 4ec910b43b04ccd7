// SPDX-License-Identifier: BSD-3-Clause
/* ScaLAPACK drop-ins backed by Conveyor's Redistribute engine, with ScaLAPACK's
 * exact Fortran calling convention (every argument by pointer; descriptors of 9
 * integers; BLACS contexts). Library `conveyor_scalapack` (link it together with
 * the ScaLAPACK/BLACS library that created the contexts).
 *
 *   conveyor_p?gemr2d: B(ib:ib+m-1, jb:jb+n-1) = A(ia:ia+m-1, ja:ja+n-1), A and B on
 *                      any two BLACS grids inside the context ictxt.
 *   conveyor_p?tran:   C(ic:ic+m-1, jc:jc+n-1) = beta*C + alpha*A(ia:ia+n-1, ja:ja+m-1)^T
 *                      (p{s,d}tran; p{c,z}tranu the same for complex; p{c,z}tranc with A^H).
 *
 * Descriptors: ScaLAPACK's 9 integers (DTYPE 1) or PBLAS's 11 (DTYPE 2, with the first
 * block sizes IMB, INB). Processes outside a grid pass CTXT = -1 in its descriptor.
 *
 * Library `conveyor_scalapack_compat` exports the same routines under ScaLAPACK's
 * own names (pdgemr2d_, pztranc_, ...) for link-time interposition. */
#ifndef CONVEYOR_SCALAPACK_H
#define CONVEYOR_SCALAPACK_H

#if defined(_WIN32)
#define CONVEYOR_SCALAPACK_API
#else
#define CONVEYOR_SCALAPACK_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

CONVEYOR_SCALAPACK_API void conveyor_psgemr2d(const int* m, const int* n, const float* a, const int* ia, const int* ja,
                                              const int* desca, float* b, const int* ib, const int* jb,
                                              const int* descb, const int* ictxt);
CONVEYOR_SCALAPACK_API void conveyor_pdgemr2d(const int* m, const int* n, const double* a, const int* ia, const int* ja,
                                              const int* desca, double* b, const int* ib, const int* jb,
                                              const int* descb, const int* ictxt);
/* complex: interleaved (re, im) pairs, as Fortran COMPLEX / COMPLEX*16 */
CONVEYOR_SCALAPACK_API void conveyor_pcgemr2d(const int* m, const int* n, const float* a, const int* ia, const int* ja,
                                              const int* desca, float* b, const int* ib, const int* jb,
                                              const int* descb, const int* ictxt);
CONVEYOR_SCALAPACK_API void conveyor_pzgemr2d(const int* m, const int* n, const double* a, const int* ia, const int* ja,
                                              const int* desca, double* b, const int* ib, const int* jb,
                                              const int* descb, const int* ictxt);

CONVEYOR_SCALAPACK_API void conveyor_pigemr2d(const int* m, const int* n, const int* a, const int* ia, const int* ja,
                                              const int* desca, int* b, const int* ib, const int* jb, const int* descb,
                                              const int* ictxt);

/* p?trmr2d: only the trapezoid of the m x n submatrix (ScaLAPACK's rule: UPLO 'U'
 * copies rows i <= j + max(m - n, 0), 'L' rows i >= j - max(n - m, 0), 0-based
 * within the submatrix; DIAG 'U' leaves the diagonal out). s, d, c, z, i as above. */
#define CONVEYOR_SCALAPACK_TRMR2D(x, T)                                                                               \
  CONVEYOR_SCALAPACK_API void conveyor_p##x##trmr2d(const char* uplo, const char* diag, const int* m, const int* n,   \
                                                    const T* a, const int* ia, const int* ja, const int* desca, T* b, \
                                                    const int* ib, const int* jb, const int* descb, const int* ictxt);
CONVEYOR_SCALAPACK_TRMR2D(s, float)
CONVEYOR_SCALAPACK_TRMR2D(d, double)
CONVEYOR_SCALAPACK_TRMR2D(c, float)
CONVEYOR_SCALAPACK_TRMR2D(z, double)
CONVEYOR_SCALAPACK_TRMR2D(i, int)
#undef CONVEYOR_SCALAPACK_TRMR2D

/* ScaLAPACK's C entry points (arguments by value): conveyor_Cp?gemr2d, conveyor_Cp?trmr2d. */
#define CONVEYOR_SCALAPACK_C(x, T)                                                                                 \
  CONVEYOR_SCALAPACK_API void conveyor_Cp##x##gemr2d(int m, int n, T* a, int ia, int ja, int* desca, T* b, int ib, \
                                                     int jb, int* descb, int ictxt);                               \
  CONVEYOR_SCALAPACK_API void conveyor_Cp##x##trmr2d(char* uplo, char* diag, int m, int n, T* a, int ia, int ja,   \
                                                     int* desca, T* b, int ib, int jb, int* descb, int ictxt);
CONVEYOR_SCALAPACK_C(s, float)
CONVEYOR_SCALAPACK_C(d, double)
CONVEYOR_SCALAPACK_C(c, float)
CONVEYOR_SCALAPACK_C(z, double)
CONVEYOR_SCALAPACK_C(i, int)
#undef CONVEYOR_SCALAPACK_C

CONVEYOR_SCALAPACK_API void conveyor_pstran(const int* m, const int* n, const float* alpha, const float* a,
                                            const int* ia, const int* ja, const int* desca, const float* beta, float* c,
                                            const int* ic, const int* jc, const int* descc);
CONVEYOR_SCALAPACK_API void conveyor_pdtran(const int* m, const int* n, const double* alpha, const double* a,
                                            const int* ia, const int* ja, const int* desca, const double* beta,
                                            double* c, const int* ic, const int* jc, const int* descc);

/* complex alpha, beta, A and C as interleaved (re, im); tranu: C = beta*C + alpha*A^T,
 * tranc: C = beta*C + alpha*A^H */
CONVEYOR_SCALAPACK_API void conveyor_pctranu(const int* m, const int* n, const float* alpha, const float* a,
                                             const int* ia, const int* ja, const int* desca, const float* beta,
                                             float* c, const int* ic, const int* jc, const int* descc);
CONVEYOR_SCALAPACK_API void conveyor_pztranu(const int* m, const int* n, const double* alpha, const double* a,
                                             const int* ia, const int* ja, const int* desca, const double* beta,
                                             double* c, const int* ic, const int* jc, const int* descc);
CONVEYOR_SCALAPACK_API void conveyor_pctranc(const int* m, const int* n, const float* alpha, const float* a,
                                             const int* ia, const int* ja, const int* desca, const float* beta,
                                             float* c, const int* ic, const int* jc, const int* descc);
CONVEYOR_SCALAPACK_API void conveyor_pztranc(const int* m, const int* n, const double* alpha, const double* a,
                                             const int* ia, const int* ja, const int* desca, const double* beta,
                                             double* c, const int* ic, const int* jc, const int* descc);

/* Plans kept per process set (default 8, or CONVEYOR_SCALAPACK_CACHE): a call that
 * repeats reuses its plan. 0: every call plans, runs and frees its plan (cold).
 * Set the same value on every process (both change which calls plan). */
CONVEYOR_SCALAPACK_API void conveyor_scalapack_set_cache_size(int calls);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_SCALAPACK_H */
