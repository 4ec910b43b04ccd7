// SPDX-License-Identifier: BSD-3-Clause
// The table of the allreduce's algorithms (table.hpp): one row each.
#include "collectives/allreduce/table.hpp"

#include <iterator>
#include <string>

namespace conveyor {
namespace collectives::detail {

namespace {

// The table: the rows indexed by the enum's value (automatic: none), which is
// also the model's order of preference on ties. Constant-initialized: every call
// looks its algorithm up (the repeated-shape fast path too), and this lookup is
// one load with no guard.
constexpr const allreduce_row* kByAlgorithm[] = {
    nullptr, &ring_row, &recursive_doubling_row, &rabenseifner_row, &hierarchical_row, &mpi_row, &shared_memory_row,
};
static_assert(std::size(kByAlgorithm) == static_cast<std::size_t>(allreduce_algorithm_count),
              "one row per algorithm of CONVEYOR_ALLREDUCE_ALGORITHM_LIST");

}  // namespace

const std::vector<const allreduce_row*>& allreduce_rows() {
  static const std::vector<const allreduce_row*> rows = [] {
    std::vector<const allreduce_row*> out;
    for (std::size_t i = 0; i < std::size(kByAlgorithm); ++i) {
      if (!kByAlgorithm[i]) continue;
      if (static_cast<std::size_t>(kByAlgorithm[i]->algorithm) != i) {
        throw error(errc::internal,
                    "allreduce: the table misplaces " + std::string(algorithm_name(kByAlgorithm[i]->algorithm)));
      }
      out.push_back(kByAlgorithm[i]);
    }
    return out;
  }();
  return rows;
}

const allreduce_row& allreduce_row_of(allreduce_algorithm a) {
  const auto i = static_cast<std::size_t>(a);
  if (i >= std::size(kByAlgorithm) || !kByAlgorithm[i]) {
    throw error(errc::internal, "allreduce: no algorithm " + std::string(algorithm_name(a)));
  }
  return *kByAlgorithm[i];
}

double fold_seconds(const allreduce_shape& s, const cost_model& p) {
  const int q = pow2_floor(s.size);
  if (q == s.size) return 0;
  const link_params flat = flat_link(s.layout, p);
  const double n = static_cast<double>(s.bytes);
  return 2 * (flat.alpha + n * flat.beta) + n * p.gamma;
}

}  // namespace collectives::detail

const std::vector<allreduce_algorithm_info>& allreduce_algorithms() {
  static const std::vector<allreduce_algorithm_info> infos = [] {
    std::vector<allreduce_algorithm_info> out;
    for (const collectives::detail::allreduce_row* row : collectives::detail::allreduce_rows()) {
      out.push_back({row->algorithm, algorithm_name(row->algorithm), row->summary, row->modeled != nullptr,
                     row->measured != nullptr});
    }
    return out;
  }();
  return infos;
}

}  // namespace conveyor
