// SPDX-License-Identifier: BSD-3-Clause
// Built against an installed Conveyor (CMake package and pkg-config).
#include <conveyor/conveyor.h>
#include <conveyor/conveyor.hpp>

#include <cstdio>
#include <vector>

int main() {
  std::vector<double> a(100, 1.5), b(100, 2.0);
  conveyor::reduce_local(a.data(), b.data(), b.size(), conveyor::op::sum);
  for (double x : b) {
    if (x != 3.5) return 1;
  }
  std::printf("consumer: conveyor %s OK (SIMD target %s)\n", conveyor_version(),
              conveyor::simd_targets().active.c_str());
  return 0;
}
