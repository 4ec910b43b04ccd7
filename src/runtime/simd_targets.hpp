// SPDX-License-Identifier: BSD-3-Clause
// The SIMD targets of every engine, in one place:
//  - which targets the library was compiled for and which this CPU runs;
//  - the ACTIVE target, one for the whole library (CONVEYOR_SIMD_TARGET or the best
//    runnable one, chosen at first use; conveyor::set_simd_target changes it), so the
//    reductions, Sinkhorn, DSOP and transpose kernels always run the same ISA;
//  - the lookup of an engine's per-target code by target bit (`for_target`).
//
// When code compiled for a target may run: each engine's kernel file is compiled
// once per target by Highway (foreach_target); its HWY_ONCE section holds
// `HWY_EXPORT(Getter)`, Highway's constant array of the passes' function addresses
// (relocations only: nothing of any pass runs while the library loads). A pass's
// code runs only through `for_target`, which first checks that this CPU runs the
// target (CPUID, through Highway's SupportedTargets) and throws otherwise. A
// getter may build its table in a function-local static: that happens on the first
// lookup of that target, after the check, and for the targets looked up only.
// Nothing at namespace scope inside a pass may need code to initialize it.
#pragma once

#include <hwy/targets.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::detail {

struct simd_target_entry {
  std::int64_t bit;  // Highway's HWY_* target bit
  std::string name;  // Highway's name for it, e.g. "AVX2"
};

/// Targets compiled into the library that this CPU can run, best first.
std::vector<simd_target_entry> runnable_targets();
/// Targets compiled into the library, whether or not this CPU can run them.
std::vector<std::string> compiled_target_names();

/// Highway's bit for the active target (one atomic load after the first call).
/// Throws invalid_argument when CONVEYOR_SIMD_TARGET names a target that is
/// unknown, not compiled in or not runnable on this CPU (and again on every call
/// until a valid target is selected).
std::int64_t active_target();
/// Highway's name for the active target.
std::string active_target_name();
/// Makes `name` (case insensitive) the active target; empty: the best runnable one.
/// Throws invalid_argument for a target this CPU cannot run. Not to be called
/// while another thread runs kernels.
void select_target(std::string_view name);

/// Throws invalid_argument, naming the runnable targets, unless `bit` is a single
/// target compiled into the library that this CPU runs.
void require_runnable(std::int64_t bit);

/// The entry of target `bit` in `table`, an array made by HWY_EXPORT in the calling
/// engine's HWY_ONCE section. Checks the CPU first (require_runnable); only the
/// returned pointer may then be called. Uses a private hwy::ChosenTarget, so the
/// process's own (HWY_DYNAMIC_DISPATCH's) is left alone. Inline on purpose:
/// GetIndex must see the HWY_TARGETS of the translation unit that made `table`.
template <class Fn>
Fn for_target(Fn const* table, std::int64_t bit) {
  require_runnable(bit);
  hwy::ChosenTarget chosen;
  chosen.Update(bit);
  return table[chosen.GetIndex()];
}

}  // namespace conveyor::detail
