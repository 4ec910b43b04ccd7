// SPDX-License-Identifier: BSD-3-Clause
// `auto`, measured (CONVEYOR_ALLREDUCE_MEASURE, on by default). Per size class
// (two per octave) of a communicator, the first calls alternate the candidates,
// the order reversed every other round: the cost model's choice, the MPI
// library's own allreduce and, when the ranks share one node and the model chose
// otherwise, shared_memory. Then one MPI_Allreduce of the slowest rank's medians
// and spreads decides, identically on every rank, and later calls of that class
// run the fastest. A candidate of Conveyor's must beat the library by more than
// the trials' noise (margin_over_library): on a tie the library's call, which
// skips Conveyor's preamble, wins.
//
// Why measure at all: the model ranks the message algorithms well but does not
// know where shared_memory wins (its memory terms put it too low at some sizes
// and too high at others), nor how well the MPI library's own allreduce runs on
// this machine; docs/results.md ("auto against the stock allreduce") has the
// measurements. Not with on_chunk (the overlap it buys is not in the allreduce's
// own time) or deterministic mode.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "conveyor/collectives.hpp"
#include "runtime/measured_choice.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

using measured_class = measured_choice<allreduce_algorithm>;

/// Whether `auto` measures (CONVEYOR_ALLREDUCE_MEASURE is not 0).
bool measuring_enabled();

/// Runs candidate `a` once, reading `in` and writing `out` (the call's other
/// arguments bound).
using trial_runner = std::function<void(allreduce_algorithm a, const void* in, void* out)>;

/// The allreduce's trial (runtime/measured_choice.hpp's run_next_trial), its
/// decision printed under CONVEYOR_ALLREDUCE_MEASURE=trace.
allreduce_algorithm run_next_trial(measured_class& m, int cls, const void* send, void* recv, std::size_t bytes,
                                   byte_buffer& trial_out, const trial_runner& run, MPI_Comm comm, int rank, int size);

}  // namespace conveyor::collectives::detail
