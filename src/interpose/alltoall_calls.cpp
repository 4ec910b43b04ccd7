// SPDX-License-Identifier: BSD-3-Clause
// libconveyor_mpi's all-to-all family: MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw
// and (MPI-4 libraries) their MPI_Count forms, served by conveyor::alltoallw's
// datatype form (conveyor/alltoall.hpp): each peer's part of either buffer as its
// (count, displacement in bytes, datatype); the engine decodes each derived type
// once while it lives and has MPI pack the items of types it does not read, so
// every rank serves the call and decides alike.
//
// The decision reads only what every rank agrees on: the call, the communicator
// (intra only), and for MPI_Alltoall the bytes per peer (count x type size, equal
// on every rank by MPI's matching rule), which CONVEYOR_MPI_MIN_BYTES compares;
// alltoallv / alltoallw have no size all ranks share, so they are served at every
// size, and alltoallw_auto agrees on one (the largest pair's class: voted through
// the exchange's headers on one node, by one MPI_Allreduce across nodes), per
// which it times Conveyor's exchanges against the library's own call; a call the
// library then runs counts as passed, "measured".
// A negative count or a null type with items goes to the MPI library, which
// reports it. MPI_IN_PLACE: the receive side is also the send side.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/alltoall.hpp"
#include "interpose/entry.hpp"

