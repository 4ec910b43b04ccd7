// Planning and executing redistributions (conveyor/redistribute.hpp).
//
// Plan (once): for each transform, every rank walks its own source blocks and,
// per dimension, the range of destination blocks they overlap (binary search or
// arithmetic on the split points: the grid overlay restricted to what this rank
// holds), producing pieces = boxes in source coordinates, grouped by destination
// owner; symmetrically it walks its destination blocks to know what it receives.
// Both sides sort the pieces of a peer by their global corner, which fixes the
// byte order of the package without exchanging it. Cost: O(overlapping block
// pairs of this rank) plus one MPI_Allgather of P int64 (the volume matrix).
//
// Execute (many times), per transport:
//   packed:    Irecv per peer; pack per peer + Isend; local pieces copied (and
//              transformed) directly; each package unpacked as it arrives.
//   pipelined: the same with pieces cut into slabs of the outermost dimension and
//              packages sent in chunks of >= chunk_bytes, so packing the next chunk
//              overlaps sending the previous one; chunks unpacked on arrival.
//   datatype:  one MPI struct type per peer over the source blocks (and, for plain
//              copies, over the destination blocks) built at plan time: no packing
//              in Conveyor, MPI walks the types (the tensor paper's baseline).
//   one_sided: windows created once per plan over the receive buffers (offsets
//              exchanged at plan time). Peers on my node: a shared-memory window
//              (MPI_Win_allocate_shared); I pack straight into the peer's segment,
//              so a byte is copied twice (pack, unpack) instead of three times.
//              Other peers: pack + MPI_Put. Fence, unpack.
//   alltoallv: all packages in one buffer, one MPI_Alltoallv, unpack.
// Bytes on the wire: exactly the off-diagonal of volume(); local pieces never
// touch MPI.
#include <mpi.h>

#include <algorithm>
#include <map>
#include <cstring>
#include <numeric>
#include <string>

#include "conveyor/mpi.hpp"
#include "conveyor/redistribute.hpp"
#include "collectives/context.hpp"
#include "core/agree.hpp"
#include "core/names.hpp"
#include "redistribute/box_copy.hpp"
#include "redistribute/choose.hpp"
#include "redistribute/relabel.hpp"

namespace conveyor::redistribute {

namespace {

constexpr std::array<std::string_view, 6> kTransportNames = {"auto", "datatype", "packed", "pipelined", "one_sided",
                                                              "alltoallv"};
constexpr std::int64_t kMaxMessage = std::int64_t{1} << 30;  // bytes per MPI message

using coords = std::array<std::int64_t, max_dims>;
using axis_order = std::array<int, max_dims>;

struct piece {
  coords lo{}, ext{};  // box in source coordinates
  block_index src_block{}, dst_block{};
};

std::int64_t volume_of(const coords& ext, int ndim) {
  std::int64_t v = 1;
  for (int d = 0; d < ndim; ++d) v *= ext[static_cast<std::size_t>(d)];
  return v;
}

bool corner_less(const piece& a, const piece& b) { return a.lo < b.lo; }

}  // namespace

std::string_view transport_name(transport t) { return conveyor::detail::name_of(kTransportNames, t); }

transport parse_transport(std::string_view name) {
  return conveyor::detail::value_of<transport>(kTransportNames, name, "transport");
}

// ---------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------
struct transform_plan {
  const layout* src = nullptr;
  const layout* dst = nullptr;
  int ndim = 1;
  std::array<int, max_dims> perm{};  // dst axis k = src axis perm[k]
  std::size_t esize = 1;
  dtype type = dtype::float64;
  detail::scaling scale;
  std::vector<std::vector<piece>> send, recv;  // per peer rank
  std::vector<piece> self;
  // Element order inside a packed piece, source axes from outermost to innermost:
  // mine follows my source storage (largest stride outermost), so packing streams;
  // peer_order[q] is rank q's, which its packages to me follow.
  axis_order order{};
  std::vector<axis_order> peer_order;
};

struct plan::impl {
  MPI_Comm comm = MPI_COMM_NULL;  // private duplicate, created once
  int rank = 0, size = 1;
  plan_options options;
  transport method = transport::packed;
  std::vector<transform_plan> ts;
  std::vector<std::int64_t> send_bytes, recv_bytes;  // per peer (all transforms)
  std::vector<int> send_peers, recv_peers;            // peers with data, in rank order
  std::vector<std::vector<char>> send_buf, recv_buf;  // per peer, reused
  std::vector<std::int64_t> volume;                   // P x P
  std::vector<int> sigma;
  std::int64_t relabeled_remote = 0;
  // datatype transport
  std::vector<MPI_Datatype> send_types, recv_types;   // per peer (MPI_DATATYPE_NULL if none)
  bool direct_receive = false;
  // one_sided
  MPI_Win win = MPI_WIN_NULL;                         // MPI_Put window (peers off my node)
  std::vector<char> window_buf;
  MPI_Comm node_comm = MPI_COMM_NULL;                 // ranks sharing my memory
  MPI_Win shm_win = MPI_WIN_NULL;                     // shared window (peers on my node)
  char* shm_mine = nullptr;                           // my segment of it
  std::vector<char*> shm_target;                      // per peer: where I pack its package (null: MPI_Put)
  std::vector<char> shm_source;                       // per peer: its package is in my shared segment
  std::vector<std::int64_t> window_offset_of_peer;    // where peer p's data lands in my window
  std::vector<std::int64_t> remote_offset;            // where my data lands in peer p's window
  // pipelined: chunk boundaries (piece index ranges) per peer, both directions
  std::vector<std::vector<std::size_t>> send_chunks, recv_chunks;
  // one_sided and alltoallv: every pack and local copy of this rank as slabs in
  // source-address order (built once; see build_source_order).
  struct copy_op {
    const char* src;
    char* dst;
    detail::box_copy copy;
    const transform_plan* t;
    bool local;  // a local copy (transformed), else packing (plain)
  };
  std::vector<copy_op> source_order;
  std::vector<detail::row_group> row_groups;  // run before source_order
  std::array<double, 6> predicted{};          // auto: the model's seconds per transport (slowest rank)

