// SPDX-License-Identifier: BSD-3-Clause
// Local (single-process) element-wise reductions: the kernels every Conveyor
// collective is built on. Vectorized with Highway for every SIMD target of the CPU
// family and dispatched at run time to the best one the CPU supports.
//
// Semantics are MPI's for every (op, dtype) pair MPI defines (integer sum/prod wrap
// around; bitwise and logical ops on integers only), plus: float16/bfloat16
// sum/prod/min/max (computed in float32, correctly rounded once) and complex
// sum/prod. Float min/max return NaN when either input is NaN and order -0 < +0
// (IEEE 754-2019 minimum/maximum), so they are commutative bit for bit. See
// docs/api.md for the full table.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/simd.hpp"  // simd_targets(), set_simd_target(): one target for every engine
#include "conveyor/types.hpp"

namespace conveyor {

/// inout[i] = in[i] op inout[i] for i < count (MPI_Reduce_local's contract).
/// Any alignment is fine; `in` and `inout` must not partially overlap.
/// Throws conveyor::error: invalid_argument (null pointer with count > 0, partial
/// overlap, unknown enum value) or unsupported (e.g. band on float32).
CONVEYOR_API void reduce_local(const void* in, void* inout, std::size_t count, dtype t, op o);

/// out[i] = a[i] op b[i]. `out` may be `a` or `b` itself, but must not partially
/// overlap either.
CONVEYOR_API void reduce(const void* a, const void* b, void* out, std::size_t count, dtype t, op o);

template <class T>
void reduce_local(const T* in, T* inout, std::size_t count, op o) {
  reduce_local(static_cast<const void*>(in), static_cast<void*>(inout), count, dtype_of_v<T>, o);
}

template <class T>
void reduce(const T* a, const T* b, T* out, std::size_t count, op o) {
  reduce(static_cast<const void*>(a), static_cast<const void*>(b), static_cast<void*>(out), count, dtype_of_v<T>, o);
}

/// The kernel behind reduce() for (t, o) on the active SIMD target:
/// out[i] = a[i] op b[i] for i < count, with no checks per call (for callers that
/// reduce many pieces of one buffer, as Conveyor's collectives do). `out` may be
/// `a` or `b` itself. Throws like reduce() for unknown or unsupported pairs. The
/// pointer stays valid; after set_simd_target, ask again for the new target's.
using reduce_kernel_fn = void (*)(const void* a, const void* b, void* out, std::size_t count);
CONVEYOR_API reduce_kernel_fn reduce_kernel(dtype t, op o);

}  // namespace conveyor
