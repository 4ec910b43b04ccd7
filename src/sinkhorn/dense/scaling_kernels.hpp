// SPDX-License-Identifier: BSD-3-Clause
// Internal: the SIMD kernels of the Sinkhorn engine, one table per element type
// and Highway target. Every pointer is unaligned-safe; lengths may be zero.
#pragma once

#include <cstddef>
#include <cstdint>

namespace conveyor::sinkhorn::detail {

template <class T>
struct kernels {
  /// The fused micro-kernel over `rows` rows of A (stride ld): for each row k,
  /// u[k] = r[k] / (A_k . v) (0 where r[k] = 0), then s += u[k] * A_k while the row is in cache.
  /// Rows go four at a time when four rows fit in L2 (v is loaded once for four
  /// dot products; s is read and written once per four rows).
  void (*fused_rows)(const T* A, std::size_t rows, std::size_t cols, std::size_t ld, const T* v, const T* r, T* u,
                     T* s);
  /// sum_j a[j]
  T (*sum)(const T* a, std::size_t n);
  /// a[j] *= alpha
  void (*scale)(T* a, T alpha, std::size_t n);
  /// s[j] += a[j]
  void (*add)(T* s, const T* a, std::size_t n);
  /// s[j] += alpha * a[j]
  void (*axpy)(T* s, T alpha, const T* a, std::size_t n);
  /// The paper's Algorithm 3 on one mc x nc block: rows of `cols` elements at A
  /// (stride ld) times w, walked in mr-row x nr-column micro-tiles.
  void (*scale_columns_block)(T* A, std::size_t ld, std::size_t rows, std::size_t cols, const T* w, std::size_t mr,
                              std::size_t nr);
  /// Log domain, one row: x_j = log_v[j] - c_j * inv_eps, m = max_j x_j (written to
  /// *max_out), e_j = exp(x_j - m); returns sum_j e_j. m = -Inf if all x_j are -Inf.
  T (*exp_row)(const T* c, const T* log_v, T inv_eps, T* e, std::size_t n, T* max_out);
  /// Log domain, exact column log-sum-exp (fallback): m[j] = max(m[j], log_u - c[j] * inv_eps).
  void (*column_max)(T* m, const T* c, T log_u, T inv_eps, std::size_t n);
  /// s[j] += exp(log_u - c[j] * inv_eps - m[j]) (terms with m[j] = -Inf add 0).
  void (*column_expsum)(T* s, const T* c, T log_u, T inv_eps, const T* m, std::size_t n);
  /// out[j] = exp(c[j] * neg_inv_eps): the Gibbs kernel of one row.
  void (*gibbs_row)(T* out, const T* c, T neg_inv_eps, std::size_t n);
  /// sum_j a[j] * b[j]
  T (*dot)(const T* a, const T* b, std::size_t n);
  /// sum_j k[j] * w[j] * c[j]: one row's transport cost with plan row u * k * w.
  T (*dot3)(const T* k, const T* w, const T* c, std::size_t n);
};

/// One target's tables for both element types.
struct kernel_tables {
  kernels<float> f32;
  kernels<double> f64;
};

/// The tables of the library's active SIMD target (runtime/simd_targets.hpp;
/// conveyor::set_simd_target changes it).
const kernels<float>& active_float();
const kernels<double>& active_double();
template <class T>
const kernels<T>& active();
template <>
inline const kernels<float>& active<float>() {
  return active_float();
}
template <>
inline const kernels<double>& active<double>() {
  return active_double();
}

/// The tables of one runnable Highway target (tests run every target).
const kernels<float>& float_for_target(std::int64_t bit);
const kernels<double>& double_for_target(std::int64_t bit);

}  // namespace conveyor::sinkhorn::detail
