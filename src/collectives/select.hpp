// Algorithm selection: a latency/bandwidth/compute cost model per level
// (intra-node, inter-node), parameters from defaults or `conveyor tune`
// (CONVEYOR_TUNE_FILE). docs/algorithms.md has the formulas.
#pragma once

#include <cstddef>
#include <string>

#include "conveyor/collectives.hpp"

namespace conveyor::detail {

struct node_layout;

using cost_params = cost_model;

/// Predicted seconds of `a` for `bytes` on the layout (flat algorithms pay the
/// inter-node link when there is more than one node).
double predict(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
               std::size_t segment_bytes, const cost_params& p);

/// The cheapest algorithm whose preconditions hold.
allreduce_algorithm choose(std::size_t bytes, int size, const node_layout& layout,
                           std::size_t segment_bytes, const cost_params& p);

}  // namespace conveyor::detail
