// SPDX-License-Identifier: BSD-3-Clause
// The c2r walk: the paper's Algorithm 2 in place. The row pass row by row; column
// sums in row order, each thread adding every row's slice of its own column range
// (lines 1-5); column scaling row by row (lines 9-13). Per iteration it reads A
// three times and writes it twice, every pass contiguous.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "sinkhorn/dense/walks/walk.hpp"
#include "sinkhorn/run_context.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

template <class T>
double rows_and_sums(walk_matrix<T>& m, std::vector<T>& u, std::vector<T>& s) {
  row_pass(m, u);
  const double rows_done = now();
  const auto threads = static_cast<std::size_t>(m.threads);
  const std::size_t width = (m.cols + threads - 1) / threads;
  const auto ranges = static_cast<std::ptrdiff_t>(width ? (m.cols + width - 1) / width : 0);
#pragma omp parallel for num_threads(m.threads) schedule(static)
  for (std::ptrdiff_t b = 0; b < ranges; ++b) {
    const std::size_t j0 = static_cast<std::size_t>(b) * width, w = std::min(width, m.cols - j0);
    std::fill(s.begin() + static_cast<std::ptrdiff_t>(j0), s.begin() + static_cast<std::ptrdiff_t>(j0 + w), T(0));
    for (std::size_t i = 0; i < m.rows; ++i) m.k.add(s.data() + j0, m.row(i) + j0, w);
  }
  return rows_done;
}

template <class T>
void scale_columns(walk_matrix<T>& m, const T* beta, std::size_t off, std::size_t cnt) {
  const auto n = static_cast<std::ptrdiff_t>(m.rows);
#pragma omp parallel for num_threads(m.threads) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    m.k.scale_columns_block(m.row(static_cast<std::size_t>(i)) + off, m.ld, 1, cnt, beta + off, 1, cnt);
  }
}

}  // namespace

template <class T>
const walk<T>& c2r_walk() {
  static const walk<T> w{rows_and_sums<T>, scale_columns<T>};
  return w;
}

template const walk<float>& c2r_walk();
template const walk<double>& c2r_walk();

}  // namespace conveyor::sinkhorn::detail
