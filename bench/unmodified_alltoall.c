// SPDX-License-Identifier: BSD-3-Clause
/* An unmodified MPI program: all-to-all loops in plain C and MPI, with no Conveyor
 * calls and no Conveyor headers. bench/preload_compare.py runs it with and without
 * libconveyor_mpi preloaded, alternating launches in rounds (bench/alltoall.sh).
 *
 *   --call alltoall | alltoallv   contiguous MPI_BYTE parts, per-peer sizes 2^k and
 *                                 3*2^k from --min to --max bytes (alltoallv: the
 *                                 same counts, given as vectors, as FFT codes do)
 *                                 --beside-library 1: every sample is two blocks of K
 *                                 calls, one through MPI_ (Conveyor's when preloaded)
 *                                 and one through PMPI_ (the library's own), in
 *                                 alternating order, both printed (the PMPI_ block
 *                                 as "library,bytes,microseconds_per_call"): the
 *                                 same launch's buffers and placement on both
 *                                 sides, where launches of a shared VM differ by
 *                                 more than the gap measured
 *   --call slab --n N --type c128|f64
 *                                 mpi4py-fft's slab transfer: a local (N/P, N, N)
 *                                 C-order array sent as P subarrays (N/P, N/P, N)
 *                                 and received as (N/P) slabs of a (N, N/P, N)
 *                                 array: one MPI_Alltoallw with subarray types
 *                                 (the types made once, as mpi4py-fft does;
 *                                 --cold 1: made, committed and freed around
 *                                 every call, so every call decodes them anew;
 *                                 --alloc-mem 1: both arrays from MPI_Alloc_mem, as
 *                                 programs that want the library's memory do;
 *                                 --alloc-mem 2: each array a rank's part of an
 *                                 MPI_Win_allocate_shared window of the node)
 *   --call pencil --n N --type c128|f64
 *                                 mpi4py-fft's pencil transfer: the ranks as a
 *                                 P0 x P1 grid (P1 >= P0: 1 x 2 at 2 ranks), each (N/P0, N/P1, N) pencil sent
 *                                 on its row of P1 ranks as (N/P0, N/P1, N/P1)
 *                                 blocks of the last axis and received as the
 *                                 middle axis's blocks of an (N/P0, N, N/P1) one
 *
 * A sample is a barrier and K back-to-back calls (K from rank 0, so a sample lasts
 * ~2 ms or one call), timed as the slowest rank's. Every result is checked (each
 * element names its sender and position), so a wrong answer cannot look fast.
 * Rank 0 prints one line per sample: "bytes,microseconds_per_call,wrong", bytes
 * being those each rank receives per call (per peer for alltoall / alltoallv); and
 * for slab and pencil, lines "bound,<name>,<microseconds>" first: the same bytes copied by
 * one memcpy on every rank at once (the one-copy bound), and that plus one more
 * memcpy of the bytes that cross ranks (the bound of a path that copies those
 * twice, as a shared-memory transfer does).
 *
 * usage: unmodified_alltoall --call C [--min B] [--max B] [--n N] [--type T] [--cold 0|1] [--alloc-mem 0|1|2]
 *                            [--samples S] [--beside-library 0|1]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double slowest(double seconds, MPI_Comm comm) {
  double max = 0;
  MPI_Allreduce(&seconds, &max, 1, MPI_DOUBLE, MPI_MAX, comm);
  return max;
}

/* Calls per sample: enough for ~2 ms, decided by rank 0 from one timed call. */
static int calls_per_sample(double one_call) {
  int k = one_call > 0 ? (int)(2e-3 / one_call) : 1000;
  if (k < 1) k = 1;
  if (k > 10000) k = 10000;
  MPI_Bcast(&k, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return k;
}

static int value(int from, int to, size_t i) { return (int)((from * 7919u + to * 104729u + (unsigned)i) & 0x7fffffff); }

static void exchange(int v, unsigned char* send, unsigned char* recv, int n, const int* counts, const int* displs) {
  if (v) MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
  else MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
}

/* The same call through the profiling interface: the MPI library's own. */
static void library_exchange(int v, unsigned char* send, unsigned char* recv, int n, const int* counts,
                             const int* displs) {
  if (v) PMPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
  else PMPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
}

static void contiguous(const char* call, size_t min_bytes, size_t max_bytes, int samples, int beside) {
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  unsigned char* send = malloc(max_bytes * (size_t)P + 1);
  unsigned char* recv = malloc(max_bytes * (size_t)P + 1);
  int *counts = malloc(sizeof(int) * (size_t)P), *displs = malloc(sizeof(int) * (size_t)P);
  if (!send || !recv || !counts || !displs) MPI_Abort(MPI_COMM_WORLD, 1);
  const int v = strcmp(call, "alltoallv") == 0;
  for (size_t n = min_bytes; n <= max_bytes;) {
    for (int q = 0; q < P; ++q) {
      counts[q] = (int)n, displs[q] = (int)(n * (size_t)q);
      for (size_t i = 0; i < n; ++i) send[(size_t)q * n + i] = (unsigned char)value(rank, q, i);
    }
    memset(recv, 0, n * (size_t)P);
    exchange(v, send, recv, (int)n, counts, displs);
    int wrong = 0;
    for (int q = 0; q < P; ++q) {
      for (size_t i = 0; i < n; ++i) wrong |= recv[(size_t)q * n + i] != (unsigned char)value(q, rank, i);
    }
    /* 160 calls before timing: a served call of a new size class first times
     * Conveyor's exchange against the library's own (and, across nodes, the
     * node-aware exchange) over its first 62 calls at most on one node, 93
     * across nodes (conveyor::alltoall_auto, alltoallw_auto); MPI_Alltoallv /
     * w's trials start only after the 63 calls that follow a class decided for
     * the library (they run its call without a vote, whatever their size); and
     * the first call of a run sets up the communicator. The calls per sample
     * come from 4 calls after that, and the samples are the settled loop. */
    for (int w = 0; w < 160; ++w) exchange(v, send, recv, (int)n, counts, displs);
    for (int w = 0; beside && w < 8; ++w) library_exchange(v, send, recv, (int)n, counts, displs);
    double t0 = MPI_Wtime();
    for (int w = 0; w < 4; ++w) exchange(v, send, recv, (int)n, counts, displs);
    const int k = calls_per_sample(slowest(MPI_Wtime() - t0, MPI_COMM_WORLD) / 4);
    for (int s = 0; s < samples; ++s) {
      double t = 0, lib = 0;
      for (int half = 0; half < 1 + beside; ++half) {
        const int through_library = beside && (half + s) % 2 == 1;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int c = 0; c < k; ++c) {
          if (through_library) library_exchange(v, send, recv, (int)n, counts, displs);
          else exchange(v, send, recv, (int)n, counts, displs);
        }
        *(through_library ? &lib : &t) = slowest(MPI_Wtime() - t0, MPI_COMM_WORLD);
      }
      int any = 0;
      MPI_Reduce(&wrong, &any, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0) printf("%zu,%.3f,%d\n", n, t / k * 1e6, any);
      if (rank == 0 && beside) printf("library,%zu,%.3f\n", n, lib / k * 1e6);
    }
    fflush(stdout);
    /* 2^k, 3*2^(k-1), 2^(k+1), ... */
    n = (n & (n - 1)) == 0 && n >= 4 ? n / 2 * 3 : (n & (n - 1)) == 0 ? n * 2 : n / 3 * 4;
  }
  free(send), free(recv), free(counts), free(displs);
}

