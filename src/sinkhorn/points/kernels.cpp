// SPDX-License-Identifier: BSD-3-Clause
// The point-cloud Sinkhorn kernel (points/kernels.hpp), written once with Google
// Highway and compiled for every target it knows.
//
// One tile of kTile columns at a time, for each row x_i:
//   pass 1: c_j = sum_k (x_ik - y_jk)^2 (sqrt for euclidean), v_j = h_j - c_j/eps
//           into the scratch, and max_j v_j;
//   pass 2: s = sum_j exp(v_j - max) (and w = sum_j exp(v_j - max) c_j) on the
//           scratch, still in L1;
// then (max, s, w) is folded into the row's running log-sum-exp in double.
// Pass 1 has two forms: differences (exact for close points far from the origin)
// below dot_min_dim(), and from it ||x||^2 + ||y||^2 - 2<x, y> with kDotRows rows
// per load of the tile's coordinates (d FMAs per pair instead of d subtractions and
// d FMAs; the callers center the points). Its cancellation leaves an absolute
// error of a few ulps of |x|^2 + |y|^2: harmless in a squared distance, but a
// square root turns it into sqrt(ulp) (1e-8 of the clouds' size in double, 3e-4
// in float) where two points meet (every point of a debiasing problem), and a
// 1 / C weight into a huge one. So for the distance and for 1 / C, the lanes
// whose squared distance is below kNear (|x|^2 + |y|^2) are recomputed by
// differences (rare but for such pairs). One exp per pair. Applying a plan
// (apply_block) runs the same pass 1 (either form), then k dot products per tile;
// with a power of the cost (its gradients' sums) pass 1 also keeps the costs.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sinkhorn/points/kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sinkhorn/exp_normal-inl.h"
#include "sinkhorn/points/kernels.hpp"
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

// Pass 1 of a row and a tile: v_j = h_j - C(x, y_j) / eps for the tile's n
// points into v (the costs into c when kCost); returns max_j v_j.
template <class T, bool kEuclid, bool kCost>
T TileValuesAndMax(const T* HWY_RESTRICT x, std::size_t dim, const T* HWY_RESTRICT yt, std::size_t stride,
                   const T* HWY_RESTRICT h, std::size_t n, T inv_eps, T* HWY_RESTRICT v, T* HWY_RESTRICT c) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
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
  return m;
}

// Pass 2 of a row and a tile: sum_j exp(v_j - m) (and sum_j exp(v_j - m) c_j)
// folded into the row's running log-sum-exp.
template <class T, bool kCost>
void FoldTile(const T* HWY_RESTRICT v, const T* HWY_RESTRICT c, std::size_t n, T m, running_lse& lse) {
  if (!(m > -std::numeric_limits<T>::infinity())) return;  // every point empty (or NaN: caught by the caller)
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  const auto vm = hn::Set(d, m);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), w0 = hn::Zero(d), w1 = hn::Zero(d);
  std::size_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    const auto e0 = ExpNormal(d, hn::Sub(hn::LoadU(d, v + j), vm));
    const auto e1 = ExpNormal(d, hn::Sub(hn::LoadU(d, v + j + N), vm));
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
    if constexpr (kCost) {
      w0 = hn::MulAdd(e0, hn::LoadU(d, c + j), w0);
      w1 = hn::MulAdd(e1, hn::LoadU(d, c + j + N), w1);
    }
  }
  for (; j + N <= n; j += N) {
    const auto e0 = ExpNormal(d, hn::Sub(hn::LoadU(d, v + j), vm));
    s0 = hn::Add(s0, e0);
    if constexpr (kCost) w0 = hn::MulAdd(e0, hn::LoadU(d, c + j), w0);
  }
  double s = static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
  double w = kCost ? static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(w0, w1)))) : 0.0;
  for (; j < n; ++j) {
    const T e = hn::GetLane(ExpNormal(d1, hn::Set(d1, v[j] - m)));
    s += static_cast<double>(e);
    if constexpr (kCost) w += static_cast<double>(e) * static_cast<double>(c[j]);
  }
  Fold(lse, static_cast<double>(m), s, w);
}

