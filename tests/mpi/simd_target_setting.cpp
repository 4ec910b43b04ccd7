// SPDX-License-Identifier: BSD-3-Clause
// CONVEYOR_SIMD_TARGET as ranks see it: each rank reads its own environment, so
// the launcher may give ranks different values (tests/CMakeLists.txt runs this
// program with one rank's value changed at a time, through MPMD launches).
//
// One allreduce (float64 sum of values that round) on MPI_COMM_WORLD; each rank
// prints one line: "rank R: ok TARGET result DIGEST" or "rank R: error: MESSAGE".
// The rules the tests check:
//  - a value a rank cannot honour (unknown, or a target its CPU does not run)
//    makes every rank throw the same error naming that rank (the collective
//    contract checks the target before the call), never a hang or a crash;
//  - different valid values are allowed (a cluster may mix CPUs): each rank runs
//    its own target, and the result is bitwise the same on every rank, because the
//    reduction kernels are element-wise and give the same bits on every target.
#include <mpi.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/reduce.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<double> x(1003);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 / static_cast<double>(3 + i + 7 * rank);
  std::string line;
  try {
    conveyor::allreduce(x.data(), x.size(), conveyor::op::sum, MPI_COMM_WORLD);
    std::uint64_t digest = 1469598103934665603ull;  // FNV-1a over the result's bytes
    const auto* bytes = reinterpret_cast<const unsigned char*>(x.data());
    for (std::size_t i = 0; i < x.size() * sizeof(double); ++i) digest = (digest ^ bytes[i]) * 1099511628211ull;
    char text[64];
    std::snprintf(text, sizeof text, "%016" PRIx64, digest);
    line = "ok " + conveyor::simd_targets().active + " result " + text;
  } catch (const conveyor::error& e) {
    line = std::string("error: ") + e.what();
  }
  std::printf("rank %d: %s\n", rank, line.c_str());
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
