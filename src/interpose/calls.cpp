// SPDX-License-Identifier: BSD-3-Clause
// libconveyor_mpi: Conveyor under an unmodified MPI program, through the MPI
// profiling interface. Preloaded (LD_PRELOAD) or linked before the MPI library, it
// defines MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Reduce_scatter,
// MPI_Allgather, MPI_Allgatherv and MPI_Reduce_local, and with an MPI-4 library
// (MPICH 4) their MPI_Count forms MPI_Allreduce_c, ...; each either runs Conveyor's
// engine or calls the MPI library's PMPI_ entry point unchanged.
//
// Served: the predefined reduction ops (not MINLOC / MAXLOC / REPLACE / NO_OP, not
// user-defined ops) on types whose signature repeats one basic type Conveyor
// reduces with MPI's meaning; any type of one basic type for the gathers (moved as
// bytes); intra-communicators; MPI_IN_PLACE. Every rank must decide alike, so the
// decision reads only what MPI requires to match across ranks (signature.hpp);
// layouts that are not one contiguous run -- and MPI_BOTTOM -- are staged through
// a contiguous copy made by MPI itself (staging.hpp).
//
// Recursion: Conveyor itself calls MPI_Allreduce and MPI_Allgather (building a
// communicator's node layout, agreeing on arguments); while Conveyor runs on a
// thread, every call made on that thread goes straight to PMPI_ (thread_state::inside).
// Thread levels: the engine keeps its state per communicator and per thread, so
// it serves every level the program asked for; MPI_THREAD_MULTIPLE programs may
// call it from several threads on different communicators, as MPI allows.
// Errors: an MPI failure or an error Conveyor detects goes to the communicator's
// error handler with MPI_ERR_OTHER / MPI_ERR_ARG, as the MPI library would.
#include <mpi.h>

#include <cstdio>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/reduce.hpp"
#include "interpose/entry.hpp"
#include "interpose/policy.hpp"
#include "interpose/signature.hpp"
#include "interpose/staging.hpp"

