// SPDX-License-Identifier: BSD-3-Clause
// Redistribute's cost model (cost_model.hpp).
#include "redistribute/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace conveyor::detail {

using redistribute::transport;

transport_seconds predict_transports(const traffic& t, const cost_model& p) {
  const auto d = [](std::int64_t x) { return static_cast<double>(x); };
  const double copy = d(t.sent_intra + t.sent_inter + t.received + t.local) * p.copy_beta;
  const double wire_intra = d(t.sent_intra) * p.intra_beta, wire_inter = d(t.sent_inter) * p.inter_beta;
  const double latency = t.peers_intra * p.intra_alpha + t.peers_inter * p.inter_alpha;
  const double chunks = std::ceil(d(t.sent_intra + t.sent_inter) / d(std::max<std::int64_t>(t.chunk_bytes, 1)));
  const double alpha_any = t.peers_inter > 0 ? p.inter_alpha : p.intra_alpha;
  const auto log2_of = [](int n) { return std::ceil(std::log2(std::max(n, 1))); };

  transport_seconds out{};
  out[static_cast<int>(transport::packed)] = latency + copy + wire_intra + wire_inter;
  out[static_cast<int>(transport::datatype)] = out[static_cast<int>(transport::packed)];
  out[static_cast<int>(transport::pipelined)] = latency + chunks * alpha_any +
                                                std::max(d(t.sent_inter) * p.copy_beta, wire_inter) +
                                                d(t.sent_intra + t.received + t.local) * p.copy_beta + wire_intra;
  out[static_cast<int>(transport::alltoallv)] = (t.ranks - 1) * alpha_any + copy + wire_intra + wire_inter;
  const double sync = t.peers_intra * p.intra_alpha + (t.peers_inter > 0 ? 2 * log2_of(t.ranks) * p.inter_alpha : 0);
  out[static_cast<int>(transport::one_sided)] = sync + copy + wire_inter + t.peers_inter * p.inter_alpha;
  // Only ever run on one node: the receiver's copy is the only one.
  out[static_cast<int>(transport::one_copy)] = t.peers_intra * p.intra_alpha + d(t.received + t.local) * p.copy_beta;
  return out;
}

transport cheapest_transport(const transport_seconds& slowest) {
  transport best = transport::packed;
  for (transport c : {transport::pipelined, transport::one_sided, transport::alltoallv}) {
    if (slowest[static_cast<std::size_t>(c)] < slowest[static_cast<std::size_t>(best)]) best = c;
  }
  return best;
}

}  // namespace conveyor::detail
