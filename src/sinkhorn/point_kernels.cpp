// The point-cloud Sinkhorn kernel (point_kernels.hpp), written once with Google
// Highway and compiled for every target it knows.
//
// One tile of kTile columns at a time, for each row x_i:
//   pass 1: c_j = sum_k (x_ik - y_jk)^2 (sqrt for euclidean), v_j = h_j - c_j/eps
//           into the scratch, and max_j v_j;
//   pass 2: s = sum_j exp(v_j - max) (and w = sum_j exp(v_j - max) c_j) on the
//           scratch, still in L1;
// then (max, s, w) is folded into the row's running log-sum-exp in double.
// Differences, not ||x||^2 + ||y||^2 - 2<x, y>: no cancellation for close points
// at large norms; at small d the two cost the same (d subtractions vs. norms
// and their loads). One exp per pair. The tile's points (d x kTile) stay in L1
// for d up to 16 in double, 32 in float, while every row walks them.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sinkhorn/point_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sinkhorn/point_kernels.hpp"
#include "runtime/simd_targets.hpp"

HWY_BEFORE_NAMESPACE();
namespace conveyor::sinkhorn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// v_j = h_j - C(x, y_j) / eps for the points [j, j + Lanes(d)) of the tile; the
// cost itself to c when kCost.
template <class D, class T, bool kEuclid, bool kCost>
HWY_INLINE hn::Vec<D> TileValues(D d, const T* HWY_RESTRICT x, std::size_t dim, const T* HWY_RESTRICT yt,
                                 std::size_t stride, const T* HWY_RESTRICT h, T inv_eps, T* HWY_RESTRICT c,
                                 std::size_t j) {
  auto acc = hn::Zero(d);
  for (std::size_t k = 0; k < dim; ++k) {
    const auto diff = hn::Sub(hn::Set(d, x[k]), hn::LoadU(d, yt + k * stride + j));
    acc = hn::MulAdd(diff, diff, acc);
  }
  if constexpr (kEuclid) acc = hn::Sqrt(acc);
  if constexpr (kCost) hn::StoreU(acc, d, c + j);
  return hn::NegMulAdd(acc, hn::Set(d, inv_eps), hn::LoadU(d, h + j));
}

// Folds a tile's (max, sum, weighted) into the row's running log-sum-exp.
HWY_INLINE void Fold(running_lse& r, double m, double s, double w) {
  if (!(m > -std::numeric_limits<double>::infinity())) return;  // nothing in this tile
  if (m > r.max) {
    const double scale = std::exp(r.max - m);  // 0 while r.max = -Inf
    r.sum = r.sum * scale + s;
    r.weighted = r.weighted * scale + w;
    r.max = m;
  } else {
    const double scale = std::exp(m - r.max);
    r.sum += s * scale;
    r.weighted += w * scale;
  }
}

