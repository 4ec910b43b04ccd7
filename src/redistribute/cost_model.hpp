// SPDX-License-Identifier: BSD-3-Clause
// Redistribute's cost model: the seconds each transport is predicted to take for
// one rank's share of a plan (parameters: runtime/cost_model.hpp), and `auto`'s
// choice, the cheapest modeled transport for the slowest rank. Each transport's
// prediction is its row's (transport_table.hpp; the formula in the header comment
// above the row, in its transport_<name>.cpp; docs/algorithms.md derives them).
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
/// The cheapest modeled transport (packed, pipelined, one_sided, alltoallv) for the
/// slowest rank's predictions (`slowest[i]`: the maximum over ranks).
redistribute::transport cheapest_transport(const transport_seconds& slowest);

}  // namespace conveyor::detail
