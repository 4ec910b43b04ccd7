// SPDX-License-Identifier: BSD-3-Clause
// The node-aware all-to-all (conveyor::alltoall_by_nodes and
// conveyor::alltoallw_by_nodes, conveyor/alltoall.hpp): an all-to-all with one
// message per ordered pair of nodes instead of one per pair of ranks.
//
// Steps, on a layout of N nodes (node A holds L_A ranks):
//  0. (parts of any size only) an allgather on the node's communicator of the
//     bytes each of its ranks sends to and receives from every rank (2 P
//     integers per rank), so that every rank of the node can lay out its stage.
//  1. gather (an alltoallw on the node's communicator): every rank hands each
//     remote node B's parts to the rank of its node that leads A -> B, which
//     lays them out [source rank on A][destination rank on B] in its stage; the
//     parts for the node's own ranks go to their owners' stages.
//  2. cross (a sparse alltoallw on the whole communicator): each leader sends its
//     node pair's bytes to the rank of B that leads B <- A, as one message
//     straight from the stage into the receiver's stage (none if the pair has
//     nothing to move).
//  3. scatter (an alltoallw on the node's communicator): each receiving leader
//     hands every rank of its node that rank's column of each node pair it
//     received; every rank copies its own node's blocks from its stage.
// Leaders: the pair A -> B is sent by A's local rank (d - 1) mod L_A and received
// by B's local rank (d' - 1) mod L_B, d = (B - A) mod N and d' = (A - B) mod N,
// so the N - 1 pairs of a node spread over its ranks.
// Messages between nodes per rank: ceil((N - 1) / L) sent and received, against
// P - L for the pairwise exchange; bytes between nodes: the same as pairwise.
// Cost: the two steps inside the node (each moves every byte of the rank once
// through the node's shared slots or cross-memory attach), and for parts of any
// size the allgather of step 0.
// Limits: the stage holds every byte the rank sends or receives once more (its
// leaders' pairs too). In place is safe: step 1 reads the whole send buffer
// before step 3 writes the receive buffer. The node communicator is split on
// first use (collective) and kept with the communicator's context; the maps and
// the stage are kept for the last size of equal parts, rebuilt every call for
// parts of any size (O(L P) work and the parts' boxes).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "conveyor/alltoall.hpp"
#include "conveyor/cost_model.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/context.hpp"

namespace conveyor::redistribute::detail {

class by_nodes_exchange {
 public:
  by_nodes_exchange() = default;
  ~by_nodes_exchange();
  by_nodes_exchange(const by_nodes_exchange&) = delete;
  by_nodes_exchange& operator=(const by_nodes_exchange&) = delete;

  /// Runs the three steps on `ctx` (its private communicator) with `layout`
  /// (more than one node): `send` (or `recv`, in place: send == recv) to `recv`,
  /// `b` bytes per rank pair. Returns the cross step's report (messages between
  /// nodes) with the gather's and scatter's bytes added to self_bytes.
  alltoallw_report run(conveyor::detail::comm_context& ctx, const conveyor::detail::node_layout& layout,
                       const void* send, void* recv, std::int64_t b);
  /// The same for parts of any size: rank q's part of `send` is send_maps[q],
  /// rank r's of `recv` recv_maps[r] (one map per rank; send == recv in place,
  /// with the receive maps as send maps).
  alltoallw_report run(conveyor::detail::comm_context& ctx, const conveyor::detail::node_layout& layout,
                       const void* send, const std::vector<byte_map>& send_maps, void* recv,
                       const std::vector<byte_map>& recv_maps);

 private:
  void split(const conveyor::detail::comm_context& ctx, const conveyor::detail::node_layout& layout);
  // The maps of the three steps from rows_ and cols_; send_part(map, q) appends
  // this rank's part for rank q to a map, recv_part(map, r) its part from r.
  template <class SendPart, class RecvPart>
  void plan(const conveyor::detail::comm_context& ctx, const conveyor::detail::node_layout& layout,
            const SendPart& send_part, const RecvPart& recv_part);
  alltoallw_report steps(conveyor::detail::comm_context& ctx, const void* send, void* recv);

  MPI_Comm node_comm_ = MPI_COMM_NULL;
  std::int64_t bytes_ = -1;  // the equal parts' size the maps below are for (-1: none)
  // [local rank s][rank q]: bytes s sends q; [local rank j][rank r]: bytes j receives from r.
  std::vector<std::int64_t> rows_, cols_;
  std::vector<byte_map> gather_send_, gather_recv_, cross_send_, cross_recv_, scatter_send_, scatter_recv_;
  std::int64_t recv_region_ = 0;  // where the cross step's receive region starts in the stage
  conveyor::detail::byte_buffer stage_;
};

/// The seconds the cost model predicts for one all-to-all of `b` bytes per rank
/// pair on `ranks` ranks over `nodes` nodes, the largest of `largest_node` ranks:
/// [0] the pairwise exchange, [1] the node-aware one. Every
/// message of a step is posted at once, so a step pays one latency of its slowest
/// link and, for each other message, its software cost (taken as a_intra):
/// pairwise: a_inter + (P - 2) a_intra + (L - 1) b B_intra + L (P - L) b B_inter
/// by nodes: 2 ((L - 1) a_intra + P b B_intra)              (gather, scatter)
///           + a_inter + (ceil((N - 1) / L) - 1) a_intra + L (P - L) b B_inter
/// with L the largest node (the slowest rank's), P ranks, N nodes, (a, B) the
/// links' latency and seconds per byte (a node's link carries all its ranks'
/// bytes). By nodes saves about (P - 2L - ceil((N - 1) / L)) a_intra and pays
/// 2 P b B_intra: it wins for small parts on many ranks per node. On one node
/// both are (L - 1)(a_intra + b B_intra).
std::array<double, 2> predict_alltoall_paths(std::int64_t b, int ranks, int nodes, int largest_node,
                                             const cost_model& p);

}  // namespace conveyor::redistribute::detail
