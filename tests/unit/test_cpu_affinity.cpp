// How many OpenMP threads a rank starts and whether ranks share cores, from the
// union of the node's ranks' affinity masks (src/runtime/cpu_affinity.hpp): the
// launches users make, including ones this 2-core machine cannot host.
#include <gtest/gtest.h>

#include "runtime/cpu_affinity.hpp"

namespace conveyor::detail {
namespace {

TEST(CpuAffinity, ThreadsPerRankFollowTheNodesMasks) {
  // Open MPI's default for 2 ranks: each bound to a core of its own.
  EXPECT_EQ(threads_per_rank(/*openmp_default=*/1, /*node_cpus=*/2, /*ranks_on_node=*/2), 1);
  // No binding: every rank sees the node's 8 CPUs; 2 ranks split them.
  EXPECT_EQ(threads_per_rank(8, 8, 2), 4);
  // Bound to disjoint sockets of 4 cores (--bind-to socket on 2 sockets): each
  // keeps its 4 (dividing its own 4 by the 2 ranks on the node would idle half).
  EXPECT_EQ(threads_per_rank(4, 8, 2), 4);
  // OMP_NUM_THREADS above the share: capped, so threads never outnumber CPUs.
  EXPECT_EQ(threads_per_rank(16, 8, 2), 4);
  // Oversubscribed (4 ranks on 2 CPUs) and a lone rank: at least one thread.
  EXPECT_EQ(threads_per_rank(2, 2, 4), 1);
  EXPECT_EQ(threads_per_rank(2, 2, 1), 2);
  EXPECT_EQ(threads_per_rank(0, 0, 0), 1);
}

TEST(CpuAffinity, RanksShareCoresOnlyWhenTheyOutnumberTheNodesCpus) {
  EXPECT_FALSE(ranks_share_cores(2, 2));  // bound one per core, or unbound on 2 CPUs
  EXPECT_TRUE(ranks_share_cores(2, 1));   // two ranks pinned to one core
  EXPECT_TRUE(ranks_share_cores(4, 2));   // 4 ranks on 2 cores
}

TEST(CpuAffinity, UsableCpusIsThisProcesssMask) {
  const int n = usable_cpus().count();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, kCpuMaskWords * 64);
}

}  // namespace
}  // namespace conveyor::detail
