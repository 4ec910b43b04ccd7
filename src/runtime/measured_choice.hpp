// SPDX-License-Identifier: BSD-3-Clause
// `auto`, measured: how an engine chooses between its own path and the MPI
// library's by timing both on the first calls of each size class of a
// communicator (the allreduce: collectives/measured_choice.hpp; MPI_Alltoall:
// redistribute/alltoall_measured.cpp). The first calls of a class alternate the
// candidates, the order reversed every other round; the last trial's call runs
// one MPI_Allreduce of the slowest rank's medians and spreads, so every rank
// decides alike, and later calls of that class run the fastest. A candidate of
// Conveyor's must beat the library by more than the trials' noise
// (margin_over_library): on a tie the library's call, which skips Conveyor's
// preamble, wins.
//
// Candidate: an enum with `automatic` (undecided) and `mpi` (the library's own);
// by convention candidates[1] is `mpi`.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "runtime/buffer_pool.hpp"
#include "runtime/context.hpp"

namespace conveyor::detail {

/// Trials per candidate, at most.
inline constexpr int kMaxMeasured = 31;
/// Candidates of a class, at most.
inline constexpr int kMaxCandidates = 3;

// Lead-in runs: every trial runs its candidate once untimed before timing it,
// because a call that follows another candidate is slower (the other's buffers in
// the caches, the arrival skew it left on the ranks), and with three candidates in
// forward and backward rounds the middle one would never follow itself. In place,
// the lead-in writes a trial buffer of the call's size, freed once the class is
// decided if larger than kKeptTrialBuffer.
inline constexpr std::size_t kKeptTrialBuffer = std::size_t{1} << 20;

/// The size class of a call of `bytes`: two per octave.
int size_class(std::size_t bytes);

/// Trials per candidate of a class (odd: the median is one sample); depends on
/// the class only, so every rank counts alike.
int trials_of(int size_class);

/// Classes whose trials time kBatchedRuns back-to-back runs (after one untimed
/// run): one short call's time is mostly waiting for the other ranks, so single
/// timed calls chose candidates that a loop of calls then ran slower.
inline constexpr int kBatchedRuns = 4;
bool batched_trials(int size_class);

/// A candidate's trials: the median, and the spread (interquartile range over the
/// median) that says how far apart two medians must be to mean anything.
struct trial_summary {
  double median, spread;
};
trial_summary summary_of(const double* v, int n);

/// How much faster than the library a candidate's median must be to be chosen.
double margin_over_library(double candidate_spread, double library_spread);

/// A measuring setting: "0" off, "1" (default) on, "trace" on with every decision
/// printed by the communicator's rank 0. Anything else throws, naming the variable.
enum class measuring { off, on, traced };
measuring measuring_setting(const char* variable);

template <class Candidate>
struct measured_choice {
  Candidate candidates[kMaxCandidates] = {};  // [1]: Candidate::mpi
  int count = 0;                              // candidates in use (0: not yet set)
  double seconds[kMaxCandidates][kMaxMeasured] = {};
  int taken = 0;
  Candidate decided = Candidate::automatic;
};

/// The index in m.candidates of the candidate `m`'s next trial runs. Round r
/// runs every candidate once, forward in even rounds and backward in odd ones, so
/// that no candidate always follows the same one.
template <class Candidate>
int next_trial(const measured_choice<Candidate>& m) {
  const int trial_round = m.taken / m.count, position = m.taken % m.count;
  return trial_round % 2 == 0 ? position : m.count - 1 - position;
}

/// Records the seconds of `m`'s trial of candidates[which] (next_trial's) in
/// class `cls`. The last trial decides (one MPI_Allreduce on `comm`) and calls
/// decided(agreed, trials): agreed holds the slowest rank's medians, then
/// spreads, per candidate. Returns true when it decided.
template <class Candidate, class Decided>
bool record_trial(measured_choice<Candidate>& m, int cls, int which, double seconds, MPI_Comm comm,
                  const Decided& decided) {
  const int trials = trials_of(cls);
  m.seconds[which][m.taken / m.count] = seconds;
  if (++m.taken < m.count * trials) return false;
  double agreed[2 * kMaxCandidates] = {};  // medians, then spreads
  for (int c = 0; c < m.count; ++c) {
    const trial_summary summary = summary_of(m.seconds[c], trials);
    agreed[c] = summary.median;
    agreed[m.count + c] = summary.spread;
  }
  check_mpi(PMPI_Allreduce(MPI_IN_PLACE, agreed, 2 * m.count, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  const double* slowest = agreed;
  const double* spread = agreed + m.count;
  int best = 0;  // the fastest of Conveyor's candidates (every one but [1])
  for (int c = 2; c < m.count; ++c) best = slowest[c] < slowest[best] ? c : best;
  const double margin = margin_over_library(spread[best], spread[1]);
  m.decided = slowest[best] < (1 - margin) * slowest[1] ? m.candidates[best] : Candidate::mpi;
  decided(agreed, trials);
  return true;
}

/// Runs the next trial of `m` (candidates set, class `cls` undecided) for a call
/// from `send` (or MPI_IN_PLACE) to `recv`, whose result is `bytes` contiguous
/// bytes at `recv`, leaving the call's result there; returns the candidate that
/// ran. run(candidate, in, out) runs one candidate from `in` into `out` (both
/// laid out as the call's). Decides as record_trial.
template <class Candidate, class Run, class Decided>
Candidate run_next_trial(measured_choice<Candidate>& m, int cls, const void* send, void* recv, std::size_t bytes,
                         byte_buffer& trial_out, const Run& run, MPI_Comm comm, const Decided& decided) {
  const int which = next_trial(m);
  const Candidate trial = m.candidates[which];
  // The lead-in never touches the result: in place, it writes the trial buffer.
  const bool in_place = send == MPI_IN_PLACE || send == recv;
  const void* in = in_place ? recv : send;
  const bool batched = batched_trials(cls);
  if (batched || in_place) {
    trial_out.resize(bytes);
    run(trial, in, trial_out.data());
  } else {
    run(trial, send, recv);
  }
  const double t0 = MPI_Wtime();
  double seconds = 0;
  if (batched) {  // out of place into the trial buffer; the result is copied to recv
    for (int r = 0; r < kBatchedRuns; ++r) run(trial, in, trial_out.data());
    seconds = (MPI_Wtime() - t0) / kBatchedRuns;
    if (bytes) std::memcpy(recv, trial_out.data(), bytes);
  } else {
    run(trial, send, recv);
    seconds = MPI_Wtime() - t0;
  }
  // A large in-place class's trial buffer is not kept once it is decided.
  if (record_trial(m, cls, which, seconds, comm, decided) && trial_out.size() > kKeptTrialBuffer) trial_out.reset();
  return trial;
}

}  // namespace conveyor::detail
