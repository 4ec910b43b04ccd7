// Choosing a transport (choose.hpp). With c = copy_beta, S/R/L the bytes this rank
// sends, receives and copies locally, n the peers it sends to, and (alpha, beta)
// of the link to each peer:
//   packed:    sum_peers alpha + (S + R + L) c + sum_peers bytes * beta
//   pipelined: the same plus one alpha per chunk, packing overlapped with sending
//              to other nodes: max(S_inter c, wire_inter) + S_intra c + wire_intra +
//              (R + L) c. (Within a node the "wire" is a memory copy by the same
//              cores, so it does not overlap packing.)
//   alltoallv: (P - 1) alpha + (S + R + L) c + wire (no overlap)
//   one_sided: a counter handshake per node peer (alpha_intra each), two fences
//              (log2 P) if any peer is off-node, + (S + R + L) c + only the
//              off-node wire: on a node the package is packed straight into the
//              receiver's shared segment.
//   datatype:  as packed (MPI packs and unpacks); reported, never chosen.
#include "redistribute/choose.hpp"

#include <algorithm>
#include <cmath>

namespace conveyor::redistribute::detail {

std::array<double, 6> predict_transports(const traffic& t, const cost_model& p) {
  const auto d = [](std::int64_t x) { return static_cast<double>(x); };
  const double copy = d(t.sent_intra + t.sent_inter + t.received + t.local) * p.copy_beta;
  const double wire_intra = d(t.sent_intra) * p.intra_beta, wire_inter = d(t.sent_inter) * p.inter_beta;
  const double latency = t.peers_intra * p.intra_alpha + t.peers_inter * p.inter_alpha;
  const double chunks = std::ceil(d(t.sent_intra + t.sent_inter) / d(std::max<std::int64_t>(t.chunk_bytes, 1)));
  const double alpha_any = t.peers_inter > 0 ? p.inter_alpha : p.intra_alpha;
  const auto log2_of = [](int n) { return std::ceil(std::log2(std::max(n, 1))); };

  std::array<double, 6> out{};
  out[static_cast<int>(transport::packed)] = latency + copy + wire_intra + wire_inter;
  out[static_cast<int>(transport::datatype)] = out[static_cast<int>(transport::packed)];
  out[static_cast<int>(transport::pipelined)] = latency + chunks * alpha_any +
                                                std::max(d(t.sent_inter) * p.copy_beta, wire_inter) +
                                                d(t.sent_intra + t.received + t.local) * p.copy_beta + wire_intra;
  out[static_cast<int>(transport::alltoallv)] = (t.ranks - 1) * alpha_any + copy + wire_intra + wire_inter;
  const double sync = t.peers_intra * p.intra_alpha + (t.peers_inter > 0 ? 2 * log2_of(t.ranks) * p.inter_alpha : 0);
  out[static_cast<int>(transport::one_sided)] = sync + copy + wire_inter + t.peers_inter * p.inter_alpha;
  return out;
}

transport cheapest(const std::array<double, 6>& slowest) {
  transport best = transport::packed;
  for (transport c : {transport::pipelined, transport::one_sided, transport::alltoallv}) {
    if (slowest[static_cast<std::size_t>(c)] < slowest[static_cast<std::size_t>(best)]) best = c;
  }
  return best;
}

}  // namespace conveyor::redistribute::detail