  ~impl() {
    for (auto& t : send_types) if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    for (auto& t : recv_types) if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    release_windows();
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }

  // --- addressing -------------------------------------------------------------
  static char* element_address(const layout& l, const block_index& b, const coords& at_global, std::size_t esize) {
    const block_storage s = l.storage(b);
    std::int64_t off = s.offset;
    for (int d = 0; d < l.ndim(); ++d) {
      const auto k = static_cast<std::size_t>(d);
      off += (at_global[k] - l.splits(d).start(b[k])) * s.strides[k];
    }
    return static_cast<char*>(s.data) + off * static_cast<std::int64_t>(esize);
  }

  // Destination coordinates of a source-coordinate corner.
  static coords to_dst(const transform_plan& t, const coords& src) {
    coords out{};
    for (int k = 0; k < t.ndim; ++k) out[static_cast<std::size_t>(k)] = src[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])];
    return out;
  }

  // Element strides of a piece packed contiguously in `order` (per source axis).
  static coords packed_strides(const piece& p, const axis_order& order, int ndim) {
    coords st{};
    std::int64_t s = 1;
    for (int k = ndim; k-- > 0;) {
      const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
      st[d] = s;
      s *= p.ext[d];
    }
    return st;
  }

  // The copy from a packed piece (packed in `order`) into the destination block.
  static detail::box_copy unpack_copy(const transform_plan& t, const piece& p, const axis_order& order) {
    detail::box_copy c;
    c.ndim = t.ndim;
    const coords buf_stride = packed_strides(p, order, t.ndim);
    const block_storage ds = t.dst->storage(p.dst_block);
    for (int k = 0; k < t.ndim; ++k) {
      const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
      c.extent[kk] = p.ext[d];
      c.src_stride[kk] = buf_stride[d];
      c.dst_stride[kk] = ds.strides[kk];
    }
    return c;
  }

  static detail::box_copy pack_copy(const transform_plan& t, const piece& p) {
    detail::box_copy c;
    c.ndim = t.ndim;
    const block_storage ss = t.src->storage(p.src_block);
    c.dst_stride = packed_strides(p, t.order, t.ndim);
    for (int d = 0; d < t.ndim; ++d) {
      const auto k = static_cast<std::size_t>(d);
      c.extent[k] = p.ext[k];
      c.src_stride[k] = ss.strides[k];
    }
    return c;
  }

  static detail::box_copy local_copy(const transform_plan& t, const piece& p) {
    detail::box_copy c;
    c.ndim = t.ndim;
    const block_storage ss = t.src->storage(p.src_block), ds = t.dst->storage(p.dst_block);
    for (int k = 0; k < t.ndim; ++k) {
      const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
      c.extent[kk] = p.ext[d];
      c.src_stride[kk] = ss.strides[d];
      c.dst_stride[kk] = ds.strides[kk];
    }
    return c;
  }

  char* src_corner(const transform_plan& t, const piece& p) const {
    return element_address(*t.src, p.src_block, p.lo, t.esize);
  }
  char* dst_corner(const transform_plan& t, const piece& p) const {
    return element_address(*t.dst, p.dst_block, to_dst(t, p.lo), t.esize);
  }

  // --- packing ------------------------------------------------------------------
  // Packs pieces [first, last) of every transform for `peer` (pieces numbered across
  // transforms in order) at `out`; returns the bytes written.
  template <class Fn>
  void for_pieces(std::vector<std::vector<piece>> transform_plan::*dir, int peer, Fn&& fn) const {
    std::size_t index = 0;
    for (const auto& t : ts) {
      for (const piece& p : (t.*dir)[static_cast<std::size_t>(peer)]) fn(t, p, index++);
    }
  }

  std::int64_t piece_bytes(const transform_plan& t, const piece& p) const {
    return volume_of(p.ext, t.ndim) * static_cast<std::int64_t>(t.esize);
  }

  void pack_range(int peer, std::size_t first, std::size_t last, char* base, std::int64_t& offset) const {
    for_pieces(&transform_plan::send, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
      if (i < first || i >= last) return;
      detail::apply(t.type, pack_copy(t, p), src_corner(t, p), base + offset, detail::scaling{});
      offset += piece_bytes(t, p);
    });
  }

  void unpack_range(int peer, std::size_t first, std::size_t last, const char* base, std::int64_t& offset) const {
    for_pieces(&transform_plan::recv, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
      if (i < first || i >= last) return;
      detail::apply(t.type, unpack_copy(t, p, t.peer_order[static_cast<std::size_t>(peer)]), base + offset, dst_corner(t, p), t.scale);
      offset += piece_bytes(t, p);
    });
  }

  std::size_t piece_count(std::vector<std::vector<piece>> transform_plan::*dir, int peer) const {
    std::size_t n = 0;
    for (const auto& t : ts) n += (t.*dir)[static_cast<std::size_t>(peer)].size();
    return n;
  }

  void copy_local() const {
    for (const auto& t : ts) {
      for (const piece& p : t.self) detail::apply(t.type, local_copy(t, p), src_corner(t, p), dst_corner(t, p), t.scale);
    }
  }

  // --- transports -----------------------------------------------------------------
  // Splits [0, bytes) of a message into <= kMaxMessage parts.
  static void post(bool receive, char* buf, std::int64_t bytes, int peer, int tag_base, MPI_Comm comm,
                   std::vector<MPI_Request>& reqs, std::vector<int>& owner, int owner_value) {
    int part = 0;
    for (std::int64_t off = 0; off < bytes; off += kMaxMessage, ++part) {
      const int n = static_cast<int>(std::min(kMaxMessage, bytes - off));
      MPI_Request r;
      if (receive) MPI_Irecv(buf + off, n, MPI_BYTE, peer, tag_base + part, comm, &r);
      else MPI_Isend(buf + off, n, MPI_BYTE, peer, tag_base + part, comm, &r);
      reqs.push_back(r);
      owner.push_back(owner_value);
    }
  }

  void run_packed() {
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
  std::vector<std::size_t> chunks_of(std::vector<std::vector<piece>> transform_plan::*dir, int peer) const {
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

  std::int64_t range_bytes(std::vector<std::vector<piece>> transform_plan::*dir, int peer, std::size_t first,
                           std::size_t last) const {
    std::int64_t b = 0;
    for_pieces(dir, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
      if (i >= first && i < last) b += piece_bytes(t, p);
    });
    return b;
  }

  void run_pipelined() {
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

  void run_datatype() {
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

  void run_one_sided() {
    // Fences with assert 0 on both ends: the opening one orders my peers' unpacking
    // of the previous execution before my writes into their segments.
    if (shm_win != MPI_WIN_NULL) conveyor::detail::check_mpi(MPI_Win_fence(0, shm_win), "MPI_Win_fence");
    if (win != MPI_WIN_NULL) conveyor::detail::check_mpi(MPI_Win_fence(0, win), "MPI_Win_fence");
    run_source_order();
    for (int p : send_peers) {
      if (shm_target[static_cast<std::size_t>(p)]) continue;
      char* buf = send_buf[static_cast<std::size_t>(p)].data();
      const std::int64_t bytes = send_bytes[static_cast<std::size_t>(p)];
      for (std::int64_t o = 0; o < bytes; o += kMaxMessage) {
        const int n = static_cast<int>(std::min(kMaxMessage, bytes - o));
        conveyor::detail::check_mpi(MPI_Put(buf + o, n, MPI_BYTE, p, remote_offset[static_cast<std::size_t>(p)] + o, n, MPI_BYTE, win),
                          "MPI_Put");
      }
    }
    if (win != MPI_WIN_NULL) conveyor::detail::check_mpi(MPI_Win_fence(MPI_MODE_NOSUCCEED, win), "MPI_Win_fence");
    if (shm_win != MPI_WIN_NULL) conveyor::detail::check_mpi(MPI_Win_fence(0, shm_win), "MPI_Win_fence");
    for (int p : recv_peers) {
      std::int64_t off = 0;
      const char* base = shm_source[static_cast<std::size_t>(p)] ? shm_mine : window_buf.data();
      unpack_range(p, 0, piece_count(&transform_plan::recv, p), base + window_offset_of_peer[static_cast<std::size_t>(p)], off);
    }
  }

  void run_source_order() const {
    for (const auto& g : row_groups) detail::apply(g);
    for (const copy_op& op : source_order) {
      detail::apply(op.t->type, op.copy, op.src, op.dst, op.local ? op.t->scale : detail::scaling{});
    }
  }

  void run_alltoallv() {
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
    std::vector<char>& sbuf = send_buf[0];
    std::vector<char>& rbuf = recv_buf[0];
    run_source_order();
    conveyor::detail::check_mpi(MPI_Alltoallv(sbuf.data(), scount.data(), sdispl.data(), MPI_BYTE, rbuf.data(), rcount.data(),
                                    rdispl.data(), MPI_BYTE, comm),
                      "MPI_Alltoallv");
    for (int p : recv_peers) {
      std::int64_t off = rdispl[static_cast<std::size_t>(p)];
      unpack_range(p, 0, piece_count(&transform_plan::recv, p), rbuf.data(), off);
    }
  }

  // --- plan-time construction ----------------------------------------------------------
  void enumerate(transform_plan& t);
  void cut_for_pipelining(transform_plan& t);
  void count_bytes();
  void choose_transport(MPI_Comm user_comm, int ranks_per_node);
  void release_windows();
  void build_buffers();
  void build_datatypes();
  void build_window(int node_color);
  void build_source_order(const std::vector<char*>& package_of_peer);
  MPI_Datatype piece_type(const transform_plan& t, const piece& p, bool dst_side, const axis_order& order) const;
  void agree_orders();
};

namespace {

// Odometer over the per-dimension block ranges [first[k], last[k]].
template <class Fn>
void for_each_block(int ndim, const coords& first, const coords& last, Fn&& fn) {
  block_index b{};
  for (int d = 0; d < ndim; ++d) b[static_cast<std::size_t>(d)] = first[static_cast<std::size_t>(d)];
  for (;;) {
    fn(b);
    int d = ndim - 1;
    while (d >= 0) {
      const auto k = static_cast<std::size_t>(d);
      if (++b[k] <= last[k]) break;
      b[k] = first[k];
      --d;
    }
    if (d < 0) return;
  }
}

}  // namespace

void plan::impl::enumerate(transform_plan& t) {
  const layout& S = *t.src;
  const layout& D = *t.dst;
  const int n = t.ndim;
  t.send.assign(static_cast<std::size_t>(size), {});
  t.recv.assign(static_cast<std::size_t>(size), {});
  // inv[d]: the dst axis holding src axis d.
  std::array<int, max_dims> inv{};
  for (int k = 0; k < n; ++k) inv[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = k;

  // Sending side: my source blocks x the destination blocks they overlap.
  for (const block_index& bs : S.blocks_of(rank)) {
    coords lo{}, hi{}, first{}, last{};
    for (int d = 0; d < n; ++d) {
      const auto k = static_cast<std::size_t>(d);
      lo[k] = S.splits(d).start(bs[k]);
      hi[k] = S.splits(d).start(bs[k] + 1);
    }
    for (int k = 0; k < n; ++k) {  // dst axis k covers src axis perm[k]
      const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
      first[kk] = D.splits(k).block_of(lo[d]);
      last[kk] = D.splits(k).block_of(hi[d] - 1);
    }
    for_each_block(n, first, last, [&](const block_index& bd) {
      piece p;
      p.src_block = bs;
      p.dst_block = bd;
      for (int k = 0; k < n; ++k) {
        const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
        const std::int64_t a = std::max(lo[d], D.splits(k).start(bd[kk]));
        const std::int64_t b = std::min(hi[d], D.splits(k).start(bd[kk] + 1));
        p.lo[d] = a;
        p.ext[d] = b - a;
      }
      const int owner = D.owner(bd);
      if (owner == rank) t.self.push_back(p);
      else t.send[static_cast<std::size_t>(owner)].push_back(p);
    });
  }
  // Receiving side: my destination blocks x the source blocks they overlap.
  for (const block_index& bd : D.blocks_of(rank)) {
    coords lo{}, hi{}, first{}, last{};
    for (int k = 0; k < n; ++k) {
      const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
      lo[d] = D.splits(k).start(bd[kk]);
      hi[d] = D.splits(k).start(bd[kk] + 1);
    }
    for (int d = 0; d < n; ++d) {
      const auto k = static_cast<std::size_t>(d);
      first[k] = S.splits(d).block_of(lo[k]);
      last[k] = S.splits(d).block_of(hi[k] - 1);
    }
    for_each_block(n, first, last, [&](const block_index& bs) {
      const int owner = S.owner(bs);
      if (owner == rank) return;  // counted on the sending side
      piece p;
      p.src_block = bs;
      p.dst_block = bd;
      for (int d = 0; d < n; ++d) {
        const auto k = static_cast<std::size_t>(d);
        const std::int64_t a = std::max(lo[k], S.splits(d).start(bs[k]));
        const std::int64_t b = std::min(hi[k], S.splits(d).start(bs[k] + 1));
        p.lo[k] = a;
        p.ext[k] = b - a;
      }
      t.recv[static_cast<std::size_t>(owner)].push_back(p);
    });
  }
  for (auto& v : t.send) std::sort(v.begin(), v.end(), corner_less);
  for (auto& v : t.recv) std::sort(v.begin(), v.end(), corner_less);

}

void plan::impl::cut_for_pipelining(transform_plan& t) {
  // Pipelined: cut pieces into slabs along the outermost packed axis (the sender's
  // order) so no slab exceeds chunk_bytes; the packed byte order is unchanged by the cut.
  const int n = t.ndim;
  const auto cut = [&](std::vector<piece>& v, const axis_order& order) {
    const auto a = static_cast<std::size_t>(order[0]);
    std::vector<piece> out;
    for (const piece& p : v) {
      const std::int64_t row = volume_of(p.ext, n) / std::max<std::int64_t>(p.ext[a], 1) * static_cast<std::int64_t>(t.esize);
      const std::int64_t rows_per = std::max<std::int64_t>(1, static_cast<std::int64_t>(options.chunk_bytes) / std::max<std::int64_t>(row, 1));
      for (std::int64_t r = 0; r < p.ext[a]; r += rows_per) {
        piece s = p;
        s.lo[a] = p.lo[a] + r;
        s.ext[a] = std::min(rows_per, p.ext[a] - r);
        out.push_back(s);
      }
    }
    v = std::move(out);
  };
  for (auto& v : t.send) cut(v, t.order);
  for (std::size_t q = 0; q < t.recv.size(); ++q) cut(t.recv[q], t.peer_order[q]);
}

// Every rank's packing order of every transform (one MPI_Allgather): mine from my
// first source block's strides, largest outermost (ties: the lower axis outside).
void plan::impl::agree_orders() {
  const std::size_t nt = ts.size();
  std::vector<std::int64_t> mine(nt, 0), all(nt * static_cast<std::size_t>(size), 0);
  for (std::size_t i = 0; i < nt; ++i) {
    transform_plan& t = ts[i];
    std::iota(t.order.begin(), t.order.begin() + t.ndim, 0);
    const std::vector<block_index> blocks = t.src->blocks_of(rank);
    if (!blocks.empty()) {
      const block_storage s = t.src->storage(blocks.front());
      std::stable_sort(t.order.begin(), t.order.begin() + t.ndim, [&](int x, int y) {
        return std::abs(s.strides[static_cast<std::size_t>(x)]) > std::abs(s.strides[static_cast<std::size_t>(y)]);
      });
    }
    for (int k = 0; k < t.ndim; ++k) mine[i] |= std::int64_t{t.order[static_cast<std::size_t>(k)]} << (4 * k);
  }
  conveyor::detail::check_mpi(MPI_Allgather(mine.data(), static_cast<int>(nt), MPI_INT64_T, all.data(), static_cast<int>(nt), MPI_INT64_T, comm),
                              "MPI_Allgather");
  for (std::size_t i = 0; i < nt; ++i) {
    transform_plan& t = ts[i];
    t.peer_order.assign(static_cast<std::size_t>(size), axis_order{});
    for (int q = 0; q < size; ++q) {
      const std::int64_t code = all[static_cast<std::size_t>(q) * nt + i];
      for (int k = 0; k < t.ndim; ++k) t.peer_order[static_cast<std::size_t>(q)][static_cast<std::size_t>(k)] = static_cast<int>((code >> (4 * k)) & 15);
    }
  }
}

// auto: the cheapest transport for the slowest rank under the cost model, the
// same on every rank (one MPI_Allreduce of the predictions).
void plan::impl::choose_transport(MPI_Comm user_comm, int ranks_per_node) {
  const conveyor::detail::node_layout& nodes = conveyor::detail::context_for(user_comm).layout(ranks_per_node);
  const int my_node = nodes.node_of[static_cast<std::size_t>(rank)];
  detail::traffic t;
  t.ranks = size;
  t.node_ranks = static_cast<int>(nodes.members[static_cast<std::size_t>(my_node)].size());
  t.chunk_bytes = static_cast<std::int64_t>(options.chunk_bytes);
  for (int p : send_peers) {
    const bool same = nodes.node_of[static_cast<std::size_t>(p)] == my_node;
    (same ? t.sent_intra : t.sent_inter) += send_bytes[static_cast<std::size_t>(p)];
    ++(same ? t.peers_intra : t.peers_inter);
  }
  for (int p : recv_peers) t.received += recv_bytes[static_cast<std::size_t>(p)];
  t.local = volume[static_cast<std::size_t>(rank) * static_cast<std::size_t>(size) + static_cast<std::size_t>(rank)];
  predicted = detail::predict_transports(t, current_cost_model());
  conveyor::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, predicted.data(), static_cast<int>(predicted.size()), MPI_DOUBLE, MPI_MAX, comm),
                              "MPI_Allreduce");
  method = detail::cheapest(predicted);
}

void plan::impl::release_windows() {
  if (win != MPI_WIN_NULL) MPI_Win_free(&win);
  if (shm_win != MPI_WIN_NULL) MPI_Win_free(&shm_win);
  if (node_comm != MPI_COMM_NULL) MPI_Comm_free(&node_comm);
  shm_mine = nullptr;
  shm_target.clear();
  shm_source.clear();
  window_buf = {};
  source_order.clear();
  row_groups.clear();
}

// Bytes per peer, the peers, and the volume matrix (collective).
void plan::impl::count_bytes() {
  send_peers.clear();
  recv_peers.clear();
  send_bytes.assign(static_cast<std::size_t>(size), 0);
  recv_bytes.assign(static_cast<std::size_t>(size), 0);
  std::int64_t self_bytes = 0;
  for (const auto& t : ts) {
    for (int p = 0; p < size; ++p) {
      for (const piece& pc : t.send[static_cast<std::size_t>(p)]) send_bytes[static_cast<std::size_t>(p)] += piece_bytes(t, pc);
      for (const piece& pc : t.recv[static_cast<std::size_t>(p)]) recv_bytes[static_cast<std::size_t>(p)] += piece_bytes(t, pc);
    }
    for (const piece& pc : t.self) self_bytes += piece_bytes(t, pc);
  }
  for (int p = 0; p < size; ++p) {
    if (send_bytes[static_cast<std::size_t>(p)] > 0) send_peers.push_back(p);
    if (recv_bytes[static_cast<std::size_t>(p)] > 0) recv_peers.push_back(p);
  }
  // The volume matrix: row i = what rank i sends to each rank (its own entry: local copies).
  std::vector<std::int64_t> row(send_bytes);
  row[static_cast<std::size_t>(rank)] = self_bytes;
  volume.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0);
  conveyor::detail::check_mpi(MPI_Allgather(row.data(), size, MPI_INT64_T, volume.data(), size, MPI_INT64_T, comm), "MPI_Allgather");
}

