// `conveyor bench scalapack`: conveyor_pdgemr2d / conveyor_pdtran next to Debian's
// reference ScaLAPACK pdgemr2d_ / pdtran_ on the same descriptors and data.
#pragma once

#include <string>
#include <vector>

namespace conveyor::bench {

struct scalapack_bench_options {
  std::vector<int> sizes = {4000, 10000};
  int iterations = 21;  // per routine and row, over all rounds
  int rounds = 4;       // reference and Conveyor alternate, one turn each per round (first call: warm-up)
  /// "warm" (plans cached: the steady state), "cold" (every call plans, runs and
  /// frees its plan), or "both" (a row of each).
  std::string cache = "both";
  std::string config;
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD (2 or 4 ranks for the grids of the issue).
int run_scalapack_bench(const scalapack_bench_options& options);

}  // namespace conveyor::bench
