// SPDX-License-Identifier: BSD-3-Clause
// Redistribute's transports as data: one row per transport, saying what it is,
// what the cost model predicts for one rank's share of a plan (cost_model.hpp's
// traffic) and whether `auto` considers it, and how a plan builds it. The cost
// model's predictions and choice (cost_model.cpp), the plan's construction
// (plan.cpp) and the public list conveyor::redistribute::transports() behind
// `conveyor info` and the tests' case lists read this table.
//
// Adding a transport (docs/architecture.md, "Adding a transport"): its name in
// CONVEYOR_TRANSPORT_LIST (include/conveyor/enums.h), its file transport_<name>.cpp
// (the transport, its prediction and its row), and that row in transport_table.cpp.
#pragma once

#include <memory>
#include <vector>

#include "conveyor/redistribute.hpp"
#include "redistribute/cost_model.hpp"
#include "redistribute/transport.hpp"

namespace conveyor::redistribute::detail {

/// The terms of one rank's traffic every prediction combines (c = copy_beta; S,
/// R, L the bytes a rank sends, receives and copies locally).
struct traffic_terms {
  double copy;        // (S + R + L) c
  double wire_intra;  // S_intra beta_intra
  double wire_inter;  // S_inter beta_inter
  double latency;     // one alpha per peer, of its link
  double chunks;      // S / chunk_bytes, rounded up
  double alpha_any;   // the slowest link's alpha
};
traffic_terms terms_of(const conveyor::detail::traffic& t, const cost_model& p);

/// What building a transport may need besides the exchange map.
struct transport_build {
  const plan_options& options;
  int node_color;  // my node's number if the caller set ranks per node, else -1
  bool automatic;  // chosen by `auto` (not asked for)
};

struct transport_row {
  transport kind;
  /// One line: how it moves the packages (conveyor info).
  const char* summary;
  /// Predicted seconds for this rank's share.
  double (*predict)(const traffic_terms& terms, const conveyor::detail::traffic& t, const cost_model& p);
  /// Whether `auto`'s cost model chooses among it (the others are run when asked,
  /// or, one_copy, built by the plan wherever it can run).
  bool modeled;
  /// Builds it (collective where it creates MPI objects); null where it cannot
  /// run here, having built nothing (the plan then runs packed). Null `make`: the
  /// plan builds it itself (one_copy).
  std::unique_ptr<transport_base> (*make)(exchange_map& g, const transport_build& b);
};

/// Every row, in the model's order of preference on ties.
const std::vector<const transport_row*>& transport_rows();
const transport_row& transport_row_of(transport kind);

// The rows, one per transport file.
extern const transport_row packed_row;
extern const transport_row pipelined_row;
extern const transport_row one_sided_row;
extern const transport_row alltoallv_row;
extern const transport_row datatype_row;
extern const transport_row one_copy_row;

}  // namespace conveyor::redistribute::detail