// The buffers the chosen transport reuses on every execution.
void plan::impl::build_buffers() {
  send_buf.assign(static_cast<std::size_t>(size), {});
  recv_buf.assign(static_cast<std::size_t>(size), {});
  if (method == transport::alltoallv) {
    send_buf[0].resize(static_cast<std::size_t>(std::accumulate(send_bytes.begin(), send_bytes.end(), std::int64_t{0})));
    recv_buf[0].resize(static_cast<std::size_t>(std::accumulate(recv_bytes.begin(), recv_bytes.end(), std::int64_t{0})));
    std::vector<char*> package(static_cast<std::size_t>(size), nullptr);  // packages back to back, in rank order
    std::int64_t at = 0;
    for (int p : send_peers) {
      package[static_cast<std::size_t>(p)] = send_buf[0].data() + at;
      at += send_bytes[static_cast<std::size_t>(p)];
    }
    build_source_order(package);
    return;
  }
  for (int p : send_peers) {
    // (one_sided stages only packages for other nodes: build_window allocates those.)
    if (method != transport::datatype && method != transport::one_sided) send_buf[static_cast<std::size_t>(p)].resize(static_cast<std::size_t>(send_bytes[static_cast<std::size_t>(p)]));
  }
  for (int p : recv_peers) {
    if (method != transport::one_sided) recv_buf[static_cast<std::size_t>(p)].resize(static_cast<std::size_t>(recv_bytes[static_cast<std::size_t>(p)]));
  }
  if (method == transport::pipelined) {
    send_chunks.assign(static_cast<std::size_t>(size), {});
    recv_chunks.assign(static_cast<std::size_t>(size), {});
    for (int p : send_peers) send_chunks[static_cast<std::size_t>(p)] = chunks_of(&transform_plan::send, p);
    for (int p : recv_peers) recv_chunks[static_cast<std::size_t>(p)] = chunks_of(&transform_plan::recv, p);
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

// Packing in source order. Packing peer by peer reads each source block once per
// peer, a fraction of every row at a time (the tensor case: 288 of every 1152
// bytes), which streams from memory at a fraction of its bandwidth. Instead, every
// piece (packed or copied locally) is cut into slabs of at most kSlabBytes along
// its leading source dimensions and the slabs run in order of source address, so
// the pieces cut from one source region are all served while it is in cache.
// package_of_peer[p]: where peer p's package is packed (null: p gets nothing).
void plan::impl::build_source_order(const std::vector<char*>& package_of_peer) {
  constexpr std::int64_t kSlabBytes = 16 << 10;
  source_order.clear();
  row_groups.clear();
  // Cuts piece p into slabs: dimensions before d taken one index at a time, d in
  // runs of `rows`, later ones whole, so each slab is a contiguous range of the
  // piece's packed (row-major) bytes; fn(slab, element offset of the slab in the piece).
  const auto for_slabs = [](const transform_plan& t, const piece& p, auto&& fn) {
    const int n = t.ndim;
    const auto axis = [&](int j) { return static_cast<std::size_t>(t.order[static_cast<std::size_t>(j)]); };
    coords tail{};  // elements in packed positions j.. of the piece
    std::int64_t v = 1;
    for (int j = n; j-- > 0;) {
      v *= p.ext[axis(j)];
      tail[static_cast<std::size_t>(j)] = v;
    }
    const auto esize = static_cast<std::int64_t>(t.esize);
    int c = 0;  // the packed position cut into runs
    while (c + 1 < n && tail[static_cast<std::size_t>(c + 1)] * esize > kSlabBytes) ++c;
    const std::int64_t inner = c + 1 < n ? tail[static_cast<std::size_t>(c + 1)] : 1;
    const std::int64_t rows = std::max<std::int64_t>(1, kSlabBytes / (inner * esize));
    const std::int64_t outer = v / tail[static_cast<std::size_t>(c)];  // index combinations before c
    const std::size_t a = axis(c);
    for (std::int64_t o = 0; o < outer; ++o) {
      piece s = p;
      std::int64_t r = o;
      for (int j = c; j-- > 0;) {
        const std::size_t k = axis(j);
        s.lo[k] = p.lo[k] + r % p.ext[k];
        s.ext[k] = 1;
        r /= p.ext[k];
      }
      for (std::int64_t x = 0; x < p.ext[a]; x += rows) {
        s.lo[a] = p.lo[a] + x;
        s.ext[a] = std::min(rows, p.ext[a] - x);
        fn(s, o * tail[static_cast<std::size_t>(c)] + x * inner);
      }
    }
  };
  // Every piece this rank copies out of its source blocks: locally (out = null) or
  // into a package at `out`.
  struct job {
    const transform_plan* t;
    const piece* p;
    char* out;
  };
  std::vector<job> jobs;
  for (const auto& t : ts) {
    for (const piece& p : t.self) jobs.push_back({&t, &p, nullptr});
  }
  for (int peer : send_peers) {
    char* out = package_of_peer[static_cast<std::size_t>(peer)];
    for_pieces(&transform_plan::send, peer, [&](const transform_plan& t, const piece& p, std::size_t) {
      jobs.push_back({&t, &p, out});
      out += piece_bytes(t, p);
    });
  }
  // Row groups: pieces of one source block with the same box in every axis but the
  // innermost packed one (`last`, the source's unit-stride axis), contiguous along
  // it on both sides. Group axes are listed in packed order, outermost first.
  const auto last_of = [](const transform_plan& t) { return static_cast<std::size_t>(t.order[static_cast<std::size_t>(t.ndim - 1)]); };
  const auto group_key = [](const job& j) {
    std::vector<std::int64_t> k{static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(j.t))};
    for (int d = 0; d < j.t->ndim; ++d) k.push_back(j.p->src_block[static_cast<std::size_t>(d)]);
    for (int o = 0; o + 1 < j.t->ndim; ++o) {
      const auto d = static_cast<std::size_t>(j.t->order[static_cast<std::size_t>(o)]);
      k.push_back(j.p->lo[d]);
      k.push_back(j.p->ext[d]);
    }
    return k;
  };
  const auto member_of = [&](const job& j, detail::row_group::member& m) {
    const transform_plan& t = *j.t;
    const int n = t.ndim;
    coords stride{};  // per source axis
    if (j.out) {
      stride = packed_strides(*j.p, t.order, n);
      m.dst = j.out;
    } else {
      const block_storage ds = t.dst->storage(j.p->dst_block);
      for (int k = 0; k < n; ++k) stride[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = ds.strides[static_cast<std::size_t>(k)];
      m.dst = dst_corner(t, *j.p);
      m.scale = t.scale;
    }
    for (int o = 0; o + 1 < n; ++o) m.dst_stride[static_cast<std::size_t>(o)] = stride[static_cast<std::size_t>(t.order[static_cast<std::size_t>(o)])];
    m.length = j.p->ext[last_of(t)];
    return stride[last_of(t)] == 1 || m.length == 1;
  };
  std::map<std::vector<std::int64_t>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const transform_plan& t = *jobs[i].t;
    if (t.ndim < 2 || t.src->storage(jobs[i].p->src_block).strides[last_of(t)] != 1) continue;
    groups[group_key(jobs[i])].push_back(i);
  }
  std::vector<char> grouped(jobs.size(), 0);
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const job& first = jobs[members.front()];
    const transform_plan& t = *first.t;
    const std::size_t last = last_of(t);
    detail::row_group g;
    g.type = t.type;
    g.outer_dims = t.ndim - 1;
    const block_storage ss = t.src->storage(first.p->src_block);
    std::int64_t lo_last = first.p->lo[last];
    for (std::size_t i : members) lo_last = std::min(lo_last, jobs[i].p->lo[last]);
    piece corner = *first.p;
    corner.lo[last] = lo_last;
    g.src = src_corner(t, corner);
    for (int o = 0; o < g.outer_dims; ++o) {
      const auto d = static_cast<std::size_t>(t.order[static_cast<std::size_t>(o)]);
      g.extent[static_cast<std::size_t>(o)] = first.p->ext[d];
      g.src_stride[static_cast<std::size_t>(o)] = ss.strides[d];
    }
    bool ok = true;
    for (std::size_t i : members) {
      detail::row_group::member m;
      ok = ok && member_of(jobs[i], m);
      m.src_shift = (jobs[i].p->lo[last] - lo_last) * ss.strides[last];
      g.members.push_back(m);
    }
    if (!ok) continue;
    for (std::size_t i : members) grouped[i] = 1;
    row_groups.push_back(std::move(g));
  }
  // The rest: slabs in source-address order.
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (grouped[i]) continue;
    const transform_plan& t = *jobs[i].t;
    const job j = jobs[i];
    for_slabs(t, *j.p, [&](const piece& sl, std::int64_t at) {
      if (j.out) source_order.push_back({src_corner(t, sl), j.out + at * static_cast<std::int64_t>(t.esize), pack_copy(t, sl), &t, false});
      else source_order.push_back({src_corner(t, sl), dst_corner(t, sl), local_copy(t, sl), &t, true});
    });
  }
  std::stable_sort(source_order.begin(), source_order.end(),
                   [](const copy_op& a, const copy_op& b) { return a.src < b.src; });
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
  int ok = MPI_Win_allocate_shared(std::max<std::int64_t>(shm_total, 1), 1, info, node_comm, &shm_mine, &shm_win) == MPI_SUCCESS;
  MPI_Info_free(&info);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (!ok) {
    if (shm_win != MPI_WIN_NULL) MPI_Win_free(&shm_win);
    shm_win = MPI_WIN_NULL;
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
    MPI_Aint bytes;
    int disp;
    char* base = nullptr;
    check_mpi(MPI_Win_shared_query(shm_win, node_rank[k], &bytes, &disp, &base), "MPI_Win_shared_query");
    shm_target[k] = base + remote_offset[k];  // packed in place: no staging buffer
  }
  std::vector<char*> package(sz, nullptr);
  for (int p : send_peers) {
    const auto k = static_cast<std::size_t>(p);
    package[k] = shm_target[k] ? shm_target[k] : send_buf[k].data();
  }
  build_source_order(package);
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

