// SPDX-License-Identifier: BSD-3-Clause
// The shared vocabulary: dtype/op tables, names, support matrix, 16-bit floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "conveyor/settings.hpp"
#include "conveyor/types.hpp"
#include "reference.hpp"

namespace conveyor {
namespace {

TEST(Types, SizesMatchStorageTypes) {
  for (dtype t : testing::all_dtypes()) {
    const std::size_t expected = testing::visit_dtype(t, [](auto tg) { return sizeof(typename decltype(tg)::type); });
    EXPECT_EQ(dtype_size(t), expected) << dtype_name(t);
  }
}

TEST(Types, NamesRoundTrip) {
  for (dtype t : testing::all_dtypes()) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  for (op o : testing::all_ops()) EXPECT_EQ(parse_op(op_name(o)), o);
  EXPECT_THROW(parse_dtype("float128"), error);
  EXPECT_THROW(parse_op("avg"), error);
  EXPECT_THROW(dtype_size(static_cast<dtype>(dtype_count)), error);
  try {
    parse_dtype("nope");
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
}

// MPI's table: sum/prod on every numeric type, min/max on non-complex, bitwise and
// logical on integers.
TEST(Types, SupportMatrix) {
  EXPECT_TRUE(supports(op::sum, dtype::complex128));
  EXPECT_TRUE(supports(op::prod, dtype::bfloat16));
  EXPECT_TRUE(supports(op::max, dtype::float16));
  EXPECT_FALSE(supports(op::min, dtype::complex64));
  EXPECT_TRUE(supports(op::band, dtype::uint8));
  EXPECT_FALSE(supports(op::band, dtype::float32));
  EXPECT_TRUE(supports(op::lxor, dtype::int64));
  EXPECT_FALSE(supports(op::land, dtype::float64));
  EXPECT_TRUE(supports(op::logaddexp, dtype::bfloat16));
  EXPECT_FALSE(supports(op::logaddexp, dtype::int32));
  EXPECT_FALSE(supports(op::logaddexp, dtype::complex128));
  EXPECT_FALSE(supports(static_cast<op>(42), dtype::int8));
  int count = 0;
  for (dtype t : testing::all_dtypes())
    for (op o : testing::all_ops()) count += supports(o, t);
  EXPECT_EQ(count, 14 * 2 + 12 * 2 + 8 * 6 + 4);  // + logaddexp on the 4 real types
}

// float -> float16 against the independent rounding reference, on special values,
// every float16 neighbourhood, halfway points, and random floats.
TEST(Float16, ConversionFromFloatRoundsToNearestEven) {
  std::vector<float> inputs = {0.0f,    -0.0f,    1.0f,     65504.0f, 65519.99f, 65520.0f, 1e10f,
                               -1e-10f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 6.1e-5f,   INFINITY, -INFINITY};
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {  // each finite half and its halfway points
    const float v = static_cast<float>(float16::from_bits(static_cast<std::uint16_t>(h)));
    const float next = static_cast<float>(float16::from_bits(static_cast<std::uint16_t>(h + 1)));
    inputs.push_back(v);
    inputs.push_back(-v);
    inputs.push_back(0.5f * (v + next));
    inputs.push_back(std::nextafter(0.5f * (v + next), 0.0f));
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = static_cast<std::uint32_t>(rng());
    float f;
    std::memcpy(&f, &u, 4);
    if (!std::isnan(f)) inputs.push_back(f);
  }
  for (float f : inputs) {
    const double want = testing::round_to_f16(f);
    const float got = static_cast<float>(float16(f));
    ASSERT_EQ(static_cast<double>(got), want) << f;
    ASSERT_EQ(std::signbit(got), std::signbit(want)) << f;
  }
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::nanf("")))));
}

TEST(Float16, EveryPatternWidensExactly) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto x = float16::from_bits(static_cast<std::uint16_t>(h));
    const float f = static_cast<float>(x);
    const std::uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    if (exp == 0x1F) {
      ASSERT_EQ(std::isnan(f), mant != 0) << h;
      ASSERT_EQ(std::isinf(f), mant == 0) << h;
    } else {
      const double want =
          (exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, int(exp) - 25)) * ((h & 0x8000) ? -1 : 1);
      ASSERT_EQ(static_cast<double>(f), want) << h;
      ASSERT_EQ(float16(f).bits, h) << h;  // round trip
    }
  }
}

TEST(BFloat16, ConversionRoundsToNearestEven) {
  std::mt19937 rng(2);
  for (int i = 0; i < 500000; ++i) {
    std::uint32_t u = static_cast<std::uint32_t>(rng());
    if (i % 4 == 0) u = (u & 0xFFFF0000u) | 0x8000u;  // exact halfway cases
    float f;
    std::memcpy(&f, &u, 4);
    const float got = static_cast<float>(bfloat16(f));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(got));
      continue;
    }
    const double want = testing::round_to_bf16(f);
    ASSERT_EQ(static_cast<double>(got), want) << f;
  }
}

}  // namespace
}  // namespace conveyor

// The settings table: every setting readable, unknown names refused, values from the environment.
TEST(Settings, TableReadsTheEnvironmentAndRefusesUnknownNames) {
  const auto all = conveyor::settings();
  ASSERT_GE(all.size(), 9u);
  for (const auto& s : all) {
    EXPECT_EQ(s.name.rfind("CONVEYOR_", 0), 0u) << s.name;
    EXPECT_FALSE(s.meaning.empty()) << s.name;
    EXPECT_NO_THROW(conveyor::setting(s.name)) << s.name;
  }
  EXPECT_THROW(conveyor::setting("CONVEYOR_NOT_A_SETTING"), conveyor::error);
  ::setenv("CONVEYOR_SCALAPACK_REPORT", "1", 1);
  EXPECT_EQ(conveyor::setting("CONVEYOR_SCALAPACK_REPORT").value_or(""), "1");
  ::setenv("CONVEYOR_SCALAPACK_REPORT", "", 1);
  EXPECT_FALSE(conveyor::setting("CONVEYOR_SCALAPACK_REPORT").has_value());  // empty counts as unset
  ::unsetenv("CONVEYOR_SCALAPACK_REPORT");
}
