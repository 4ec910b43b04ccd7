// SPDX-License-Identifier: BSD-3-Clause
// ExpNormal(d, x): exp(x) for the log-sum-exp passes of the Sinkhorn kernels
// (dense/scaling_kernels.cpp, points/kernels.cpp), with 0 wherever the true value is
// below the smallest normal number (x < -87 in float, x < -708 in double).
//
// Why: those passes take exp(v_j - max), whose arguments reach -1000 and beyond
// once eps is small against the costs. Highway's Exp builds such results as
// subnormal numbers (then 0 below its own bound), and a CPU takes a slow
// microcode path for every subnormal result: a float softmin at small eps ran
// several times slower than at a large one (docs/results.md, "Value and
// gradient of the debiased divergence"). Clamping the argument keeps every
// intermediate normal; the terms dropped are below 1.2e-38 (float) or 2.2e-308
// (double) against a largest term of 1, far below the sums' rounding.
//
// A Highway per-target inline header: included by files compiled once per target
// (foreach_target.h), hence the toggle guard instead of a plain include guard.
#if defined(CONVEYOR_SINKHORN_EXP_NORMAL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CONVEYOR_SINKHORN_EXP_NORMAL_INL_H_
#undef CONVEYOR_SINKHORN_EXP_NORMAL_INL_H_
#else
#define CONVEYOR_SINKHORN_EXP_NORMAL_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace conveyor::sinkhorn::detail::HWY_NAMESPACE {

template <class D, class V>
HWY_INLINE V ExpNormal(D d, V x) {
  namespace hn = hwy::HWY_NAMESPACE;
  using T = hn::TFromD<D>;
  // exp(-87) = 1.6e-38 > FLT_MIN and exp(-708) = 3.3e-308 > DBL_MIN, and Highway's
  // range reduction keeps 2^q times a factor in [0.7, 1.4] normal from there up.
  const auto floor = hn::Set(d, static_cast<T>(sizeof(T) == 4 ? -87.0 : -708.0));
  return hn::IfThenElseZero(hn::Ge(x, floor), hn::Exp(d, hn::Max(x, floor)));
}

}  // namespace conveyor::sinkhorn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // CONVEYOR_SINKHORN_EXP_NORMAL_INL_H_