namespace conveyor::interpose {
namespace {

// Built once: options hold a std::function, whose construction and destruction
// would otherwise be on every served call.
const allreduce_options kDefaultOptions;

std::optional<pass_reason> screen_reduction_uncached(MPI_Datatype t, MPI_Op mop, reduction& r) {
  if (t == MPI_DATATYPE_NULL || mop == MPI_OP_NULL) return pass_reason::arguments;
  const std::optional<op> o = op_of(mop);
  if (!o) return pass_reason::op;
  r.sig = signature_of(t);
  if (!r.sig.homogeneous) return pass_reason::type;
  const std::optional<dtype> d = reduction_dtype(r.sig.leaf, *o);
  if (!d) return pass_reason::type;
  r.type = *d;
  r.o = *o;
  return std::nullopt;
}

std::optional<pass_reason> screen_reduction(thread_state& state, MPI_Datatype t, MPI_Op mop, reduction& r) {
  screened_pair& last = state.last_pair;
  if (last.valid && t == last.t && mop == last.mop) {
    r = last.r;
    return last.why;
  }
  const std::optional<pass_reason> why = screen_reduction_uncached(t, mop, r);
  if (why != pass_reason::arguments && predefined(t)) last = {true, t, mop, r, why};
  return why;
}

// ---------------------------------------------------------------------------
// The calls, written once for both count widths: MPI's int counts and MPI-4's
// MPI_Count ("_c") forms, which MPICH 4 has and mpi4py 4 calls. `pass` is the
// MPI library's own entry point with the caller's arguments.

template <class Count, class Pass>
int allreduce_entry(const void* send, void* recv, Count count, MPI_Datatype t, MPI_Op mop, MPI_Comm comm, Pass pass) {
  thread_state& state = this_thread();
  reduction r;
  std::optional<pass_reason> why = screen(state, call::allreduce);
  if (!why && count < 0) why = pass_reason::arguments;
  if (!why) why = screen_comm(comm);
  if (!why) why = screen_reduction(state, t, mop, r);
  const auto items = static_cast<std::size_t>(count);
  if (!why) why = screen_bytes(state, r.bytes(items));
  if (why) {
    count_passed(call::allreduce, *why);
    return pass();
  }
  const bool in_place = send == MPI_IN_PLACE;
  return serve(state, "MPI_Allreduce", comm, [&] {
    const bool as_is = direct(recv, r.sig) && (in_place || direct(send, r.sig));
    allreduce_report rep;
    if (as_is) {
      rep = allreduce(send, recv, r.elements(items), r.type, r.o, comm, kDefaultOptions);
    } else {
      std::vector<char> work(r.bytes(items));
      int rc = stage_in(in_place ? recv : send, items, t, r.sig, work.data());
      if (rc != MPI_SUCCESS) return rc;
      rep = allreduce(MPI_IN_PLACE, work.data(), r.elements(items), r.type, r.o, comm, kDefaultOptions);
      rc = stage_out(work.data(), recv, items, t, r.sig);
      if (rc != MPI_SUCCESS) return rc;
    }
    if (state.settings_read().report) {
      count_served(call::allreduce, r.bytes(items), !as_is);
      count_algorithm(rep.algorithm);
    }
    return MPI_SUCCESS;
  });
}

// Reductions that scatter: rank i receives counts[i] items (`equal`: counts[0]
// items each, the _block form).
template <class Count, class Pass>
int reduce_scatter_entry(call which, const char* name, const void* send, void* recv, const Count* counts, bool equal,
                         MPI_Datatype t, MPI_Op mop, MPI_Comm comm, Pass pass) {
  thread_state& state = this_thread();
  reduction r;
  std::optional<pass_reason> why = screen(state, which);
  if (!why && !counts) why = pass_reason::arguments;
  if (!why) why = screen_comm(comm);
  std::vector<std::size_t> items;
  std::size_t total = 0;
  if (!why) {
    const int p = comm_size(comm);
    for (int i = 0; i < p && !why; ++i) {
      const Count c = counts[equal ? 0 : i];
      if (c < 0) why = pass_reason::arguments;
      items.push_back(static_cast<std::size_t>(c));
      total += static_cast<std::size_t>(c);
    }
  }
  if (!why) why = screen_reduction(state, t, mop, r);
  if (!why) why = screen_bytes(state, r.bytes(total));
  if (why) {
    count_passed(which, *why);
    return pass();
  }
  const bool in_place = send == MPI_IN_PLACE;
  const std::size_t mine = items[static_cast<std::size_t>(comm_rank(comm))];
  return serve(state, name, comm, [&] {
    std::vector<std::size_t> elements(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) elements[i] = r.elements(items[i]);
    const bool as_is = direct(recv, r.sig) && (in_place || direct(send, r.sig));
    if (as_is) {
      reduce_scatter(send, recv, elements, r.type, r.o, comm);
    } else {
      std::vector<char> in(r.bytes(total)), out(r.bytes(mine));
      int rc = stage_in(in_place ? recv : send, total, t, r.sig, in.data());
      if (rc != MPI_SUCCESS) return rc;
      reduce_scatter(in.data(), out.data(), elements, r.type, r.o, comm);
      rc = stage_out(out.data(), recv, mine, t, r.sig);
      if (rc != MPI_SUCCESS) return rc;
    }
    count_served(which, r.bytes(total), !as_is);
    return MPI_SUCCESS;
  });
}

// Gathers, moved as bytes: rank i's counts[i] items of the receive type land at
// displs[i] items (`displs` null: consecutive; `equal`: counts[0] items each).
template <class Count, class Displ, class Pass>
int allgather_entry(call which, const char* name, const void* send, Count send_count, MPI_Datatype send_type,
                    void* recv, const Count* counts, bool equal, const Displ* displs, MPI_Datatype recv_type,
                    MPI_Comm comm, Pass pass) {
  thread_state& state = this_thread();
  const bool in_place = send == MPI_IN_PLACE;
  std::optional<pass_reason> why = screen(state, which);
  if (!why && (!counts || (!equal && !displs) || recv_type == MPI_DATATYPE_NULL ||
               (!in_place && (send_type == MPI_DATATYPE_NULL || send_count < 0)))) {
    why = pass_reason::arguments;
  }
  if (!why) why = screen_comm(comm);
  const int p = why ? 0 : comm_size(comm);
  const int rank = why ? 0 : comm_rank(comm);
  std::vector<std::size_t> items, places;
  for (int i = 0; i < p && !why; ++i) {
    const Count c = counts[equal ? 0 : i];
    const auto at =
        displs ? static_cast<long long>(displs[i]) : static_cast<long long>(i) * static_cast<long long>(counts[0]);
    if (c < 0 || at < 0) why = pass_reason::arguments;
    items.push_back(static_cast<std::size_t>(c));
    places.push_back(static_cast<std::size_t>(at));
  }
  signature rs, ss;
  if (!why) {
    rs = signature_of(recv_type);
    ss = in_place ? rs : signature_of(send_type);
    if (!rs.homogeneous || !ss.homogeneous) why = pass_reason::type;
  }
  const std::size_t item_bytes = rs.per_item * rs.leaf_size;
  std::size_t total = 0;
  for (std::size_t c : items) total += c * item_bytes;
  const std::size_t mine = why ? 0 : items[static_cast<std::size_t>(rank)];
  if (!why && !in_place && static_cast<std::size_t>(send_count) * ss.per_item * ss.leaf_size != mine * item_bytes) {
    why = pass_reason::arguments;  // mismatched signatures: MPI's error to report
  }
  if (!why) why = screen_bytes(state, total);
  if (why) {
    count_passed(which, *why);
    return pass();
  }
  return serve(state, name, comm, [&] {
    std::vector<std::size_t> bytes(items.size());
    bool consecutive = true;
    for (std::size_t i = 0; i < items.size(); ++i) {
      bytes[i] = items[i] * item_bytes;
      if (i && places[i] != places[i - 1] + items[i - 1]) consecutive = false;
    }
    const bool as_is = consecutive && direct(recv, rs) && (in_place || direct(send, ss));
    if (as_is) {
      allgatherv(send, item_at(recv, places[0], rs.item_extent), bytes, dtype::uint8, comm);
    } else {
      std::vector<char> all(total);
      std::size_t offset = 0;
      for (int i = 0; i < rank; ++i) offset += bytes[static_cast<std::size_t>(i)];
      int rc = in_place ? stage_in(item_at(recv, places[static_cast<std::size_t>(rank)], rs.item_extent), mine,
                                   recv_type, rs, all.data() + offset)
                        : stage_in(send, static_cast<std::size_t>(send_count), send_type, ss, all.data() + offset);
      if (rc != MPI_SUCCESS) return rc;
      allgatherv(MPI_IN_PLACE, all.data(), bytes, dtype::uint8, comm);
      offset = 0;
      for (std::size_t i = 0; i < items.size() && rc == MPI_SUCCESS; offset += bytes[i], ++i) {
        rc = stage_out(all.data() + offset, item_at(recv, places[i], rs.item_extent), items[i], recv_type, rs);
      }
      if (rc != MPI_SUCCESS) return rc;
    }
    count_served(which, total, !as_is);
    return MPI_SUCCESS;
  });
}

template <class Count, class Pass>
int reduce_local_entry(const void* in, void* inout, Count count, MPI_Datatype t, MPI_Op mop, Pass pass) {
  thread_state& state = this_thread();
  reduction r;
  std::optional<pass_reason> why = screen(state, call::reduce_local);
  if (!why && count < 0) why = pass_reason::arguments;
  if (!why) why = screen_reduction(state, t, mop, r);
  const auto items = static_cast<std::size_t>(count);
  if (!why) why = screen_bytes(state, r.bytes(items));
  if (why) {
    count_passed(call::reduce_local, *why);
    return pass();
  }
  // Errors not tied to a communicator go to MPI_COMM_WORLD's handler (MPI-3.1 8.3).
  return serve(state, "MPI_Reduce_local", MPI_COMM_WORLD, [&] {
    const bool as_is = direct(in, r.sig) && direct(inout, r.sig);
    if (as_is) {
      reduce_local(in, inout, r.elements(items), r.type, r.o);
    } else {
      // Open MPI 4.1 refuses predefined ops on derived types here (MPI_ERR_OP);
      // MPI defines them, and staged they work on both libraries.
      std::vector<char> a(r.bytes(items)), b(r.bytes(items));
      int rc = stage_in(in, items, t, r.sig, a.data());
      if (rc == MPI_SUCCESS) rc = stage_in(inout, items, t, r.sig, b.data());
      if (rc != MPI_SUCCESS) return rc;
      reduce_local(a.data(), b.data(), r.elements(items), r.type, r.o);
      rc = stage_out(b.data(), inout, items, t, r.sig);
      if (rc != MPI_SUCCESS) return rc;
    }
    count_served(call::reduce_local, r.bytes(items), !as_is);
    return MPI_SUCCESS;
  });
}

}  // namespace
}  // namespace conveyor::interpose

