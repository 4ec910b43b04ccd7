// SPDX-License-Identifier: BSD-3-Clause
// Packing in source order (source_order.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

#include "redistribute/source_order.hpp"

namespace conveyor::redistribute::detail {

namespace {

// A piece that may join a row group: its rows (member), the extents of its outer
// axes in packed order, and the key of the source rows it shares (storage,
// strides, outer extents, and which period of the next-innermost stride its first
// row starts in).
struct row_candidate {
  std::vector<std::int64_t> key;
  row_group::member m;
  std::array<std::int64_t, max_dims> extent{};
  int outer = 0;
  dtype type = dtype::float64;
  std::size_t job = 0;
  bool local = false;  // a local copy (not packing)
};

// Candidates with equal keys (two or more) become row groups, members in source
// order (each row read front to back); returns which jobs joined a group.
// local_groups[i]: group i has only local copies.
std::vector<char> form_row_groups(std::vector<row_candidate>& c, std::size_t jobs, std::vector<row_group>& out,
                                  std::vector<char>& local_groups) {
  std::map<std::vector<std::int64_t>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < c.size(); ++i) groups[c[i].key].push_back(i);
  std::vector<char> joined(jobs, 0);
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    row_group g;
    g.type = c[members.front()].type;
    g.outer_dims = c[members.front()].outer;
    g.extent = c[members.front()].extent;
    char local = 1;
    for (std::size_t i : members) {
      g.members.push_back(c[i].m);
      joined[c[i].job] = 1;
      local &= c[i].local ? 1 : 0;
    }
    local_groups.push_back(local);
    std::sort(g.members.begin(), g.members.end(), [](const row_group::member& a, const row_group::member& b) {
      return static_cast<const char*>(a.src) < static_cast<const char*>(b.src);
    });
    out.push_back(std::move(g));
  }
  return joined;
}

// The key part every candidate shares: transform, storage, strides; then the
// outer extents and the row period of the corner (elements from data).
std::vector<std::int64_t> rows_key(const void* t, const block_storage& s, int ndim, std::int64_t corner,
                                   std::int64_t period) {
  std::vector<std::int64_t> k{static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(t)),
                              static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(s.data))};
  for (int d = 0; d < ndim; ++d) k.push_back(s.strides[static_cast<std::size_t>(d)]);
  k.push_back(corner - corner % std::max<std::int64_t>(period, 1));
  return k;
}

// Whether a copy changes which axis is contiguous: the axis with the smallest
// destination stride is not the one with the smallest source stride (axes of
// extent 1 do not count).
bool transposes(const box_copy& c) {
  int src_inner = -1, dst_inner = -1;
  for (int d = 0; d < c.ndim; ++d) {
    const auto k = static_cast<std::size_t>(d);
    if (c.extent[k] < 2) continue;
    if (src_inner < 0 || std::abs(c.src_stride[k]) < std::abs(c.src_stride[static_cast<std::size_t>(src_inner)]))
      src_inner = d;
    if (dst_inner < 0 || std::abs(c.dst_stride[k]) < std::abs(c.dst_stride[static_cast<std::size_t>(dst_inner)]))
      dst_inner = d;
  }
  return src_inner != dst_inner;
}

bool positive_strides(const block_storage& s, int ndim) {
  for (int d = 0; d < ndim; ++d) {
    if (s.strides[static_cast<std::size_t>(d)] <= 0) return false;
  }
  return true;
}

// Pieces are cut into slabs of at most this many bytes (see the constructor).
constexpr std::int64_t kSlabBytes = 16 << 10;

// Cuts piece p into slabs: dimensions before d taken one index at a time, d in
// runs of `rows`, later ones whole, so each slab is a contiguous range of the
// piece's packed (row-major) bytes; fn(slab, element offset of the slab in the piece).
template <class Fn>
void for_each_slab(const transform_plan& t, const piece& p, Fn&& fn) {
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
}

// A piece this rank copies out of its source blocks: into a package at `out`, or
// (out = null) straight into a destination block at `dst` with its strides (per
// destination axis), transformed: mine (local), or a peer's mapped here (pushed).
struct copy_job {
  const transform_plan* t;
  const piece* p;
  char* out;
  char* dst;
  coords dst_strides;
  bool pushed;
};

