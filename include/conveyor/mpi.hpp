// SPDX-License-Identifier: BSD-3-Clause
// Conveyor's vocabulary in MPI terms, and Conveyor's kernels as MPI_Ops.
#pragma once

#include <mpi.h>

#include "conveyor/types.hpp"

namespace conveyor {

/// The MPI datatype of `t`: a predefined one (MPI_INT8_T, MPI_FLOAT,
/// MPI_C_FLOAT_COMPLEX, ...) or, for float16/bfloat16 which MPI-3 lacks, a committed
/// 2-byte contiguous type that Conveyor creates once and frees in MPI_Finalize.
/// Requires MPI to be initialized (and not finalized) for the 16-bit float types.
CONVEYOR_API MPI_Datatype mpi_datatype(dtype t);

/// The predefined MPI op with the same meaning (MPI_SUM, MPI_BAND, ...). Throws
/// conveyor::error (unsupported) for logaddexp, which MPI does not define: use
/// mpi_op(op::logaddexp, t).
CONVEYOR_API MPI_Op mpi_builtin_op(op o);

/// A committed, commutative user-defined MPI_Op that reduces `t` elements with
/// Conveyor's vectorized kernel for `o`, for use in any MPI collective of the MPI
/// library Conveyor was built with. Created on first request per (o, t), shared,
/// and freed during MPI_Finalize: do not MPI_Op_free it yourself.
///
/// Pass it `mpi_datatype(t)` or any datatype whose size is a multiple of
/// dtype_size(t) with the elements contiguous. Throws conveyor::error: unsupported
/// for an (o, t) pair Conveyor does not define, mpi when MPI is not initialized or
/// already finalized.
CONVEYOR_API MPI_Op mpi_op(op o, dtype t);

}  // namespace conveyor
