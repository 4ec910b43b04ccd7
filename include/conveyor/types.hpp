// SPDX-License-Identifier: BSD-3-Clause
// The shared vocabulary of every Conveyor engine: element types, reduction
// operations, the error type, and the 16-bit floating-point scalar types.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "conveyor/enums.h"
#include "conveyor/export.hpp"

/// Declares a public enum from its conveyor/enums.h list: the enum, its count
/// (E_count), its name function NAME_FN(E) and its parser PARSE_FN(string_view),
/// which CONVEYOR_ENUM_NAMES (src/core/names.hpp) defines from the same list.
/// So an enum is written once, in enums.h, for C++, C and Python.
#define CONVEYOR_DECLARE_ENUM(E, LIST, NAME_FN, PARSE_FN)   \
  enum class E : int { LIST(CONVEYOR_ENUMERATOR_) };        \
  inline constexpr int E##_count = 0 LIST(CONVEYOR_COUNT_); \
  CONVEYOR_API std::string_view NAME_FN(E value);           \
  CONVEYOR_API E PARSE_FN(std::string_view name)
/// The same without a parser (for enums that are only reported).
#define CONVEYOR_DECLARE_REPORTED_ENUM(E, LIST, NAME_FN)    \
  enum class E : int { LIST(CONVEYOR_ENUMERATOR_) };        \
  inline constexpr int E##_count = 0 LIST(CONVEYOR_COUNT_); \
  CONVEYOR_API std::string_view NAME_FN(E value)

namespace conveyor {

/// Element types. The numeric values are the C API's `conveyor_dtype_t` values.
/// int8 ... uint64, float16, bfloat16, float32, float64, complex64, complex128
/// (the list in conveyor/enums.h).
enum class dtype : int { CONVEYOR_DTYPE_LIST(CONVEYOR_ENUMERATOR_) };
inline constexpr int dtype_count = 0 CONVEYOR_DTYPE_LIST(CONVEYOR_COUNT_);

/// Reduction operations, with MPI semantics. The numeric values are the C API's
/// `conveyor_op_t` values: sum, prod, min, max; band, bor, bxor (bitwise) and land,
/// lor, lxor (logical, result 0 or 1) on integer types only; logaddexp,
/// log(exp(a) + exp(b)), on real floating types only (conveyor/enums.h).
enum class op : int { CONVEYOR_OP_LIST(CONVEYOR_ENUMERATOR_) };
inline constexpr int op_count = 0 CONVEYOR_OP_LIST(CONVEYOR_COUNT_);

/// Error categories; the numeric values are the C API's return codes.
enum class errc : int {
  success = 0,
  invalid_argument = 1,  // null pointer with a non-zero count, out-of-range enum, ...
  unsupported = 2,       // a valid (op, dtype) pair that has no meaning, e.g. band on float32
  mpi = 3,               // an MPI call failed, or MPI is not in the required state
  internal = 4,
  invalid_type = 5,  // an argument of the wrong kind: not an array, an unsupported or mismatched dtype
};

/// The one exception type Conveyor throws. `code()` says which category;
/// `what()` is "conveyor: " + `message()`.
class CONVEYOR_API error : public std::runtime_error {
 public:
  error(errc code, const std::string& message);
  errc code() const noexcept { return code_; }
  /// The message without the "conveyor: " prefix (to rethrow or wrap it).
  const std::string& message() const noexcept { return message_; }

 private:
  errc code_;
  std::string message_;
};

/// Consecutive items [first, first + count): a rank's block of rows in every
/// engine's one partition rule (sinkhorn::balanced_rows, outer_rows, and the blocks
/// of a Cartesian layout: the first n % P blocks one longer).
struct row_range {
  std::size_t first = 0;
  std::size_t count = 0;
};

/// Bytes per element of `t`.
CONVEYOR_API std::size_t dtype_size(dtype t);
/// Lower-case name ("float32", "bfloat16", ...); parse_dtype is its inverse.
CONVEYOR_API std::string_view dtype_name(dtype t);
CONVEYOR_API std::string_view op_name(op o);
/// Throws conveyor::error(invalid_argument) on an unknown name.
CONVEYOR_API dtype parse_dtype(std::string_view name);
CONVEYOR_API op parse_op(std::string_view name);

/// True when MPI defines `o` on `t` (or Conveyor extends it: 16-bit floats, complex prod).
CONVEYOR_API bool supports(op o, dtype t) noexcept;

// ---------------------------------------------------------------------------
// 16-bit floating-point storage types. Arithmetic happens in float32; conversions
// from float round to nearest, ties to even, and keep NaN a NaN (as a quiet NaN).
// ---------------------------------------------------------------------------

/// The 16 bits of a 16-bit float type, and building one from them.
template <class Self>
struct bits16 {
  std::uint16_t bits = 0;
  static Self from_bits(std::uint16_t b) {
    Self h;
    h.bits = b;
    return h;
  }
};

/// IEEE 754 binary16.
struct CONVEYOR_API float16 : bits16<float16> {
  float16() = default;
  explicit float16(float value);
  explicit operator float() const;
};

/// bfloat16: the upper 16 bits of an IEEE binary32.
struct CONVEYOR_API bfloat16 : bits16<bfloat16> {
  bfloat16() = default;
  explicit bfloat16(float value);
  explicit operator float() const;
};
static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "16-bit floats are stored as their 16 bits");

/// Maps a C++ element type to its dtype: dtype_of<float>::value == dtype::float32.
template <class T>
struct dtype_of;
#define CONVEYOR_DTYPE_OF(T, D)              \
  template <>                                \
  struct dtype_of<T> {                       \
    static constexpr dtype value = dtype::D; \
  }
CONVEYOR_DTYPE_OF(std::int8_t, int8);
CONVEYOR_DTYPE_OF(std::int16_t, int16);
CONVEYOR_DTYPE_OF(std::int32_t, int32);
CONVEYOR_DTYPE_OF(std::int64_t, int64);
CONVEYOR_DTYPE_OF(std::uint8_t, uint8);
CONVEYOR_DTYPE_OF(std::uint16_t, uint16);
CONVEYOR_DTYPE_OF(std::uint32_t, uint32);
CONVEYOR_DTYPE_OF(std::uint64_t, uint64);
CONVEYOR_DTYPE_OF(float16, float16);
CONVEYOR_DTYPE_OF(bfloat16, bfloat16);
CONVEYOR_DTYPE_OF(float, float32);
CONVEYOR_DTYPE_OF(double, float64);
CONVEYOR_DTYPE_OF(std::complex<float>, complex64);
CONVEYOR_DTYPE_OF(std::complex<double>, complex128);
#undef CONVEYOR_DTYPE_OF
template <class T>
inline constexpr dtype dtype_of_v = dtype_of<T>::value;

}  // namespace conveyor
