// SPDX-License-Identifier: BSD-3-Clause
// Scalar reference semantics for every (op, dtype), written for clarity, not speed,
// and independently of the SIMD kernels. Shared by the unit and MPI tests.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::testing {

template <class T>
struct tag {
  using type = T;
};

/// Calls f(tag<T>{}) with T the C++ storage type of t.
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::int8:
      return f(tag<std::int8_t>{});
    case dtype::int16:
      return f(tag<std::int16_t>{});
    case dtype::int32:
      return f(tag<std::int32_t>{});
    case dtype::int64:
      return f(tag<std::int64_t>{});
    case dtype::uint8:
      return f(tag<std::uint8_t>{});
    case dtype::uint16:
      return f(tag<std::uint16_t>{});
    case dtype::uint32:
      return f(tag<std::uint32_t>{});
    case dtype::uint64:
      return f(tag<std::uint64_t>{});
    case dtype::float16:
      return f(tag<float16>{});
    case dtype::bfloat16:
      return f(tag<bfloat16>{});
    case dtype::float32:
      return f(tag<float>{});
    case dtype::float64:
      return f(tag<double>{});
    case dtype::complex64:
      return f(tag<std::complex<float>>{});
    case dtype::complex128:
      return f(tag<std::complex<double>>{});
  }
  throw std::logic_error("bad dtype");
}

inline std::vector<dtype> all_dtypes() {
  std::vector<dtype> v;
  for (int i = 0; i < dtype_count; ++i) v.push_back(static_cast<dtype>(i));
  return v;
}
inline std::vector<op> all_ops() {
  std::vector<op> v;
  for (int i = 0; i < op_count; ++i) v.push_back(static_cast<op>(i));
  return v;
}

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T>
struct is_complex : std::false_type {};
template <class T>
struct is_complex<std::complex<T>> : std::true_type {};

// IEEE 754-2019 minimum / maximum: NaN wins, -0 < +0.
template <class F>
F ieee_min(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
template <class F>
F ieee_max(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// log(e^a + e^b) in long double, rounded once to F.
template <class F>
F logaddexp_ref(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  const long double hi = std::max<long double>(a, b), lo = std::min<long double>(a, b);
  if (std::isinf(hi)) return static_cast<F>(hi);
  return static_cast<F>(hi + std::log1p(std::exp(lo - hi)));
}

template <class F>
F real_ref(op o, F a, F b) {
  switch (o) {
    case op::sum:
      return a + b;
    case op::prod:
      return a * b;
    case op::min:
      return ieee_min(a, b);
    case op::max:
      return ieee_max(a, b);
    case op::logaddexp:
      return logaddexp_ref(a, b);
    default:
      throw std::logic_error("op not defined on reals");
  }
}

template <class T>
T int_ref(op o, T a, T b) {
  using U = std::make_unsigned_t<T>;
  using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  const W ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (o) {
    case op::sum:
      return static_cast<T>(static_cast<U>(ua + ub));
    case op::prod:
      return static_cast<T>(static_cast<U>(ua * ub));
    case op::min:
      return a < b ? a : b;
    case op::max:
      return a > b ? a : b;
    case op::band:
      return static_cast<T>(a & b);
    case op::bor:
      return static_cast<T>(a | b);
    case op::bxor:
      return static_cast<T>(a ^ b);
    case op::land:
      return static_cast<T>((a != 0) && (b != 0));
    case op::lor:
      return static_cast<T>((a != 0) || (b != 0));
    case op::lxor:
      return static_cast<T>((a != 0) != (b != 0));
    case op::logaddexp:
      break;  // real types only
  }
  throw std::logic_error("bad op");
}

/// a op b for one element of type T (the order of a and b only matters for NaN
/// payloads, which comparisons ignore).
template <class T>
T ref_apply(op o, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return int_ref(o, a, b);
  } else if constexpr (is_half_v<T>) {
    return T(real_ref(o, static_cast<float>(a), static_cast<float>(b)));
  } else if constexpr (is_complex<T>::value) {
    using F = typename T::value_type;
    const F ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
    if (o == op::sum) return T(ar + br, ai + bi);
    if (o == op::prod) return T(ar * br - ai * bi, ar * bi + ai * br);
    throw std::logic_error("op not defined on complex");
  } else {
    return real_ref(o, a, b);
  }
}

// ---------------------------------------------------------------------------
// Comparison: bit-exact, except that any NaN matches any NaN.
// ---------------------------------------------------------------------------
template <class T>
bool same_value(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return x == y;
  } else if constexpr (is_half_v<T>) {
    const float fx = static_cast<float>(x), fy = static_cast<float>(y);
    if (std::isnan(fx) || std::isnan(fy)) return std::isnan(fx) && std::isnan(fy);
    return x.bits == y.bits;
  } else if constexpr (is_complex<T>::value) {
    return same_value(x.real(), y.real()) && same_value(x.imag(), y.imag());
  } else {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
}

/// Whether `got` is op o's result `want`: bit-exact (any NaN matches any NaN) for
/// every op but logaddexp, whose kernel uses approximations of exp and log1p:
/// infinities and NaN exactly, finite values within `steps` x 8 ulp of
/// max(|want|, 1) (one half-precision ulp per step for float16/bfloat16), where
/// `steps` counts the combinations that led to `want`.
template <class T>
bool same_result(op o, T got, T want, int steps = 1) {
  if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
    if (o == op::logaddexp) {
      const auto wide = [](T x) {
        if constexpr (is_half_v<T>) return static_cast<double>(static_cast<float>(x));
        else return static_cast<double>(x);
      };
      const double g = wide(got), w = wide(want);
      if (!std::isfinite(w) || !std::isfinite(g)) return same_value(got, want);
      double eps = 8 * static_cast<double>(std::numeric_limits<float>::epsilon());
      if constexpr (std::is_same_v<T, double>) eps = 8 * std::numeric_limits<double>::epsilon();
      if constexpr (std::is_same_v<T, float16>) eps = 1.0 / 1024;
      if constexpr (std::is_same_v<T, bfloat16>) eps = 1.0 / 128;
      return std::fabs(g - w) <= steps * eps * std::max(std::fabs(w), 1.0);
    }
  }
  return same_value(got, want);
}