template <class T, bool kEuclid, bool kCost>
void MergeRowTile(const T* HWY_RESTRICT x, std::size_t dim, const T* HWY_RESTRICT yt, std::size_t stride,
                  const T* HWY_RESTRICT h, std::size_t n, T inv_eps, running_lse& lse, T* HWY_RESTRICT scratch) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  T* HWY_RESTRICT v = scratch;
  T* HWY_RESTRICT c = scratch + point_kernels<T>::kTile;
  // Pass 1: values and their maximum.
  auto vmax = hn::Set(d, -std::numeric_limits<T>::infinity());
  std::size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto val = TileValues<decltype(d), T, kEuclid, kCost>(d, x, dim, yt, stride, h, inv_eps, c, j);
    hn::StoreU(val, d, v + j);
    vmax = hn::Max(vmax, val);
  }
  T m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; j < n; ++j) {
    const auto val = TileValues<decltype(d1), T, kEuclid, kCost>(d1, x, dim, yt, stride, h, inv_eps, c, j);
    hn::StoreU(val, d1, v + j);
    m = std::max(m, hn::GetLane(val));
  }
  if (!(m > -std::numeric_limits<T>::infinity())) return;  // every point empty (or NaN: caught by the caller)
  // Pass 2: exp(v - max), summed (and weighted by the cost).
  const auto vm = hn::Set(d, m);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), w0 = hn::Zero(d), w1 = hn::Zero(d);
  j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, v + j), vm));
    const auto e1 = hn::Exp(d, hn::Sub(hn::LoadU(d, v + j + N), vm));
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
    if constexpr (kCost) {
      w0 = hn::MulAdd(e0, hn::LoadU(d, c + j), w0);
      w1 = hn::MulAdd(e1, hn::LoadU(d, c + j + N), w1);
    }
  }
  for (; j + N <= n; j += N) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, v + j), vm));
    s0 = hn::Add(s0, e0);
    if constexpr (kCost) w0 = hn::MulAdd(e0, hn::LoadU(d, c + j), w0);
  }
  double s = static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
  double w = kCost ? static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(w0, w1)))) : 0.0;
  for (; j < n; ++j) {
    const T e = hn::GetLane(hn::Exp(d1, hn::Set(d1, v[j] - m)));
    s += static_cast<double>(e);
    if constexpr (kCost) w += static_cast<double>(e) * static_cast<double>(c[j]);
  }
  Fold(lse, static_cast<double>(m), s, w);
}

template <class T, bool kEuclid, bool kCost>
void MergeBlockFor(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h,
                   T inv_eps, running_lse* lse, T* scratch) {
  constexpr std::size_t kTile = point_kernels<T>::kTile;
  for (std::size_t j0 = 0; j0 < cols; j0 += kTile) {
    const std::size_t n = std::min(kTile, cols - j0);
    for (std::size_t i = 0; i < rows; ++i) {
      MergeRowTile<T, kEuclid, kCost>(x + i * dim, dim, yt + j0, cols, h + j0, n, inv_eps, lse[i], scratch);
    }
  }
}

template <class T>
void MergeBlock(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h, T inv_eps,
                metric ground, bool with_cost, running_lse* lse, T* scratch) {
  const bool euclid = ground == metric::euclidean;
  if (euclid) {
    (with_cost ? MergeBlockFor<T, true, true> : MergeBlockFor<T, true, false>)(x, rows, dim, yt, cols, h, inv_eps,
                                                                              lse, scratch);
  } else {
    (with_cost ? MergeBlockFor<T, false, true> : MergeBlockFor<T, false, false>)(x, rows, dim, yt, cols, h, inv_eps,
                                                                                lse, scratch);
  }
}

template <class T>
point_kernels<T> MakePointTable() {
  point_kernels<T> t{};
  t.merge_block = &MergeBlock<T>;
  return t;
}

// Built on the first lookup of this target (after the CPU check), never at load.
const point_kernel_tables* GetPointTables() {
  static const point_kernel_tables tables{MakePointTable<float>(), MakePointTable<double>()};
  return &tables;
}

}  // namespace conveyor::sinkhorn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace conveyor::sinkhorn::detail {
namespace {

HWY_EXPORT(GetPointTables);  // constant data: each pass's GetPointTables address

const point_kernel_tables& point_tables_for(std::int64_t bit) {
  return *conveyor::detail::for_target(HWY_DISPATCH_TABLE(GetPointTables), bit)();
}

}  // namespace

template <>
const point_kernels<float>& point_kernels_for_target<float>(std::int64_t bit) {
  return point_tables_for(bit).f32;
}
template <>
const point_kernels<double>& point_kernels_for_target<double>(std::int64_t bit) {
  return point_tables_for(bit).f64;
}
template <>
const point_kernels<float>& active_point_kernels<float>() {
  return point_kernels_for_target<float>(conveyor::detail::active_target());
}
template <>
const point_kernels<double>& active_point_kernels<double>() {
  return point_kernels_for_target<double>(conveyor::detail::active_target());
}

}  // namespace conveyor::sinkhorn::detail
#endif  // HWY_ONCE
