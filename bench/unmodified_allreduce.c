// SPDX-License-Identifier: BSD-3-Clause
/* An unmodified MPI program: an OSU-style MPI_Allreduce loop in plain C and MPI,
 * with no Conveyor calls and no Conveyor headers. bench/preload_compare.py runs it
 * with and without libconveyor_mpi preloaded, alternating launches in rounds, and
 * reports the ratio at every size.
 *
 * For every size n = 2^k and 3*2^k bytes from --min to --max (float32 sum):
 * warm-up calls, then --samples samples; a sample is a barrier and K back-to-back
 * calls, K chosen by rank 0 so that a sample lasts ~2 ms and broadcast; its time
 * is the slowest rank's (MPI_Reduce MAX). The result is checked against the exact
 * sum (small integers in float32 are exact), so a wrong answer cannot look fast.
 * The warm-up is long enough to cover a tuning library's first calls of a size
 * (libconveyor_mpi's `auto` measures up to 3 candidates in at most 93, 45, 27 and
 * 15 calls below 32 KiB, 512 KiB, 8 MiB and above), like OSU's skip iterations, so
 * the samples show the settled behaviour.
 *
 * Output, rank 0, one line per sample: "size_bytes,microseconds_per_call,wrong".
 *
 * usage: unmodified_allreduce [--min BYTES] [--max BYTES] [--samples S]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double slowest(double seconds, MPI_Comm comm) {
  double max = 0;
  MPI_Reduce(&seconds, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  return max;
}

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = (size_t)64 << 20;
  int samples = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--min") == 0) min_bytes = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--max") == 0) max_bytes = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--samples") == 0) samples = atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  const size_t max_count = max_bytes / sizeof(float);
  float* send = malloc(max_count * sizeof(float) + 1);
  float* recv = malloc(max_count * sizeof(float) + 1);
  if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 1);
  /* Element i holds rank + (i mod 7): the sum is exact in float32. */
  for (size_t i = 0; i < max_count; ++i) send[i] = (float)(rank + (int)(i % 7));

  /* Every 2^k and 3*2^k bytes in [min, max], in increasing order. */
  for (size_t pow2 = 8; pow2 <= max_bytes; pow2 *= 2) {
    for (int three = 0; three < 2; ++three) {
      const size_t bytes = three ? pow2 + pow2 / 2 : pow2; /* 2^k, then 3*2^(k-1) */
      if (bytes < min_bytes || bytes > max_bytes) continue;
      const int count = (int)(bytes / sizeof(float));

      const int warmup = bytes < (32 << 10) ? 96 : bytes < (512 << 10) ? 48 : bytes < (8 << 20) ? 30 : 16;
      for (int w = 0; w < warmup; ++w) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      long wrong = 0;
      for (int i = 0; i < count; ++i) {
        const float want = (float)(size * (size - 1) / 2 + size * (i % 7));
        if (recv[i] != want) ++wrong;
      }
      long wrong_all = 0;
      MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      t = slowest(MPI_Wtime() - t, MPI_COMM_WORLD);
      int calls = 1;
      if (rank == 0) {
        calls = t > 0 ? (int)(2e-3 / t) : 10000;
        if (calls < 1) calls = 1;
        if (calls > 10000) calls = 10000;
      }
      MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);

      for (int s = 0; s < samples; ++s) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int c = 0; c < calls; ++c) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        const double elapsed = slowest(MPI_Wtime() - start, MPI_COMM_WORLD);
        if (rank == 0) printf("%zu,%.4f,%ld\n", bytes, elapsed / calls * 1e6, wrong_all);
      }
      if (rank == 0) fflush(stdout);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