// ---------------------------------------------------------------------------
// Validation shared by the constructors (problems agreed on by every rank)
// ---------------------------------------------------------------------------
namespace {

std::string check_transform(const transform& t, int index, int rank, int size) {
  const std::string w = "transform " + std::to_string(index) + ": ";
  if (!t.src || !t.dst) return w + "source or destination layout is null";
  const int n = t.src->ndim();
  if (t.dst->ndim() != n) return w + "source has " + std::to_string(n) + " dimensions, destination " + std::to_string(t.dst->ndim());
  std::vector<int> perm = t.perm;
  if (perm.empty()) {
    perm.resize(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
  }
  if (static_cast<int>(perm.size()) != n) return w + "perm needs " + std::to_string(n) + " entries";
  std::vector<int> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int k = 0; k < n; ++k) {
    if (sorted[static_cast<std::size_t>(k)] != k) return w + "perm is not a permutation of 0.." + std::to_string(n - 1);
  }
  for (int k = 0; k < n; ++k) {
    if (t.dst->extent(k) != t.src->extent(perm[static_cast<std::size_t>(k)])) {
      return w + "destination extent " + std::to_string(t.dst->extent(k)) + " in dimension " + std::to_string(k) +
             " != source extent " + std::to_string(t.src->extent(perm[static_cast<std::size_t>(k)])) + " in dimension " +
             std::to_string(perm[static_cast<std::size_t>(k)]);
    }
  }
  const bool complex_type = t.type == dtype::complex64 || t.type == dtype::complex128;
  if (!complex_type && (t.alpha_imag != 0 || t.beta_imag != 0)) {
    return w + "complex alpha or beta need a complex dtype (" + std::string(dtype_name(t.type)) + ")";
  }
  if (!detail::arithmetic_dtype(t.type) && (t.alpha != 1 || t.beta != 0 || t.conjugate)) {
    return w + "alpha, beta and conjugation need float32/float64/complex64/complex128 (" + std::string(dtype_name(t.type)) +
           " is copy-only)";
  }
  // Owners inside the communicator; my blocks described, with strides that fit.
  for (const layout* l : {t.src, t.dst}) {
    const char* which = l == t.src ? "source" : "destination";
    const auto [lo, hi] = l->owner_range();
    if (lo < 0 || hi >= size) {
      return w + which + " layout has owners " + std::to_string(lo) + ".." + std::to_string(hi) + " outside the communicator (size " +
             std::to_string(size) + ")";
    }
    for (const block_index& b : l->blocks_of(rank)) {
      block_storage s;
      try {
        s = l->storage(b);
      } catch (const error& e) {
        return w + which + ": " + e.what();
      }
      if (!s.data) return w + which + " block storage is null";
      for (int d = 0; d < n; ++d) {
        const auto k = static_cast<std::size_t>(d);
        const std::int64_t ext = l->splits(d).start(b[k] + 1) - l->splits(d).start(b[k]);
        if (ext > 1 && s.strides[k] == 0) return w + which + " block has stride 0 in dimension " + std::to_string(d);
      }
    }
    if (std::string why = l->storage_problem(dtype_size(t.type), rank); !why.empty()) return w + which + ": " + why;
  }
  return {};
}

}  // namespace

