// The cost models of every engine, in one module: alpha-beta-gamma predictions of
// the seconds each algorithm takes, from one parameter set (conveyor::cost_model in
// conveyor/collectives.hpp: defaults, or the tune file CONVEYOR_TUNE_FILE that
// `conveyor tune` writes), per link level (inside a node, between nodes). Each
// engine has one entry here: its `auto` choice is the cheapest prediction.
// docs/algorithms.md derives every formula; the short forms:
//
// Allreduce of n bytes on P ranks (L ranks per node, flat algorithms pay the
// slowest link, q = largest power of two <= P, "fold" the extra ranks' exchange):
//   ring:               2(P-1) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma
//                       + (chunks - 1) alpha (pipelined in segments)
//   recursive_doubling: fold + log2 q (alpha + n beta + n gamma)
//   rabenseifner:       fold + sum over halving rounds 2 (alpha + n d/q beta) + ...
//   hierarchical:       intra reduce-scatter/allgather + inter ring on n/L, the
//                       slower stage's bandwidth dominating across segments.
//   shared_memory:      shared_alpha + n copy_beta + (P-1) n (gamma + copy_beta), one node
//                       only, offered up to P n = kSharedMemoryMaxBytes.
//
// DSOP (G = sum of P outer products, N x M, T-byte elements; an allgather of k
// bytes per rank costs (P-1)(alpha + k beta); a multiply-add on cached data
// gamma T / 4, an element of G written gamma T):
//   allgather:                pairs allgathered, P N M multiply-adds, N M written;
//   generalized_rabenseifner: pairs allgathered, N M / P multiply-adds and
//                             written, row blocks allgathered (not if distributed);
//   allreduce, ring:          local a b^T, then a ring allreduce of N M T bytes
//                             (a reduce-scatter, half of it, if distributed).
//
// Redistribute transports (c = copy_beta; S, R, L the bytes a rank sends,
// receives and copies locally; (alpha, beta) of the link to each peer):
//   packed:    sum_peers alpha + (S + R + L) c + sum_peers bytes beta
//   pipelined: the same plus one alpha per chunk, packing overlapped with sending
//              to other nodes: max(S_inter c, wire_inter) + S_intra c + wire_intra
//              + (R + L) c (within a node the "wire" is a copy by the same cores).
//   alltoallv: (P - 1) alpha + (S + R + L) c + wire (no overlap)
//   one_sided: a counter handshake per node peer (alpha_intra each), two fences
//              (log2 P) if any peer is off-node, + (S + R + L) c + only the
//              off-node wire (on a node the package is packed into the
//              receiver's shared segment).
//   datatype:  as packed (MPI packs and unpacks); reported, never chosen.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "conveyor/collectives.hpp"
#include "conveyor/outer.hpp"
#include "conveyor/redistribute.hpp"

namespace conveyor::detail {

struct node_layout;

// --- allreduce ----------------------------------------------------------------
/// Predicted seconds of `a` for `bytes` on the layout.
double predict_allreduce(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
                         std::size_t segment_bytes, const cost_model& p);
/// The largest P x n (bytes) for which the model offers the shared_memory allreduce.
inline constexpr std::size_t kSharedMemoryMaxBytes = std::size_t{64} << 10;
/// The cheapest algorithm whose preconditions hold.
allreduce_algorithm choose_allreduce(std::size_t bytes, int size, const node_layout& layout,
                                     std::size_t segment_bytes, const cost_model& p);

// --- DSOP ---------------------------------------------------------------------
struct dsop_shape {
  std::size_t N, M, T;  // rows, columns, element bytes
  int P;
  bool distributed;
};
double predict_dsop(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p);
/// The cheapest; ties go to the earlier of generalized_rabenseifner, allgather,
/// ring, allreduce (Conveyor's own before the baseline).
outer_algorithm choose_dsop(const dsop_shape& s, const node_layout& layout, const cost_model& p);

// --- Redistribute ----------------------------------------------------------------
/// One rank's share of a plan.
struct traffic {
  std::int64_t local = 0;                       // bytes copied without MPI
  std::int64_t sent_intra = 0, sent_inter = 0;  // bytes to peers on my node / other nodes
  std::int64_t received = 0;
  int peers_intra = 0, peers_inter = 0;         // peers I send to
  int ranks = 1, node_ranks = 1;                // communicator and node sizes
  std::int64_t chunk_bytes = 1;                 // pipelined transport
};
using transport_seconds = std::array<double, 6>;  // index: the transport's enum value (automatic unused)
/// Predicted seconds of every transport for this rank.
transport_seconds predict_transports(const traffic& t, const cost_model& p);
/// The cheapest of packed, pipelined, one_sided, alltoallv for the slowest rank's
/// predictions (`slowest[i]`: the maximum over ranks). datatype is the baseline,
/// never chosen: MPI packs a derived type at best as fast as Conveyor does.
redistribute::transport cheapest_transport(const transport_seconds& slowest);

}  // namespace conveyor::detail
