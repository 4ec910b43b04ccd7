// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API of the element-wise reductions and MPI_Op handles (conveyor/reduce.hpp, conveyor/mpi.hpp).
 * Conventions (status codes, conveyor_last_error) in conveyor/c/common.h.
 */
#ifndef CONVEYOR_C_REDUCE_H
#define CONVEYOR_C_REDUCE_H

#include "conveyor/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* inout[i] = in[i] op inout[i] for i < count (see conveyor/reduce.hpp). */
CONVEYOR_C_API int conveyor_reduce_local(const void* in, void* inout, size_t count, conveyor_dtype t, conveyor_op op);

/* out[i] = a[i] op b[i]; out may be a or b but must not partially overlap them. */
CONVEYOR_C_API int conveyor_reduce(const void* a, const void* b, void* out, size_t count, conveyor_dtype t,
                                   conveyor_op op);

/* A committed commutative MPI_Op backed by Conveyor's kernel; freed by
 * MPI_Finalize, do not free it yourself. */
CONVEYOR_C_API int conveyor_mpi_op(conveyor_op op, conveyor_dtype t, MPI_Op* result);

/* The MPI datatype Conveyor uses for t (see conveyor/mpi.hpp). */
CONVEYOR_C_API int conveyor_mpi_datatype(conveyor_dtype t, MPI_Datatype* result);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_C_REDUCE_H */
