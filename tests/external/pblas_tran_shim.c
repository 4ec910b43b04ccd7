// SPDX-License-Identifier: BSD-3-Clause
/* Test-side shim for ScaLAPACK's PBLAS level-3 testers (tests/external/pblas_testers.sh).
 *
 * The testers do not call p?tran, but their P?GEADD and P?TRADD with TRANS = 'T'
 * or 'C' compute exactly what p?tran / p?tranu / p?tranc compute:
 *   sub(C) := beta * sub(C) + alpha * sub(A)^T  (^H for 'C', complex)
 * (P?TRADD on the UPLO trapezoid of sub(C) only). Linked ahead of ScaLAPACK, this
 * shim sends those calls to the p?tran* that the program sees first, which the
 * test links from libconveyor_scalapack_compat; TRANS = 'N' goes on to
 * ScaLAPACK's own routine (dlsym RTLD_NEXT). For P?TRADD it saves the elements of
 * sub(C) outside the trapezoid, runs the transposition on all of sub(C) and puts
 * them back. At exit it prints how many calls it sent each way, so the test can
 * match them against Conveyor's own count (CONVEYOR_SCALAPACK_REPORT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);

typedef void tran_fn(const int* m, const int* n, const void* alpha, const void* a, const int* ia, const int* ja,
                     const int* desca, const void* beta, void* c, const int* ic, const int* jc, const int* descc);
/* The transpositions the program sees first (Conveyor's, from libconveyor_scalapack_compat),
 * declared with untyped scalars and arrays: the same calling convention. */
tran_fn pdtran_, pztranu_, pztranc_;

static long routed, passed_on;
static void report(void) { fprintf(stderr, "pblas shim: %ld calls to p?tran, %ld to ScaLAPACK\n", routed, passed_on); }
static void count(int to_tran) {
  static int registered;
  if (!registered) registered = 1, atexit(report);
  if (to_tran) ++routed;
  else ++passed_on;
}

static int transposes(const char* trans) { return strchr("TtCc", *trans) != NULL; }

/* The global indices (0-based) of this process's rows (or columns) of a dimension
 * of n split into a first block of `first` and then blocks of nb, block 0 on
 * process src of nprocs; returns how many. */
static int held(int n, int first, int nb, int src, int nprocs, int me, int* out) {
  int count = 0;
  for (int g = 0; g < n; ++g) {
    const int block = g < first ? 0 : 1 + (g - first) / nb;
    if ((src + block) % nprocs == me) out[count++] = g;
  }
  return count;
}

/* Runs `tran` on sub(C) but keeps the elements of sub(C) outside its UPLO
 * trapezoid as they were. */
static void tran_on_trapezoid(tran_fn* tran, size_t esize, const char* uplo, const int* m, const int* n,
                              const void* alpha, const void* a, const int* ia, const int* ja, const int* desca,
                              const void* beta, void* c, const int* ic, const int* jc, const int* descc) {
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
  if (descc[1] >= 0) Cblacs_gridinfo(descc[1], &nprow, &npcol, &myrow, &mycol);
  if (myrow < 0 || mycol < 0 || *m <= 0 || *n <= 0) {
    tran(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);
    return;
  }
  const int dtype2 = descc[0] == 2; /* PBLAS's 11 integers: first blocks IMB, INB */
  const int M = descc[2], N = descc[3];
  const int imb = descc[4], inb = descc[5];
  const int mb = dtype2 ? descc[6] : imb, nb = dtype2 ? descc[7] : inb;
  const int rsrc = descc[dtype2 ? 8 : 6], csrc = descc[dtype2 ? 9 : 7], lld = descc[dtype2 ? 10 : 8];
  int* rows = malloc(sizeof(int) * (size_t)(M > 0 ? M : 1));
  int* cols = malloc(sizeof(int) * (size_t)(N > 0 ? N : 1));
  const int nr = held(M, imb, mb, rsrc, nprow, myrow, rows), nc = held(N, inb, nb, csrc, npcol, mycol, cols);
  size_t kept = 0;
  size_t* where = malloc(sizeof(size_t) * ((size_t)nr * (size_t)nc + 1));
  char* saved = malloc(esize * ((size_t)nr * (size_t)nc + 1));
  const int upper = *uplo == 'U' || *uplo == 'u';
  for (int lj = 0; lj < nc; ++lj) {
    for (int li = 0; li < nr; ++li) {
      const int i = rows[li] - (*ic - 1), j = cols[lj] - (*jc - 1);
      if (i < 0 || j < 0 || i >= *m || j >= *n) continue; /* outside sub(C): not touched anyway */
      if (upper ? i <= j : i >= j) continue;              /* in the trapezoid: updated */
      where[kept] = (size_t)li + (size_t)lj * (size_t)lld;
      memcpy(saved + kept * esize, (char*)c + where[kept] * esize, esize);
      ++kept;
    }
  }
  tran(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);
  for (size_t k = 0; k < kept; ++k) memcpy((char*)c + where[k] * esize, saved + k * esize, esize);
  free(rows), free(cols), free(where), free(saved);
}