plan::plan(const transform& t, MPI_Comm comm, const plan_options& options)
    : plan(std::vector<transform>{t}, comm, options) {}

plan::plan(const std::vector<transform>& batch, MPI_Comm comm, const plan_options& options)
    : impl_(std::make_unique<impl>()) {
  impl& im = *impl_;
  if (comm == MPI_COMM_NULL) throw error(errc::invalid_argument, "redistribute::plan: communicator is MPI_COMM_NULL");
  conveyor::detail::check_mpi(MPI_Comm_rank(comm, &im.rank), "MPI_Comm_rank");
  conveyor::detail::check_mpi(MPI_Comm_size(comm, &im.size), "MPI_Comm_size");
  im.options = options;
  conveyor::detail::local_problem_report problem;
  const int method = static_cast<int>(options.method);
  if (method < 0 || method >= static_cast<int>(kTransportNames.size())) problem = {errc::invalid_argument, "redistribute::plan: unknown transport"};
  if (batch.empty()) problem = {errc::invalid_argument, "redistribute::plan: no transforms"};
  for (std::size_t i = 0; i < batch.size() && !problem; ++i) {
    std::string why;
    try {
      why = check_transform(batch[i], static_cast<int>(i), im.rank, im.size);
    } catch (const error& e) {
      why = e.what();
    }
    if (!why.empty()) problem = {errc::invalid_argument, "redistribute::plan: " + why};
  }
  conveyor::detail::agree_or_throw(comm, problem);

  im.method = options.method;
  conveyor::detail::check_mpi(MPI_Comm_dup(comm, &im.comm), "MPI_Comm_dup");
  for (const transform& t : batch) {
    transform_plan tp;
    tp.src = t.src;
    tp.dst = t.dst;
    tp.ndim = t.src->ndim();
    for (int k = 0; k < tp.ndim; ++k) tp.perm[static_cast<std::size_t>(k)] = t.perm.empty() ? k : t.perm[static_cast<std::size_t>(k)];
    tp.type = t.type;
    tp.esize = dtype_size(t.type);
    tp.scale = {t.alpha, t.beta, t.conjugate, t.alpha_imag, t.beta_imag};
    im.ts.push_back(std::move(tp));
  }
  for (auto& tp : im.ts) im.enumerate(tp);
  im.agree_orders();
  im.count_bytes();
  const int ppn = options.ranks_per_node > 0 ? options.ranks_per_node : conveyor::detail::context_for(comm).env_ranks_per_node;
  if (im.method == transport::automatic) im.choose_transport(comm, ppn);
  if (im.method == transport::pipelined) {
    for (auto& tp : im.ts) im.cut_for_pipelining(tp);
  }
  im.build_buffers();
  if (im.method == transport::datatype) im.build_datatypes();
  if (im.method == transport::one_sided) {
    im.build_window(ppn > 0 ? conveyor::detail::context_for(comm).layout(ppn).node_of[static_cast<std::size_t>(im.rank)] : -1);
    // auto counted on shared memory; without it (agreed by every rank) packed is cheaper.
    if (options.method == transport::automatic && im.shm_win == MPI_WIN_NULL) {
      im.release_windows();
      im.method = transport::packed;
      im.build_buffers();
    }
  }

  // Relabeling of the destination (COSTA): gains from the volume matrix.
  const conveyor::detail::node_layout* nodes = nullptr;
  if (options.intra_node_cost != 1.0) nodes = &conveyor::detail::context_for(comm).layout(ppn);
  const std::vector<double> cost = detail::pair_costs(im.size, nodes, options.intra_node_cost);
  im.sigma = detail::relabel(im.volume, cost, im.size, options.relabel);
  im.relabeled_remote = detail::remote_volume(im.volume, im.size, im.sigma);
}

