// Internal: enum <-> name tables of every engine's enums, from the lists of
// conveyor/enums.h (one list per enum for C++, C and Python).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "conveyor/enums.h"
#include "conveyor/types.hpp"

/// The names of a conveyor/enums.h list, in value order (a std::array).
#define CONVEYOR_NAMES_OF(LIST) std::array<std::string_view, 0 LIST(CONVEYOR_COUNT_)>{LIST(CONVEYOR_NAME_)}

namespace conveyor::detail {

/// names[value], or "unknown" for a value outside the table.
template <class E, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "unknown";
}

/// The enum value whose name is `name`; throws invalid_argument naming `what` and
/// listing the accepted names.
template <class E, std::size_t N>
E value_of(const std::array<std::string_view, N>& names, std::string_view name, const char* what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  throw error(errc::invalid_argument, "unknown " + std::string(what) + " '" + std::string(name) + "' (" + list + ")");
}

}  // namespace conveyor::detail
