// SPDX-License-Identifier: BSD-3-Clause
// The table of DSOP's algorithms (table.hpp): one row each.
#include "dsop/algorithms/table.hpp"

#include <iterator>
#include <string>

#include "runtime/context.hpp"

namespace conveyor {
namespace dsop::detail {

namespace {

// The model's order of preference on ties: the paper's algorithm first, the MPI
// library's baseline last.
constexpr const dsop_row* kRows[] = {&generalized_rabenseifner_row, &allgather_row, &ring_row, &allreduce_row};
static_assert(std::size(kRows) + 1 == static_cast<std::size_t>(outer_algorithm_count),
              "one row per algorithm of CONVEYOR_OUTER_ALGORITHM_LIST but auto");

}  // namespace

const std::vector<const dsop_row*>& dsop_rows() {
  static const std::vector<const dsop_row*> rows(std::begin(kRows), std::end(kRows));
  return rows;
}

const dsop_row& dsop_row_of(outer_algorithm a) {
  for (const dsop_row* r : kRows) {
    if (r->algorithm == a) return *r;
  }
  throw error(errc::internal, "outer_sum: no algorithm " + std::string(outer_algorithm_name(a)));
}

}  // namespace dsop::detail

const std::vector<outer_algorithm_info>& outer_algorithms() {
  static const std::vector<outer_algorithm_info> infos = [] {
    std::vector<outer_algorithm_info> out;
    for (const dsop::detail::dsop_row* r : dsop::detail::dsop_rows()) {
      out.push_back({r->algorithm, outer_algorithm_name(r->algorithm), r->summary});
    }
    return out;
  }();
  return infos;
}

}  // namespace conveyor