// Every piece this rank copies: the local ones, then each peer's, in package order.
std::vector<copy_job> copy_jobs(const exchange_map& g, const std::vector<char*>& package_of_peer,
                                const std::vector<std::vector<mapped_destination>>* pushed) {
  std::vector<copy_job> jobs;
  for (const auto& t : g.transforms) {
    for (const piece& p : t.self) {
      const block_storage ds = t.dst->storage(p.dst_block);
      coords st{};
      for (int k = 0; k < t.ndim; ++k) st[static_cast<std::size_t>(k)] = ds.strides[static_cast<std::size_t>(k)];
      jobs.push_back({&t, &p, nullptr, exchange_map::dst_corner(t, p), st, false});
    }
  }
  for (int peer : g.send_peers) {
    const auto k = static_cast<std::size_t>(peer);
    char* out = package_of_peer.empty() ? nullptr : package_of_peer[k];
    const mapped_destination* to = pushed && !(*pushed)[k].empty() ? (*pushed)[k].data() : nullptr;
    g.for_pieces(&transform_plan::send, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
      if (to) {
        jobs.push_back({&t, &p, nullptr, to[i].corner, to[i].strides, true});
      } else {
        jobs.push_back({&t, &p, out, nullptr, {}, false});
        out += exchange_map::piece_bytes(t, p);
      }
    });
  }
  return jobs;
}

// A direct copy (out = null) of the part `sl` of job j's piece: source block ->
// destination block, transformed.
box_copy direct_copy(const copy_job& j, const piece& sl) {
  return exchange_map::direct_copy(*j.t, sl.ext, j.t->src->storage(sl.src_block).strides, j.dst_strides);
}

char* direct_corner(const copy_job& j, const piece& sl) {
  std::int64_t off = 0;
  for (int k = 0; k < j.t->ndim; ++k) {
    const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(j.t->perm[kk]);
    off += (sl.lo[d] - j.p->lo[d]) * j.dst_strides[kk];
  }
  return j.dst + off * static_cast<std::int64_t>(j.t->esize);
}

// Job i as a member of a row group on the source side, if it can be one: pieces
// whose rows lie in the same source rows (same storage and strides, same extents
// in every axis but the innermost packed one, `last`, the source's unit-stride
// axis; first rows in the same period of the next-innermost stride), each
// contiguous along `last` on both sides. Within one block these are the tensor
// case's 288-byte pieces of every 1152-byte row; across the blocks of a ScaLAPACK
// local array, the 32-row pieces that make up each local column.
bool row_candidate_of(const copy_job& j, std::size_t i, row_candidate& c) {
  const transform_plan& t = *j.t;
  const int n = t.ndim;
  const block_storage ss = t.src->storage(j.p->src_block);
  const auto last = static_cast<std::size_t>(t.order[static_cast<std::size_t>(n - 1)]);
  if (n < 2 || !positive_strides(ss, n) || ss.strides[last] != 1) return false;
  c.m.src = exchange_map::src_corner(t, *j.p);
  coords dst_stride{};  // per source axis
  if (j.out) {
    dst_stride = exchange_map::packed_strides(*j.p, t.order, n);
    c.m.dst = j.out;
  } else {
    for (int k = 0; k < n; ++k)
      dst_stride[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] =
          j.dst_strides[static_cast<std::size_t>(k)];
    c.m.dst = j.dst;
    c.m.scale = t.scale;
  }
  c.m.length = j.p->ext[last];
  if (dst_stride[last] != 1 && c.m.length != 1) return false;
  const std::int64_t corner =
      (static_cast<const char*>(c.m.src) - static_cast<const char*>(ss.data)) / static_cast<std::ptrdiff_t>(t.esize);
  c.key = rows_key(&t, ss, n, corner, ss.strides[static_cast<std::size_t>(t.order[static_cast<std::size_t>(n - 2)])]);
  c.outer = n - 1;
  for (int o = 0; o + 1 < n; ++o) {
    const auto d = static_cast<std::size_t>(t.order[static_cast<std::size_t>(o)]);
    c.extent[static_cast<std::size_t>(o)] = j.p->ext[d];
    c.key.push_back(j.p->ext[d]);
    c.m.src_stride[static_cast<std::size_t>(o)] = ss.strides[d];
    c.m.dst_stride[static_cast<std::size_t>(o)] = dst_stride[d];
  }
  c.type = t.type;
  c.job = i;
  c.local = j.out == nullptr && !j.pushed;
  return true;
}

}  // namespace

