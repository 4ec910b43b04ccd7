// SPDX-License-Identifier: BSD-3-Clause
// An MPI datatype as the byte boxes its type map flattens to (conveyor/alltoall.hpp),
// for alltoallw's datatype form (alltoall_datatypes.cpp: libconveyor_mpi's
// all-to-all calls and conveyor.Alltoallw): they move bytes, so any datatype
// whose layout is read here is moved, whatever its basic types.
//
// Read (MPI_Type_get_envelope / get_contents, recursively): named types whose
// bytes are one run, dup, contiguous, vector, hvector, indexed, hindexed,
// indexed_block, hindexed_block, struct, subarray (both orders), darray (block,
// cyclic and none distributions, both orders) and resized. Strides and lower
// bounds may be negative. Boxes of one child repeated along new axes stay one box
// while they have axes to spare (a subarray of complex numbers: one box of rows);
// a type that would take more than kMaxBoxes boxes is not read.
// Not read (the caller stages those items through MPI's own packing,
// datatype_packing.hpp, so every rank still moves them): the F90 parameterized types, named pair types with
// padding (MPI_SHORT_INT), and anything MPI may add.
// Decoding caches nothing (datatype_cache.hpp keeps layouts across calls).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "conveyor/alltoall.hpp"

namespace conveyor::redistribute::detail {

/// The most boxes one decoded type (or count of it) may take.
inline constexpr std::size_t kMaxBoxes = std::size_t{1} << 16;

struct type_layout {
  bool readable = false;
  byte_map boxes;                     // one item, offsets from the item's address
  std::int64_t size = 0, extent = 0;  // MPI_Type_size, MPI_Type_get_extent's extent
};

/// The combiner of `t` (MPI_COMBINER_NAMED for a predefined type; -1 when MPI
/// refuses), from MPI_Type_get_envelope_c where the library has it (MPI 4: a type
/// made by a large-count constructor needs it).
int combiner_of(MPI_Datatype t);

/// The layout of `t` (MPI initialized; `t` a committed or predefined type).
type_layout layout_of(MPI_Datatype t);

/// Appends `count` items of `l`, the first at `offset` bytes, item i at
/// offset + i * extent, to `out`; false (out unchanged in meaning: the caller
/// discards it) when that would take more than kMaxBoxes boxes.
bool append_items(const type_layout& l, std::int64_t count, std::int64_t offset, byte_map& out);

}  // namespace conveyor::redistribute::detail