static double copy_seconds(void* dst, const void* src, size_t bytes, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    memcpy(dst, src, bytes);
    const double t = slowest(MPI_Wtime() - t0, MPI_COMM_WORLD);
    if (t < best) best = t;
  }
  return best;
}

/* One transfer: P subarray types per side on `comm`, arrays a (sent) and b
 * (received, `bytes` each), and how to make the types (again, when cold). */
struct transfer {
  MPI_Comm comm;
  int P, N, m, m1;
  MPI_Datatype t, *st, *rt;
  void (*make)(struct transfer*);
};

/* The slab transfer's types: rank q's column block of the local (m, N, N) array,
 * and its row block of the received (N, m, N) one. */
static void make_slab_types(struct transfer* x) {
  const int N = x->N, m = x->m;
  for (int q = 0; q < x->P; ++q) {
    int size_a[3] = {m, N, N}, sub[3] = {m, m, N}, start_a[3] = {0, q * m, 0};
    int size_b[3] = {N, m, N}, start_b[3] = {q * m, 0, 0};
    MPI_Type_create_subarray(3, size_a, sub, start_a, MPI_ORDER_C, x->t, &x->st[q]);
    MPI_Type_create_subarray(3, size_b, sub, start_b, MPI_ORDER_C, x->t, &x->rt[q]);
    MPI_Type_commit(&x->st[q]);
    MPI_Type_commit(&x->rt[q]);
  }
}

