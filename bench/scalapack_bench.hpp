// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench scalapack`: conveyor_pdgemr2d / conveyor_pdtran next to Debian's
// reference ScaLAPACK pdgemr2d_ / pdtran_ on the same descriptors and data.
#pragma once

#include <string>
#include <vector>

namespace conveyor::bench {

struct scalapack_bench_options {
  /// Matrix orders: every power of two and 3 * 2^k from 128 to 8192, plus the
  /// issue's 100, 4000 and 10000.
  std::vector<int> sizes = {100, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4000, 4096, 6144, 8192, 10000};
  /// Calls per routine and row at n <= 2048, over all rounds; fewer above (11 up
  /// to 4096, 7 beyond), more below 600 (61: microseconds are noisy).
  int iterations = 21;
  int rounds = 4;  // reference and Conveyor alternate, one turn each per round (first call: warm-up)
  /// "warm" (plans cached: the steady state), "cold" (every call plans, runs and
  /// frees its plan), or "both" (a row of each).
  std::string cache = "both";
  std::string config;
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD (2 or 4 ranks for the grids of the issue).
int run_scalapack_bench(const scalapack_bench_options& options);

}  // namespace conveyor::bench
