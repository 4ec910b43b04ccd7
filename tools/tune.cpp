// SPDX-License-Identifier: BSD-3-Clause
// `conveyor tune`: measure the cost model and write it where Conveyor reads it.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "conveyor/settings.hpp"
#include "conveyor/collectives.hpp"
#include "tool.hpp"

namespace conveyor::tool {

int run_tune(const std::string& output, int ranks_per_node) {
  const cost_model m = measure_cost_model(MPI_COMM_WORLD, ranks_per_node);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return 0;
  std::string path = output;
  if (path.empty()) {
    path = setting("CONVEYOR_TUNE_FILE").value_or("conveyor-tune.txt");
  }
  const std::string text = format_cost_model(m);
  std::ofstream f(path);
  if (!f || !(f << text)) {
    std::fprintf(stderr, "conveyor tune: cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("%s", text.c_str());
  std::printf("# written to %s; use it with CONVEYOR_TUNE_FILE=%s\n", path.c_str(), path.c_str());
  return 0;
}

}  // namespace conveyor::tool
