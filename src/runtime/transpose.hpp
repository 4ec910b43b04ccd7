// SPDX-License-Identifier: BSD-3-Clause
// The one tiled transpose kernel (box_copy.hpp uses it; so through it do Redistribute and DSOP), written once with
// Highway for every SIMD target. box_copy's tiled path calls it for 8-byte
// elements (float64, complex64, int64, ...) copied without scaling, and for
// float64 with alpha and beta, where the source is contiguous along one axis of
// the tile and the destination along the other: 4 x 4 blocks are transposed in
// registers (2 x 2 on 128-bit targets).
#pragma once

#include <cstdint>

namespace conveyor::detail {

/// float64 scaling: y = alpha * x (+ beta * y if update), evaluated as the scalar
/// kernel does (no fused multiply-add), so both give identical bits.
struct transpose_scale {
  double alpha = 1, beta = 0;
  bool update = false;
};

/// dst[a * dst_ld + b] = src[a + b * src_ld] for a < rows, b < cols (elements of 8
/// bytes; scaled as float64 if `scale` is not null).
using transpose8_fn = void (*)(const void* src, std::int64_t src_ld, void* dst, std::int64_t dst_ld, std::int64_t rows,
                               std::int64_t cols, const transpose_scale* scale);

/// The kernel of the library's active SIMD target (runtime/simd_targets.hpp).
transpose8_fn transpose8();

}  // namespace conveyor::detail
