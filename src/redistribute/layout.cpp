// SPDX-License-Identifier: BSD-3-Clause
// Layouts: split points, owners and local storage (see conveyor/redistribute.hpp).
// Cartesian and block-cyclic layouts answer every question by formula; only custom
// layouts keep an owner table (the caller gave one).
#include <algorithm>
#include <set>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include "conveyor/redistribute.hpp"
#include "redistribute/cyclic_grid.hpp"
#include "runtime/partition.hpp"

namespace conveyor::redistribute {

namespace {

[[noreturn]] void invalid(const std::string& what) { throw error(errc::invalid_argument, "layout: " + what); }

}  // namespace

// ---------------------------------------------------------------------------
// axis_splits
// ---------------------------------------------------------------------------
axis_splits axis_splits::explicit_points(std::vector<std::int64_t> points) {
  // {0} alone: an empty dimension (no blocks), so a layout of an empty array.
  if (points.empty() || points.front() != 0) invalid("split points must start at 0");
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i] <= points[i - 1]) {
      invalid("split points must increase strictly (" + std::to_string(points[i - 1]) + " then " +
              std::to_string(points[i]) + ")");
    }
  }
  axis_splits s;
  s.extent_ = points.back();
  s.points_ = std::move(points);
  return s;
}

axis_splits axis_splits::regular(std::int64_t extent, std::int64_t size, std::int64_t first) {
  if (extent < 0) invalid("extent must be >= 0, got " + std::to_string(extent));
  if (size <= 0) invalid("block size must be > 0, got " + std::to_string(size));
  if (first == 0) first = size;
  if (first < 0) invalid("first block " + std::to_string(first) + " is negative");
  axis_splits s;
  s.extent_ = extent;
  s.size_ = size;
  s.first_ = std::min(first, extent);
  return s;
}

std::int64_t axis_splits::count() const {
  if (!points_.empty()) return static_cast<std::int64_t>(points_.size()) - 1;
  if (extent_ == 0) return 0;
  if (extent_ <= first_) return 1;
  return 1 + (extent_ - first_ + size_ - 1) / size_;
}

std::int64_t axis_splits::start(std::int64_t k) const {
  if (!points_.empty()) return points_[static_cast<std::size_t>(k)];
  if (k == 0) return 0;
  return std::min(extent_, first_ + (k - 1) * size_);
}

std::int64_t axis_splits::block_of(std::int64_t x) const {
  if (!points_.empty()) {
    return static_cast<std::int64_t>(std::upper_bound(points_.begin(), points_.end(), x) - points_.begin()) - 1;
  }
  return x < first_ ? 0 : 1 + (x - first_) / size_;
}

// ---------------------------------------------------------------------------
// layout
// ---------------------------------------------------------------------------
struct layout::impl {
  enum class kind { custom, cartesian, block_cyclic } k = kind::custom;
  std::vector<int> owners;  // custom
  std::vector<int> grid;    // cartesian: blocks per dimension = ranks per dimension
  bool column_major_ranks = false;
  block_cyclic_params bc;                                 // block_cyclic
  std::int64_t first_row_block = 0, first_col_block = 0;  // global block of the submatrix's block 0
  void* cart_local = nullptr;                             // cartesian: this rank's one block
  std::vector<std::int64_t> cart_strides;
  std::vector<int> relabel;                      // owner r -> relabel[r] (empty: identity)
  std::map<block_index, block_storage> storage;  // explicit descriptions

  int grid_rank(int r, int c) const {
    if (bc.rank_of_grid) return bc.rank_of_grid(r, c);
    return bc.row_major_grid ? r * bc.pcol + c : c * bc.prow + r;
  }
};

namespace {

std::int64_t linear(const std::vector<axis_splits>& splits, const block_index& b) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < splits.size(); ++d) i = i * splits[d].count() + b[d];
  return i;
}

