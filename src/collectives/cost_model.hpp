// SPDX-License-Identifier: BSD-3-Clause
// The allreduce's cost model: alpha-beta-gamma predictions of the seconds each
// algorithm takes (parameters: runtime/cost_model.hpp), and `auto`'s starting
// choice, the cheapest. docs/algorithms.md derives every formula; the short forms,
// for n bytes on P ranks (L ranks per node; flat algorithms pay the slowest link;
// q = the largest power of two <= P; "fold": the extra ranks' exchange):
//   ring:               2(P-1) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma
//                       + (chunks - 1) alpha (pipelined in segments)
//   recursive_doubling: fold + log2 q (alpha + n beta + n gamma)
//   rabenseifner:       fold + sum over halving rounds 2 (alpha + n d/q beta) + ...
//   hierarchical:       intra reduce-scatter/allgather + inter ring on n/L, the
//                       slower stage's bandwidth dominating across segments.
//   shared_memory:      shared_alpha + n copy_beta + (P-1) n (gamma + copy_beta), one node
//                       only, offered up to P n = kSharedMemoryMaxBytes.
//   mpi:                the better of recursive doubling and Rabenseifner.
#pragma once

#include <cstddef>

#include "conveyor/collectives.hpp"
#include "runtime/cost_model.hpp"

namespace conveyor::detail {

/// Predicted seconds of `a` for `bytes` on the layout.
double predict_allreduce(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
                         std::size_t segment_bytes, const cost_model& p);
/// The largest P x n (bytes) for which the model offers the shared_memory allreduce.
inline constexpr std::size_t kSharedMemoryMaxBytes = std::size_t{64} << 10;
/// The cheapest algorithm whose preconditions hold.
allreduce_algorithm choose_allreduce(std::size_t bytes, int size, const node_layout& layout, std::size_t segment_bytes,
                                     const cost_model& p);

}  // namespace conveyor::detail