template <class T, bool kEuclid, bool kCost>
void MergeRowTile(const T* HWY_RESTRICT x, std::size_t dim, const T* HWY_RESTRICT yt, std::size_t stride,
                  const T* HWY_RESTRICT h, std::size_t n, T inv_eps, running_lse& lse, T* HWY_RESTRICT scratch) {
  T* HWY_RESTRICT v = scratch;
  T* HWY_RESTRICT c = scratch + point_kernels<T>::kTile;
  FoldTile<T, kCost>(v, c, n, TileValuesAndMax<T, kEuclid, kCost>(x, dim, yt, stride, h, n, inv_eps, v, c), lse);
}

// ---- The dot-product path (dim >= kDotMinDim) ------------------------------
// C_ij = |x_i|^2 + |y_j|^2 - 2 <x_i, y_j> (clamped at 0): kRows rows share each
// load of the tile's coordinates, one FMA per coordinate and pair instead of a
// subtraction and an FMA (the callers center the points first, which bounds the
// cancellation by the clouds' diameter).

// |y_j|^2 for the tile's n points.
template <class T>
void TileNorms(const T* HWY_RESTRICT yt, std::size_t dim, std::size_t stride, std::size_t n, T* HWY_RESTRICT yn) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  std::size_t j = 0;
  const auto norms = [&](auto tag, std::size_t at) {
    auto acc = hn::Zero(tag);
    for (std::size_t k = 0; k < dim; ++k) {
      const auto y = hn::LoadU(tag, yt + k * stride + at);
      acc = hn::MulAdd(y, y, acc);
    }
    hn::StoreU(acc, tag, yn + at);
  };
  for (; j + N <= n; j += N) norms(d, j);
  for (; j < n; ++j) norms(d1, j);
}

// Below this fraction of |x|^2 + |y|^2 a squared distance by dot products is
// recomputed by differences where its error would grow (the header): its
// relative error is then at most ~2 ulp / kNear (2e-13 in double, 1e-4 in float).
constexpr double kNear = 1.0 / 1024;

// The lanes of sq (row x against the tile's columns [at, at + lanes)) below
// kNear (|x|^2 + |y|^2), recomputed by differences.
template <class D, class T>
HWY_INLINE hn::Vec<D> NearByDifferences(D tag, hn::Vec<D> sq, const T* HWY_RESTRICT x, std::size_t dim,
                                        const T* HWY_RESTRICT yt, std::size_t stride, std::size_t at, T xn,
                                        const T* HWY_RESTRICT yn) {
  T lanes[256 / sizeof(T)];  // (the widest vector: SVE's 2048 bits)
  hn::StoreU(sq, tag, lanes);
  for (std::size_t l = 0; l < hn::Lanes(tag); ++l) {
    if (!(lanes[l] < static_cast<T>(kNear) * (xn + yn[at + l]))) continue;
    T sum = 0;
    for (std::size_t k = 0; k < dim; ++k) {
      const T t = x[k] - yt[k * stride + at + l];
      sum += t * t;
    }
    lanes[l] = sum;
  }
  return hn::LoadU(tag, lanes);
}