block_index unlinear(const std::vector<axis_splits>& splits, std::int64_t i) {
  block_index b{};
  for (std::size_t d = splits.size(); d-- > 0;) {
    b[d] = i % splits[d].count();
    i /= splits[d].count();
  }
  return b;
}

void check_ndim(std::size_t n) {
  if (n < 1 || n > static_cast<std::size_t>(max_dims)) {
    invalid("need 1 to " + std::to_string(max_dims) + " dimensions, got " + std::to_string(n));
  }
}

}  // namespace

layout layout::custom(std::vector<axis_splits> splits, std::vector<int> owners) {
  check_ndim(splits.size());
  layout l;
  l.splits_ = std::move(splits);
  if (static_cast<std::int64_t>(owners.size()) != l.blocks()) {
    invalid("owner table has " + std::to_string(owners.size()) + " entries for " + std::to_string(l.blocks()) +
            " blocks");
  }
  for (int o : owners) {
    if (o < 0) invalid("owner " + std::to_string(o) + " is negative");
  }
  auto spec = std::make_shared<impl>();
  spec->owners = std::move(owners);
  l.impl_ = std::move(spec);
  return l;
}

layout layout::cartesian(std::vector<std::int64_t> shape, std::vector<int> grid, void* local, bool column_major_ranks,
                         std::vector<std::int64_t> local_strides) {
  check_ndim(shape.size());
  if (grid.size() != shape.size())
    invalid("grid has " + std::to_string(grid.size()) + " dimensions, shape " + std::to_string(shape.size()));
  layout l;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) invalid("shape[" + std::to_string(d) + "] = " + std::to_string(shape[d]) + " is negative");
    if (grid[d] < 1 || (shape[d] > 0 && grid[d] > shape[d])) {
      invalid("grid[" + std::to_string(d) + "] = " + std::to_string(grid[d]) + " must be in [1, " +
              std::to_string(shape[d]) + "]");
    }
    if (shape[d] == 0) {  // an empty array: no blocks (any grid)
      l.splits_.push_back(axis_splits::explicit_points({0}));
      continue;
    }
    std::vector<std::int64_t> points(static_cast<std::size_t>(grid[d]) + 1);
    for (int k = 0; k <= grid[d]; ++k) {  // the runtime's one partition rule (first blocks one longer)
      const auto n = static_cast<std::size_t>(shape[d]), g = static_cast<std::size_t>(grid[d]);
      points[static_cast<std::size_t>(k)] =
          static_cast<std::int64_t>(conveyor::detail::balanced_part(n, static_cast<std::size_t>(k), g).first);
    }
    l.splits_.push_back(axis_splits::explicit_points(std::move(points)));
  }
  auto spec = std::make_shared<impl>();
  spec->k = impl::kind::cartesian;
  spec->grid = std::move(grid);
  spec->column_major_ranks = column_major_ranks;
  spec->cart_local = local;
  spec->cart_strides = std::move(local_strides);
  if (!spec->cart_strides.empty() && spec->cart_strides.size() != shape.size())
    invalid("local strides need one entry per dimension");
  l.impl_ = std::move(spec);
  return l;
}

namespace {

// One axis of a block-cyclic matrix whose first block is `first` long and the
// others `size` (ScaLAPACK: IMB/MB, or MB/MB for 9-integer descriptors), over P
// processes: which block holds a global index, where it starts globally and in the
// local array of its owner.
struct cyclic_axis {
  std::int64_t first, size;
  int P;
  std::int64_t block_of(std::int64_t g) const { return g < first ? 0 : 1 + (g - first) / size; }
  std::int64_t start(std::int64_t k) const { return k == 0 ? 0 : first + (k - 1) * size; }
  // Blocks k' < k on k's owner: k / P of them, each `size` long, except that the
  // owner of block 0 holds it at `first` long.
  std::int64_t local_start(std::int64_t k) const {
    if (k == 0) return 0;
    return (k / P) * size + (k % P == 0 ? first - size : 0);
  }
  std::int64_t local_index(std::int64_t g) const {
    const std::int64_t k = block_of(g);
    return local_start(k) + (g - start(k));
  }
};

cyclic_axis row_axis(const layout::block_cyclic_params& p) { return {p.imb > 0 ? p.imb : p.mb, p.mb, p.prow}; }
cyclic_axis col_axis(const layout::block_cyclic_params& p) { return {p.inb > 0 ? p.inb : p.nb, p.nb, p.pcol}; }

}  // namespace

