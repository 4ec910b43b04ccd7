// SPDX-License-Identifier: BSD-3-Clause
// The plans of recent ScaLAPACK drop-in calls, kept so that an application that
// redistributes the same matrices every step plans once.
//
// One cache per process set (the processes of a BLACS context, in grid order), with
// an MPI communicator of exactly those processes (MPI_Comm_create_group: processes
// outside the context never take part). Every decision — hit, insert, evict,
// promote — is taken from the call's exchange (grid_exchange.hpp), which every
// process of the set sees alike, so their caches change in lockstep and the
// collective teardown of a plan (MPI_Win_free of a shared window) happens on all of
// them at the same call. A reused context handle is a new grid to the cache: the
// key holds each process's own position in both grids, so a cached plan matches
// only if every process still sits where it sat.
//
// Cold and warm: a call that misses gets a plan whose transport needs no setup
// (packed); if the same call comes again, the plan is rebuilt once with the
// cost model's choice (on one node: shared windows), which later calls reuse.
// At MPI_Finalize the caches are emptied in one order on every process.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "conveyor/redistribute.hpp"

namespace conveyor::scalapack::detail {

/// A cached call: its plan and whatever the plan's layouts point at.
struct cached_call {
  std::vector<long long> key;
  std::unique_ptr<redistribute::layout> src, dst;
  std::unique_ptr<redistribute::plan> plan;
  bool warm = false;  // built with the cost model's transport (else: packed, no setup)
  int uses = 0;
  /// Extra work after the plan (trapezoidal copies); empty for plain calls: the
  /// trapezoid's part of each local column, as byte runs of the scratch copy of B
  /// to copy to the same offsets in B.
  struct byte_run {
    std::int64_t at = 0, bytes = 0;
  };
  std::vector<char> scratch;
  std::vector<byte_run> copy_runs;
};

/// The process set of one context: its communicator and its calls.
struct process_set {
  MPI_Comm comm = MPI_COMM_NULL;  // ranks in the order of the context's grid
  std::vector<int> world_ranks;
  std::uint64_t fingerprint = 0;
  std::list<cached_call> calls;  // most recent first
};

/// The set a context handle used last (where this process looks for a hit), or
/// null. Local: the exchange then checks that every process looked in the same set.
process_set* candidate_set(int ctxt);
/// The set of these processes (world ranks in grid order); created, collectively
/// over exactly them, on first use. Records it as `ctxt`'s last set.
process_set& set_of(int ctxt, const std::vector<int>& world_ranks, const std::vector<int>& system_ranks,
                    MPI_Comm system_comm);

/// Position of `key` in `set`'s calls, or -1.
int find_call(const process_set* set, const std::vector<long long>& key);
/// The call at `position` (agreed by every process), moved to the front.
cached_call& use_call(process_set& set, int position);
/// Inserts a new call at the front; evicts the oldest beyond the capacity.
cached_call& insert_call(process_set& set, cached_call call);
/// Calls kept per set (0: none; every call plans, runs and frees its plan).
std::size_t cache_capacity();
/// Collective in effect: every process must set the same capacity.
void set_cache_capacity(std::size_t calls);

}  // namespace conveyor::scalapack::detail
