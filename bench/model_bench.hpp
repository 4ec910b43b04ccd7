// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench model`: the cost model checked against measurement, and the
// model's tables for machines this project cannot run on.
//
// Measured mode (collective over MPI_COMM_WORLD): every allreduce algorithm the
// model offers on this job's node layout, every DSOP algorithm, and every
// Redistribute transport, and the all-to-all's pairwise and node-aware exchanges
// (beside the MPI library's own MPI_Alltoall, not modelled), each timed (barrier before each call, slowest rank,
// algorithms interleaved in rounds, median) beside the model's prediction for the
// same call (the reports' predicted_seconds; the plan's predicted_seconds(t)).
// Per case it also names the model's pick and the measured fastest, and how much
// slower the pick ran than the fastest: the error that matters to `auto`. Run it
// after `conveyor tune` (CONVEYOR_TUNE_FILE) to check the tuned model.
//
// Extrapolated mode (--extrapolate, rank 0, no communication): the model's pick and
// predicted time for 64-4096 nodes x 1-64 ranks per node at a named parameter set
// (the COFFEE paper's Tianhe-1 at 1 Gb/s, the DSOP paper's Euler III at 10 GbE, or
// the model in use), for the papers' problem sizes.
#pragma once

#include <string>
#include <vector>

namespace conveyor::bench {

struct model_bench_options {
  /// Allreduce message sizes in bytes (float32 sum).
  std::vector<std::size_t> allreduce_bytes = {1024, 3072, 8192, 24576, 65536, 196608, 524288, 1572864, 4194304};
  /// DSOP shapes N = M (float64).
  std::vector<std::size_t> dsop_sizes = {256, 1024, 2048};
  /// Redistribute: an n x n float64 matrix, block-cyclic 32 x 32 from a P x 1 grid to 1 x P.
  std::vector<std::int64_t> redistribute_sizes = {512, 2048};
  /// All-to-all bytes per rank pair (real nodes only: --ranks-per-node 0).
  std::vector<std::size_t> alltoall_bytes = {8, 64, 512, 4096, 32768, 262144};
  /// Which engines' cases run: allreduce, dsop, redistribute, alltoall.
  std::vector<std::string> engines = {"allreduce", "dsop", "redistribute", "alltoall"};
  int iterations = 9;  // per row, over all rounds (the first call of each turn a warm-up)
  int rounds = 3;
  int ranks_per_node = 0;  // 0: real nodes (MPI_COMM_TYPE_SHARED)
  bool extrapolate = false;
  std::string params = "coffee";  // --extrapolate: coffee, dsop or current
  std::string config;
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD (measured mode); rank 0 prints and writes the files.
int run_model_bench(const model_bench_options& options);

}  // namespace conveyor::bench
