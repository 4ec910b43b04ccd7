// Internal: the transpose kernel of the Redistribute engine, written once with
// Highway for every SIMD target. box_copy's tiled path calls it for 8-byte
// elements (float64, complex64, int64, ...) copied without scaling, where the
// source is contiguous along one axis of the tile and the destination along the
// other: 4 x 4 blocks are transposed in registers (2 x 2 on 128-bit targets).
#pragma once

#include <cstdint>

namespace conveyor::redistribute::detail {

/// dst[a * dst_ld + b] = src[a + b * src_ld] for a < rows, b < cols (elements of 8 bytes).
using transpose8_fn = void (*)(const void* src, std::int64_t src_ld, void* dst, std::int64_t dst_ld, std::int64_t rows,
                               std::int64_t cols);

/// The kernel of the SIMD target the Reduce engine uses.
transpose8_fn transpose8();

}  // namespace conveyor::redistribute::detail
