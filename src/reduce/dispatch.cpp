// SPDX-License-Identifier: BSD-3-Clause
// Argument checking and run-time selection of the kernel table.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "conveyor/reduce.hpp"
#include "core/checks.hpp"
#include "reduce/kernel_table.hpp"
#include "runtime/simd_targets.hpp"

namespace conveyor {
namespace reduction::detail {
namespace {

// The active target's table, cached with the target it belongs to (namespace
// scope, constant-initialized: the hot path pays no guard). Both are written
// only when the active target changes, which callers do not do while kernels run.
std::atomic<std::int64_t> g_table_target{0};
std::atomic<const kernel_table*> g_table{nullptr};

}  // namespace

const kernel_table& active_kernels() {
  const std::int64_t bit = active_target();
  if (bit == g_table_target.load(std::memory_order_acquire)) {
    if (const kernel_table* t = g_table.load(std::memory_order_acquire)) return *t;
  }
  const kernel_table* t = &kernels_for_target(bit);
  g_table.store(t, std::memory_order_release);
  g_table_target.store(bit, std::memory_order_release);
  return *t;
}

kernel_fn find_kernel(op o, dtype t) {
  check_enum(o);
  check_enum(t);
  kernel_fn f = active_kernels().fn[static_cast<int>(o)][static_cast<int>(t)];
  if (!f) {
    throw error(errc::unsupported, "reduction op '" + std::string(op_name(o)) + "' is not defined on dtype '" +
                                       std::string(dtype_name(t)) + "'");
  }
  return f;
}

}  // namespace reduction::detail

namespace {

bool partially_overlap(const void* x, const void* y, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(x);
  const auto b = reinterpret_cast<std::uintptr_t>(y);
  return a != b && a < b + bytes && b < a + bytes;
}

// Out of line so the hot path stays small: reduce() is called per message chunk
// by the collectives, where a few nanoseconds per call matter for small buffers.
[[noreturn, gnu::cold, gnu::noinline]] void reduce_failed(const void* a, const void* b, void* out, std::size_t count,
                                                          dtype t, op o) {
  reduction::detail::find_kernel(o, t);  // throws for unknown enums and unsupported pairs
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
  const reduction::detail::kernel_fn f = reduction::detail::active_kernels().fn[oi][ti];
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

reduce_kernel_fn reduce_kernel(dtype t, op o) { return reduction::detail::find_kernel(o, t); }

}  // namespace conveyor
