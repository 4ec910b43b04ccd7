// libconveyor_mpi's all-to-all family: MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw
// and (MPI-4 libraries) their MPI_Count forms, served by conveyor::alltoallw
// (conveyor/alltoall.hpp). Each peer's part of either buffer is decoded from its
// (count, displacement, datatype) into byte boxes (type_map.hpp); a type whose
// layout is not read is staged through a send-receive to self as MPI_PACKED
// (staging.hpp), so it is still served and every rank decides alike.
//
// The decision reads only what every rank agrees on: the call, the communicator
// (intra only), and for MPI_Alltoall the bytes per peer (count x type size, equal
// on every rank by MPI's matching rule), which CONVEYOR_MPI_MIN_BYTES compares;
// alltoallv / alltoallw have no size all ranks share, so they are served at every
// size. A negative count or a null type with items goes to the MPI library, which
// reports it. MPI_IN_PLACE: the receive side is also the send side.
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "conveyor/alltoall.hpp"
#include "interpose/entry.hpp"
#include "interpose/staging.hpp"
#include "interpose/type_cache.hpp"
#include "interpose/type_map.hpp"

namespace conveyor::interpose {
namespace {

// One peer's part of a buffer, as the call gives it.
struct part {
  std::int64_t count = 0;
  std::int64_t displ = 0;  // bytes from the buffer
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

// Items staged through MPI's own packing (a type whose layout is not read).
struct staged_part {
  const void* at = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::vector<char> bytes;
};

// One side of the call as byte maps over `base`, with what was staged.
struct side {
  std::vector<byte_map> maps;
  std::vector<staged_part> staged;
};

std::int64_t address(const void* p) { return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(p)); }

using layouts = std::vector<std::pair<MPI_Datatype, const type_layout*>>;

// What a call works in, per thread and kept for its capacity: a repeated call
// (an FFT's every step) allocates nothing.
struct call_scratch {
  std::vector<part> sp, rp;
  side in, out;
  layouts seen;   // the types of this call (handles cannot be freed during it)
  layouts named;  // predefined types, kept across calls (their handles are never freed)
};
thread_local call_scratch t_scratch;

// The layout of `t`: one type is usually passed for every peer, so the call keeps
// the ones it has looked up, and the thread keeps the predefined ones; the rest
// come from type_cache (each type decoded once while it lives).
const type_layout& layout_in_call(MPI_Datatype t, call_scratch& c) {
  for (const auto& [h, l] : c.seen) {
    if (h == t) return *l;
  }
  for (const auto& [h, l] : c.named) {
    if (h == t) return *l;
  }
  const type_layout& l = cached_layout(t);
  int ni = 0, na = 0, nd = 0, combiner = 0;
  PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  (combiner == MPI_COMBINER_NAMED ? c.named : c.seen).emplace_back(t, &l);
  return l;
}

// Builds one side; `outgoing`: the staged items are packed now. Returns an MPI code.
int build_side(const void* buf, const void* base, const std::vector<part>& parts, bool outgoing, side& s,
               call_scratch& c) {
  s.maps.resize(parts.size());
  for (byte_map& m : s.maps) m.clear();
  s.staged.clear();
  for (std::size_t q = 0; q < parts.size(); ++q) {
    const part& p = parts[q];
    if (p.count == 0) continue;
    const std::int64_t first = address(buf) + p.displ - address(base);
    const type_layout& l = layout_in_call(p.type, c);
    if (l.readable && append_items(l, p.count, first, s.maps[q])) continue;
    s.maps[q].clear();
    if (p.count * l.size > INT_MAX) return MPI_ERR_COUNT;  // MPI counts in int
    staged_part st;
    st.at = reinterpret_cast<const void*>(static_cast<std::intptr_t>(address(buf) + p.displ));
    st.count = static_cast<int>(p.count);
    st.type = p.type;
    st.bytes.resize(static_cast<std::size_t>(p.count * l.size));
    if (outgoing) {
      const int rc = stage_packed_in(st.at, st.count, st.type, st.bytes.data(), static_cast<int>(st.bytes.size()));
      if (rc != MPI_SUCCESS) return rc;
    }
    s.maps[q].push_back(byte_box{address(st.bytes.data()) - address(base), static_cast<std::int64_t>(st.bytes.size()), 0, {}, {}});
    s.staged.push_back(std::move(st));
  }
  return MPI_SUCCESS;
}

int unpack_staged(side& s) {
  for (staged_part& st : s.staged) {
    const int rc = stage_packed_out(st.bytes.data(), static_cast<int>(st.bytes.size()), const_cast<void*>(st.at), st.count,
                                    st.type);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// Why the parts cannot be served (nullopt: they can).
std::optional<pass_reason> screen_parts(const std::vector<part>& parts) {
  for (const part& p : parts) {
    if (p.count < 0 || (p.count > 0 && p.type == MPI_DATATYPE_NULL)) return pass_reason::arguments;
  }
  return std::nullopt;
}

// The served call: both sides decoded, conveyor::alltoallw, staged items unpacked.
int serve_alltoall(thread_state& state, call which, const char* name, const void* send, const std::vector<part>& sp,
                   void* recv, const std::vector<part>& rp, MPI_Comm comm) {
  const bool in_place = send == MPI_IN_PLACE;
  return serve(state, name, comm, [&] {
    call_scratch& c = t_scratch;
    c.seen.clear();
    side& in = c.in;
    side& out = c.out;
    const void* send_base = in_place ? recv : send;
    int rc = build_side(send_base, send_base, in_place ? rp : sp, true, in, c);
    if (rc == MPI_SUCCESS) rc = build_side(recv, recv, rp, false, out, c);
    if (rc != MPI_SUCCESS) return rc;
    const alltoallw_report rep = alltoallw(send_base, in.maps, recv, out.maps, comm);
    rc = unpack_staged(out);
    if (rc != MPI_SUCCESS) return rc;
    count_served(which, static_cast<std::size_t>(rep.sent_bytes + rep.self_bytes), !in.staged.empty() || !out.staged.empty());
    return MPI_SUCCESS;
  });
}

// MPI_Alltoall: `count` items of the type for every peer, peer q's at q * count extents.
template <class Count, class Pass>
int alltoall_entry(const void* send, Count scount, MPI_Datatype stype, void* recv, Count rcount, MPI_Datatype rtype,
                   MPI_Comm comm, Pass pass) {
  thread_state& state = this_thread();
  const bool in_place = send == MPI_IN_PLACE;
  std::optional<pass_reason> why = screen(state, call::alltoall);
  if (!why && (rcount < 0 || rtype == MPI_DATATYPE_NULL || (!in_place && (scount < 0 || stype == MPI_DATATYPE_NULL)))) {
    why = pass_reason::arguments;
  }
  if (!why) why = screen_comm(comm);
  int rsize = 0;
  if (!why) PMPI_Type_size(rtype, &rsize);
  if (!why) why = screen_bytes(state, static_cast<std::size_t>(rcount) * static_cast<std::size_t>(rsize));
  if (why) {
    count_passed(call::alltoall, *why);
    return pass();
  }
  const int P = comm_size(comm);
  auto parts = [P](Count n, MPI_Datatype t, std::vector<part>& v) {
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_get_extent(t, &lb, &extent);
    v.resize(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q) v[static_cast<std::size_t>(q)] = {static_cast<std::int64_t>(n), q * static_cast<std::int64_t>(n) * extent, t};
  };
  call_scratch& c = t_scratch;
  parts(rcount, rtype, c.rp);
  if (in_place) c.sp.clear();
  else parts(scount, stype, c.sp);
  return serve_alltoall(state, call::alltoall, "MPI_Alltoall", send, c.sp, recv, c.rp, comm);
}

// MPI_Alltoallv (displacements in extents of the one type) and MPI_Alltoallw
// (displacements in bytes, a type per peer): `types` null for the v form.
template <class Count, class Displ, class Pass>
int alltoallv_entry(call which, const char* name, const void* send, const Count* scounts, const Displ* sdispls,
                    const MPI_Datatype* stypes, MPI_Datatype stype, void* recv, const Count* rcounts, const Displ* rdispls,
                    const MPI_Datatype* rtypes, MPI_Datatype rtype, MPI_Comm comm, Pass pass) {
  thread_state& state = this_thread();
  const bool in_place = send == MPI_IN_PLACE;
  const bool w = which == call::alltoallw;
  std::optional<pass_reason> why = screen(state, which);
  if (!why && (!rcounts || !rdispls || (w ? !rtypes : rtype == MPI_DATATYPE_NULL))) why = pass_reason::arguments;
  if (!why && !in_place && (!scounts || !sdispls || (w ? !stypes : stype == MPI_DATATYPE_NULL))) {
    why = pass_reason::arguments;
  }
  if (!why) why = screen_comm(comm);
  call_scratch& c = t_scratch;
  std::vector<part>& sp = c.sp;
  std::vector<part>& rp = c.rp;
  sp.clear(), rp.clear();
  if (!why) {
    const int P = comm_size(comm);
    auto parts = [P](const Count* counts, const Displ* displs, const MPI_Datatype* types, MPI_Datatype one,
                     std::vector<part>& v) {
      MPI_Aint lb = 0, extent = 1;
      if (!types) PMPI_Type_get_extent(one, &lb, &extent);
      v.resize(static_cast<std::size_t>(P));
      for (int q = 0; q < P; ++q) {
        const auto k = static_cast<std::size_t>(q);
        v[k] = {static_cast<std::int64_t>(counts[q]), static_cast<std::int64_t>(displs[q]) * extent, types ? types[q] : one};
      }
    };
    parts(rcounts, rdispls, rtypes, rtype, rp);
    if (!in_place) parts(scounts, sdispls, stypes, stype, sp);
    why = screen_parts(rp);
    if (!why) why = screen_parts(sp);
  }
  if (why) {
    count_passed(which, *why);
    return pass();
  }
  return serve_alltoall(state, which, name, send, sp, recv, rp, comm);
}

}  // namespace
}  // namespace conveyor::interpose

using namespace conveyor::interpose;

#pragma GCC visibility push(default)
extern "C" {

int MPI_Alltoall(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm) {
  return alltoall_entry(send, scount, stype, recv, rcount, rtype, comm,
                        [&] { return PMPI_Alltoall(send, scount, stype, recv, rcount, rtype, comm); });
}

int MPI_Alltoallv(const void* send, const int scounts[], const int sdispls[], MPI_Datatype stype, void* recv,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
  return alltoallv_entry(call::alltoallv, "MPI_Alltoallv", send, scounts, sdispls, nullptr, stype, recv, rcounts,
                         rdispls, nullptr, rtype, comm, [&] {
                           return PMPI_Alltoallv(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm);
                         });
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
  return alltoall_entry(send, scount, stype, recv, rcount, rtype, comm,
                        [&] { return PMPI_Alltoall_c(send, scount, stype, recv, rcount, rtype, comm); });
}

int MPI_Alltoallv_c(const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype stype,
                    void* recv, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
  return alltoallv_entry(call::alltoallv, "MPI_Alltoallv_c", send, scounts, sdispls, nullptr, stype, recv, rcounts,
                         rdispls, nullptr, rtype, comm, [&] {
                           return PMPI_Alltoallv_c(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm);
                         });
}

int MPI_Alltoallw_c(const void* send, const MPI_Count scounts[], const MPI_Aint sdispls[], const MPI_Datatype stypes[],
                    void* recv, const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rtypes[],
                    MPI_Comm comm) {
  return alltoallv_entry(call::alltoallw, "MPI_Alltoallw_c", send, scounts, sdispls, stypes, MPI_DATATYPE_NULL, recv,
                         rcounts, rdispls, rtypes, MPI_DATATYPE_NULL, comm, [&] {
                           return PMPI_Alltoallw_c(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm);
                         });
}
#endif  // MPI_VERSION >= 4

}  // extern "C"
#pragma GCC visibility pop
