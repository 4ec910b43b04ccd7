// SPDX-License-Identifier: BSD-3-Clause
// The SIMD target every kernel of the library runs (reductions, Sinkhorn, DSOP,
// the transpose): one for the whole process, the best this CPU runs unless
// CONVEYOR_SIMD_TARGET or set_simd_target() chose another.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "conveyor/export.hpp"

namespace conveyor {

/// What the SIMD dispatcher knows. Target names are Highway's ("AVX3", "AVX2",
/// "SSE4", "EMU128", ...).
struct simd_info {
  std::vector<std::string> compiled;   // compiled into this library
  std::vector<std::string> supported;  // compiled and runnable on this CPU, best first
  std::string active;                  // the one every kernel uses now
};
CONVEYOR_API simd_info simd_targets();

/// Forces every kernel onto one supported target (by name, case
/// insensitive), or back to the best one with an empty name. The environment
/// variable CONVEYOR_SIMD_TARGET does the same at first use. Throws
/// conveyor::error(invalid_argument) for a target this CPU cannot run.
CONVEYOR_API void set_simd_target(std::string_view name);

}  // namespace conveyor
