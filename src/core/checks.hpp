// SPDX-License-Identifier: BSD-3-Clause
// Internal argument checks shared by every engine.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include "conveyor/types.hpp"

namespace conveyor::detail {

/// Bytes per element, indexed by dtype (the order of conveyor::dtype).
inline constexpr std::size_t kDtypeSizes[dtype_count] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

inline void check_enum(dtype t) {
  const int v = static_cast<int>(t);
  if (v < 0 || v >= dtype_count) {
    throw error(errc::invalid_argument, "unknown dtype value " + std::to_string(v));
  }
}

inline void check_enum(op o) {
  const int v = static_cast<int>(o);
  if (v < 0 || v >= op_count) {
    throw error(errc::invalid_argument, "unknown op value " + std::to_string(v));
  }
}

/// count * dtype_size(t), or an error if that does not fit in size_t.
inline std::size_t checked_bytes(std::size_t count, dtype t, const char* what) {
  const std::size_t size = dtype_size(t);
  if (count > std::numeric_limits<std::size_t>::max() / size) {
    throw error(errc::invalid_argument,
                std::string(what) + ": element count " + std::to_string(count) + " overflows the address space");
  }
  return count * size;
}

}  // namespace conveyor::detail
