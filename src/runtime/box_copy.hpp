// SPDX-License-Identifier: BSD-3-Clause
// The one strided copy of the library (Redistribute's data movement; DSOP's
// local transpose into column-major storage). Every pack, unpack,
// local copy and transform is
//
//     dst[i] = alpha * op(src[i]) + beta * dst[i]   over an N-D box,
//
// with arbitrary element strides on both sides (a transpose is just permuted
// strides). beta = 0 never reads dst (BLAS semantics: NaN in dst is overwritten).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::detail {

/// The most axes a box may have (Redistribute's max_dims is this one).
inline constexpr int max_dims = 8;

struct box_copy {
  int ndim = 1;
  std::array<std::int64_t, max_dims> extent{};      // elements per dimension (dst order)
  std::array<std::int64_t, max_dims> src_stride{};  // elements
  std::array<std::int64_t, max_dims> dst_stride{};
};

struct scaling {
  double alpha = 1, beta = 0;
  bool conjugate = false;
  double alpha_imag = 0, beta_imag = 0;  // complex dtypes
  bool beta_zero() const { return beta == 0 && beta_imag == 0; }
  bool plain() const { return alpha == 1 && alpha_imag == 0 && beta_zero() && !conjugate; }
};

/// Applies the copy for element type t (any dtype for plain copies; float32,
/// float64, complex64, complex128 for alpha/beta/conjugate).
void apply(dtype t, const box_copy& c, const void* src, void* dst, const scaling& s);

/// Pieces whose rows are copied interleaved: they share their extents in every
/// axis but the innermost, along which each is contiguous on both sides, and their
/// rows lie in the same rows of one side (the source when packing, the destination
/// when unpacking). Copying row by row of that side makes it stream from (or to)
/// memory once however many pieces it is cut into — the tensor paper's case: 4
/// pieces of 288 bytes in every 1152-byte row. Member m's row i goes from
/// m.src + sum_d i_d * m.src_stride[d] to m.dst + sum_d i_d * m.dst_stride[d]
/// (d over the outer axes, outermost first), m.length elements.
struct row_group {
  struct member {
    const void* src = nullptr;
    void* dst = nullptr;
    std::array<std::int64_t, max_dims> src_stride{}, dst_stride{};
    std::int64_t length = 0;  // elements per row
    scaling scale;
  };
  dtype type = dtype::float64;
  int outer_dims = 0;  // axes before the innermost
  std::array<std::int64_t, max_dims> extent{};
  std::vector<member> members;
};
void apply(const row_group& g);

/// True if `t` supports alpha/beta/conjugation (the floating and complex types).
bool arithmetic_dtype(dtype t);

}  // namespace conveyor::detail
