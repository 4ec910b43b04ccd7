// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute/datatype_layout.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <utility>
#include <vector>

namespace conveyor::redistribute::detail {
namespace {

// One outer axis: `count` copies `stride` bytes apart.
struct axis {
  std::int64_t count = 1, stride = 0;
};

// A few axes, outermost first, on the stack (decoding runs on every call).
struct axis_list {
  static constexpr int capacity = byte_box::max_axes;
  std::array<axis, capacity> a{};
  int n = 0;
  axis_list() = default;
  axis_list(std::initializer_list<axis> l) {
    for (const axis& x : l) a[static_cast<std::size_t>(n++)] = x;
  }
  const axis* begin() const { return a.data(); }
  const axis* end() const { return a.data() + n; }
  std::size_t size() const { return static_cast<std::size_t>(n); }
  bool empty() const { return n == 0; }
  const axis& operator[](std::size_t i) const { return a[i]; }
  axis& operator[](std::size_t i) { return a[i]; }
};

// Drops axes of one copy and folds an innermost axis whose copies touch into the
// run, then axes whose copies tile the next outer one (the same bytes, fewer rows).
void normalize(byte_box& b) {
  int w = 0;
  for (int k = 0; k < b.axes; ++k) {
    if (b.count[static_cast<std::size_t>(k)] == 1) continue;
    b.count[static_cast<std::size_t>(w)] = b.count[static_cast<std::size_t>(k)];
    b.stride[static_cast<std::size_t>(w)] = b.stride[static_cast<std::size_t>(k)];
    ++w;
  }
  b.axes = w;
  while (b.axes > 0 && b.stride[static_cast<std::size_t>(b.axes - 1)] == b.run) {
    b.run *= b.count[static_cast<std::size_t>(b.axes - 1)];
    --b.axes;
  }
  for (int k = b.axes - 1; k > 0; --k) {
    auto& inner_n = b.count[static_cast<std::size_t>(k)];
    const auto inner_s = b.stride[static_cast<std::size_t>(k)];
    if (b.stride[static_cast<std::size_t>(k - 1)] != inner_n * inner_s) continue;
    inner_n *= b.count[static_cast<std::size_t>(k - 1)];
    for (int j = k - 1; j + 1 < b.axes; ++j) {
      b.count[static_cast<std::size_t>(j)] = b.count[static_cast<std::size_t>(j + 1)];
      b.stride[static_cast<std::size_t>(j)] = b.stride[static_cast<std::size_t>(j + 1)];
    }
    --b.axes;
  }
}

// Appends box b to out, joined to the last box when b's bytes follow its bytes.
void push(byte_map& out, byte_box b) {
  if (b.run <= 0 || b.bytes() == 0) return;
  normalize(b);
  if (!out.empty()) {
    byte_box& last = out.back();
    if (last.axes == 0 && b.axes == 0 && last.offset + last.run == b.offset) {
      last.run += b.run;
      return;
    }
  }
  out.push_back(b);
}

// Appends copies of `child` at offset + sum_k i_k * axes[k].stride (axes
// outermost first, copies in row-major order); false past kMaxBoxes boxes.
bool repeat(const byte_map& child, const axis_list& axes, std::int64_t offset, byte_map& out) {
  std::int64_t copies = 1;
  for (const axis& a : axes) {
    if (a.count <= 0) return true;
    copies *= a.count;
  }
  // One box of the child with room for the new axes: one box.
  if (child.size() == 1 && child[0].axes + static_cast<int>(axes.size()) <= byte_box::max_axes) {
    byte_box b;
    b.offset = child[0].offset + offset;
    b.run = child[0].run;
    for (const axis& a : axes) {
      b.count[static_cast<std::size_t>(b.axes)] = a.count;
      b.stride[static_cast<std::size_t>(b.axes++)] = a.stride;
    }
    for (int k = 0; k < child[0].axes; ++k) {
      b.count[static_cast<std::size_t>(b.axes)] = child[0].count[static_cast<std::size_t>(k)];
      b.stride[static_cast<std::size_t>(b.axes++)] = child[0].stride[static_cast<std::size_t>(k)];
    }
    push(out, b);
    return out.size() <= kMaxBoxes;
  }
  // Otherwise the child's boxes once per copy (copy-major order), if they fit.
  const axis_list& outer = axes;
  if (static_cast<double>(copies) * static_cast<double>(child.size()) + static_cast<double>(out.size()) >
      static_cast<double>(kMaxBoxes)) {
    return false;
  }
  std::vector<std::int64_t> idx(outer.size(), 0);
  for (std::int64_t c = 0; c < copies; ++c) {
    std::int64_t at = offset;
    for (std::size_t k = 0; k < outer.size(); ++k) at += idx[k] * outer[k].stride;
    for (byte_box b : child) {
      b.offset += at;
      push(out, b);
    }
    for (std::size_t k = outer.size(); k-- > 0;) {
      if (++idx[k] < outer[k].count) break;
      idx[k] = 0;
    }
  }
  return true;
}

// The arguments of the constructor that made t, laid out as the int-count
// constructors' (MPI_Type_get_contents): ints, then addresses. MPI-4 libraries
// also have large-count constructors (MPI_Type_vector_c, ...; mpi4py 4 calls
// them), whose counts, strides and displacements MPI_Type_get_contents_c returns
// in one array of MPI_Count, in the order of the int-count form's integers then
// addresses (MPICH stores them so): they are split back here, and the subarray's
// and darray's ints (ndims, order; size, rank, ndims, distributions, order) put
// around them.
bool read_contents(MPI_Datatype t, int combiner, std::vector<std::int64_t>& ints, std::vector<std::int64_t>& aints,
                   std::vector<MPI_Datatype>& types) {
#if MPI_VERSION >= 4
  MPI_Count ni = 0, na = 0, nc = 0, nd = 0;
  int comb = 0;
  if (PMPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &comb) != MPI_SUCCESS) return false;
  std::vector<int> i(static_cast<std::size_t>(ni));
  std::vector<MPI_Aint> a(static_cast<std::size_t>(na));
  std::vector<MPI_Count> c(static_cast<std::size_t>(nc));
  types.resize(static_cast<std::size_t>(nd));
  if (PMPI_Type_get_contents_c(t, ni, na, nc, nd, i.data(), a.data(), c.data(), types.data()) != MPI_SUCCESS) {
    types.clear();
    return false;
  }
  ints.assign(i.begin(), i.end());
  aints.assign(a.begin(), a.end());
  if (nc == 0) return true;
  // Large counts: [0, split) are the int-count form's integers, the rest its addresses.
  std::size_t split = c.size();
  switch (combiner) {
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_HINDEXED_BLOCK:
      split = 2;
      break;
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT:
      split = c.empty() ? 0 : static_cast<std::size_t>(c[0]) + 1;
      break;
    case MPI_COMBINER_RESIZED:
      split = 0;
      break;
    case MPI_COMBINER_SUBARRAY:  // ints {ndims, order}, counts {sizes, subsizes, starts}
      if (i.size() != 2) return false;
      ints.assign(1, i[0]);
      ints.insert(ints.end(), c.begin(), c.end());
      ints.push_back(i[1]);
      return true;
    case MPI_COMBINER_DARRAY:  // ints {size, rank, ndims, distributions..., order}, counts {gsizes}
      if (i.size() < 3) return false;
      ints.assign(i.begin(), i.begin() + 3);
      ints.insert(ints.end(), c.begin(), c.end());
      ints.insert(ints.end(), i.begin() + 3, i.end());
      return true;
    default:
      break;
  }
  if (split > c.size()) return false;
  ints.assign(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(split));
  aints.assign(c.begin() + static_cast<std::ptrdiff_t>(split), c.end());
  return true;
#else
  int ni = 0, na = 0, nd = 0, comb = 0;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return false;
  std::vector<int> i(static_cast<std::size_t>(ni));
  std::vector<MPI_Aint> a(static_cast<std::size_t>(na));
  types.resize(static_cast<std::size_t>(nd));
  if (PMPI_Type_get_contents(t, ni, na, nd, i.data(), a.data(), types.data()) != MPI_SUCCESS) {
    types.clear();
    return false;
  }
  (void)combiner;
  ints.assign(i.begin(), i.end());
  aints.assign(a.begin(), a.end());
  return true;
#endif
}

// Whether the arrays have the lengths `combiner` needs (decode indexes them).
bool sizes_match(int combiner, const std::vector<std::int64_t>& ints, const std::vector<std::int64_t>& aints,
                 const std::vector<MPI_Datatype>& types) {
  const std::size_t ni = ints.size(), na = aints.size();
  const std::int64_t n = ni ? ints[0] : -1;
  if (types.empty() || n < 0 || n > std::int64_t{1} << 30)
    return combiner == MPI_COMBINER_DUP || combiner == MPI_COMBINER_RESIZED ? !types.empty() : false;
  const auto u = static_cast<std::size_t>(n);
  switch (combiner) {
    case MPI_COMBINER_CONTIGUOUS:
      return ni >= 1;
    case MPI_COMBINER_VECTOR:
      return ni >= 3;
    case MPI_COMBINER_HVECTOR:
      return ni >= 2 && na >= 1;
    case MPI_COMBINER_INDEXED:
      return ni >= 2 * u + 1;
    case MPI_COMBINER_HINDEXED:
      return ni >= u + 1 && na >= u;
    case MPI_COMBINER_INDEXED_BLOCK:
      return ni >= u + 2;
    case MPI_COMBINER_HINDEXED_BLOCK:
      return ni >= 2 && na >= u;
    case MPI_COMBINER_STRUCT:
      return ni >= u + 1 && na >= u && types.size() >= u;
    case MPI_COMBINER_SUBARRAY:
      return ni == 3 * u + 2;
    case MPI_COMBINER_DARRAY:
      return true;  // decode_darray checks
    default:
      return true;
  }
}

// The boxes of one item of t, offsets from its address; false when not read.
bool decode(MPI_Datatype t, byte_map& out);

// The child type's boxes and extent (and frees the handle get_contents made).
bool decode_child(MPI_Datatype child, byte_map& boxes, std::int64_t& extent) {
  const int combiner = combiner_of(child);
  MPI_Aint lb = 0, ext = 0;
  const bool ok = PMPI_Type_get_extent(child, &lb, &ext) == MPI_SUCCESS && decode(child, boxes);
  extent = ext;
  if (combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&child);
  return ok;
}

// The intervals of indices [0, gsize) that process `coord` of `psize` holds
// along one dimension of a darray.
bool darray_intervals(std::int64_t gsize, std::int64_t distrib, std::int64_t darg, std::int64_t psize,
                      std::int64_t coord, std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
  if (distrib == MPI_DISTRIBUTE_NONE) {
    out.push_back({0, gsize});
    return true;
  }
  if (distrib == MPI_DISTRIBUTE_BLOCK) {
    const std::int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
    const std::int64_t lo = coord * b, hi = std::min<std::int64_t>(lo + b, gsize);
    if (hi > lo) out.push_back({lo, hi - lo});
    return true;
  }
  if (distrib == MPI_DISTRIBUTE_CYCLIC) {
    const std::int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    if (b <= 0) return false;
    for (std::int64_t lo = coord * b; lo < gsize; lo += b * psize) {
      out.push_back({lo, std::min<std::int64_t>(b, gsize - lo)});
      if (out.size() > kMaxBoxes) return false;
    }
    return true;
  }
  return false;
}

// darray: the product of each dimension's intervals, dimensions in memory order.
bool decode_darray(const std::vector<std::int64_t>& ints, const byte_map& child, std::int64_t child_extent,
                   byte_map& out) {
  if (ints.size() < 3) return false;
  const std::int64_t rank = ints[1];
  const int ndims = static_cast<int>(ints[2]);
  if (ndims <= 0 || ndims > byte_box::max_axes || ints.size() != 4 * static_cast<std::size_t>(ndims) + 4) return false;
  const std::int64_t* gsizes = &ints[3];
  const std::int64_t* distribs = gsizes + ndims;
  const std::int64_t* dargs = distribs + ndims;
  const std::int64_t* psizes = dargs + ndims;
  const std::int64_t order = psizes[ndims];
  // Process coordinates: row-major over psizes, whatever the array order.
  std::vector<std::int64_t> coord(static_cast<std::size_t>(ndims));
  for (std::int64_t d = ndims - 1, r = rank; d >= 0; --d) {
    coord[static_cast<std::size_t>(d)] = r % psizes[d];
    r /= psizes[d];
  }
  // Dimensions slowest first, with their byte strides.
  std::vector<int> dims(static_cast<std::size_t>(ndims));
  for (int k = 0; k < ndims; ++k) dims[static_cast<std::size_t>(k)] = order == MPI_ORDER_C ? k : ndims - 1 - k;
  std::vector<std::int64_t> stride(static_cast<std::size_t>(ndims));
  std::int64_t s = child_extent;
  for (int k = ndims - 1; k >= 0; --k) {
    const int d = dims[static_cast<std::size_t>(k)];
    stride[static_cast<std::size_t>(k)] = s;
    s *= gsizes[d];
  }
  // Innermost dimension first: each dimension's intervals in increasing order,
  // every index of one running over the whole (already built) inner part, so the
  // type map is in array order (an outer index changes only after every inner one).
  byte_map inner = child;
  for (int k = ndims - 1; k >= 0; --k) {
    const int d = dims[static_cast<std::size_t>(k)];
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    if (!darray_intervals(gsizes[d], distribs[d], dargs[d], psizes[d], coord[static_cast<std::size_t>(d)], iv))
      return false;
    byte_map level;
    const std::int64_t st = stride[static_cast<std::size_t>(k)];
    for (const auto& [lo, len] : iv) {
      if (!repeat(inner, {{len, st}}, lo * st, level)) return false;
    }
    inner = std::move(level);
  }
  for (const byte_box& b : inner) push(out, b);
  return out.size() <= kMaxBoxes;
}

bool decode(MPI_Datatype t, byte_map& out) {
  const int combiner = combiner_of(t);
  if (combiner < 0) return false;
  if (combiner == MPI_COMBINER_NAMED) {
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS) return false;
    // A named type is one run when its bytes fill its extent; the pair types with
    // padding (MPI_SHORT_INT) are not, and are not read.
    if (size != extent || lb != 0) return false;
    push(out, byte_box{0, size, 0, {}, {}});
    return true;
  }
  switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
    case MPI_COMBINER_STRUCT:
    case MPI_COMBINER_SUBARRAY:
    case MPI_COMBINER_DARRAY:
    case MPI_COMBINER_RESIZED:
      break;
    default:
      return false;  // F90 parameterized types, and anything newer
  }
  std::vector<std::int64_t> ints, aints;
  std::vector<MPI_Datatype> types;
  if (!read_contents(t, combiner, ints, aints, types) || !sizes_match(combiner, ints, aints, types)) {
    for (MPI_Datatype& x : types) {
      if (combiner_of(x) != MPI_COMBINER_NAMED) PMPI_Type_free(&x);
    }
    return false;
  }
  // Every child decoded (and its handle freed) first.
  std::vector<byte_map> child(types.size());
  std::vector<std::int64_t> cext(types.size());
  bool ok = true;
  for (std::size_t i = 0; i < types.size(); ++i) ok = decode_child(types[i], child[i], cext[i]) && ok;
  if (!ok || child.empty()) return false;
  const byte_map& c = child[0];
  const std::int64_t e = cext[0];
  switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:  // lb and extent change where items start, not the bytes
      return repeat(c, {}, 0, out);
    case MPI_COMBINER_CONTIGUOUS:
      return repeat(c, {{ints[0], e}}, 0, out);
    case MPI_COMBINER_VECTOR:
      return repeat(c, {{ints[0], ints[2] * e}, {ints[1], e}}, 0, out);
    case MPI_COMBINER_HVECTOR:
      return repeat(c, {{ints[0], aints[0]}, {ints[1], e}}, 0, out);
    case MPI_COMBINER_INDEXED:
      for (std::int64_t i = 0; i < ints[0] && ok; ++i)
        ok = repeat(c, {{ints[1 + i], e}}, ints[1 + ints[0] + i] * e, out);
      return ok;
    case MPI_COMBINER_HINDEXED:
      for (std::int64_t i = 0; i < ints[0] && ok; ++i)
        ok = repeat(c, {{ints[1 + i], e}}, aints[static_cast<std::size_t>(i)], out);
      return ok;
    case MPI_COMBINER_INDEXED_BLOCK:
      for (std::int64_t i = 0; i < ints[0] && ok; ++i) ok = repeat(c, {{ints[1], e}}, ints[2 + i] * e, out);
      return ok;
    case MPI_COMBINER_HINDEXED_BLOCK:
      for (std::int64_t i = 0; i < ints[0] && ok; ++i)
        ok = repeat(c, {{ints[1], e}}, aints[static_cast<std::size_t>(i)], out);
      return ok;
    case MPI_COMBINER_STRUCT:
      for (std::int64_t i = 0; i < ints[0] && ok; ++i) {
        const auto k = static_cast<std::size_t>(i);
        ok = repeat(child[k], {{ints[1 + i], cext[k]}}, aints[k], out);
      }
      return ok;
    case MPI_COMBINER_SUBARRAY: {
      const int n = static_cast<int>(ints[0]);
      const std::int64_t* sizes = &ints[1];
      const std::int64_t* subsizes = sizes + n;
      const std::int64_t* starts = subsizes + n;
      const std::int64_t order = starts[n];
      if (n <= 0 || n > axis_list::capacity) return false;
      axis_list axes;
      axes.n = n;
      std::int64_t s = e, at = 0;
      for (int k = n - 1; k >= 0; --k) {  // k: position slowest first
        const int d = order == MPI_ORDER_C ? k : n - 1 - k;
        axes[static_cast<std::size_t>(k)] = {subsizes[d], s};
        at += starts[d] * s;
        s *= sizes[d];
      }
      return repeat(c, axes, at, out);
    }
    case MPI_COMBINER_DARRAY:
      return decode_darray(ints, c, e, out);
    default:
      return false;
  }
}

}  // namespace

int combiner_of(MPI_Datatype t) {
  int combiner = -1;
#if MPI_VERSION >= 4
  MPI_Count ni = 0, na = 0, nc = 0, nd = 0;
  if (PMPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner) != MPI_SUCCESS) return -1;
#else
  int ni = 0, na = 0, nd = 0;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return -1;
#endif
  return combiner;
}

type_layout layout_of(MPI_Datatype t) {
  type_layout l;
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS) {
    return l;
  }
  l.size = size;
  l.extent = extent;
  l.readable = decode(t, l.boxes) && bytes_of(l.boxes) == l.size;
  return l;
}

bool append_items(const type_layout& l, std::int64_t count, std::int64_t offset, byte_map& out) {
  return repeat(l.boxes, {{count, l.extent}}, offset, out);
}

}  // namespace conveyor::redistribute::detail