layout layout::block_cyclic(const block_cyclic_params& p) {
  if (p.M < 0 || p.N < 0)
    invalid("block-cyclic matrix must be at least 0 x 0, got " + std::to_string(p.M) + " x " + std::to_string(p.N));
  if (p.mb <= 0 || p.nb <= 0) invalid("block sizes must be > 0");
  if (p.imb < 0 || p.inb < 0) invalid("first block sizes must be > 0 (or 0: the block sizes)");
  if (p.prow <= 0 || p.pcol <= 0) invalid("process grid must be at least 1 x 1");
  if (p.rsrc < 0 || p.rsrc >= p.prow || p.csrc < 0 || p.csrc >= p.pcol) invalid("source process outside the grid");
  if (p.row_offset < 0 || p.col_offset < 0) invalid("submatrix offsets must be >= 0");
  layout l;
  const cyclic_axis rows = row_axis(p), cols = col_axis(p);
  // The submatrix's first block runs from its offset to the end of the global block holding it.
  const std::int64_t kr = rows.block_of(p.row_offset), kc = cols.block_of(p.col_offset);
  l.splits_.push_back(axis_splits::regular(p.M, p.mb, rows.start(kr + 1) - p.row_offset));
  l.splits_.push_back(axis_splits::regular(p.N, p.nb, cols.start(kc + 1) - p.col_offset));
  auto spec = std::make_shared<impl>();
  spec->k = impl::kind::block_cyclic;
  spec->bc = p;
  spec->first_row_block = kr;
  spec->first_col_block = kc;
  l.impl_ = std::move(spec);
  return l;
}

std::int64_t layout::blocks() const {
  std::int64_t n = 1;
  for (const auto& s : splits_) n *= s.count();
  return n;
}

int layout::owner(const block_index& b) const {
  const impl& spec = *impl_;
  int r = 0;
  switch (spec.k) {
    case impl::kind::custom:
      r = spec.owners[static_cast<std::size_t>(linear(splits_, b))];
      break;
    case impl::kind::cartesian: {
      r = 0;
      if (!spec.column_major_ranks) {
        for (std::size_t d = 0; d < spec.grid.size(); ++d) r = r * spec.grid[d] + static_cast<int>(b[d]);
      } else {
        for (std::size_t d = spec.grid.size(); d-- > 0;) r = r * spec.grid[d] + static_cast<int>(b[d]);
      }
      break;
    }
    case impl::kind::block_cyclic: {
      const int pr = static_cast<int>((spec.first_row_block + b[0] + spec.bc.rsrc) % spec.bc.prow);
      const int pc = static_cast<int>((spec.first_col_block + b[1] + spec.bc.csrc) % spec.bc.pcol);
      r = spec.grid_rank(pr, pc);
      break;
    }
  }
  return spec.relabel.empty() || r < 0 ? r : spec.relabel[static_cast<std::size_t>(r)];
}

std::pair<int, int> layout::owner_range() const {
  const impl& spec = *impl_;
  std::vector<int> owners;
  switch (spec.k) {
    case impl::kind::custom:
      owners = spec.owners;
      break;
    case impl::kind::cartesian: {
      int total = 1;
      for (int g : spec.grid) total *= g;
      owners = {0, total - 1};
      break;
    }
    case impl::kind::block_cyclic:
      for (int r = 0; r < spec.bc.prow; ++r) {
        for (int c = 0; c < spec.bc.pcol; ++c) owners.push_back(spec.grid_rank(r, c));
      }
      break;
  }
  if (owners.empty()) return {0, 0};  // an empty custom layout
  if (!spec.relabel.empty()) {
    for (int& o : owners)
      o = o < 0 || o >= static_cast<int>(spec.relabel.size()) ? o : spec.relabel[static_cast<std::size_t>(o)];
  }
  const auto [lo, hi] = std::minmax_element(owners.begin(), owners.end());
  return {*lo, *hi};
}

