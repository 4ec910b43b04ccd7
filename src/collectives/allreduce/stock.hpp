// SPDX-License-Identifier: BSD-3-Clause
// The MPI library's own allreduce as Conveyor calls it (mpi.cpp): the datatype
// and op it is given, which the repeated-shape fast path (allreduce.cpp) resolves
// once per shape.
#pragma once

#include <mpi.h>

#include "conveyor/types.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

struct stock_call {
  MPI_Datatype type;
  MPI_Op mop;
};

/// Predefined types and ops where MPI has them and gets them right; Conveyor's
/// kernel as an MPI_Op for the 16-bit floats (no MPI type), for 8- and 16-bit
/// integers (Open MPI 4.1's op/avx component saturates their sums instead of
/// wrapping as MPI and C define: tests/mpi/test_large.cpp) and for logaddexp (no
/// MPI op).
stock_call stock_call_of(dtype t, op o);

}  // namespace conveyor::collectives::detail
