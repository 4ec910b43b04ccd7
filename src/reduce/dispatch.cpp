// Argument checking and run-time selection of the kernel table.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

#include "conveyor/settings.hpp"
#include "conveyor/reduce.hpp"
#include "core/checks.hpp"
#include "reduce/kernel_table.hpp"
#include "reduce/reduce_internal.hpp"

namespace conveyor {
namespace detail {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

struct active_state {
  std::atomic<const kernel_table*> table{nullptr};
  std::string name;
  std::atomic<std::int64_t> bit{0};
  std::mutex mutex;
};

// Namespace-scope (constant-initialized members), so the hot path pays no
// function-local-static guard.
active_state g_state;

active_state& state() { return g_state; }

// Picks the table for `name` (empty: the best runnable target). Caller holds the mutex.
void select_locked(active_state& s, std::string_view name) {
  const auto targets = runnable_targets();
  if (targets.empty()) throw error(errc::internal, "no runnable SIMD target");
  auto chosen = targets.begin();
  if (!name.empty()) {
    chosen = std::find_if(targets.begin(), targets.end(),
                          [&](const simd_target_entry& t) { return same_name(t.name, name); });
    if (chosen == targets.end()) {
      std::string list;
      for (const auto& t : targets) list += (list.empty() ? "" : ", ") + t.name;
      throw error(errc::invalid_argument, "SIMD target '" + std::string(name) +
                                              "' is not runnable on this CPU; runnable: " + list);
    }
  }
  s.table.store(kernels_for_target(chosen->bit), std::memory_order_release);
  s.name = chosen->name;
  s.bit.store(chosen->bit, std::memory_order_release);
}

}  // namespace

const kernel_table& active_kernels() {
  auto& s = state();
  if (const kernel_table* t = s.table.load(std::memory_order_acquire)) return *t;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.table.load(std::memory_order_relaxed)) {
    select_locked(s, setting("CONVEYOR_SIMD_TARGET").value_or(""));
  }
  return *s.table.load(std::memory_order_relaxed);
}

std::int64_t active_target() {
  active_kernels();
  return state().bit.load(std::memory_order_acquire);
}

kernel_fn find_kernel(op o, dtype t) {
  check_enum(o);
  check_enum(t);
  kernel_fn f = active_kernels().fn[static_cast<int>(o)][static_cast<int>(t)];
  if (!f) {
    throw error(errc::unsupported, "reduction op '" + std::string(op_name(o)) +
                                       "' is not defined on dtype '" +
                                       std::string(dtype_name(t)) + "'");
  }
  return f;
}

}  // namespace detail

namespace {

bool partially_overlap(const void* x, const void* y, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(x);
  const auto b = reinterpret_cast<std::uintptr_t>(y);
  return a != b && a < b + bytes && b < a + bytes;
}

// Out of line so the hot path stays small: reduce() is called per message chunk
// by the collectives, where a few nanoseconds per call matter for small buffers.
[[noreturn, gnu::cold, gnu::noinline]] void reduce_failed(const void* a, const void* b, void* out,
                                                          std::size_t count, dtype t, op o) {
  detail::find_kernel(o, t);  // throws for unknown enums and unsupported pairs
  if (!a || !b || !out) throw error(errc::invalid_argument, "reduce: null buffer with count > 0");
  const std::size_t bytes = detail::checked_bytes(count, t, "reduce");
  if (partially_overlap(a, out, bytes) || partially_overlap(b, out, bytes)) {
    throw error(errc::invalid_argument,
                "reduce: the output buffer partially overlaps an input (it may only be the "
                "same buffer)");
  }
  throw error(errc::internal, "reduce: unexpected failure");
}

}  // namespace

void reduce(const void* a, const void* b, void* out, std::size_t count, dtype t, op o) {
  const auto ti = static_cast<unsigned>(t), oi = static_cast<unsigned>(o);
  if (ti >= static_cast<unsigned>(dtype_count) || oi >= static_cast<unsigned>(op_count)) {
    reduce_failed(a, b, out, count, t, o);
  }
  const detail::kernel_fn f = detail::active_kernels().fn[oi][ti];
  if (f == nullptr) reduce_failed(a, b, out, count, t, o);
  if (count == 0) return;
  std::size_t bytes = 0;
  if (!a || !b || !out || __builtin_mul_overflow(count, detail::kDtypeSizes[ti], &bytes) ||
      partially_overlap(a, out, bytes) || partially_overlap(b, out, bytes)) {
    reduce_failed(a, b, out, count, t, o);
  }
  f(a, b, out, count);
}

void reduce_local(const void* in, void* inout, std::size_t count, dtype t, op o) {
  reduce(in, inout, inout, count, t, o);
}

simd_info simd_targets() {
  simd_info info;
  info.compiled = detail::compiled_target_names();
  for (const auto& t : detail::runnable_targets()) info.supported.push_back(t.name);
  detail::active_kernels();
  auto& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  info.active = s.name;
  return info;
}

void set_simd_target(std::string_view name) {
  auto& s = detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  detail::select_locked(s, name);
}

}  // namespace conveyor
