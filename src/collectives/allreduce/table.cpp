// SPDX-License-Identifier: BSD-3-Clause
// The table of the allreduce's algorithms (table.hpp): one row each.
#include "collectives/allreduce/table.hpp"

#include <array>
#include <string>

namespace conveyor {
namespace collectives::detail {

const std::vector<const allreduce_row*>& allreduce_rows() {
  static const std::vector<const allreduce_row*> rows = {
      &ring_row, &recursive_doubling_row, &rabenseifner_row, &hierarchical_row, &mpi_row, &shared_memory_row,
  };
  return rows;
}

const allreduce_row& allreduce_row_of(allreduce_algorithm a) {
  // Indexed by the enum: every call looks its algorithm up (the fast path too).
  static const std::array<const allreduce_row*, allreduce_algorithm_count> by_algorithm = [] {
    std::array<const allreduce_row*, allreduce_algorithm_count> out{};
    for (const allreduce_row* row : allreduce_rows()) out[static_cast<std::size_t>(row->algorithm)] = row;
    return out;
  }();
  const auto i = static_cast<std::size_t>(a);
  if (i >= by_algorithm.size() || !by_algorithm[i]) {
    throw error(errc::internal, "allreduce: no algorithm " + std::string(algorithm_name(a)));
  }
  return *by_algorithm[i];
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
