// Subcommands of the `conveyor` command-line tool. Each runs after MPI_Init and
// returns the process exit code.
#pragma once

namespace conveyor::tool {

int run_info();
int run_demo();

}  // namespace conveyor::tool