std::vector<block_index> layout::blocks_of(int rank) const {
  const impl& spec = *impl_;
  int base = rank;
  if (!spec.relabel.empty()) {  // the rank whose blocks `rank` received
    const auto it = std::find(spec.relabel.begin(), spec.relabel.end(), rank);
    if (it == spec.relabel.end()) return {};
    base = static_cast<int>(it - spec.relabel.begin());
  }
  std::vector<block_index> out;
  if (blocks() == 0) return out;  // an empty array
  switch (spec.k) {
    case impl::kind::custom:
      for (std::int64_t i = 0; i < blocks(); ++i) {
        if (spec.owners[static_cast<std::size_t>(i)] == base) out.push_back(unlinear(splits_, i));
      }
      break;
    case impl::kind::cartesian: {
      int total = 1;
      for (int g : spec.grid) total *= g;
      if (base < 0 || base >= total) break;
      block_index b{};
      int r = base;
      if (!spec.column_major_ranks) {
        for (std::size_t d = spec.grid.size(); d-- > 0;) {
          b[d] = r % spec.grid[d];
          r /= spec.grid[d];
        }
      } else {
        for (std::size_t d = 0; d < spec.grid.size(); ++d) {
          b[d] = r % spec.grid[d];
          r /= spec.grid[d];
        }
      }
      out.push_back(b);
      break;
    }
    case impl::kind::block_cyclic: {
      const auto& p = spec.bc;
      int positions = 0;  // grid positions of this rank: one, unless a rank holds several
      for (int pr = 0; pr < p.prow; ++pr) {
        for (int pc = 0; pc < p.pcol; ++pc) {
          if (spec.grid_rank(pr, pc) != base) continue;
          if (++positions == 1) {
            out.reserve(
                static_cast<std::size_t>((splits_[0].count() / p.prow + 1) * (splits_[1].count() / p.pcol + 1)));
          }
          // Submatrix blocks k with (first + k + src) % P == coordinate: an arithmetic progression.
          const auto first_k = [](std::int64_t first, int src, int P, int coord) {
            return ((coord - src - first) % P + P) % P;
          };
          for (std::int64_t i = first_k(spec.first_row_block, p.rsrc, p.prow, pr); i < splits_[0].count();
               i += p.prow) {
            for (std::int64_t j = first_k(spec.first_col_block, p.csrc, p.pcol, pc); j < splits_[1].count();
                 j += p.pcol) {
              block_index b{};
              b[0] = i;
              b[1] = j;
              out.push_back(b);
            }
          }
        }
      }
      // One position yields row-major order already (i outer, j inner).
      if (positions > 1) std::sort(out.begin(), out.end());
      break;
    }
  }
  return out;
}

void layout::set_storage(const block_index& b, void* data, const std::vector<std::int64_t>& strides) {
  if (strides.size() != static_cast<std::size_t>(ndim())) {
    invalid("storage of a block needs " + std::to_string(ndim()) + " strides, got " + std::to_string(strides.size()));
  }
  for (int d = 0; d < ndim(); ++d) {
    if (b[static_cast<std::size_t>(d)] < 0 ||
        b[static_cast<std::size_t>(d)] >= splits_[static_cast<std::size_t>(d)].count()) {
      invalid("block index out of range in dimension " + std::to_string(d));
    }
  }
  block_storage s;
  s.data = data;
  std::copy(strides.begin(), strides.end(), s.strides.begin());
  // Copies share the description until one changes: then this one gets its own, so
  // a plan's copy never sees storage described after the plan was built.
  if (impl_.use_count() > 1) impl_ = std::make_shared<impl>(*impl_);
  impl_->storage[b] = s;
}

