// SPDX-License-Identifier: BSD-3-Clause
// The transpose kernel (transpose.hpp), for every Highway target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/transpose.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#include "runtime/transpose.hpp"
#include "runtime/simd_targets.hpp"

HWY_BEFORE_NAMESPACE();
namespace conveyor {
namespace detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[a * dld + b] = src[a + b * sld]: blocks of L x L (L = lanes of a vector of up
// to four 64-bit values) loaded as L source columns, transposed in registers and
// stored as L destination rows; the edges element by element.

// One element: a copy, or alpha * x (+ beta * y) in float64.
inline void Element(const std::uint64_t* in, std::uint64_t* out, const transpose_scale* s) {
  if (!s) {
    *out = *in;
    return;
  }
  double x, y;
  std::memcpy(&x, in, sizeof x);
  double r = s->alpha * x;
  if (s->update) {
    std::memcpy(&y, out, sizeof y);
    r = r + s->beta * y;
  }
  std::memcpy(out, &r, sizeof r);
}

template <class D>
void TransposeBlocks(D d, const std::uint64_t* src, std::int64_t sld, std::uint64_t* dst, std::int64_t dld,
                     std::int64_t rows, std::int64_t cols, const transpose_scale* s) {
  constexpr std::int64_t L = static_cast<std::int64_t>(hn::MaxLanes(D()));
  const auto at_src = [&](std::int64_t a, std::int64_t b) { return src + a + b * sld; };
  const auto at_dst = [&](std::int64_t a, std::int64_t b) { return dst + a * dld + b; };
  std::int64_t a = 0;
#if HWY_TARGET != HWY_SCALAR  // (the 1-lane target has no interleaving ops)
  const hn::Rebind<double, D> dd;
  const auto put = [&](decltype(hn::Zero(d)) v, std::uint64_t* out) {
    if (!s) {
      hn::StoreU(v, d, out);
      return;
    }
    auto r = hn::Mul(hn::Set(dd, s->alpha), hn::BitCast(dd, v));
    if (s->update) r = hn::Add(r, hn::Mul(hn::Set(dd, s->beta), hn::LoadU(dd, reinterpret_cast<const double*>(out))));
    hn::StoreU(r, dd, reinterpret_cast<double*>(out));
  };
  if constexpr (L == 4 || L == 2) {
    for (; a + L <= rows; a += L) {
      std::int64_t b = 0;
      for (; b + L <= cols; b += L) {
        if constexpr (L == 4) {
          const auto c0 = hn::LoadU(d, at_src(a, b)), c1 = hn::LoadU(d, at_src(a, b + 1));
          const auto c2 = hn::LoadU(d, at_src(a, b + 2)), c3 = hn::LoadU(d, at_src(a, b + 3));
          // t0 = [c0[0] c1[0] | c0[2] c1[2]], t1 = [c0[1] c1[1] | c0[3] c1[3]], ...
          const auto t0 = hn::InterleaveLower(d, c0, c1), t1 = hn::InterleaveUpper(d, c0, c1);
          const auto t2 = hn::InterleaveLower(d, c2, c3), t3 = hn::InterleaveUpper(d, c2, c3);
          put(hn::ConcatLowerLower(d, t2, t0), at_dst(a, b));
          put(hn::ConcatLowerLower(d, t3, t1), at_dst(a + 1, b));
          put(hn::ConcatUpperUpper(d, t2, t0), at_dst(a + 2, b));
          put(hn::ConcatUpperUpper(d, t3, t1), at_dst(a + 3, b));
        } else {
          const auto c0 = hn::LoadU(d, at_src(a, b)), c1 = hn::LoadU(d, at_src(a, b + 1));
          put(hn::InterleaveLower(d, c0, c1), at_dst(a, b));
          put(hn::InterleaveUpper(d, c0, c1), at_dst(a + 1, b));
        }
      }
      for (; b < cols; ++b) {
        for (std::int64_t x = a; x < a + L; ++x) Element(at_src(x, b), at_dst(x, b), s);
      }
    }
  }
#else
  (void)d;
  (void)L;
#endif
  for (; a < rows; ++a) {
    for (std::int64_t b = 0; b < cols; ++b) Element(at_src(a, b), at_dst(a, b), s);
  }
}

void Transpose8(const void* src, std::int64_t sld, void* dst, std::int64_t dld, std::int64_t rows, std::int64_t cols,
                const transpose_scale* s) {
  TransposeBlocks(hn::CappedTag<std::uint64_t, 4>(), static_cast<const std::uint64_t*>(src), sld,
                  static_cast<std::uint64_t*>(dst), dld, rows, cols, s);
}

}  // namespace HWY_NAMESPACE
}  // namespace detail
}  // namespace conveyor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace conveyor::detail {

HWY_EXPORT(Transpose8);  // constant data: each pass's Transpose8 address

transpose8_fn transpose8() { return for_target(HWY_DISPATCH_TABLE(Transpose8), active_target()); }

}  // namespace conveyor::detail
#endif  // HWY_ONCE