/// A value as text for failure messages (halves shown with their bit pattern).
template <class T>
std::string show(T x) {
  std::ostringstream os;
  os.precision(17);
  if constexpr (std::is_integral_v<T>) {
    os << static_cast<long long>(x);
  } else if constexpr (is_half_v<T>) {
    os << static_cast<float>(x) << " [0x" << std::hex << x.bits << "]";
  } else {
    os << x;
  }
  return os.str();
}

// ---------------------------------------------------------------------------
// Independent correct rounding of a double to float16 / bfloat16 precision, for
// checking that half-precision results are the correctly rounded ones.
// ---------------------------------------------------------------------------
/// Nearest (ties to even) value with `mant_bits` fraction bits, minimum normal
/// exponent `emin` and maximum exponent `emax`; +-inf past the largest finite.
inline double round_to_format(double x, int mant_bits, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| = m * 2^e, 0.5 <= m < 1, so the leading bit is 2^(e-1)
  const int exp = std::max(e - 1, emin);
  const double quantum = std::ldexp(1.0, exp - mant_bits);
  const double r = std::nearbyint(x / quantum) * quantum;  // default mode: nearest even
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant_bits), emax);
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}
inline double round_to_f16(double x) { return round_to_format(x, 10, -14, 15); }
inline double round_to_bf16(double x) { return round_to_format(x, 7, -126, 127); }

// ---------------------------------------------------------------------------
// Test data: random values with the interesting cases mixed in.
// ---------------------------------------------------------------------------

/// splitmix64: a tiny generator that is cheap to seed per element.
struct splitmix64 {
  using result_type = std::uint64_t;
  std::uint64_t state;
  explicit splitmix64(std::uint64_t seed) : state(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

/// A uniform double in [0, 1) from the generator's top 53 bits.
inline double uniform01(splitmix64& rng) { return double(rng() >> 11) / 9007199254740992.0; }

template <class T, class Rng>
T random_value(Rng& rng) {
  std::uniform_int_distribution<int> pick(0, 99);
  if constexpr (std::is_integral_v<T>) {
    switch (pick(rng) % 10) {
      case 0:
        return std::numeric_limits<T>::max();
      case 1:
        return std::numeric_limits<T>::min();
      case 2:
        return T(0);
      case 3:
        return T(1);
      default:
        return static_cast<T>(rng());  // random bits: wraps on sum/prod
    }
  } else if constexpr (is_half_v<T>) {
    return T::from_bits(static_cast<std::uint16_t>(rng()));  // every pattern, NaN/Inf included
  } else if constexpr (is_complex<T>::value) {
    using F = typename T::value_type;
    return T(random_value<F>(rng), random_value<F>(rng));
  } else {
    const int p = pick(rng);
    if (p < 3) return std::numeric_limits<T>::quiet_NaN();
    if (p < 5) return (p & 1 ? 1 : -1) * std::numeric_limits<T>::infinity();
    if (p < 7) return (p & 1 ? T(0) : -T(0));
    if (p < 9) return std::numeric_limits<T>::denorm_min() * T(p);
    if (p < 30) {  // random bit patterns: every exponent
      using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      const U u = static_cast<U>(rng());
      T t;
      std::memcpy(&t, &u, sizeof t);
      return t;
    }
    std::uniform_real_distribution<T> d(-4, 4);
    return d(rng);
  }
}

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed) {
  splitmix64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = random_value<T>(rng);
  return v;
}

}  // namespace conveyor::testing
