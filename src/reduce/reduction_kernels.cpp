// SPDX-License-Identifier: BSD-3-Clause
// Element-wise reduction kernels for every (op, dtype) pair, written once with
// Google Highway and compiled for every x86/Arm SIMD target it knows; the best
// target the CPU supports is chosen at run time (see dispatch.cpp).
//
// Structure: an *access* policy says how a dtype's storage becomes SIMD lanes and
// back (native lanes; float16/bfloat16 widened to float32; complex as interleaved
// re/im lanes); an *op* policy combines two vectors. Kernel<Access, Op> runs a 4x
// unrolled loop of full vectors, then single vectors, then a tail that copies the
// last < 1 vector of elements into zeroed stack buffers and runs the same vector
// code on them. The tail therefore rounds exactly like the body, so results never
// depend on where a buffer was split (collectives rely on that).
//
// Semantics (MPI's, plus documented choices where MPI is silent):
// - integer sum/prod wrap modulo 2^bits (no saturation);
// - float min/max follow IEEE 754-2019 minimum/maximum: NaN if either input is NaN,
//   and -0 < +0; both make min/max commutative bit for bit;
// - float16/bfloat16 are computed in float32 and rounded to nearest-even once.
//   float32 has 24 >= 2*11+2 significand bits, so this double rounding is exact for
//   one + or * (Figueroa 1995): results are the correctly rounded half results;
// - complex prod is (ar*br - ai*bi, ar*bi + ai*br), without FMA and without C99
//   Annex G infinity recovery;
// - logical ops return 0 or 1 in the input's integer type;
// - logaddexp = max + log1p(exp(min - max)) with Highway's Exp (1 ulp) and Log1p
//   (2 ulp): within a few ulp of log(e^a + e^b), commutative bit for bit, an
//   infinite max is the result (so -inf, -inf gives -inf), NaN if either is NaN.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "reduce/reduction_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cstring>
#include <mutex>
#include <type_traits>

#include "reduce/kernel_table.hpp"
#include "runtime/simd_targets.hpp"

HWY_BEFORE_NAMESPACE();
namespace conveyor {
namespace reduction::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------------------
// Access policies
// ---------------------------------------------------------------------------

// Lanes are the elements themselves (integers, float32/64), or for complex types
// the interleaved re/im parts (kUnits = 2 lanes per element).
template <typename T, std::size_t Units = 1>
struct Native {
  using Storage = T;
  using D = hn::ScalableTag<T>;
  static constexpr std::size_t kUnits = Units;
  static HWY_INLINE auto Load(D d, const T* p) { return hn::LoadU(d, p); }
  template <class V>
  static HWY_INLINE void Store(D d, V v, T* p) {
    hn::StoreU(v, d, p);
  }
};

// float16 bits (in the low half of int32 lanes) -> float32, exact for every
// input including subnormals, infinities and NaNs.
template <class DF, class VI>
HWY_INLINE hn::Vec<DF> F32FromF16Bits(DF df, VI h) {
  const hn::RebindToSigned<DF> di;
  const auto abs = hn::And(h, hn::Set(di, 0x7FFF));
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(di, 0x8000)));
  // Normal numbers: move the exponent/mantissa into place and rebias 15 -> 127.
  const auto normal = hn::Add(hn::ShiftLeft<13>(abs), hn::Set(di, (127 - 15) << 23));
  // Inf/NaN: exponent 31 must become 255; the mantissa (NaN payload) is kept.
  const auto infnan = hn::Add(normal, hn::Set(di, (128 - 16) << 23));
  // Zero/subnormal: value = mantissa * 2^-24, exact in float32.
  const auto tiny = hn::BitCast(di, hn::Mul(hn::ConvertTo(df, abs), hn::Set(df, 1.0f / 16777216.0f)));
  auto bits = hn::IfThenElse(hn::Lt(abs, hn::Set(di, 0x0400)), tiny, normal);
  bits = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7BFF)), infnan, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
}

