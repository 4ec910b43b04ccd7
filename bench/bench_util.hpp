// SPDX-License-Identifier: BSD-3-Clause
// Shared machinery for Conveyor's benchmarks: timing, robust statistics, cache
// flushing, and one report format printed as a table and written as JSON / CSV.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace conveyor::bench {

/// This process's rank and the size of MPI_COMM_WORLD.
int world_rank();
int world_size();
/// The largest value of `t` over MPI_COMM_WORLD (the slowest rank's time).
double max_over_ranks(double t);

/// Collective over MPI_COMM_WORLD: `calls` calls of f, each after a barrier, timed
/// on the slowest rank; the first is a warm-up, the others are appended to `out`.
void collective_samples(std::vector<double>& out, int calls, const std::function<void()>& f);

/// Collective: the calls of several functions spread over `rounds` rounds, each
/// round running every function `per_round` times in turn (the first call of each
/// turn a warm-up), so a slow phase of a shared machine hits all of them alike.
/// Returns each function's samples (>= iterations - 1 of them).
std::vector<std::vector<double>> interleaved_samples(const std::vector<std::function<void()>>& fns, int iterations,
                                                     int rounds);

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct summary {
  double median = 0, p10 = 0, p90 = 0;
};
/// Median and 10th/90th percentiles (nearest rank) of the samples.
summary summarize(std::vector<double> samples);

/// Evicts the benchmark's buffers from every cache level by streaming through a
/// buffer larger than the last-level cache.
void flush_caches();

/// Seconds per call of f(): `reps` samples, each timing enough back-to-back calls
/// to last at least `min_sample_seconds` (calibrated once).
template <class F>
std::vector<double> time_per_call(F&& f, int reps, double min_sample_seconds = 2e-4) {
  std::size_t iters = 1;
  for (;;) {  // calibrate; also warms up
    const double t0 = now_seconds();
    for (std::size_t i = 0; i < iters; ++i) f();
    const double t = now_seconds() - t0;
    if (t >= min_sample_seconds || iters >= (std::size_t{1} << 24)) break;
    iters *= t > 0 ? std::max<std::size_t>(2, static_cast<std::size_t>(min_sample_seconds / t * 1.2)) : 16;
  }
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_seconds();
    for (std::size_t i = 0; i < iters; ++i) f();
    out.push_back((now_seconds() - t0) / static_cast<double>(iters));
  }
  return out;
}

/// A report: named columns, rows of cells (numbers are formatted by the caller so
/// the table and the files agree).
class report {
 public:
  report(std::string title, std::vector<std::string> columns);
  void add_row(std::vector<std::string> cells);
  void add_note(std::string note) { notes_.push_back(std::move(note)); }
  void print() const;  // aligned text table on stdout
  void write_csv(const std::string& path) const;
  void write_json(const std::string& path) const;  // {"title", "columns", "rows", "notes"}
  /// On rank 0 of MPI_COMM_WORLD: print, then write the files whose paths are set.
  void publish(const std::string& json_path, const std::string& csv_path) const;

 private:
  std::string title_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> notes_;
};

std::string format_fixed(double v, int decimals);
std::string format_bytes(std::size_t bytes);  // "1 KiB", "128 MiB"

}  // namespace conveyor::bench
