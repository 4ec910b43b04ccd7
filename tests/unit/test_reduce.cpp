// SPDX-License-Identifier: BSD-3-Clause
// The reduction kernels against the scalar reference: every (op, dtype) pair,
// every SIMD target this CPU runs, every length 0..1000 plus large ones, unaligned
// pointers, in-place use, NaN/Inf/-0, integer wrap-around, half-precision rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "conveyor/reduce.hpp"
#include "reference.hpp"

namespace conveyor {
namespace {

using testing::all_dtypes;
using testing::all_ops;
using testing::random_vector;
using testing::ref_apply;
using testing::same_value;
using testing::visit_dtype;

constexpr unsigned char kCanary = 0xA5;

// A byte buffer holding n elements of T at a chosen misalignment, with canary
// bytes on both sides to catch out-of-bounds writes.
template <class T>
class guarded_buffer {
 public:
  guarded_buffer(std::size_t n, std::size_t misalign)
      : n_(n), offset_(64 + misalign), bytes_(n * sizeof(T) + offset_ + 64, kCanary) {}
  void* data() { return bytes_.data() + offset_; }
  void set(const std::vector<T>& v) { std::memcpy(data(), v.data(), n_ * sizeof(T)); }
  T at(std::size_t i) const {
    T t;
    std::memcpy(&t, bytes_.data() + offset_ + i * sizeof(T), sizeof t);
    return t;
  }
  bool canaries_intact() const {
    const auto end = offset_ + n_ * sizeof(T);
    return std::all_of(bytes_.begin(), bytes_.begin() + offset_, [](unsigned char c) { return c == kCanary; }) &&
           std::all_of(bytes_.begin() + end, bytes_.end(), [](unsigned char c) { return c == kCanary; });
  }

 private:
  std::size_t n_, offset_;
  std::vector<unsigned char> bytes_;
};

template <class T>
std::vector<T> reference(op o, const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = ref_apply(o, a[i], b[i]);
  return r;
}

// Returns "" when out[0..n) matches ref, else a description of the first mismatch.
template <class T>
std::string first_mismatch(op o, const guarded_buffer<T>& out, const std::vector<T>& a, const std::vector<T>& b,
                           const std::vector<T>& ref, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!testing::same_result(o, out.at(i), ref[i])) {
      return "element " + std::to_string(i) + " of " + std::to_string(n) + ": " + testing::show(a[i]) + " op " +
             testing::show(b[i]) + " gave " + testing::show(out.at(i)) + ", reference " + testing::show(ref[i]);
    }
  }
  if (!out.canaries_intact()) return "wrote outside the output buffer at n=" + std::to_string(n);
  return "";
}

template <class T>
std::string describe(op o) {
  return std::string(op_name(o)) + "/" + std::string(dtype_name(dtype_of_v<T>));
}

class ReduceOnTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { set_simd_target(GetParam()); }
  void TearDown() override { set_simd_target(""); }
};

TEST_P(ReduceOnTarget, TargetIsActive) { EXPECT_EQ(simd_targets().active, GetParam()); }

// Every supported pair at every length 0..1000. The op is element-wise, so the
// reference for length n is the first n elements of the reference for 1000.
TEST_P(ReduceOnTarget, EveryPairEveryLengthUpTo1000) {
  constexpr std::size_t kMax = 1000;
  for (dtype t : all_dtypes()) {
    for (op o : all_ops()) {
      if (!supports(o, t)) continue;
      visit_dtype(t, [&](auto tg) {
        using T = typename decltype(tg)::type;
        const auto a = random_vector<T>(kMax, 1000 + static_cast<int>(t));
        const auto b = random_vector<T>(kMax, 2000 + static_cast<int>(o));
        const auto ref = reference(o, a, b);
        for (std::size_t n = 0; n <= kMax; ++n) {
          guarded_buffer<T> in(n, 0), out(n, 0);
          in.set(a);
          out.set(b);
          reduce_local(in.data(), out.data(), n, t, o);  // out = a op b
          const std::string err = first_mismatch(o, out, a, b, ref, n);
          ASSERT_EQ(err, "") << describe<T>(o);
        }
      });
    }
  }
}

