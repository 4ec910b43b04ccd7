// SPDX-License-Identifier: BSD-3-Clause
// The allreduce's cost model: alpha-beta-gamma predictions of the seconds each
// algorithm takes (parameters: runtime/cost_model.hpp), and `auto`'s starting
// choice, the cheapest. Each algorithm's prediction and where the model offers it
// are its row's (allreduce/table.hpp; the formulas in each algorithm's file, and
// derived in docs/algorithms.md).
#pragma once

#include <cstddef>

#include "conveyor/collectives.hpp"
#include "runtime/cost_model.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

/// Predicted seconds of `a` for `bytes` on the layout.
double predict_allreduce(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
                         std::size_t segment_bytes, const cost_model& p);
/// The largest P x n (bytes) for which the model offers the shared_memory allreduce.
inline constexpr std::size_t kSharedMemoryMaxBytes = std::size_t{64} << 10;
/// The cheapest algorithm whose preconditions hold.
allreduce_algorithm choose_allreduce(std::size_t bytes, int size, const node_layout& layout, std::size_t segment_bytes,
                                     const cost_model& p);

}  // namespace conveyor::collectives::detail
