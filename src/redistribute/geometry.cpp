// The geometry of a plan (geometry.hpp): addressing, packing, and building it.
//
// Building: for each transform, every rank walks its own source blocks and, per
// dimension, the range of destination blocks they overlap (binary search or
// arithmetic on the split points: the grid overlay restricted to what this rank
// holds), producing pieces grouped by destination owner; symmetrically it walks
// its destination blocks to know what it receives. Cost: O(overlapping block pairs
// of this rank) plus one MPI_Allgather of (transforms + P) int64.
#include "redistribute/geometry.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"

namespace conveyor::redistribute::detail {

// --- addressing -------------------------------------------------------------------
char* geometry::element_address(const layout& l, const block_index& b, const coords& at_global, std::size_t esize) {
  const block_storage s = l.storage(b);
  std::int64_t off = s.offset;
  for (int d = 0; d < l.ndim(); ++d) {
    const auto k = static_cast<std::size_t>(d);
    off += (at_global[k] - l.splits(d).start(b[k])) * s.strides[k];
  }
  return static_cast<char*>(s.data) + off * static_cast<std::int64_t>(esize);
}

coords geometry::to_dst(const transform_plan& t, const coords& src) {
  coords out{};
  for (int k = 0; k < t.ndim; ++k) out[static_cast<std::size_t>(k)] = src[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])];
  return out;
}

coords geometry::packed_strides(const piece& p, const axis_order& order, int ndim) {
  coords st{};
  std::int64_t s = 1;
  for (int k = ndim; k-- > 0;) {
    const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    st[d] = s;
    s *= p.ext[d];
  }
  return st;
}

box_copy geometry::unpack_copy(const transform_plan& t, const piece& p, const axis_order& order) {
  box_copy c;
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

box_copy geometry::pack_copy(const transform_plan& t, const piece& p) {
  box_copy c;
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

box_copy geometry::local_copy(const transform_plan& t, const piece& p) {
  box_copy c;
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

char* geometry::src_corner(const transform_plan& t, const piece& p) { return element_address(*t.src, p.src_block, p.lo, t.esize); }
char* geometry::dst_corner(const transform_plan& t, const piece& p) {
  return element_address(*t.dst, p.dst_block, to_dst(t, p.lo), t.esize);
}

// --- packages -----------------------------------------------------------------------
std::size_t geometry::piece_count(piece_lists dir, int peer) const {
  std::size_t n = 0;
  for (const auto& t : ts) n += (t.*dir)[static_cast<std::size_t>(peer)].size();
  return n;
}

void geometry::pack_range(int peer, std::size_t first, std::size_t last, char* base, std::int64_t& offset) const {
  for_pieces(&transform_plan::send, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
    if (i < first || i >= last) return;
    apply(t.type, pack_copy(t, p), src_corner(t, p), base + offset, scaling{});
    offset += piece_bytes(t, p);
  });
}

void geometry::unpack_range(int peer, std::size_t first, std::size_t last, const char* base, std::int64_t& offset) const {
  for_pieces(&transform_plan::recv, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
    if (i < first || i >= last) return;
    apply(t.type, unpack_copy(t, p, t.peer_order[static_cast<std::size_t>(peer)]), base + offset, dst_corner(t, p), t.scale);
    offset += piece_bytes(t, p);
  });
}

void geometry::pack_all(int peer, char* base) const {
  std::int64_t offset = 0;
  pack_range(peer, 0, piece_count(&transform_plan::send, peer), base, offset);
}

void geometry::unpack_all(int peer, const char* base) const {
  std::int64_t offset = 0;
  unpack_range(peer, 0, piece_count(&transform_plan::recv, peer), base, offset);
}

void geometry::copy_local() const {
  for (const auto& t : ts) {
    for (const piece& p : t.self) apply(t.type, local_copy(t, p), src_corner(t, p), dst_corner(t, p), t.scale);
  }
}

// --- building -------------------------------------------------------------------------
namespace {

// Sorts pieces by their corner (lo). Pieces are 256 bytes (8-dimensional
// boxes and block indices), so an index is sorted and the pieces moved once:
// sorting them in place moved each ~log n times, a sixth of a plan's build time
// for ScaLAPACK's REDIST testers (200 x 200 matrices in blocks of 1-9).
void sort_by_corner(std::vector<piece>& v) {
  if (v.size() < 2) return;
  std::vector<std::uint32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return v[a].lo < v[b].lo; });
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

void geometry::enumerate(transform_plan& t) const {
  const layout& S = *t.src;
  const layout& D = *t.dst;
  const int n = t.ndim;
  t.send.assign(static_cast<std::size_t>(size), {});
  t.recv.assign(static_cast<std::size_t>(size), {});
  // inv[d]: the dst axis holding src axis d.
  std::array<int, max_dims> inv{};
  for (int k = 0; k < n; ++k) inv[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = k;

  // Sending side: my source blocks x the destination blocks they overlap.
  const std::vector<block_index> my_src_blocks = S.blocks_of(rank);
  t.has_src_block = !my_src_blocks.empty();
  if (t.has_src_block) t.first_src_block = my_src_blocks.front();
  for (const block_index& bs : my_src_blocks) {
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
  for (auto& v : t.send) sort_by_corner(v);
  for (auto& v : t.recv) sort_by_corner(v);

}

// One MPI_Allgather gives every rank what it needs from the others: each rank's
// packing order of every transform (mine: from my first source block's strides,
// largest outermost; ties: the lower axis outside) and its row of the volume
// matrix (the bytes it sends to each rank; its own entry: local copies).
void geometry::exchange_orders_and_volume() {
  const std::size_t nt = ts.size(), P = static_cast<std::size_t>(size), record = nt + P;
  std::vector<std::int64_t> mine(record, 0), all(record * P, 0);
  for (std::size_t i = 0; i < nt; ++i) {
    transform_plan& t = ts[i];
    std::iota(t.order.begin(), t.order.begin() + t.ndim, 0);
    if (t.has_src_block) {
      const block_storage s = t.src->storage(t.first_src_block);
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

// Bytes per peer and the peers (local: the volume matrix comes with the orders).
void geometry::count_bytes() {
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

}  // namespace conveyor::redistribute::detail
