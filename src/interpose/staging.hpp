// SPDX-License-Identifier: BSD-3-Clause
// Staging for libconveyor_mpi: data whose layout is not one contiguous run (vector,
// indexed, struct, resized types, MPI_BOTTOM with absolute addresses) is copied to
// and from a contiguous array of its leaf elements before and after Conveyor works
// on it. The copy is made by the MPI library itself -- a send-receive to self on a
// private duplicate of MPI_COMM_SELF, typed (buf, count, type) on one side and
// (array, n, leaf) on the other -- so every layout is read exactly as MPI reads it,
// by the rule MPI defines (type signatures match), with no datatype walker of ours.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "interpose/signature.hpp"

namespace conveyor::interpose {

/// Copies `items` items of (buf, type) into `out` (items * s.per_item leaf
/// elements). Returns an MPI error code.
int stage_in(const void* buf, std::size_t items, MPI_Datatype type, const signature& s, void* out);

/// Copies `items * s.per_item` leaf elements from `in` into `items` items of
/// (buf, type). Returns an MPI error code.
int stage_out(const void* in, void* buf, std::size_t items, MPI_Datatype type, const signature& s);

/// Frees the private communicator (before MPI_Finalize).
void release_staging();

}  // namespace conveyor::interpose
