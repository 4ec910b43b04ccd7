// SPDX-License-Identifier: BSD-3-Clause
// DSOP's cost model (cost_model.hpp).
#include "dsop/cost_model.hpp"

#include "runtime/context.hpp"

namespace conveyor {
namespace dsop::detail {
namespace {

// Seconds of local work: each multiply-add on cached data costs `gamma * T / 4`
// (four per streamed element: the kernels run at about a quarter of a byte-rate
// reduction's cost per element, measured with `conveyor bench dsop`), each element
// of G written costs `gamma * T`.
double dsop_local_seconds(double fmas, double written, std::size_t T, const cost_model& p) {
  return p.gamma * static_cast<double>(T) * (fmas / 4 + written);
}

double ring_allgather_seconds(double block_bytes, int P, const node_layout& layout, const cost_model& p) {
  const link_params l = flat_link(layout, p);
  return (P - 1) * (l.alpha + block_bytes * l.beta);
}

double dsop_seconds(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  const double N = static_cast<double>(s.N), M = static_cast<double>(s.M), P = s.P;
  const double T = static_cast<double>(s.T), G = N * M;
  const double pairs = ring_allgather_seconds((N + M) * T, s.P, layout, p);
  switch (a) {
    case outer_algorithm::allgather:
      return pairs + dsop_local_seconds(P * G, s.distributed ? G / P : G, s.T, p);
    case outer_algorithm::generalized_rabenseifner:
      return pairs + dsop_local_seconds(G, G / P, s.T, p) +
             (s.distributed ? 0 : ring_allgather_seconds(G / P * T, s.P, layout, p));
    case outer_algorithm::allreduce:
    case outer_algorithm::ring: {
      const auto bytes = static_cast<std::size_t>(G * T);
      const double reduce = s.P == 1 ? 0 : pipelined_ring_allreduce_seconds(bytes, s.P, layout, p.segment_bytes, p);
      // A reduce-scatter is the first half of a ring allreduce.
      return dsop_local_seconds(G, G, s.T, p) + (s.distributed ? reduce / 2 : reduce);
    }
    case outer_algorithm::automatic:
      break;
  }
  return 0;
}

}  // namespace

double predict_dsop(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  return dsop_seconds(a, s, layout, p);
}

outer_algorithm choose_dsop(const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  // Cheapest predicted; ties go to the earlier entry (Conveyor's own before the baseline).
  outer_algorithm best = outer_algorithm::generalized_rabenseifner;
  double best_s = predict_dsop(best, s, layout, p);
  for (outer_algorithm c : {outer_algorithm::allgather, outer_algorithm::ring, outer_algorithm::allreduce}) {
    const double t = predict_dsop(c, s, layout, p);
    if (t < best_s) {
      best = c;
      best_s = t;
    }
  }
  return best;
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
