// SPDX-License-Identifier: BSD-3-Clause
// The C API of the element-wise reductions (conveyor/c/reduce.h).
#include "capi/guarded.hpp"
#include "conveyor/c/reduce.h"
#include "conveyor/mpi.hpp"
#include "conveyor/reduce.hpp"

using namespace conveyor::capi;

extern "C" {

int conveyor_reduce_local(const void* in, void* inout, size_t count, conveyor_dtype t, conveyor_op o) {
  return guarded([&] { conveyor::reduce_local(in, inout, count, to_dtype(t), to_op(o)); });
}

int conveyor_reduce(const void* a, const void* b, void* out, size_t count, conveyor_dtype t, conveyor_op o) {
  return guarded([&] { conveyor::reduce(a, b, out, count, to_dtype(t), to_op(o)); });
}

int conveyor_mpi_op(conveyor_op o, conveyor_dtype t, MPI_Op* result) {
  if (!result) return null_result("conveyor_mpi_op");
  return guarded([&] { *result = conveyor::mpi_op(to_op(o), to_dtype(t)); });
}

int conveyor_mpi_datatype(conveyor_dtype t, MPI_Datatype* result) {
  if (!result) return null_result("conveyor_mpi_datatype");
  return guarded([&] { *result = conveyor::mpi_datatype(to_dtype(t)); });
}

}  // extern "C"
