// SPDX-License-Identifier: BSD-3-Clause
// Internal: a 2-D block-cyclic layout read axis by axis. ScaLAPACK's layouts put
// block (i, j) on grid position (row of i, column of j) and store it in the local
// array at (local row of i, local column of j): owners and addresses are products
// of one rule per axis. Plans between two such layouts build their pieces as
// products of per-axis intervals (exchange_map.hpp, "interval products") instead of
// enumerating blocks. Layouts qualify when their owners follow the formulas:
// block-cyclic, no relabeling, no rank at two grid positions (facts about the
// layout's description, the same on every rank). Where this rank's storage follows
// them too (no set_storage), `formula_storage` says so.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "conveyor/redistribute.hpp"

namespace conveyor::redistribute::detail {

struct cyclic_grid {
  struct axis {
    std::int64_t first_block = 0;      // the whole matrix's block holding the submatrix's first element
    int source = 0;                    // grid coordinate of the whole matrix's first block (RSRC / CSRC)
    int procs = 1;                     // grid extent along this axis
    std::int64_t offset = 0;           // the submatrix's first index in the whole matrix
    std::int64_t first = 1, size = 1;  // the whole matrix's first block length, then every other one
    /// Grid coordinate of the submatrix's block k.
    int coord(std::int64_t k) const { return static_cast<int>((first_block + k + source) % procs); }
    /// The submatrix's first block at grid coordinate c (may be past the last block).
    std::int64_t first_block_at(int c) const { return ((c - source - first_block) % procs + procs) % procs; }
    /// Where submatrix index x sits in its owner's local array along this axis.
    std::int64_t local_index(std::int64_t x) const;
  };
  axis axes[2];
  std::vector<int> rank_at;      // rank of grid position (r, c), at r * axes[1].procs + c
  int position[2] = {-1, -1};    // the asking rank's grid position (-1: none)
  bool formula_storage = false;  // the asking rank's blocks are where ScaLAPACK's formula puts them:
  char* local = nullptr;         // in this local array
  std::int64_t lld = 1;          // with this leading dimension
  int rank_of(int r, int c) const { return rank_at[static_cast<std::size_t>(r * axes[1].procs + c)]; }
};

struct layout_access {
  /// The axis-by-axis view of a 2-D block-cyclic layout as `rank` sees it, or
  /// nothing if its owners do not follow the formulas (see above).
  static std::optional<cyclic_grid> cyclic_grid_of(const layout& l, int rank);
};

}  // namespace conveyor::redistribute::detail
