// SPDX-License-Identifier: BSD-3-Clause
// alltoallw's datatype form (conveyor/alltoall.hpp): each peer's (count,
// displacement, datatype) decoded into byte maps, then the byte-map form moves
// them. Types whose layout is not read are packed by MPI into a staging buffer
// that stands for the part (datatype_packing.hpp) and unpacked after the move.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/alltoall.hpp"
#include "conveyor/contract.hpp"
#include "redistribute/alltoall_typed.hpp"
#include "redistribute/datatype_cache.hpp"
#include "redistribute/datatype_layout.hpp"
#include "redistribute/datatype_packing.hpp"

namespace conveyor {
namespace {

using redistribute::detail::type_layout;

std::int64_t address(const void* p) { return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(p)); }

// Items staged through MPI's packing (a type whose layout is not read).
struct staged_part {
  void* at = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::vector<char> bytes;
};

// One side of the call as byte maps over its buffer, with what was staged.
struct side {
  std::vector<byte_map> maps;
  std::vector<staged_part> staged;
};

using layouts = std::vector<std::pair<MPI_Datatype, const type_layout*>>;

// The arguments the maps of the last call were built from: a call with the same
// parts, buffer sizes and form, while no type whose layout was looked up has
// been freed (a freed handle may come back naming another type), has the same
// maps (offsets from the buffers' starts). Not kept when a part was staged: its
// box points at the staging buffer.
struct built_from {
  bool valid = false;
  bool in_place = false;
  std::int64_t send_size = 0, recv_size = 0;
  std::uint64_t layouts_deleted = 0;
  std::vector<datatype_part> sp, rp;
};

bool same_parts(const std::vector<datatype_part>& a, const std::vector<datatype_part>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t q = 0; q < a.size(); ++q) {
    if (a[q].count != b[q].count || a[q].displ != b[q].displ || (a[q].count && a[q].type != b[q].type)) return false;
  }
  return true;
}

// What a call works in, per thread and kept for its capacity: a repeated call
// (an FFT's every step) allocates nothing, and reuses the last call's maps.
struct call_scratch {
  side in, out;
  layouts seen;   // the types of this call (handles cannot be freed during it)
  layouts named;  // predefined types, kept across calls (their handles are never freed)
  built_from last;
};
thread_local call_scratch t_scratch;

// The layout of `t`: one type is usually passed for every peer, so the call keeps
// the ones it has looked up, and the thread keeps the predefined ones; the rest
// come from datatype_cache (each type decoded once while it lives).
const type_layout& layout_in_call(MPI_Datatype t, call_scratch& c, int& decoded) {
  for (const auto& [h, l] : c.seen) {
    if (h == t) return *l;
  }
  for (const auto& [h, l] : c.named) {
    if (h == t) return *l;
  }
  const type_layout& l = redistribute::detail::cached_layout(t, decoded);
  (redistribute::detail::combiner_of(t) == MPI_COMBINER_NAMED ? c.named : c.seen).emplace_back(t, &l);
  return l;
}

// The message is built only on failure: this runs for every part of every call.
void check_part(const datatype_part& p, const char* side, int q, std::int64_t size) {
  auto which = [&] { return std::string(side) + " part for rank " + std::to_string(q); };
  if (p.count < 0) throw error(errc::invalid_argument, "alltoallw: the " + which() + " has a negative count");
  if (p.count == 0) return;
  if (p.type == MPI_DATATYPE_NULL)
    throw error(errc::invalid_argument, "alltoallw: the " + which() + " has no datatype");
  if (size < 0) return;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  PMPI_Type_get_extent(p.type, &lb, &extent);
  PMPI_Type_get_true_extent(p.type, &tlb, &textent);
  const std::int64_t span = (p.count - 1) * static_cast<std::int64_t>(extent);
  const std::int64_t lo = p.displ + tlb + std::min<std::int64_t>(0, span);
  const std::int64_t hi = p.displ + tlb + textent + std::max<std::int64_t>(0, span);
  if (lo < 0 || hi > size) {
    throw error(errc::invalid_argument, "alltoallw: the " + which() + " covers bytes " + std::to_string(lo) + " to " +
                                            std::to_string(hi) + " of a buffer of " + std::to_string(size));
  }
}

// Builds one side over `buf`; `outgoing`: the staged items are packed now.
void build_side(const void* buf, const std::vector<datatype_part>& parts, bool outgoing, side& s, call_scratch& c,
                int& decoded) {
  s.maps.resize(parts.size());
  for (byte_map& m : s.maps) m.clear();
  s.staged.clear();
  for (std::size_t q = 0; q < parts.size(); ++q) {
    const datatype_part& p = parts[q];
    if (p.count == 0) continue;
    const type_layout& l = layout_in_call(p.type, c, decoded);
    if (l.readable && redistribute::detail::append_items(l, p.count, p.displ, s.maps[q])) continue;
    s.maps[q].clear();
    if (p.count > INT_MAX || p.count * l.size > INT_MAX) {
      throw error(errc::unsupported, "alltoallw: over 2^31 bytes of a datatype whose layout is not read");
    }
    staged_part st;
    st.at = reinterpret_cast<void*>(static_cast<std::intptr_t>(address(buf) + p.displ));
    st.count = static_cast<int>(p.count);
    st.type = p.type;
    st.bytes.resize(static_cast<std::size_t>(p.count * l.size));
    if (outgoing) {
      redistribute::detail::pack_items(st.at, st.count, st.type, st.bytes.data(), static_cast<int>(st.bytes.size()));
    }
    s.maps[q].push_back(
        byte_box{address(st.bytes.data()) - address(buf), static_cast<std::int64_t>(st.bytes.size()), 0, {}, {}});
    s.staged.push_back(std::move(st));
  }
}

}  // namespace

