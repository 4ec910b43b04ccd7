// SPDX-License-Identifier: BSD-3-Clause
#include <array>
#include <cstring>
#include <string>

#include "conveyor/types.hpp"
#include "core/checks.hpp"
#include "core/names.hpp"

namespace conveyor {

error::error(errc code, const std::string& message)
    : std::runtime_error("conveyor: " + message), code_(code), message_(message) {}

namespace {

bool is_integer(dtype t) { return static_cast<int>(t) <= static_cast<int>(dtype::uint64); }
bool is_complex(dtype t) { return t == dtype::complex64 || t == dtype::complex128; }

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

std::size_t dtype_size(dtype t) {
  detail::check_enum(t);
  return detail::kDtypeSizes[static_cast<int>(t)];
}

CONVEYOR_ENUM_NAMES(dtype, CONVEYOR_DTYPE_LIST, "dtype", kDtypeNames, dtype_name, parse_dtype)
CONVEYOR_ENUM_NAMES(op, CONVEYOR_OP_LIST, "op", kOps, op_name, parse_op)

bool supports(op o, dtype t) noexcept {
  const int oi = static_cast<int>(o), ti = static_cast<int>(t);
  if (oi < 0 || oi >= op_count || ti < 0 || ti >= dtype_count) return false;
  switch (o) {
    case op::sum:
    case op::prod:
      return true;
    case op::min:
    case op::max:
      return !is_complex(t);
    case op::logaddexp:
      return !is_complex(t) && !is_integer(t);
    default:  // bitwise and logical
      return is_integer(t);
  }
}

// Scalar conversions. The SIMD kernels use the same algorithms (reduce/reduction_kernels.cpp); these
// are the reference the tests check them against, and what users convert with.

float16::float16(float value) {
  const std::uint32_t u = bits_of(value);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  std::uint32_t h;
  if (abs > 0x7F800000u) {
    h = 0x7E00u | ((abs >> 13) & 0x3FFu);  // quiet NaN, keep the top payload bits
  } else if (abs >= 0x477FF000u) {
    h = 0x7C00u;  // >= 65520 rounds to infinity
  } else if (abs < 0x38800000u) {
    // Subnormal result: let the float adder do the rounding (see reduce/reduction_kernels.cpp).
    h = bits_of(float_of(abs) + 0.5f) - 0x3F000000u;
  } else {
    const std::uint32_t odd = (abs >> 13) & 1u;
    h = (abs + 0xC8000FFFu + odd) >> 13;
  }
  bits = static_cast<std::uint16_t>(h | sign);
}

float16::operator float() const {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t abs = bits & 0x7FFFu;
  std::uint32_t u;
  if (abs >= 0x7C00u) {
    u = 0x7F800000u | (abs & 0x3FFu) << 13;  // Inf or NaN (payload kept)
  } else if (abs >= 0x0400u) {
    u = (abs << 13) + ((127u - 15u) << 23);
  } else {
    u = bits_of(static_cast<float>(abs) * (1.0f / 16777216.0f));  // subnormal, exact
  }
  return float_of(u | sign);
}

bfloat16::bfloat16(float value) {
  const std::uint32_t u = bits_of(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    bits = static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  } else {
    bits = static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
}

bfloat16::operator float() const { return float_of(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace conveyor
