// SPDX-License-Identifier: BSD-3-Clause
// The active SIMD target (simd_targets.hpp). Compiled once (no foreach_target):
// it only asks Highway which targets exist and which this CPU runs.
#include "runtime/simd_targets.hpp"

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>

#include "conveyor/settings.hpp"
#include "conveyor/simd.hpp"

namespace conveyor::detail {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Namespace-scope (constant-initialized), so the hot path pays no guard.
std::atomic<std::int64_t> g_active{0};    // 0: not chosen yet
std::atomic<std::int64_t> g_runnable{0};  // 0: not asked yet (Highway always has a fallback target)
std::mutex g_mutex;
std::string g_name;  // guarded by g_mutex

std::string runnable_list() {
  std::string list;
  for (const auto& t : runnable_targets()) list += (list.empty() ? "" : ", ") + t.name;
  return list;
}

// Compiled into the library and runnable on this CPU (Highway asks CPUID once).
std::int64_t runnable_mask() {
  std::int64_t mask = g_runnable.load(std::memory_order_relaxed);
  if (mask == 0) {
    mask = hwy::SupportedTargets() & HWY_TARGETS;
    g_runnable.store(mask, std::memory_order_relaxed);
  }
  return mask;
}

void select_locked(std::string_view name) {
  const auto targets = runnable_targets();
  if (targets.empty()) throw error(errc::internal, "no runnable SIMD target");
  auto chosen = targets.begin();
  if (!name.empty()) {
    chosen = std::find_if(targets.begin(), targets.end(),
                          [&](const simd_target_entry& t) { return same_name(t.name, name); });
    if (chosen == targets.end()) {
      const auto compiled = compiled_target_names();
      const bool known =
          std::any_of(compiled.begin(), compiled.end(), [&](const std::string& c) { return same_name(c, name); });
      throw error(errc::invalid_argument,
                  "SIMD target '" + std::string(name) + "' " +
                      (known ? "is not runnable on this CPU" : "is not a target this library was compiled for") +
                      "; runnable: " + runnable_list());
    }
  }
  g_name = chosen->name;
  g_active.store(chosen->bit, std::memory_order_release);
}

}  // namespace

std::vector<simd_target_entry> runnable_targets() {
  std::vector<simd_target_entry> out;
  for (std::int64_t bit : hwy::SupportedAndGeneratedTargets()) out.push_back({bit, hwy::TargetName(bit)});
  return out;
}

std::vector<std::string> compiled_target_names() {
  std::vector<std::string> out;
  for (int shift = 0; shift < 63; ++shift) {  // unsigned shifts: bit 63 is the sign
    const auto bit = static_cast<std::int64_t>(std::uint64_t{1} << shift);
    if (HWY_TARGETS & bit) out.emplace_back(hwy::TargetName(bit));
  }
  return out;
}

std::int64_t active_target() {
  if (const std::int64_t bit = g_active.load(std::memory_order_acquire)) return bit;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_active.load(std::memory_order_relaxed)) select_locked(setting("CONVEYOR_SIMD_TARGET").value_or(""));
  return g_active.load(std::memory_order_relaxed);
}

std::string active_target_name() {
  active_target();
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_name;
}

void require_runnable(std::int64_t bit) {
  if (bit != 0 && (bit & (bit - 1)) == 0 && (runnable_mask() & bit) != 0) return;
  std::string what = "SIMD target bit " + std::to_string(bit);
  if (bit != 0 && (bit & (bit - 1)) == 0 && (HWY_TARGETS & bit) != 0)
    what = std::string("SIMD target '") + hwy::TargetName(bit) + "'";
  throw error(errc::invalid_argument, what + " is not runnable on this CPU; runnable: " + runnable_list());
}

void select_target(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  select_locked(name);
}

}  // namespace conveyor::detail

namespace conveyor {

simd_info simd_targets() {
  simd_info info;
  info.compiled = detail::compiled_target_names();
  for (const auto& t : detail::runnable_targets()) info.supported.push_back(t.name);
  info.active = detail::active_target_name();
  return info;
}

void set_simd_target(std::string_view name) { detail::select_target(name); }

}  // namespace conveyor
