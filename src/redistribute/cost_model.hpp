// SPDX-License-Identifier: BSD-3-Clause
// Redistribute's cost model: the seconds each transport is predicted to take for
// one rank's share of a plan (parameters: runtime/cost_model.hpp), and `auto`'s
// choice, the cheapest for the slowest rank. With c = copy_beta; S, R, L the
// bytes a rank sends, receives and copies locally; (alpha, beta) of the link to
// each peer (docs/algorithms.md derives them):
//   packed:    sum_peers alpha + (S + R + L) c + sum_peers bytes beta
//   pipelined: the same plus one alpha per chunk, packing overlapped with sending
//              to other nodes: max(S_inter c, wire_inter) + S_intra c + wire_intra
//              + (R + L) c (within a node the "wire" is a copy by the same cores).
//   alltoallv: (P - 1) alpha + (S + R + L) c + wire (no overlap)
//   one_sided: a counter handshake per node peer (alpha_intra each), two fences
//              (log2 P) if any peer is off-node, + (S + R + L) c + only the
//              off-node wire (on a node the package is packed into the
//              receiver's shared segment).
//   one_copy:  a counter handshake per node peer + (R + L) c: the receiver copies
//              from the sender's source (every rank on one node, sources in node
//              memory; plan.cpp builds it where it can run and predicts less).
//   datatype:  as packed (MPI packs and unpacks); reported, never chosen.
#pragma once

#include <array>
#include <cstdint>

#include "conveyor/redistribute.hpp"
#include "runtime/cost_model.hpp"

namespace conveyor::detail {

/// One rank's share of a plan.
struct traffic {
  std::int64_t local = 0;                       // bytes copied without MPI
  std::int64_t sent_intra = 0, sent_inter = 0;  // bytes to peers on my node / other nodes
  std::int64_t received = 0;
  int peers_intra = 0, peers_inter = 0;  // peers I send to
  int ranks = 1, node_ranks = 1;         // communicator and node sizes
  std::int64_t chunk_bytes = 1;          // pipelined transport
};
/// Seconds per transport, indexed by the enum's value (automatic unused).
using transport_seconds = std::array<double, redistribute::transport_count>;
/// Predicted seconds of every transport for this rank.
transport_seconds predict_transports(const traffic& t, const cost_model& p);
/// The cheapest of packed, pipelined, one_sided, alltoallv for the slowest rank's
/// predictions (`slowest[i]`: the maximum over ranks). datatype is the baseline,
/// never chosen: MPI packs a derived type at best as fast as Conveyor does.
redistribute::transport cheapest_transport(const transport_seconds& slowest);

}  // namespace conveyor::detail
