// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute/alltoall_shared.hpp"

#include <algorithm>
#include <utility>

#include "runtime/cpu_affinity.hpp"

namespace conveyor::redistribute::detail {
namespace {

using conveyor::detail::kLine;

constexpr std::size_t kHeaderBytes = 24;
static_assert(sizeof(shared_exchange::header) == kHeaderBytes, "the header's size");

}  // namespace

std::size_t shared_exchange::slot_bytes_for(int size) {
  const std::size_t P = static_cast<std::size_t>(size);
  return std::clamp<std::size_t>((std::size_t{8} << 20) / (P * P), std::size_t{32} << 10, std::size_t{512} << 10);
}

// A slot: its header, the bytes from the header's end (the first 40 share its
// cache line), rounded up to whole lines.
std::size_t shared_exchange::stride_for(std::size_t slot_bytes) {
  return (kHeaderBytes + slot_bytes + kLine - 1) / kLine * kLine;
}

std::unique_ptr<shared_exchange> shared_exchange::create(MPI_Comm comm, int rank, int size, int node_cpus) {
  const auto P = static_cast<std::size_t>(size);
  // No flags: every header starts at step 0 (the segment is zeroed), never a step.
  auto seg = conveyor::detail::node_segment::create(comm, rank, 2 * P * P * stride_for(slot_bytes_for(size)), 0);
  if (!seg) return nullptr;
  const int spins = conveyor::detail::ranks_share_cores(size, node_cpus) ? 0 : kSpinsBeforeYield;
  return std::unique_ptr<shared_exchange>(new shared_exchange(std::move(seg), rank, size, spins));
}

std::size_t shared_exchange::slot_index(int from, int to) const {
  const auto P = static_cast<std::size_t>(size_);
  return (static_cast<std::size_t>(step_ % 2) * P + static_cast<std::size_t>(from)) * P + static_cast<std::size_t>(to);
}

shared_exchange::header& shared_exchange::head(int from, int to) const {
  return *reinterpret_cast<header*>(segment_->base() + slot_index(from, to) * stride_);
}

char* shared_exchange::slot(int from, int to) const {
  return segment_->base() + slot_index(from, to) * stride_ + kHeaderBytes;
}

void shared_exchange::post(int to, way how, std::int64_t bytes, std::int32_t vote) {
  header& h = head(rank_, to);
  h.how = how;
  h.vote = vote;
  h.bytes = bytes;
  h.step.store(step_, std::memory_order_release);
}

void shared_exchange::wait_from(int from) { conveyor::detail::wait_at_least(head(from, rank_).step, step_, spins_); }

}  // namespace conveyor::redistribute::detail