using namespace conveyor::interpose;

// The MPI_ entry points are the library's whole interface (everything else is hidden).
#pragma GCC visibility push(default)
extern "C" {

int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return allreduce_entry(send, recv, count, t, o, comm, [&] { return PMPI_Allreduce(send, recv, count, t, o, comm); });
}

int MPI_Reduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return reduce_scatter_entry(call::reduce_scatter_block, "MPI_Reduce_scatter_block", send, recv, &count, true, t, o,
                              comm, [&] { return PMPI_Reduce_scatter_block(send, recv, count, t, o, comm); });
}

int MPI_Reduce_scatter(const void* send, void* recv, const int counts[], MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return reduce_scatter_entry(call::reduce_scatter, "MPI_Reduce_scatter", send, recv, counts, false, t, o, comm,
                              [&] { return PMPI_Reduce_scatter(send, recv, counts, t, o, comm); });
}

int MPI_Allgather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                  MPI_Datatype recv_type, MPI_Comm comm) {
  return allgather_entry(call::allgather, "MPI_Allgather", send, send_count, send_type, recv, &recv_count, true,
                         static_cast<const int*>(nullptr), recv_type, comm, [&] {
                           return PMPI_Allgather(send, send_count, send_type, recv, recv_count, recv_type, comm);
                         });
}

