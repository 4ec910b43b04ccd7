// SPDX-License-Identifier: BSD-3-Clause
// Internal: how an in-place variant walks the matrix. A walk is the two passes of
// an iteration that touch A (the paper's Algorithms 1-3 differ only there):
//   rows_and_sums:  u_i *= alpha_i and A_i *= alpha_i with alpha_i = r_i / sum_j A_ij,
//                   then this rank's column sums s_j = sum_i A_ij;
//   scale_columns:  columns [off, off + cnt) of A times beta, called once per chunk
//                   the allreduce of s delivers (options.overlap) or once for all.
// The in-place solver (dense/scaling.cpp) runs the rest: the allreduce of s, beta and
// the error, v. One file per walk here; the variants' table (dense/variant_table.cpp)
// points each in-place variant at its walk.
#pragma once

#include <cstddef>
#include <vector>

#include "conveyor/sinkhorn.hpp"
#include "sinkhorn/dense/scaling_kernels.hpp"

namespace conveyor::sinkhorn::detail {

/// r / current, and 0 where the target is 0 (an empty row or column stays empty).
template <class T>
T factor(T target, T current) {
  return target == T(0) ? T(0) : target / current;
}

/// What a walk reads and rescales: this rank's rows of A, their marginals, the
/// kernels of the active SIMD target, and the threads and blocking asked for.
template <class T>
struct walk_matrix {
  T* A;
  std::size_t rows, cols, ld;
  const T* r;
  const kernels<T>& k;
  int threads;
  const blocking& block;
  std::vector<std::vector<T>>& partial;  // per-thread column sums, kept across iterations

  T* row(std::size_t i) const { return A + i * ld; }
};

template <class T>
struct walk {
  /// The row pass into u, then this rank's column sums into s (cols elements).
  /// Returns now() when the row pass ended (the iteration log's split between the
  /// row and column passes).
  double (*rows_and_sums)(walk_matrix<T>& m, std::vector<T>& u, std::vector<T>& s);
  /// Columns [off, off + cnt) of A times beta[off, off + cnt).
  void (*scale_columns)(walk_matrix<T>& m, const T* beta, std::size_t off, std::size_t cnt);
};

/// The row pass every walk but blocked's shares (row-major, one row per task).
template <class T>
void row_pass(walk_matrix<T>& m, std::vector<T>& u);

/// The walks (one file each, instantiated for float and double).
template <class T>
const walk<T>& typical_walk();
template <class T>
const walk<T>& c2r_walk();
template <class T>
const walk<T>& blocked_walk();

}  // namespace conveyor::sinkhorn::detail
