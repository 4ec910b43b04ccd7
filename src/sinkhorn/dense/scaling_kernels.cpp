// SPDX-License-Identifier: BSD-3-Clause
// SIMD kernels of the Sinkhorn engine (see dense/scaling_kernels.hpp), written once with Google
// Highway and compiled for every target it knows; the runtime's active target
// picks the table. Loops run whole vectors, then a tail of 1-lane vectors
// (CappedTag<T, 1>) through the same arithmetic, so no element takes a different
// code path depending on where a buffer ends.
//
// Sums keep several vector accumulators (independent dependency chains); their
// order is fixed, so a kernel is deterministic for a given target and length.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sinkhorn/dense/scaling_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <limits>

#include "sinkhorn/exp_normal-inl.h"
#include "sinkhorn/dense/scaling_kernels.hpp"
#include "runtime/simd_targets.hpp"

HWY_BEFORE_NAMESPACE();
namespace conveyor {
namespace sinkhorn {
namespace detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls body(d, j) for every full vector of `d` and then body(d1, j) for each
// remaining element with a one-lane tag.
template <class T, class Body>
HWY_INLINE void ForEachVector(std::size_t n, Body&& body) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  std::size_t j = 0;
  for (; j + N <= n; j += N) body(d, j);
  for (; j < n; ++j) body(d1, j);
}

template <class T>
T Sum(const T* HWY_RESTRICT a, std::size_t n) {
  const hn::ScalableTag<T> d;
  const std::size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  std::size_t j = 0;
  for (; j + 4 * N <= n; j += 4 * N) {
    s0 = hn::Add(s0, hn::LoadU(d, a + j));
    s1 = hn::Add(s1, hn::LoadU(d, a + j + N));
    s2 = hn::Add(s2, hn::LoadU(d, a + j + 2 * N));
    s3 = hn::Add(s3, hn::LoadU(d, a + j + 3 * N));
  }
  for (; j + N <= n; j += N) s0 = hn::Add(s0, hn::LoadU(d, a + j));
  T total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; j < n; ++j) total += a[j];
  return total;
}

template <class T>
void Scale(T* HWY_RESTRICT a, T alpha, std::size_t n) {
  ForEachVector<T>(
      n, [&](auto d, std::size_t j) { hn::StoreU(hn::Mul(hn::LoadU(d, a + j), hn::Set(d, alpha)), d, a + j); });
}

template <class T>
void Add(T* HWY_RESTRICT s, const T* HWY_RESTRICT a, std::size_t n) {
  ForEachVector<T>(
      n, [&](auto d, std::size_t j) { hn::StoreU(hn::Add(hn::LoadU(d, s + j), hn::LoadU(d, a + j)), d, s + j); });
}

template <class T>
void Axpy(T* HWY_RESTRICT s, T alpha, const T* HWY_RESTRICT a, std::size_t n) {
  ForEachVector<T>(n, [&](auto d, std::size_t j) {
    hn::StoreU(hn::MulAdd(hn::Set(d, alpha), hn::LoadU(d, a + j), hn::LoadU(d, s + j)), d, s + j);
  });
}

// target / current, with 0 for a zero target (a line that must stay empty).
template <class T>
HWY_INLINE T ScalingFactor(T target, T current) {
  return target == T(0) ? T(0) : target / current;
}

