// SPDX-License-Identifier: BSD-3-Clause
// Internal: the exchange map of a Redistribute plan — what moves where, independent of
// how it moves. Built once by plan.cpp (enumerate, then one MPI_Allgather for the
// peers' packing orders and the volume matrix); read by every transport
// (transport.hpp), which adds only its own buffers and MPI objects.
//
// A piece is a box in source coordinates that one source block sends to one
// destination block. Pieces to (from) one peer are sorted by their global corner
// (a grid pair's, transform_plan::grid_pair, by source axis 1 first)
// on both sides, which fixes the byte order of a package without exchanging it;
// inside a package a piece's elements follow the SENDER's packing order (its
// source storage, largest stride outermost, so packing streams).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "conveyor/redistribute.hpp"
#include "runtime/box_copy.hpp"

namespace conveyor::detail {
struct comm_context;
}

namespace conveyor::redistribute::detail {

// The strided copy kernel of the runtime (runtime/box_copy.hpp).
using conveyor::detail::apply;
using conveyor::detail::arithmetic_dtype;
using conveyor::detail::box_copy;
using conveyor::detail::row_group;
using conveyor::detail::scaling;

struct cyclic_grid;  // cyclic_grid.hpp

using coords = std::array<std::int64_t, max_dims>;
using axis_order = std::array<int, max_dims>;

struct piece {
  coords lo{}, ext{};  // box in source coordinates
  block_index src_block{}, dst_block{};
};

inline std::int64_t volume_of(const coords& ext, int ndim) {
  std::int64_t v = 1;
  for (int d = 0; d < ndim; ++d) v *= ext[static_cast<std::size_t>(d)];
  return v;
}

// Interval products (2-D transforms between layouts that cyclic_grid.hpp reads
// axis by axis, ScaLAPACK's): the pieces a rank exchanges with one peer are every
// row interval times every column interval of two lists, one per source axis, each
// interval the intersection of one source and one destination block along that
// axis. Column intervals outer, row intervals inner, they are the pieces in the
// order of a grid pair's packages (sorted by corner, source axis 1 first: the
// sender walks its column-major local array down each block column, as reference
// ScaLAPACK does, instead of across every column per row interval), so packages
// have exactly the byte order of the piece lists: built in O(row + column
// intervals), never sorted, copied without looking up storage.
struct axis_interval {
  std::int64_t lo = 0, len = 0;               // source coordinates along one source axis
  std::int64_t src_block = 0, dst_block = 0;  // block indices along that axis (dst: the dst axis holding it)
  std::int64_t src_at = 0, dst_at = 0;        // element offsets along it in my local source / destination array
};

struct interval_product {
  std::vector<axis_interval> rows, cols;  // source axis 0, source axis 1
  std::size_t pieces() const { return rows.size() * cols.size(); }
  std::int64_t elements() const;
};

/// The pieces of an interval product in package order (columns outer, rows
/// inner): copy(row, column) for each.
template <class Copy>
void for_product_pieces(const interval_product& p, Copy&& copy) {
  for (const axis_interval& c : p.cols) {
    for (const axis_interval& r : p.rows) copy(r, c);
  }
}

/// One transform of a (possibly batched) plan.
struct transform_plan {
  const layout* src = nullptr;
  const layout* dst = nullptr;
  int ndim = 1;
  std::array<int, max_dims> perm{};  // dst axis k = src axis perm[k]
  std::size_t esize = 1;
  dtype type = dtype::float64;
  scaling scale;
  std::vector<std::vector<piece>> send, recv;  // per peer rank
  std::vector<piece> self;
  // Both layouts are block-cyclic grids (cyclic_grid.hpp; the same on every rank):
  // packages are column-major (order {1, 0}) on every rank, so the order needs no
  // exchange, and every rank can compute the whole volume matrix.
  bool grid_pair = false;
  // Interval products instead of piece lists (then send, recv and self are empty):
  // per peer, and my local copies; my local arrays and, per source axis, their
  // element strides.
  bool products = false;
  std::vector<interval_product> send_products, recv_products;
  interval_product self_product;
  char* src_local = nullptr;
  char* dst_local = nullptr;
  std::array<std::int64_t, 2> src_stride{}, dst_stride{};
  // My first source block (enumerate's), whose strides set my packing order.
  bool has_src_block = false;
  block_index first_src_block{};
  // Element order inside a packed piece, source axes from outermost to innermost:
  // mine follows my source storage (largest stride outermost), so packing streams;
  // peer_order[q] is rank q's, which its packages to me follow.
  axis_order order{};
  std::vector<axis_order> peer_order;
};

using piece_lists = std::vector<std::vector<piece>> transform_plan::*;  // &transform_plan::send or ::recv

struct exchange_map {
  // The runtime's private communicator of the caller's (shared with every plan
  // and collective on it: no MPI_Comm_dup per plan; messages of consecutive
  // executions cannot mix because no receive uses a wildcard and MPI keeps the
  // order of messages between two ranks). `context` keeps it alive.
  MPI_Comm comm = MPI_COMM_NULL;
  std::shared_ptr<conveyor::detail::comm_context> context;
  int rank = 0, size = 1;
  // The plan's own copies of the caller's layouts (cheap: they share the
  // description; a later set_storage on the caller's layout does not reach them),
  // so callers may free or change theirs once the plan is built.
  std::deque<layout> layouts;
  std::vector<transform_plan> transforms;
  std::vector<std::int64_t> send_bytes, recv_bytes;  // per peer (all transforms)
  std::int64_t self_bytes = 0;                       // local copies (all transforms)
  std::vector<int> send_peers, recv_peers;           // peers with data, in rank order
  std::vector<std::int64_t> volume;                  // P x P bytes, row = sender

