// SPDX-License-Identifier: BSD-3-Clause
// Internal: the local compute of DSOP, one table per element type and Highway target.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dsop/detail_namespace.hpp"

namespace conveyor::dsop::detail {

template <class T>
struct outer_kernels {
  /// Rows [row0, row0 + rows) of sum_{i < P} a_i b_i^T into G (stride ldg), where
  /// a_i = A + i * lda (length >= row0 + rows) and b_i = B + i * ldb (length M).
  /// Every element is summed in order i = 0..P-1 (identical on every rank). Columns
  /// go in blocks whose P slices of B stay in L1; G is written once, never read.
  void (*rows_from_pairs)(const T* A, std::size_t lda, const T* B, std::size_t ldb, std::size_t P, std::size_t row0,
                          std::size_t rows, std::size_t M, T* G, std::size_t ldg);
};

struct outer_kernel_tables {
  outer_kernels<float> f32;
  outer_kernels<double> f64;
};

/// The tables of the library's active SIMD target (runtime/simd_targets.hpp).
const outer_kernel_tables& outer_active_tables();

}  // namespace conveyor::dsop::detail