/* The pencil transfer's types on a row of the grid: the local (m, m1, N) array
 * sends its (m, m1, m1) blocks along the last axis, received as the m1-row
 * blocks of the middle axis of an (m, N, m1) array. */
static void make_pencil_types(struct transfer* x) {
  const int N = x->N, m = x->m, m1 = x->m1;
  for (int q = 0; q < x->P; ++q) {
    int size_a[3] = {m, m1, N}, sub[3] = {m, m1, m1}, start_a[3] = {0, 0, q * m1};
    int size_b[3] = {m, N, m1}, start_b[3] = {0, q * m1, 0};
    MPI_Type_create_subarray(3, size_a, sub, start_a, MPI_ORDER_C, x->t, &x->st[q]);
    MPI_Type_create_subarray(3, size_b, sub, start_b, MPI_ORDER_C, x->t, &x->rt[q]);
    MPI_Type_commit(&x->st[q]);
    MPI_Type_commit(&x->rt[q]);
  }
}

static void free_types(struct transfer* x) {
  for (int q = 0; q < x->P; ++q) MPI_Type_free(&x->st[q]), MPI_Type_free(&x->rt[q]);
}

/* --alloc-mem 2: each array a rank's part of a shared-memory window of the node's ranks. */
static MPI_Win g_windows[2];
static int g_window_count = 0;

static void* slab_array(size_t bytes, int alloc_mem) {
  void* p = NULL;
  if (!alloc_mem) return malloc(bytes);
  if (alloc_mem == 2) {
    /* Whole pages per rank: the parts are contiguous in the window, so an odd size
     * would leave the next rank's array odd-aligned (every copy of it slower,
     * the MPI library's own too). */
    bytes = (bytes + 4095) / 4096 * 4096;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    const int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, node, &p, &g_windows[g_window_count++]);
    MPI_Comm_free(&node);
    return rc == MPI_SUCCESS ? p : NULL;
  }
  return MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &p) == MPI_SUCCESS ? p : NULL;
}

static void free_array(void* p, int alloc_mem) {
  if (alloc_mem == 2) {
    if (g_window_count > 0) MPI_Win_free(&g_windows[--g_window_count]);
  } else if (alloc_mem) {
    MPI_Free_mem(p);
  } else {
    free(p);
  }
}

/* The element of the global N^3 array at (i, j, k), word w, as the arrays hold it. */
static uint32_t element(int i, int j, int k, size_t w) { return (uint32_t)(i * 1000003u + j * 1009u + k + w); }

/* Times x's MPI_Alltoallw from a to b (each `bytes`; `check`: b checked after the
 * warm-up) and prints the copy bounds and one line per sample. */
