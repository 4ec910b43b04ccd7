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