// Pass 1 for kRows rows (x: row-major, dim each) against the tile: values into
// v + r * kTile (costs into c + r * kTile when kCost), maxima into m[r]. With
// kExactNear, squared distances near 0 by differences (NearByDifferences).
template <class T, bool kEuclid, bool kCost, std::size_t kRows, bool kExactNear = kEuclid>
void TileValuesByDots(const T* HWY_RESTRICT x, std::size_t dim, const T* HWY_RESTRICT yt, std::size_t stride,
                      const T* HWY_RESTRICT h, const T* HWY_RESTRICT yn, std::size_t n, T inv_eps, T* HWY_RESTRICT v,
                      T* HWY_RESTRICT c, T* HWY_RESTRICT m) {
  constexpr std::size_t kTile = point_kernels<T>::kTile;
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  T xn[kRows];
  for (std::size_t r = 0; r < kRows; ++r) {
    T sum = 0;
    for (std::size_t k = 0; k < dim; ++k) sum += x[r * dim + k] * x[r * dim + k];
    xn[r] = sum;
    m[r] = -std::numeric_limits<T>::infinity();
  }
  // (Four named accumulators, not an array: SVE's vectors cannot be array elements.)
  static_assert(kRows == 1 || kRows == 4, "1 or 4 rows");
  const auto columns = [&](auto tag, std::size_t at) {
    auto dot0 = hn::Zero(tag), dot1 = hn::Zero(tag), dot2 = hn::Zero(tag), dot3 = hn::Zero(tag);
    for (std::size_t k = 0; k < dim; ++k) {
      const auto y = hn::LoadU(tag, yt + k * stride + at);
      dot0 = hn::MulAdd(hn::Set(tag, x[k]), y, dot0);
      if constexpr (kRows == 4) {
        dot1 = hn::MulAdd(hn::Set(tag, x[dim + k]), y, dot1);
        dot2 = hn::MulAdd(hn::Set(tag, x[2 * dim + k]), y, dot2);
        dot3 = hn::MulAdd(hn::Set(tag, x[3 * dim + k]), y, dot3);
      }
    }
    const auto y_norm = hn::LoadU(tag, yn + at), h_j = hn::LoadU(tag, h + at);
    const auto finish = [&](std::size_t r, decltype(dot0) dot) {
      auto cost = hn::Max(hn::NegMulAdd(hn::Set(tag, T(2)), dot, hn::Add(hn::Set(tag, xn[r]), y_norm)), hn::Zero(tag));
      if constexpr (kExactNear) {
        const auto bound = hn::Mul(hn::Set(tag, static_cast<T>(kNear)), hn::Add(hn::Set(tag, xn[r]), y_norm));
        if (!hn::AllFalse(tag, hn::Lt(cost, bound))) {
          cost = NearByDifferences(tag, cost, x + r * dim, dim, yt, stride, at, xn[r], yn);
        }
      }
      if constexpr (kEuclid) cost = hn::Sqrt(cost);
      if constexpr (kCost) hn::StoreU(cost, tag, c + r * kTile + at);
      const auto val = hn::NegMulAdd(cost, hn::Set(tag, inv_eps), h_j);
      hn::StoreU(val, tag, v + r * kTile + at);
      m[r] = std::max(m[r], hn::GetLane(hn::MaxOfLanes(tag, val)));
    };
    finish(0, dot0);
    if constexpr (kRows == 4) {
      finish(1, dot1);
      finish(2, dot2);
      finish(3, dot3);
    }
  };
  std::size_t j = 0;
  for (; j + N <= n; j += N) columns(d, j);
  for (; j < n; ++j) columns(d1, j);
}

// Rows in groups of kDotRows through the dot-product path, one tile at a time.
template <class T, bool kEuclid, bool kCost>
void MergeTileByDots(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t stride, const T* h,
                     std::size_t n, T inv_eps, running_lse* lse, T* scratch) {
  constexpr std::size_t kTile = point_kernels<T>::kTile, kRows = point_kernels<T>::kDotRows;
  T* yn = scratch;
  T* v = scratch + kTile;
  T* c = v + kRows * kTile;
  TileNorms(yt, dim, stride, n, yn);
  T m[kRows];
  std::size_t i = 0;
  for (; i + kRows <= rows; i += kRows) {
    TileValuesByDots<T, kEuclid, kCost, kRows>(x + i * dim, dim, yt, stride, h, yn, n, inv_eps, v, c, m);
    for (std::size_t r = 0; r < kRows; ++r) FoldTile<T, kCost>(v + r * kTile, c + r * kTile, n, m[r], lse[i + r]);
  }
  for (; i < rows; ++i) {
    TileValuesByDots<T, kEuclid, kCost, 1>(x + i * dim, dim, yt, stride, h, yn, n, inv_eps, v, c, m);
    FoldTile<T, kCost>(v, c, n, m[0], lse[i]);
  }
}

