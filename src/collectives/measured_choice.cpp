// SPDX-License-Identifier: BSD-3-Clause
// `auto`'s measuring phase (measured_choice.hpp).
#include "collectives/measured_choice.hpp"

#include <cstdio>
#include <string>

#include "conveyor/settings.hpp"
#include "runtime/context.hpp"

namespace conveyor::collectives::detail {
namespace {

// CONVEYOR_ALLREDUCE_MEASURE, read once.
measuring allreduce_measuring() {
  static const measuring value = measuring_setting("CONVEYOR_ALLREDUCE_MEASURE");
  return value;
}

// `agreed`: the candidates' medians, then their spreads (the slowest rank's).
void trace_decision(const measured_class& m, const double* agreed, int trials, std::size_t bytes, int ranks) {
  std::string line = "conveyor auto: " + std::to_string(bytes) + " B on " + std::to_string(ranks) + " ranks, " +
                     std::to_string(trials) + " trials each, median (spread) of the slowest rank:";
  char buf[96];
  for (int c = 0; c < m.count; ++c) {
    std::snprintf(buf, sizeof buf, " %s %.2f us (%.0f%%)", std::string(algorithm_name(m.candidates[c])).c_str(),
                  agreed[c] * 1e6, agreed[m.count + c] * 100);
    line += buf;
  }
  line += " -> " + std::string(algorithm_name(m.decided)) + "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace

bool measuring_enabled() { return allreduce_measuring() != measuring::off; }

allreduce_algorithm run_next_trial(measured_class& m, int cls, const void* send, void* recv, std::size_t bytes,
                                   byte_buffer& trial_out, const trial_runner& run, MPI_Comm comm, int rank, int size) {
  return run_next_trial(m, cls, send, recv, bytes, trial_out, run, comm, [&](const double* agreed, int trials) {
    if (allreduce_measuring() == measuring::traced && rank == 0) trace_decision(m, agreed, trials, bytes, size);
  });
}

}  // namespace conveyor::collectives::detail
