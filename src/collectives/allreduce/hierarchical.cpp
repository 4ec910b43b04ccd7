// SPDX-License-Identifier: BSD-3-Clause
// Hierarchical (node-aware, the COFFEE paper's): per chunk, an intra-node
// reduce-scatter, an inter-node ring allreduce of each rank's slices among their
// owners on every node, and an intra-node allgather; chunks overlap
// (algorithms.hpp). Sends 2(N-1)/N n/L per rank across the network (N nodes of L).
// Predicted: 2 alpha_intra + 2(N-1) alpha_inter, plus the slower stage's bandwidth
// term and 1/chunks of the faster one's (the stages overlap across chunks).
// Offered by the model only with several nodes of several ranks.
#include <algorithm>
#include <cmath>

#include "collectives/allreduce/table.hpp"

namespace conveyor::collectives::detail {
namespace {

double predict(const allreduce_shape& s, const cost_model& p) {
  const double n = static_cast<double>(s.bytes);
  const link_params intra = intra_node_link(p), inter = inter_node_link(p);
  const double chunks = std::max(1.0, std::ceil(n / static_cast<double>(std::max<std::size_t>(1, s.segment_bytes))));
  const int l = s.layout.max_local;
  const double fl = double(l - 1) / l;
  const double lat = 2 * (l > 1 ? 1 : 0) * intra.alpha + 2 * (s.layout.nodes - 1) * inter.alpha;
  const double bw_intra = 2 * fl * n * intra.beta + fl * n * p.gamma;
  const double bw_inter = ring_allreduce_seconds(n / l, s.layout.nodes, {0, inter.beta}, p.gamma);
  return lat + std::max(bw_intra, bw_inter) + std::min(bw_intra, bw_inter) / chunks;
}

void build(schedule& s, const allreduce_chunk& c, scratch_alloc& scratch) {
  hierarchical(s, c.layout, c.rank, c.range, c.buf, scratch);
}

}  // namespace

const allreduce_row hierarchical_row = {
    allreduce_algorithm::hierarchical,
    "node-aware: intra-node reduce-scatter, inter-node ring of the slices, intra-node allgather; several nodes",
    predict,
    [](const allreduce_shape& s) { return s.layout.nodes >= 2 && s.layout.max_local >= 2; },
    nullptr,
    build,
    nullptr,
    /*chunked=*/true,
    /*deterministic=*/false};

}  // namespace conveyor::collectives::detail
