// SPDX-License-Identifier: BSD-3-Clause
// Rabenseifner: the fold to q = 2^k ranks, a recursive-halving reduce-scatter and
// a recursive-doubling allgather, on the whole vector as one schedule
// (algorithms.hpp). Sends 2(q-1)/q n in 2 log2 q messages.
// Predicted: fold + the halving round at distance d (q/2, ..., 1) moving n d/q
// bytes both ways, 2 (alpha + n d/q beta) + n d/q gamma; rounds at distance < L
// on the node's link.
#include "collectives/allreduce/table.hpp"

namespace conveyor::collectives::detail {
namespace {

double predict(const allreduce_shape& s, const cost_model& p) {
  const double n = static_cast<double>(s.bytes);
  const link_params intra = intra_node_link(p), flat = flat_link(s.layout, p);
  const int q = pow2_floor(s.size);
  double t = fold_seconds(s, p);
  for (int d = q / 2; d >= 1; d /= 2) {
    const link_params& l = d < s.layout.min_local ? intra : flat;
    const double part = n * d / q;
    t += 2 * (l.alpha + part * l.beta) + part * p.gamma;
  }
  return t;
}

void build(schedule& s, const allreduce_chunk& c, scratch_alloc& scratch) {
  rabenseifner(s, c.all, c.rank, c.range, c.buf, scratch);
}

}  // namespace

const allreduce_row rabenseifner_row = {
    allreduce_algorithm::rabenseifner,
    "recursive-halving reduce-scatter + recursive-doubling allgather: 2 log2 P latencies, 2(P-1)/P n bytes",
    predict,
    offered_everywhere,
    nullptr,
    build,
    nullptr,
    /*chunked=*/false,
    /*deterministic=*/false};

}  // namespace conveyor::collectives::detail
