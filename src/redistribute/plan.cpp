// Planning redistributions (conveyor/redistribute.hpp).
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
// Execute: transports.cpp (and source_order.cpp). The plan's state:
// plan_impl.hpp.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "conveyor/settings.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/redistribute.hpp"
#include "runtime/context.hpp"
#include "runtime/cost_model.hpp"
#include "conveyor/contract.hpp"
#include "core/names.hpp"
#include "redistribute/plan_impl.hpp"
#include "redistribute/relabel.hpp"

namespace conveyor::redistribute {

namespace {

constexpr std::array<std::string_view, 6> kTransportNames = {"auto", "datatype", "packed", "pipelined", "one_sided",
                                                              "alltoallv"};
constexpr std::array<std::string_view, 3> kRelabelingNames = {"none", "greedy", "optimal"};
bool corner_less(const piece& a, const piece& b) { return a.lo < b.lo; }

// CONVEYOR_REDISTRIBUTE_TRANSPORT: what `automatic` plans run instead of the cost
// model's choice (read once, like the other engines' overrides).
transport env_transport() {
  static const transport t = [] {
    const auto env = conveyor::setting("CONVEYOR_REDISTRIBUTE_TRANSPORT");
    return env ? parse_transport(*env) : transport::automatic;
  }();
  return t;
}

}  // namespace

std::string_view transport_name(transport t) { return conveyor::detail::name_of(kTransportNames, t); }

transport parse_transport(std::string_view name) {
  return conveyor::detail::value_of<transport>(kTransportNames, name, "transport");
}

std::string_view relabeling_name(relabeling r) { return conveyor::detail::name_of(kRelabelingNames, r); }

relabeling parse_relabeling(std::string_view name) {
  return conveyor::detail::value_of<relabeling>(kRelabelingNames, name, "relabeling");
}

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

// One MPI_Allgather gives every rank what it needs from the others: each rank's
// packing order of every transform (mine: from my first source block's strides,
// largest outermost; ties: the lower axis outside) and its row of the volume
// matrix (the bytes it sends to each rank; its own entry: local copies).
void plan::impl::exchange_orders_and_volume() {
  const std::size_t nt = ts.size(), P = static_cast<std::size_t>(size), record = nt + P;
  std::vector<std::int64_t> mine(record, 0), all(record * P, 0);
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
  count_bytes();
  std::copy(send_bytes.begin(), send_bytes.end(), mine.begin() + static_cast<std::ptrdiff_t>(nt));
  mine[nt + static_cast<std::size_t>(rank)] = self_bytes;
  conveyor::detail::check_mpi(MPI_Allgather(mine.data(), static_cast<int>(record), MPI_INT64_T, all.data(),
                                            static_cast<int>(record), MPI_INT64_T, comm),
                              "MPI_Allgather (orders and volume)");
  volume.assign(P * P, 0);
  for (std::size_t q = 0; q < P; ++q) {
    std::copy(all.begin() + static_cast<std::ptrdiff_t>(q * record + nt), all.begin() + static_cast<std::ptrdiff_t>((q + 1) * record),
              volume.begin() + static_cast<std::ptrdiff_t>(q * P));
  }
  for (std::size_t i = 0; i < nt; ++i) {
    transform_plan& t = ts[i];
    t.peer_order.assign(P, axis_order{});
    for (std::size_t q = 0; q < P; ++q) {
      const std::int64_t code = all[q * record + i];
      for (int k = 0; k < t.ndim; ++k) t.peer_order[q][static_cast<std::size_t>(k)] = static_cast<int>((code >> (4 * k)) & 15);
    }
  }
}

// auto: the cheapest transport for the slowest rank under the cost model, the
// same on every rank (one MPI_Allreduce of the predictions).
void plan::impl::choose_transport(MPI_Comm user_comm, int ranks_per_node) {
  const conveyor::detail::node_layout& nodes = conveyor::detail::context_for(user_comm).layout(ranks_per_node);
  const int my_node = nodes.node_of[static_cast<std::size_t>(rank)];
  conveyor::detail::traffic t;
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
  predicted = conveyor::detail::predict_transports(t, current_cost_model());
  conveyor::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, predicted.data(), static_cast<int>(predicted.size()), MPI_DOUBLE, MPI_MAX, comm),
                              "MPI_Allreduce");
  method = conveyor::detail::cheapest_transport(predicted);
}


// Bytes per peer and the peers (local: the volume matrix comes with the orders).
void plan::impl::count_bytes() {
  send_peers.clear();
  recv_peers.clear();
  send_bytes.assign(static_cast<std::size_t>(size), 0);
  recv_bytes.assign(static_cast<std::size_t>(size), 0);
  self_bytes = 0;
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
}

// The buffers the chosen transport reuses on every execution.
void plan::impl::build_buffers() {
  send_buf.clear();
  recv_buf.clear();
  send_buf.resize(static_cast<std::size_t>(size));
  recv_buf.resize(static_cast<std::size_t>(size));
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
        return w + which + ": " + e.message();
      }
      std::int64_t elements = 1;
      for (int d = 0; d < n; ++d) {
        const auto k = static_cast<std::size_t>(d);
        const std::int64_t ext = l->splits(d).start(b[k] + 1) - l->splits(d).start(b[k]);
        elements *= ext;
        if (ext > 1 && s.strides[k] == 0) return w + which + " block has stride 0 in dimension " + std::to_string(d);
      }
      if (!s.data && elements > 0) return w + which + " block storage is null";
    }
    if (std::string why = l->storage_problem(dtype_size(t.type), rank); !why.empty()) return w + which + ": " + why;
  }
  return {};
}