static void time_transfer(struct transfer* x, char* a, char* b, size_t bytes, int samples, int cold,
                          int (*check)(const struct transfer*, const char*)) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int *ones = malloc(sizeof(int) * (size_t)x->P), *zeros = malloc(sizeof(int) * (size_t)x->P);
  for (int q = 0; q < x->P; ++q) ones[q] = 1, zeros[q] = 0;
  const double one = copy_seconds(b, a, bytes, 5);
  const size_t crossing = bytes / (size_t)x->P * (size_t)(x->P - 1);
  const double cross = copy_seconds(b, a, crossing, 5);
  if (rank == 0) {
    printf("bound,one memcpy of the received bytes,%.3f\n", one * 1e6);
    printf("bound,+ one memcpy of the bytes crossing ranks,%.3f\n", (one + cross) * 1e6);
  }
  memset(b, 0, bytes);
  MPI_Alltoallw(a, ones, zeros, x->st, b, ones, zeros, x->rt, x->comm);
  /* Warm-up, then the calls per sample from 2 timed calls: the first calls of a
   * run are slower on both variants (pages touched for the first time; with the
   * preload, the communicator's setup: docs/results.md); and
   * with the preload a plan's first calls are trials of its ways (up to 18:
   * redistribute/alltoall_copy_choice.hpp), so at least 20 calls. */
  double t0 = MPI_Wtime();
  int warm = 0;
  while (warm < 20 || (warm < 64 && slowest(MPI_Wtime() - t0, MPI_COMM_WORLD) < 0.05)) {
    MPI_Alltoallw(a, ones, zeros, x->st, b, ones, zeros, x->rt, x->comm);
    ++warm;
  }
  t0 = MPI_Wtime();
  for (int c = 0; c < 2; ++c) MPI_Alltoallw(a, ones, zeros, x->st, b, ones, zeros, x->rt, x->comm);
  const int k = calls_per_sample(slowest(MPI_Wtime() - t0, MPI_COMM_WORLD) / 2);
  const int wrong = check(x, b);
  for (int s = 0; s < samples; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int c = 0; c < k; ++c) {
      if (cold) free_types(x), x->make(x);
      MPI_Alltoallw(a, ones, zeros, x->st, b, ones, zeros, x->rt, x->comm);
    }
    const double tt = slowest(MPI_Wtime() - t0, MPI_COMM_WORLD);
    int any = 0;
    MPI_Reduce(&wrong, &any, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%zu,%.3f,%d\n", bytes, tt / k * 1e6, any);
  }
  free(ones), free(zeros);
}

static size_t words_of(const struct transfer* x) { return x->t == MPI_C_DOUBLE_COMPLEX ? 4 : 2; }

/* Slab: B (i, j, k) = element (i, rank * m + j, k) of the global array. */
static int check_slab(const struct transfer* x, const char* b) {
  int rank, wrong = 0;
  MPI_Comm_rank(x->comm, &rank);
  const int N = x->N, m = x->m;
  const size_t words = words_of(x);
  const uint32_t* B = (const uint32_t*)b;
  for (int i = 0; i < N && !wrong; ++i)
    for (int j = 0; j < m; ++j)
      for (int kk = 0; kk < N; ++kk) {
        const uint32_t* e = B + (((size_t)i * m + j) * N + kk) * words;
        for (size_t w = 0; w < words; ++w) wrong |= e[w] != element(i, rank * m + j, kk, w);
      }
  return wrong;
}

static MPI_Datatype type_of(const char* name) { return strcmp(name, "c128") == 0 ? MPI_C_DOUBLE_COMPLEX : MPI_DOUBLE; }

