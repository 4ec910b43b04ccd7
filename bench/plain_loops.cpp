// Compiled with -O3 -march=native: the auto-vectorized reference loops.
#include "plain_loops.hpp"

namespace conveyor::bench {

__attribute__((noinline)) void plain_sum_f32(const float* in, float* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] += in[i];
}

__attribute__((noinline)) void plain_sum_f64(const double* in, double* inout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] += in[i];
}

__attribute__((noinline)) void plain_sum_i8(const std::int8_t* in, std::int8_t* inout,
                                            std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] = static_cast<std::int8_t>(inout[i] + in[i]);
}

__attribute__((noinline)) void plain_band_u8(const std::uint8_t* in, std::uint8_t* inout,
                                             std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) inout[i] &= in[i];
}

}  // namespace conveyor::bench

namespace conveyor::bench {
namespace {
template <class T>
double read_all_impl(const T* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads) {
  double total = 0;
  const auto n = static_cast<std::ptrdiff_t>(rows);
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const T* row = a + static_cast<std::size_t>(i) * ld;
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (std::size_t j = 0; j < cols; ++j) s += row[j];
    total += static_cast<double>(s);
  }
  return total;
}
}  // namespace

double read_all(const double* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads) {
  return read_all_impl(a, rows, cols, ld, threads);
}
double read_all(const float* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads) {
  return read_all_impl(a, rows, cols, ld, threads);
}

}  // namespace conveyor::bench
