// SPDX-License-Identifier: BSD-3-Clause
// The allreduce's algorithms as data: one row per algorithm, saying what it is,
// what the cost model predicts for it and where `auto` offers it, and how it runs
// (one chunk's rounds as a schedule, or a direct run). Everything that lists or
// dispatches the algorithms reads this table: the cost model's choice
// (cost_model.cpp), `auto`'s measured candidates and the dispatch (allreduce.cpp),
// and the public list conveyor::allreduce_algorithms() behind `conveyor info`, the
// Python docstring and the benchmarks' and tests' case lists.
//
// Adding an algorithm (docs/architecture.md, "Adding an allreduce algorithm"): its
// name in CONVEYOR_ALLREDUCE_ALGORITHM_LIST (include/conveyor/enums.h), its file
// here defining its row (prediction, offer, builder or runner), and that row in
// table.cpp's kByAlgorithm, at its enum's place (also its place in the model's
// order of preference on ties).
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/algorithms.hpp"
#include "conveyor/collectives.hpp"
#include "runtime/context.hpp"
#include "runtime/cost_model.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

/// What the cost model sees of a call.
struct allreduce_shape {
  std::size_t bytes;
  int size;
  const node_layout& layout;
  std::size_t segment_bytes;
};

/// One chunk's rounds, for the algorithms that run as schedules.
struct allreduce_chunk {
  const std::vector<int>& all;  // 0 .. size-1
  int rank;
  const node_layout& layout;
  block range;
  range_buffer buf;
};

/// One call, for the algorithms that run directly (count > 0, more than one rank).
struct allreduce_call {
  comm_context& ctx;
  const void* send;  // MPI_IN_PLACE or send == recv: in place
  void* recv;
  std::size_t count;
  dtype t;
  op o;
  reduce_kernel_fn kernel;
  const allreduce_options& options;
  const node_layout& layout;
};

struct allreduce_row {
  allreduce_algorithm algorithm;
  /// One line: what it does and when it pays (conveyor info, the docstrings).
  const char* summary;
  /// Predicted seconds (runtime/cost_model.hpp's parameters).
  double (*predict)(const allreduce_shape& s, const cost_model& p);
  /// Whether the model's choice for `auto` considers it for this shape (null: never).
  bool (*modeled)(const allreduce_shape& s);
  /// Whether `auto` measures it beside the model's choice on this layout (null: never).
  bool (*measured)(const node_layout& layout);
  /// One chunk's rounds (null: it runs directly, with `run`).
  void (*build)(schedule& s, const allreduce_chunk& c, scratch_alloc& scratch);
  /// Runs one call directly, send to recv (null: it runs as schedules).
  void (*run)(const allreduce_call& c);
  /// Schedules: pipelined in chunks of the segment size (else one for the whole range).
  bool chunked;
  /// Its result does not depend on the segmentation or the timing: it runs as it
  /// is under allreduce_options::deterministic (the others run the ordered schedule).
  bool deterministic;
};

/// The row of `a` (every algorithm but `automatic`).
const allreduce_row& allreduce_row_of(allreduce_algorithm a);
/// Every row, in the model's order of preference on ties (the enum's order).
const std::vector<const allreduce_row*>& allreduce_rows();

/// A row's `modeled` for an algorithm the model considers on every shape.
inline bool offered_everywhere(const allreduce_shape&) { return true; }

/// The extra ranks' exchange of the power-of-two algorithms: P - q ranks fold
/// their vector into a partner before and get the result back after.
double fold_seconds(const allreduce_shape& s, const cost_model& p);

// The rows, one file each.
extern const allreduce_row ring_row;
extern const allreduce_row recursive_doubling_row;
extern const allreduce_row rabenseifner_row;
extern const allreduce_row hierarchical_row;
extern const allreduce_row mpi_row;
extern const allreduce_row shared_memory_row;

}  // namespace conveyor::collectives::detail
