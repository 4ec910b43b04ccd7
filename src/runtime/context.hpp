// SPDX-License-Identifier: BSD-3-Clause
// The runtime's per-communicator state, shared by every engine: a private
// duplicate of the caller's communicator (so Conveyor's messages can never match
// the caller's; errors returned), node layouts, and one slot per engine that
// keeps state of its own (engine_state: the runtime holds it, never looks inside).
// Created on first use (collective) and cached as an attribute on the caller's
// communicator; freed with it. The private communicator finds its own context
// too, so engines that run on it (and call each other there) share one context.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace conveyor {
class collective_call;
}

namespace conveyor::detail {

/// Which ranks share a node. Nodes are numbered in order of their lowest rank;
/// members of a node are listed in rank order.
struct node_layout {
  int nodes = 1;
  std::vector<int> node_of;               // rank -> node
  std::vector<int> local_of;              // rank -> index within its node
  std::vector<std::vector<int>> members;  // node -> ranks
  int max_local = 1;                      // largest node size
  int min_local = 1;                      // smallest node size
  // CPUs in the union of the affinity masks of this rank's node's ranks
  // (runtime/cpu_affinity.hpp): the real nodes' layout (ranks per node 0) only;
  // 0 in an emulated layout.
  int node_cpus = 0;
};

struct comm_context;

/// What an engine keeps per communicator (schedules, measured choices, a shared
/// segment): a type of the engine's own, derived from this. The context owns one
/// per registered engine and destroys it with the communicator.
struct engine_state {
  virtual ~engine_state() = default;
};

/// Makes an engine's state for a new context. It reads the engine's
/// per-communicator settings: it runs while the context is made, inside the
/// settings agreement, so a bad value on one rank becomes the same error on every
/// rank (not one rank throwing while the others wait).
using engine_state_maker = std::unique_ptr<engine_state> (*)(const comm_context&);

/// How many engines may register a state.
inline constexpr int kMaxEngineStates = 8;

/// Registers an engine's state; returns its slot. Called from the engine's static
/// initialization (before any context exists), once per engine.
int register_engine_state(engine_state_maker make);

// Only collectives on the communicator touch its context, and MPI requires those
// to be serialized, so the context needs no lock.
struct comm_context : std::enable_shared_from_this<comm_context> {
  MPI_Comm comm = MPI_COMM_NULL;  // the private duplicate, errors returned (not fatal)
  int rank = 0;
  int size = 1;
  std::map<int, node_layout> layouts;        // key: ranks per node (0 = shared-memory domains)
  const node_layout* last_layout = nullptr;  // the most recently used entry of `layouts`
  int last_ranks_per_node = -1;
  // Read from the environment once, when the context is created (as MPI reads
  // its parameters at MPI_Init): getenv on every call would cost more than a
  // small allreduce.
  int env_ranks_per_node = 0;  // CONVEYOR_RANKS_PER_NODE
  // The engines' states, by the slot register_engine_state gave them; made with
  // the context. Destroyed after the private communicator is freed (members go
  // after the destructor's body): an engine's state must not use it then.
  std::array<std::unique_ptr<engine_state>, kMaxEngineStates> engine_states;

  ~comm_context();
  /// The layout for `ranks_per_node` (0: MPI_COMM_TYPE_SHARED). Collective the first
  /// time it is asked for a given value.
  const node_layout& layout(int ranks_per_node);

  /// The state of the engine registered at `slot`, as its own type.
  template <class State>
  State& state(int slot) {
    return static_cast<State&>(*engine_states[static_cast<std::size_t>(slot)]);
  }
};

/// The context of `user_comm` (or of a private communicator: its own), created on
/// first use (collective over user_comm).
comm_context& context_for(MPI_Comm user_comm);

/// Moves whenever a context goes away (a communicator freed, MPI_Finalize
/// starting): a cached (handle -> context) pair is good while this is unchanged.
/// Defined here, not behind a call, because the repeated-shape allreduce reads it
/// on every call (an inline variable: one per library, as visibility is hidden).
inline std::atomic<std::uint64_t> g_context_generation{1};
inline std::uint64_t context_generation() { return g_context_generation.load(std::memory_order_acquire); }

/// The innermost collective_call open on this thread (null: none); contract.cpp
/// keeps it. An inline, constant-initialized thread_local so that readers in
/// other files access it directly: an extern one would go through a TLS wrapper
/// call on every read.
inline thread_local const void* t_open_collective_call = nullptr;

/// How many collective_calls are open on all threads together; contract.cpp keeps
/// it. Fast paths that skip the contract must not run while a call is open on
/// their own thread (a front end's, which the entry point would join, and whose
/// agreement must run). They read this process-wide count instead of the
/// thread's own pointer: in a shared library each thread_local read is a TLS
/// descriptor call, and this is a plain load. A call open on another thread only
/// sends this thread's fast path to the full one (correct, slower), and a thread
/// always sees its own increments, so relaxed order is enough.
inline std::atomic<int> g_open_collective_calls{0};

/// Whether any thread has a collective_call open (see g_open_collective_calls).
inline bool any_collective_call_open() { return g_open_collective_calls.load(std::memory_order_relaxed) != 0; }

/// The context a collective call runs on (its private communicator's).
comm_context& context_of(const collective_call& call);

/// Throws conveyor::error(errc::mpi) with MPI's message for `rc`.
[[noreturn]] void throw_mpi_error(int rc, const char* what);

/// Throws conveyor::error(errc::mpi) with MPI's message when rc != MPI_SUCCESS.
/// Inline, so that a successful call (the repeated-shape allreduce's) costs a
/// compare and no call.
inline void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw_mpi_error(rc, what);
}

}  // namespace conveyor::detail
