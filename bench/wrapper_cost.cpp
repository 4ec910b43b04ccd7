// SPDX-License-Identifier: BSD-3-Clause
// wrapper-cost: the CPU time Conveyor's repeated-shape allreduce adds to a call,
// with the exchange itself taken out.
//
// Why a program of its own: beside a 2-rank exchange (well under a microsecond), a
// wrapper's few ns are below the noise of whole launches (docs/results.md), so its cost cannot
// be read from the latency rows alone. Here PMPI_Allreduce is replaced by a stub
// that returns at once (this executable defines PMPI_Allreduce and exports it, so
// it takes precedence over the MPI library's for Conveyor's calls), and a loop
// times K calls through Conveyor against K calls of the same stub made directly.
// Until the stub is switched on it forwards to the MPI library's PMPI_Allreduce,
// so the first calls (auto's settling, the contract) run for real.
//
// Three paths, named by the first argument:
//   - cpp: conveyor::allreduce pinned to the library's allreduce (the fast path,
//     then PMPI_Allreduce on Conveyor's communicator): the `conveyor mpi` row of
//     `conveyor bench allreduce`;
//   - c: conveyor_allreduce(), the same through the C API;
//   - preload: MPI_Allreduce, which with LD_PRELOAD=libconveyor_mpi.so and
//     CONVEYOR_ALLREDUCE_ALGORITHM=mpi is the interposer's path to PMPI_Allreduce
//     (what an unmodified program gets).
//
// Output (rank 0, CSV): ns per call through Conveyor and direct, and their
// difference, medians over 15 rounds of 10^6 calls each, alternating; the
// difference's 10th and 90th percentiles. Both ranks run the loops at once (no
// exchange happens while the stub is on).
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "conveyor/collectives.hpp"
#include "conveyor/conveyor.h"

using allreduce_fn = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);
static bool stub_on = false;
static long long stub_calls = 0;  // calls the stub answered: proves the stub was the one called

extern "C" __attribute__((visibility("default"))) int PMPI_Allreduce(const void* send, void* recv, int count,
                                                                     MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  static allreduce_fn real = nullptr;
  if (stub_on) {
    ++stub_calls;
    return MPI_SUCCESS;
  }
  if (!real) real = reinterpret_cast<allreduce_fn>(dlsym(RTLD_NEXT, "PMPI_Allreduce"));
  return real(send, recv, count, type, op, comm);
}

// The direct call: a function of its own, as the library's MPI_Allreduce is.
__attribute__((noinline)) static int direct(const void* send, void* recv, int count) {
  return PMPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string path = argc > 1 ? argv[1] : "cpp";
  if (path != "cpp" && path != "c" && path != "preload") {
    if (rank == 0) std::fprintf(stderr, "usage: wrapper-cost [cpp|c|preload]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  constexpr int kCount = 16, kRounds = 15, kCalls = 1000000;
  float send[kCount], recv[kCount];
  std::fill(send, send + kCount, 1.0f);

  conveyor::allreduce_options pinned;
  pinned.algorithm = conveyor::allreduce_algorithm::mpi;
  conveyor_allreduce_options c_pinned;
  conveyor_allreduce_options_init(&c_pinned);
  c_pinned.algorithm = CONVEYOR_ALLREDUCE_MPI;
  const auto call = [&] {
    if (path == "cpp") conveyor::allreduce(send, recv, kCount, conveyor::op::sum, MPI_COMM_WORLD, pinned);
    else if (path == "c")
      conveyor_allreduce(send, recv, kCount, CONVEYOR_FLOAT32, CONVEYOR_SUM, MPI_COMM_WORLD, &c_pinned, nullptr);
    else MPI_Allreduce(send, recv, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  for (int i = 0; i < 100; ++i) call();  // settle: the fast path is taken from here on
  MPI_Barrier(MPI_COMM_WORLD);

  double through[kRounds], plain[kRounds], extra[kRounds];
  stub_on = true;
  for (int r = 0; r < kRounds; ++r) {
    const double t0 = MPI_Wtime();
    if (path == "cpp") {
      for (int i = 0; i < kCalls; ++i)
        conveyor::allreduce(send, recv, kCount, conveyor::op::sum, MPI_COMM_WORLD, pinned);
    } else if (path == "c") {
      for (int i = 0; i < kCalls; ++i) {
        conveyor_allreduce(send, recv, kCount, CONVEYOR_FLOAT32, CONVEYOR_SUM, MPI_COMM_WORLD, &c_pinned, nullptr);
      }
    } else {
      for (int i = 0; i < kCalls; ++i) MPI_Allreduce(send, recv, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    const double t1 = MPI_Wtime();
    for (int i = 0; i < kCalls; ++i) direct(send, recv, kCount);
    const double t2 = MPI_Wtime();
    through[r] = (t1 - t0) / kCalls * 1e9;
    plain[r] = (t2 - t1) / kCalls * 1e9;
    extra[r] = through[r] - plain[r];
  }
  stub_on = false;
  // Every timed call, through Conveyor or direct, must have reached the stub;
  // otherwise Conveyor's PMPI_Allreduce was bound elsewhere (or the path ran
  // another algorithm) and the times mean nothing.
  const long long expected = 2LL * kRounds * kCalls;
  if (stub_calls != expected) {
    std::fprintf(
        stderr,
        "wrapper-cost: rank %d: the stub answered %lld calls, %lld expected (is %s the path to PMPI_Allreduce?)\n",
        rank, stub_calls, expected, path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::sort(through, through + kRounds);
  std::sort(plain, plain + kRounds);
  std::sort(extra, extra + kRounds);
  if (rank == 0) {
    std::printf("path,through_conveyor_ns,direct_ns,extra_ns,extra_p10_ns,extra_p90_ns\n");
    std::printf("%s,%.2f,%.2f,%.2f,%.2f,%.2f\n", path.c_str(), through[kRounds / 2], plain[kRounds / 2],
                extra[kRounds / 2], extra[kRounds / 10], extra[kRounds - 1 - kRounds / 10]);
  }
  MPI_Finalize();
  return 0;
}