// Misaligned pointers (each buffer at its own byte offset), out-of-place and in
// both in-place forms.
TEST_P(ReduceOnTarget, UnalignedAndInPlace) {
  const std::size_t lengths[] = {1, 7, 31, 64, 65, 257, 1000};
  for (dtype t : all_dtypes()) {
    for (op o : all_ops()) {
      if (!supports(o, t)) continue;
      visit_dtype(t, [&](auto tg) {
        using T = typename decltype(tg)::type;
        for (std::size_t n : lengths) {
          const auto a = random_vector<T>(n, 7 * n);
          const auto b = random_vector<T>(n, 11 * n + 1);
          const auto ref = reference(o, a, b);
          for (std::size_t mis = 1; mis < 64; mis += 5) {
            guarded_buffer<T> ba(n, mis), bb(n, (mis * 3) % 64), bo(n, (mis * 7) % 64);
            ba.set(a);
            bb.set(b);
            reduce(ba.data(), bb.data(), bo.data(), n, t, o);
            ASSERT_EQ(first_mismatch(o, bo, a, b, ref, n), "") << describe<T>(o) << " misalign " << mis;
            reduce(ba.data(), bb.data(), ba.data(), n, t, o);  // out == a
            ASSERT_EQ(first_mismatch(o, ba, a, b, ref, n), "") << describe<T>(o) << " out==a";
          }
        }
      });
    }
  }
}

// Large buffers exercise the unrolled main loop at sizes beyond the caches.
TEST_P(ReduceOnTarget, LargeBuffers) {
  constexpr std::size_t kLarge = (std::size_t{1} << 21) + 13;  // 2M elements + an odd tail
  for (dtype t : all_dtypes()) {
    const op o = t == dtype::complex64 || t == dtype::complex128 ? op::prod : op::sum;
    visit_dtype(t, [&](auto tg) {
      using T = typename decltype(tg)::type;
      const auto a = random_vector<T>(kLarge, 5);
      const auto b = random_vector<T>(kLarge, 6);
      const auto ref = reference(o, a, b);
      guarded_buffer<T> in(kLarge, 3), out(kLarge, 0);
      in.set(a);
      out.set(b);
      reduce_local(in.data(), out.data(), kLarge, t, o);
      ASSERT_EQ(first_mismatch(o, out, a, b, ref, kLarge), "") << describe<T>(o);
    });
  }
}

// Integer sum and prod wrap around (Open MPI 4.1's op/avx saturates int8/int16 sum).
TEST_P(ReduceOnTarget, IntegerWrapAround) {
  std::vector<std::int8_t> a(100, 127), b(100, 1);
  reduce_local(a.data(), b.data(), b.size(), op::sum);
  for (auto x : b) ASSERT_EQ(x, -128);
  std::vector<std::int16_t> c(100, -32768), d(100, -1);
  reduce_local(c.data(), d.data(), d.size(), op::sum);
  for (auto x : d) ASSERT_EQ(x, 32767);
  std::vector<std::uint8_t> e(100, 16), f(100, 16);
  reduce_local(e.data(), f.data(), f.size(), op::prod);
  for (auto x : f) ASSERT_EQ(x, 0);
  std::vector<std::int64_t> g(33, std::int64_t{1} << 62), h(33, 4);
  reduce_local(g.data(), h.data(), h.size(), op::prod);
  for (auto x : h) ASSERT_EQ(x, 0);
  std::vector<std::uint64_t> p(33, 0xFFFFFFFFFFFFFFFFull), q(33, 3);
  reduce_local(p.data(), q.data(), q.size(), op::prod);
  for (auto x : q) ASSERT_EQ(x, 0xFFFFFFFFFFFFFFFDull);
}

// Float min/max: NaN propagates, -0 < +0, infinities order correctly, and the
// result does not depend on the order of the operands.
TEST_P(ReduceOnTarget, FloatMinMaxSpecialValues) {
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<double> a = {nan, 1.0, -0.0, 0.0, -inf, inf, 2.0, nan, -0.0};
  const std::vector<double> b = {1.0, nan, 0.0, -0.0, 5.0, 5.0, 2.0, nan, -0.0};
  std::vector<double> mn = b, mx = b, mn2 = a;
  reduce_local(a.data(), mn.data(), a.size(), op::min);
  reduce_local(a.data(), mx.data(), a.size(), op::max);
  reduce_local(b.data(), mn2.data(), b.size(), op::min);
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]) && std::isnan(mn[7]));
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mx[7]));
  EXPECT_TRUE(std::signbit(mn[2]) && std::signbit(mn[3]) && mn[2] == 0);
  EXPECT_TRUE(!std::signbit(mx[2]) && !std::signbit(mx[3]) && mx[2] == 0);
  EXPECT_TRUE(std::signbit(mn[8]) && std::signbit(mx[8]));
  EXPECT_EQ(mn[4], -inf);
  EXPECT_EQ(mx[5], inf);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_value(mn[i], mn2[i])) << i;
}