// Packing in source order. Packing peer by peer reads each source block once per
// peer, a fraction of every row at a time (the tensor case: 288 of every 1152
// bytes), which streams from memory at a fraction of its bandwidth. Instead, pieces
// that share source rows are copied row by row together (row groups), and every
// other piece (packed or copied locally) is cut into slabs of at most kSlabBytes
// along its leading source dimensions, the slabs run in order of source address,
// so the pieces cut from one source region are all served while it is in cache.
source_order_copies::source_order_copies(const exchange_map& g, const std::vector<char*>& package_of_peer,
                                         bool local_last, const std::vector<std::vector<mapped_destination>>* pushed) {
  const std::vector<copy_job> jobs = copy_jobs(g, package_of_peer, pushed);
  std::vector<row_candidate> cands;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    row_candidate c;
    if (row_candidate_of(jobs[i], i, c)) cands.push_back(std::move(c));
  }
  std::vector<char> local_groups;
  const std::vector<char> grouped = form_row_groups(cands, jobs.size(), row_groups_, local_groups);
  // The rest: slabs in source-address order.
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (grouped[i]) continue;
    const transform_plan& t = *jobs[i].t;
    const copy_job j = jobs[i];
    if (!j.out && transposes(direct_copy(j, *j.p))) {
      // A transpose stays whole: the kernel's tiles need both axes (a slab of
      // whole source rows would scatter every element of a row to another
      // destination line).
      ops_.push_back({exchange_map::src_corner(t, *j.p), j.dst, direct_copy(j, *j.p), &t, !j.pushed, true});
      continue;
    }
    for_each_slab(t, *j.p, [&](const piece& sl, std::int64_t at) {
      if (j.out)
        ops_.push_back({exchange_map::src_corner(t, sl), j.out + at * static_cast<std::int64_t>(t.esize),
                        exchange_map::pack_copy(t, sl), &t, false, false});
      else
        ops_.push_back(
            {exchange_map::src_corner(t, sl), direct_corner(j, sl), direct_copy(j, sl), &t, !j.pushed, true});
    });
  }
  std::stable_sort(ops_.begin(), ops_.end(), [](const copy_op& a, const copy_op& b) { return a.src < b.src; });
  packing_groups_ = row_groups_.size();
  packing_ops_ = ops_.size();
  if (local_last) put_local_copies_last(local_groups);
}

// Everything that fills a package first (each part still in source order), then
// the local copies: one_sided publishes its packages before them.
void source_order_copies::put_local_copies_last(const std::vector<char>& local_groups) {
  std::vector<row_group> groups;
  for (int local = 0; local < 2; ++local) {
    for (std::size_t i = 0; i < row_groups_.size(); ++i) {
      if (local_groups[i] == local) groups.push_back(std::move(row_groups_[i]));
    }
  }
  packing_groups_ = static_cast<std::size_t>(std::count(local_groups.begin(), local_groups.end(), 0));
  row_groups_ = std::move(groups);
  const auto local_begin = std::stable_partition(ops_.begin(), ops_.end(), [](const copy_op& op) { return !op.local; });
  packing_ops_ = static_cast<std::size_t>(local_begin - ops_.begin());
}

void source_order_copies::run(copies which) const {
  const std::size_t g0 = which == copies::local ? packing_groups_ : 0;
  const std::size_t g1 = which == copies::packing ? packing_groups_ : row_groups_.size();
  const std::size_t o0 = which == copies::local ? packing_ops_ : 0;
  const std::size_t o1 = which == copies::packing ? packing_ops_ : ops_.size();
  for (std::size_t i = g0; i < g1; ++i) apply(row_groups_[i]);
  for (std::size_t i = o0; i < o1; ++i) {
    const copy_op& op = ops_[i];
    apply(op.t->type, op.copy, op.src, op.dst, op.transformed ? op.t->scale : scaling{});
  }
}

}  // namespace conveyor::redistribute::detail
