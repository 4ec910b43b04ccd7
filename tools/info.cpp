// SPDX-License-Identifier: BSD-3-Clause
// `conveyor info`: what this build and this job look like.
#include <mpi.h>
#include <omp.h>

#include <cstdio>
#include <string>
#include <vector>

#include "conveyor/alltoall.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/dsop.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/settings.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/sinkhorn_points.hpp"
#include "conveyor/version.hpp"
#include "tool.hpp"

namespace conveyor::tool {

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}
}  // namespace

int run_info() {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Ranks per node from shared-memory domains.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 1, node_rank = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  int leader = node_rank == 0 ? 1 : 0, nodes = 0, min_ppn = 0, max_ppn = 0;
  MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&node_size, &min_ppn, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&node_size, &max_ppn, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // Collective: the all-to-all's probe of cross-memory attach on this job's ranks.
  const std::string copy_path = conveyor::alltoall_copy_path(MPI_COMM_WORLD);
  if (rank != 0) return 0;

  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0, major = 0, minor = 0;
  MPI_Get_library_version(lib, &len);
  MPI_Get_version(&major, &minor);
  std::string lib_first_line(lib, static_cast<std::size_t>(len));
  lib_first_line = lib_first_line.substr(0, lib_first_line.find_first_of("\n,"));

  const simd_info simd = simd_targets();
  std::printf("conveyor %s\n", CONVEYOR_VERSION_STRING);
  std::printf("  MPI library        %s (MPI standard %d.%d)\n", lib_first_line.c_str(), major, minor);
  std::printf("  SIMD compiled      %s\n", join(simd.compiled).c_str());
  std::printf("  SIMD runnable      %s\n", join(simd.supported).c_str());
  std::printf("  SIMD selected      %s\n", simd.active.c_str());
  std::printf("  ranks              %d on %d node(s)\n", size, nodes);
  if (min_ppn == max_ppn) std::printf("  ranks per node     %d\n", min_ppn);
  else std::printf("  ranks per node     %d to %d\n", min_ppn, max_ppn);
  std::printf("  OpenMP threads     %d per rank\n", omp_get_max_threads());
  std::printf("  all-to-all copy    %s (between ranks of a node)\n", copy_path.c_str());
  std::printf("allreduce algorithms (CONVEYOR_ALLREDUCE_ALGORITHM; src/collectives/allreduce/)\n");
  for (const conveyor::allreduce_algorithm_info& a : conveyor::allreduce_algorithms()) {
    std::printf("  %-20s %s%s\n", std::string(a.name).c_str(), a.summary,
                a.modeled ? "" : (a.measured ? " [auto: measured only]" : " [auto: never]"));
  }
  std::printf("redistribute transports (CONVEYOR_REDISTRIBUTE_TRANSPORT; src/redistribute/transport_table.hpp)\n");
  for (const conveyor::redistribute::transport_info& t : conveyor::redistribute::transports()) {
    std::printf("  %-20s %s%s\n", std::string(t.name).c_str(), t.summary,
                t.modeled ? "" : " [not in auto's cost model]");
  }
  std::printf("redistribute relabelings (plan_options::relabel; src/redistribute/relabel.cpp)\n");
  for (const conveyor::redistribute::relabeling_info& r : conveyor::redistribute::relabelings()) {
    std::printf("  %-20s %s\n", std::string(r.name).c_str(), r.summary);
  }
  std::printf("all-to-all algorithms (auto's candidates; src/redistribute/alltoall_table.hpp)\n");
  for (const conveyor::alltoall_algorithm_info& a : conveyor::alltoall_algorithms()) {
    std::printf("  %-20s %s%s%s\n", std::string(a.name).c_str(), a.summary, a.predicted < 0 ? " [no cost model]" : "",
                a.several_nodes ? " [several nodes only]" : "");
  }
  std::printf("DSOP algorithms (CONVEYOR_DSOP_ALGORITHM; src/dsop/algorithms/)\n");
  for (const conveyor::outer_algorithm_info& a : conveyor::outer_algorithms()) {
    std::printf("  %-24s %s\n", std::string(a.name).c_str(), a.summary);
  }
  std::printf("Sinkhorn variants (options::variant; src/sinkhorn/dense/variant_table.cpp)\n");
  for (const conveyor::sinkhorn::variant_info& v : conveyor::sinkhorn::variants()) {
    std::printf("  %-24s %s\n", std::string(v.name).c_str(), v.summary);
  }
  std::printf("point-cloud exchanges (sinkhorn_points's exchange; src/sinkhorn/points/exchange_table.cpp)\n");
  for (const conveyor::sinkhorn::exchange_info& e : conveyor::sinkhorn::points_exchanges()) {
    std::printf("  %-24s %s\n", std::string(e.name).c_str(), e.summary);
  }
  std::printf("settings (environment; conveyor/settings.hpp)\n");
  for (const conveyor::setting_info& s : conveyor::settings()) {
    std::printf("  %-32s %s%s\n      %s (default: %s; read at %s)\n", s.name.c_str(), s.value ? "= " : "unset",
                s.value ? s.value->c_str() : "", s.meaning.c_str(), s.default_value.c_str(), s.read_when.c_str());
  }
  return 0;
}

}  // namespace conveyor::tool
