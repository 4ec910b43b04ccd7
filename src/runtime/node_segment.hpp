// SPDX-License-Identifier: BSD-3-Clause
// A segment of memory shared by the ranks of one node, for the engines that
// exchange through shared memory instead of messages (the shared_memory allreduce,
// the all-to-all's small packages), and the flags they hand chunks over with.
//
// Why a segment of our own and not MPI_Win_allocate_shared: freeing a window
// synchronizes every rank, but a context can die at different times on different
// ranks (plans keep it alive); this segment has no name once every rank has
// mapped it (an anonymous memfd, or a /dev/shm name unlinked then), so munmap
// alone frees it, locally, and nothing is left behind if the job dies.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace conveyor::detail {

inline constexpr std::size_t kLine = 64;  // one flag per cache line: each rank writes its own only

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "flags in shared memory must be lock-free");

class node_segment {
 public:
  /// Collective over `comm`, whose ranks must all be on one node: maps one
  /// segment of `bytes` bytes on every rank, its first `flags` cache lines zero
  /// flags (before any other rank sees it), or returns null on every rank if any
  /// rank could not.
  static std::unique_ptr<node_segment> create(MPI_Comm comm, int rank, std::size_t bytes, int flags);
  ~node_segment();
  node_segment(const node_segment&) = delete;
  node_segment& operator=(const node_segment&) = delete;

  char* base() const { return static_cast<char*>(base_); }
  std::size_t bytes() const { return bytes_; }
  /// Flag i (a cache line of its own at the segment's start).
  std::atomic<std::uint64_t>& flag(int i) const {
    return *reinterpret_cast<std::atomic<std::uint64_t>*>(base() + kLine * static_cast<std::size_t>(i));
  }

 private:
  node_segment(void* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  void* base_;
  std::size_t bytes_;
};

/// Pause spins before a waiting rank yields its core: enough for a flag hand-off
/// between two busy cores (more spins measured no better: docs/results.md,
/// "Launched as users launch them"); after that the rank being waited for may
/// need this core, so the waiter yields. When the node's ranks share cores
/// (ranks_share_cores) it yields at once: spinning only delays the rank it waits for.
inline constexpr int kSpinsBeforeYield = 128;

/// Waits until `flag` holds at least `value` (acquire).
void wait_at_least(const std::atomic<std::uint64_t>& flag, std::uint64_t value, int spins_before_yield);

}  // namespace conveyor::detail