// logaddexp: the special values, commutative bit for bit, and an element's bits do
// not depend on where the buffer starts or ends (the ring and the other
// collectives split buffers anywhere; ranks must agree on every bit).
template <class F>
void check_logaddexp() {
  const F inf = std::numeric_limits<F>::infinity(), nan = std::numeric_limits<F>::quiet_NaN();
  const std::vector<F> a = {-inf, -inf, inf, inf, nan, 1, 0, -1000, 70, F(-0.0), 2};
  const std::vector<F> b = {-inf, 3, -inf, inf, 1, nan, 0, 5, 70, 0, -inf};
  std::vector<F> out(a.size());
  reduce(a.data(), b.data(), out.data(), a.size(), op::logaddexp);
  EXPECT_EQ(out[0], -inf);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[2], inf);
  EXPECT_EQ(out[3], inf);
  EXPECT_TRUE(std::isnan(out[4]) && std::isnan(out[5]));
  EXPECT_NEAR(out[6], std::log(F(2)), 4 * std::numeric_limits<F>::epsilon());
  EXPECT_EQ(out[7], 5);  // exp(-1005) is 0 in both types
  EXPECT_NEAR(out[8], 70 + std::log(F(2)), 70 * 4 * std::numeric_limits<F>::epsilon());
  EXPECT_NEAR(out[9], std::log(F(2)), 4 * std::numeric_limits<F>::epsilon());
  EXPECT_EQ(out[10], 2);

  constexpr std::size_t n = 1000;
  const auto x = random_vector<F>(n, 41), y = random_vector<F>(n, 42);
  std::vector<F> xy(n), yx(n);
  reduce(x.data(), y.data(), xy.data(), n, op::logaddexp);
  reduce(y.data(), x.data(), yx.data(), n, op::logaddexp);
  ASSERT_EQ(std::memcmp(xy.data(), yx.data(), n * sizeof(F)), 0) << "not commutative bit for bit";
  for (std::size_t start : {0, 1, 3, 17}) {
    for (std::size_t len : {1, 2, 5, 13, 31, 100}) {
      std::vector<F> part(len);
      reduce(x.data() + start, y.data() + start, part.data(), len, op::logaddexp);
      ASSERT_EQ(std::memcmp(part.data(), xy.data() + start, len * sizeof(F)), 0) << start << "+" << len;
    }
  }
}

TEST_P(ReduceOnTarget, LogAddExp) {
  check_logaddexp<double>();
  check_logaddexp<float>();
}

// float16 / bfloat16 sum and prod are the correctly rounded results of the exact
// operation (checked against an independent rounding in double precision).
template <class H>
void check_half_correct_rounding(double (*round_fn)(double)) {
  const std::size_t n = 1 << 16;
  auto a = random_vector<H>(n, 99);
  auto b = random_vector<H>(n, 98);
  for (op o : {op::sum, op::prod}) {
    std::vector<H> out = b;
    reduce_local(a.data(), out.data(), n, o);
    for (std::size_t i = 0; i < n; ++i) {
      const double x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
      // Exact in double for float16; for bfloat16 rounding twice is still correct
      // (53 >= 2*8+2 bits).
      const double exact = o == op::sum ? x + y : x * y;
      const double want = round_fn(exact);
      const double got = static_cast<float>(out[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << i;
      } else {
        ASSERT_EQ(got, want) << op_name(o) << " " << x << " , " << y;
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << op_name(o) << " " << x << " , " << y;
      }
    }
  }
}

TEST_P(ReduceOnTarget, Float16CorrectlyRounded) { check_half_correct_rounding<float16>(&testing::round_to_f16); }

TEST_P(ReduceOnTarget, BFloat16CorrectlyRounded) { check_half_correct_rounding<bfloat16>(&testing::round_to_bf16); }

// Every float16 pattern survives x + (-0) unchanged (exercises the widening and
// narrowing paths on every subnormal, normal, infinite and NaN input).
TEST_P(ReduceOnTarget, HalfRoundTripAllPatterns) {
  std::vector<std::uint16_t> all(65536), zeros(65536, 0x8000);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  for (dtype t : {dtype::float16, dtype::bfloat16}) {
    std::vector<std::uint16_t> out = zeros;
    reduce_local(all.data(), out.data(), out.size(), t, op::sum);
    for (std::size_t i = 0; i < all.size(); ++i) {
      const bool nan = t == dtype::float16 ? std::isnan(static_cast<float>(float16::from_bits(all[i])))
                                           : std::isnan(static_cast<float>(bfloat16::from_bits(all[i])));
      if (nan) {
        const float got = t == dtype::float16 ? static_cast<float>(float16::from_bits(out[i]))
                                              : static_cast<float>(bfloat16::from_bits(out[i]));
        ASSERT_TRUE(std::isnan(got)) << dtype_name(t) << " pattern " << i;
      } else {
        ASSERT_EQ(out[i], all[i]) << dtype_name(t) << " pattern " << i;
      }
    }
  }
}

std::string target_test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(AllTargets, ReduceOnTarget, ::testing::ValuesIn(simd_targets().supported), target_test_name);

// ---------------------------------------------------------------------------
// Errors and target selection (independent of the target)
// ---------------------------------------------------------------------------

errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()), "");
    return e.code();
  }
  return errc::success;
}