// float32 -> float16 bits (in int32 lanes), round to nearest even; overflow gives
// infinity, NaN gives a quiet NaN.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToSigned<DF>> F16BitsFromF32(DF df, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(di, v);
  const auto abs = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  // (Mask after shifting: the lanes are signed, so the shift is arithmetic.)
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(di, 0x8000));
  // Results that are f16 subnormals (|v| < 2^-14): adding 0.5f aligns the f16
  // mantissa with the low bits of the f32 mantissa, and the float adder rounds to
  // nearest even for us.
  const auto sub = hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))), hn::Set(di, 0x3F000000));
  // Normal results: rebias the exponent 127 -> 15, round half to even at bit 13.
  const auto odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(di, 1));
  const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(abs, hn::Set(di, static_cast<int32_t>(0xC8000FFFu))), odd));
  const auto big = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7F800000)), hn::Set(di, 0x7E00), hn::Set(di, 0x7C00));
  auto h = hn::IfThenElse(hn::Lt(abs, hn::Set(di, 0x38800000)), sub, normal);
  h = hn::IfThenElse(hn::Lt(abs, hn::Set(di, 0x47800000)), h, big);
  return hn::Or(h, sign);
}

// float32 -> bfloat16 bits (in int32 lanes), round to nearest even; NaN stays a
// quiet NaN. (Highway 1.0's DemoteTo truncates, so we do not use it.)
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToSigned<DF>> BF16BitsFromF32(DF /*df*/, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFF)), lsb));
  const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x0040));
  return hn::BitCast(di, hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet_nan, rounded));
}

// int32 lanes holding 16-bit patterns -> uint16 lanes.
template <class DH, class VI>
HWY_INLINE hn::Vec<DH> Narrow16(DH dh, VI v) {
#if HWY_TARGET == HWY_SCALAR
  return hn::Set(dh, static_cast<std::uint16_t>(hn::GetLane(v)));
#else
  return hn::DemoteTo(dh, v);  // saturating, exact for values in [0, 0xFFFF]
#endif
}

// float16 / bfloat16: loaded as uint16, computed in float32 lanes.
template <bool kBrain>
struct Half {
  using Storage = std::uint16_t;
  using D = hn::ScalableTag<float>;
  static constexpr std::size_t kUnits = 1;
  using DI = hn::RebindToSigned<D>;
  using DH = hn::Rebind<std::uint16_t, D>;

  static HWY_INLINE hn::Vec<D> Load(D d, const std::uint16_t* p) {
    const auto h = hn::PromoteTo(DI(), hn::LoadU(DH(), p));
    if constexpr (kBrain) {
      return hn::BitCast(d, hn::ShiftLeft<16>(h));
    } else {
#if HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
      // Hardware F16C conversion; exact like the software path.
      const hn::Rebind<hwy::float16_t, D> df16;
      return hn::PromoteTo(d, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(p)));
#else
      return F32FromF16Bits(d, h);
#endif
    }
  }
  static HWY_INLINE void Store(D d, hn::Vec<D> v, std::uint16_t* p) {
    if constexpr (kBrain) {
      hn::StoreU(Narrow16(DH(), BF16BitsFromF32(d, v)), DH(), p);
    } else {
#if HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
      // vcvtps2ph with imm 0 rounding (nearest even), as Highway emits it.
      const hn::Rebind<hwy::float16_t, D> df16;
      hn::StoreU(hn::DemoteTo(df16, v), df16, reinterpret_cast<hwy::float16_t*>(p));
#else
      hn::StoreU(Narrow16(DH(), F16BitsFromF32(d, v)), DH(), p);
#endif
    }
  }
};

// ---------------------------------------------------------------------------
// Op policies: Apply(d, a, b) on full vectors of D's lane type.
// ---------------------------------------------------------------------------

template <class D>
inline constexpr bool kIsFloat = hwy::IsFloat<hn::TFromD<D>>();

struct OpSum {
  template <class D, class V>
  static HWY_INLINE V Apply(D, V a, V b) {
    return hn::Add(a, b);
  }
};

// Wrapping integer product of two lanes, for the 1-lane SCALAR target.
template <typename T>
HWY_INLINE T WrappingMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;  // no int promotion
  return static_cast<T>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) * static_cast<Wide>(static_cast<U>(b))));
}

