// SPDX-License-Identifier: BSD-3-Clause
// Internal: the all-to-all's small packages through a segment shared by the ranks
// of one node (redistribute/alltoall.cpp), instead of MPI messages: the path the
// MPI libraries' own small all-to-alls take, without a message per pair.
//
// Layout: two buffers of P x P slots; slot (b, r, q) carries rank r's package for
// rank q in step parity b: a header (the step it was written in, how the pair
// moves and its byte count) and, right after it on the same cache line, up to
// slot_bytes() bytes: 8 MiB / P^2 between 32 and 512 KiB (the segment stays at
// most 16 MiB; 2 ranks get 512 KiB slots, half of L2 on the CPUs measured).
// Step s of rank r (every call of alltoallw on the communicator is one step, on
// every rank alike): into buffer s % 2, write every package r sends that is under
// slot_bytes() (packed straight from the send rows), and a header for every peer,
// its step stored last (release), with a vote every receiver combines alike;
// wait until the header from every peer shows s (acquire), each before anything
// else for that peer; unpack the packages addressed to r. Seeing every peer's header of
// step s is seeing every rank post s: two buffers then make a "done reading" flag
// unnecessary, since r writes buffer s % 2 again at step s + 2, after every peer
// posted s + 1, which each does only after it finished reading step s.
// Bytes: none on the wire; per package one copy in and one copy out (both through
// L2 at these sizes); a package of up to 40 bytes travels in the cache line of its
// header, so a tiny all-to-all costs one line transfer per pair.
// Limits: every rank of the communicator on one node, at most kMaxRanks of them
// (2 x P^2 slots: 16 MiB at 16 ranks); a waiting rank spins then yields, at once
// when the node's ranks share cores.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/node_segment.hpp"

namespace conveyor::redistribute::detail {

class shared_exchange {
 public:
  /// Packages below this go through the slots (the same on every rank: P decides).
  std::size_t slot_bytes() const { return slot_bytes_; }
  static std::size_t slot_bytes_for(int size);
  static constexpr int kMaxRanks = 16;
  /// Pause spins before a waiting rank yields (none when the node's ranks share
  /// cores). Longer than the allreduce's 128: a rank here waits for the slowest
  /// peer's whole call, not one hand-off; with 128 the yields dominated an
  /// unmodified 2-rank loop (docs/results.md, "The all-to-all family").
  static constexpr int kSpinsBeforeYield = 4096;
  /// How the sender moves a pair this step, written for every peer: the sender
  /// chooses (alltoall_copy_choice.hpp) and the receiver follows, reading it before
  /// it posts anything for the pair; counts that do not match between a pair
  /// become an error on the receiver, never a hang (it replies to a reader,
  /// drains a message) or stale data.
  enum class way : std::int32_t { shared = 0, attach = 1, message = 2, typed = 3 };
  struct header {
    std::atomic<std::uint64_t> step;  // stored last (release): the rest is this step's
    way how;
    std::int32_t vote;  // the sender's, the same in every header of a step (alltoall.cpp's library vote)
    std::int64_t bytes;
  };

  /// Collective over `comm` (every rank on one node, size <= kMaxRanks): null on
  /// every rank if any rank could not map the segment.
  static std::unique_ptr<shared_exchange> create(MPI_Comm comm, int rank, int size, int node_cpus);

  /// This step's slot from `from` to `to`, and its header.
  char* slot(int from, int to) const;
  header& head(int from, int to) const;
  /// Starts a step (call before writing slots).
  void begin() { ++step_; }
  /// Publishes this rank's package for `to` (after its bytes are in the slot).
  void post(int to, way how, std::int64_t bytes, std::int32_t vote);
  /// Waits until `from` has posted this step to this rank.
  void wait_from(int from);

 private:
  shared_exchange(std::unique_ptr<conveyor::detail::node_segment> s, int rank, int size, int spins)
      : segment_(std::move(s)),
        rank_(rank),
        size_(size),
        spins_(spins),
        slot_bytes_(slot_bytes_for(size)),
        stride_(stride_for(slot_bytes_)) {}
  static std::size_t stride_for(std::size_t slot_bytes);
  std::size_t slot_index(int from, int to) const;

  std::unique_ptr<conveyor::detail::node_segment> segment_;
  int rank_, size_, spins_;
  std::size_t slot_bytes_, stride_;
  std::uint64_t step_ = 0;  // steps so far: the same on every rank
};

}  // namespace conveyor::redistribute::detail
