// SPDX-License-Identifier: BSD-3-Clause
// The shared_memory allreduce (see shared_memory.hpp).
#include "collectives/shared_memory.hpp"

#include "runtime/cpu_affinity.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

namespace conveyor::collectives::detail {

namespace {

// The flags: posted[r], the last chunk rank r posted.
std::atomic<std::uint64_t>& flag_of(const node_segment& seg, int rank) { return seg.flag(rank); }

std::size_t segment_bytes(int size) {
  return kLine * static_cast<std::size_t>(size) + 2 * shm_allreduce::slot_bytes * static_cast<std::size_t>(size);
}

}  // namespace

std::unique_ptr<shm_allreduce> shm_allreduce::create(MPI_Comm comm, int rank, int size, int node_cpus) {
  std::unique_ptr<node_segment> seg = node_segment::create(comm, rank, segment_bytes(size), size);
  if (!seg) return nullptr;
  const int spins = ranks_share_cores(size, node_cpus) ? 0 : kSpinsBeforeYield;
  return std::unique_ptr<shm_allreduce>(new shm_allreduce(std::move(seg), rank, size, spins));
}

shm_allreduce::~shm_allreduce() = default;

char* shm_allreduce::slot(int buffer, int rank) const {
  const std::size_t index =
      static_cast<std::size_t>(buffer) * static_cast<std::size_t>(size_) + static_cast<std::size_t>(rank);
  return segment_->base() + kLine * static_cast<std::size_t>(size_) + index * slot_bytes;
}

void shm_allreduce::run(const void* in, void* out, std::size_t count, std::size_t esize, reduce_kernel_fn kernel) {
  const std::size_t per_chunk = slot_bytes / esize;
  for (std::size_t off = 0; off < count; off += per_chunk) {
    const std::size_t n = std::min(per_chunk, count - off), bytes = n * esize;
    const std::uint64_t s = ++chunks_;
    const int buffer = static_cast<int>(s % 2);
    std::memcpy(slot(buffer, rank_), static_cast<const char*>(in) + off * esize, bytes);
    flag_of(*segment_, rank_).store(s, std::memory_order_release);
    for (int r = 0; r < size_; ++r) wait_at_least(flag_of(*segment_, r), s, spins_);
    char* result = static_cast<char*>(out) + off * esize;
    kernel(slot(buffer, 0), slot(buffer, 1), result, n);
    for (int r = 2; r < size_; ++r) kernel(result, slot(buffer, r), result, n);
  }
}

}  // namespace conveyor::collectives::detail
