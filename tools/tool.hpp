// Subcommands of the `conveyor` command-line tool. Each runs after MPI_Init and
// returns the process exit code.
#pragma once

#include <string>

namespace conveyor::tool {

int run_info();
int run_demo();
/// Measures the cost model on MPI_COMM_WORLD; rank 0 prints it and writes `output`.
int run_tune(const std::string& output, int ranks_per_node);

}  // namespace conveyor::tool