#if HWY_TARGET == HWY_SCALAR
struct OpProd {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V a, V b) {
    if constexpr (kIsFloat<D>) {
      return hn::Mul(a, b);
    } else {
      return hn::Set(d, WrappingMul(hn::GetLane(a), hn::GetLane(b)));
    }
  }
};
#else
struct OpProd {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V a, V b) {
    using T = hn::TFromD<D>;
    if constexpr (sizeof(T) == 1) {
      // No 8-bit multiply on x86: multiply the even and odd bytes in 16-bit lanes
      // and keep the low byte of each product (wrap-around, as MPI requires).
      const hn::Repartition<std::uint16_t, D> d16;
      const auto a16 = hn::BitCast(d16, a);
      const auto b16 = hn::BitCast(d16, b);
      const auto even = hn::Mul(a16, b16);
      const auto odd = hn::Mul(hn::ShiftRight<8>(a16), hn::And(b16, hn::Set(d16, 0xFF00)));
      return hn::BitCast(d, hn::Or(hn::And(even, hn::Set(d16, 0x00FF)), hn::And(odd, hn::Set(d16, 0xFF00))));
    } else if constexpr (sizeof(T) == 8 && !kIsFloat<D>) {
      // Low 64 bits of a*b = lo(a)lo(b) + ((lo(a)hi(b) + hi(a)lo(b)) << 32).
      const hn::Repartition<std::uint32_t, D> d32;
      const hn::RebindToUnsigned<D> du;
      const auto a32 = hn::BitCast(d32, a);
      const auto b32 = hn::BitCast(d32, b);
      const auto low = hn::MulEven(a32, b32);
      const auto cross = hn::BitCast(du, hn::Mul(a32, hn::Shuffle2301(b32)));
      const auto high = hn::ShiftLeft<32>(hn::Add(cross, hn::ShiftRight<32>(cross)));
      return hn::BitCast(d, hn::Add(low, high));
    } else {
      return hn::Mul(a, b);
    }
  }
};
#endif

// min and max with MPI's meaning on floats: a NaN input gives NaN (a + b), and
// equal inputs, which can only differ as -0/+0, give -0 for min (OR of the
// bits) and +0 for max (AND of the bits).
template <bool kMax>
struct OpExtremum {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V a, V b) {
    if constexpr (kIsFloat<D>) {
      V m;
      if constexpr (kMax) {
        m = hn::IfThenElse(hn::Eq(a, b), hn::And(a, b), hn::Max(a, b));
      } else {
        m = hn::IfThenElse(hn::Eq(a, b), hn::Or(a, b), hn::Min(a, b));
      }
      return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), m);
    } else {
      (void)d;
      return kMax ? hn::Max(a, b) : hn::Min(a, b);
    }
  }
};
using OpMin = OpExtremum<false>;
using OpMax = OpExtremum<true>;

struct OpBand {
  template <class D, class V>
  static HWY_INLINE V Apply(D, V a, V b) {
    return hn::And(a, b);
  }
};
struct OpBor {
  template <class D, class V>
  static HWY_INLINE V Apply(D, V a, V b) {
    return hn::Or(a, b);
  }
};
struct OpBxor {
  template <class D, class V>
  static HWY_INLINE V Apply(D, V a, V b) {
    return hn::Xor(a, b);
  }
};

// Logical ops: inputs are true when non-zero; the result is 0 or 1.
template <int kWhich>  // 0 = and, 1 = or, 2 = xor
struct OpLogical {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V a, V b) {
    const auto ta = hn::VecFromMask(d, hn::Ne(a, hn::Zero(d)));
    const auto tb = hn::VecFromMask(d, hn::Ne(b, hn::Zero(d)));
    V t;
    if constexpr (kWhich == 0) {
      t = hn::And(ta, tb);
    } else if constexpr (kWhich == 1) {
      t = hn::Or(ta, tb);
    } else {
      t = hn::Xor(ta, tb);
    }
    return hn::And(t, hn::Set(d, 1));
  }
};
using OpLand = OpLogical<0>;
using OpLor = OpLogical<1>;
using OpLxor = OpLogical<2>;