plan::~plan() = default;
plan::plan(plan&&) noexcept = default;
plan& plan::operator=(plan&&) noexcept = default;

void plan::execute() {
  impl& im = *impl_;
  switch (im.method) {
    case transport::packed: im.run_packed(); break;
    case transport::pipelined: im.run_pipelined(); break;
    case transport::datatype: im.run_datatype(); break;
    case transport::one_sided: im.run_one_sided(); break;
    case transport::alltoallv: im.run_alltoallv(); break;
    case transport::automatic: break;
  }
}

transport plan::method() const { return impl_->method; }
double plan::predicted_seconds(transport t) const {
  const int i = static_cast<int>(t);
  return i > 0 && i < static_cast<int>(impl_->predicted.size()) ? impl_->predicted[static_cast<std::size_t>(i)] : 0.0;
}
const std::vector<std::int64_t>& plan::volume() const { return impl_->volume; }
std::int64_t plan::remote_bytes() const {
  std::vector<int> id(static_cast<std::size_t>(impl_->size));
  std::iota(id.begin(), id.end(), 0);
  return detail::remote_volume(impl_->volume, impl_->size, id);
}
const std::vector<int>& plan::sigma() const { return impl_->sigma; }
std::int64_t plan::relabeled_remote_bytes() const { return impl_->relabeled_remote; }
layout plan::relabeled_destination(std::size_t k) const { return impl_->ts.at(k).dst->relabeled(impl_->sigma); }

}  // namespace conveyor::redistribute
