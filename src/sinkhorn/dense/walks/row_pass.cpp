// SPDX-License-Identifier: BSD-3-Clause
// The row pass of the typical and c2r walks (walk.hpp): each row summed and
// rescaled to its marginal, rows shared statically over the threads.
#include <cstddef>
#include <vector>

#include "sinkhorn/dense/walks/walk.hpp"

namespace conveyor::sinkhorn::detail {

template <class T>
void row_pass(walk_matrix<T>& m, std::vector<T>& u) {
  const auto rows = static_cast<std::ptrdiff_t>(m.rows);
#pragma omp parallel for num_threads(m.threads) schedule(static)
  for (std::ptrdiff_t ii = 0; ii < rows; ++ii) {
    const auto i = static_cast<std::size_t>(ii);
    const T alpha = factor(m.r[i], m.k.sum(m.row(i), m.cols));
    m.k.scale(m.row(i), alpha, m.cols);
    u[i] *= alpha;
  }
}

template void row_pass(walk_matrix<float>&, std::vector<float>&);
template void row_pass(walk_matrix<double>&, std::vector<double>&);

}  // namespace conveyor::sinkhorn::detail