static void slab(int N, const char* type_name, int samples, int cold, int alloc_mem) {
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (N % P) {
    if (rank == 0) fprintf(stderr, "slab: N must be a multiple of the rank count\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  struct transfer x = {MPI_COMM_WORLD, P, N, N / P, 0, type_of(type_name), NULL, NULL, make_slab_types};
  const size_t words = words_of(&x), m = (size_t)x.m;
  const size_t bytes = m * N * N * words * 4;
  char* a = slab_array(bytes + 1, alloc_mem);
  char* b = slab_array(bytes + 1, alloc_mem);
  x.st = malloc(sizeof(MPI_Datatype) * (size_t)P), x.rt = malloc(sizeof(MPI_Datatype) * (size_t)P);
  if (!a || !b || !x.st || !x.rt) MPI_Abort(MPI_COMM_WORLD, 1);
  x.make(&x);
  /* Element (i, j, k) of rank r's A: the global (r * m + i, j, k). */
  uint32_t* A = (uint32_t*)a;
  for (size_t i = 0; i < m; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < N; ++k)
        for (size_t w = 0; w < words; ++w) A[((i * N + j) * N + k) * words + w] = element(rank * x.m + (int)i, j, k, w);
  time_transfer(&x, a, b, bytes, samples, cold, check_slab);
  free_types(&x);
  free(x.st), free(x.rt);
  free_array(b, alloc_mem), free_array(a, alloc_mem);
}

/* Pencil: on the row of grid coordinates (r0, r1), B (i, j, k) = element
 * (r0 * m + i, j, r1 * m1 + k) of the global array. */
static int g_r0;
static int check_pencil(const struct transfer* x, const char* b) {
  int r1, wrong = 0;
  MPI_Comm_rank(x->comm, &r1);
  const int N = x->N, m = x->m, m1 = x->m1;
  const size_t words = words_of(x);
  const uint32_t* B = (const uint32_t*)b;
  for (int i = 0; i < m && !wrong; ++i)
    for (int j = 0; j < N; ++j)
      for (int kk = 0; kk < m1; ++kk) {
        const uint32_t* e = B + (((size_t)i * N + j) * m1 + kk) * words;
        for (size_t w = 0; w < words; ++w) wrong |= e[w] != element(g_r0 * m + i, j, r1 * m1 + kk, w);
      }
  return wrong;
}

/* mpi4py-fft's pencil transfer: the ranks as a P0 x P1 grid (MPI_Dims_create, P1 >= P0),
 * each rank's (N/P0, N/P1, N) pencil turned into an (N/P0, N, N/P1) one by one
 * MPI_Alltoallw with subarray types on its row of the grid (P1 ranks). */
static void pencil(int N, const char* type_name, int samples, int cold) {
  int rank, P, d[2] = {0, 0}, periods[2] = {0, 0}, coords[2], keep[2] = {0, 1};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Dims_create(P, 2, d);
  int dims[2] = {d[1], d[0]}; /* the rows the longer side: 2 ranks, a 1 x 2 grid */
  if (N % dims[0] || N % dims[1]) {
    if (rank == 0) fprintf(stderr, "pencil: N must be a multiple of both grid sides (%d x %d)\n", dims[0], dims[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm grid, row;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  MPI_Cart_coords(grid, rank, 2, coords);
  MPI_Cart_sub(grid, keep, &row);
  g_r0 = coords[0];
  struct transfer x = {row, dims[1], N, N / dims[0], N / dims[1], type_of(type_name), NULL, NULL, make_pencil_types};
  const size_t words = words_of(&x), m = (size_t)x.m, m1 = (size_t)x.m1;
  const size_t bytes = m * m1 * N * words * 4;
  char* a = malloc(bytes + 1);
  char* b = malloc(bytes + 1);
  x.st = malloc(sizeof(MPI_Datatype) * (size_t)x.P), x.rt = malloc(sizeof(MPI_Datatype) * (size_t)x.P);
  if (!a || !b || !x.st || !x.rt) MPI_Abort(MPI_COMM_WORLD, 1);
  x.make(&x);
  uint32_t* A = (uint32_t*)a;
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < m1; ++j)
      for (int k = 0; k < N; ++k)
        for (size_t w = 0; w < words; ++w) {
          A[((i * m1 + j) * N + k) * words + w] = element(coords[0] * x.m + (int)i, coords[1] * x.m1 + (int)j, k, w);
        }
  time_transfer(&x, a, b, bytes, samples, cold, check_pencil);
  free_types(&x);
  free(x.st), free(x.rt), free(a), free(b);
  MPI_Comm_free(&row), MPI_Comm_free(&grid);
}

int main(int argc, char** argv) {
  const char* call = "alltoall";
  const char* type = "c128";
  size_t min_bytes = 8, max_bytes = (size_t)16 << 20;
  int samples = 7, n = 64, cold = 0, alloc_mem = 0, beside = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--call") == 0) call = argv[i + 1];
    else if (strcmp(argv[i], "--min") == 0) min_bytes = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--max") == 0) max_bytes = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--samples") == 0) samples = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--n") == 0) n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--type") == 0) type = argv[i + 1];
    else if (strcmp(argv[i], "--cold") == 0) cold = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--alloc-mem") == 0) alloc_mem = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--beside-library") == 0) beside = atoi(argv[i + 1]) != 0;
  }
  MPI_Init(&argc, &argv);
  if (strcmp(call, "slab") == 0) slab(n, type, samples, cold, alloc_mem);
  else if (strcmp(call, "pencil") == 0) pencil(n, type, samples, cold);
  else contiguous(call, min_bytes, max_bytes, samples, beside);
  MPI_Finalize();
  return 0;
}
