// Internal: the state of a Redistribute plan, shared by plan.cpp (building it),
// transports.cpp (executing it) and source_order.cpp (packing in source order).
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "conveyor/redistribute.hpp"
#include "redistribute/box_copy.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/cost_model.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor::detail {
struct comm_context;
}

namespace conveyor::redistribute {
namespace detail {


using coords = std::array<std::int64_t, max_dims>;
using axis_order = std::array<int, max_dims>;

struct piece {
  coords lo{}, ext{};  // box in source coordinates
  block_index src_block{}, dst_block{};
};

inline std::int64_t volume_of(const coords& ext, int ndim) {
  std::int64_t v = 1;
  for (int d = 0; d < ndim; ++d) v *= ext[static_cast<std::size_t>(d)];
  return v;
}

}  // namespace detail

using detail::axis_order;
using detail::coords;
using detail::piece;
using detail::volume_of;


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
  // The runtime's private communicator of the caller's (shared with every plan
  // and collective on it: no MPI_Comm_dup per plan; messages of consecutive
  // executions cannot mix because no receive uses a wildcard and MPI keeps the
  // order of messages between two ranks). `context` keeps it alive.
  MPI_Comm comm = MPI_COMM_NULL;
  std::shared_ptr<conveyor::detail::comm_context> context;
  // The plan's own copies of the caller's layouts (cheap: they share the
  // description; a later set_storage on the caller's layout does not reach them),
  // so callers may free or change theirs once the plan is built.
  std::deque<layout> layouts;
  int rank = 0, size = 1;
  plan_options options;
  transport method = transport::packed;
  std::vector<transform_plan> ts;
  std::vector<std::int64_t> send_bytes, recv_bytes;  // per peer (all transforms)
  std::int64_t self_bytes = 0;                       // local copies (all transforms)
  std::vector<int> send_peers, recv_peers;            // peers with data, in rank order
  std::vector<conveyor::detail::byte_buffer> send_buf, recv_buf;  // per peer, reused (from the runtime's pool)
  std::vector<std::int64_t> volume;                   // P x P
  std::vector<int> sigma;
  std::int64_t relabeled_remote = 0;
  // datatype transport
  std::vector<MPI_Datatype> send_types, recv_types;   // per peer (MPI_DATATYPE_NULL if none)
  bool direct_receive = false;
  // one_sided
  MPI_Win win = MPI_WIN_NULL;                         // MPI_Put window (peers off my node)
  conveyor::detail::byte_buffer window_buf;
  MPI_Comm node_comm = MPI_COMM_NULL;                 // ranks sharing my memory
  MPI_Win shm_win = MPI_WIN_NULL;                     // shared window (peers on my node)
  char* shm_mine = nullptr;                           // my segment's packages (after my flags)
  std::vector<char*> shm_target;                      // per peer: where I pack its package (null: MPI_Put)
  std::vector<char> shm_source;                       // per peer: its package is in my shared segment
  std::vector<std::int64_t> window_offset_of_peer;    // where peer p's data lands in my window
  std::vector<std::int64_t> remote_offset;            // where my data lands in peer p's window
  // Point-to-point synchronization through shared memory (no fences on the
  // shared window): every rank's segment starts with its two counters.
  struct shm_flags {
    alignas(64) std::atomic<std::uint64_t> packed{0};    // executions whose packages for node peers are written
    alignas(64) std::atomic<std::uint64_t> unpacked{0};  // executions whose packages from node peers are unpacked
  };
  static constexpr std::int64_t kFlagsBytes = sizeof(shm_flags);
  std::vector<shm_flags*> flags_of;                   // per plan rank on my node (null: another node)
  std::uint64_t executions = 0;
  std::vector<int> unpack_pending;                    // one_sided: node peers not yet unpacked (reused)
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
  // With local_last: row_groups[0, packing_groups) and source_order[0, packing_ops)
  // fill packages; the rest are local copies only.
  std::size_t packing_groups = 0, packing_ops = 0;
  enum class copies { all, packing, local };
  conveyor::detail::transport_seconds predicted{};  // auto: the model's seconds per transport (slowest rank)

  ~impl() {
    for (auto& t : send_types) if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    for (auto& t : recv_types) if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    release_windows();
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
  // fn(transform, piece, index) for every piece of `peer` in direction `dir`,
  // numbered across transforms in order (the package order).
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

  // Packs pieces [first, last) for `peer` at base + offset, advancing offset.
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

  // --- transports (transports.cpp, source_order.cpp) ---------------------------------
  // Posts a message in pieces (runtime/message_pieces.hpp), tags tag_base + piece.
  static void post(bool receive, char* buf, std::int64_t bytes, int peer, int tag_base, MPI_Comm comm,
                   std::vector<MPI_Request>& reqs, std::vector<int>& owner, int owner_value);

  void run_packed();
  // Chunk boundaries: consecutive pieces (slabs) of >= chunk_bytes, per peer.
  std::vector<std::size_t> chunks_of(std::vector<std::vector<piece>> transform_plan::*dir, int peer) const;
  std::int64_t range_bytes(std::vector<std::vector<piece>> transform_plan::*dir, int peer, std::size_t first,
                           std::size_t last) const;

  void run_pipelined();
  void run_datatype();
  void run_one_sided();
  void run_source_order(copies which = copies::all) const;  // row groups, then slabs (source_order.cpp)
  void run_alltoallv();

  // --- plan-time construction ----------------------------------------------------------
  void enumerate(transform_plan& t);
  void cut_for_pipelining(transform_plan& t);
  void count_bytes();                 // local: send/recv bytes per peer, self_bytes
  void exchange_orders_and_volume();  // collective: packing orders and the volume matrix
  void choose_transport(MPI_Comm user_comm, int ranks_per_node);
  void release_windows();
  void build_buffers();
  void build_datatypes();
  void build_window(int node_color);
  void build_source_order(const std::vector<char*>& package_of_peer, bool local_last = false);
  MPI_Datatype piece_type(const transform_plan& t, const piece& p, bool dst_side, const axis_order& order) const;
};

}  // namespace conveyor::redistribute
