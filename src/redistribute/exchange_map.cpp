// SPDX-License-Identifier: BSD-3-Clause
// The exchange map of a plan (exchange_map.hpp), what moves where: building it.
// (How a package is laid out, and packing it: exchange_map_packing.cpp.)
//
// Building: for each transform, every rank walks its own source blocks and, per
// dimension, the range of destination blocks they overlap (binary search or
// arithmetic on the split points: the grid overlay restricted to what this rank
// holds), producing pieces grouped by destination owner; symmetrically it walks
// its destination blocks to know what it receives. Cost: O(overlapping block pairs
// of this rank) plus one MPI_Allgather of (transforms + P) int64. Between two
// block-cyclic layouts the pieces are interval products instead (exchange_map.hpp):
// O(row + column intervals of this rank), no sort.
#include "redistribute/exchange_map.hpp"
#include "redistribute/cyclic_grid.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"

namespace conveyor::redistribute::detail {

// --- building -------------------------------------------------------------------------
namespace {

// Sorts pieces by their corner (lo), lexicographically, or for a grid pair
// (`columns_first`) by source axis 1 first. Pieces are 256 bytes (8-dimensional
// boxes and block indices), so an index is sorted and the pieces moved once:
// sorting them in place moved each ~log n times, a sixth of a plan's build time
// for ScaLAPACK's REDIST testers (200 x 200 matrices in blocks of 1-9).
void sort_by_corner(std::vector<piece>& v, bool columns_first) {
  if (v.size() < 2) return;
  std::vector<std::uint32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (columns_first && v[a].lo[1] != v[b].lo[1]) return v[a].lo[1] < v[b].lo[1];
    return v[a].lo < v[b].lo;
  });
  std::vector<piece> sorted;
  sorted.reserve(v.size());
  for (const std::uint32_t i : order) sorted.push_back(v[i]);
  v.swap(sorted);
}

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

namespace {

// The intervals of source axis d that one side of a transform walks: `mine`, the
// blocks of my grid coordinate along my layout's axis (every procs-th from the
// first), cut by the other layout's blocks along its axis; each interval goes to
// the list of the other layout's grid coordinate. record(interval, my block,
// other block, other coordinate) fills in its block indices and element offsets
// (an offset stays 0 where it means nothing on this rank).
template <class Record>
std::vector<std::vector<axis_interval>> cut_axis(const axis_splits& mine_splits, const cyclic_grid::axis& mine,
                                                 int my_coord, const axis_splits& other_splits,
                                                 const cyclic_grid::axis& other, Record&& record) {
  std::vector<std::vector<axis_interval>> by_coord(static_cast<std::size_t>(other.procs));
  for (std::int64_t k = mine.first_block_at(my_coord); k < mine_splits.count(); k += mine.procs) {
    const std::int64_t lo = mine_splits.start(k), hi = mine_splits.start(k + 1);
    for (std::int64_t b = other_splits.block_of(lo); b < other_splits.count() && other_splits.start(b) < hi; ++b) {
      const std::int64_t a = std::max(lo, other_splits.start(b)), e = std::min(hi, other_splits.start(b + 1));
      const int coord = other.coord(b);
      axis_interval iv;
      iv.lo = a;
      iv.len = e - a;
      record(iv, k, b, coord);
      by_coord[static_cast<std::size_t>(coord)].push_back(iv);
    }
  }
  return by_coord;
}

}  // namespace