block_storage layout::storage(const block_index& b) const {
  const impl& spec = *impl_;
  if (const auto it = spec.storage.find(b); it != spec.storage.end()) return it->second;
  block_storage s;
  if (spec.relabel.empty() && spec.k == impl::kind::cartesian && spec.cart_local) {
    s.data = spec.cart_local;
    if (!spec.cart_strides.empty()) {
      std::copy(spec.cart_strides.begin(), spec.cart_strides.end(), s.strides.begin());
    } else {  // contiguous, row-major over the block's extents
      std::int64_t stride = 1;
      for (int d = ndim(); d-- > 0;) {
        const auto& sp = splits_[static_cast<std::size_t>(d)];
        s.strides[static_cast<std::size_t>(d)] = stride;
        stride *= sp.length(b[static_cast<std::size_t>(d)]);
      }
    }
    return s;
  }
  if (spec.relabel.empty() && spec.k == impl::kind::block_cyclic && spec.bc.local) {
    // Local position of the block's first element (ScaLAPACK's indxg2l).
    const auto& p = spec.bc;
    const std::int64_t gr = p.row_offset + splits_[0].start(b[0]);
    const std::int64_t gc = p.col_offset + splits_[1].start(b[1]);
    const std::int64_t lr = row_axis(p).local_index(gr), lc = col_axis(p).local_index(gc);
    s.data = p.local;
    s.offset = lr + lc * p.lld;
    s.strides[0] = 1;
    s.strides[1] = p.lld;
    return s;
  }
  throw error(errc::invalid_argument, "layout: no storage was described for block (" + std::to_string(b[0]) +
                                          (ndim() > 1 ? ", " + std::to_string(b[1]) : std::string()) +
                                          (ndim() > 2 ? ", ..." : "") + ")");
}

namespace {

// A byte range [lo, hi) of one block's memory, and the block it belongs to.
struct byte_run {
  std::uintptr_t lo, hi;
  std::size_t block;
};

constexpr std::size_t kMaxRuns = std::size_t{1} << 24;  // beyond: per-block checks only

// The runs of a block: along its unit-stride dimension if it has one (else one
// element per run), in block order. Returns false if there would be more than `budget`.
bool runs_of(const block_storage& s, const std::array<std::int64_t, max_dims>& ext, int n, std::size_t esize,
             std::size_t block, std::size_t budget, std::vector<byte_run>& out) {
  int run_dim = -1;
  for (int d = 0; d < n; ++d) {
    const auto k = static_cast<std::size_t>(d);
    if ((s.strides[k] == 1 || s.strides[k] == -1) && (run_dim < 0 || ext[k] > ext[static_cast<std::size_t>(run_dim)]))
      run_dim = d;
  }
  std::int64_t count = 1, len = 1;
  for (int d = 0; d < n; ++d) {
    if (d == run_dim) len = ext[static_cast<std::size_t>(d)];
    else count *= ext[static_cast<std::size_t>(d)];
  }
  if (static_cast<std::size_t>(count) > budget) return false;
  const auto base = reinterpret_cast<std::uintptr_t>(s.data);
  const std::int64_t e = static_cast<std::int64_t>(esize);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t r = i, off = s.offset;
    for (int d = n; d-- > 0;) {
      if (d == run_dim) continue;
      const auto k = static_cast<std::size_t>(d);
      off += (r % ext[k]) * s.strides[k];
      r /= ext[k];
    }
    std::int64_t first = off, last = off;
    if (run_dim >= 0)
      (s.strides[static_cast<std::size_t>(run_dim)] > 0 ? last : first) +=
          (s.strides[static_cast<std::size_t>(run_dim)] > 0 ? 1 : -1) * (len - 1);
    out.push_back(
        {base + static_cast<std::uintptr_t>(first * e), base + static_cast<std::uintptr_t>((last + 1) * e), block});
  }
  return true;
}

}  // namespace