template <class T, bool kEuclid, bool kCost>
void MergeBlockFor(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h, T inv_eps,
                   running_lse* lse, T* scratch) {
  constexpr std::size_t kTile = point_kernels<T>::kTile;
  const bool by_dots = dim >= dot_min_dim();
  for (std::size_t j0 = 0; j0 < cols; j0 += kTile) {
    const std::size_t n = std::min(kTile, cols - j0);
    if (by_dots) {
      MergeTileByDots<T, kEuclid, kCost>(x, rows, dim, yt + j0, cols, h + j0, n, inv_eps, lse, scratch);
      continue;
    }
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
    (with_cost ? MergeBlockFor<T, true, true> : MergeBlockFor<T, true, false>)(x, rows, dim, yt, cols, h, inv_eps, lse,
                                                                               scratch);
  } else {
    (with_cost ? MergeBlockFor<T, false, true> : MergeBlockFor<T, false, false>)(x, rows, dim, yt, cols, h, inv_eps,
                                                                                 lse, scratch);
  }
}

// Applying a plan, one row and one tile, after pass 1 (the values v_j and their
// max m, by either form): e_j = exp(v_j - m) in place (and, with kCost, the
// costs c_j replaced by e_j C_ij^power, 0 where C_ij = 0 and power < 0), then
// for each of the k values sum_j e_j vt[c][j] (the first `plain` of them) or
// sum_j e_j C_ij^power vt[c][j] (the others), folded into the row's running
// (max, k sums) in double as Fold does.
template <class T, bool kCost>
void FoldValuesTile(T* HWY_RESTRICT e, T* HWY_RESTRICT c, int power, std::size_t plain, std::size_t n, T m,
                    const T* HWY_RESTRICT vt, std::size_t stride, std::size_t k, double* HWY_RESTRICT acc) {
  if (!(m > -std::numeric_limits<T>::infinity())) return;
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  const auto weigh = [&](auto tag, std::size_t at) {
    const auto ex = ExpNormal(tag, hn::Sub(hn::LoadU(tag, e + at), hn::Set(tag, m)));
    hn::StoreU(ex, tag, e + at);
    if constexpr (kCost) {
      const auto cost = hn::LoadU(tag, c + at);
      const auto zero = hn::Zero(tag);
      // (a pair at distance 0 contributes 0 to an inverse-cost sum: the
      // subgradient of |x - y| there, as GeomLoss's clamped distance gives)
      const auto w = power > 0 ? hn::Mul(ex, cost) : hn::IfThenElseZero(hn::Gt(cost, zero), hn::Div(ex, cost));
      hn::StoreU(w, tag, c + at);
    }
  };
  std::size_t j = 0;
  for (; j + N <= n; j += N) weigh(d, j);
  for (; j < n; ++j) weigh(d1, j);
  double& running_max = acc[0];
  double scale_old = 1, scale_new = 1;  // the running sums' and this tile's factors to the new max
  if (static_cast<double>(m) > running_max) {
    scale_old = std::exp(running_max - static_cast<double>(m));  // 0 while running_max = -Inf
    running_max = static_cast<double>(m);
  } else {
    scale_new = std::exp(static_cast<double>(m) - running_max);
  }
  for (std::size_t col = 0; col < k; ++col) {
    const T* HWY_RESTRICT values = vt + col * stride;
    const T* HWY_RESTRICT w = (kCost && col >= plain) ? c : e;
    auto s0 = hn::Zero(d), s1 = hn::Zero(d);
    j = 0;
    for (; j + 2 * N <= n; j += 2 * N) {
      s0 = hn::MulAdd(hn::LoadU(d, w + j), hn::LoadU(d, values + j), s0);
      s1 = hn::MulAdd(hn::LoadU(d, w + j + N), hn::LoadU(d, values + j + N), s1);
    }
    for (; j + N <= n; j += N) s0 = hn::MulAdd(hn::LoadU(d, w + j), hn::LoadU(d, values + j), s0);
    double sum = static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
    for (; j < n; ++j) sum += static_cast<double>(w[j]) * static_cast<double>(values[j]);
    acc[1 + col] = acc[1 + col] * scale_old + sum * scale_new;
  }
}

