// Packing in source order (one_sided, alltoallv): see build_source_order below
// and docs/algorithms.md ("Packing in source order").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "redistribute/plan_impl.hpp"

namespace conveyor::redistribute {

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
  // Row groups: pieces whose rows lie in the same source rows — same storage (data,
  // strides), same extents in every axis but the innermost packed one (`last`, the
  // source's unit-stride axis), first rows in the same period of the next-innermost
  // stride — and that are contiguous along `last` on both sides. Within one block
  // these are the tensor case's 288-byte pieces of every 1152-byte row; across the
  // blocks of a ScaLAPACK local array, the 32-row pieces that make up each local
  // column. Group axes are listed in packed order, outermost first.
  const auto last_of = [](const transform_plan& t) { return static_cast<std::size_t>(t.order[static_cast<std::size_t>(t.ndim - 1)]); };
  const auto corner_offset = [&](const job& j) {  // elements from the storage's data pointer
    const block_storage ss = j.t->src->storage(j.p->src_block);
    return (src_corner(*j.t, *j.p) - static_cast<const char*>(ss.data)) / static_cast<std::ptrdiff_t>(j.t->esize);
  };
  const auto group_key = [&](const job& j) {
    const transform_plan& t = *j.t;
    const block_storage ss = t.src->storage(j.p->src_block);
    std::vector<std::int64_t> k{static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(j.t)),
                                static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(ss.data))};
    for (int d = 0; d < t.ndim; ++d) k.push_back(ss.strides[static_cast<std::size_t>(d)]);
    for (int o = 0; o + 1 < t.ndim; ++o) k.push_back(j.p->ext[static_cast<std::size_t>(t.order[static_cast<std::size_t>(o)])]);
    const std::int64_t period = ss.strides[static_cast<std::size_t>(t.order[static_cast<std::size_t>(t.ndim - 2)])];
    const std::int64_t at = corner_offset(j);
    k.push_back(at - at % std::max<std::int64_t>(period, 1));
    return k;
  };
  const auto groupable = [&](const job& j) {
    const transform_plan& t = *j.t;
    if (t.ndim < 2) return false;
    const block_storage ss = t.src->storage(j.p->src_block);
    for (int d = 0; d < t.ndim; ++d) {
      if (ss.strides[static_cast<std::size_t>(d)] <= 0) return false;
    }
    return ss.strides[last_of(t)] == 1 && corner_offset(j) >= 0;
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
    if (groupable(jobs[i])) groups[group_key(jobs[i])].push_back(i);
  }
  std::vector<char> grouped(jobs.size(), 0);
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const job& first = jobs[members.front()];
    const transform_plan& t = *first.t;
    detail::row_group g;
    g.type = t.type;
    g.outer_dims = t.ndim - 1;
    const block_storage ss = t.src->storage(first.p->src_block);
    std::int64_t base = corner_offset(first);
    for (std::size_t i : members) base = std::min<std::int64_t>(base, corner_offset(jobs[i]));
    g.src = static_cast<const char*>(ss.data) + base * static_cast<std::int64_t>(t.esize);
    for (int o = 0; o < g.outer_dims; ++o) {
      const auto d = static_cast<std::size_t>(t.order[static_cast<std::size_t>(o)]);
      g.extent[static_cast<std::size_t>(o)] = first.p->ext[d];
      g.src_stride[static_cast<std::size_t>(o)] = ss.strides[d];
    }
    bool ok = true;
    for (std::size_t i : members) {
      detail::row_group::member m;
      ok = ok && member_of(jobs[i], m);
      m.src_shift = corner_offset(jobs[i]) - base;
      g.members.push_back(m);
    }
    if (!ok) continue;
    // Members in source order, so each row is read front to back.
    std::sort(g.members.begin(), g.members.end(),
              [](const detail::row_group::member& a, const detail::row_group::member& b) { return a.src_shift < b.src_shift; });
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

void plan::impl::run_source_order() const {
  for (const auto& g : row_groups) detail::apply(g);
  for (const copy_op& op : source_order) {
    detail::apply(op.t->type, op.copy, op.src, op.dst, op.local ? op.t->scale : detail::scaling{});
  }
}

}  // namespace conveyor::redistribute
