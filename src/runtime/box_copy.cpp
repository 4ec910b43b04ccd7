// SPDX-License-Identifier: BSD-3-Clause
// The N-D strided copy/transform kernel (box_copy.hpp). The innermost dimension
// is the destination's; when both sides are contiguous there the row is a memcpy
// (plain copies) or a vectorizable loop (the compiler sees unit strides).
#include "runtime/box_copy.hpp"
#include "runtime/transpose.hpp"

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace conveyor::detail {
namespace {

template <class T>
struct scalar_ops {
  static T conj(T x) { return x; }
  static T scalar(double re, double) { return static_cast<T>(re); }
};
template <class F>
struct scalar_ops<std::complex<F>> {
  static std::complex<F> conj(std::complex<F> x) { return std::conj(x); }
  static std::complex<F> scalar(double re, double im) { return {static_cast<F>(re), static_cast<F>(im)}; }
};

// One row of n elements.
template <class T, int Mode>
void row(const T* src, std::int64_t ss, T* dst, std::int64_t ds, std::int64_t n, const scaling& s) {
  if constexpr (Mode == 0) {  // plain copy
    if (ss == 1 && ds == 1) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
    } else {
      for (std::int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
    }
  } else {
    const T alpha = scalar_ops<T>::scalar(s.alpha, s.alpha_imag), beta = scalar_ops<T>::scalar(s.beta, s.beta_imag);
    const auto op = [&](T x) { return s.conjugate ? scalar_ops<T>::conj(x) : x; };
    if constexpr (Mode == 1) {  // beta == 0: dst is not read
      for (std::int64_t i = 0; i < n; ++i) dst[i * ds] = alpha * op(src[i * ss]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) dst[i * ds] = alpha * op(src[i * ss]) + beta * dst[i * ds];
    }
  }
}

// The two innermost dimensions in square tiles: when the source is strided along
// the innermost one (a transpose), each tile's source and destination lines stay
// in cache while the tile is copied. Plain copies of 8-byte elements, and float64
// with alpha/beta, whose source is contiguous along the other axis go through the
// SIMD transpose kernel (t8).
template <class T, int Mode>
void tiled(const box_copy& c, int d, const T* src, T* dst, const scaling& s, transpose8_fn t8) {
  constexpr std::int64_t kTile = 32;
  const auto o = static_cast<std::size_t>(d), i = o + 1;
  const bool simd =
      ((sizeof(T) == 8 && Mode == 0) || std::is_same_v<T, double>)&&t8 && c.src_stride[o] == 1 && c.dst_stride[i] == 1;
  transpose_scale scale{s.alpha, s.beta, Mode == 2};
  const transpose_scale* scaled = Mode == 0 ? nullptr : &scale;
  for (std::int64_t a0 = 0; a0 < c.extent[o]; a0 += kTile) {
    const std::int64_t a1 = std::min(c.extent[o], a0 + kTile);
    for (std::int64_t b0 = 0; b0 < c.extent[i]; b0 += kTile) {
      const std::int64_t n = std::min(c.extent[i] - b0, kTile);
      if (simd) {
        t8(src + a0 + b0 * c.src_stride[i], c.src_stride[i], dst + a0 * c.dst_stride[o] + b0, c.dst_stride[o], a1 - a0,
           n, scaled);
        continue;
      }
      for (std::int64_t a = a0; a < a1; ++a) {
        row<T, Mode>(src + a * c.src_stride[o] + b0 * c.src_stride[i], c.src_stride[i],
                     dst + a * c.dst_stride[o] + b0 * c.dst_stride[i], c.dst_stride[i], n, s);
      }
    }
  }
}

template <class T, int Mode>
void walk(const box_copy& c, int d, const T* src, T* dst, const scaling& s, transpose8_fn t8) {
  const auto k = static_cast<std::size_t>(d);
  if (d == c.ndim - 1) {
    row<T, Mode>(src, c.src_stride[k], dst, c.dst_stride[k], c.extent[k], s);
    return;
  }
  if (d == c.ndim - 2 && c.src_stride[k + 1] != 1 && c.extent[k] > 1) {
    tiled<T, Mode>(c, d, src, dst, s, t8);
    return;
  }
  for (std::int64_t i = 0; i < c.extent[k]; ++i) {
    walk<T, Mode>(c, d + 1, src + i * c.src_stride[k], dst + i * c.dst_stride[k], s, t8);
  }
}

// The same copy with dimensions ordered by decreasing destination stride, so the
// innermost loop writes contiguously (the order of a loop nest does not change
// what is copied where).
box_copy by_destination_stride(const box_copy& c) {
  // A stable insertion sort of at most max_dims axes: std::stable_sort asks for a
  // temporary buffer (a malloc) on every call, and this runs once per piece
  // copied.
  std::array<int, max_dims> order{};
  const auto outer = [&](int x, int y) {
    return std::abs(c.dst_stride[static_cast<std::size_t>(x)]) > std::abs(c.dst_stride[static_cast<std::size_t>(y)]);
  };
  for (int d = 0; d < c.ndim; ++d) {
    int at = d;
    for (; at > 0 && outer(d, order[static_cast<std::size_t>(at - 1)]); --at) {
      order[static_cast<std::size_t>(at)] = order[static_cast<std::size_t>(at - 1)];
    }
    order[static_cast<std::size_t>(at)] = d;
  }
  box_copy out;
  out.ndim = c.ndim;
  for (int d = 0; d < c.ndim; ++d) {
    const auto from = static_cast<std::size_t>(order[static_cast<std::size_t>(d)]), to = static_cast<std::size_t>(d);
    out.extent[to] = c.extent[from];
    out.src_stride[to] = c.src_stride[from];
    out.dst_stride[to] = c.dst_stride[from];
  }
  return out;
}

template <class T>
void apply_typed(const box_copy& given, const void* src, void* dst, const scaling& s) {
  for (int d = 0; d < given.ndim; ++d) {
    if (given.extent[static_cast<std::size_t>(d)] == 0) return;
  }
  const box_copy c = by_destination_stride(given);
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  const transpose8_fn t8 = sizeof(T) == 8 && c.ndim > 1 ? transpose8() : nullptr;
  if (s.plain()) walk<T, 0>(c, 0, in, out, s, t8);
  else if (s.beta_zero()) walk<T, 1>(c, 0, in, out, s, t8);
  else walk<T, 2>(c, 0, in, out, s, t8);
}

// Plain copies of non-arithmetic types move bytes of the right width.
template <std::size_t Bytes>
struct raw {
  unsigned char b[Bytes];
};
template <std::size_t Bytes>
void apply_raw(const box_copy& in, const void* src, void* dst) {
  for (int d = 0; d < in.ndim; ++d) {
    if (in.extent[static_cast<std::size_t>(d)] == 0) return;
  }
  const box_copy c = by_destination_stride(in);
  scaling s;
  walk<raw<Bytes>, 0>(c, 0, static_cast<const raw<Bytes>*>(src), static_cast<raw<Bytes>*>(dst), s,
                      Bytes == 8 && c.ndim > 1 ? transpose8() : nullptr);
}

template <class T>
constexpr bool kArithmetic =
    std::is_floating_point_v<T> || std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <class T>
void apply_rows(const row_group& g) {
  std::array<std::int64_t, max_dims> at{};
  const std::size_t n = g.members.size();
  std::vector<std::int64_t> src_off(n, 0), dst_off(n, 0);
  for (;;) {
    for (std::size_t m = 0; m < n; ++m) {
      const row_group::member& mb = g.members[m];
      const T* in = static_cast<const T*>(mb.src) + src_off[m];
      T* out = static_cast<T*>(mb.dst) + dst_off[m];
      if (mb.scale.plain()) row<T, 0>(in, 1, out, 1, mb.length, mb.scale);
      else if constexpr (kArithmetic<T>) {  // (copy-only types are never scaled: the plan checks)
        if (mb.scale.beta_zero()) row<T, 1>(in, 1, out, 1, mb.length, mb.scale);
        else row<T, 2>(in, 1, out, 1, mb.length, mb.scale);
      }
    }
    int d = g.outer_dims - 1;  // odometer over the outer axes
    for (; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      for (std::size_t m = 0; m < n; ++m) {
        src_off[m] += g.members[m].src_stride[k];
        dst_off[m] += g.members[m].dst_stride[k];
      }
      if (++at[k] < g.extent[k]) break;
      for (std::size_t m = 0; m < n; ++m) {
        src_off[m] -= g.members[m].src_stride[k] * g.extent[k];
        dst_off[m] -= g.members[m].dst_stride[k] * g.extent[k];
      }
      at[k] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

void apply(const row_group& g) {
  for (int d = 0; d < g.outer_dims; ++d) {
    if (g.extent[static_cast<std::size_t>(d)] == 0) return;
  }
  switch (g.type) {
    case dtype::float32:
      return apply_rows<float>(g);
    case dtype::float64:
      return apply_rows<double>(g);
    case dtype::complex64:
      return apply_rows<std::complex<float>>(g);
    case dtype::complex128:
      return apply_rows<std::complex<double>>(g);
    default:
      break;
  }
  switch (dtype_size(g.type)) {  // copy-only types: plain rows of bytes of the right width
    case 1:
      return apply_rows<raw<1>>(g);
    case 2:
      return apply_rows<raw<2>>(g);
    case 4:
      return apply_rows<raw<4>>(g);
    case 8:
      return apply_rows<raw<8>>(g);
    case 16:
      return apply_rows<raw<16>>(g);
    default:
      throw error(errc::unsupported, "redistribute: unsupported element size");
  }
}

bool arithmetic_dtype(dtype t) {
  return t == dtype::float32 || t == dtype::float64 || t == dtype::complex64 || t == dtype::complex128;
}

void apply(dtype t, const box_copy& c, const void* src, void* dst, const scaling& s) {
  switch (t) {
    case dtype::float32:
      return apply_typed<float>(c, src, dst, s);
    case dtype::float64:
      return apply_typed<double>(c, src, dst, s);
    case dtype::complex64:
      return apply_typed<std::complex<float>>(c, src, dst, s);
    case dtype::complex128:
      return apply_typed<std::complex<double>>(c, src, dst, s);
    default:
      break;
  }
  if (!s.plain())
    throw error(errc::unsupported, "redistribute: alpha, beta and conjugation need a float or complex dtype");
  switch (dtype_size(t)) {
    case 1:
      return apply_raw<1>(c, src, dst);
    case 2:
      return apply_raw<2>(c, src, dst);
    case 4:
      return apply_raw<4>(c, src, dst);
    case 8:
      return apply_raw<8>(c, src, dst);
    case 16:
      return apply_raw<16>(c, src, dst);
    default:
      throw error(errc::unsupported, "redistribute: unsupported element size");
  }
}

}  // namespace conveyor::detail
