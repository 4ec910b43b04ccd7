// Internal: enum <-> name tables shared by every engine's option enums.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "conveyor/types.hpp"

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
