// SPDX-License-Identifier: BSD-3-Clause
// The exchange map of a plan (exchange_map.hpp), how a package is laid out:
// addressing an element of a block, the copies between a piece (or an interval
// product) and its place in a package, and packing and unpacking a peer's
// package. (What moves where, building the map: exchange_map.cpp.)
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

// --- addressing -------------------------------------------------------------------
char* exchange_map::element_address(const layout& l, const block_index& b, const coords& at_global, std::size_t esize) {
  const block_storage s = l.storage(b);
  std::int64_t off = s.offset;
  for (int d = 0; d < l.ndim(); ++d) {
    const auto k = static_cast<std::size_t>(d);
    off += (at_global[k] - l.splits(d).start(b[k])) * s.strides[k];
  }
  return static_cast<char*>(s.data) + off * static_cast<std::int64_t>(esize);
}

coords exchange_map::to_dst(const transform_plan& t, const coords& src) {
  coords out{};
  for (int k = 0; k < t.ndim; ++k)
    out[static_cast<std::size_t>(k)] = src[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])];
  return out;
}

coords exchange_map::packed_strides(const piece& p, const axis_order& order, int ndim) {
  coords st{};
  std::int64_t s = 1;
  for (int k = ndim; k-- > 0;) {
    const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    st[d] = s;
    s *= p.ext[d];
  }
  return st;
}

