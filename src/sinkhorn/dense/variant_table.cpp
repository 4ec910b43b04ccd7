// SPDX-License-Identifier: BSD-3-Clause
// The dense solver's variants as data: one row per way an iteration walks the
// matrix (the fused one-read solver, and the paper's Algorithms 1-3 in place),
// saying what it is and, for an in-place variant, its walk (dense/walks/: the row
// pass, the column sums and the column scaling). The solvers' dispatch
// (dense/scaling.cpp, dense/optimal_transport.cpp: a row with a walk runs the
// in-place solver with it), `conveyor info`, the Python docstring, and the
// benchmarks' and tests' case lists read it.
//
// Adding a variant (docs/architecture.md, "Adding a dense Sinkhorn variant"): its
// name in CONVEYOR_SINKHORN_VARIANT_LIST (include/conveyor/enums.h), its walk's
// file in dense/walks/, and its row here.
#include "sinkhorn/dense/variant_table.hpp"

#include <iterator>
#include <string>
#include <type_traits>

namespace conveyor::sinkhorn {
namespace {

using detail::walk;

struct variant_row {
  variant which;
  std::string_view name;
  const char* summary;
  const walk<float>& (*f32)();  // null: A is never written (fused)
  const walk<double>& (*f64)();
};

// In the enum's order (the row of a variant is at its value).
const variant_row kRows[] = {
    {variant::fused, "fused", "one read of A an iteration, A never written: the default", nullptr, nullptr},
    {variant::typical, "typical",
     "the paper's Algorithm 1 in place: a row pass, then a column pass down each column (strided)",
     detail::typical_walk<float>, detail::typical_walk<double>},
    {variant::c2r, "c2r", "the paper's Algorithm 2 in place: column sums and column scaling in row order",
     detail::c2r_walk<float>, detail::c2r_walk<double>},
    {variant::blocked, "blocked",
     "the paper's Algorithm 3 in place: c2r in mc x nc blocks with an mr x nr micro-kernel (options::block)",
     detail::blocked_walk<float>, detail::blocked_walk<double>},
};
static_assert(std::size(kRows) == static_cast<std::size_t>(variant_count), "one row per Sinkhorn variant");

const variant_row& row_of(variant v) {
  const auto i = static_cast<std::size_t>(v);
  if (i >= std::size(kRows)) throw error(errc::invalid_argument, "sinkhorn: unknown variant " + std::to_string(i));
  return kRows[i];
}

}  // namespace

const std::vector<variant_info>& variants() {
  static const std::vector<variant_info> rows = [] {
    std::vector<variant_info> out;
    for (std::size_t i = 0; i < std::size(kRows); ++i) {
      const variant_row& r = kRows[i];
      if (static_cast<std::size_t>(r.which) != i || r.name != variant_name(r.which) ||
          (r.f32 == nullptr) != (r.f64 == nullptr)) {
        throw error(errc::internal, "sinkhorn: the table of variants misplaces " + std::string(r.name));
      }
      out.push_back({r.which, r.name, r.summary, r.f32 != nullptr});
    }
    return out;
  }();
  return rows;
}

bool rewrites_matrix(variant v) { return row_of(v).f32 != nullptr; }

namespace detail {

template <class T>
const walk<T>* walk_of(variant v) {
  const variant_row& r = row_of(v);
  if constexpr (std::is_same_v<T, float>) return r.f32 ? &r.f32() : nullptr;
  else return r.f64 ? &r.f64() : nullptr;
}

template const walk<float>* walk_of(variant);
template const walk<double>* walk_of(variant);

}  // namespace detail
}  // namespace conveyor::sinkhorn