int MPI_Allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int counts[],
                   const int displs[], MPI_Datatype recv_type, MPI_Comm comm) {
  return allgather_entry(
      call::allgatherv, "MPI_Allgatherv", send, send_count, send_type, recv, counts, false, displs, recv_type, comm,
      [&] { return PMPI_Allgatherv(send, send_count, send_type, recv, counts, displs, recv_type, comm); });
}

int MPI_Reduce_local(const void* in, void* inout, int count, MPI_Datatype t, MPI_Op o) {
  return reduce_local_entry(in, inout, count, t, o, [&] { return PMPI_Reduce_local(in, inout, count, t, o); });
}

#if MPI_VERSION >= 4
int MPI_Allreduce_c(const void* send, void* recv, MPI_Count count, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return allreduce_entry(send, recv, count, t, o, comm,
                         [&] { return PMPI_Allreduce_c(send, recv, count, t, o, comm); });
}

int MPI_Reduce_scatter_block_c(const void* send, void* recv, MPI_Count count, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return reduce_scatter_entry(call::reduce_scatter_block, "MPI_Reduce_scatter_block_c", send, recv, &count, true, t, o,
                              comm, [&] { return PMPI_Reduce_scatter_block_c(send, recv, count, t, o, comm); });
}

int MPI_Reduce_scatter_c(const void* send, void* recv, const MPI_Count counts[], MPI_Datatype t, MPI_Op o,
                         MPI_Comm comm) {
  return reduce_scatter_entry(call::reduce_scatter, "MPI_Reduce_scatter_c", send, recv, counts, false, t, o, comm,
                              [&] { return PMPI_Reduce_scatter_c(send, recv, counts, t, o, comm); });
}

int MPI_Allgather_c(const void* send, MPI_Count send_count, MPI_Datatype send_type, void* recv, MPI_Count recv_count,
                    MPI_Datatype recv_type, MPI_Comm comm) {
  return allgather_entry(call::allgather, "MPI_Allgather_c", send, send_count, send_type, recv, &recv_count, true,
                         static_cast<const MPI_Aint*>(nullptr), recv_type, comm, [&] {
                           return PMPI_Allgather_c(send, send_count, send_type, recv, recv_count, recv_type, comm);
                         });
}

int MPI_Allgatherv_c(const void* send, MPI_Count send_count, MPI_Datatype send_type, void* recv,
                     const MPI_Count counts[], const MPI_Aint displs[], MPI_Datatype recv_type, MPI_Comm comm) {
  return allgather_entry(
      call::allgatherv, "MPI_Allgatherv_c", send, send_count, send_type, recv, counts, false, displs, recv_type, comm,
      [&] { return PMPI_Allgatherv_c(send, send_count, send_type, recv, counts, displs, recv_type, comm); });
}

int MPI_Reduce_local_c(const void* in, void* inout, MPI_Count count, MPI_Datatype t, MPI_Op o) {
  return reduce_local_entry(in, inout, count, t, o, [&] { return PMPI_Reduce_local_c(in, inout, count, t, o); });
}
#endif  // MPI_VERSION >= 4

int MPI_Finalize(void) {
  if (current_policy().report) print_report();
  release_staging();
  return PMPI_Finalize();
}

}  // extern "C"
#pragma GCC visibility pop
