// SPDX-License-Identifier: BSD-3-Clause
// generalized_rabenseifner (the DSOP paper's algorithm): allgather the P vector
// pairs; each rank computes its own block of rows of G from all P pairs; an
// allgatherv of the row blocks gives every rank G (skipped when distributed).
// Bytes per rank: (P-1)(N+M) T for the pairs, then (N - n_p) M T for the blocks.
// Local: P n_p M multiply-adds (N M on average), n_p M T bytes of G written.
// Scratch: the P pairs, P (N+M) elements.
#include "dsop/algorithms/table.hpp"

namespace conveyor::dsop::detail {
namespace {

double predict(const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  const double G = static_cast<double>(s.N) * static_cast<double>(s.M), T = static_cast<double>(s.T);
  const double pairs = ring_allgather_seconds(static_cast<double>((s.N + s.M) * s.T), s.P, layout, p);
  const double blocks = s.distributed ? 0 : ring_allgather_seconds(G / s.P * T, s.P, layout, p);
  return pairs + dsop_local_seconds(G, G / s.P, s.T, p) + blocks;
}

template <class T>
void run(const dsop_call<T>& c) {
  const auto pairs = c.gather_pairs();
  c.rows_from(pairs, c.mine().first, c.mine().count, c.my_rows_out());
  if (!c.distributed) allgatherv(MPI_IN_PLACE, c.out, c.block_counts(), dtype_of_v<T>, c.comm);
}

}  // namespace

const dsop_row generalized_rabenseifner_row = {
    outer_algorithm::generalized_rabenseifner,
    "allgather of the P pairs; each rank its N/P rows of G from all P; allgather of the row blocks (the DSOP paper's)",
    predict, run<float>, run<double>};

}  // namespace conveyor::dsop::detail
