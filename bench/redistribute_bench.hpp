// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench redistribute`: the tensor paper's case (a 5-D int32 tensor moved
// between Cartesian process grids, every transport, the datatype transport being
// the paper's baseline) and the relabeling comparison (bytes moved with none /
// greedy / optimal relabeling, and the brute-force optimum).
#pragma once

#include <string>
#include <vector>

namespace conveyor::bench {

struct redistribute_bench_options {
  int iterations = 21;  // per transport, over all rounds
  int rounds = 3;       // every transport runs in each round (first call of a round: warm-up)
  std::string config;
  std::vector<std::string> transports;  // empty: all (datatype always runs: the baseline)
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD (the tensor case needs 4 ranks); rank 0 prints.
int run_redistribute_bench(const redistribute_bench_options& options);

}  // namespace conveyor::bench