// Interval products (exchange_map.hpp): per source axis, my source blocks cut by the
// destination blocks (what I send, listed by destination grid coordinate) and my
// destination blocks cut by the source blocks (what I receive, by source grid
// coordinate); each peer's product is one list of each axis.
void exchange_map::enumerate_products(transform_plan& t, const cyclic_grid& src_grid,
                                      const cyclic_grid& dst_grid) const {
  const auto P = static_cast<std::size_t>(size);
  t.products = true;
  t.send_products.assign(P, {});
  t.recv_products.assign(P, {});
  t.self_product = {};
  t.src_local = src_grid.local;
  t.dst_local = dst_grid.local;
  std::array<int, 2> inv{};  // the destination axis holding source axis d
  for (int k = 0; k < 2; ++k) inv[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = k;
  for (std::size_t d = 0; d < 2; ++d) {
    t.src_stride[d] = d == 0 ? 1 : src_grid.lld;
    t.dst_stride[d] = inv[d] == 0 ? 1 : dst_grid.lld;
  }
  const layout& src_layout = *t.src;
  const layout& dst_layout = *t.dst;
  // Sending side, and my local copies.
  if (src_grid.position[0] >= 0) {
    const std::int64_t k0 = src_grid.axes[0].first_block_at(src_grid.position[0]);
    const std::int64_t k1 = src_grid.axes[1].first_block_at(src_grid.position[1]);
    t.has_src_block = k0 < src_layout.splits(0).count() && k1 < src_layout.splits(1).count();
    if (t.has_src_block) t.first_src_block[0] = k0, t.first_src_block[1] = k1;
    std::vector<std::vector<axis_interval>> lists[2];
    for (std::size_t d = 0; d < 2; ++d) {
      const auto kd = static_cast<std::size_t>(inv[d]);
      const cyclic_grid::axis& dst_axis = dst_grid.axes[kd];
      lists[d] = cut_axis(src_layout.splits(static_cast<int>(d)), src_grid.axes[d], src_grid.position[d],
                          dst_layout.splits(inv[d]), dst_axis,
                          [&](axis_interval& iv, std::int64_t k, std::int64_t b, int coord) {
                            iv.src_block = k;
                            iv.dst_block = b;
                            iv.src_at = src_grid.axes[d].local_index(iv.lo) * t.src_stride[d];
                            if (coord == dst_grid.position[kd])
                              iv.dst_at = dst_axis.local_index(iv.lo) * t.dst_stride[d];
                          });
    }
    for (int x = 0; x < dst_grid.axes[0].procs; ++x) {
      for (int y = 0; y < dst_grid.axes[1].procs; ++y) {
        const int xy[2] = {x, y};  // destination grid coordinates by destination axis
        const auto& rows = lists[0][static_cast<std::size_t>(xy[inv[0]])];
        const auto& cols = lists[1][static_cast<std::size_t>(xy[inv[1]])];
        if (rows.empty() || cols.empty()) continue;
        const int q = dst_grid.rank_of(x, y);
        interval_product& to = q == rank ? t.self_product : t.send_products[static_cast<std::size_t>(q)];
        to.rows = rows;
        to.cols = cols;
      }
    }
  }
  // Receiving side.
  if (dst_grid.position[0] >= 0) {
    std::vector<std::vector<axis_interval>> lists[2];  // by source axis
    for (std::size_t k = 0; k < 2; ++k) {
      const auto d = static_cast<std::size_t>(t.perm[k]);
      lists[d] = cut_axis(dst_layout.splits(static_cast<int>(k)), dst_grid.axes[k], dst_grid.position[k],
                          src_layout.splits(static_cast<int>(d)), src_grid.axes[d],
                          [&](axis_interval& iv, std::int64_t b, std::int64_t k_src, int) {
                            iv.src_block = k_src;
                            iv.dst_block = b;
                            iv.dst_at = dst_grid.axes[k].local_index(iv.lo) * t.dst_stride[d];
                          });
    }
    for (int x = 0; x < src_grid.axes[0].procs; ++x) {
      for (int y = 0; y < src_grid.axes[1].procs; ++y) {
        const int q = src_grid.rank_of(x, y);
        const auto& rows = lists[0][static_cast<std::size_t>(x)];
        const auto& cols = lists[1][static_cast<std::size_t>(y)];
        if (q == rank || rows.empty() || cols.empty()) continue;  // (my own: the local copies)
        t.recv_products[static_cast<std::size_t>(q)] = {rows, cols};
      }
    }
  }
}

void exchange_map::materialize_pieces() {
  for (auto& t : transforms) {
    if (!t.products) continue;
    std::array<int, 2> inv{};
    for (int k = 0; k < 2; ++k) inv[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = k;
    const auto expand = [&](const interval_product& prod, std::vector<piece>& out) {
      out.reserve(prod.pieces());
      for_product_pieces(prod, [&](const axis_interval& r, const axis_interval& c) {
        piece p;
        p.lo[0] = r.lo, p.lo[1] = c.lo;
        p.ext[0] = r.len, p.ext[1] = c.len;
        p.src_block[0] = r.src_block, p.src_block[1] = c.src_block;
        p.dst_block[static_cast<std::size_t>(inv[0])] = r.dst_block;
        p.dst_block[static_cast<std::size_t>(inv[1])] = c.dst_block;
        out.push_back(p);
      });
    };
    const std::size_t P = t.send_products.size();
    t.send.assign(P, {});
    t.recv.assign(P, {});
    for (std::size_t q = 0; q < P; ++q) {
      expand(t.send_products[q], t.send[q]);
      expand(t.recv_products[q], t.recv[q]);
    }
    expand(t.self_product, t.self);
    t.products = false;
    t.send_products.clear();
    t.recv_products.clear();
    t.self_product = {};
  }
}

void exchange_map::enumerate(transform_plan& t) const {
  const layout& src_layout = *t.src;
  const layout& dst_layout = *t.dst;
  const int n = t.ndim;
  if (n == 2) {
    const auto src_grid = layout_access::cyclic_grid_of(src_layout, rank);
    const auto dst_grid = src_grid ? layout_access::cyclic_grid_of(dst_layout, rank) : std::nullopt;
    t.grid_pair = src_grid && dst_grid;
    if (t.grid_pair && src_grid->formula_storage && dst_grid->formula_storage) {
      return enumerate_products(t, *src_grid, *dst_grid);
    }
  }
  t.send.assign(static_cast<std::size_t>(size), {});
  t.recv.assign(static_cast<std::size_t>(size), {});
  enumerate_sends(t);
  enumerate_receives(t);
  for (auto& v : t.send) sort_by_corner(v, t.grid_pair);
  for (auto& v : t.recv) sort_by_corner(v, t.grid_pair);
}

// Sending side: my source blocks x the destination blocks they overlap (the
// pieces to myself go to t.self).
void exchange_map::enumerate_sends(transform_plan& t) const {
  const layout& src_layout = *t.src;
  const layout& dst_layout = *t.dst;
  const int n = t.ndim;
  const std::vector<block_index> my_src_blocks = src_layout.blocks_of(rank);
  t.has_src_block = !my_src_blocks.empty();
  if (t.has_src_block) t.first_src_block = my_src_blocks.front();
  for (const block_index& bs : my_src_blocks) {
    coords lo{}, hi{}, first{}, last{};
    for (int d = 0; d < n; ++d) {
      const auto k = static_cast<std::size_t>(d);
      lo[k] = src_layout.splits(d).start(bs[k]);
      hi[k] = src_layout.splits(d).start(bs[k] + 1);
    }
    for (int k = 0; k < n; ++k) {  // dst axis k covers src axis perm[k]
      const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
      first[kk] = dst_layout.splits(k).block_of(lo[d]);
      last[kk] = dst_layout.splits(k).block_of(hi[d] - 1);
    }
    for_each_block(n, first, last, [&](const block_index& bd) {
      piece p;
      p.src_block = bs;
      p.dst_block = bd;
      for (int k = 0; k < n; ++k) {
        const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
        const std::int64_t a = std::max(lo[d], dst_layout.splits(k).start(bd[kk]));
        const std::int64_t b = std::min(hi[d], dst_layout.splits(k).start(bd[kk] + 1));
        p.lo[d] = a;
        p.ext[d] = b - a;
      }
      const int owner = dst_layout.owner(bd);
      if (owner == rank) t.self.push_back(p);
      else t.send[static_cast<std::size_t>(owner)].push_back(p);
    });
  }
}

// Receiving side: my destination blocks x the source blocks they overlap (the
// pieces from myself were counted on the sending side).
void exchange_map::enumerate_receives(transform_plan& t) const {
  const layout& src_layout = *t.src;
  const layout& dst_layout = *t.dst;
  const int n = t.ndim;
  for (const block_index& bd : dst_layout.blocks_of(rank)) {
    coords lo{}, hi{}, first{}, last{};
    for (int k = 0; k < n; ++k) {
      const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
      lo[d] = dst_layout.splits(k).start(bd[kk]);
      hi[d] = dst_layout.splits(k).start(bd[kk] + 1);
    }
    for (int d = 0; d < n; ++d) {
      const auto k = static_cast<std::size_t>(d);
      first[k] = src_layout.splits(d).block_of(lo[k]);
      last[k] = src_layout.splits(d).block_of(hi[k] - 1);
    }
    for_each_block(n, first, last, [&](const block_index& bs) {
      const int owner = src_layout.owner(bs);
      if (owner == rank) return;  // counted on the sending side
      piece p;
      p.src_block = bs;
      p.dst_block = bd;
      for (int d = 0; d < n; ++d) {
        const auto k = static_cast<std::size_t>(d);
        const std::int64_t a = std::max(lo[k], src_layout.splits(d).start(bs[k]));
        const std::int64_t b = std::min(hi[k], src_layout.splits(d).start(bs[k] + 1));
        p.lo[k] = a;
        p.ext[k] = b - a;
      }
      t.recv[static_cast<std::size_t>(owner)].push_back(p);
    });
  }
}

namespace {

// Per pair of grid coordinates (source along source axis d, destination along the
// destination axis holding it), how many indices of that axis they share: one walk
// over both layouts' blocks along the axis.
std::vector<std::int64_t> axis_overlaps(const axis_splits& src_splits, const cyclic_grid::axis& src,
                                        const axis_splits& dst_splits, const cyclic_grid::axis& dst) {
  std::vector<std::int64_t> shared(static_cast<std::size_t>(src.procs) * static_cast<std::size_t>(dst.procs), 0);
  const std::int64_t extent = src_splits.extent();
  std::int64_t i = 0, j = 0, at = 0;
  while (at < extent) {
    const std::int64_t end = std::min(src_splits.start(i + 1), dst_splits.start(j + 1));
    shared[static_cast<std::size_t>(src.coord(i)) * static_cast<std::size_t>(dst.procs) +
           static_cast<std::size_t>(dst.coord(j))] += end - at;
    at = end;
    if (src_splits.start(i + 1) == end) ++i;
    if (dst_splits.start(j + 1) == end) ++j;
  }
  return shared;
}

// A grid pair's bytes from every rank to every rank, added to `volume` (P x P):
// the overlap of two grid positions is the product of their axes' overlaps.
void add_grid_volume(const transform_plan& t, int P, std::vector<std::int64_t>& volume) {
  const auto src_grid = layout_access::cyclic_grid_of(*t.src, 0), dst_grid = layout_access::cyclic_grid_of(*t.dst, 0);
  std::array<int, 2> inv{};
  for (int k = 0; k < 2; ++k) inv[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = k;
  std::vector<std::int64_t> shared[2];
  for (std::size_t d = 0; d < 2; ++d) {
    shared[d] = axis_overlaps(t.src->splits(static_cast<int>(d)), src_grid->axes[d], t.dst->splits(inv[d]),
                              dst_grid->axes[inv[d]]);
  }
  const auto es = static_cast<std::int64_t>(t.esize);
  for (int x0 = 0; x0 < src_grid->axes[0].procs; ++x0) {
    for (int x1 = 0; x1 < src_grid->axes[1].procs; ++x1) {
      const auto from = static_cast<std::size_t>(src_grid->rank_of(x0, x1));
      for (int y0 = 0; y0 < dst_grid->axes[0].procs; ++y0) {
        for (int y1 = 0; y1 < dst_grid->axes[1].procs; ++y1) {
          const int y[2] = {y0, y1};  // by destination axis
          const std::int64_t rows = shared[0][static_cast<std::size_t>(x0 * dst_grid->axes[inv[0]].procs + y[inv[0]])];
          const std::int64_t cols = shared[1][static_cast<std::size_t>(x1 * dst_grid->axes[inv[1]].procs + y[inv[1]])];
          volume[from * static_cast<std::size_t>(P) + static_cast<std::size_t>(dst_grid->rank_of(y0, y1))] +=
              rows * cols * es;
        }
      }
    }
  }
}

}  // namespace

// Each rank's packing order of every transform (mine: from my first source
// block's strides, largest outermost, ties: the lower axis outside; a grid pair's:
// {1, 0} on every rank) and the volume matrix (row q: the bytes rank q sends to
// each rank; its own entry: local copies). Where every transform is a grid pair,
// every rank knows both without asking; otherwise one MPI_Allgather gives every
// rank each rank's orders and row.
void exchange_map::orders_and_volume() {
  const std::size_t nt = transforms.size(), P = static_cast<std::size_t>(size), record = nt + P;
  count_bytes();
  if (std::all_of(transforms.begin(), transforms.end(), [](const transform_plan& t) { return t.grid_pair; })) {
    volume.assign(P * P, 0);
    for (auto& t : transforms) {
      t.order[0] = 1, t.order[1] = 0;
      t.peer_order.assign(P, t.order);
      add_grid_volume(t, size, volume);
    }
    return;
  }
  std::vector<std::int64_t> mine(record, 0), all(record * P, 0);
  for (std::size_t i = 0; i < nt; ++i) {
    transform_plan& t = transforms[i];
    std::iota(t.order.begin(), t.order.begin() + t.ndim, 0);
    if (t.grid_pair) {
      t.order[0] = 1, t.order[1] = 0;
    } else if (t.has_src_block) {
      const block_storage s = t.src->storage(t.first_src_block);
      std::stable_sort(t.order.begin(), t.order.begin() + t.ndim, [&](int x, int y) {
        return std::abs(s.strides[static_cast<std::size_t>(x)]) > std::abs(s.strides[static_cast<std::size_t>(y)]);
      });
    }
    for (int k = 0; k < t.ndim; ++k) mine[i] |= std::int64_t{t.order[static_cast<std::size_t>(k)]} << (4 * k);
  }
  std::copy(send_bytes.begin(), send_bytes.end(), mine.begin() + static_cast<std::ptrdiff_t>(nt));
  mine[nt + static_cast<std::size_t>(rank)] = self_bytes;
  conveyor::detail::check_mpi(MPI_Allgather(mine.data(), static_cast<int>(record), MPI_INT64_T, all.data(),
                                            static_cast<int>(record), MPI_INT64_T, comm),
                              "MPI_Allgather (orders and volume)");
  volume.assign(P * P, 0);
  for (std::size_t q = 0; q < P; ++q) {
    std::copy(all.begin() + static_cast<std::ptrdiff_t>(q * record + nt),
              all.begin() + static_cast<std::ptrdiff_t>((q + 1) * record),
              volume.begin() + static_cast<std::ptrdiff_t>(q * P));
  }
  for (std::size_t i = 0; i < nt; ++i) {
    transform_plan& t = transforms[i];
    t.peer_order.assign(P, axis_order{});
    for (std::size_t q = 0; q < P; ++q) {
      const std::int64_t code = all[q * record + i];
      for (int k = 0; k < t.ndim; ++k)
        t.peer_order[q][static_cast<std::size_t>(k)] = static_cast<int>((code >> (4 * k)) & 15);
    }
  }
}

// Bytes per peer and the peers (local: the volume matrix comes with the orders).
void exchange_map::count_bytes() {
  send_peers.clear();
  recv_peers.clear();
  send_bytes.assign(static_cast<std::size_t>(size), 0);
  recv_bytes.assign(static_cast<std::size_t>(size), 0);
  self_bytes = 0;
  for (const auto& t : transforms) {
    const auto es = static_cast<std::int64_t>(t.esize);
    for (int p = 0; p < size; ++p) {
      const auto k = static_cast<std::size_t>(p);
      if (t.products) {
        send_bytes[k] += t.send_products[k].elements() * es;
        recv_bytes[k] += t.recv_products[k].elements() * es;
        continue;
      }
      for (const piece& pc : t.send[k]) send_bytes[k] += piece_bytes(t, pc);
      for (const piece& pc : t.recv[k]) recv_bytes[k] += piece_bytes(t, pc);
    }
    if (t.products) self_bytes += t.self_product.elements() * es;
    for (const piece& pc : t.self) self_bytes += piece_bytes(t, pc);
  }
  for (int p = 0; p < size; ++p) {
    if (send_bytes[static_cast<std::size_t>(p)] > 0) send_peers.push_back(p);
    if (recv_bytes[static_cast<std::size_t>(p)] > 0) recv_peers.push_back(p);
  }
}

}  // namespace conveyor::redistribute::detail
