// SPDX-License-Identifier: BSD-3-Clause
// The one_copy transport (transport.hpp): every byte that crosses ranks is copied
// once, straight from the sender's source block into the receiver's destination
// block (transformed on the way), through node memory (conveyor/node_memory.hpp)
// mapped into the process that copies:
//   push  every destination that receives from another rank is node memory: each
//         sender copies its pieces into its receivers' destinations, all its
//         copies (local ones too) in source order with row groups
//         (source_order.hpp), so each source streams from memory once;
//   pull  only the sources are node memory: each receiver copies its pieces out of
//         its senders' sources, piece by piece (reads a fraction of every source
//         row: slower than one_sided's two streaming copies on the tensor case,
//         docs/results.md, so `auto` never pulls; asked for, it runs).
//
// Built (collective): every rank checks its first blocks are node memory and all
// agree (one allreduce; ScaLAPACK's arrays stop here, their interval products
// kept); then the pieces are listed, each rank checks the pieces it exposes lie
// in node memory and that its sources and destinations are disjoint (a peer would
// otherwise read or write bytes their owner is using), the exposing side sends
// the copying side, per piece in package order, where it starts in which
// allocation and its strides (14 int64 a piece, once), the copying side maps
// those allocations (kept while the plan lives), and all agree again. Null on
// every rank if any step fails anywhere: the plan runs another transport.
//
// Execution e, two counters per rank in a node segment, no MPI call:
// (1) publish "ready e" (my sources hold this execution's data, my destination
// may be written); (2) wait until every rank I copy to (push) / from (pull) is
// ready; (3) copy; (4) publish "done e"; (5) wait until every rank that copies to
// me (push: my destination is complete) / from me (pull: the caller may rewrite my
// sources after I return) is done.
// Bytes on the wire: none. Memory traffic: one copy of every byte.
// Limits: every rank of the communicator on one node (real, not emulated).
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "conveyor/mpi.hpp"
#include "redistribute/source_order.hpp"
#include "redistribute/transport.hpp"
#include "redistribute/transport_table.hpp"
#include "runtime/context.hpp"
#include "runtime/cpu_affinity.hpp"
#include "runtime/node_memory.hpp"
#include "runtime/node_segment.hpp"

