// SPDX-License-Identifier: BSD-3-Clause
// Internal: how a point-cloud problem is shared over the ranks (every rank's
// count of X and Y points, where this rank's points start), and the check that
// a rank's points (or values) are finite. Used by the solver (points/cloud.cpp) and by the
// functions of its plan (points/plan.cpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/contract.hpp"
#include "conveyor/types.hpp"
#include "runtime/context.hpp"

namespace conveyor::sinkhorn::detail {

struct point_shares {
  std::vector<std::size_t> n_of, m_of;  // every rank's X and Y counts
};

/// Every rank's (n, m), gathered (collective).
inline point_shares gather_shares(MPI_Comm comm, int size, std::size_t n, std::size_t m) {
  const std::uint64_t mine[2] = {n, m};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
  conveyor::detail::check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm), "MPI_Allgather");
  point_shares s;
  for (std::size_t q = 0; q < static_cast<std::size_t>(size); ++q) {
    s.n_of.push_back(static_cast<std::size_t>(all[2 * q]));
    s.m_of.push_back(static_cast<std::size_t>(all[2 * q + 1]));
  }
  return s;
}

/// The global index of rank `rank`'s first point.
inline std::size_t first_of(const std::vector<std::size_t>& counts, int rank) {
  std::size_t first = 0;
  for (int q = 0; q < rank; ++q) first += counts[static_cast<std::size_t>(q)];
  return first;
}

/// The common bounding box of both clouds over all ranks (collective): lo[k] and
/// hi[k] per coordinate (-Inf / +Inf... reversed when no rank holds a point).
struct box {
  std::vector<double> lo, hi;
  double diameter() const {
    double sq = 0;
    for (std::size_t k = 0; k < lo.size(); ++k) sq += hi[k] > lo[k] ? (hi[k] - lo[k]) * (hi[k] - lo[k]) : 0.0;
    return std::sqrt(sq);
  }
};

template <class T>
box bounding_box(MPI_Comm comm, const T* X, std::size_t n, const T* Y, std::size_t m, std::size_t dim) {
  // [max_k ..., -min_k ...] in one allreduce(max).
  std::vector<double> local(2 * dim, -std::numeric_limits<double>::infinity()), global(2 * dim);
  for (const auto& [points, count] : {std::pair{X, n}, std::pair{Y, m}}) {
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t k = 0; k < dim; ++k) {
        const double v = static_cast<double>(points[i * dim + k]);
        local[k] = std::max(local[k], v);
        local[dim + k] = std::max(local[dim + k], -v);
      }
    }
  }
  conveyor::detail::check_mpi(
      MPI_Allreduce(local.data(), global.data(), static_cast<int>(2 * dim), MPI_DOUBLE, MPI_MAX, comm),
      "MPI_Allreduce");
  box b;
  for (std::size_t k = 0; k < dim; ++k) {
    b.hi.push_back(global[k]);
    b.lo.push_back(-global[dim + k]);
  }
  return b;
}

/// Both clouds moved so that their common bounding box is centered at 0
/// (collective): what the dot-product path needs to keep its cancellation within
/// the clouds' diameter (distances do not move). Empty unless `center`.
template <class T>
struct centered_points {
  std::vector<T> X, Y;
  centered_points() = default;
  centered_points(MPI_Comm comm, const T* x, std::size_t n, const T* y, std::size_t m, std::size_t dim)
      : X(x, x + n * dim), Y(y, y + m * dim) {
    const box b = bounding_box(comm, x, n, y, m, dim);
    for (std::size_t k = 0; k < dim; ++k) {
      const T center = b.hi[k] >= b.lo[k] ? static_cast<T>(0.5 * (b.lo[k] + b.hi[k])) : T(0);
      for (std::size_t i = 0; i < n; ++i) X[i * dim + k] -= center;
      for (std::size_t j = 0; j < m; ++j) Y[j * dim + k] -= center;
    }
  }
};

/// Throws invalid_argument naming the first non-finite entry of a rank's rows
/// (global row index): "X[i][k] = nan (points must be finite)" for what = "points".
template <class T>
void check_rows_finite(const T* p, std::size_t count, std::size_t width, const char* name, std::size_t first,
                       const char* what = "points") {
  for (std::size_t i = 0; i < count * width; ++i) {
    if (!std::isfinite(p[i])) {
      throw error(errc::invalid_argument,
                  std::string(name) + "[" + std::to_string(first + i / width) + "][" + std::to_string(i % width) +
                      "] = " + std::to_string(static_cast<double>(p[i])) + " (" + what + " must be finite)");
    }
  }
}

}  // namespace conveyor::sinkhorn::detail
