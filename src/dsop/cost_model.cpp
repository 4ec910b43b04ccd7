// SPDX-License-Identifier: BSD-3-Clause
// DSOP's cost model (cost_model.hpp).
#include "dsop/cost_model.hpp"

#include "dsop/algorithms/table.hpp"
#include "runtime/context.hpp"

namespace conveyor {
namespace dsop::detail {

// Each multiply-add on cached data costs `gamma * T / 4` (the kernels run at
// about a quarter of a byte-rate reduction's cost per element: docs/results.md,
// "DSOP"), each element of G written `gamma * T`.
double dsop_local_seconds(double fmas, double written, std::size_t T, const cost_model& p) {
  return p.gamma * static_cast<double>(T) * (fmas / 4 + written);
}

double ring_allgather_seconds(double block_bytes, int P, const node_layout& layout, const cost_model& p) {
  const link_params l = flat_link(layout, p);
  return (P - 1) * (l.alpha + block_bytes * l.beta);
}

double reduced_outer_seconds(const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  const double G = static_cast<double>(s.N) * static_cast<double>(s.M);
  const auto bytes = static_cast<std::size_t>(G * static_cast<double>(s.T));
  const double reduce = s.P == 1 ? 0 : pipelined_ring_allreduce_seconds(bytes, s.P, layout, p.segment_bytes, p);
  // A reduce-scatter is the first half of a ring allreduce.
  return dsop_local_seconds(G, G, s.T, p) + (s.distributed ? reduce / 2 : reduce);
}

double predict_dsop(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  return dsop_row_of(a).predict(s, layout, p);
}

outer_algorithm choose_dsop(const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  const dsop_row* best = nullptr;
  double best_s = 0;
  for (const dsop_row* r : dsop_rows()) {
    const double t = r->predict(s, layout, p);
    if (!best || t < best_s) {  // strictly cheaper: ties to the earlier row
      best = r;
      best_s = t;
    }
  }
  return best->algorithm;
}

}  // namespace dsop::detail

// Predictions for a job described by its shape alone (no communicator).
double predict_outer_seconds(outer_algorithm a, std::size_t N, std::size_t M, std::size_t element_bytes, int nodes,
                             int ranks_per_node, bool distributed, const cost_model& m) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "predict_outer_seconds");
  const dsop::detail::dsop_shape s{N, M, element_bytes, nodes * ranks_per_node, distributed};
  if (a == outer_algorithm::automatic) a = dsop::detail::choose_dsop(s, l, m);
  return dsop::detail::predict_dsop(a, s, l, m);
}

outer_algorithm predicted_outer_choice(std::size_t N, std::size_t M, std::size_t element_bytes, int nodes,
                                       int ranks_per_node, bool distributed, const cost_model& m) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "predicted_outer_choice");
  return dsop::detail::choose_dsop({N, M, element_bytes, nodes * ranks_per_node, distributed}, l, m);
}

}  // namespace conveyor
