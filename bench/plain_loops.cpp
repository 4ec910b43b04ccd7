// SPDX-License-Identifier: BSD-3-Clause
// The plain-loop baselines, compiled -O3 once per SIMD target by Highway
// (foreach_target) and run for Conveyor's active target: what a user's
// `-O3 -march=<that CPU>` build of the same loop gives. A run with
// CONVEYOR_SIMD_TARGET=AVX2 therefore compares AVX2 kernels with an AVX2 loop, as
// on an AVX2 machine. Nothing here is built with -march=native (conveyor-bench is
// installed and must run on any x86-64 or aarch64 CPU); a pass runs only for the
// active target, which this CPU runs.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "plain_loops.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "plain_loops.hpp"

#ifndef CONVEYOR_BENCH_PLAIN_LOOPS_TABLE
#define CONVEYOR_BENCH_PLAIN_LOOPS_TABLE
namespace conveyor::bench {
struct plain_loop_table {
  void (*sum_f32)(const float*, float*, std::size_t);
  void (*sum_f64)(const double*, double*, std::size_t);
  void (*sum_i8)(const std::int8_t*, std::int8_t*, std::size_t);
  void (*band_u8)(const std::uint8_t*, std::uint8_t*, std::size_t);
  double (*row_sum_f64)(const double*, std::size_t);
  double (*row_sum_f32)(const float*, std::size_t);
  void (*logaddexp_f32)(const float*, float*, std::size_t);
  void (*logaddexp_f64)(const double*, double*, std::size_t);
};
}  // namespace conveyor::bench
#endif

HWY_BEFORE_NAMESPACE();
namespace conveyor::bench {
namespace HWY_NAMESPACE {

// Plain loops: the compiler vectorizes them for this pass's target.
void SumF32(const float* in, float* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] += in[i];
}
void SumF64(const double* in, double* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] += in[i];
}
void SumI8(const std::int8_t* in, std::int8_t* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] = static_cast<std::int8_t>(inout[i] + in[i]);
}
void BandU8(const std::uint8_t* in, std::uint8_t* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] &= in[i];
}
// np.logaddexp's loop: the larger plus log1p(exp(difference)), libm per element.
template <class T>
void LogAddExp(const T* in, T* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const T hi = std::max(in[i], inout[i]), lo = std::min(in[i], inout[i]);
    inout[i] = std::isinf(hi) ? hi : hi + std::log1p(std::exp(lo - hi));
  }
}
void LogAddExpF32(const float* in, float* inout, std::size_t n) { LogAddExp(in, inout, n); }
void LogAddExpF64(const double* in, double* inout, std::size_t n) { LogAddExp(in, inout, n); }
template <class T>
double RowSum(const T* row, std::size_t cols) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t j = 0; j < cols; ++j) s += row[j];
  return static_cast<double>(s);
}
double RowSumF64(const double* row, std::size_t cols) { return RowSum(row, cols); }
double RowSumF32(const float* row, std::size_t cols) { return RowSum(row, cols); }

const plain_loop_table* GetPlainLoops() {
  static constexpr plain_loop_table table{&SumF32,    &SumF64,    &SumI8,        &BandU8,
                                          &RowSumF64, &RowSumF32, &LogAddExpF32, &LogAddExpF64};
  return &table;
}

}  // namespace HWY_NAMESPACE
}  // namespace conveyor::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <stdexcept>
#include <string>

#include "conveyor/reduce.hpp"

namespace conveyor::bench {
namespace {

HWY_EXPORT(GetPlainLoops);  // constant data: each pass's GetPlainLoops address

// The pass of Conveyor's active target (runnable on this CPU by construction).
const plain_loop_table& active_loops() {
  static const plain_loop_table* table = [] {
    const std::string name = simd_targets().active;
    for (int shift = 0; shift < 63; ++shift) {
      const auto bit = static_cast<std::int64_t>(std::uint64_t{1} << shift);
      if ((HWY_TARGETS & bit) == 0 || name != hwy::TargetName(bit)) continue;
      hwy::ChosenTarget chosen;
      chosen.Update(bit);
      return HWY_DISPATCH_TABLE(GetPlainLoops)[chosen.GetIndex()]();
    }
    throw std::runtime_error("plain loops: no pass for SIMD target " + name);
  }();
  return *table;
}

template <class T>
double read_all_impl(double (*row_sum)(const T*, std::size_t), const T* a, std::size_t rows, std::size_t cols,
                     std::size_t ld, int threads) {
  double total = 0;
  const auto n = static_cast<std::ptrdiff_t>(rows);
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
  for (std::ptrdiff_t i = 0; i < n; ++i) total += row_sum(a + static_cast<std::size_t>(i) * ld, cols);
  return total;
}

}  // namespace

std::string plain_loop_target() { return simd_targets().active; }

void plain_sum_f32(const float* in, float* inout, std::size_t n) { active_loops().sum_f32(in, inout, n); }
void plain_sum_f64(const double* in, double* inout, std::size_t n) { active_loops().sum_f64(in, inout, n); }
void plain_sum_i8(const std::int8_t* in, std::int8_t* inout, std::size_t n) { active_loops().sum_i8(in, inout, n); }
void plain_band_u8(const std::uint8_t* in, std::uint8_t* inout, std::size_t n) { active_loops().band_u8(in, inout, n); }
void plain_logaddexp_f32(const float* in, float* inout, std::size_t n) { active_loops().logaddexp_f32(in, inout, n); }
void plain_logaddexp_f64(const double* in, double* inout, std::size_t n) { active_loops().logaddexp_f64(in, inout, n); }

double read_all(const double* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads) {
  return read_all_impl(active_loops().row_sum_f64, a, rows, cols, ld, threads);
}
double read_all(const float* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads) {
  return read_all_impl(active_loops().row_sum_f32, a, rows, cols, ld, threads);
}

}  // namespace conveyor::bench
#endif  // HWY_ONCE