namespace {

alltoallw_report alltoallw_parts(const void* send, const std::vector<datatype_part>& send_parts, void* recv,
                                 const std::vector<datatype_part>& recv_parts, MPI_Comm comm, bool validate,
                                 std::int64_t send_size, std::int64_t recv_size, const std::function<void()>& library) {
  const bool in_place = send == MPI_IN_PLACE;
  const void* send_buf = in_place ? recv : send;
  const std::vector<datatype_part>& sp = in_place ? recv_parts : send_parts;
  call_scratch& c = t_scratch;
  c.seen.clear();
  int decoded = 0;
  // The local checks and decoding; with validate inside a collective call whose
  // agreement gives every rank the first problem, else on this rank alone (MPI's
  // semantics), without a call object of its own: libconveyor_mpi's every
  // all-to-all comes here, and a call object of its own is a measurable part of
  // a small call.
  const auto prepare = [&](int P) {
    if (static_cast<int>(sp.size()) != P || static_cast<int>(recv_parts.size()) != P) {
      throw error(errc::invalid_argument, "alltoallw: send_parts and recv_parts need one part per rank (" +
                                              std::to_string(P) + "), got " + std::to_string(sp.size()) + " and " +
                                              std::to_string(recv_parts.size()));
    }
    built_from& last = c.last;
    const std::int64_t ssize = in_place ? recv_size : send_size;
    if (last.valid && last.in_place == in_place && last.send_size == ssize && last.recv_size == recv_size &&
        last.layouts_deleted == redistribute::detail::layouts_deleted() && same_parts(last.sp, sp) &&
        same_parts(last.rp, recv_parts)) {
      return;  // checked and built before
    }
    last.valid = false;
    for (int q = 0; q < P; ++q) {
      check_part(sp[static_cast<std::size_t>(q)], "send", q, ssize);
      check_part(recv_parts[static_cast<std::size_t>(q)], "receive", q, recv_size);
    }
    // Read before the lookups: a type freed meanwhile (by another thread) leaves it stale.
    last.layouts_deleted = redistribute::detail::layouts_deleted();
    build_side(send_buf, sp, true, c.in, c, decoded);
    build_side(recv, recv_parts, false, c.out, c, decoded);
    if (!c.in.staged.empty() || !c.out.staged.empty()) return;
    last.valid = true, last.in_place = in_place, last.send_size = ssize, last.recv_size = recv_size;
    last.sp = sp, last.rp = recv_parts;
  };
  if (validate) {
    collective_call call("alltoallw", comm);
    call.check([&] { prepare(call.size()); });
    call.agree();
  } else {
    int P = 0;
    if (comm == MPI_COMM_NULL) throw error(errc::invalid_argument, "alltoallw: MPI_COMM_NULL");
    if (PMPI_Comm_size(comm, &P) != MPI_SUCCESS) throw error(errc::mpi, "alltoallw: MPI_Comm_size failed");
    prepare(P);
  }
  // The caller's types beside the maps, where every part is a map of the caller's
  // own buffer (alltoall_typed.hpp).
  redistribute::detail::typed_parts typed;
  if (!in_place && c.in.staged.empty() && c.out.staged.empty()) typed = {&sp, &recv_parts};
  alltoallw_report rep =
      redistribute::detail::alltoallw_maps(send_buf, c.in.maps, recv, c.out.maps, comm, validate, typed, library);
  for (staged_part& st : c.out.staged) {  // (the library's call wrote the caller's buffer itself)
    if (rep.library) break;
    redistribute::detail::unpack_items(st.bytes.data(), static_cast<int>(st.bytes.size()), st.at, st.count, st.type);
  }
  rep.types_decoded = decoded;
  rep.staged_parts = static_cast<int>(c.in.staged.size() + c.out.staged.size());
  return rep;
}

}  // namespace

alltoallw_report alltoallw(const void* send, const std::vector<datatype_part>& send_parts, void* recv,
                           const std::vector<datatype_part>& recv_parts, MPI_Comm comm, bool validate,
                           std::int64_t send_size, std::int64_t recv_size) {
  return alltoallw_parts(send, send_parts, recv, recv_parts, comm, validate, send_size, recv_size, {});
}

alltoallw_report alltoallw_auto(const void* send, const std::vector<datatype_part>& send_parts, void* recv,
                                const std::vector<datatype_part>& recv_parts, MPI_Comm comm,
                                const std::function<void()>& library) {
  return alltoallw_parts(send, send_parts, recv, recv_parts, comm, false, -1, -1, library);
}

}  // namespace conveyor