// Groups of R rows in two sweeps over the columns: the R dot products (streaming A
// from memory; one load of v feeds R rows), then s += sum_k u_k A_k with the rows
// re-read from L2 (s read and written once per R rows). Measured on Zen 4: R = 8
// beats R = 4 and beats a software-pipelined single sweep (dots of group g with the
// update of group g-1), which starves the memory stream of L1 bandwidth.
// The R accumulators are named variables, not an array: SVE vectors are sizeless
// types, which C++ allows neither in arrays nor in structs.
template <class T, int R>
HWY_INLINE void GroupDots(const T* A, std::size_t ld, std::size_t n, const T* HWY_RESTRICT v, T* dot) {
  static_assert(R == 4 || R == 8, "groups of 4 or 8 rows");
  const hn::ScalableTag<T> d;
  const std::size_t N = hn::Lanes(d);
  const T* a0 = A;
  const T* a1 = A + ld;
  const T* a2 = A + 2 * ld;
  const T* a3 = A + 3 * ld;
  auto t0 = hn::Zero(d), t1 = hn::Zero(d), t2 = hn::Zero(d), t3 = hn::Zero(d);
  auto t4 = hn::Zero(d), t5 = hn::Zero(d), t6 = hn::Zero(d), t7 = hn::Zero(d);
  std::size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto vj = hn::LoadU(d, v + j);
    t0 = hn::MulAdd(hn::LoadU(d, a0 + j), vj, t0);
    t1 = hn::MulAdd(hn::LoadU(d, a1 + j), vj, t1);
    t2 = hn::MulAdd(hn::LoadU(d, a2 + j), vj, t2);
    t3 = hn::MulAdd(hn::LoadU(d, a3 + j), vj, t3);
    if constexpr (R == 8) {
      t4 = hn::MulAdd(hn::LoadU(d, A + 4 * ld + j), vj, t4);
      t5 = hn::MulAdd(hn::LoadU(d, A + 5 * ld + j), vj, t5);
      t6 = hn::MulAdd(hn::LoadU(d, A + 6 * ld + j), vj, t6);
      t7 = hn::MulAdd(hn::LoadU(d, A + 7 * ld + j), vj, t7);
    }
  }
  dot[0] = hn::GetLane(hn::SumOfLanes(d, t0));
  dot[1] = hn::GetLane(hn::SumOfLanes(d, t1));
  dot[2] = hn::GetLane(hn::SumOfLanes(d, t2));
  dot[3] = hn::GetLane(hn::SumOfLanes(d, t3));
  if constexpr (R == 8) {
    dot[4] = hn::GetLane(hn::SumOfLanes(d, t4));
    dot[5] = hn::GetLane(hn::SumOfLanes(d, t5));
    dot[6] = hn::GetLane(hn::SumOfLanes(d, t6));
    dot[7] = hn::GetLane(hn::SumOfLanes(d, t7));
  }
  for (int k = 0; k < R; ++k) {
    const T* row = A + static_cast<std::size_t>(k) * ld;
    for (std::size_t jj = j; jj < n; ++jj) dot[k] += row[jj] * v[jj];
  }
}

template <class T, int R>
HWY_INLINE void GroupAxpy(const T* A, std::size_t ld, std::size_t n, const T* w, T* HWY_RESTRICT s) {
  ForEachVector<T>(n, [&](auto d, std::size_t j) {
    auto acc = hn::LoadU(d, s + j);
    for (int k = 0; k < R; ++k) {
      acc = hn::MulAdd(hn::Set(d, w[k]), hn::LoadU(d, A + static_cast<std::size_t>(k) * ld + j), acc);
    }
    hn::StoreU(acc, d, s + j);
  });
}

template <class T, int R>
std::size_t FusedGroups(const T* A, std::size_t rows, std::size_t cols, std::size_t ld, const T* v, const T* r, T* u,
                        T* s) {
  std::size_t i = 0;
  for (; i + R <= rows; i += R) {
    T dot[R];
    GroupDots<T, R>(A + i * ld, ld, cols, v, dot);
    for (int k = 0; k < R; ++k)
      u[i + static_cast<std::size_t>(k)] = ScalingFactor(r[i + static_cast<std::size_t>(k)], dot[k]);
    GroupAxpy<T, R>(A + i * ld, ld, cols, u + i, s);
  }
  return i;
}

template <class T>
T Dot(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, std::size_t n) {
  const hn::ScalableTag<T> d;
  const std::size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);
  std::size_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    s0 = hn::MulAdd(hn::LoadU(d, a + j), hn::LoadU(d, b + j), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + j + N), hn::LoadU(d, b + j + N), s1);
  }
  for (; j + N <= n; j += N) s0 = hn::MulAdd(hn::LoadU(d, a + j), hn::LoadU(d, b + j), s0);
  T total = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; j < n; ++j) total += a[j] * b[j];
  return total;
}