namespace conveyor::interpose {
namespace {

using part = datatype_part;

// The parts of a call, per thread and kept for their capacity.
struct call_parts {
  std::vector<part> sp, rp;
};
thread_local call_parts t_parts;

// An engine's answer (`ask()`) with this thread inside Conveyor (its MPI calls
// pass through: the engine's first call on a communicator is collective), or
// `failed` with the message on stderr if Conveyor could not find out.
template <class T, class Ask>
T ask_engine(thread_state& state, T failed, const Ask& ask) {
  try {
    inside_conveyor guard(state);
    return ask();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conveyor_mpi: all-to-all: %s\n", e.what());
    return failed;
  }
}

// Whether MPI_Alltoallv / w on `comm` goes to the library's call ahead of the
// vote (alltoallw_ahead); false if Conveyor failed to find out.
bool library_ahead(thread_state& state, MPI_Comm comm) {
  return ask_engine(state, false, [&] { return alltoallw_ahead(comm); });
}

// Why the parts cannot be served (nullopt: they can).
std::optional<pass_reason> screen_parts(const std::vector<part>& parts) {
  for (const part& p : parts) {
    if (p.count < 0 || (p.count > 0 && p.type == MPI_DATATYPE_NULL)) return pass_reason::arguments;
  }
  return std::nullopt;
}

// The served call: conveyor::alltoallw_auto (the datatype form, timed against
// `pass`, the library's call on the caller's arguments, where the vote runs).
template <class Pass>
int serve_alltoall(thread_state& state, call which, const char* name, const void* send, const std::vector<part>& sp,
                   void* recv, const std::vector<part>& rp, MPI_Comm comm, const Pass& pass) {
  return serve(state, name, comm, [&] {
    const alltoallw_report rep = alltoallw_auto(send, sp, recv, rp, comm, [&] {
      if (pass() != MPI_SUCCESS) throw error(errc::mpi, std::string(name) + " failed");
    });
    if (rep.library && !rep.library_trial) count_passed(which, pass_reason::measured);
    else count_served(which, static_cast<std::size_t>(rep.sent_bytes + rep.self_bytes), rep.staged_parts > 0);
    count_decoded(rep.types_decoded);
    return MPI_SUCCESS;
  });
}

// MPI_Alltoall: `count` items of the type for every peer, peer q's at q * count extents.
// Whether items of `t` are `size` contiguous bytes from the item's address.
bool contiguous(MPI_Datatype t) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  PMPI_Type_size(t, &size);
  PMPI_Type_get_extent(t, &lb, &extent);
  PMPI_Type_get_true_extent(t, &tlb, &textent);
  return lb == 0 && tlb == 0 && extent == size && textent == size;
}

// rtype's size and whether items of both types are contiguous (stype
// MPI_DATATYPE_NULL in place), from this thread's last pair when it was this one.
void screen_types(thread_state& state, MPI_Datatype stype, MPI_Datatype rtype, int& rsize, bool& both) {
  screened_alltoall_types& last = state.last_alltoall_types;
  if (!last.valid || last.s != stype || last.r != rtype) {
    int size = 0;
    PMPI_Type_size(rtype, &size);
    const bool c = contiguous(rtype) && (stype == MPI_DATATYPE_NULL || contiguous(stype));
    last = {predefined(rtype) && (stype == MPI_DATATYPE_NULL || predefined(stype)), stype, rtype, size, c};
  }
  rsize = last.rsize, both = last.contiguous;
}

// pass(): the library's call on the caller's arguments; pass_with(in, out): the
// same from `in` to `out` (alltoall_auto's trials).
template <class Count, class Pass, class PassWith>
int alltoall_entry(const void* send, Count scount, MPI_Datatype stype, void* recv, Count rcount, MPI_Datatype rtype,
                   MPI_Comm comm, Pass pass, PassWith pass_with) {
  thread_state& state = this_thread();
  const bool in_place = send == MPI_IN_PLACE;
  std::optional<pass_reason> why = screen(state, call::alltoall);
  if (!why && (rcount < 0 || rtype == MPI_DATATYPE_NULL || (!in_place && (scount < 0 || stype == MPI_DATATYPE_NULL)))) {
    why = pass_reason::arguments;
  }
  if (!why) why = screen_comm(comm);
  int rsize = 0;
  bool measured = false;  // contiguous types on both sides (size = extent = true extent, lower bounds 0):
                          // alltoall_auto measures Conveyor's exchange against the library's own call
  if (!why) screen_types(state, in_place ? MPI_DATATYPE_NULL : stype, rtype, rsize, measured);
  if (!why) why = screen_bytes(state, static_cast<std::size_t>(rcount) * static_cast<std::size_t>(rsize));
  if (why) {
    count_passed(call::alltoall, *why);
    return pass();
  }
  if (measured) {
    const std::int64_t bytes = static_cast<std::int64_t>(rcount) * rsize;
    return serve(state, "MPI_Alltoall", comm, [&] {
      const alltoall_auto_report rep = alltoall_auto(send, recv, bytes, comm, [&](const void* in, void* out) {
        const int rc = pass_with(in, out);
        if (rc != MPI_SUCCESS) throw error(errc::mpi, "MPI_Alltoall failed");
      });
      if (rep.library && !rep.trial) count_passed(call::alltoall, pass_reason::measured);
      else
        count_served(call::alltoall, static_cast<std::size_t>(bytes) * static_cast<std::size_t>(comm_size(comm)),
                     false);
      return MPI_SUCCESS;
    });
  }
  const int P = comm_size(comm);
  auto parts = [P](Count n, MPI_Datatype t, std::vector<part>& v) {
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_get_extent(t, &lb, &extent);
    v.resize(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q)
      v[static_cast<std::size_t>(q)] = {static_cast<std::int64_t>(n), q * static_cast<std::int64_t>(n) * extent, t};
  };
  call_parts& c = t_parts;
  parts(rcount, rtype, c.rp);
  if (in_place) c.sp.clear();
  else parts(scount, stype, c.sp);
  return serve_alltoall(state, call::alltoall, "MPI_Alltoall", send, c.sp, recv, c.rp, comm, pass);
}

// MPI_Alltoallv (displacements in extents of the one type) and MPI_Alltoallw
// (displacements in bytes, a type per peer): `types` null for the v form.
template <class Count, class Displ, class Pass>
int alltoallv_entry(call which, const char* name, const void* send, const Count* scounts, const Displ* sdispls,
                    const MPI_Datatype* stypes, MPI_Datatype stype, void* recv, const Count* rcounts,
                    const Displ* rdispls, const MPI_Datatype* rtypes, MPI_Datatype rtype, MPI_Comm comm, Pass pass) {
  thread_state& state = this_thread();
  const bool in_place = send == MPI_IN_PLACE;
  const bool w = which == call::alltoallw;
  std::optional<pass_reason> why = screen(state, which);
  if (!why && (!rcounts || !rdispls || (w ? !rtypes : rtype == MPI_DATATYPE_NULL))) why = pass_reason::arguments;
  if (!why && !in_place && (!scounts || !sdispls || (w ? !stypes : stype == MPI_DATATYPE_NULL))) {
    why = pass_reason::arguments;
  }
  if (!why) why = screen_comm(comm);
  if (!why && library_ahead(state, comm)) why = pass_reason::measured;
  call_parts& c = t_parts;
  std::vector<part>& sp = c.sp;
  std::vector<part>& rp = c.rp;
  if (!why) {
    const int P = comm_size(comm);
    auto parts = [P](const Count* counts, const Displ* displs, const MPI_Datatype* types, MPI_Datatype one,
                     std::vector<part>& v) {
      MPI_Aint lb = 0, extent = 1;
      if (!types) PMPI_Type_get_extent(one, &lb, &extent);
      v.resize(static_cast<std::size_t>(P));
      for (int q = 0; q < P; ++q) {
        const auto k = static_cast<std::size_t>(q);
        v[k] = {static_cast<std::int64_t>(counts[q]), static_cast<std::int64_t>(displs[q]) * extent,
                types ? types[q] : one};
      }
    };
    parts(rcounts, rdispls, rtypes, rtype, rp);
    if (in_place) sp.clear();
    else parts(scounts, sdispls, stypes, stype, sp);
    why = screen_parts(rp);
    if (!why) why = screen_parts(sp);
  }
  if (why) {
    count_passed(which, *why);
    return pass();
  }
  return serve_alltoall(state, which, name, send, sp, recv, rp, comm, pass);
}

}  // namespace
}  // namespace conveyor::interpose