TEST(ReduceErrors, UnsupportedPairsAreRejected) {
  float x[4] = {}, y[4] = {};
  for (dtype t : all_dtypes()) {
    for (op o : all_ops()) {
      const errc got = code_of([&] { reduce_local(x, y, 0, t, o); });
      EXPECT_EQ(got, supports(o, t) ? errc::success : errc::unsupported) << op_name(o) << "/" << dtype_name(t);
    }
  }
  EXPECT_EQ(code_of([&] { reduce_local(x, y, 4, dtype::float32, op::band); }), errc::unsupported);
  EXPECT_EQ(code_of([&] { reduce_local(x, y, 1, dtype::complex64, op::max); }), errc::unsupported);
}

TEST(ReduceErrors, BadArguments) {
  float x[8] = {}, y[8] = {};
  EXPECT_EQ(code_of([&] { reduce_local(nullptr, y, 1, dtype::float32, op::sum); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] { reduce_local(x, nullptr, 1, dtype::float32, op::sum); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] { reduce_local(nullptr, nullptr, 0, dtype::float32, op::sum); }), errc::success);
  EXPECT_EQ(code_of([&] { reduce_local(x, y, 1, static_cast<dtype>(99), op::sum); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] { reduce_local(x, y, 1, dtype::float32, static_cast<op>(-1)); }), errc::invalid_argument);
  // Partial overlap of input and output.
  EXPECT_EQ(code_of([&] { reduce_local(x, x + 1, 4, dtype::float32, op::sum); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] { reduce(x, y, y + 2, 4, dtype::float32, op::sum); }), errc::invalid_argument);
  // Exact aliasing is fine.
  EXPECT_EQ(code_of([&] { reduce(x, x, x, 8, dtype::float32, op::sum); }), errc::success);
  // A count whose byte size overflows.
  EXPECT_EQ(code_of([&] { reduce_local(x, y, ~std::size_t{0} / 2, dtype::float64, op::sum); }), errc::invalid_argument);
}

TEST(SimdTargets, ReportAndSelect) {
  const simd_info info = simd_targets();
  ASSERT_FALSE(info.supported.empty());
  ASSERT_FALSE(info.compiled.empty());
  EXPECT_EQ(info.active, info.supported.front());  // best target by default
  for (const auto& s : info.supported) {
    EXPECT_NE(std::find(info.compiled.begin(), info.compiled.end(), s), info.compiled.end()) << s;
  }
  EXPECT_EQ(code_of([] { set_simd_target("NO_SUCH_TARGET"); }), errc::invalid_argument);
  EXPECT_EQ(simd_targets().active, info.supported.front());  // unchanged by the failure
  std::string lower = info.supported.back();
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  set_simd_target(lower);  // names are case-insensitive
  EXPECT_EQ(simd_targets().active, info.supported.back());
  set_simd_target("");
  EXPECT_EQ(simd_targets().active, info.supported.front());
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// A target compiled in but not runnable here (AVX3 on an AVX2 CPU: the emulated
// CPUs of tests/emulated run this) is refused with the runnable list, never run.
// On a CPU that runs every compiled target the loop has nothing to refuse.
TEST(SimdTargets, RefusesTargetsThisCpuCannotRun) {
  const simd_info info = simd_targets();
  std::string runnable;
  for (const auto& s : info.supported) runnable += (runnable.empty() ? "" : ", ") + s;
  for (const auto& name : info.compiled) {
    if (std::find(info.supported.begin(), info.supported.end(), name) != info.supported.end()) continue;
    const std::string msg = message_of([&] { set_simd_target(name); });
    EXPECT_NE(msg.find("'" + name + "' is not runnable on this CPU; runnable: " + runnable), std::string::npos) << msg;
    EXPECT_EQ(simd_targets().active, info.supported.front());
    // The kernels still work, on the target that was active before.
    float x[3] = {1, 2, 3}, y[3] = {1, 1, 1};
    reduce_local(x, y, 3, dtype::float32, op::sum);
    EXPECT_EQ(y[2], 4.0f);
  }
  const std::string unknown = message_of([] { set_simd_target("AVX9"); });
  EXPECT_NE(unknown.find("'AVX9' is not a target this library was compiled for; runnable: " + runnable),
            std::string::npos)
      << unknown;
}

}  // namespace
}  // namespace conveyor
