// SPDX-License-Identifier: BSD-3-Clause
// Items of an MPI datatype whose layout datatype_layout does not read (F90
// parameterized types, padded pairs such as MPI_SHORT_INT), moved as packed bytes
// made by the MPI library itself: a send-receive to self, typed (buf, count, type)
// on one side and MPI_PACKED on the other, on a private duplicate of
// MPI_COMM_SELF (freed at MPI_Finalize). Unlike MPI_Pack, `buf` may be MPI_BOTTOM
// on every library (MPICH's MPI_Pack refuses a null buffer).
#pragma once

#include <mpi.h>

namespace conveyor::redistribute::detail {

/// `count` items of (buf, type) as `bytes` packed bytes into `out`, and back.
/// Throw conveyor::error (errc::mpi) when MPI fails.
void pack_items(const void* buf, int count, MPI_Datatype type, void* out, int bytes);
void unpack_items(const void* in, int bytes, void* buf, int count, MPI_Datatype type);

}  // namespace conveyor::redistribute::detail
