// SPDX-License-Identifier: BSD-3-Clause
// Conveyor's kernels as MPI user-defined operations.
//
// MPI passes a user function no context pointer, so each (op, dtype) pair gets its
// own function: user_fn<I> for I = op * dtype_count + dtype, instantiated for all
// pairs by an index_sequence. The ops and the 16-bit float datatypes live in a
// registry that an attribute on MPI_COMM_SELF tears down: MPI deletes that
// communicator's attributes first thing in MPI_Finalize, while freeing is legal.
#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "conveyor/mpi.hpp"
#include "core/checks.hpp"
#include "reduce/kernel_table.hpp"

namespace conveyor {
namespace {

void require_mpi_active(const char* what) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    throw error(errc::mpi, std::string(what) + ": MPI is " + (finalized ? "already finalized" : "not initialized"));
  }
}

struct registry {
  std::mutex mutex;
  MPI_Op ops[op_count][dtype_count];
  // float16, bfloat16; atomic so the MPI user functions can read them without the lock.
  std::atomic<MPI_Datatype> half_types[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  int keyval = MPI_KEYVAL_INVALID;

  registry() {
    for (auto& row : ops)
      for (auto& o : row) o = MPI_OP_NULL;
  }
};

registry& reg() {
  static registry r;
  return r;
}

// Runs in MPI_Finalize (deletion of MPI_COMM_SELF's attributes).
int free_at_finalize(MPI_Comm, int, void*, void*) {
  registry& r = reg();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& row : r.ops) {
    for (auto& o : row) {
      if (o != MPI_OP_NULL) MPI_Op_free(&o);
    }
  }
  for (auto& t : r.half_types) {
    MPI_Datatype dt = t.exchange(MPI_DATATYPE_NULL);
    if (dt != MPI_DATATYPE_NULL) MPI_Type_free(&dt);
  }
  return MPI_SUCCESS;
}

// Caller holds r.mutex.
void ensure_finalize_hook(registry& r) {
  if (r.keyval != MPI_KEYVAL_INVALID) return;
  int keyval = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_at_finalize, &keyval, nullptr) != MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr) != MPI_SUCCESS) {
    throw error(errc::mpi, "could not register Conveyor's MPI_Finalize cleanup");
  }
  r.keyval = keyval;
}

template <int I>
void user_fn(void* in, void* inout, int* len, MPI_Datatype* datatype) {
  constexpr op o = static_cast<op>(I / dtype_count);
  constexpr dtype t = static_cast<dtype>(I % dtype_count);
  const reduction::detail::kernel_fn f =
      reduction::detail::active_kernels().fn[static_cast<int>(o)][static_cast<int>(t)];
  std::size_t count = static_cast<std::size_t>(*len);
  if (*datatype != mpi_datatype(t)) {
    // A derived type of contiguous elements (e.g. a vector of 4 floats): count its
    // bytes. Anything else cannot be reduced element-wise by this op.
    int size = 0;
    MPI_Type_size(*datatype, &size);
    const std::size_t elem = dtype_size(t);
    if (size <= 0 || static_cast<std::size_t>(size) % elem != 0) {
      std::fprintf(stderr,
                   "conveyor: MPI_Op for (%s, %s) was given an MPI datatype of %d bytes, "
                   "not a multiple of the %zu-byte element\n",
                   std::string(op_name(o)).c_str(), std::string(dtype_name(t)).c_str(), size, elem);
      MPI_Abort(MPI_COMM_WORLD, 1);
      return;
    }
    count *= static_cast<std::size_t>(size) / elem;
  }
  if (count) f(in, inout, inout, count);  // inout = in op inout
}

using user_fn_ptr = void (*)(void*, void*, int*, MPI_Datatype*);

template <int... I>
constexpr auto make_user_fns(std::integer_sequence<int, I...>) {
  return std::array<user_fn_ptr, sizeof...(I)>{&user_fn<I>...};
}

constexpr auto kUserFns = make_user_fns(std::make_integer_sequence<int, op_count * dtype_count>());

}  // namespace

MPI_Datatype mpi_datatype(dtype t) {
  detail::check_enum(t);
  switch (t) {
    case dtype::int8:
      return MPI_INT8_T;
    case dtype::int16:
      return MPI_INT16_T;
    case dtype::int32:
      return MPI_INT32_T;
    case dtype::int64:
      return MPI_INT64_T;
    case dtype::uint8:
      return MPI_UINT8_T;
    case dtype::uint16:
      return MPI_UINT16_T;
    case dtype::uint32:
      return MPI_UINT32_T;
    case dtype::uint64:
      return MPI_UINT64_T;
    case dtype::float32:
      return MPI_FLOAT;
    case dtype::float64:
      return MPI_DOUBLE;
    case dtype::complex64:
      return MPI_C_FLOAT_COMPLEX;
    case dtype::complex128:
      return MPI_C_DOUBLE_COMPLEX;
    case dtype::float16:
    case dtype::bfloat16:
      break;
  }
  registry& r = reg();
  const int which = t == dtype::float16 ? 0 : 1;
  if (MPI_Datatype dt = r.half_types[which].load(); dt != MPI_DATATYPE_NULL) return dt;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.half_types[which].load() == MPI_DATATYPE_NULL) {
    require_mpi_active("mpi_datatype");
    ensure_finalize_hook(r);
    MPI_Datatype dt;
    if (MPI_Type_contiguous(2, MPI_BYTE, &dt) != MPI_SUCCESS || MPI_Type_commit(&dt) != MPI_SUCCESS) {
      throw error(errc::mpi, "could not create the MPI datatype for " + std::string(dtype_name(t)));
    }
    MPI_Type_set_name(dt, which == 0 ? "conveyor_float16" : "conveyor_bfloat16");
    r.half_types[which].store(dt);
  }
  return r.half_types[which].load();
}

MPI_Op mpi_builtin_op(op o) {
  detail::check_enum(o);
  static_assert(static_cast<int>(op::logaddexp) == op_count - 1, "the MPI ops come first");
  if (o == op::logaddexp) throw error(errc::unsupported, "mpi_builtin_op: MPI has no logaddexp; use mpi_op");
  static const MPI_Op kBuiltin[op_count - 1] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_BAND,
                                                MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
  return kBuiltin[static_cast<int>(o)];
}

MPI_Op mpi_op(op o, dtype t) {
  reduction::detail::find_kernel(o, t);                              // validates and throws for unsupported pairs
  if (t == dtype::float16 || t == dtype::bfloat16) mpi_datatype(t);  // created before use
  registry& r = reg();
  std::lock_guard<std::mutex> lock(r.mutex);
  MPI_Op& slot = r.ops[static_cast<int>(o)][static_cast<int>(t)];
  if (slot == MPI_OP_NULL) {
    require_mpi_active("mpi_op");
    ensure_finalize_hook(r);
    const int index = static_cast<int>(o) * dtype_count + static_cast<int>(t);
    if (MPI_Op_create(kUserFns[index], /*commute=*/1, &slot) != MPI_SUCCESS) {
      slot = MPI_OP_NULL;
      throw error(errc::mpi, "MPI_Op_create failed");
    }
  }
  return slot;
}

}  // namespace conveyor