namespace conveyor::redistribute::detail {
namespace {

using conveyor::detail::check_mpi;
using conveyor::detail::node_memory_ref;

constexpr int kRefFields = 6;
constexpr std::size_t kPieceFields = kRefFields + max_dims;  // where it starts + its strides

// The bytes a box of extents `ext` spans in storage of strides `strides`:
// [lo, hi) from its corner.
std::pair<std::int64_t, std::int64_t> box_span(const coords& ext, const coords& strides, int ndim, std::size_t esize) {
  std::int64_t lo = 0, hi = 0;
  for (int d = 0; d < ndim; ++d) {
    const auto k = static_cast<std::size_t>(d);
    const std::int64_t reach = (ext[k] - 1) * strides[k];
    (reach < 0 ? lo : hi) += reach;
  }
  const auto e = static_cast<std::int64_t>(esize);
  return {lo * e, (hi + 1) * e};
}

// A piece's box on one side: its corner, its extents and strides in that side's
// axis order, in storage `s`.
struct side_box {
  char* corner;
  coords ext;
  block_storage s;
};
side_box source_box(const transform_plan& t, const piece& p) {
  return {exchange_map::src_corner(t, p), p.ext, t.src->storage(p.src_block)};
}
side_box destination_box(const transform_plan& t, const piece& p) {
  return {exchange_map::dst_corner(t, p), exchange_map::to_dst(t, p.ext), t.dst->storage(p.dst_block)};
}

// Appends the record of one exposed box (where it lies, its strides); false if
// it is not in node memory.
bool describe(const side_box& b, int ndim, std::size_t esize, std::vector<std::int64_t>& out) {
  const auto [lo, hi] = box_span(b.ext, b.s.strides, ndim, esize);
  node_memory_ref ref;
  if (!conveyor::detail::find_node_memory(b.corner + lo, static_cast<std::size_t>(hi - lo), ref)) return false;
  ref.offset -= lo;  // the corner, not the span's start
  out.insert(out.end(), {ref.pid, ref.fd, ref.serial, ref.token, ref.bytes, ref.offset});
  for (int d = 0; d < max_dims; ++d) out.push_back(d < ndim ? b.s.strides[static_cast<std::size_t>(d)] : 0);
  return true;
}

// Whether a byte range of my sources meets one of my destinations: the ranges
// each box spans, sorted, swept together (O(pieces log pieces); a box's span
// covers its gaps too, so strided boxes interleaved in one array count as meeting).
bool sources_meet_destinations(const exchange_map& g) {
  using range = std::pair<std::uintptr_t, std::uintptr_t>;
  std::vector<range> src, dst;
  const auto add = [](std::vector<range>& to, const side_box& b, const transform_plan& t) {
    const auto span = box_span(b.ext, b.s.strides, t.ndim, t.esize);
    to.emplace_back(reinterpret_cast<std::uintptr_t>(b.corner + span.first),
                    reinterpret_cast<std::uintptr_t>(b.corner + span.second));
  };
  for (const auto& t : g.transforms) {
    for (const auto& list : t.send) {
      for (const piece& p : list) add(src, source_box(t, p), t);
    }
    for (const auto& list : t.recv) {
      for (const piece& p : list) add(dst, destination_box(t, p), t);
    }
    for (const piece& p : t.self) {
      add(src, source_box(t, p), t);
      add(dst, destination_box(t, p), t);
    }
  }
  std::sort(src.begin(), src.end());
  std::sort(dst.begin(), dst.end());
  for (std::size_t i = 0, j = 0; i < src.size() && j < dst.size();) {
    if (src[i].first < dst[j].second && dst[j].first < src[i].second) return true;
    (src[i].second <= dst[j].second ? i : j) += 1;  // drop the range that ends first
  }
  return false;
}

int agreed_min(int mine, MPI_Comm comm) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return mine;
}

// Where one of my destination blocks of `t` is stored (null: none), found
// without listing the layout's blocks: every automatic plan on one node asks.
const void* a_destination(const transform_plan& t) {
  if (t.products) return t.dst_local;
  if (!t.self.empty()) return t.dst->storage(t.self.front().dst_block).data;
  for (const auto& list : t.recv) {
    if (!list.empty()) return t.dst->storage(list.front().dst_block).data;
  }
  return nullptr;
}

// Whether this rank's first block of every transform's source (a destination
// block: destinations) is node memory (true without one).
bool first_blocks_in_node_memory(const exchange_map& g, bool destinations) {
  for (const auto& t : g.transforms) {
    if (!destinations && t.has_src_block && !conveyor::is_node_memory(t.src->storage(t.first_src_block).data, 1))
      return false;
    const void* d = destinations ? a_destination(t) : nullptr;
    if (d && !conveyor::is_node_memory(d, 1)) return false;
  }
  return true;
}

// The records of one side: `exposed` lists the pieces whose boxes I describe (to
// each peer that copies them), `copied` those I receive records for.
std::vector<std::vector<std::int64_t>> exchange_records(const exchange_map& g, piece_lists exposed,
                                                        const std::vector<int>& to, piece_lists copied,
                                                        const std::vector<int>& from, bool push, bool& ok) {
  const auto sz = static_cast<std::size_t>(g.size);
  std::vector<std::vector<std::int64_t>> out(sz), in(sz);
  for (int q : to) {
    auto& v = out[static_cast<std::size_t>(q)];
    g.for_pieces(exposed, q, [&](const transform_plan& t, const piece& p, std::size_t) {
      ok = ok && describe(push ? destination_box(t, p) : source_box(t, p), t.ndim, t.esize, v);
    });
    ok = ok && v.size() <= static_cast<std::size_t>(INT_MAX);
  }
  for (int q : from) {
    in[static_cast<std::size_t>(q)].resize(g.piece_count(copied, q) * kPieceFields);
    ok = ok && in[static_cast<std::size_t>(q)].size() <= static_cast<std::size_t>(INT_MAX);
  }
  if (!agreed_min(ok ? 1 : 0, g.comm)) {
    ok = false;
    return in;
  }
  std::vector<MPI_Request> requests;
  for (int q : from) {
    auto& v = in[static_cast<std::size_t>(q)];
    requests.emplace_back();
    check_mpi(MPI_Irecv(v.data(), static_cast<int>(v.size()), MPI_INT64_T, q, 0, g.comm, &requests.back()),
              "MPI_Irecv");
  }
  for (int q : to) {
    auto& v = out[static_cast<std::size_t>(q)];
    requests.emplace_back();
    check_mpi(MPI_Isend(v.data(), static_cast<int>(v.size()), MPI_INT64_T, q, 0, g.comm, &requests.back()),
              "MPI_Isend");
  }
  check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  return in;
}

class one_copy_transport final : public transport_base {
 public:
  struct pulled_piece {
    const char* src;
    char* dst;
    box_copy copy;
    const transform_plan* t;
  };

  one_copy_transport(const exchange_map& g, bool push) : g_(g), push_(push) {}

  // Built by make_one_copy_transport.
  std::unique_ptr<conveyor::detail::node_segment> flags_;
  int spins_ = 0;
  source_order_copies pushes_;                     // push: local copies and pushes, in source order
  std::vector<std::vector<pulled_piece>> pulled_;  // pull: per sender, its pieces
  std::vector<std::shared_ptr<const conveyor::detail::peer_memory>> mapped_;

  void execute() override {
    const std::uint64_t e = ++executions_;
    ready(g_.rank).store(e, std::memory_order_release);
    if (push_) {
      for (int q : g_.send_peers) conveyor::detail::wait_at_least(ready(q), e, spins_);
      pushes_.run();
    } else {
      g_.copy_local();
      pull(e);
    }
    done(g_.rank).store(e, std::memory_order_release);
    for (int q : push_ ? g_.recv_peers : g_.send_peers) conveyor::detail::wait_at_least(done(q), e, spins_);
  }

