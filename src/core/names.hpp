// SPDX-License-Identifier: BSD-3-Clause
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
#define CONVEYOR_NAMES_OF(LIST) \
  std::array<std::string_view, 0 LIST(CONVEYOR_COUNT_)> { LIST(CONVEYOR_NAME_) }

/// Defines an enum's public name function and, with CONVEYOR_ENUM_NAMES, its
/// parser, from its conveyor/enums.h list: `TABLE` (a constexpr std::array of
/// the names, for range checks), `NAME_FN(E)` and `PARSE_FN(std::string_view)`,
/// whose errors call the enum `WHAT`. Used once per enum, in the namespace of
/// the public declarations, so no pair of them is written by hand.
#define CONVEYOR_ENUM_NAME_ONLY(E, LIST, WHAT, TABLE, NAME_FN) \
  constexpr auto TABLE = CONVEYOR_NAMES_OF(LIST);              \
  std::string_view NAME_FN(E value) { return ::conveyor::detail::name_of(TABLE, value, WHAT); }
#define CONVEYOR_ENUM_NAMES(E, LIST, WHAT, TABLE, NAME_FN, PARSE_FN) \
  CONVEYOR_ENUM_NAME_ONLY(E, LIST, WHAT, TABLE, NAME_FN)             \
  E PARSE_FN(std::string_view name) { return ::conveyor::detail::value_of<E>(TABLE, name, WHAT); }

namespace conveyor::detail {

/// names[value]; throws invalid_argument naming `what` for a value outside the table.
template <class E, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value, const char* what) {
  const auto i = static_cast<std::size_t>(value);
  if (i >= N) {
    throw error(errc::invalid_argument,
                "unknown " + std::string(what) + " (value " + std::to_string(static_cast<long long>(value)) + ")");
  }
  return names[i];
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
