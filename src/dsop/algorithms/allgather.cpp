// SPDX-License-Identifier: BSD-3-Clause
// allgather: every rank gathers the P vector pairs and computes all of G itself
// (distributed: only its own rows). One collective, of small messages; pays when
// G is small beside the latency of a reduction, or P is small.
// Bytes per rank: (P-1)(N+M) T received. Local: P N M multiply-adds (P n_p M
// distributed), N M T bytes of G written (n_p M T distributed).
#include "dsop/algorithms/table.hpp"

namespace conveyor::dsop::detail {
namespace {

double predict(const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  const double G = static_cast<double>(s.N) * static_cast<double>(s.M);
  const double pairs = ring_allgather_seconds(static_cast<double>((s.N + s.M) * s.T), s.P, layout, p);
  return pairs + dsop_local_seconds(s.P * G, s.distributed ? G / s.P : G, s.T, p);
}

template <class T>
void run(const dsop_call<T>& c) {
  const auto pairs = c.gather_pairs();
  if (c.distributed) c.rows_from(pairs, c.mine().first, c.mine().count, c.out);
  else c.rows_from(pairs, 0, c.N, c.out);
}

}  // namespace

const dsop_row allgather_row = {
    outer_algorithm::allgather,
    "allgather of the P pairs; every rank all of G (its rows if distributed) from all P: P N M multiply-adds a rank",
    predict, run<float>, run<double>};

}  // namespace conveyor::dsop::detail
