// SPDX-License-Identifier: BSD-3-Clause
// The allreduce's cost model (cost_model.hpp).
#include "collectives/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/context.hpp"

namespace conveyor {
namespace detail {

double predict_allreduce(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
                         std::size_t segment_bytes, const cost_model& p) {
  const double n = static_cast<double>(bytes);
  const link_params intra = intra_node_link(p), inter = inter_node_link(p);
  const link_params flat = flat_link(layout, p);  // flat algorithms cross the slowest link
  const int q = pow2_floor(size);
  const double fold_seconds = q == size ? 0 : 2 * (flat.alpha + n * flat.beta) + n * p.gamma;
  const double chunks = std::max(1.0, std::ceil(n / static_cast<double>(std::max<std::size_t>(1, segment_bytes))));
  switch (a) {
    case allreduce_algorithm::ring:
      return pipelined_ring_allreduce_seconds(bytes, size, layout, segment_bytes, p);
    case allreduce_algorithm::recursive_doubling: {
      // Round k pairs ranks 2^k apart: with consecutive ranks per node, the first
      // log2(L) rounds stay inside a node.
      double t = fold_seconds;
      for (int d = 1; d < q; d *= 2) {
        const link_params& l = d < layout.min_local ? intra : flat;
        t += l.alpha + n * l.beta + n * p.gamma;
      }
      return t;
    }
    case allreduce_algorithm::rabenseifner: {
      // Halving round at distance d moves n*d/q bytes (d = q/2, ..., 1), the
      // allgather mirrors it; rounds at distance < L stay inside a node.
      double t = fold_seconds;
      for (int d = q / 2; d >= 1; d /= 2) {
        const link_params& l = d < layout.min_local ? intra : flat;
        const double part = n * d / q;
        t += 2 * (l.alpha + part * l.beta) + part * p.gamma;
      }
      return t;
    }
    case allreduce_algorithm::hierarchical: {
      const int l = layout.max_local;
      const double fl = double(l - 1) / l;
      // Per chunk the stages run one after the other, so their latencies add; across
      // chunks they overlap, so the slower stage's bandwidth term dominates and the
      // faster one adds 1/chunks of itself.
      const double lat = 2 * (l > 1 ? 1 : 0) * intra.alpha + 2 * (layout.nodes - 1) * inter.alpha;
      const double bw_intra = 2 * fl * n * intra.beta + fl * n * p.gamma;
      const double bw_inter = ring_allreduce_seconds(n / l, layout.nodes, {0, inter.beta}, p.gamma);
      return lat + std::max(bw_intra, bw_inter) + std::min(bw_intra, bw_inter) / chunks;
    }
    case allreduce_algorithm::mpi:
      // The MPI library runs the same textbook algorithms (recursive doubling
      // small, Rabenseifner large): the better of the two flat predictions.
      return std::min(predict_allreduce(allreduce_algorithm::recursive_doubling, bytes, size, layout, segment_bytes, p),
                      predict_allreduce(allreduce_algorithm::rabenseifner, bytes, size, layout, segment_bytes, p));
    case allreduce_algorithm::shared_memory:
      // Two flag hand-offs (shared_alpha), the copy in, and P - 1 reductions each
      // reading another rank's slot; across nodes it runs recursive doubling.
      if (layout.nodes > 1)
        return predict_allreduce(allreduce_algorithm::recursive_doubling, bytes, size, layout, segment_bytes, p);
      return p.shared_alpha + n * p.copy_beta + (size - 1) * n * (p.gamma + p.copy_beta);
    case allreduce_algorithm::automatic:
      break;
  }
  return 0;
}

allreduce_algorithm choose_allreduce(std::size_t bytes, int size, const node_layout& layout, std::size_t segment_bytes,
                                     const cost_model& p) {
  allreduce_algorithm best = allreduce_algorithm::ring;
  double best_t = predict_allreduce(best, bytes, size, layout, segment_bytes, p);
  for (auto a : {allreduce_algorithm::recursive_doubling, allreduce_algorithm::rabenseifner,
                 allreduce_algorithm::hierarchical}) {
    // Hierarchical only pays off with several nodes of several ranks.
    if (a == allreduce_algorithm::hierarchical && (layout.nodes < 2 || layout.max_local < 2)) continue;
    const double t = predict_allreduce(a, bytes, size, layout, segment_bytes, p);
    if (t < best_t) {
      best = a;
      best_t = t;
    }
  }
  // One node, and P n up to kSharedMemoryMaxBytes: every rank reads all P inputs,
  // so beyond small messages the message-based algorithms move less memory
  // (docs/results.md, "Launched as users launch them": where shared_memory wins).
  if (layout.nodes == 1 && size > 1 && bytes * static_cast<std::size_t>(size) <= kSharedMemoryMaxBytes) {
    const double t = predict_allreduce(allreduce_algorithm::shared_memory, bytes, size, layout, segment_bytes, p);
    if (t < best_t) best = allreduce_algorithm::shared_memory;
  }
  return best;
}

}  // namespace detail

// Predictions for a job described by its shape alone (no communicator).
double predict_allreduce_seconds(allreduce_algorithm a, std::size_t bytes, int nodes, int ranks_per_node,
                                 const cost_model& m) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "predict_allreduce_seconds");
  const int P = nodes * ranks_per_node;
  if (a == allreduce_algorithm::automatic) a = detail::choose_allreduce(bytes, P, l, m.segment_bytes, m);
  return detail::predict_allreduce(a, bytes, P, l, m.segment_bytes, m);
}

allreduce_algorithm predicted_allreduce_choice(std::size_t bytes, int nodes, int ranks_per_node, const cost_model& m) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "predicted_allreduce_choice");
  return detail::choose_allreduce(bytes, nodes * ranks_per_node, l, m.segment_bytes, m);
}

}  // namespace conveyor
