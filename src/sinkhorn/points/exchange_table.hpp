// SPDX-License-Identifier: BSD-3-Clause
// The point-cloud engine's exchanges as data: one row per way a side's points
// reach the other ranks (block_ring's two modes, points/ring.hpp), saying what it
// is, how block_ring runs it, the largest side `auto` gives it, and what one pass
// is predicted to cost once a first pass by the first row has been timed. The
// solver's dispatch and `auto`'s choice (points/cloud.cpp), the public list
// conveyor::sinkhorn::points_exchanges() behind `conveyor info`, the Python
// docstring, and the tests' and the benchmark's case lists read this table.
//
// `auto`: a side's first pass runs the first row (the ring, which needs no more
// memory than two blocks) and times it; then every row's prediction from that
// evidence is taken on the slowest rank (one MPI_Allreduce), and the side's later
// passes run the cheapest row whose limit the side fits (ties: the earlier row).
//
// Adding an exchange (docs/architecture.md, "Adding a point-cloud exchange"): its
// name in CONVEYOR_POINTS_EXCHANGE_LIST (include/conveyor/enums.h), its mode in
// block_ring (ring.hpp), and its row in exchange_table.cpp.
#pragma once

#include <mpi.h>

#include <vector>

#include "conveyor/sinkhorn_points.hpp"
#include "runtime/cost_model.hpp"

namespace conveyor::sinkhorn::detail {

/// What `auto` knows after a side's first pass by the first row, on one rank.
struct exchange_evidence {
  double pass_seconds;  // the whole pass
  double work_seconds;  // the part spent computing (the rest: waiting for blocks)
  double side_bytes;    // the side's points and potentials, every rank's
  int size;
  conveyor::detail::link_params link;  // the cost model's link between the ranks
};

struct exchange_row {
  exchange way;
  /// One line: what it does and when it pays (conveyor info, the docstrings).
  const char* summary;
  /// block_ring's mode: one allgather per pass (else the ring's P - 1 steps).
  bool gathered;
  /// The largest side (bytes) `auto` gives it: it holds the whole side in memory.
  double max_side_bytes;
  /// One pass's predicted seconds.
  double (*predict)(const exchange_evidence& e);
};

/// Every row; the first is the one `auto` runs and times first, and fits any side.
const std::vector<exchange_row>& exchange_rows();
/// The row of `way`; `automatic`: the first row (what an undecided side runs).
const exchange_row& exchange_row_of(exchange way);
/// `auto`'s choice from this rank's evidence. Collective over `comm` (the same
/// answer on every rank).
exchange choose_exchange(MPI_Comm comm, const exchange_evidence& mine);

}  // namespace conveyor::sinkhorn::detail
