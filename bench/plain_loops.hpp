// SPDX-License-Identifier: BSD-3-Clause
// The "plain C++ loop" baselines: what a user writes by hand, compiled -O3 for
// the SIMD target Conveyor runs (plain_loops.cpp: one pass per Highway target, the
// active target's used, as `-march=<that CPU>` would). They are the
// memory-bandwidth reference of `conveyor bench reduce`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace conveyor::bench {

/// The SIMD target the plain loops were compiled for in this run (Conveyor's active one).
std::string plain_loop_target();

void plain_sum_f32(const float* in, float* inout, std::size_t n);
void plain_sum_f64(const double* in, double* inout, std::size_t n);
void plain_sum_i8(const std::int8_t* in, std::int8_t* inout, std::size_t n);
void plain_band_u8(const std::uint8_t* in, std::uint8_t* inout, std::size_t n);
/// inout = max + log1p(exp(min - max)) with libm per element (np.logaddexp's loop).
void plain_logaddexp_f32(const float* in, float* inout, std::size_t n);
void plain_logaddexp_f64(const double* in, double* inout, std::size_t n);

}  // namespace conveyor::bench

namespace conveyor::bench {

/// The one-read bound of the Sinkhorn benchmark: sum of every element of a
/// rows x cols matrix (stride ld) on `threads` OpenMP threads, vectorized.
double read_all(const double* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads);
double read_all(const float* a, std::size_t rows, std::size_t cols, std::size_t ld, int threads);

}  // namespace conveyor::bench
