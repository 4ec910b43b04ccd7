// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench sinkhorn`: milliseconds per Sinkhorn iteration for every variant
// on the ranks and threads of the job, next to the one-read-of-A bound measured on
// the same matrix (bench/plain_loops.cpp). POT's time on the same input comes from
// bench/sinkhorn_pot.py; scripts/bench sinkhorn runs both and bench/report_sinkhorn.py
// puts them side by side.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace conveyor::bench {

struct sinkhorn_bench_options {
  std::vector<std::size_t> sizes = {4000, 8000, 16000};  // M = N
  std::vector<std::string> dtypes = {"float64", "float32"};
  /// By name; none: every variant of the table (conveyor::sinkhorn::variants()).
  std::vector<std::string> variants;
  int threads = 1;      // OpenMP threads per rank
  bool overlap = true;  // in-place variants: column scaling inside the allreduce's on_chunk
  int iters = 5;        // iterations per sample (typical: 1)
  int reps = 5;         // samples (median, p10, p90 over them)
  std::string config;
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD; rank 0 prints and writes the files.
int run_sinkhorn_bench(const sinkhorn_bench_options& options);

/// The benchmark matrix: C_ij = frac(i * 0.6180339887498949 + j * 0.41421356237309515)
/// and A = exp(-C) (cost matrix and Gibbs kernel with reg = 1); bench/sinkhorn_pot.py
/// builds the same C for POT.
double bench_cost(std::size_t i, std::size_t j);

}  // namespace conveyor::bench