// log(e^a + e^b). Each input is a partial log-sum-exp: the (max m, scaled sum
// s = sum exp(x - m)) pair of its part folded into one number, m + log s, so two
// parts combine into one with one exp and one log1p, and a reduction over ranks
// of log-sum-exps moves one number per element, not two. min and max are
// MPI's (NaN wins, symmetric in a and b): the result is commutative bit for bit.
struct OpLogAddExp {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V a, V b) {
    const V hi = OpMax::Apply(d, a, b);
    const V lo = OpMin::Apply(d, a, b);
    const V r = hn::Add(hi, hn::Log1p(d, hn::Exp(d, hn::Sub(lo, hi))));
    return hn::IfThenElse(hn::IsInf(hi), hi, r);  // inf - inf would be NaN
  }
};

#if HWY_TARGET != HWY_SCALAR
// Complex product on interleaved (re, im) lanes. Needs >= 2 lanes; the 1-lane
// SCALAR target uses ComplexProdScalar below instead.
struct OpComplexProd {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V x, V y) {
    const V t1 = hn::Mul(hn::DupEven(x), y);                  // (ar*br, ar*bi)
    const V t2 = hn::Mul(hn::DupOdd(x), hn::Reverse2(d, y));  // (ai*bi, ai*br)
    return hn::Add(t1, hn::OddEven(t2, hn::Neg(t2)));         // (ar*br - ai*bi, ar*bi + ai*br)
  }
};
#endif

// ---------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------

template <class Access, class Op>
void Kernel(const void* a_void, const void* b_void, void* out_void, std::size_t count) {
  using S = typename Access::Storage;
  const S* a = static_cast<const S*>(a_void);
  const S* b = static_cast<const S*>(b_void);
  S* out = static_cast<S*>(out_void);
  const typename Access::D d;
  const std::size_t N = hn::Lanes(d);
  const std::size_t n = count * Access::kUnits;

  std::size_t i = 0;
  if (n >= 4 * N) {
    for (; i <= n - 4 * N; i += 4 * N) {
      const auto a0 = Access::Load(d, a + i);
      const auto a1 = Access::Load(d, a + i + N);
      const auto a2 = Access::Load(d, a + i + 2 * N);
      const auto a3 = Access::Load(d, a + i + 3 * N);
      const auto b0 = Access::Load(d, b + i);
      const auto b1 = Access::Load(d, b + i + N);
      const auto b2 = Access::Load(d, b + i + 2 * N);
      const auto b3 = Access::Load(d, b + i + 3 * N);
      Access::Store(d, Op::Apply(d, a0, b0), out + i);
      Access::Store(d, Op::Apply(d, a1, b1), out + i + N);
      Access::Store(d, Op::Apply(d, a2, b2), out + i + 2 * N);
      Access::Store(d, Op::Apply(d, a3, b3), out + i + 3 * N);
    }
  }
  for (; i + N <= n; i += N) {
    Access::Store(d, Op::Apply(d, Access::Load(d, a + i), Access::Load(d, b + i)), out + i);
  }
  if (i < n) {
    // Fewer than N lanes left: run the same vector code on zero-padded copies.
    constexpr std::size_t kMax = HWY_MAX_BYTES;  // >= N lanes of any storage type
    HWY_ALIGN S ta[kMax] = {};
    HWY_ALIGN S tb[kMax] = {};
    const std::size_t rest = (n - i) * sizeof(S);
    std::memcpy(ta, a + i, rest);
    std::memcpy(tb, b + i, rest);
    Access::Store(d, Op::Apply(d, Access::Load(d, ta), Access::Load(d, tb)), ta);
    std::memcpy(out + i, ta, rest);
  }
}

// ---------------------------------------------------------------------------
// The table for this target
// ---------------------------------------------------------------------------

