// Internal: the [op][dtype] table of element-wise reduction kernels, one table per
// SIMD target compiled by Highway, and the run-time choice between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::detail {

/// out[i] = a[i] op b[i] for i < count (count in elements of the dtype). `out` may
/// alias `a` or `b` exactly; never partially. Never throws.
using kernel_fn = void (*)(const void* a, const void* b, void* out, std::size_t count);

struct kernel_table {
  kernel_fn fn[op_count][dtype_count];  // nullptr where the pair is unsupported
};

struct simd_target_entry {
  std::int64_t bit;   // Highway's HWY_* target bit
  std::string name;   // Highway's name for it, e.g. "AVX2"
};

/// Targets compiled into the library that this CPU can run, best first.
std::vector<simd_target_entry> runnable_targets();
/// Targets compiled into the library, whether or not this CPU can run them.
std::vector<std::string> compiled_target_names();
/// The kernel table of one runnable target.
const kernel_table* kernels_for_target(std::int64_t bit);

}  // namespace conveyor::detail
