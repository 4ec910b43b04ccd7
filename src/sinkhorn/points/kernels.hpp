// SPDX-License-Identifier: BSD-3-Clause
// Internal: the SIMD kernel of the point-cloud Sinkhorn solver (points/cloud.cpp):
// a block of ground costs recomputed from the points and folded into running
// log-sum-exps, one table per element type and Highway target.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conveyor/point_metric.hpp"

namespace conveyor::sinkhorn::detail {

/// The log-sum-exp of one row so far, max + log(sum), and (for the transport
/// cost) the C-weighted sum on the same scale. Kept in double whatever the points.
struct running_lse {
  double max;
  double sum;
  double weighted;
};

/// From this dimension on, merge_block computes the costs from
/// |x|^2 + |y|^2 - 2 <x, y> (kDotRows rows per load of the tile's coordinates)
/// instead of from differences; the callers then pass centered points. Where a
/// square root or 1 / C would magnify its cancellation (pairs near distance 0)
/// the lanes are recomputed by differences (points/kernels.cpp). CONVEYOR_POINTS_DOT_MIN_DIM
/// (read once per process) overrides the measured crossover.
std::size_t dot_min_dim();

template <class T>
struct point_kernels {
  /// Columns per tile.
  static constexpr std::size_t kTile = 256;
  /// Rows sharing each load of the tile's coordinates on the dot-product path.
  static constexpr std::size_t kDotRows = 4;
  /// The scratch a call needs, per thread.
  static constexpr std::size_t kScratch = (1 + 2 * kDotRows) * kTile;
  /// For each of the `rows` points at x (row-major, `dim` per point): folds
  ///   LSE_j (h_j - C(x_i, y_j) * inv_eps)   over the `cols` points of a block
  /// into lse[i]. The block's points are transposed (yt[k * cols + j] is
  /// coordinate k of point j) and h holds their potentials (-Inf: an empty
  /// point). With `with_cost`, lse[i].weighted also gains sum_j exp(...) C_ij on
  /// the scale of lse[i].max. Rows are independent and each row's columns are
  /// visited in index order: the result does not depend on how rows are shared.
  void (*merge_block)(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h,
                      T inv_eps, metric ground, bool with_cost, running_lse* lse, T* scratch);
  /// Applying a plan: for each of the `rows` points at x, folds
  ///   sum_j exp(h_j - C(x_i, y_j) * inv_eps) v_jc     for c < k
  /// over the block's `cols` points into acc[i * (k + 1) ...]: the running
  /// maximum of the exponents (start: -Inf), then the k sums on its scale
  /// (start: 0). vt holds the values transposed (vt[c * cols + j]); yt and h as
  /// merge_block. Each row visits its columns in index order. With power 1 or
  /// -1 the columns from `plain` on sum exp(...) C_ij^power v_jc instead (0 for
  /// a pair with C_ij = 0 under -1); power 0: every column plain.
  void (*apply_block)(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h,
                      T inv_eps, metric ground, int power, std::size_t plain, const T* vt, std::size_t k, double* acc,
                      T* scratch);
};

struct point_kernel_tables {
  point_kernels<float> f32;
  point_kernels<double> f64;
};

/// The tables of the active SIMD target, and of one runnable target (tests).
template <class T>
const point_kernels<T>& active_point_kernels();
template <class T>
const point_kernels<T>& point_kernels_for_target(std::int64_t bit);

}  // namespace conveyor::sinkhorn::detail