template <class Op>
void SetIntegers(kernel_table& t, op o) {
  auto& row = t.fn[static_cast<int>(o)];
  row[static_cast<int>(dtype::int8)] = &Kernel<Native<std::int8_t>, Op>;
  row[static_cast<int>(dtype::int16)] = &Kernel<Native<std::int16_t>, Op>;
  row[static_cast<int>(dtype::int32)] = &Kernel<Native<std::int32_t>, Op>;
  row[static_cast<int>(dtype::int64)] = &Kernel<Native<std::int64_t>, Op>;
  row[static_cast<int>(dtype::uint8)] = &Kernel<Native<std::uint8_t>, Op>;
  row[static_cast<int>(dtype::uint16)] = &Kernel<Native<std::uint16_t>, Op>;
  row[static_cast<int>(dtype::uint32)] = &Kernel<Native<std::uint32_t>, Op>;
  row[static_cast<int>(dtype::uint64)] = &Kernel<Native<std::uint64_t>, Op>;
}

template <class Op>
void SetReals(kernel_table& t, op o) {
  auto& row = t.fn[static_cast<int>(o)];
  row[static_cast<int>(dtype::float16)] = &Kernel<Half<false>, Op>;
  row[static_cast<int>(dtype::bfloat16)] = &Kernel<Half<true>, Op>;
  row[static_cast<int>(dtype::float32)] = &Kernel<Native<float>, Op>;
  row[static_cast<int>(dtype::float64)] = &Kernel<Native<double>, Op>;
}

template <class Op>
void SetComplex(kernel_table& t, op o) {
  auto& row = t.fn[static_cast<int>(o)];
  row[static_cast<int>(dtype::complex64)] = &Kernel<Native<float, 2>, Op>;
  row[static_cast<int>(dtype::complex128)] = &Kernel<Native<double, 2>, Op>;
}

#if HWY_TARGET == HWY_SCALAR
// The same formula as OpComplexProd, one element at a time.
template <typename T>
void ComplexProdScalar(const void* a_void, const void* b_void, void* out_void, std::size_t count) {
  // Byte pointers and memcpy: the buffers may be misaligned for T.
  const auto* a = static_cast<const unsigned char*>(a_void);
  const auto* b = static_cast<const unsigned char*>(b_void);
  auto* out = static_cast<unsigned char*>(out_void);
  for (std::size_t i = 0; i < count; ++i) {
    T x[2], y[2];
    std::memcpy(x, a + i * sizeof x, sizeof x);
    std::memcpy(y, b + i * sizeof y, sizeof y);
    const T r[2] = {x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]};
    std::memcpy(out + i * sizeof r, r, sizeof r);
  }
}
#endif

kernel_table MakeTable() {
  kernel_table t{};
  SetIntegers<OpSum>(t, op::sum);
  SetReals<OpSum>(t, op::sum);
  SetComplex<OpSum>(t, op::sum);
  SetIntegers<OpProd>(t, op::prod);
  SetReals<OpProd>(t, op::prod);
#if HWY_TARGET == HWY_SCALAR
  t.fn[static_cast<int>(op::prod)][static_cast<int>(dtype::complex64)] = &ComplexProdScalar<float>;
  t.fn[static_cast<int>(op::prod)][static_cast<int>(dtype::complex128)] = &ComplexProdScalar<double>;
#else
  SetComplex<OpComplexProd>(t, op::prod);
#endif
  SetIntegers<OpMin>(t, op::min);
  SetReals<OpMin>(t, op::min);
  SetIntegers<OpMax>(t, op::max);
  SetReals<OpMax>(t, op::max);
  SetIntegers<OpBand>(t, op::band);
  SetIntegers<OpBor>(t, op::bor);
  SetIntegers<OpBxor>(t, op::bxor);
  SetIntegers<OpLand>(t, op::land);
  SetIntegers<OpLor>(t, op::lor);
  SetIntegers<OpLxor>(t, op::lxor);
  SetReals<OpLogAddExp>(t, op::logaddexp);
  return t;
}

// Built on the first lookup of this target (after the CPU check), never at load.
const kernel_table* GetTable() {
  static const kernel_table table = MakeTable();
  return &table;
}

}  // namespace HWY_NAMESPACE
}  // namespace reduction::detail
}  // namespace conveyor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace conveyor::reduction::detail {

HWY_EXPORT(GetTable);  // constant data: each pass's GetTable address

const kernel_table& kernels_for_target(std::int64_t bit) { return *for_target(HWY_DISPATCH_TABLE(GetTable), bit)(); }

}  // namespace conveyor::reduction::detail
#endif  // HWY_ONCE
