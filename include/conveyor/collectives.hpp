// SPDX-License-Identifier: BSD-3-Clause
// The collectives engine: allreduce and its two halves, reduce_scatter and
// allgather(v), over any communicator, with Conveyor's vectorized kernels doing
// every reduction.
//
// Conveyor never communicates on the caller's communicator: on first use it
// duplicates it (a collective call) and caches the duplicate and the node layout
// on it as an MPI attribute, freed when the caller frees the communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/cost_model.hpp"
#include "conveyor/types.hpp"

namespace conveyor {

/// automatic (the cost model's choice), ring, recursive_doubling, rabenseifner,
/// hierarchical, mpi (the MPI library's own): described in conveyor/enums.h and
/// docs/algorithms.md.
/// The names are "auto", "ring", "recursive_doubling", ...
CONVEYOR_DECLARE_ENUM(allreduce_algorithm, CONVEYOR_ALLREDUCE_ALGORITHM_LIST, algorithm_name, parse_algorithm);

struct allreduce_options {
  /// Forced algorithm; `automatic` lets the cost model choose. The environment
  /// variable CONVEYOR_ALLREDUCE_ALGORITHM overrides `automatic` (not a forced choice).
  allreduce_algorithm algorithm = allreduce_algorithm::automatic;
  /// Pipeline segment size in bytes (0: chosen by the cost model).
  std::size_t segment_bytes = 0;
  /// Group ranks into emulated nodes of this many consecutive ranks (0: real
  /// shared-memory nodes, or CONVEYOR_RANKS_PER_NODE when set).
  int ranks_per_node = 0;
  /// Fix the reduction order: every element is ((x_0 op x_1) op x_2) ... op x_{P-1}
  /// in rank order, so the result has the same bits for a given P whatever the
  /// message size, segment size or algorithm.
  bool deterministic = false;
  /// The collective contract (conveyor/contract.hpp): agree across ranks on the
  /// outcome of the local checks and on count, dtype, op and these options (one
  /// extra MPI_Allreduce of 208 bytes), so a bad or mismatched argument on any
  /// rank throws the same error on every rank. Without it (MPI's semantics) a
  /// bad argument throws on its rank alone and mismatched arguments are erroneous:
  /// the other ranks may wait forever.
  bool validate = false;
  /// Called (on the calling thread, during allreduce) as soon as a chunk of the
  /// final result is complete in `recv`: every element exactly once, in no
  /// particular order. Lets callers overlap their own work with the collective.
  std::function<void(std::size_t offset, std::size_t count)> on_chunk;
};

/// One of allreduce's algorithms, as the table of algorithms describes it
/// (src/collectives/allreduce/: one file and one row each).
struct allreduce_algorithm_info {
  allreduce_algorithm algorithm;
  std::string_view name;  // the setting's and Python's name ("ring", ...)
  const char* summary;    // what it does and when it pays
  bool modeled;           // `automatic`'s cost model considers it (where its constraints hold)
  bool measured;          // `automatic` measures it beside the model's choice (where it applies)
};
/// Every algorithm but `automatic`, in the table's order: what `conveyor info`
/// lists, and the case lists of the benchmarks and tests.
CONVEYOR_API const std::vector<allreduce_algorithm_info>& allreduce_algorithms();

/// What allreduce did.
struct allreduce_report {
  allreduce_algorithm algorithm = allreduce_algorithm::automatic;
  std::size_t segment_bytes = 0;
  int nodes = 1;                 // nodes seen by the node-aware layout
  double predicted_seconds = 0;  // the cost model's estimate for the chosen algorithm
  // True while `auto` is still measuring this size class: the call ran one of the
  // candidates (`algorithm`) as a trial, and its time is not the settled choice's.
  // Benchmarks call until it is false before timing (and report that phase apart).
  bool trial = false;
  // shared_memory only: true if a waiting rank spins before it yields its core
  // (the node's ranks have cores of their own), false if it yields at once (they
  // share cores: more ranks than CPUs in the union of the ranks' affinity masks).
  bool spin_waits = false;
};

/// recv = send_0 op send_1 op ... op send_{P-1}, element-wise, on every rank, with
/// bitwise identical results on every rank. `send` may equal `recv` (or be
/// MPI_IN_PLACE) for in-place use. Counts are 64-bit; messages larger than 2^31
/// bytes are split. Throws conveyor::error on bad arguments, unsupported (op,
/// dtype), a mismatch detected by `validate`, or an MPI failure.
CONVEYOR_API allreduce_report allreduce(const void* send, void* recv, std::size_t count, dtype t, op o, MPI_Comm comm,
                                        const allreduce_options& options = {});

template <class T>
allreduce_report allreduce(const T* send, T* recv, std::size_t count, op o, MPI_Comm comm,
                           const allreduce_options& options = {}) {
  return allreduce(static_cast<const void*>(send), static_cast<void*>(recv), count, dtype_of_v<T>, o, comm, options);
}
template <class T>
allreduce_report allreduce(T* inout, std::size_t count, op o, MPI_Comm comm, const allreduce_options& options = {}) {
  return allreduce(static_cast<const void*>(inout), static_cast<void*>(inout), count, dtype_of_v<T>, o, comm, options);
}

/// Measures the model on `comm` (collective): ping-pong latency and bandwidth
/// between ranks on one node and on different nodes (of `ranks_per_node`, 0 =
/// real nodes), and the local reduction speed. The same result on every rank.
CONVEYOR_API cost_model measure_cost_model(MPI_Comm comm, int ranks_per_node = 0);
/// The cost model alone, without MPI: the seconds allreduce algorithm `a` is
/// predicted to take for `bytes` on `nodes` nodes of `ranks_per_node` ranks each
/// (`automatic`: the model's own pick, the one `auto` starts from). For machines
/// one cannot run on: docs/results.md's tables for 64-4096 nodes come from it.
CONVEYOR_API double predict_allreduce_seconds(allreduce_algorithm a, std::size_t bytes, int nodes, int ranks_per_node,
                                              const cost_model& m);
/// The algorithms the model compares for that job (its choice is the cheapest):
/// the table's rows whose constraints hold there (hierarchical with several nodes
/// of several ranks, shared_memory on one node up to a size).
CONVEYOR_API std::vector<allreduce_algorithm> allreduce_model_candidates(std::size_t bytes, int nodes,
                                                                         int ranks_per_node);
/// The algorithm the model picks for that job (never `automatic`).
CONVEYOR_API allreduce_algorithm predicted_allreduce_choice(std::size_t bytes, int nodes, int ranks_per_node,
                                                            const cost_model& m);
/// Reduce-scatter: rank r receives block r of the element-wise reduction, where
/// block r has counts[r] elements and blocks are consecutive in `send` (which
/// holds sum(counts) elements on every rank). recv must hold counts[rank].
/// `send` may be MPI_IN_PLACE (MPI's meaning): the input is then read from `recv`,
/// which holds all sum(counts) elements, and block `rank` is written to its start.
/// validate: as allreduce_options::validate (counts, dtype and op must match).
CONVEYOR_API void reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, dtype t, op o,
                                 MPI_Comm comm, bool validate = false);
/// Equal blocks: `send` holds P * block_count elements.
CONVEYOR_API void reduce_scatter_block(const void* send, void* recv, std::size_t block_count, dtype t, op o,
                                       MPI_Comm comm, bool validate = false);

/// Allgather(v): rank r contributes counts[r] elements; `recv` receives all blocks
/// consecutively (sum(counts) elements). `send` may be MPI_IN_PLACE, in which
/// case rank r's block is already in place in `recv`. validate: counts and dtype
/// must match (see allreduce_options::validate).
CONVEYOR_API void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, dtype t,
                             MPI_Comm comm, bool validate = false);
CONVEYOR_API void allgather(const void* send, void* recv, std::size_t block_count, dtype t, MPI_Comm comm,
                            bool validate = false);

}  // namespace conveyor