template <class T>
void FusedRows(const T* A, std::size_t rows, std::size_t cols, std::size_t ld, const T* v, const T* r, T* u, T* s) {
  // A group must stay in (half of) a typical 1 MiB L2 for its second sweep to hit
  // cache; very wide matrices go one row at a time.
  const std::size_t row_bytes = cols * sizeof(T), budget = std::size_t{512} << 10;
  std::size_t i = 0;
  if (8 * row_bytes <= budget) {
    i = FusedGroups<T, 8>(A, rows, cols, ld, v, r, u, s);
  } else if (4 * row_bytes <= budget) {
    i = FusedGroups<T, 4>(A, rows, cols, ld, v, r, u, s);
  }
  for (; i < rows; ++i) {
    const T* row = A + i * ld;
    u[i] = ScalingFactor(r[i], Dot(row, v, cols));
    Axpy(s, u[i], row, cols);
  }
}

// Algorithm 3's inner loops on one block: for ii step mr, for jj step nr, for the
// mr rows k: A[k, jj:jj+nr] *= w[jj:jj+nr]. nr is rounded up to whole vectors.
template <class T>
void ScaleColumnsBlock(T* A, std::size_t ld, std::size_t rows, std::size_t cols, const T* w, std::size_t mr,
                       std::size_t nr) {
  const hn::ScalableTag<T> d;
  const std::size_t N = hn::Lanes(d);
  mr = std::max<std::size_t>(mr, 1);
  nr = std::max<std::size_t>((nr + N - 1) / N, 1) * N;
  for (std::size_t ii = 0; ii < rows; ii += mr) {
    const std::size_t kend = std::min(rows, ii + mr);
    for (std::size_t jj = 0; jj < cols; jj += nr) {
      const std::size_t width = std::min(cols - jj, nr);
      for (std::size_t k = ii; k < kend; ++k) {
        T* row = A + k * ld + jj;
        ForEachVector<T>(width, [&](auto dd, std::size_t j) {
          hn::StoreU(hn::Mul(hn::LoadU(dd, row + j), hn::LoadU(dd, w + jj + j)), dd, row + j);
        });
      }
    }
  }
}

template <class T>
T ExpRow(const T* HWY_RESTRICT c, const T* HWY_RESTRICT log_v, T inv_eps, T* HWY_RESTRICT e, std::size_t n,
         T* max_out) {
  // Pass 1: x_j = log_v_j - c_j / eps into e (one fused multiply-add), and its
  // maximum, kept lane-wise and reduced once (a reduction per vector would cost
  // as much as the pass).
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const std::size_t N = hn::Lanes(d);
  const auto scale = hn::Set(d, inv_eps);
  auto vmax = hn::Set(d, -std::numeric_limits<T>::infinity());
  std::size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto x = hn::NegMulAdd(hn::LoadU(d, c + j), scale, hn::LoadU(d, log_v + j));
    hn::StoreU(x, d, e + j);
    vmax = hn::Max(vmax, x);
  }
  T m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; j < n; ++j) {
    const auto x = hn::NegMulAdd(hn::LoadU(d1, c + j), hn::Set(d1, inv_eps), hn::LoadU(d1, log_v + j));
    hn::StoreU(x, d1, e + j);
    m = std::max(m, hn::GetLane(x));
  }
  *max_out = m;
  if (!(m > -std::numeric_limits<T>::infinity())) {  // empty row, all -Inf, or NaN
    std::fill(e, e + n, T(0));
    return 0;
  }
  // Pass 2 (on cached data): e_j = exp(x_j - m) in (0, 1], and their sum.
  T total = 0;
  auto acc = hn::Zero(d);
  j = 0;
  for (; j + N <= n; j += N) {
    const auto y = ExpNormal(d, hn::Sub(hn::LoadU(d, e + j), hn::Set(d, m)));
    hn::StoreU(y, d, e + j);
    acc = hn::Add(acc, y);
  }
  total = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; j < n; ++j) {
    const auto y = ExpNormal(d1, hn::Sub(hn::LoadU(d1, e + j), hn::Set(d1, m)));
    hn::StoreU(y, d1, e + j);
    total += hn::GetLane(y);
  }
  return total;
}

template <class T>
void ColumnMax(T* HWY_RESTRICT m, const T* HWY_RESTRICT c, T log_u, T inv_eps, std::size_t n) {
  ForEachVector<T>(n, [&](auto d, std::size_t j) {
    const auto x = hn::NegMulAdd(hn::LoadU(d, c + j), hn::Set(d, inv_eps), hn::Set(d, log_u));
    hn::StoreU(hn::Max(hn::LoadU(d, m + j), x), d, m + j);
  });
}

