// SPDX-License-Identifier: BSD-3-Clause
// DSOP's cost model: alpha-beta-gamma predictions of the seconds each algorithm
// takes (parameters: runtime/cost_model.hpp), and `auto`'s choice, the cheapest.
// For G = the sum of P outer products, N x M, T-byte elements (an allgather of k
// bytes per rank costs (P-1)(alpha + k beta); a multiply-add on cached data
// gamma T / 4, an element of G written gamma T); docs/algorithms.md derives them:
//   allgather:                pairs allgathered, P N M multiply-adds, N M written;
//   generalized_rabenseifner: pairs allgathered, N M / P multiply-adds and
//                             written, row blocks allgathered (not if distributed);
//   allreduce, ring:          local a b^T, then a ring allreduce of N M T bytes
//                             (a reduce-scatter, half of it, if distributed).
#pragma once

#include <cstddef>

#include "conveyor/dsop.hpp"
#include "runtime/cost_model.hpp"
#include "dsop/detail_namespace.hpp"

namespace conveyor::dsop::detail {

struct dsop_shape {
  std::size_t N, M, T;  // rows, columns, element bytes
  int P;
  bool distributed;
};
double predict_dsop(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p);
/// The cheapest; ties go to the earlier of generalized_rabenseifner, allgather,
/// ring, allreduce (Conveyor's own before the baseline).
outer_algorithm choose_dsop(const dsop_shape& s, const node_layout& layout, const cost_model& p);

}  // namespace conveyor::dsop::detail