// The rows against the block a tile at a time, pass 1 by differences or (from
// dot_min_dim(), on centered points) by dot products kDotRows rows at a time.
template <class T, bool kEuclid, bool kCost>
void ApplyBlockFor(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h, T inv_eps,
                   int power, std::size_t plain, const T* vt, std::size_t k, double* acc, T* scratch) {
  constexpr std::size_t kTile = point_kernels<T>::kTile, kRows = point_kernels<T>::kDotRows;
  const bool by_dots = dim >= dot_min_dim();
  for (std::size_t j0 = 0; j0 < cols; j0 += kTile) {
    const std::size_t n = std::min(kTile, cols - j0);
    const T* tile_y = yt + j0;
    const T* tile_h = h + j0;
    const T* tile_v = vt + j0;
    std::size_t i = 0;
    if (by_dots) {
      T* yn = scratch;
      T* v = scratch + kTile;
      T* c = v + kRows * kTile;
      T m[kRows];
      TileNorms(tile_y, dim, cols, n, yn);
      // (an inverse cost also takes the exact small distances)
      const auto values = power < 0 ? TileValuesByDots<T, kEuclid, kCost, kRows, true>
                                    : TileValuesByDots<T, kEuclid, kCost, kRows, kEuclid>;
      const auto value =
          power < 0 ? TileValuesByDots<T, kEuclid, kCost, 1, true> : TileValuesByDots<T, kEuclid, kCost, 1, kEuclid>;
      for (; i + kRows <= rows; i += kRows) {
        values(x + i * dim, dim, tile_y, cols, tile_h, yn, n, inv_eps, v, c, m);
        for (std::size_t r = 0; r < kRows; ++r) {
          FoldValuesTile<T, kCost>(v + r * kTile, c + r * kTile, power, plain, n, m[r], tile_v, cols, k,
                                   acc + (i + r) * (k + 1));
        }
      }
      for (; i < rows; ++i) {
        value(x + i * dim, dim, tile_y, cols, tile_h, yn, n, inv_eps, v, c, m);
        FoldValuesTile<T, kCost>(v, c, power, plain, n, m[0], tile_v, cols, k, acc + i * (k + 1));
      }
      continue;
    }
    T* v = scratch;
    T* c = scratch + kTile;
    for (; i < rows; ++i) {
      const T m = TileValuesAndMax<T, kEuclid, kCost>(x + i * dim, dim, tile_y, cols, tile_h, n, inv_eps, v, c);
      FoldValuesTile<T, kCost>(v, c, power, plain, n, m, tile_v, cols, k, acc + i * (k + 1));
    }
  }
}

template <class T>
void ApplyBlock(const T* x, std::size_t rows, std::size_t dim, const T* yt, std::size_t cols, const T* h, T inv_eps,
                metric ground, int power, std::size_t plain, const T* vt, std::size_t k, double* acc, T* scratch) {
  const bool euclid = ground == metric::euclidean;
  auto* run = euclid ? (power ? ApplyBlockFor<T, true, true> : ApplyBlockFor<T, true, false>)
                     : (power ? ApplyBlockFor<T, false, true> : ApplyBlockFor<T, false, false>);
  run(x, rows, dim, yt, cols, h, inv_eps, power, plain, vt, k, acc, scratch);
}

// Built on the first lookup of this target (after the CPU check), never at load.
const point_kernel_tables* GetPointTables() {
  static const point_kernel_tables tables{{&MergeBlock<float>, &ApplyBlock<float>},
                                          {&MergeBlock<double>, &ApplyBlock<double>}};
  return &tables;
}

}  // namespace conveyor::sinkhorn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "conveyor/settings.hpp"

namespace conveyor::sinkhorn::detail {

// The measured crossover (docs/algorithms.md, "Point clouds"): below it the
// differences cost less than the dot products' norms and bookkeeping.
constexpr std::size_t kDotMinDimDefault = 8;

std::size_t dot_min_dim() {
  // (A throw leaves the static unset: every later call throws again.)
  static const std::size_t value = [] {
    const auto v = conveyor::setting("CONVEYOR_POINTS_DOT_MIN_DIM");
    if (!v) return kDotMinDimDefault;
    if (v->find_first_not_of("0123456789") != std::string::npos || v->size() > 9) {
      throw error(errc::invalid_argument, "CONVEYOR_POINTS_DOT_MIN_DIM must be a whole number, got '" + *v + "'");
    }
    return static_cast<std::size_t>(std::stoul(*v));
  }();
  return value;
}

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
