// SPDX-License-Identifier: BSD-3-Clause
// The shared_memory allreduce: ranks of one node reduce through one shared
// segment instead of exchanging messages.
//
// Steps, per chunk of at most slot_bytes (chunks numbered s = 1, 2, ... on every
// rank alike; two buffers, chunk s uses buffer s % 2):
//   1. copy this rank's input chunk into its slot of that buffer, publish
//      posted[me] = s (release);
//   2. wait until every rank has published s (acquire);
//   3. out = ((slot_0 op slot_1) op slot_2) ... op slot_{P-1}, in rank order on
//      every rank: identical bits everywhere, and the rank-ordered fold that
//      deterministic mode promises.
// Two buffers make a "done reading" flag unnecessary: a rank writes buffer s % 2
// again at chunk s + 2, after it saw every rank post s + 1, which each rank does
// only after it finished reading chunk s.
// Bytes: none on the wire. Memory per rank and chunk of n bytes: n written, P n
// read; two flag hand-offs (cache-line transfers) instead of log2 P message
// latencies, which is why it wins at small sizes (docs/results.md, "Launched as
// users launch them").
//
// Limits: every rank of the communicator on one node (MPI_COMM_TYPE_SHARED covers
// it; else the caller runs recursive doubling). Reads grow with P, so the cost
// model offers it for small messages only; auto's measuring phase also tries it
// at every size on one node (allreduce.cpp), since the model did not predict
// where it wins at larger ones. A waiting rank spins (pause) and then yields; when the
// node's ranks share cores (more ranks than CPUs in the union of their affinity
// masks: runtime/cpu_affinity.hpp) it yields at once.
//
// The segment: runtime/node_segment.hpp (why not MPI_Win_allocate_shared is there).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "conveyor/reduce.hpp"
#include "runtime/node_segment.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

class shm_allreduce {
 public:
  /// Bytes of one rank's slot (a chunk): large enough that the flag hand-offs
  /// are a small share of a large message's time, small enough that a slot
  /// stays in L2 (32 KiB and 512 KiB both lost against it: docs/results.md,
  /// "Launched as users launch them", the 128 KiB slots).
  static constexpr std::size_t slot_bytes = std::size_t{128} << 10;

  /// Collective over `comm`, whose ranks must all be on one node: maps one
  /// segment on every rank, or returns null on every rank if any rank could not.
  /// `node_cpus`: CPUs in the union of the ranks' affinity masks (node_layout):
  /// with fewer than `size`, waiting ranks yield at once.
  static std::unique_ptr<shm_allreduce> create(MPI_Comm comm, int rank, int size, int node_cpus);
  ~shm_allreduce();
  shm_allreduce(const shm_allreduce&) = delete;
  shm_allreduce& operator=(const shm_allreduce&) = delete;

  /// out = the reduction of every rank's `in` (count elements of esize bytes);
  /// `in` may equal `out`. Collective: every rank calls it with the same count.
  void run(const void* in, void* out, std::size_t count, std::size_t esize, reduce_kernel_fn kernel);

  /// Whether a waiting rank spins before it yields (false: the ranks share cores).
  bool spins_before_yield() const { return spins_ > 0; }

 private:
  shm_allreduce(std::unique_ptr<node_segment> segment, int rank, int size, int spins)
      : segment_(std::move(segment)), rank_(rank), size_(size), spins_(spins) {}
  char* slot(int buffer, int rank) const;

  // P flags first (one cache line each: the last chunk each rank posted), then the slots.
  std::unique_ptr<node_segment> segment_;
  int rank_, size_;
  int spins_;                 // pause spins before a waiting rank yields (0: oversubscribed)
  std::uint64_t chunks_ = 0;  // chunks run so far: the same on every rank
};

/// The shared-memory segment of a context, mapped at the first call that needs it:
/// collective, and every rank reaches it at the same call (the algorithm is
/// decided alike everywhere). Null when the ranks are not all on one node.
/// (allreduce/shared_memory.cpp)
shm_allreduce* shared_segment_of(comm_context& ctx);

}  // namespace conveyor::collectives::detail
