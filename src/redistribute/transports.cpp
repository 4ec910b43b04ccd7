// Executing a Redistribute plan: the five transports (conveyor/redistribute.hpp,
// docs/algorithms.md "Redistribute"), and the MPI objects they create once per
// plan (datatypes, windows).
//   packed:    Irecv per peer; pack per peer + Isend; local pieces copied (and
//              transformed) directly; each package unpacked as it arrives.
//   pipelined: the same with pieces cut into slabs of the outermost packed axis and
//              packages sent in chunks of >= chunk_bytes, so packing the next chunk
//              overlaps sending the previous one; chunks unpacked on arrival.
//   datatype:  one MPI struct type per peer over the source blocks (and, for plain
//              copies, over the destination blocks) built at plan time: no packing
//              in Conveyor, MPI walks the types (the tensor paper's baseline).
//   one_sided: peers on my node: packed straight into their segment of a shared
//              window, synchronized point to point by counters in the segments
//              (no fences); others: pack + MPI_Put between fences; unpack.
//   alltoallv: all packages in one buffer, one MPI_Alltoallv, unpack.
// Bytes on the wire: exactly the off-diagonal of volume(); local pieces never
// touch MPI.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <numeric>
#include <thread>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"
#include "redistribute/plan_impl.hpp"

namespace conveyor::redistribute {

// Posts a message in pieces (runtime/message_pieces.hpp), tags tag_base + piece.
void plan::impl::post(bool receive, char* buf, std::int64_t bytes, int peer, int tag_base, MPI_Comm comm,
                      std::vector<MPI_Request>& reqs, std::vector<int>& owner, int owner_value) {
  conveyor::detail::for_each_piece(static_cast<std::size_t>(bytes), [&](std::size_t off, int n, int part) {
    MPI_Request r;
    if (receive) MPI_Irecv(buf + off, n, MPI_BYTE, peer, tag_base + part, comm, &r);
    else MPI_Isend(buf + off, n, MPI_BYTE, peer, tag_base + part, comm, &r);
    reqs.push_back(r);
    owner.push_back(owner_value);
  });
}

void plan::impl::run_packed() {
  std::vector<MPI_Request> rreq, sreq;
  std::vector<int> rowner, sowner;
  std::vector<int> parts_left(static_cast<std::size_t>(size), 0);
  for (int p : recv_peers) {
    const std::size_t before = rreq.size();
    post(true, recv_buf[static_cast<std::size_t>(p)].data(), recv_bytes[static_cast<std::size_t>(p)], p, 0, comm, rreq,
         rowner, p);
    parts_left[static_cast<std::size_t>(p)] = static_cast<int>(rreq.size() - before);
  }
  for (int p : send_peers) {
    std::int64_t off = 0;
    char* buf = send_buf[static_cast<std::size_t>(p)].data();
    pack_range(p, 0, piece_count(&transform_plan::send, p), buf, off);
    post(false, buf, send_bytes[static_cast<std::size_t>(p)], p, 0, comm, sreq, sowner, p);
  }
  copy_local();
  for (std::size_t done = 0; done < rreq.size(); ++done) {
    int idx = MPI_UNDEFINED;
    conveyor::detail::check_mpi(MPI_Waitany(static_cast<int>(rreq.size()), rreq.data(), &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
    const int p = rowner[static_cast<std::size_t>(idx)];
    if (--parts_left[static_cast<std::size_t>(p)] == 0) {
      std::int64_t off = 0;
      unpack_range(p, 0, piece_count(&transform_plan::recv, p), recv_buf[static_cast<std::size_t>(p)].data(), off);
    }
  }
  conveyor::detail::check_mpi(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

// Chunk boundaries: consecutive pieces (slabs) of >= chunk_bytes, per peer.
std::vector<std::size_t> plan::impl::chunks_of(std::vector<std::vector<piece>> transform_plan::*dir, int peer) const {
  std::vector<std::size_t> bounds{0};
  std::int64_t acc = 0;
  for_pieces(dir, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
    acc += piece_bytes(t, p);
    if (acc >= static_cast<std::int64_t>(options.chunk_bytes)) {
      bounds.push_back(i + 1);
      acc = 0;
    }
  });
  const std::size_t n = piece_count(dir, peer);
  if (bounds.back() != n) bounds.push_back(n);
  return bounds;
}

std::int64_t plan::impl::range_bytes(std::vector<std::vector<piece>> transform_plan::*dir, int peer, std::size_t first,
                                      std::size_t last) const {
  std::int64_t b = 0;
  for_pieces(dir, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
    if (i >= first && i < last) b += piece_bytes(t, p);
  });
  return b;
}

void plan::impl::run_pipelined() {
  struct pending {
    int peer;
    std::size_t chunk;
    std::int64_t offset;
  };
  std::vector<MPI_Request> rreq, sreq;
  std::vector<pending> rinfo;
  for (int p : recv_peers) {
    const auto& bounds = recv_chunks[static_cast<std::size_t>(p)];
    std::int64_t off = 0;
    for (std::size_t c = 0; c + 1 < bounds.size(); ++c) {
      const std::int64_t bytes = range_bytes(&transform_plan::recv, p, bounds[c], bounds[c + 1]);
      MPI_Request r;
      MPI_Irecv(recv_buf[static_cast<std::size_t>(p)].data() + off, static_cast<int>(bytes), MPI_BYTE, p,
                static_cast<int>(c), comm, &r);
      rreq.push_back(r);
      rinfo.push_back({p, c, off});
      off += bytes;
    }
  }
  // Send chunk by chunk, round-robin over peers, so every peer's first chunk leaves early.
  std::vector<std::int64_t> soff(static_cast<std::size_t>(size), 0);
  std::size_t max_chunks = 0;
  for (int p : send_peers) max_chunks = std::max(max_chunks, send_chunks[static_cast<std::size_t>(p)].size() - 1);
  for (std::size_t c = 0; c < max_chunks; ++c) {
    for (int p : send_peers) {
      const auto& bounds = send_chunks[static_cast<std::size_t>(p)];
      if (c + 1 >= bounds.size()) continue;
      char* buf = send_buf[static_cast<std::size_t>(p)].data();
      const std::int64_t start = soff[static_cast<std::size_t>(p)];
      pack_range(p, bounds[c], bounds[c + 1], buf, soff[static_cast<std::size_t>(p)]);
      MPI_Request r;
      MPI_Isend(buf + start, static_cast<int>(soff[static_cast<std::size_t>(p)] - start), MPI_BYTE, p, static_cast<int>(c),
                comm, &r);
      sreq.push_back(r);
    }
  }
  copy_local();
  for (std::size_t done = 0; done < rreq.size(); ++done) {
    int idx = MPI_UNDEFINED;
    conveyor::detail::check_mpi(MPI_Waitany(static_cast<int>(rreq.size()), rreq.data(), &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
    const pending& w = rinfo[static_cast<std::size_t>(idx)];
    const auto& bounds = recv_chunks[static_cast<std::size_t>(w.peer)];
    std::int64_t off = w.offset;
    unpack_range(w.peer, bounds[w.chunk], bounds[w.chunk + 1], recv_buf[static_cast<std::size_t>(w.peer)].data(), off);
  }
  conveyor::detail::check_mpi(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

void plan::impl::run_datatype() {
  std::vector<MPI_Request> reqs;
  std::vector<int> rpeer;
  for (int p : recv_peers) {
    MPI_Request r;
    if (direct_receive) MPI_Irecv(MPI_BOTTOM, 1, recv_types[static_cast<std::size_t>(p)], p, 0, comm, &r);
    else MPI_Irecv(recv_buf[static_cast<std::size_t>(p)].data(), 1, recv_types[static_cast<std::size_t>(p)], p, 0, comm, &r);
    reqs.push_back(r);
    rpeer.push_back(p);
  }
  std::vector<MPI_Request> sreq;
  for (int p : send_peers) {
    MPI_Request r;
    MPI_Isend(MPI_BOTTOM, 1, send_types[static_cast<std::size_t>(p)], p, 0, comm, &r);
    sreq.push_back(r);
  }
  copy_local();
  for (std::size_t done = 0; done < reqs.size(); ++done) {
    int idx = MPI_UNDEFINED;
    conveyor::detail::check_mpi(MPI_Waitany(static_cast<int>(reqs.size()), reqs.data(), &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
    if (!direct_receive) {
      const int p = rpeer[static_cast<std::size_t>(idx)];
      std::int64_t off = 0;
      unpack_range(p, 0, piece_count(&transform_plan::recv, p), recv_buf[static_cast<std::size_t>(p)].data(), off);
    }
  }
  conveyor::detail::check_mpi(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

namespace {

// Waits until a peer's counter reaches `value`, yielding the core (ranks may
// outnumber cores; the peer may need this one to get there).
void wait_for(const std::atomic<std::uint64_t>& counter, std::uint64_t value) {
  while (counter.load(std::memory_order_acquire) < value) std::this_thread::yield();
}

}  // namespace

// Execution e: (1) wait until each node peer I pack for has unpacked execution
// e - 1 (its segment is free again); (2) pack: node peers straight into their
// segments, the others into staging buffers sent by MPI_Put between fences;
// (3) publish "packed e"; (4) my local copies, while peers still pack; (5) unpack
// each node peer's package as soon as it has published "packed e", then the
// MPI_Put window; (6) publish "unpacked e". No rank waits for ranks it exchanges
// nothing with; only the MPI_Put window (peers on other nodes) uses fences.
void plan::impl::run_one_sided() {
  const std::uint64_t e = ++executions;
  if (shm_win != MPI_WIN_NULL) {
    for (int p : send_peers) {
      if (shm_target[static_cast<std::size_t>(p)]) wait_for(flags_of[static_cast<std::size_t>(p)]->unpacked, e - 1);
    }
  }
  if (win != MPI_WIN_NULL) conveyor::detail::check_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
  run_source_order(copies::packing);
  for (int p : send_peers) {
    if (shm_target[static_cast<std::size_t>(p)]) continue;
    char* buf = send_buf[static_cast<std::size_t>(p)].data();
    const std::int64_t bytes = send_bytes[static_cast<std::size_t>(p)];
    conveyor::detail::for_each_piece(static_cast<std::size_t>(bytes), [&](std::size_t o, int n, int) {
      conveyor::detail::check_mpi(MPI_Put(buf + o, n, MPI_BYTE, p, remote_offset[static_cast<std::size_t>(p)] + static_cast<MPI_Aint>(o),
                                          n, MPI_BYTE, win),
                                  "MPI_Put");
    });
  }
  shm_flags* mine = shm_win != MPI_WIN_NULL ? flags_of[static_cast<std::size_t>(rank)] : nullptr;
  if (mine) mine->packed.store(e, std::memory_order_release);
  run_source_order(copies::local);
  if (win != MPI_WIN_NULL) conveyor::detail::check_mpi(MPI_Win_fence(MPI_MODE_NOSUCCEED, win), "MPI_Win_fence");
  const auto unpack = [&](int p) {
    std::int64_t off = 0;
    const char* base = shm_source[static_cast<std::size_t>(p)] ? shm_mine : window_buf.data();
    unpack_range(p, 0, piece_count(&transform_plan::recv, p), base + window_offset_of_peer[static_cast<std::size_t>(p)], off);
  };
  unpack_pending.clear();
  for (int p : recv_peers) {
    if (shm_source[static_cast<std::size_t>(p)]) unpack_pending.push_back(p);
    else unpack(p);
  }
  while (!unpack_pending.empty()) {  // in the order the peers finish packing
    const auto ready = std::find_if(unpack_pending.begin(), unpack_pending.end(), [&](int p) {
      return flags_of[static_cast<std::size_t>(p)]->packed.load(std::memory_order_acquire) >= e;
    });
    if (ready == unpack_pending.end()) {
      std::this_thread::yield();
      continue;
    }
    unpack(*ready);
    unpack_pending.erase(ready);
  }
  if (mine) mine->unpacked.store(e, std::memory_order_release);
}

void plan::impl::run_alltoallv() {
  // Byte counts as int: a package over 2 GiB cannot go through MPI_Alltoallv.
  std::vector<int> scount(static_cast<std::size_t>(size), 0), sdispl(static_cast<std::size_t>(size), 0);
  std::vector<int> rcount(static_cast<std::size_t>(size), 0), rdispl(static_cast<std::size_t>(size), 0);
  std::int64_t stotal = 0, rtotal = 0;
  for (int p = 0; p < size; ++p) {
    const auto k = static_cast<std::size_t>(p);
    const std::int64_t sb = p == rank ? 0 : send_bytes[k], rb = p == rank ? 0 : recv_bytes[k];
    if (stotal + sb > INT32_MAX || rtotal + rb > INT32_MAX) {
      throw error(errc::unsupported, "redistribute: alltoallv transport limited to 2 GiB per rank; use packed");
    }
    scount[k] = static_cast<int>(sb);
    sdispl[k] = static_cast<int>(stotal);
    rcount[k] = static_cast<int>(rb);
    rdispl[k] = static_cast<int>(rtotal);
    stotal += sb;
    rtotal += rb;
  }
  conveyor::detail::byte_buffer& sbuf = send_buf[0];
  conveyor::detail::byte_buffer& rbuf = recv_buf[0];
  run_source_order();
  conveyor::detail::check_mpi(MPI_Alltoallv(sbuf.data(), scount.data(), sdispl.data(), MPI_BYTE, rbuf.data(), rcount.data(),
                                  rdispl.data(), MPI_BYTE, comm),
                    "MPI_Alltoallv");
  for (int p : recv_peers) {
    std::int64_t off = rdispl[static_cast<std::size_t>(p)];
    unpack_range(p, 0, piece_count(&transform_plan::recv, p), rbuf.data(), off);
  }
}

// The elements of one piece, in the packed order (`order`), as an MPI
// type at absolute addresses: nested hvectors from the innermost dimension out.
MPI_Datatype plan::impl::piece_type(const transform_plan& t, const piece& p, bool dst_side, const axis_order& order) const {
  const MPI_Datatype elem = mpi_datatype(t.type);
  coords stride{};
  char* corner;
  if (!dst_side) {
    const block_storage s = t.src->storage(p.src_block);
    stride = s.strides;
    corner = src_corner(t, p);
  } else {
    const block_storage s = t.dst->storage(p.dst_block);
    for (int k = 0; k < t.ndim; ++k) stride[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = s.strides[static_cast<std::size_t>(k)];
    corner = dst_corner(t, p);
  }
  MPI_Datatype type = elem, next;
  bool owned = false;
  for (int j = t.ndim; j-- > 0;) {  // innermost packed axis first
    const auto k = static_cast<std::size_t>(order[static_cast<std::size_t>(j)]);
    MPI_Type_create_hvector(static_cast<int>(p.ext[k]), 1, stride[k] * static_cast<MPI_Aint>(t.esize), type, &next);
    if (owned) MPI_Type_free(&type);
    type = next;
    owned = true;
  }
  MPI_Aint addr;
  MPI_Get_address(corner, &addr);
  MPI_Datatype placed;
  int one = 1;
  MPI_Type_create_struct(1, &one, &addr, &type, &placed);
  MPI_Type_free(&type);
  return placed;
}

void plan::impl::build_datatypes() {
  send_types.assign(static_cast<std::size_t>(size), MPI_DATATYPE_NULL);
  recv_types.assign(static_cast<std::size_t>(size), MPI_DATATYPE_NULL);
  direct_receive = std::all_of(ts.begin(), ts.end(), [](const transform_plan& t) { return t.scale.plain(); });
  const auto combine = [&](std::vector<std::vector<piece>> transform_plan::*dir, int p, bool dst_side) {
    std::vector<MPI_Datatype> parts;
    for_pieces(dir, p, [&](const transform_plan& t, const piece& pc, std::size_t) {
      parts.push_back(piece_type(t, pc, dst_side, dst_side ? t.peer_order[static_cast<std::size_t>(p)] : t.order));
    });
    std::vector<int> ones(parts.size(), 1);
    std::vector<MPI_Aint> zero(parts.size(), 0);
    MPI_Datatype all;
    MPI_Type_create_struct(static_cast<int>(parts.size()), ones.data(), zero.data(), parts.data(), &all);
    MPI_Type_commit(&all);
    for (auto& x : parts) MPI_Type_free(&x);
    return all;
  };
  for (int p : send_peers) send_types[static_cast<std::size_t>(p)] = combine(&transform_plan::send, p, false);
  for (int p : recv_peers) {
    if (direct_receive) {
      recv_types[static_cast<std::size_t>(p)] = combine(&transform_plan::recv, p, true);
    } else {
      MPI_Type_contiguous(static_cast<int>(recv_bytes[static_cast<std::size_t>(p)]), MPI_BYTE, &recv_types[static_cast<std::size_t>(p)]);
      MPI_Type_commit(&recv_types[static_cast<std::size_t>(p)]);
    }
  }
}

// node_color: my node's number if the caller set ranks per node, else -1 (the
// shared-memory domains MPI reports).
void plan::impl::build_window(int node_color) {
  using conveyor::detail::check_mpi;
  const auto sz = static_cast<std::size_t>(size);
  // My node's ranks, and each plan rank's number in the node communicator.
  if (node_color >= 0) check_mpi(MPI_Comm_split(comm, node_color, rank, &node_comm), "MPI_Comm_split");
  else check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm), "MPI_Comm_split_type");
  MPI_Comm_set_errhandler(node_comm, MPI_ERRORS_RETURN);
  std::vector<int> node_rank(sz, MPI_UNDEFINED), all(sz);
  std::iota(all.begin(), all.end(), 0);
  MPI_Group group, node_group;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(node_comm, &node_group);
  MPI_Group_translate_ranks(group, size, all.data(), node_group, node_rank.data());
  MPI_Group_free(&group);
  MPI_Group_free(&node_group);

  // Where each peer's package lands: node peers in my shared segment, the others
  // in my MPI_Put window; every sender learns its offsets with one MPI_Alltoall.
  std::int64_t shm_total = 0, put_total = 0;
  const auto place = [&] {
    shm_total = put_total = 0;
    window_offset_of_peer.assign(sz, 0);
    shm_source.assign(sz, 0);
    for (int p : recv_peers) {
      const auto k = static_cast<std::size_t>(p);
      shm_source[k] = node_rank[k] != MPI_UNDEFINED;
      std::int64_t& total = shm_source[k] ? shm_total : put_total;
      window_offset_of_peer[k] = total;
      total += recv_bytes[k];
    }
    remote_offset.assign(sz, 0);
    check_mpi(MPI_Alltoall(window_offset_of_peer.data(), 1, MPI_INT64_T, remote_offset.data(), 1, MPI_INT64_T, comm), "MPI_Alltoall");
  };
  place();
  // The shared window; if any node cannot have one (MPI_Win_allocate_shared fails,
  // e.g. Open MPI with its osc/sm component excluded), every package goes by MPI_Put.
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each segment in its owner's NUMA domain
  // My segment: my counters at its first 64-byte boundary (MPIs do not promise
  // aligned segments: Open MPI's osc/sm may start one 8 bytes past a boundary),
  // then the packages.
  constexpr std::uintptr_t kAlign = alignof(shm_flags);
  const auto flags_in = [&](char* base) {
    return reinterpret_cast<shm_flags*>((reinterpret_cast<std::uintptr_t>(base) + kAlign - 1) / kAlign * kAlign);
  };
  const std::int64_t segment = static_cast<std::int64_t>(kAlign) + kFlagsBytes + shm_total;
  char* segment_base = nullptr;
  int ok = MPI_Win_allocate_shared(segment, 1, info, node_comm, &segment_base, &shm_win) == MPI_SUCCESS;
  MPI_Info_free(&info);
  flags_of.assign(sz, nullptr);
  for (std::size_t k = 0; ok && k < sz; ++k) {
    if (node_rank[k] == MPI_UNDEFINED) continue;
    MPI_Aint bytes;
    int disp;
    char* base = nullptr;
    ok = MPI_Win_shared_query(shm_win, node_rank[k], &bytes, &disp, &base) == MPI_SUCCESS;
    flags_of[k] = flags_in(base);
  }
  if (ok) {
    new (flags_in(segment_base)) shm_flags();
    shm_mine = reinterpret_cast<char*>(flags_in(segment_base)) + kFlagsBytes;
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");  // (also: counters set)
  if (!ok) {
    if (shm_win != MPI_WIN_NULL) MPI_Win_free(&shm_win);
    shm_win = MPI_WIN_NULL;
    shm_mine = nullptr;
    flags_of.assign(sz, nullptr);
    node_rank.assign(sz, MPI_UNDEFINED);
    place();
  }
  shm_target.assign(sz, nullptr);
  int off_node = 0;
  for (int p : send_peers) {
    const auto k = static_cast<std::size_t>(p);
    if (node_rank[k] == MPI_UNDEFINED) {
      off_node = 1;
      send_buf[k].resize(static_cast<std::size_t>(send_bytes[k]));  // staged for MPI_Put
      continue;
    }
    shm_target[k] = reinterpret_cast<char*>(flags_of[k]) + kFlagsBytes + remote_offset[k];  // packed in place: no staging buffer
  }
  std::vector<char*> package(sz, nullptr);
  for (int p : send_peers) {
    const auto k = static_cast<std::size_t>(p);
    package[k] = shm_target[k] ? shm_target[k] : send_buf[k].data();
  }
  build_source_order(package, /*local_last=*/true);
  for (int p : recv_peers) off_node |= shm_source[static_cast<std::size_t>(p)] ? 0 : 1;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &off_node, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (!off_node) return;  // every package moves through shared memory
  window_buf.resize(static_cast<std::size_t>(std::max<std::int64_t>(put_total, 1)));
  // Open MPI 4.1's osc/rdma cannot create windows over btl/vader without a
  // single-copy mechanism (open-mpi/ompi#9871): say what to do instead of aborting.
  if (MPI_Win_create(window_buf.data(), static_cast<MPI_Aint>(window_buf.size()), 1, MPI_INFO_NULL, comm, &win) != MPI_SUCCESS) {
    win = MPI_WIN_NULL;
    throw error(errc::mpi, "redistribute: MPI_Win_create failed, so the one_sided transport is unavailable with this MPI "
                           "setup (Open MPI 4.1: try OMPI_MCA_osc=sm,pt2pt or ucx); other transports work");
  }
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
}

void plan::impl::release_windows() {
  if (win != MPI_WIN_NULL) MPI_Win_free(&win);
  if (shm_win != MPI_WIN_NULL) MPI_Win_free(&shm_win);
  if (node_comm != MPI_COMM_NULL) MPI_Comm_free(&node_comm);
  shm_mine = nullptr;
  flags_of.clear();
  shm_target.clear();
  shm_source.clear();
  window_buf.reset();
  source_order.clear();
  row_groups.clear();
}

}  // namespace conveyor::redistribute
