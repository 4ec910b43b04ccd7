// SPDX-License-Identifier: BSD-3-Clause
// The all-to-all family's table (alltoall_table.hpp): one row per algorithm.
#include "redistribute/alltoall_table.hpp"

#include <climits>

#include "conveyor/types.hpp"
#include "runtime/context.hpp"

namespace conveyor::redistribute::detail {

const std::vector<alltoall_row>& alltoall_rows() {
  static const std::vector<alltoall_row> rows = {
      {alltoall_path::conveyor,
       {"conveyor",
        "the pairwise exchange (alltoallw): one message a pair, shared slots and cross-memory attach on a node", 0,
        false, alltoall_pairwise}},
      {alltoall_path::mpi,
       {"mpi", "the MPI library's own call (libconveyor_mpi hands it the caller's arguments)", -1, false,
        alltoall_library}},
      {alltoall_path::by_nodes,
       {"by_nodes",
        "node-aware: gathered on each node, one message a pair of nodes, scattered (small parts, many ranks a node)", 1,
        true, alltoall_by_nodes}},
  };
  return rows;
}

const alltoall_row& alltoall_row_of(alltoall_path path) {
  for (const alltoall_row& r : alltoall_rows()) {
    if (r.path == path) return r;
  }
  throw error(errc::internal, "alltoall: no row for an algorithm");
}

int alltoall_candidates(bool several_nodes, alltoall_path* out) {
  int count = 0;
  for (const alltoall_row& r : alltoall_rows()) {
    if (!r.info.several_nodes || several_nodes) out[count++] = r.path;
  }
  return count;
}

alltoall_path alltoall_modeled_choice(const std::array<double, 2>& predicted, bool several_nodes) {
  const alltoall_row* best = nullptr;
  for (const alltoall_row& r : alltoall_rows()) {
    if (r.info.predicted < 0 || (r.info.several_nodes && !several_nodes)) continue;
    // (strictly faster: on a tie the earlier row, the pairwise exchange)
    if (!best || predicted[static_cast<std::size_t>(r.info.predicted)] <
                     predicted[static_cast<std::size_t>(best->info.predicted)]) {
      best = &r;
    }
  }
  return best->path;
}

alltoallw_report alltoall_library(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm) {
  if (bytes < 0 || bytes > INT_MAX) {
    throw error(errc::invalid_argument, "alltoall (mpi): bytes per peer must be 0 to INT_MAX (MPI_Alltoall's count)");
  }
  const int n = static_cast<int>(bytes);
  conveyor::detail::check_mpi(PMPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm), "MPI_Alltoall");
  return {};
}

}  // namespace conveyor::redistribute::detail

namespace conveyor {

const std::vector<alltoall_algorithm_info>& alltoall_algorithms() {
  static const std::vector<alltoall_algorithm_info> list = [] {
    std::vector<alltoall_algorithm_info> v;
    for (const auto& r : redistribute::detail::alltoall_rows()) v.push_back(r.info);
    return v;
  }();
  return list;
}

}  // namespace conveyor
