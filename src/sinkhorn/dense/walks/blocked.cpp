// SPDX-License-Identifier: BSD-3-Clause
// The blocked walk: the paper's Algorithm 3 in place, with its blocking applied to
// the other passes too (the paper, IV-B). Each mc-row panel is rescaled and added
// into the column sums, nc columns at a time, while it is in cache (each thread its
// own sums, combined in thread order); the column scaling goes in nc-column blocks
// outside, mc-row blocks inside, mr x nr micro-tiles (options::block). Per iteration
// it reads A twice and writes it twice. The row pass's time includes the sums.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "sinkhorn/dense/walks/walk.hpp"
#include "sinkhorn/run_context.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

template <class T>
double rows_and_sums(walk_matrix<T>& m, std::vector<T>& u, std::vector<T>& s) {
  const blocking& b = m.block;
  threaded_column_reduce(m.threads, (m.rows + b.mc - 1) / b.mc, T(0), m.partial, s, m.k.add,
                         [&](std::size_t first_panel, std::size_t end_panel, T* acc) {
                           for (std::size_t i0 = first_panel * b.mc; i0 < std::min(m.rows, end_panel * b.mc);
                                i0 += b.mc) {
                             const std::size_t i1 = std::min(m.rows, i0 + b.mc);
                             for (std::size_t i = i0; i < i1; ++i) {
                               const T alpha = factor(m.r[i], m.k.sum(m.row(i), m.cols));
                               m.k.scale(m.row(i), alpha, m.cols);
                               u[i] *= alpha;
                             }
                             for (std::size_t j = 0; j < m.cols; j += b.nc) {
                               const std::size_t w = std::min(b.nc, m.cols - j);
                               for (std::size_t i = i0; i < i1; ++i) m.k.add(acc + j, m.row(i) + j, w);
                             }
                           }
                         });
  return now();
}

template <class T>
void scale_columns(walk_matrix<T>& m, const T* beta, std::size_t off, std::size_t cnt) {
  const blocking& b = m.block;
  const auto row_blocks = static_cast<std::ptrdiff_t>((m.rows + b.mc - 1) / b.mc);
  for (std::size_t j = off; j < off + cnt; j += b.nc) {
    const std::size_t w = std::min(b.nc, off + cnt - j);
#pragma omp parallel for num_threads(m.threads) schedule(static)
    for (std::ptrdiff_t ib = 0; ib < row_blocks; ++ib) {
      const std::size_t i = static_cast<std::size_t>(ib) * b.mc;
      m.k.scale_columns_block(m.row(i) + j, m.ld, std::min(b.mc, m.rows - i), w, beta + j, b.mr, b.nr);
    }
  }
}

}  // namespace

template <class T>
const walk<T>& blocked_walk() {
  static const walk<T> w{rows_and_sums<T>, scale_columns<T>};
  return w;
}

template const walk<float>& blocked_walk();
template const walk<double>& blocked_walk();

}  // namespace conveyor::sinkhorn::detail