  // --- addressing -------------------------------------------------------------
  static char* element_address(const layout& l, const block_index& b, const coords& at_global, std::size_t esize);
  /// Destination coordinates of a source-coordinate corner.
  static coords to_dst(const transform_plan& t, const coords& src);
  /// Element strides of a piece packed contiguously in `order` (per source axis).
  static coords packed_strides(const piece& p, const axis_order& order, int ndim);
  /// The copies of a piece: source block -> package (in t.order), package (in
  /// `order`) -> destination block, source block -> destination block.
  static box_copy pack_copy(const transform_plan& t, const piece& p);
  static box_copy unpack_copy(const transform_plan& t, const piece& p, const axis_order& order);
  static box_copy local_copy(const transform_plan& t, const piece& p);
  /// Source -> destination of a box of source extents `ext`, transformed by t's
  /// permutation: source strides per source axis, destination strides per
  /// destination axis (local_copy's, with either side's storage given).
  static box_copy direct_copy(const transform_plan& t, const coords& ext, const coords& src_strides,
                              const coords& dst_strides);
  static char* src_corner(const transform_plan& t, const piece& p);
  static char* dst_corner(const transform_plan& t, const piece& p);
  static std::int64_t piece_bytes(const transform_plan& t, const piece& p) {
    return volume_of(p.ext, t.ndim) * static_cast<std::int64_t>(t.esize);
  }

  // --- packages -------------------------------------------------------------------
  /// fn(transform, piece, index) for every piece of `peer` in direction `dir`,
  /// numbered across transforms in order (the package order). Piece lists only:
  /// materialize_pieces() first where a transform may hold interval products.
  template <class Fn>
  void for_pieces(piece_lists dir, int peer, Fn&& fn) const {
    std::size_t index = 0;
    for (const auto& t : transforms) {
      for (const piece& p : (t.*dir)[static_cast<std::size_t>(peer)]) fn(t, p, index++);
    }
  }
  std::size_t piece_count(piece_lists dir, int peer) const;
  /// Packs pieces [first, last) for `peer` at base + offset, advancing offset.
  void pack_range(int peer, std::size_t first, std::size_t last, char* base, std::int64_t& offset) const;
  /// Unpacks pieces [first, last) from `peer` at base + offset, advancing offset.
  void unpack_range(int peer, std::size_t first, std::size_t last, const char* base, std::int64_t& offset) const;
  /// Packs or unpacks a peer's whole package.
  void pack_all(int peer, char* base) const;
  void unpack_all(int peer, const char* base) const;
  /// Every local piece, copied and transformed directly.
  void copy_local() const;

  // --- building (plan.cpp) -------------------------------------------------------------
  void enumerate(transform_plan& t) const;  // local: the pieces of one transform
  void enumerate_products(transform_plan& t, const cyclic_grid& src, const cyclic_grid& dst) const;
  void enumerate_sends(transform_plan& t) const;  // enumerate's two halves
  void enumerate_receives(transform_plan& t) const;
  /// Interval products as piece lists (the transports other than packed walk pieces).
  void materialize_pieces();
  /// The packing orders and the volume matrix: computed locally where every
  /// transform is a grid pair, else one MPI_Allgather (collective either way).
  void orders_and_volume();
  void count_bytes();  // local: bytes and peers (after any cut of pieces)
};

}  // namespace conveyor::redistribute::detail
