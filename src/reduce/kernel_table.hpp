// SPDX-License-Identifier: BSD-3-Clause
// Internal to the reduce engine: the [op][dtype] table of element-wise reduction
// kernels, one per SIMD target compiled by Highway (looked up through
// runtime/simd_targets.hpp's for_target), and the active target's table. Other engines use the
// public conveyor/reduce.hpp (reduce_kernel).
#pragma once

#include <cstddef>
#include <cstdint>

#include "conveyor/types.hpp"

namespace conveyor::detail {}  // namespace conveyor::detail

// The engine's own namespace (reduction: conveyor::reduce is the public
// function), which sees the runtime's.
namespace conveyor::reduction::detail {

using namespace conveyor::detail;

/// out[i] = a[i] op b[i] for i < count (count in elements of the dtype). `out` may
/// alias `a` or `b` exactly; never partially. Never throws.
using kernel_fn = void (*)(const void* a, const void* b, void* out, std::size_t count);

struct kernel_table {
  kernel_fn fn[op_count][dtype_count];  // nullptr where the pair is unsupported
};

/// The table of target `bit` (reduction_kernels.cpp); throws unless this CPU runs it.
const kernel_table& kernels_for_target(std::int64_t bit);

/// The table of the active SIMD target (runtime/simd_targets.hpp).
const kernel_table& active_kernels();

/// The kernel for (o, t); throws conveyor::error for unknown enums or an
/// unsupported pair.
kernel_fn find_kernel(op o, dtype t);

}  // namespace conveyor::reduction::detail
