// SPDX-License-Identifier: BSD-3-Clause
// Planning redistributions (conveyor/redistribute.hpp): validation agreed by every
// rank, then the exchange map (exchange_map.hpp: which pieces move where, one
// MPI_Allgather), the transport (transport.hpp: the cost model's choice for
// `auto`, redistribute/cost_model.hpp), and the COSTA relabeling (relabel.hpp).
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
#include "redistribute/cost_model.hpp"
#include "redistribute/transport_table.hpp"
#include "conveyor/contract.hpp"
#include "core/names.hpp"
#include "redistribute/transport.hpp"
#include "redistribute/relabel.hpp"
#include "redistribute/cyclic_grid.hpp"

namespace conveyor::redistribute {

CONVEYOR_ENUM_NAMES(transport, CONVEYOR_TRANSPORT_LIST, "transport", kTransportNames, transport_name, parse_transport)
CONVEYOR_ENUM_NAMES(relabeling, CONVEYOR_RELABELING_LIST, "relabeling", kRelabelingNames, relabeling_name,
                    parse_relabeling)

namespace {

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

namespace {

// auto: the cheapest transport for the slowest rank under the cost model, the
// same on every rank (one MPI_Allreduce of the predictions).
transport choose_transport(const detail::exchange_map& g, const conveyor::detail::node_layout& nodes,
                           std::size_t chunk_bytes, conveyor::detail::transport_seconds& predicted) {
  const int my_node = nodes.node_of[static_cast<std::size_t>(g.rank)];
  conveyor::detail::traffic t;
  t.ranks = g.size;
  t.node_ranks = static_cast<int>(nodes.members[static_cast<std::size_t>(my_node)].size());
  t.chunk_bytes = static_cast<std::int64_t>(chunk_bytes);
  for (int p : g.send_peers) {
    const bool same = nodes.node_of[static_cast<std::size_t>(p)] == my_node;
    (same ? t.sent_intra : t.sent_inter) += g.send_bytes[static_cast<std::size_t>(p)];
    ++(same ? t.peers_intra : t.peers_inter);
  }
  for (int p : g.recv_peers) t.received += g.recv_bytes[static_cast<std::size_t>(p)];
  t.local = g.self_bytes;
  predicted = conveyor::detail::predict_transports(t, current_cost_model());
  conveyor::detail::check_mpi(
      MPI_Allreduce(MPI_IN_PLACE, predicted.data(), static_cast<int>(predicted.size()), MPI_DOUBLE, MPI_MAX, g.comm),
      "MPI_Allreduce");
  return conveyor::detail::cheapest_transport(predicted);
}

// The transport object of kind `t` (its row's builder, transport_table.hpp). A
// transport that cannot run here builds nothing (one_sided chosen by `auto`
// counted on shared memory, which some node lacks: agreed by every rank), and
// packed runs instead.
std::unique_ptr<detail::transport_base> build_transport(transport& t, detail::exchange_map& g, const plan_options& o,
                                                        int node_color, bool automatic) {
  const detail::transport_row& row = detail::transport_row_of(t);
  if (!row.make) throw error(errc::internal, "redistribute: no transport chosen");
  const detail::transport_build build{o, node_color, automatic};
  if (auto mover = row.make(g, build)) return mover;
  t = transport::packed;
  return detail::packed_row.make(g, build);
}

}  // namespace

// ---------------------------------------------------------------------------
// Validation shared by the constructors (problems agreed on by every rank)
// ---------------------------------------------------------------------------
namespace {

std::string check_transform(const transform& t, int index, int rank, int size) {
  const std::string w = "transform " + std::to_string(index) + ": ";
  if (!t.src || !t.dst) return w + "source or destination layout is null";
  const int n = t.src->ndim();
  if (t.dst->ndim() != n)
    return w + "source has " + std::to_string(n) + " dimensions, destination " + std::to_string(t.dst->ndim());
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
             " != source extent " + std::to_string(t.src->extent(perm[static_cast<std::size_t>(k)])) +
             " in dimension " + std::to_string(perm[static_cast<std::size_t>(k)]);
    }
  }
  const bool complex_type = t.type == dtype::complex64 || t.type == dtype::complex128;
  if (!complex_type && (t.alpha_imag != 0 || t.beta_imag != 0)) {
    return w + "complex alpha or beta need a complex dtype (" + std::string(dtype_name(t.type)) + ")";
  }
  if (!detail::arithmetic_dtype(t.type) && (t.alpha != 1 || t.beta != 0 || t.conjugate)) {
    return w + "alpha, beta and conjugation need float32/float64/complex64/complex128 (" +
           std::string(dtype_name(t.type)) + " is copy-only)";
  }
  // Owners inside the communicator; my blocks described, with strides that fit.
  for (const layout* l : {t.src, t.dst}) {
    const char* which = l == t.src ? "source" : "destination";
    const auto [lo, hi] = l->owner_range();
    if (lo < 0 || hi >= size) {
      return w + which + " layout has owners " + std::to_string(lo) + ".." + std::to_string(hi) +
             " outside the communicator (size " + std::to_string(size) + ")";
    }
    const auto grid = n == 2 ? detail::layout_access::cyclic_grid_of(*l, rank) : std::nullopt;
    if (grid && grid->formula_storage) {
      // Storage by ScaLAPACK's formula: strides 1 and lld (storage_problem checks
      // lld), so only the array itself can be missing (storage() says so).
      if (!grid->local && grid->position[0] >= 0 && l->local_shape(rank)[0] > 0) {
        block_index first{};
        for (std::size_t d = 0; d < 2; ++d) first[d] = grid->axes[d].first_block_at(grid->position[d]);
        try {
          (void)l->storage(first);
        } catch (const error& e) {
          return w + which + ": " + e.message();
        }
      }
    } else {
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
          const std::int64_t ext = l->splits(d).length(b[k]);
          elements *= ext;
          if (ext > 1 && s.strides[k] == 0) return w + which + " block has stride 0 in dimension " + std::to_string(d);
        }
        if (!s.data && elements > 0) return w + which + " block storage is null";
      }
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
  // Whether the owners follow the block-cyclic formulas: plans between two such
  // layouts skip exchanging packing orders (exchange_map.hpp, grid_pair).
  out.push_back(l.ndim() == 2 && detail::layout_access::cyclic_grid_of(l, 0) ? 1 : 0);
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

// The plan's state: what moves where, and the one transport that moves it (built
// after the exchange map, destroyed before it).
struct plan::impl {
  detail::exchange_map exchanges;
  redistribute::transport chosen = redistribute::transport::packed;
  std::unique_ptr<detail::transport_base> mover;
  conveyor::detail::transport_seconds predicted{};  // auto: the model's seconds per transport (slowest rank)
  std::vector<int> sigma;
  std::int64_t relabeled_remote = 0;
};

plan::plan(const transform& t, MPI_Comm comm, const plan_options& options)
    : plan(std::vector<transform>{t}, comm, options) {}

plan::plan(const std::vector<transform>& batch, MPI_Comm user_comm, const plan_options& options)
    : impl_(std::make_unique<impl>()) {
  impl& im = *impl_;
  collective_call call("redistribute::plan", user_comm);
  const MPI_Comm comm = call.comm();
  const int method = static_cast<int>(options.transport);
  const int relabel = static_cast<int>(options.relabel);
  const auto bad = [&](const std::string& m) { call.fail(errc::invalid_argument, m); };
  if (method < 0 || method >= static_cast<int>(kTransportNames.size())) bad("unknown transport");
  if (relabel < 0 || relabel >= static_cast<int>(kRelabelingNames.size())) bad("unknown relabeling");
  if (!(options.intra_node_cost >= 0) || !std::isfinite(options.intra_node_cost))
    bad("intra_node_cost must be finite and >= 0");
  if (options.chunk_bytes == 0) bad("chunk_bytes must be > 0");
  if (options.ranks_per_node < 0) bad("ranks_per_node must be >= 0");
  if (batch.empty()) bad("no transforms");
  for (std::size_t i = 0; i < batch.size() && call.ok(); ++i) {
    call.check([&] {
      if (std::string why = check_transform(batch[i], static_cast<int>(i), call.rank(), call.size()); !why.empty())
        bad(why);
    });
  }
  if (call.matching()) {
    call.must_match("transform counts", static_cast<std::int64_t>(batch.size()))
        .must_match_digest("transforms (layouts, permutation, dtype or scaling)",
                           call.ok() ? digest_of_batch(batch) : 0)
        .must_match("transports", options.transport, transport_name)
        .must_match("relabelings", options.relabel, relabeling_name)
        .must_match_real("intra_node_cost values", options.intra_node_cost)
        .must_match("ranks_per_node values", options.ranks_per_node)
        .must_match("chunk sizes", static_cast<std::int64_t>(options.chunk_bytes));
  }
  call.agree();

  detail::exchange_map& g = im.exchanges;
  g.comm = comm;
  g.rank = call.rank();
  g.size = call.size();
  g.context = conveyor::detail::context_of(call).shared_from_this();
  for (const transform& t : batch) {
    detail::transform_plan tp;
    tp.src = &g.layouts.emplace_back(*t.src);
    tp.dst = &g.layouts.emplace_back(*t.dst);
    tp.ndim = t.src->ndim();
    for (int k = 0; k < tp.ndim; ++k)
      tp.perm[static_cast<std::size_t>(k)] = t.perm.empty() ? k : t.perm[static_cast<std::size_t>(k)];
    tp.type = t.type;
    tp.esize = dtype_size(t.type);
    tp.scale = {t.alpha, t.beta, t.conjugate, t.alpha_imag, t.beta_imag};
    g.transforms.push_back(std::move(tp));
  }
  for (auto& tp : g.transforms) g.enumerate(tp);
  g.orders_and_volume();
  conveyor::detail::comm_context& ctx = conveyor::detail::context_of(call);
  const int ppn = options.ranks_per_node > 0 ? options.ranks_per_node : ctx.env_ranks_per_node;
  im.chosen = options.transport == transport::automatic ? env_transport() : options.transport;
  const bool asked = options.transport != transport::automatic;
  const bool by_model = im.chosen == transport::automatic;
  if (by_model) im.chosen = choose_transport(g, ctx.layout(ppn), options.chunk_bytes, im.predicted);
  // one_copy wherever it can run (the model's choices copy each remote byte twice),
  // tried collectively: the same verdict on every rank.
  const bool one_node = ctx.layout(0).nodes == 1 && ppn == 0;
  if (im.chosen == transport::one_copy || (by_model && one_node)) {
    // auto only pushes: pulling read the tensor case slower than one_sided (docs/results.md).
    im.mover = detail::make_one_copy_transport(g, one_node, im.chosen == transport::one_copy, ctx.layout(0).node_cpus);
    if (im.mover) im.chosen = transport::one_copy;
    else if (im.chosen == transport::one_copy && asked) {
      throw error(
          errc::invalid_argument,
          "redistribute: the one_copy transport needs every rank on one node, the destinations (or the sources) that "
          "exchange with other ranks in node memory (conveyor::node_alloc), and sources disjoint from destinations, on "
          "every rank");
    } else if (im.chosen == transport::one_copy) {
      im.chosen =
          choose_transport(g, ctx.layout(ppn), options.chunk_bytes, im.predicted);  // CONVEYOR_REDISTRIBUTE_TRANSPORT
    }
  }
  if (!im.mover) {
    // Only the packed transport packs interval products; the others walk pieces.
    if (im.chosen != transport::packed) g.materialize_pieces();
    const int node_color = ppn > 0 ? ctx.layout(ppn).node_of[static_cast<std::size_t>(g.rank)] : -1;
    im.mover = build_transport(im.chosen, g, options, node_color, !asked);
  }

  // Relabeling of the destination (COSTA): gains from the volume matrix.
  const conveyor::detail::node_layout* nodes = nullptr;
  if (options.intra_node_cost != 1.0) nodes = &ctx.layout(ppn);
  const std::vector<double> cost = detail::pair_costs(g.size, nodes, options.intra_node_cost);
  im.sigma = detail::relabel(g.volume, cost, g.size, options.relabel);
  im.relabeled_remote = detail::remote_volume(g.volume, g.size, im.sigma);
}

plan::~plan() = default;
plan::plan(plan&&) noexcept = default;
plan& plan::operator=(plan&&) noexcept = default;

void plan::execute() { impl_->mover->execute(); }

redistribute::transport plan::transport() const { return impl_->chosen; }
double plan::predicted_seconds(redistribute::transport t) const {
  const int i = static_cast<int>(t);
  return i > 0 && i < static_cast<int>(impl_->predicted.size()) ? impl_->predicted[static_cast<std::size_t>(i)] : 0.0;
}
const std::vector<std::int64_t>& plan::volume() const { return impl_->exchanges.volume; }
std::int64_t plan::remote_bytes() const {
  const detail::exchange_map& g = impl_->exchanges;
  std::vector<int> id(static_cast<std::size_t>(g.size));
  std::iota(id.begin(), id.end(), 0);
  return detail::remote_volume(g.volume, g.size, id);
}
const std::vector<int>& plan::sigma() const { return impl_->sigma; }
std::int64_t plan::relabeled_remote_bytes() const { return impl_->relabeled_remote; }
layout plan::relabeled_destination(std::size_t k) const {
  return impl_->exchanges.transforms.at(k).dst->relabeled(impl_->sigma);
}

}  // namespace conveyor::redistribute
