// SPDX-License-Identifier: BSD-3-Clause
// Internal: every pack and local copy of one rank, in source-address order (the
// one_sided and alltoallv transports). A plain loop over pieces reads each source
// row once per piece it is cut into, which streams from memory at a fraction of
// its bandwidth; here pieces are cut into slabs run in order of source address, and
// pieces sharing source rows are copied row by row together (row groups), so each
// source region is read while it is in cache. docs/algorithms.md ("Packing in
// source order").
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/box_copy.hpp"
#include "redistribute/exchange_map.hpp"

namespace conveyor::redistribute::detail {

/// Where a piece lands in a peer's destination block mapped into this process
/// (one_copy's push): its corner and the block's strides per destination axis.
struct mapped_destination {
  char* corner = nullptr;
  coords strides{};
};

class source_order_copies {
 public:
  enum class copies { all, packing, local };
  source_order_copies() = default;
  /// package_of_peer[p]: where peer p's package is packed (null: p gets nothing).
  /// local_last: the purely local copies after all packing (run's parts).
  /// pushed (optional): per peer, its pieces' destinations in package order, which
  /// are then copied to straight, transformed, instead of packed (empty: packed).
  source_order_copies(const exchange_map& g, const std::vector<char*>& package_of_peer, bool local_last = false,
                      const std::vector<std::vector<mapped_destination>>* pushed = nullptr);
  void run(copies which = copies::all) const;

 private:
  void put_local_copies_last(const std::vector<char>& local_groups);

  struct copy_op {
    const char* src;
    char* dst;
    box_copy copy;
    const transform_plan* t;
    bool local;        // a copy into my own destination (run after packing with local_last)
    bool transformed;  // into a destination block (alpha, beta, conjugation), else a package (plain)
  };
  std::vector<row_group> row_groups_;  // run before ops_
  std::vector<copy_op> ops_;
  // With local_last: row_groups_[0, packing_groups_) and ops_[0, packing_ops_)
  // fill packages; the rest are local copies only.
  std::size_t packing_groups_ = 0, packing_ops_ = 0;
};

}  // namespace conveyor::redistribute::detail
