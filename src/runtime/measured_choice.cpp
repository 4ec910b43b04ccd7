// SPDX-License-Identifier: BSD-3-Clause
// The engine-independent parts of `auto`'s measuring (measured_choice.hpp).
#include "runtime/measured_choice.hpp"

#include <algorithm>
#include <string>

#include "conveyor/settings.hpp"
#include "conveyor/types.hpp"

namespace conveyor::detail {

int size_class(std::size_t bytes) {
  const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes | 1));
  const bool upper_half = octave > 0 && (bytes >> (octave - 1)) & 1;  // >= 1.5 * 2^octave
  return 2 * octave + (upper_half ? 1 : 0);
}

// 31 below 32 KiB, 15 below 512 KiB, 9 below 8 MiB, 5 above.
int trials_of(int size_class) {
  const int octave = size_class / 2;
  return octave <= 14 ? 31 : octave <= 18 ? 15 : octave <= 22 ? 9 : 5;
}

// Below 32 KiB; from 32 KiB one run is long enough to time alone. Batched trials
// run on copies, so a trial call costs kBatchedRuns + 1 runs.
bool batched_trials(int size_class) { return size_class / 2 <= 14; }

trial_summary summary_of(const double* v, int n) {
  double x[kMaxMeasured];
  std::copy(v, v + n, x);
  std::sort(x, x + n);
  const double median = x[n / 2];
  return {median, median > 0 ? (x[(3 * n) / 4] - x[n / 4]) / median : 0};
}

// 3% at least, more when the trials of either were spread wider, up to 25%.
// Where the library and Conveyor's algorithms are level, single calls vary by
// more than a fixed margin, which let a few lucky trials pick a candidate that a
// loop then ran slower (docs/results.md, "The trials, made fair and then
// cautious"). The cap keeps a candidate measured a third faster even when the
// trials are noisy.
double margin_over_library(double candidate_spread, double library_spread) {
  constexpr double kMinMargin = 0.03, kMaxMargin = 0.25;
  return std::min(kMaxMargin, std::max({kMinMargin, candidate_spread, library_spread}));
}

measuring measuring_setting(const char* variable) {
  const auto v = setting(variable);
  if (!v || *v == "1") return measuring::on;
  if (*v == "0") return measuring::off;
  if (*v == "trace") return measuring::traced;
  throw error(errc::invalid_argument, std::string(variable) + "=" + *v + ": 0, 1 or trace expected");
}

}  // namespace conveyor::detail
