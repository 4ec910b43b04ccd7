// SPDX-License-Identifier: BSD-3-Clause
#include "interpose/staging.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <mutex>

namespace conveyor::interpose {
namespace {

// One private communicator, one copy at a time: two threads sending to self with
// the same tag could otherwise receive each other's data (MPI_THREAD_MULTIPLE).
std::mutex g_lock;
MPI_Comm g_self = MPI_COMM_NULL;

int self_comm(MPI_Comm& out) {
  if (g_self == MPI_COMM_NULL) {
    const int rc = PMPI_Comm_dup(MPI_COMM_SELF, &g_self);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Comm_set_errhandler(g_self, MPI_ERRORS_RETURN);
  }
  out = g_self;
  return MPI_SUCCESS;
}

// The address `offset` bytes past `buf`, which may be MPI_BOTTOM (address 0).
void* at(const void* buf, std::size_t offset) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(buf) + offset);
}

// Moves items [0, items) between (buf, type) and the leaf array, in pieces whose
// counts fit MPI's int on both sides.
int copy(const void* buf, std::size_t items, MPI_Datatype type, const signature& s, void* array, bool into_array) {
  std::lock_guard<std::mutex> hold(g_lock);
  MPI_Comm self = MPI_COMM_NULL;
  int rc = self_comm(self);
  if (rc != MPI_SUCCESS) return rc;
  const std::size_t per_item = std::max<std::size_t>(s.per_item, 1);
  const std::size_t piece = std::max<std::size_t>(1, std::min<std::size_t>(INT_MAX, INT_MAX / per_item));
  for (std::size_t first = 0; first < items && rc == MPI_SUCCESS; first += piece) {
    const auto n = static_cast<int>(std::min(piece, items - first));
    const auto leaves = static_cast<int>(static_cast<std::size_t>(n) * s.per_item);
    void* typed = at(buf, first * s.item_extent);
    void* flat = at(array, first * s.per_item * s.leaf_size);
    rc = into_array ? PMPI_Sendrecv(typed, n, type, 0, 0, flat, leaves, s.leaf, 0, 0, self, MPI_STATUS_IGNORE)
                    : PMPI_Sendrecv(flat, leaves, s.leaf, 0, 0, typed, n, type, 0, 0, self, MPI_STATUS_IGNORE);
  }
  return rc;
}

}  // namespace

int stage_in(const void* buf, std::size_t items, MPI_Datatype type, const signature& s, void* out) {
  return copy(buf, items, type, s, out, true);
}

int stage_out(const void* in, void* buf, std::size_t items, MPI_Datatype type, const signature& s) {
  return copy(buf, items, type, s, const_cast<void*>(in), false);
}

void release_staging() {
  std::lock_guard<std::mutex> hold(g_lock);
  if (g_self != MPI_COMM_NULL) PMPI_Comm_free(&g_self);
}

}  // namespace conveyor::interpose