template <class T>
void ColumnExpSum(T* HWY_RESTRICT s, const T* HWY_RESTRICT c, T log_u, T inv_eps, const T* HWY_RESTRICT m,
                  std::size_t n) {
  ForEachVector<T>(n, [&](auto d, std::size_t j) {
    const auto mj = hn::LoadU(d, m + j);
    const auto x = hn::NegMulAdd(hn::LoadU(d, c + j), hn::Set(d, inv_eps), hn::Set(d, log_u));
    // exp(-Inf - (-Inf)) would be NaN: a column whose maximum is -Inf adds 0.
    const auto finite = hn::Gt(mj, hn::Set(d, -std::numeric_limits<T>::infinity()));
    const auto term = hn::IfThenElseZero(finite, ExpNormal(d, hn::Sub(x, mj)));
    hn::StoreU(hn::Add(hn::LoadU(d, s + j), term), d, s + j);
  });
}

template <class T>
void GibbsRow(T* HWY_RESTRICT out, const T* HWY_RESTRICT c, T neg_inv_eps, std::size_t n) {
  // Beyond exp's valid range the true value overflows: say so with +Inf.
  const T limit = sizeof(T) == 4 ? T(88) : T(709);
  ForEachVector<T>(n, [&](auto d, std::size_t j) {
    const auto x = hn::Mul(hn::LoadU(d, c + j), hn::Set(d, neg_inv_eps));
    const auto inf = hn::Set(d, std::numeric_limits<T>::infinity());
    hn::StoreU(hn::IfThenElse(hn::Gt(x, hn::Set(d, limit)), inf, hn::Exp(d, x)), d, out + j);
  });
}

template <class T>
T Dot3(const T* HWY_RESTRICT k, const T* HWY_RESTRICT w, const T* HWY_RESTRICT c, std::size_t n) {
  const hn::ScalableTag<T> d;
  const std::size_t N = hn::Lanes(d);
  auto acc = hn::Zero(d);
  std::size_t j = 0;
  for (; j + N <= n; j += N) {
    acc = hn::MulAdd(hn::Mul(hn::LoadU(d, k + j), hn::LoadU(d, w + j)), hn::LoadU(d, c + j), acc);
  }
  T total = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; j < n; ++j) total += k[j] * w[j] * c[j];
  return total;
}

template <class T>
kernels<T> MakeTable() {
  kernels<T> t{};
  t.fused_rows = &FusedRows<T>;
  t.sum = &Sum<T>;
  t.scale = &Scale<T>;
  t.add = &Add<T>;
  t.axpy = &Axpy<T>;
  t.scale_columns_block = &ScaleColumnsBlock<T>;
  t.exp_row = &ExpRow<T>;
  t.column_max = &ColumnMax<T>;
  t.column_expsum = &ColumnExpSum<T>;
  t.gibbs_row = &GibbsRow<T>;
  t.dot = &Dot<T>;
  t.dot3 = &Dot3<T>;
  return t;
}

// Built on the first lookup of this target (after the CPU check), never at load.
const kernel_tables* GetTables() {
  static const kernel_tables tables{MakeTable<float>(), MakeTable<double>()};
  return &tables;
}

}  // namespace HWY_NAMESPACE
}  // namespace detail
}  // namespace sinkhorn
}  // namespace conveyor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace conveyor {
namespace sinkhorn {
namespace detail {

namespace {

HWY_EXPORT(GetTables);  // constant data: each pass's GetTables address

const kernel_tables& tables_for(std::int64_t bit) {
  return *conveyor::detail::for_target(HWY_DISPATCH_TABLE(GetTables), bit)();
}

}  // namespace

const kernels<float>& float_for_target(std::int64_t bit) { return tables_for(bit).f32; }
const kernels<double>& double_for_target(std::int64_t bit) { return tables_for(bit).f64; }
const kernels<float>& active_float() { return float_for_target(conveyor::detail::active_target()); }
const kernels<double>& active_double() { return double_for_target(conveyor::detail::active_target()); }

}  // namespace detail
}  // namespace sinkhorn
}  // namespace conveyor
#endif  // HWY_ONCE