std::vector<std::int64_t> layout::local_shape(int rank) const {
  const auto n = static_cast<std::size_t>(ndim());
  if (const auto g = detail::layout_access::cyclic_grid_of(*this, rank)) {  // NUMROC per axis, no block list
    std::vector<std::int64_t> shape(2, 0);
    if (g->position[0] < 0) return shape;
    for (std::size_t d = 0; d < 2; ++d) {
      const axis_splits& s = splits_[d];
      std::int64_t held = 0;
      for (std::int64_t k = g->axes[d].first_block_at(g->position[d]); k < s.count(); k += g->axes[d].procs) {
        held += s.length(k);
      }
      shape[d] = held;
    }
    if (shape[0] == 0 || shape[1] == 0) shape = {0, 0};  // no block at all
    return shape;
  }
  std::vector<std::set<std::int64_t>> seen(n);
  std::vector<std::int64_t> shape(n, 0);
  for (const block_index& b : blocks_of(rank)) {
    for (std::size_t d = 0; d < n; ++d) {
      const axis_splits& s = splits_[d];
      if (seen[d].insert(b[d]).second) shape[d] += s.length(b[d]);
    }
  }
  return shape;
}

std::string layout::storage_problem(std::size_t element_bytes, int rank) const {
  const impl& spec = *impl_;
  const int n = ndim();
  for (const auto& [b, st] : spec.storage) {
    if (owner(b) != rank) {
      return "rank " + std::to_string(rank) + " describes storage for block (" + std::to_string(b[0]) +
             (n > 1 ? ", " + std::to_string(b[1]) : std::string()) + (n > 2 ? ", ..." : "") + "), which rank " +
             std::to_string(owner(b)) + " owns";
    }
  }
  if (spec.k == impl::kind::block_cyclic && spec.storage.empty() && spec.relabel.empty() && spec.bc.local) {
    // ScaLAPACK's rule, which makes the blocks of the local array disjoint: lld >= local rows.
    const std::int64_t rows = local_shape(rank)[0];
    if (spec.bc.lld < std::max<std::int64_t>(1, rows)) {
      return "block-cyclic lld " + std::to_string(spec.bc.lld) + " is below the " + std::to_string(rows) +
             " local rows of rank " + std::to_string(rank);
    }
    return {};
  }
  const std::vector<block_index> mine = blocks_of(rank);
  // Cheap first: a block whose strides nest (each at least the span of the smaller
  // ones, as lda >= m in BLAS) cannot overlap itself, and one whose byte hull meets
  // no other hull cannot overlap another block. Only the remaining "suspects" are
  // checked exactly: every run of contiguous bytes, sorted; two that intersect mean
  // blocks that overlap (each other, or themselves).
  std::vector<std::array<std::int64_t, max_dims>> ext(mine.size());
  std::vector<byte_run> hulls;
  std::vector<char> suspect(mine.size(), 0);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const block_storage st = storage(mine[i]);
    std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (|stride|, extent)
    std::int64_t lo = st.offset, hi = st.offset;
    for (int d = 0; d < n; ++d) {
      const auto k = static_cast<std::size_t>(d);
      ext[i][k] = splits_[k].length(mine[i][k]);
      if (ext[i][k] == 0) return {};  // (empty blocks do not exist: splits are increasing)
      (st.strides[k] > 0 ? hi : lo) += st.strides[k] * (ext[i][k] - 1);
      if (ext[i][k] > 1) dims.emplace_back(std::abs(st.strides[k]), ext[i][k]);
    }
    std::sort(dims.begin(), dims.end());
    std::int64_t span = 0;  // elements spanned by the smaller strides
    for (const auto& [stride, extent] : dims) {
      if (stride <= span) suspect[i] = 1;
      span += stride * (extent - 1);
    }
    const auto base = reinterpret_cast<std::uintptr_t>(st.data);
    const auto e = static_cast<std::int64_t>(element_bytes);
    hulls.push_back({base + static_cast<std::uintptr_t>(lo * e), base + static_cast<std::uintptr_t>((hi + 1) * e), i});
  }
  std::sort(hulls.begin(), hulls.end(), [](const byte_run& a, const byte_run& b) { return a.lo < b.lo; });
  // Clusters of hulls that chain into one interval: all suspects if more than one.
  for (std::size_t first = 0, i = 0; first < hulls.size(); first = i) {
    std::uintptr_t reach = hulls[first].hi;
    for (i = first + 1; i < hulls.size() && hulls[i].lo < reach; ++i) reach = std::max(reach, hulls[i].hi);
    if (i - first > 1) {
      for (std::size_t j = first; j < i; ++j) suspect[hulls[j].block] = 1;
    }
  }
  std::vector<byte_run> runs;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (!suspect[i]) continue;
    if (!runs_of(storage(mine[i]), ext[i], n, element_bytes, i, kMaxRuns - std::min(kMaxRuns, runs.size()), runs))
      return {};
  }
  std::sort(runs.begin(), runs.end(), [](const byte_run& a, const byte_run& b) { return a.lo < b.lo; });
  for (std::size_t i = 1; i < runs.size(); ++i) {
    if (runs[i].lo < runs[i - 1].hi) {
      const std::size_t a = runs[i - 1].block, b = runs[i].block;
      if (a == b)
        return "the storage of block " + std::to_string(a) + " of rank " + std::to_string(rank) +
               " overlaps itself (strides do not fit its extents)";
      return "blocks " + std::to_string(std::min(a, b)) + " and " + std::to_string(std::max(a, b)) + " of rank " +
             std::to_string(rank) + " overlap in memory";
    }
  }
  return {};
}

