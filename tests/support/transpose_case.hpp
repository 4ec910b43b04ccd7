// SPDX-License-Identifier: BSD-3-Clause
// A Redistribute case the soak and thread tests share: an n x n float64 matrix,
// A(r, c) = r * n + c, held in row blocks (Cartesian P x 1, balanced_rows) and
// transposed into column blocks (1 x P), where every rank checks its part of A^T.
#pragma once

#include <conveyor/redistribute.hpp>
#include <conveyor/sinkhorn.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace conveyor::testing {

struct transpose_case {
  transpose_case(std::int64_t n_, int rank, int size)
      : n(n_),
        rows(sinkhorn::balanced_rows(static_cast<std::size_t>(n_), rank, size)),
        src(std::max<std::size_t>(1, rows.count * static_cast<std::size_t>(n_))),
        dst(src.size()),
        a(redistribute::layout::cartesian({n_, n_}, {size, 1}, src.data())),
        b(redistribute::layout::cartesian({n_, n_}, {1, size}, dst.data())) {
    for (std::size_t i = 0; i < rows.count * static_cast<std::size_t>(n); ++i) {
      src[i] = static_cast<double>(rows.first * static_cast<std::size_t>(n) + i);
    }
    t.src = &a;
    t.dst = &b;
    t.perm = {1, 0};
  }
  // The layouts point into src and dst.
  transpose_case(const transpose_case&) = delete;
  transpose_case& operator=(const transpose_case&) = delete;

  /// Elements of this rank's columns of A^T that are wrong (dst is n x rows.count, row-major).
  int wrong() const {
    int bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < rows.count; ++j) {
        bad += dst[static_cast<std::size_t>(i) * rows.count + j] !=
               static_cast<double>((rows.first + j) * static_cast<std::size_t>(n) + static_cast<std::size_t>(i));
      }
    }
    return bad;
  }

  std::int64_t n;
  sinkhorn::row_block rows;
  std::vector<double> src, dst;
  redistribute::layout a, b;
  redistribute::transform t;
};

}  // namespace conveyor::testing
