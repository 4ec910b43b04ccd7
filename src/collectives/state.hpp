// SPDX-License-Identifier: BSD-3-Clause
// What the collectives engine keeps per communicator, in the runtime context's
// engine slot (runtime/context.hpp): working memory, the last allreduce's
// schedules, `auto`'s last model choice and measured classes, the shared-memory
// segment, and the communicator's CONVEYOR_ALLREDUCE_ALGORITHM.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "collectives/measured_choice.hpp"
#include "collectives/schedule.hpp"
#include "collectives/shared_memory.hpp"
#include "conveyor/collectives.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/context.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

// The schedules of the last scheduled allreduce on a context, with what they were
// built for. Schedules hold addresses (of recv and of the scratch memory), so a
// call reuses them only for the same buffer and the same shape: the common case
// of a training loop or a solver calling allreduce on one buffer again and again,
// which then builds nothing (building costs allocations per round and chunk).
struct schedule_cache {
  allreduce_algorithm algorithm{};
  bool deterministic = false;
  std::size_t count = 0, chunk = 0, esize = 0;
  const node_layout* layout = nullptr;
  const void* recv = nullptr;
  std::size_t scratch_bytes = 0;  // what these schedules need
  const char* scratch = nullptr;  // where they were built to find it
  std::vector<schedule> schedules;

  bool fits(allreduce_algorithm a, bool det, std::size_t n, std::size_t c, std::size_t e, const node_layout* l) const {
    return algorithm == a && deterministic == det && count == n && chunk == c && esize == e && layout == l;
  }
};

// The model's last choice, reused while nothing it depends on changed (repeated
// calls of one size are the common case: training loops, solvers). The model is
// fixed for the process (read once), so these fields determine the outcome.
struct model_choice {
  std::size_t bytes = ~std::size_t{0};
  const node_layout* layout = nullptr;
  std::size_t segment_bytes = 0;
  allreduce_algorithm requested = allreduce_algorithm::automatic;
  allreduce_algorithm chosen = allreduce_algorithm::automatic;
  double predicted = 0;
};

struct collectives_state final : engine_state {
  allreduce_algorithm env_algorithm = allreduce_algorithm::automatic;  // CONVEYOR_ALLREDUCE_ALGORITHM
  model_choice last_choice;
  schedule_cache schedules;
  byte_buffer trial_out;  // where auto's batched trials and in-place lead-ins write (kKeptTrialBuffer)
  // The shared_memory algorithm's segment, mapped by the first call that runs it
  // (null if the ranks span several nodes or mapping failed: recursive doubling).
  std::unique_ptr<shm_allreduce> shared_segment;
  bool shared_segment_tried = false;
  // auto's measured choices: (size class, node layout, segment size, kernel
  // class) -> choice. The kernel class separates the compute-bound logaddexp
  // (an exp and a log1p per element, many times a sum's time per byte) from the
  // memory-bound ops, which share one decision: the best algorithm for a sum is
  // not the best where the reduction's arithmetic dominates (measured: results.md,
  // "The column log-sum-exp over ranks").
  using measured_key = std::tuple<int, const node_layout*, std::size_t, int>;
  std::map<measured_key, measured_class> measured;
  // The last class used (map nodes do not move): repeated calls of one size skip
  // the map lookup on the hot path.
  measured_key last_key{-1, nullptr, 0, 0};
  measured_class* last = nullptr;

  measured_class& measured_for(const measured_key& key) {
    if (!last || key != last_key) {
      last = &measured[key];
      last_key = key;
    }
    return *last;
  }

  /// Working memory of at least `bytes`: grows, never shrinks, so repeated calls
  /// do not fault in fresh pages (MPI forbids concurrent collectives on one
  /// communicator). Not zeroed (every use writes before it reads).
  char* scratch(std::size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }

 private:
  byte_buffer scratch_;
};

/// The engine's slot in every context (registered at static initialization).
extern const int kCollectivesSlot;

inline collectives_state& collectives_state_of(comm_context& ctx) {
  return ctx.state<collectives_state>(kCollectivesSlot);
}

}  // namespace conveyor::collectives::detail
