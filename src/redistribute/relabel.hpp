// SPDX-License-Identifier: BSD-3-Clause
// Internal: process relabeling (COSTA, section 4). Relabeling destination rank x
// to y moves everything sent to x to y instead; with the cost w(i, j) of a byte
// from i to j (0 for i = j), the gain is
//   delta(x, y) = sum_i V[i][x] (w(i, x) - w(i, y)),
// and the best relabeling maximizes sum_x delta(x, sigma(x)): a linear assignment
// problem, solved exactly (optimal) or by COSTA's pair swaps (greedy).
#pragma once

#include <cstdint>
#include <vector>

#include "conveyor/redistribute.hpp"

namespace conveyor::detail {
struct node_layout;
}

namespace conveyor::redistribute::detail {

/// w(i, j) for a byte from rank i to rank j: 0 if i == j, intra_node_cost if both
/// are on one node (nodes may be null: no topology), else 1. Row-major P x P.
std::vector<double> pair_costs(int P, const conveyor::detail::node_layout* nodes, double intra_node_cost);

/// The relabelings as data: one row per mode, saying what it is and how it
/// solves the assignment (null: it keeps the identity, no gains computed).
/// relabel()'s dispatch, the public list redistribute::relabelings() behind
/// `conveyor info`, the Python docstring and the tests' case list read it. Adding
/// a mode: its name in CONVEYOR_RELABELING_LIST (include/conveyor/enums.h), its
/// solver, and its row in relabel.cpp (at its enum's place).
struct relabeling_row {
  relabeling mode;
  const char* summary;
  std::vector<int> (*assign)(const std::vector<double>& gain, int n);
};
const std::vector<relabeling_row>& relabeling_rows();

/// sigma for the mode (identity for none).
std::vector<int> relabel(const std::vector<std::int64_t>& volume, const std::vector<double>& cost, int P,
                         relabeling mode);

/// Bytes that cross between different ranks when destination rank j is sigma[j].
std::int64_t remote_volume(const std::vector<std::int64_t>& volume, int P, const std::vector<int>& sigma);

/// The exact solver: conveyor::redistribute::max_weight_assignment (public).
/// COSTA's greedy pair swaps: from the identity, repeatedly apply the swap of two
/// targets that increases the total gain most, until none does.
std::vector<int> greedy_assignment(const std::vector<double>& gain, int n);

}  // namespace conveyor::redistribute::detail
