// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/cpu_affinity.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace conveyor::detail {

static_assert(kCpuMaskWords * 64 == CPU_SETSIZE, "one bit per CPU of a cpu_set_t");

int cpu_mask::count() const {
  int n = 0;
  for (std::uint64_t w : words) n += __builtin_popcountll(w);
  return n;
}

cpu_mask usable_cpus() {
  cpu_mask m;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const bool known = sched_getaffinity(0, sizeof cpus, &cpus) == 0;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (known ? CPU_ISSET(c, &cpus) : c < online) m.words[c / 64] |= std::uint64_t{1} << (c % 64);
  }
  return m;
}

int threads_per_rank(int openmp_default, int node_cpus, int ranks_on_node) {
  const int share = node_cpus / std::max(ranks_on_node, 1);
  return std::max(1, std::min(openmp_default, share));
}

}  // namespace conveyor::detail
