// SPDX-License-Identifier: BSD-3-Clause
// The typical walk: the paper's Algorithm 1 in place. The row pass row by row, then
// each column summed (lines 12-15) and scaled (lines 17-19) down the column, at
// stride ld, one column per task. Per iteration it reads A three times and writes it
// twice, the column passes strided (a cache line brings one useful element).
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
  const auto n = static_cast<std::ptrdiff_t>(m.cols);
#pragma omp parallel for num_threads(m.threads) schedule(static)
  for (std::ptrdiff_t jj = 0; jj < n; ++jj) {
    const auto j = static_cast<std::size_t>(jj);
    T acc = 0;
    for (std::size_t i = 0; i < m.rows; ++i) acc += m.A[i * m.ld + j];
    s[j] = acc;
  }
  return rows_done;
}

template <class T>
void scale_columns(walk_matrix<T>& m, const T* beta, std::size_t off, std::size_t cnt) {
  const auto n = static_cast<std::ptrdiff_t>(cnt);
#pragma omp parallel for num_threads(m.threads) schedule(static)
  for (std::ptrdiff_t jj = 0; jj < n; ++jj) {
    const std::size_t j = off + static_cast<std::size_t>(jj);
    for (std::size_t i = 0; i < m.rows; ++i) m.A[i * m.ld + j] *= beta[j];
  }
}

}  // namespace

template <class T>
const walk<T>& typical_walk() {
  static const walk<T> w{rows_and_sums<T>, scale_columns<T>};
  return w;
}

template const walk<float>& typical_walk();
template const walk<double>& typical_walk();

}  // namespace conveyor::sinkhorn::detail