/* P?GEADD(TRANS, M, N, ALPHA, A, IA, JA, DESCA, BETA, C, IC, JC, DESCC) */
#define GEADD(name, T, pick_tran)                                                                                     \
  typedef void name##_fn(const char*, const int*, const int*, const T*, const T*, const int*, const int*, const int*, \
                         const T*, T*, const int*, const int*, const int*, size_t);                                   \
  void name##_(const char* trans, const int* m, const int* n, const T* alpha, const T* a, const int* ia,              \
               const int* ja, const int* desca, const T* beta, T* c, const int* ic, const int* jc, const int* descc,  \
               size_t trans_len) {                                                                                    \
    if (transposes(trans)) {                                                                                          \
      count(1);                                                                                                       \
      (pick_tran)(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);                                             \
      return;                                                                                                         \
    }                                                                                                                 \
    count(0);                                                                                                         \
    ((name##_fn*)dlsym(RTLD_NEXT, #name "_"))(trans, m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc,           \
                                              trans_len);                                                             \
  }

/* P?TRADD(UPLO, TRANS, M, N, ALPHA, A, IA, JA, DESCA, BETA, C, IC, JC, DESCC) */
#define TRADD(name, T, pick_tran)                                                                                      \
  typedef void name##_fn(const char*, const char*, const int*, const int*, const T*, const T*, const int*, const int*, \
                         const int*, const T*, T*, const int*, const int*, const int*, size_t, size_t);                \
  void name##_(const char* uplo, const char* trans, const int* m, const int* n, const T* alpha, const T* a,            \
               const int* ia, const int* ja, const int* desca, const T* beta, T* c, const int* ic, const int* jc,      \
               const int* descc, size_t uplo_len, size_t trans_len) {                                                  \
    if (transposes(trans)) {                                                                                           \
      count(1);                                                                                                        \
      tran_on_trapezoid((pick_tran), sizeof(T), uplo, m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);          \
      return;                                                                                                          \
    }                                                                                                                  \
    count(0);                                                                                                          \
    ((name##_fn*)dlsym(RTLD_NEXT, #name "_"))(uplo, trans, m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc,      \
                                              uplo_len, trans_len);                                                    \
  }

/* Complex*16 as (re, im) pairs of double. */
typedef struct {
  double re, im;
} zcomplex;

GEADD(pdgeadd, double, pdtran_)
TRADD(pdtradd, double, pdtran_)
GEADD(pzgeadd, zcomplex, (*trans == 'C' || *trans == 'c') ? pztranc_ : pztranu_)
TRADD(pztradd, zcomplex, (*trans == 'C' || *trans == 'c') ? pztranc_ : pztranu_)
