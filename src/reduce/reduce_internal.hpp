// Internal entry points of the reduce engine for other Conveyor modules (the MPI_Op
// adapters, and later the collectives): validated kernel lookup without the
// per-call argument checks of the public API.
#pragma once

#include "conveyor/types.hpp"
#include "reduce/kernel_table.hpp"

namespace conveyor::detail {

/// The table of the active SIMD target (chosen at first use).
const kernel_table& active_kernels();

/// Highway's bit for the active SIMD target (other engines follow the same choice).
std::int64_t active_target();

/// The kernel for (o, t); throws conveyor::error for unknown enums or an
/// unsupported pair.
kernel_fn find_kernel(op o, dtype t);

}  // namespace conveyor::detail
