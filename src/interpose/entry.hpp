// SPDX-License-Identifier: BSD-3-Clause
// What every entry point of libconveyor_mpi shares: the per-thread state, the
// screens that decide (alike on every rank) whether Conveyor serves a call, and
// `serve`, which turns Conveyor's errors into MPI's. calls.cpp (reductions and
// gathers) and alltoall_calls.cpp (the all-to-all family) include it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <optional>

#include "conveyor/collectives.hpp"
#include "conveyor/reduce.hpp"
#include "interpose/policy.hpp"
#include "interpose/signature.hpp"

namespace conveyor::interpose {

// The address `items` items of `extent` bytes past `buf` (which may be MPI_BOTTOM).
inline void* item_at(const void* buf, std::size_t items, std::size_t extent) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(buf) + items * extent);
}

// An intra-communicator (nullopt), or why not.
inline std::optional<pass_reason> screen_comm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return pass_reason::arguments;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return pass_reason::arguments;
  if (inter) return pass_reason::intercomm;
  return std::nullopt;
}

// A reduction Conveyor can serve: `items` items of the caller's datatype.
struct reduction {
  signature sig;
  dtype type = dtype::float32;
  op o = op::sum;
  std::size_t elements(std::size_t items) const { return items * sig.per_item; }
  std::size_t bytes(std::size_t items) const { return elements(items) * sig.leaf_size; }
};

// The last (datatype, op) pair screened on this thread, kept when the type is a
// predefined one: predefined handles are never freed (a derived type's handle
// may be freed and reused for another type), and op_of accepts predefined ops
// only, so an equal pair gets the same answer. A loop calling one type and op
// then skips the table lookups (their cost: docs/results.md, "The wrapper's own cost").
struct screened_pair {
  bool valid = false;
  MPI_Datatype t{};
  MPI_Op mop{};
  reduction r;
  std::optional<pass_reason> why;
};

// The last pair of types MPI_Alltoall screened on this thread, kept when both
// are predefined (as screened_pair): the receive type's size, and whether items
// of both are their size in contiguous bytes. `s` is MPI_DATATYPE_NULL in place.
struct screened_alltoall_types {
  bool valid = false;
  MPI_Datatype s{}, r{};
  int rsize = 0;
  bool contiguous = false;
};

// Whether `t` is a predefined datatype (its handle is never freed).
inline bool predefined(MPI_Datatype t) {
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  return PMPI_Type_get_envelope(t, &integers, &addresses, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

// Per thread, in one thread_local: in a shared library each thread_local access
// is a TLS lookup (a call), so an entry point looks this up once (this_thread())
// and passes it on.
struct thread_state {
  int inside = 0;                    // > 0 while this thread runs Conveyor: its own MPI calls pass through
  const policy* settings = nullptr;  // current_policy(), once this thread has read it
  screened_pair last_pair;
  screened_alltoall_types last_alltoall_types;

  const policy& settings_read() {
    if (!settings) settings = &current_policy();
    return *settings;
  }
};
inline thread_local thread_state t_state;

inline thread_state& this_thread() {
  thread_state* s = &t_state;
  asm("" : "+r"(s));  // computed once per entry point: GCC would repeat the lookup after every call
  return *s;
}

// The checks every call begins with; nullopt when Conveyor may serve it.
inline std::optional<pass_reason> screen(thread_state& state, call c) {
  if (state.inside) return pass_reason::internal;
  const policy& p = state.settings_read();
  if (!p.on) return pass_reason::off;
  if (!p.serves[static_cast<int>(c)]) return pass_reason::not_selected;
  return std::nullopt;
}

// Marks this thread as running Conveyor for the lifetime of the object.
struct inside_conveyor {
  explicit inside_conveyor(thread_state& s) : state(s) { ++state.inside; }
  ~inside_conveyor() { --state.inside; }
  inside_conveyor(const inside_conveyor&) = delete;
  inside_conveyor& operator=(const inside_conveyor&) = delete;
  thread_state& state;
};

inline std::optional<pass_reason> screen_bytes(thread_state& state, std::size_t bytes) {
  if (bytes == 0) return pass_reason::empty;
  if (bytes < state.settings_read().min_bytes) return pass_reason::below_threshold;
  return std::nullopt;
}

// Runs `work` (which returns an MPI error code) with Conveyor's errors turned into
// MPI's: the message on stderr, then the communicator's error handler.
template <class Work>
int serve(thread_state& state, const char* name, MPI_Comm comm, Work&& work) {
  int code = MPI_SUCCESS;
  try {
    inside_conveyor guard(state);
    code = work();
  } catch (const error& e) {
    std::fprintf(stderr, "conveyor_mpi: %s: %s\n", name, e.what());
    code = e.code() == errc::invalid_argument ? MPI_ERR_ARG : MPI_ERR_OTHER;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "conveyor_mpi: %s: out of memory\n", name);
    code = MPI_ERR_NO_MEM;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conveyor_mpi: %s: %s\n", name, e.what());
    code = MPI_ERR_INTERN;
  }
  if (code != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, code);
  return code;
}

// Whether (buf, type) can be handed to Conveyor as it is: one contiguous run at a
// real address.
inline bool direct(const void* buf, const signature& s) { return s.contiguous && buf != MPI_BOTTOM; }

inline int comm_size(MPI_Comm comm) {
  int p = 1;
  PMPI_Comm_size(comm, &p);
  return p;
}

inline int comm_rank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

}  // namespace conveyor::interpose
