// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute/datatype_cache.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::redistribute::detail {
namespace {

std::mutex g_lock;
int g_keyval = MPI_KEYVAL_INVALID;  // created at the first derived type, under g_lock
std::vector<std::pair<MPI_Datatype, std::unique_ptr<type_layout>>> g_named;
std::atomic<std::uint64_t> g_deleted{0};

// MPI calls this when the type is freed (or its attribute replaced).
int delete_layout(MPI_Datatype, int, void* value, void*) {
  delete static_cast<type_layout*>(value);
  g_deleted.fetch_add(1, std::memory_order_release);
  return MPI_SUCCESS;
}

bool is_named(MPI_Datatype t) { return redistribute::detail::combiner_of(t) == MPI_COMBINER_NAMED; }

}  // namespace

const type_layout& cached_layout(MPI_Datatype t, int& decoded) {
  std::lock_guard<std::mutex> hold(g_lock);
  if (is_named(t)) {
    for (const auto& [h, l] : g_named) {
      if (h == t) return *l;
    }
    g_named.emplace_back(t, std::make_unique<type_layout>(layout_of(t)));
    return *g_named.back().second;
  }
  if (g_keyval == MPI_KEYVAL_INVALID) {
    int k = MPI_KEYVAL_INVALID;
    if (PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_layout, &k, nullptr) != MPI_SUCCESS) {
      throw error(errc::mpi, "MPI_Type_create_keyval failed");
    }
    g_keyval = k;
  }
  void* value = nullptr;
  int found = 0;
  PMPI_Type_get_attr(t, g_keyval, &value, &found);
  if (found) return *static_cast<const type_layout*>(value);
  auto l = std::make_unique<type_layout>(layout_of(t));
  if (PMPI_Type_set_attr(t, g_keyval, l.get()) != MPI_SUCCESS) {
    throw error(errc::mpi, "MPI_Type_set_attr failed");
  }
  ++decoded;
  return *l.release();
}

std::uint64_t layouts_deleted() { return g_deleted.load(std::memory_order_acquire); }

}  // namespace conveyor::redistribute::detail
