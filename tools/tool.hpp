// SPDX-License-Identifier: BSD-3-Clause
// Subcommands of the `conveyor` command-line tool. Each runs after MPI_Init and
// returns the process exit code.
#pragma once

#include <cstddef>
#include <string>

namespace CLI {
class App;
}

namespace conveyor::tool {

int run_info();
/// Measures the cost model on MPI_COMM_WORLD; rank 0 prints it and writes `output`.
int run_tune(const std::string& output, int ranks_per_node);

/// `conveyor sinkhorn`: options, their CLI11 definitions, and the run.
struct sinkhorn_cli_options {
  std::string input;                     // .npy matrix (scaling) or cost matrix (--ot); empty: generate
  std::size_t rows = 2000, cols = 2000;  // generated problem size
  std::string dtype = "float64";
  std::string variant = "fused";
  bool ot = false;    // entropic OT on a cost matrix instead of matrix scaling
  double eps = 0.05;  // OT regularization
  bool log_domain = false;
  double tol = 1e-9;
  int max_iter = 1000;
  int threads = 0;
  unsigned long long seed = 1;
};
void add_sinkhorn_options(CLI::App& app, sinkhorn_cli_options& o);
int run_sinkhorn(const sinkhorn_cli_options& o);

}  // namespace conveyor::tool
