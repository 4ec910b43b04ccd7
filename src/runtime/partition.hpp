// SPDX-License-Identifier: BSD-3-Clause
// One rule for cutting n items into `parts` near-equal consecutive blocks, shared
// by every engine: part k holds base + 1 items when k < n % parts, else base
// (base = n / parts), so the first n % parts parts hold one more. The collectives'
// reduce-scatter blocks, Sinkhorn's row blocks (and its thread shares), DSOP's
// distributed rows and a Cartesian layout's blocks are therefore the same blocks:
// a distributed Sinkhorn plan or DSOP result is described exactly by
// layout::cartesian({rows, cols}, {P, 1}, ...).
#pragma once

#include <algorithm>
#include <cstddef>

namespace conveyor::detail {

struct part_range {
  std::size_t first = 0;  // index of the part's first item
  std::size_t count = 0;  // items in the part
};

/// Part `part` of `parts` of n items.
constexpr part_range balanced_part(std::size_t n, std::size_t part, std::size_t parts) {
  const std::size_t base = n / parts, extra = n % parts;
  return {part * base + std::min(part, extra), base + (part < extra ? 1 : 0)};
}

}  // namespace conveyor::detail
