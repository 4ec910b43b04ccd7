// Internal: how a point-cloud problem is shared over the ranks (every rank's
// count of X and Y points, where this rank's points start), and the check that
// a rank's points (or values) are finite. Used by the solver (point_cloud.cpp) and by the
// functions of its plan (point_plan.cpp).
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/contract.hpp"
#include "conveyor/types.hpp"

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

/// Throws invalid_argument naming the first non-finite entry of a rank's rows
/// (global row index): "X[i][k] = nan (points must be finite)" for what = "points".
template <class T>
void check_rows_finite(const T* p, std::size_t count, std::size_t width, const char* name, std::size_t first,
                       const char* what = "points") {
  for (std::size_t i = 0; i < count * width; ++i) {
    if (!std::isfinite(p[i])) {
      throw error(errc::invalid_argument, std::string(name) + "[" + std::to_string(first + i / width) + "][" +
                                              std::to_string(i % width) + "] = " +
                                              std::to_string(static_cast<double>(p[i])) + " (" + what +
                                              " must be finite)");
    }
  }
}

}  // namespace conveyor::sinkhorn::detail
