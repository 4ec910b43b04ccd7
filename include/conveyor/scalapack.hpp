// SPDX-License-Identifier: BSD-3-Clause
// Redistribute layouts straight from ScaLAPACK descriptors (library
// conveyor_scalapack): for transforms the drop-ins in conveyor/scalapack.h do not
// cover — any axis permutation, batches, Cartesian or custom targets, relabeling —
// on matrices a ScaLAPACK program already holds.
#pragma once

#include <mpi.h>

#include "conveyor/redistribute.hpp"
#include "conveyor/scalapack.h"

namespace conveyor::scalapack {

/// The MPI communicator behind a BLACS context (BLACS's system handle).
CONVEYOR_SCALAPACK_API MPI_Comm context_communicator(int ctxt);

/// The block-cyclic layout of the m x n submatrix at (ia, ja) (1-based, as in
/// ScaLAPACK; m or n < 0: up to the matrix's last row or column) of the matrix
/// described by `desc` (ScaLAPACK's 9 integers) whose local array is `local`.
/// Grid process (r, c) is the rank of `comm` that BLACS placed there. Collective
/// over `comm`, which must hold every process of the descriptor's grid; processes
/// outside the grid (their descriptor's CTXT is -1) call it too and own no blocks.
/// Errors (no process in the grid, a submatrix beyond the matrix) are thrown as
/// conveyor::error on every rank.
CONVEYOR_SCALAPACK_API redistribute::layout layout_from_descriptor(const int* desc, void* local, MPI_Comm comm,
                                                                   int m = -1, int n = -1, int ia = 1, int ja = 1);

}  // namespace conveyor::scalapack
