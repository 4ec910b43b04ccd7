// SPDX-License-Identifier: BSD-3-Clause
// The CPUs a process may run on, and what they allow when several ranks share a
// node: how many OpenMP threads a rank may start, and whether a waiting rank may
// spin.
//
// Neither follows from one rank's own affinity mask: launchers bind by default
// (Open MPI's mpirun binds each of up to 2 ranks to a core of its own), so a rank
// sees one CPU although no other rank shares it. Nor from the node's CPU count: a
// launcher may pin all ranks to a few of them. What decides is the union of the
// masks of the node's ranks, exchanged once per communicator when its node layout
// is built (node_layout::node_cpus), against the number of ranks on the node.
#pragma once

#include <cstdint>

namespace conveyor::detail {

inline constexpr int kCpuMaskWords = 1024 / 64;  // CPU_SETSIZE bits

struct cpu_mask {
  std::uint64_t words[kCpuMaskWords] = {};
  int count() const;
};

/// This process's CPUs (sched_getaffinity), or every online CPU where the mask
/// cannot be read.
cpu_mask usable_cpus();

/// Whether the ranks of a node share cores: more ranks than CPUs in the union of
/// their masks. Then a rank that waits must give its core up at once.
inline bool ranks_share_cores(int ranks_on_node, int node_cpus) { return ranks_on_node > node_cpus; }

/// OpenMP threads of one rank when the library chooses: OpenMP's default for this
/// process (the CPUs of its own mask, or OMP_NUM_THREADS), but no more than its
/// share of the node's CPUs (the union of the node's ranks' masks, divided among
/// them: ranks that see the same CPUs split them), at least one. Ranks bound to
/// disjoint sets of cores each keep their own set.
int threads_per_rank(int openmp_default, int node_cpus, int ranks_on_node);

}  // namespace conveyor::detail
