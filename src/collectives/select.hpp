// Algorithm selection: a latency/bandwidth/compute cost model per level
// (intra-node, inter-node), parameters from defaults or `conveyor tune`
// (CONVEYOR_TUNE_FILE). docs/algorithms.md has the formulas.
#pragma once

#include <cstddef>
#include <string>

#include "conveyor/collectives.hpp"

namespace conveyor::detail {

struct node_layout;

struct link_params {
  double alpha = 0;  // seconds per message
  double beta = 0;   // seconds per byte
};

struct cost_params {
  link_params intra{3e-6, 1.0 / 6e9};     // shared memory
  link_params inter{30e-6, 1.0 / 1.1e9};  // ~10 Gbit/s Ethernet with TCP
  double gamma = 1.0 / 12e9;              // seconds per byte of a local reduction (3 streams)
  std::size_t segment_bytes = std::size_t{1} << 20;
  int window = 4;                         // pipeline chunks in flight
};

/// Defaults, overridden by the `key value` lines of $CONVEYOR_TUNE_FILE if set.
/// Throws conveyor::error(invalid_argument) for an unreadable or malformed file.
const cost_params& current_cost_params();
/// Parses a tune file (keys: intra_alpha intra_beta inter_alpha inter_beta gamma
/// segment_bytes window).
cost_params parse_cost_params(const std::string& text);
std::string format_cost_params(const cost_params& p);

/// Predicted seconds of `a` for `bytes` on the layout (flat algorithms pay the
/// inter-node link when there is more than one node).
double predict(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
               std::size_t segment_bytes, const cost_params& p);

/// The cheapest algorithm whose preconditions hold.
allreduce_algorithm choose(std::size_t bytes, int size, const node_layout& layout,
                           std::size_t segment_bytes, const cost_params& p);

}  // namespace conveyor::detail
