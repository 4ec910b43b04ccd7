// `auto`'s measuring phase (measured_choice.hpp).
#include "collectives/measured_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "conveyor/settings.hpp"
#include "runtime/context.hpp"

namespace conveyor::detail {
namespace {

// Trials per candidate (odd, so the median is one sample): 31 below 32 KiB, 15 below
// 512 KiB, 9 below 8 MiB, 5 above. Depends on the class only, so every rank
// (which sees the same calls) counts alike.
int trials_of(int size_class) {
  const int octave = size_class / 2;
  return octave <= 14 ? 31 : octave <= 18 ? 15 : octave <= 22 ? 9 : 5;
}

// Trials of classes below 32 KiB time kBatchedRuns back-to-back runs, after one
// untimed run: one short call's time is mostly waiting for the other ranks (the
// skew the previous call left, waking after a yield), so single-call trials
// chose candidates that a loop of calls then ran slower than the library; a
// batch times what a loop sees. It runs on copies, so the trial call costs
// kBatchedRuns + 1 runs; from 32 KiB one run is long enough to time alone.
constexpr int kBatchedRuns = 4;
bool batched_trials(int size_class) { return size_class / 2 <= 14; }

// A candidate's trials: the median, and the spread (interquartile range over
// the median) that says how far apart two medians must be to mean anything.
struct trial_summary {
  double median, spread;
};
trial_summary summary_of(const double* v, int n) {
  double x[kMaxMeasured];
  std::copy(v, v + n, x);
  std::sort(x, x + n);
  const double median = x[n / 2];
  return {median, median > 0 ? (x[(3 * n) / 4] - x[n / 4]) / median : 0};
}

// How much faster than the library a candidate's median must be to be chosen:
// 3% at least, more when the trials of either were spread wider, up to 25%.
// Where the library and Conveyor's algorithms are level, single calls vary by
// 10-30%, and a fixed 3% let a few lucky trials pick a candidate that a loop then
// ran slower. The cap keeps a candidate measured a third faster (shared_memory's
// wins) even when the trials are noisy.
constexpr double kMinMargin = 0.03, kMaxMargin = 0.25;
double margin_over_library(double candidate_spread, double library_spread) {
  return std::min(kMaxMargin, std::max({kMinMargin, candidate_spread, library_spread}));
}

// CONVEYOR_ALLREDUCE_MEASURE: "0" off, "1" (default) on, "trace" on and every
// decision printed by the communicator's rank 0 (why `auto` runs what it runs).
// Anything else is an error naming the variable.
enum class measuring { off, on, traced };
measuring measuring_setting() {
  static const measuring value = [] {
    const auto v = setting("CONVEYOR_ALLREDUCE_MEASURE");
    if (!v || *v == "1") return measuring::on;
    if (*v == "0") return measuring::off;
    if (*v == "trace") return measuring::traced;
    throw error(errc::invalid_argument, "CONVEYOR_ALLREDUCE_MEASURE=" + *v + ": 0, 1 or trace expected");
  }();
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

int size_class(std::size_t bytes) {
  const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes | 1));
  const bool upper_half = octave > 0 && (bytes >> (octave - 1)) & 1;  // >= 1.5 * 2^octave
  return 2 * octave + (upper_half ? 1 : 0);
}

bool measuring_enabled() { return measuring_setting() != measuring::off; }

allreduce_algorithm run_next_trial(measured_class& m, int cls, const void* send, void* recv, std::size_t bytes,
                                   std::vector<char>& trial_out, const trial_runner& run, MPI_Comm comm, int rank,
                                   int size) {
  const int trials = trials_of(cls);
  // Round r runs every candidate once, forward in even rounds and backward in
  // odd ones, so that no candidate always follows the same one (what the
  // previous call left in the caches and on the other ranks).
  const int trial_round = m.taken / m.count, position = m.taken % m.count;
  const int which = trial_round % 2 == 0 ? position : m.count - 1 - position;
  const allreduce_algorithm trial = m.candidates[which];
  // Every trial first runs its candidate once untimed, as a loop of calls
  // does: a timed call that follows another candidate pays for what that
  // one left behind (the lead-in note above kKeptTrialBuffer). The lead-in
  // never touches the result: in place, it writes the trial buffer.
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
  if (batched) {  // out of place into the trial buffer; the result is copied to recv
    for (int r = 0; r < kBatchedRuns; ++r) run(trial, in, trial_out.data());
    m.seconds[which][trial_round] = (MPI_Wtime() - t0) / kBatchedRuns;
    std::memcpy(recv, trial_out.data(), bytes);
  } else {
    run(trial, send, recv);
    m.seconds[which][trial_round] = MPI_Wtime() - t0;
  }
  if (++m.taken < m.count * trials) return trial;

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
  m.decided = slowest[best] < (1 - margin) * slowest[1] ? m.candidates[best] : allreduce_algorithm::mpi;
  if (measuring_setting() == measuring::traced && rank == 0) trace_decision(m, agreed, trials, bytes, size);
  // A large in-place class's trial buffer is not kept once it is decided.
  if (trial_out.capacity() > kKeptTrialBuffer) std::vector<char>().swap(trial_out);
  return trial;
}

}  // namespace conveyor::detail
