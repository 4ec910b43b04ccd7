// SPDX-License-Identifier: BSD-3-Clause
#include "conveyor/settings.hpp"
#include "scalapack/call_cache.hpp"

#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "conveyor/types.hpp"
#include "scalapack/grid_exchange.hpp"

namespace conveyor::scalapack::detail {
namespace {

// Calls kept per process set: CONVEYOR_SCALAPACK_CACHE (default 8; 0 plans every
// call), or conveyor_scalapack_set_cache_size. The same on every process.
std::size_t& calls_per_set() {
  static std::size_t n = [] {
    const auto v = setting("CONVEYOR_SCALAPACK_CACHE");
    return v ? static_cast<std::size_t>(std::strtoul(v->c_str(), nullptr, 10)) : std::size_t{8};
  }();
  return n;
}

struct registry {
  // Keyed by the world ranks in grid order: iterated in the same order on every
  // process, which makes the teardown at MPI_Finalize deadlock-free.
  std::map<std::vector<int>, process_set> sets;
  std::map<int, process_set*> last_set_of_context;
  int keyval = MPI_KEYVAL_INVALID;

  static registry& instance() {
    static registry r;
    return r;
  }
  // Called by MPI_Finalize (an attribute on MPI_COMM_SELF), before MPI goes away.
  static int clear_at_finalize(MPI_Comm, int, void*, void*) {
    registry& r = instance();
    for (auto& [ranks, set] : r.sets) {
      set.calls.clear();
      if (set.comm != MPI_COMM_NULL) MPI_Comm_free(&set.comm);
    }
    r.sets.clear();
    r.last_set_of_context.clear();
    return MPI_SUCCESS;
  }
  void register_finalizer() {
    if (keyval != MPI_KEYVAL_INVALID) return;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, clear_at_finalize, &keyval, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  }
};

}  // namespace

process_set* candidate_set(int ctxt) {
  registry& r = registry::instance();
  const auto it = r.last_set_of_context.find(ctxt);
  return it == r.last_set_of_context.end() ? nullptr : it->second;
}

process_set& set_of(int ctxt, const std::vector<int>& world_ranks, const std::vector<int>& system_ranks,
                    MPI_Comm system_comm) {
  registry& r = registry::instance();
  r.register_finalizer();
  auto it = r.sets.find(world_ranks);
  if (it == r.sets.end()) {
    // Every process of the set reaches this point at the same call: sets are only
    // ever created here, by all their members together, and never removed before
    // MPI_Finalize.
    MPI_Group system_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(system_comm, &system_group);
    MPI_Group_incl(system_group, static_cast<int>(system_ranks.size()), system_ranks.data(), &group);
    MPI_Comm comm = MPI_COMM_NULL;
    const int rc = MPI_Comm_create_group(system_comm, group, /*tag=*/0x5ca1, &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&system_group);
    if (rc != MPI_SUCCESS || comm == MPI_COMM_NULL)
      throw error(errc::mpi, "MPI_Comm_create_group failed for a BLACS context");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    process_set set;
    set.comm = comm;
    set.world_ranks = world_ranks;
    set.fingerprint = fingerprint(world_ranks);
    it = r.sets.emplace(world_ranks, std::move(set)).first;
  }
  r.last_set_of_context[ctxt] = &it->second;
  return it->second;
}

int find_call(const process_set* set, const std::vector<long long>& key) {
  if (!set) return -1;
  int i = 0;
  for (const cached_call& c : set->calls) {
    if (c.key == key) return i;
    ++i;
  }
  return -1;
}

cached_call& use_call(process_set& set, int position) {
  auto it = set.calls.begin();
  std::advance(it, position);
  set.calls.splice(set.calls.begin(), set.calls, it);
  return set.calls.front();
}

cached_call& insert_call(process_set& set, cached_call call) {
  set.calls.push_front(std::move(call));
  if (set.calls.size() > calls_per_set()) set.calls.pop_back();  // same call on every process of the set
  return set.calls.front();
}

std::size_t cache_capacity() { return calls_per_set(); }

void set_cache_capacity(std::size_t calls) {
  calls_per_set() = calls;
  for (auto& [ranks, set] : registry::instance().sets) {
    while (set.calls.size() > calls) set.calls.pop_back();
  }
}

}  // namespace conveyor::scalapack::detail
