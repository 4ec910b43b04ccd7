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

namespace conveyor::detail {

/// Trials per candidate, at most.
inline constexpr int kMaxMeasured = 31;

// Lead-in runs: every trial runs its candidate once untimed before timing it,
// because a call that follows another algorithm is slower (the other's buffers in
// the caches, the arrival skew it left on the ranks), and with three candidates in
// forward and backward rounds the middle one would never follow itself. Without it
// the trials favoured Rabenseifner over the library at a few MiB where a loop of
// calls then ran it slower. In place, the lead-in writes a trial buffer of the
// call's size, freed once the class is decided if larger than kKeptTrialBuffer.
inline constexpr std::size_t kKeptTrialBuffer = std::size_t{1} << 20;

// The candidates of a measured class, in the order their trials alternate.
inline constexpr int kMaxCandidates = 3;
struct measured_class {
  allreduce_algorithm candidates[kMaxCandidates] = {};  // [0]: the model's choice, [1]: mpi, [2]: shared_memory
  int count = 0;                                        // candidates in use (0: not yet set)
  double seconds[kMaxCandidates][kMaxMeasured] = {};
  int taken = 0;
  allreduce_algorithm decided = allreduce_algorithm::automatic;
};

/// The size class of a call of `bytes`: two per octave.
int size_class(std::size_t bytes);

/// Whether `auto` measures (CONVEYOR_ALLREDUCE_MEASURE is not 0).
bool measuring_enabled();

/// Runs candidate `a` once, reading `in` and writing `out` (the call's other
/// arguments bound).
using trial_runner = std::function<void(allreduce_algorithm a, const void* in, void* out)>;

/// Runs the next trial of `m` (its candidates set, class `cls` undecided) for a
/// call from `send` (or MPI_IN_PLACE) to `recv` of `bytes`, leaving the call's
/// result in `recv`; returns the candidate that ran. The last trial decides:
/// one MPI_Allreduce on `comm` of the slowest rank's medians and spreads, then
/// m.decided, identical on every rank.
allreduce_algorithm run_next_trial(measured_class& m, int cls, const void* send, void* recv, std::size_t bytes,
                                   std::vector<char>& trial_out, const trial_runner& run, MPI_Comm comm, int rank,
                                   int size);

}  // namespace conveyor::detail