// What must be the same on every rank about a layout: its shape, its splits and
// the owners of its first blocks (a digest of the description, cheap for any
// number of blocks: it catches different shapes, grids, block sizes and orders).
void describe(const layout& l, std::vector<std::int64_t>& out) {
  out.push_back(l.ndim());
  for (int d = 0; d < l.ndim(); ++d) {
    const axis_splits& s = l.splits(d);
    out.push_back(s.extent());
    out.push_back(s.count());
    for (std::int64_t k = 0; k <= std::min<std::int64_t>(s.count(), 8); ++k) out.push_back(s.start(k));
  }
  const auto [lo, hi] = l.owner_range();
  out.push_back(lo);
  out.push_back(hi);
  block_index b{};
  for (int i = 0; i < 64 && l.ndim() > 0; ++i) {  // the first blocks in row-major order
    if (b[0] >= l.splits(0).count()) break;
    out.push_back(l.owner(b));
    for (int d = l.ndim() - 1; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      if (++b[k] < l.splits(d).count() || d == 0) break;
      b[k] = 0;
    }
  }
}

std::uint64_t digest_of_batch(const std::vector<transform>& batch) {
  std::vector<std::int64_t> v;
  for (const transform& t : batch) {
    describe(*t.src, v);
    describe(*t.dst, v);
    v.insert(v.end(), t.perm.begin(), t.perm.end());
    v.push_back(static_cast<std::int64_t>(t.type));
    v.push_back(t.conjugate ? 1 : 0);
    for (double x : {t.alpha, t.beta, t.alpha_imag, t.beta_imag}) {
      std::int64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      v.push_back(bits);
    }
  }
  return digest_of(v.data(), v.size());
}

}  // namespace

plan::plan(const transform& t, MPI_Comm comm, const plan_options& options)
    : plan(std::vector<transform>{t}, comm, options) {}

plan::plan(const std::vector<transform>& batch, MPI_Comm user_comm, const plan_options& options)
    : impl_(std::make_unique<impl>()) {
  impl& im = *impl_;
  collective_call call("redistribute::plan", user_comm);
  const MPI_Comm comm = call.comm();
  im.rank = call.rank();
  im.size = call.size();
  im.options = options;
  const int method = static_cast<int>(options.method);
  const int relabel = static_cast<int>(options.relabel);
  const auto bad = [&](const std::string& m) { call.fail(errc::invalid_argument, m); };
  if (method < 0 || method >= static_cast<int>(kTransportNames.size())) bad("unknown transport");
  if (relabel < 0 || relabel >= static_cast<int>(kRelabelingNames.size())) bad("unknown relabeling");
  if (!(options.intra_node_cost >= 0) || !std::isfinite(options.intra_node_cost)) bad("intra_node_cost must be finite and >= 0");
  if (options.chunk_bytes == 0) bad("chunk_bytes must be > 0");
  if (options.ranks_per_node < 0) bad("ranks_per_node must be >= 0");
  if (batch.empty()) bad("no transforms");
  for (std::size_t i = 0; i < batch.size() && call.ok(); ++i) {
    call.check([&] {
      if (std::string why = check_transform(batch[i], static_cast<int>(i), im.rank, im.size); !why.empty()) bad(why);
    });
  }
  if (call.matching()) {
    call.must_match("transform counts", static_cast<std::int64_t>(batch.size()))
        .must_match_digest("transforms (layouts, permutation, dtype or scaling)", call.ok() ? digest_of_batch(batch) : 0)
        .must_match("transports", options.method, transport_name)
        .must_match("relabelings", options.relabel, relabeling_name)
        .must_match_real("intra_node_cost values", options.intra_node_cost)
        .must_match("ranks_per_node values", options.ranks_per_node)
        .must_match("chunk sizes", static_cast<std::int64_t>(options.chunk_bytes));
  }
  call.agree();

  im.method = options.method;
  im.comm = comm;
  im.context = conveyor::detail::context_of(call).shared_from_this();
  for (const transform& t : batch) {
    transform_plan tp;
    tp.src = &im.layouts.emplace_back(*t.src);
    tp.dst = &im.layouts.emplace_back(*t.dst);
    tp.ndim = t.src->ndim();
    for (int k = 0; k < tp.ndim; ++k) tp.perm[static_cast<std::size_t>(k)] = t.perm.empty() ? k : t.perm[static_cast<std::size_t>(k)];
    tp.type = t.type;
    tp.esize = dtype_size(t.type);
    tp.scale = {t.alpha, t.beta, t.conjugate, t.alpha_imag, t.beta_imag};
    im.ts.push_back(std::move(tp));
  }
  for (auto& tp : im.ts) im.enumerate(tp);
  im.exchange_orders_and_volume();
  conveyor::detail::comm_context& ctx = conveyor::detail::context_of(call);
  const int ppn = options.ranks_per_node > 0 ? options.ranks_per_node : ctx.env_ranks_per_node;
  if (im.method == transport::automatic) im.method = env_transport();
  if (im.method == transport::automatic) im.choose_transport(comm, ppn);
  if (im.method == transport::pipelined) {
    for (auto& tp : im.ts) im.cut_for_pipelining(tp);
  }
  im.build_buffers();
  if (im.method == transport::datatype) im.build_datatypes();
  if (im.method == transport::one_sided) {
    im.build_window(ppn > 0 ? ctx.layout(ppn).node_of[static_cast<std::size_t>(im.rank)] : -1);
    // auto counted on shared memory; without it (agreed by every rank) packed is cheaper.
    if (options.method == transport::automatic && im.shm_win == MPI_WIN_NULL) {
      im.release_windows();
      im.method = transport::packed;
      im.build_buffers();
    }
  }

  // Relabeling of the destination (COSTA): gains from the volume matrix.
  const conveyor::detail::node_layout* nodes = nullptr;
  if (options.intra_node_cost != 1.0) nodes = &ctx.layout(ppn);
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