box_copy exchange_map::unpack_copy(const transform_plan& t, const piece& p, const axis_order& order) {
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

box_copy exchange_map::pack_copy(const transform_plan& t, const piece& p) {
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

box_copy exchange_map::direct_copy(const transform_plan& t, const coords& ext, const coords& src_strides,
                                   const coords& dst_strides) {
  box_copy c;
  c.ndim = t.ndim;
  for (int k = 0; k < t.ndim; ++k) {
    const auto kk = static_cast<std::size_t>(k), d = static_cast<std::size_t>(t.perm[kk]);
    c.extent[kk] = ext[d];
    c.src_stride[kk] = src_strides[d];
    c.dst_stride[kk] = dst_strides[kk];
  }
  return c;
}

box_copy exchange_map::local_copy(const transform_plan& t, const piece& p) {
  return direct_copy(t, p.ext, t.src->storage(p.src_block).strides, t.dst->storage(p.dst_block).strides);
}

char* exchange_map::src_corner(const transform_plan& t, const piece& p) {
  return element_address(*t.src, p.src_block, p.lo, t.esize);
}
char* exchange_map::dst_corner(const transform_plan& t, const piece& p) {
  return element_address(*t.dst, p.dst_block, to_dst(t, p.lo), t.esize);
}

// --- packages -----------------------------------------------------------------------
std::int64_t interval_product::elements() const {
  std::int64_t h = 0, w = 0;
  for (const axis_interval& r : rows) h += r.len;
  for (const axis_interval& c : cols) w += c.len;
  return h * w;
}

std::size_t exchange_map::piece_count(piece_lists dir, int peer) const {
  std::size_t n = 0;
  for (const auto& t : transforms) {
    const auto k = static_cast<std::size_t>(peer);
    n += t.products ? (dir == &transform_plan::send ? t.send_products : t.recv_products)[k].pieces()
                    : (t.*dir)[k].size();
  }
  return n;
}

namespace {

// Element copies of B bytes: `lines` lines of `len` elements, contiguous on both
// sides, the lines `src_step` / `dst_step` elements apart.
template <std::size_t B>
[[gnu::always_inline]] inline void copy_lines(const char* src, std::int64_t src_step, char* dst, std::int64_t dst_step,
                                              std::int64_t lines, std::int64_t len) {
  const auto bytes = static_cast<std::size_t>(len) * B;
  for (std::int64_t l = 0; l < lines; ++l) {
    const char* from = src + l * src_step * static_cast<std::int64_t>(B);
    char* to = dst + l * dst_step * static_cast<std::int64_t>(B);
    if (bytes > 64) {
      std::memcpy(to, from, bytes);
      continue;
    }
    // Short lines (ScaLAPACK's small blocks) element by element: copies of a
    // constant size are moves, where a call to memcpy costs more than the copy.
    for (std::int64_t e = 0; e < len; ++e)
      std::memcpy(to + e * static_cast<std::int64_t>(B), from + e * static_cast<std::int64_t>(B), B);
  }
}

// A plain copy of one h x w box of B-byte elements (strides per axis, in
// elements) without the general kernel's setup, which dominated moving
// ScaLAPACK's small blocks: the pieces of the REDIST testers' matrices are 1-16
// elements a side. Needs an axis that is contiguous on both sides (or one element
// long); returns false otherwise, and always for B = 0 (another element size):
// the caller then uses the general kernel.
template <std::size_t B>
[[gnu::always_inline]] inline bool copy_plain_2d(const char* src, const std::array<std::int64_t, 2>& ss, char* dst,
                                                 const std::array<std::int64_t, 2>& ds,
                                                 const std::array<std::int64_t, 2>& ext) {
  if constexpr (B == 0) {
    return false;
  } else {
    const auto contiguous = [&](std::size_t d) { return ext[d] == 1 || (ss[d] == 1 && ds[d] == 1); };
    const std::size_t inner = contiguous(0) ? 0 : contiguous(1) ? 1 : 2;
    if (inner == 2) return false;
    const std::size_t outer = 1 - inner;
    copy_lines<B>(src, ss[outer], dst, ds[outer], ext[outer], ext[inner]);
    return true;
  }
}

// body(std::integral_constant<std::size_t, B>{}) with B the element size where
// the plain copy handles it (4, 8, 16 bytes), else B = 0: chosen once per product,
// so the loop over its pieces is specialized.
template <class Body>
void by_element_size(std::size_t esize, Body&& body) {
  switch (esize) {
    case 4:
      return body(std::integral_constant<std::size_t, 4>{});
    case 8:
      return body(std::integral_constant<std::size_t, 8>{});
    case 16:
      return body(std::integral_constant<std::size_t, 16>{});
    default:
      return body(std::integral_constant<std::size_t, 0>{});
  }
}

void pack_product(const transform_plan& t, const interval_product& p, char* out, std::int64_t& offset) {
  const auto es = static_cast<std::int64_t>(t.esize);
  by_element_size(t.esize, [&](auto element) {
    constexpr std::size_t B = decltype(element)::value;
    for_product_pieces(p, [&](const axis_interval& r, const axis_interval& c) {
      const std::array<std::int64_t, 2> st{1, r.len};  // column-major, as every grid pair's packages
      const char* from = t.src_local + (r.src_at + c.src_at) * es;
      if (!copy_plain_2d<B>(from, t.src_stride, out + offset, st, {r.len, c.len})) {
        box_copy b;
        b.ndim = 2;
        b.extent[0] = r.len, b.extent[1] = c.len;
        b.src_stride[0] = t.src_stride[0], b.src_stride[1] = t.src_stride[1];
        b.dst_stride[0] = st[0], b.dst_stride[1] = st[1];
        apply(t.type, b, from, out + offset, scaling{});
      }
      offset += r.len * c.len * es;
    });
  });
}

// A piece's box in destination axes: per source axis d, its extent and the
// strides `from` (source side) and t.dst_stride (destination side).
box_copy to_destination_axes(const transform_plan& t, std::int64_t h, std::int64_t w,
                             const std::array<std::int64_t, 2>& from) {
  const std::array<std::int64_t, 2> ext{h, w};
  box_copy b;
  b.ndim = 2;
  for (std::size_t k = 0; k < 2; ++k) {
    const auto d = static_cast<std::size_t>(t.perm[k]);
    b.extent[k] = ext[d];
    b.src_stride[k] = from[d];
    b.dst_stride[k] = t.dst_stride[d];
  }
  return b;
}

void unpack_product(const transform_plan& t, const interval_product& p, const char* in, std::int64_t& offset) {
  const auto es = static_cast<std::int64_t>(t.esize);
  by_element_size(t.scale.plain() ? t.esize : 0, [&](auto element) {
    constexpr std::size_t B = decltype(element)::value;
    for_product_pieces(p, [&](const axis_interval& r, const axis_interval& c) {
      const std::array<std::int64_t, 2> st{1, r.len};  // column-major, as every grid pair's packages
      char* to = t.dst_local + (r.dst_at + c.dst_at) * es;
      if (!copy_plain_2d<B>(in + offset, st, to, t.dst_stride, {r.len, c.len})) {
        apply(t.type, to_destination_axes(t, r.len, c.len, st), in + offset, to, t.scale);
      }
      offset += r.len * c.len * es;
    });
  });
}

void copy_product(const transform_plan& t, const interval_product& p) {
  const auto es = static_cast<std::int64_t>(t.esize);
  by_element_size(t.scale.plain() ? t.esize : 0, [&](auto element) {
    constexpr std::size_t B = decltype(element)::value;
    for_product_pieces(p, [&](const axis_interval& r, const axis_interval& c) {
      const char* from = t.src_local + (r.src_at + c.src_at) * es;
      char* to = t.dst_local + (r.dst_at + c.dst_at) * es;
      if (!copy_plain_2d<B>(from, t.src_stride, to, t.dst_stride, {r.len, c.len})) {
        apply(t.type, to_destination_axes(t, r.len, c.len, t.src_stride), from, to, t.scale);
      }
    });
  });
}

void pack_piece(const transform_plan& t, const piece& p, char* base, std::int64_t& offset) {
  apply(t.type, exchange_map::pack_copy(t, p), exchange_map::src_corner(t, p), base + offset, scaling{});
  offset += exchange_map::piece_bytes(t, p);
}

void unpack_piece(const transform_plan& t, const piece& p, const axis_order& order, const char* base,
                  std::int64_t& offset) {
  apply(t.type, exchange_map::unpack_copy(t, p, order), base + offset, exchange_map::dst_corner(t, p), t.scale);
  offset += exchange_map::piece_bytes(t, p);
}

}  // namespace

void exchange_map::pack_range(int peer, std::size_t first, std::size_t last, char* base, std::int64_t& offset) const {
  for_pieces(&transform_plan::send, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
    if (i >= first && i < last) pack_piece(t, p, base, offset);
  });
}

void exchange_map::unpack_range(int peer, std::size_t first, std::size_t last, const char* base,
                                std::int64_t& offset) const {
  for_pieces(&transform_plan::recv, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
    if (i >= first && i < last) unpack_piece(t, p, t.peer_order[static_cast<std::size_t>(peer)], base, offset);
  });
}

void exchange_map::pack_all(int peer, char* base) const {
  const auto k = static_cast<std::size_t>(peer);
  std::int64_t offset = 0;
  for (const auto& t : transforms) {
    if (t.products) pack_product(t, t.send_products[k], base, offset);
    else
      for (const piece& p : t.send[k]) pack_piece(t, p, base, offset);
  }
}

void exchange_map::unpack_all(int peer, const char* base) const {
  const auto k = static_cast<std::size_t>(peer);
  std::int64_t offset = 0;
  for (const auto& t : transforms) {
    if (t.products) unpack_product(t, t.recv_products[k], base, offset);
    else
      for (const piece& p : t.recv[k]) unpack_piece(t, p, t.peer_order[k], base, offset);
  }
}

void exchange_map::copy_local() const {
  for (const auto& t : transforms) {
    if (t.products) copy_product(t, t.self_product);
    else
      for (const piece& p : t.self) apply(t.type, local_copy(t, p), src_corner(t, p), dst_corner(t, p), t.scale);
  }
}

}  // namespace conveyor::redistribute::detail
