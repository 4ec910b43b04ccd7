// Internal: the transport `auto` runs, from the cost model (conveyor/collectives.hpp:
// defaults, or measured by `conveyor tune`) and what each rank moves. Formulas in
// docs/algorithms.md ("Redistribute: choosing a transport").
#pragma once

#include <array>
#include <cstdint>

#include "conveyor/collectives.hpp"
#include "conveyor/redistribute.hpp"

namespace conveyor::redistribute::detail {

/// One rank's share of a plan.
struct traffic {
  std::int64_t local = 0;                     // bytes copied without MPI
  std::int64_t sent_intra = 0, sent_inter = 0;  // bytes to peers on my node / other nodes
  std::int64_t received = 0;
  int peers_intra = 0, peers_inter = 0;       // peers I send to
  int ranks = 1, node_ranks = 1;              // communicator and node sizes
  std::int64_t chunk_bytes = 1;               // pipelined transport
};

/// Predicted seconds of every transport for this rank (index: the enum value;
/// automatic: unused).
std::array<double, 6> predict_transports(const traffic& t, const cost_model& p);

/// The cheapest of packed, pipelined, one_sided, alltoallv for the slowest rank's
/// predictions (`slowest[i]`: the maximum over ranks). datatype is the baseline,
/// never chosen: MPI packs a derived type at best as fast as Conveyor does.
transport cheapest(const std::array<double, 6>& slowest);

}  // namespace conveyor::redistribute::detail
