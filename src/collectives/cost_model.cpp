// SPDX-License-Identifier: BSD-3-Clause
// The allreduce's cost model (cost_model.hpp): each algorithm's prediction is its
// row's (allreduce/table.hpp); `auto`'s choice is the cheapest row offered.
#include "collectives/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "collectives/allreduce/table.hpp"
#include "runtime/context.hpp"

namespace conveyor {
namespace collectives::detail {

double predict_allreduce(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
                         std::size_t segment_bytes, const cost_model& p) {
  if (a == allreduce_algorithm::automatic) return 0;
  return allreduce_row_of(a).predict({bytes, size, layout, segment_bytes}, p);
}

allreduce_algorithm choose_allreduce(std::size_t bytes, int size, const node_layout& layout, std::size_t segment_bytes,
                                     const cost_model& p) {
  // The cheapest of the rows the model offers for this shape, the table's first
  // on a tie (ring, which is always offered).
  const allreduce_shape shape{bytes, size, layout, segment_bytes};
  allreduce_algorithm best = allreduce_algorithm::automatic;
  double best_t = 0;
  for (const allreduce_row* row : allreduce_rows()) {
    if (!row->modeled || !row->modeled(shape)) continue;
    const double t = row->predict(shape, p);
    if (best == allreduce_algorithm::automatic || t < best_t) {
      best = row->algorithm;
      best_t = t;
    }
  }
  return best;
}

}  // namespace collectives::detail

// Predictions for a job described by its shape alone (no communicator).
double predict_allreduce_seconds(allreduce_algorithm a, std::size_t bytes, int nodes, int ranks_per_node,
                                 const cost_model& m) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "predict_allreduce_seconds");
  const int P = nodes * ranks_per_node;
  if (a == allreduce_algorithm::automatic) a = collectives::detail::choose_allreduce(bytes, P, l, m.segment_bytes, m);
  return collectives::detail::predict_allreduce(a, bytes, P, l, m.segment_bytes, m);
}

std::vector<allreduce_algorithm> allreduce_model_candidates(std::size_t bytes, int nodes, int ranks_per_node) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "allreduce_model_candidates");
  const collectives::detail::allreduce_shape shape{bytes, nodes * ranks_per_node, l,
                                                   current_cost_model().segment_bytes};
  std::vector<allreduce_algorithm> out;
  for (const collectives::detail::allreduce_row* row : collectives::detail::allreduce_rows()) {
    if (row->modeled && row->modeled(shape)) out.push_back(row->algorithm);
  }
  return out;
}

allreduce_algorithm predicted_allreduce_choice(std::size_t bytes, int nodes, int ranks_per_node, const cost_model& m) {
  const detail::node_layout l = detail::uniform_node_layout(nodes, ranks_per_node, "predicted_allreduce_choice");
  return collectives::detail::choose_allreduce(bytes, nodes * ranks_per_node, l, m.segment_bytes, m);
}

}  // namespace conveyor
