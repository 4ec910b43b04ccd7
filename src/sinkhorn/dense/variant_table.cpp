// SPDX-License-Identifier: BSD-3-Clause
// The dense solver's variants as data: one row per way an iteration walks the
// matrix (the fused one-read solver, and the paper's Algorithms 1-3 in place),
// saying what it is and whether it rescales A itself. The solvers' dispatch
// (dense/scaling.cpp, dense/optimal_transport.cpp: rewrites_matrix picks the
// in-place solver), `conveyor info`, the Python docstring, and the benchmarks'
// and tests' case lists read it. The in-place variants' column walks (strided,
// row order, blocked) are in_place_solver's, dense/scaling.cpp.
//
// Adding a variant: its name in CONVEYOR_SINKHORN_VARIANT_LIST
// (include/conveyor/enums.h), its row here, and its walk in dense/scaling.cpp.
#include <iterator>
#include <string>

#include "conveyor/sinkhorn.hpp"

namespace conveyor::sinkhorn {
namespace {

// In the enum's order (the row of a variant is at its value).
const variant_info kRows[] = {
    {variant::fused, "fused", "one read of A an iteration, A never written: the default", false},
    {variant::typical, "typical",
     "the paper's Algorithm 1 in place: a row pass, then a column pass down each column (strided)", true},
    {variant::c2r, "c2r", "the paper's Algorithm 2 in place: column sums and column scaling in row order", true},
    {variant::blocked, "blocked",
     "the paper's Algorithm 3 in place: c2r in mc x nc blocks with an mr x nr micro-kernel (options::block)", true},
};
static_assert(std::size(kRows) == static_cast<std::size_t>(variant_count), "one row per Sinkhorn variant");

}  // namespace

const std::vector<variant_info>& variants() {
  static const std::vector<variant_info> rows = [] {
    for (std::size_t i = 0; i < std::size(kRows); ++i) {
      if (static_cast<std::size_t>(kRows[i].which) != i || kRows[i].name != variant_name(kRows[i].which)) {
        throw error(errc::internal, "sinkhorn: the table of variants misplaces " + std::string(kRows[i].name));
      }
    }
    return std::vector<variant_info>(std::begin(kRows), std::end(kRows));
  }();
  return rows;
}

bool rewrites_matrix(variant v) {
  const auto i = static_cast<std::size_t>(v);
  if (i >= std::size(kRows)) throw error(errc::invalid_argument, "sinkhorn: unknown variant " + std::to_string(i));
  return kRows[i].rewrites_matrix;
}

}  // namespace conveyor::sinkhorn