using namespace conveyor::interpose;

#pragma GCC visibility push(default)
extern "C" {

int MPI_Alltoall(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm) {
  return alltoall_entry(
      send, scount, stype, recv, rcount, rtype, comm,
      [&] { return PMPI_Alltoall(send, scount, stype, recv, rcount, rtype, comm); },
      [&](const void* in, void* out) {  // a call in place is timed from a copy: the receive side's type
        const bool typed = send != MPI_IN_PLACE || in == MPI_IN_PLACE;
        return PMPI_Alltoall(in, typed ? scount : rcount, typed ? stype : rtype, out, rcount, rtype, comm);
      });
}

int MPI_Alltoallv(const void* send, const int scounts[], const int sdispls[], MPI_Datatype stype, void* recv,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
  return alltoallv_entry(
      call::alltoallv, "MPI_Alltoallv", send, scounts, sdispls, nullptr, stype, recv, rcounts, rdispls, nullptr, rtype,
      comm, [&] { return PMPI_Alltoallv(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm); });
}

int MPI_Alltoallw(const void* send, const int scounts[], const int sdispls[], const MPI_Datatype stypes[], void* recv,
                  const int rcounts[], const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm) {
  return alltoallv_entry(call::alltoallw, "MPI_Alltoallw", send, scounts, sdispls, stypes, MPI_DATATYPE_NULL, recv,
                         rcounts, rdispls, rtypes, MPI_DATATYPE_NULL, comm, [&] {
                           return PMPI_Alltoallw(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm);
                         });
}

#if MPI_VERSION >= 4
int MPI_Alltoall_c(const void* send, MPI_Count scount, MPI_Datatype stype, void* recv, MPI_Count rcount,
                   MPI_Datatype rtype, MPI_Comm comm) {
  return alltoall_entry(
      send, scount, stype, recv, rcount, rtype, comm,
      [&] { return PMPI_Alltoall_c(send, scount, stype, recv, rcount, rtype, comm); },
      [&](const void* in, void* out) {  // a call in place is timed from a copy: the receive side's type
        const bool typed = send != MPI_IN_PLACE || in == MPI_IN_PLACE;
        return PMPI_Alltoall_c(in, typed ? scount : rcount, typed ? stype : rtype, out, rcount, rtype, comm);
      });
}

int MPI_Alltoallv_c(const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype stype,
                    void* recv, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rtype,
                    MPI_Comm comm) {
  return alltoallv_entry(call::alltoallv, "MPI_Alltoallv_c", send, scounts, sdispls, nullptr, stype, recv, rcounts,
                         rdispls, nullptr, rtype, comm, [&] {
                           return PMPI_Alltoallv_c(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm);
                         });
}

int MPI_Alltoallw_c(const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[], const MPI_Datatype stypes[],
                    void* recv, const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rtypes[],
                    MPI_Comm comm) {
  return alltoallv_entry(
      call::alltoallw, "MPI_Alltoallw_c", send, scounts, sdispls, stypes, MPI_DATATYPE_NULL, recv, rcounts, rdispls,
      rtypes, MPI_DATATYPE_NULL, comm,
      [&] { return PMPI_Alltoallw_c(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm); });
}
#endif  // MPI_VERSION >= 4

}  // extern "C"
#pragma GCC visibility pop