layout layout::relabeled(const std::vector<int>& sigma) const {
  layout l = *this;
  auto spec = std::make_shared<impl>(*impl_);
  if (!spec->relabel.empty()) {
    for (int& r : spec->relabel) r = sigma[static_cast<std::size_t>(r)];
  } else {
    spec->relabel = sigma;
  }
  spec->storage.clear();
  spec->cart_local = nullptr;
  spec->bc.local = nullptr;
  l.impl_ = std::move(spec);
  return l;
}

// ---------------------------------------------------------------------------
// The axis-by-axis view (cyclic_grid.hpp)
// ---------------------------------------------------------------------------
std::int64_t detail::cyclic_grid::axis::local_index(std::int64_t x) const {
  return cyclic_axis{first, size, procs}.local_index(offset + x);
}

std::optional<detail::cyclic_grid> detail::layout_access::cyclic_grid_of(const layout& l, int rank) {
  const layout::impl& spec = *l.impl_;
  if (spec.k != layout::impl::kind::block_cyclic || !spec.relabel.empty()) return std::nullopt;
  const layout::block_cyclic_params& p = spec.bc;
  cyclic_grid g;
  const cyclic_axis rows = row_axis(p), cols = col_axis(p);
  g.axes[0] = {spec.first_row_block, p.rsrc, p.prow, p.row_offset, rows.first, rows.size};
  g.axes[1] = {spec.first_col_block, p.csrc, p.pcol, p.col_offset, cols.first, cols.size};
  g.rank_at.resize(static_cast<std::size_t>(p.prow) * static_cast<std::size_t>(p.pcol));
  std::vector<int> seen;
  for (int r = 0; r < p.prow; ++r) {
    for (int c = 0; c < p.pcol; ++c) {
      const int q = spec.grid_rank(r, c);
      if (q < 0) return std::nullopt;
      g.rank_at[static_cast<std::size_t>(r * p.pcol + c)] = q;
      seen.push_back(q);
      if (q == rank) g.position[0] = r, g.position[1] = c;
    }
  }
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) return std::nullopt;  // a rank at two positions
  g.formula_storage = spec.storage.empty();
  g.local = static_cast<char*>(p.local);
  g.lld = p.lld;
  return g;
}

}  // namespace conveyor::redistribute
