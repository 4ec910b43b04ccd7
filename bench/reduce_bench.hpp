// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench reduce`: local reduction throughput of Conveyor's kernels next to
// MPI_Reduce_local of the MPI library Conveyor was built with, a plain loop
// compiled -O3 for the active SIMD target (plain_loops.hpp), and memcpy, at every
// 2^k and 3*2^k bytes from min_bytes to max_bytes.
#pragma once

#include <cstddef>
#include <string>

namespace conveyor::bench {

struct reduce_bench_options {
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{128} << 20;
  std::size_t size_step = 0;  // 0: every 2^k and 3*2^k; else each size is this many times the previous
  int reps = 15;              // samples per (case, size, implementation)
  bool all_targets = false;   // add a Conveyor row for every runnable SIMD target
  std::string only_case;      // e.g. "sum/float32"; empty runs every case
  std::string json_path, csv_path;
};

/// Runs on the calling process only (MPI must be initialized). Returns 0.
int run_reduce_bench(const reduce_bench_options& options);

}  // namespace conveyor::bench
