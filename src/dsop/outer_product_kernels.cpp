// SPDX-License-Identifier: BSD-3-Clause
// DSOP's local compute (see outer_product_kernels.hpp), written once with Highway for every target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dsop/outer_product_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "dsop/outer_product_kernels.hpp"
#include "runtime/simd_targets.hpp"

HWY_BEFORE_NAMESPACE();
namespace conveyor {
namespace dsop::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One row segment: out[j] = sum_i a[i] * B_i[j] for j < n (B_i = B + i * ldb).
template <class D>
HWY_INLINE void RowSegment(D d, const hn::TFromD<D>* a, std::size_t lda, const hn::TFromD<D>* B, std::size_t ldb,
                           std::size_t P, std::size_t n, hn::TFromD<D>* out) {
  const std::size_t L = hn::Lanes(d);
  std::size_t j = 0;
  for (; j + L <= n; j += L) {
    auto acc = hn::Mul(hn::Set(d, a[0]), hn::LoadU(d, B + j));
    for (std::size_t i = 1; i < P; ++i) acc = hn::MulAdd(hn::Set(d, a[i * lda]), hn::LoadU(d, B + i * ldb + j), acc);
    hn::StoreU(acc, d, out + j);
  }
  const hn::CappedTag<hn::TFromD<D>, 1> d1;
  for (; j < n; ++j) {
    auto acc = hn::Mul(hn::Set(d1, a[0]), hn::LoadU(d1, B + j));
    for (std::size_t i = 1; i < P; ++i) acc = hn::MulAdd(hn::Set(d1, a[i * lda]), hn::LoadU(d1, B + i * ldb + j), acc);
    hn::StoreU(acc, d1, out + j);
  }
}

template <class T>
void RowsFromPairs(const T* A, std::size_t lda, const T* B, std::size_t ldb, std::size_t P, std::size_t row0,
                   std::size_t rows, std::size_t M, T* G, std::size_t ldg) {
  if (P == 0) {
    for (std::size_t r = 0; r < rows; ++r) std::fill(G + r * ldg, G + r * ldg + M, T(0));
    return;
  }
  const hn::ScalableTag<T> d;
  // P column slices of B in 16 KiB of L1 (at least one vector wide).
  const std::size_t block = std::max<std::size_t>(hn::Lanes(d), (std::size_t{16} << 10) / (P * sizeof(T)));
  for (std::size_t c = 0; c < M; c += block) {
    const std::size_t n = std::min(block, M - c);
    for (std::size_t r = 0; r < rows; ++r) RowSegment(d, A + row0 + r, lda, B + c, ldb, P, n, G + r * ldg + c);
  }
}

// Constant-initialized (function addresses only): no code runs to build it.
const outer_kernel_tables* GetOuterTables() {
  static constexpr outer_kernel_tables tables{{&RowsFromPairs<float>}, {&RowsFromPairs<double>}};
  return &tables;
}

}  // namespace HWY_NAMESPACE
}  // namespace dsop::detail
}  // namespace conveyor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace conveyor {
namespace dsop::detail {

HWY_EXPORT(GetOuterTables);  // constant data: each pass's GetOuterTables address

const outer_kernel_tables& outer_active_tables() {
  return *for_target(HWY_DISPATCH_TABLE(GetOuterTables), active_target())();
}

}  // namespace dsop::detail
}  // namespace conveyor
#endif  // HWY_ONCE
