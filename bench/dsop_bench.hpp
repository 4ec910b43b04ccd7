// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench dsop`: the DSOP algorithms (and `auto`) on the ranks of the job,
// with the paper's measurement rules: a barrier before each iteration, the time of
// the slowest rank, the first iteration discarded; median, p10 and p90.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace conveyor::bench {

struct dsop_bench_options {
  /// Shapes "N" (N = M) or "NxM".
  std::vector<std::string> shapes = {"1000", "2000", "4000", "8000", "8000x2000"};
  /// By name; none: "auto", then every algorithm of the table (conveyor::outer_algorithms()).
  std::vector<std::string> algorithms;
  std::string dtype = "float64";
  int iterations = 21;  // per (shape, algorithm); the first is a warm-up
  bool distributed = false;
  std::string config;
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD; rank 0 prints and writes the files.
int run_dsop_bench(const dsop_bench_options& options);

}  // namespace conveyor::bench
