// SPDX-License-Identifier: BSD-3-Clause
// DSOP's cost model: the terms of the alpha-beta-gamma predictions of the
// seconds each algorithm takes (parameters: runtime/cost_model.hpp; each
// algorithm's own formula is its row's `predict`, dsop/algorithms/), and `auto`'s
// choice, the cheapest row. For G = the sum of P outer products, N x M, T-byte
// elements: an allgather of k bytes per rank costs (P-1)(alpha + k beta), a
// multiply-add on cached data gamma T / 4, an element of G written gamma T;
// docs/algorithms.md derives the formulas.
#pragma once

#include <cstddef>

#include "conveyor/dsop.hpp"
#include "dsop/detail_namespace.hpp"
#include "runtime/cost_model.hpp"

namespace conveyor::dsop::detail {

/// What the cost model sees of a call.
struct dsop_shape {
  std::size_t N, M, T;  // rows, columns, element bytes
  int P;
  bool distributed;
};

/// Seconds of local work: `fmas` multiply-adds on cached data and `written`
/// elements of G written.
double dsop_local_seconds(double fmas, double written, std::size_t T, const cost_model& p);
/// A ring allgather of `block_bytes` per rank over P ranks.
double ring_allgather_seconds(double block_bytes, int P, const node_layout& layout, const cost_model& p);

/// The local product a b^T, then a ring allreduce of its N M T bytes (a
/// reduce-scatter, half of it, if distributed): `ring`'s and `allreduce`'s model.
double reduced_outer_seconds(const dsop_shape& s, const node_layout& layout, const cost_model& p);

/// The row's prediction for `a` (never `automatic`).
double predict_dsop(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p);
/// The cheapest row; ties go to the earlier row (dsop/algorithms/table.cpp).
outer_algorithm choose_dsop(const dsop_shape& s, const node_layout& layout, const cost_model& p);

}  // namespace conveyor::dsop::detail
