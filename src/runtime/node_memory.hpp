// SPDX-License-Identifier: BSD-3-Clause
// Internal: node memory (conveyor/node_memory.hpp) as the engines see it — where a
// buffer lies (an owner's allocation and offset, to send to a peer) and a peer's
// allocation mapped into this process (kept while some plan or call holds it).
#pragma once

#include <cstdint>
#include <memory>

#include "conveyor/node_memory.hpp"

namespace conveyor::detail {

/// An owner's allocation, as a peer finds it: 6 int64 on the wire.
struct node_memory_ref {
  std::int64_t pid = -1, fd = -1;
  std::int64_t serial = 0, token = 0;  // which allocation of which process (fds and pids are reused)
  std::int64_t bytes = 0;              // the mapping's size (header page included)
  std::int64_t offset = 0;             // of the buffer from the mapping's start
};

/// Fills `out` if [p, p + bytes) lies in one shareable allocation of this process.
bool find_node_memory(const void* p, std::size_t bytes, node_memory_ref& out);

/// A peer's allocation mapped here (read and write); unmapped when the last holder lets go.
class peer_memory {
 public:
  peer_memory(char* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  ~peer_memory();
  peer_memory(const peer_memory&) = delete;
  peer_memory& operator=(const peer_memory&) = delete;
  /// Where the owner's byte at `ref.offset` is in this process.
  char* at(std::int64_t offset) const { return base_ + offset; }

 private:
  char* base_;
  std::size_t bytes_;
};

/// Maps `ref`'s allocation (or finds it mapped); null if it cannot be opened or
/// is not the allocation `ref` names (the fd now holds another one, another PID
/// namespace's process).
std::shared_ptr<const peer_memory> map_node_memory(const node_memory_ref& ref);

}  // namespace conveyor::detail
