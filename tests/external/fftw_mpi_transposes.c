// SPDX-License-Identifier: BSD-3-Clause
/* FFTW-MPI's distributed transposes (fftw_mpi_plan_many_transpose, Debian's
 * libfftw3-mpi) run as an unmodified program, checked element by element against
 * the serial transpose. FFTW's planner picks among its transpose algorithms
 * (MPI_Alltoall / MPI_Alltoallv, pairwise MPI_Sendrecv, recursive); under
 * FFTW_MEASURE it runs every candidate while planning, so libconveyor_mpi serves
 * the all-to-all ones whichever wins. Rank 0 prints how many plans chose each
 * algorithm and one line "fftw-mpi transposes: N passed, M failed".
 *
 * Cases: N0 x N1 matrices of `howmany` doubles per element (1, 2: complex, 3),
 * square, tall, wide, sizes not divisible by the rank count, fewer rows than
 * ranks, FFTW's default blocks and uneven explicit ones; out of place and in
 * place.
 *
 * usage: fftw_mpi_transposes estimate|measure
 */
#include <fftw3-mpi.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double value(ptrdiff_t i, ptrdiff_t j, ptrdiff_t k) { return (double)(i * 100003 + j * 101 + k) + 0.25; }

static int g_alltoall, g_pairwise, g_recurse, g_other;

static void count_solver(fftw_plan p) {
  char* s = fftw_sprint_plan(p);
  if (!s) return;
  if (strstr(s, "mpi-transpose-alltoall")) ++g_alltoall;
  else if (strstr(s, "mpi-transpose-pairwise")) ++g_pairwise;
  else if (strstr(s, "mpi-transpose-recurse")) ++g_recurse;
  else ++g_other;
  free(s);
}

/* One case; returns the number of wrong elements over every rank. */
static long run_case(ptrdiff_t n0, ptrdiff_t n1, ptrdiff_t howmany, ptrdiff_t block0, ptrdiff_t block1, int in_place,
                     unsigned flags, int rank) {
  ptrdiff_t ln0, s0, ln1, s1;
  const ptrdiff_t n[2] = {n0, n1};
  ptrdiff_t alloc =
      fftw_mpi_local_size_many_transposed(2, n, howmany, block0, block1, MPI_COMM_WORLD, &ln0, &s0, &ln1, &s1);
  if (alloc < 1) alloc = 1;
  double* in = fftw_alloc_real((size_t)alloc);
  double* out = in_place ? in : fftw_alloc_real((size_t)alloc);
  fftw_plan p = fftw_mpi_plan_many_transpose(n0, n1, howmany, block0, block1, in, out, MPI_COMM_WORLD, flags);
  long wrong = 0;
  if (!p) {
    wrong = 1;
  } else {
    if (rank == 0) count_solver(p);
    for (ptrdiff_t i = 0; i < ln0; ++i)
      for (ptrdiff_t j = 0; j < n1; ++j)
        for (ptrdiff_t k = 0; k < howmany; ++k) in[(i * n1 + j) * howmany + k] = value(s0 + i, j, k);
    fftw_execute(p);
    for (ptrdiff_t j = 0; j < ln1; ++j)
      for (ptrdiff_t i = 0; i < n0; ++i)
        for (ptrdiff_t k = 0; k < howmany; ++k) wrong += out[(j * n0 + i) * howmany + k] != value(i, s1 + j, k);
    fftw_destroy_plan(p);
  }
  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (total && rank == 0) {
    printf("FAILED: %td x %td x %td, blocks %td/%td, %s: %ld wrong\n", n0, n1, howmany, block0, block1,
           in_place ? "in place" : "out of place", total);
  }
  fftw_free(in);
  if (!in_place) fftw_free(out);
  return total;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  fftw_mpi_init();
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const unsigned flags = argc > 1 && strcmp(argv[1], "measure") == 0 ? FFTW_MEASURE : FFTW_ESTIMATE;
  const ptrdiff_t sizes[][2] = {{8, 8}, {7, 13}, {64, 48}, {100, 37}, {1, 5}, {3, 200}, {256, 256}, {12, 96}};
  const ptrdiff_t hows[] = {1, 2, 3};
  int passed = 0, failed = 0;
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; ++c) {
    for (size_t h = 0; h < 3; ++h) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        for (int blocks = 0; blocks < 2; ++blocks) {
          const ptrdiff_t n0 = sizes[c][0], n1 = sizes[c][1];
          /* Uneven explicit blocks: one more row than an equal share, so the last ranks get less or none. */
          const ptrdiff_t b0 = blocks ? (n0 + P - 1) / P + 1 : FFTW_MPI_DEFAULT_BLOCK;
          const ptrdiff_t b1 = blocks ? (n1 + P - 1) / P + 1 : FFTW_MPI_DEFAULT_BLOCK;
          if (run_case(n0, n1, hows[h], b0, b1, in_place, flags, rank)) ++failed;
          else ++passed;
        }
      }
    }
  }
  if (rank == 0) {
    printf("plans: %d alltoall, %d pairwise, %d recurse, %d other\n", g_alltoall, g_pairwise, g_recurse, g_other);
    printf("fftw-mpi transposes: %d passed, %d failed\n", passed, failed);
  }
  fftw_mpi_cleanup();
  MPI_Finalize();
  return failed != 0;
}
