// SPDX-License-Identifier: BSD-3-Clause
// The cost model's parameters (conveyor/cost_model.hpp: defaults, or the tune
// file CONVEYOR_TUNE_FILE that `conveyor tune` writes) and the terms every
// engine's alpha-beta-gamma model is built from. The runtime knows no engine:
// each engine's own formulas live with it (collectives/cost_model.hpp,
// dsop/cost_model.hpp, redistribute/cost_model.hpp), and docs/algorithms.md
// derives them.
#pragma once

#include <cstddef>

#include "conveyor/cost_model.hpp"

namespace conveyor::detail {

struct node_layout;

/// Latency (seconds per message) and inverse bandwidth (seconds per byte) of one
/// kind of link.
struct link_params {
  double alpha, beta;
};
inline link_params intra_node_link(const cost_model& p) { return {p.intra_alpha, p.intra_beta}; }
inline link_params inter_node_link(const cost_model& p) { return {p.inter_alpha, p.inter_beta}; }
/// The link an algorithm that ignores nodes pays: the slowest one of the layout.
link_params flat_link(const node_layout& layout, const cost_model& p);

/// The largest power of two <= p (p >= 1).
int pow2_floor(int p);

/// A ring allreduce of n bytes over g ranks on one kind of link, in one piece:
/// 2(g-1) alpha + 2 (g-1)/g n beta + (g-1)/g n gamma.
double ring_allreduce_seconds(double n, int g, const link_params& l, double gamma);

/// The ring allreduce of `bytes` over `size` ranks that the engines run on a
/// layout: on the flat link, pipelined in segments of `segment_bytes` (every
/// segment after the first adds one step's latency).
double pipelined_ring_allreduce_seconds(std::size_t bytes, int size, const node_layout& layout,
                                        std::size_t segment_bytes, const cost_model& p);

/// A layout of `nodes` nodes of `ranks_per_node` ranks each, for predictions
/// from a job's shape alone (the models read the node count and the smallest and
/// largest node). Throws invalid_argument, naming `who`, for counts below 1.
node_layout uniform_node_layout(int nodes, int ranks_per_node, const char* who);

}  // namespace conveyor::detail