 private:
  // Each sender's pieces as soon as it is ready, whichever is first.
  void pull(std::uint64_t e) {
    pending_.assign(g_.recv_peers.begin(), g_.recv_peers.end());
    while (!pending_.empty()) {
      auto it = std::find_if(pending_.begin(), pending_.end(),
                             [&](int q) { return ready(q).load(std::memory_order_acquire) >= e; });
      if (it == pending_.end()) {
        conveyor::detail::wait_at_least(ready(pending_.front()), e, spins_);
        it = pending_.begin();
      }
      for (const pulled_piece& op : pulled_[static_cast<std::size_t>(*it)])
        apply(op.t->type, op.copy, op.src, op.dst, op.t->scale);
      pending_.erase(it);
    }
  }
  std::atomic<std::uint64_t>& ready(int r) const { return flags_->flag(2 * r); }
  std::atomic<std::uint64_t>& done(int r) const { return flags_->flag(2 * r + 1); }

  const exchange_map& g_;
  bool push_;
  std::uint64_t executions_ = 0;
  std::vector<int> pending_;  // reused
};

}  // namespace

std::unique_ptr<transport_base> make_one_copy_transport(exchange_map& g, bool one_node, bool may_pull, int node_cpus) {
  const bool dst_ok = one_node && first_blocks_in_node_memory(g, true);
  const bool src_ok = one_node && may_pull && first_blocks_in_node_memory(g, false);
  const int mode = agreed_min(dst_ok ? 2 : src_ok ? 1 : 0, g.comm);  // 2 push, 1 pull (push needs only destinations)
  if (mode == 0) return nullptr;
  const bool push = mode == 2;
  g.materialize_pieces();
  bool ok = !sources_meet_destinations(g);
  const auto& to = push ? g.recv_peers : g.send_peers;    // the ranks that copy my exposed pieces
  const auto& from = push ? g.send_peers : g.recv_peers;  // the ranks whose pieces I copy
  const piece_lists exposed = push ? &transform_plan::recv : &transform_plan::send;
  const piece_lists copied = push ? &transform_plan::send : &transform_plan::recv;
  const auto records = exchange_records(g, exposed, to, copied, from, push, ok);
  if (!ok) return nullptr;

  auto t = std::make_unique<one_copy_transport>(g, push);
  const auto sz = static_cast<std::size_t>(g.size);
  std::vector<std::vector<mapped_destination>> pushed(sz);
  t->pulled_.resize(sz);
  for (int q : from) {
    const std::int64_t* rec = records[static_cast<std::size_t>(q)].data();
    g.for_pieces(copied, q, [&](const transform_plan& tp, const piece& p, std::size_t i) {
      const std::int64_t* f = rec + i * kPieceFields;
      auto m = ok ? conveyor::detail::map_node_memory({f[0], f[1], f[2], f[3], f[4], f[5]})
                  : nullptr;  // cached per allocation
      if (!m) {
        ok = false;
        return;
      }
      if (std::find(t->mapped_.begin(), t->mapped_.end(), m) == t->mapped_.end()) t->mapped_.push_back(m);
      if (push) {
        mapped_destination d{m->at(f[5]), {}};
        std::copy(f + kRefFields, f + kPieceFields, d.strides.begin());
        pushed[static_cast<std::size_t>(q)].push_back(d);
        return;
      }
      coords remote_strides{};
      std::copy(f + kRefFields, f + kPieceFields, remote_strides.begin());
      t->pulled_[static_cast<std::size_t>(q)].push_back(
          {m->at(f[5]), exchange_map::dst_corner(tp, p),
           exchange_map::direct_copy(tp, p.ext, remote_strides, tp.dst->storage(p.dst_block).strides), &tp});
    });
  }
  if (!agreed_min(ok ? 1 : 0, g.comm)) return nullptr;
  if (push) t->pushes_ = source_order_copies(g, {}, false, &pushed);
  t->flags_ = conveyor::detail::node_segment::create(g.comm, g.rank, 2 * sz * conveyor::detail::kLine, 2 * g.size);
  if (!t->flags_) return nullptr;  // on every rank (create agrees)
  t->spins_ = conveyor::detail::ranks_share_cores(g.size, node_cpus) ? 0 : conveyor::detail::kSpinsBeforeYield;
  return t;
}

// The table's row (transport_table.hpp).
// Predicted: a counter handshake per node peer + (R + L) c: the receiver copies
// from the sender's source. Not among `auto`'s modeled choices: the plan builds it
// wherever it can run (its model would always win there).
namespace {
double predict_one_copy(const traffic_terms&, const conveyor::detail::traffic& t, const cost_model& p) {
  // Only ever run on one node: the receiver's copy is the only one.
  return t.peers_intra * p.intra_alpha + static_cast<double>(t.received + t.local) * p.copy_beta;
}
}  // namespace

const transport_row one_copy_row = {
    transport::one_copy,
    "sources or destinations in node memory, one node: each receiver copies its pieces from the senders' sources "
    "(auto takes it wherever it can run)",
    predict_one_copy, /*modeled=*/false, nullptr};  // the plan builds it wherever it can run (plan.cpp)

}  // namespace conveyor::redistribute::detail
