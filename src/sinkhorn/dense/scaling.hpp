// SPDX-License-Identifier: BSD-3-Clause
// Internal: the distributed Sinkhorn–Knopp iteration, shared by matrix scaling and
// the plain-kernel OT front end.
//
// Per iteration, on every rank (rows block-partitioned, M_p rows on rank p):
//   fused:    u_i = r_i / (A_i . v) and s += u_i A_i row by row (one read of A);
//             allreduce(s) [N elements]; v_new = c / s and the error, chunk by chunk
//             as the allreduce delivers them (on_chunk).
//   in place: row pass (sum, scale) then local column sums s (typical: strided per
//             column; c2r/blocked: in row order); allreduce(s); column scaling of
//             each chunk of columns as it arrives (on_chunk, options.overlap).
// Bytes on the wire per iteration: one allreduce of N elements of T, i.e. about
// 2 N sizeof(T) (P-1)/P per rank for ring-type algorithms.
// Local traffic per iteration: fused reads A once (rows re-read from L2); the in-place
// variants read A three times and write it twice.
#pragma once

#include <cstddef>

#include "conveyor/sinkhorn.hpp"
#include "sinkhorn/run_context.hpp"

namespace conveyor::sinkhorn::detail {

template <class T>
struct scaling_problem {
  const T* A = nullptr;   // rows x cols, stride ld
  T* A_mut = nullptr;     // the same matrix, writable, when `in_place`
  bool in_place = false;  // the caller asked for A to be rescaled (scale_in_place, OT's own kernel)
  std::size_t rows = 0, cols = 0, ld = 0;
  const T* r = nullptr;  // this rank's row marginals
  const T* c = nullptr;  // all column marginals
};

/// Runs the iteration (arguments already validated and agreed on by every rank).
template <class T>
scaling_result<T> solve_scaling(const run_context& ctx, const scaling_problem<T>& p, const options& o);

}  // namespace conveyor::sinkhorn::detail
