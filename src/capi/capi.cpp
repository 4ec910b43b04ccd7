// The C API: thin wrappers that turn C++ exceptions into status codes plus a
// per-thread message.
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/mpi.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/version.hpp"

namespace {

thread_local std::string g_last_error;

template <class F>
int guarded(F&& body) noexcept {
  try {
    body();
    return CONVEYOR_SUCCESS;
  } catch (const conveyor::error& e) {
    g_last_error = e.what();
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    g_last_error = "conveyor: out of memory";
    return CONVEYOR_ERR_INTERNAL;
  } catch (const std::exception& e) {
    g_last_error = std::string("conveyor: ") + e.what();
    return CONVEYOR_ERR_INTERNAL;
  } catch (...) {
    g_last_error = "conveyor: unknown error";
    return CONVEYOR_ERR_INTERNAL;
  }
}

int null_result(const char* fn) {
  g_last_error = std::string("conveyor: ") + fn + ": result pointer is NULL";
  return CONVEYOR_ERR_INVALID_ARGUMENT;
}

// conveyor::dtype and conveyor::op have int as their fixed underlying type, so every
// int converts without undefined behaviour; the C++ API then rejects bad values.
conveyor::dtype to_dtype(conveyor_dtype t) { return static_cast<conveyor::dtype>(t); }
conveyor::op to_op(conveyor_op o) { return static_cast<conveyor::op>(o); }

}  // namespace

extern "C" {

const char* conveyor_version(void) { return CONVEYOR_VERSION_STRING; }

const char* conveyor_last_error(void) { return g_last_error.c_str(); }

size_t conveyor_dtype_size(conveyor_dtype t) {
  size_t size = 0;
  guarded([&] { size = conveyor::dtype_size(to_dtype(t)); });
  return size;
}

int conveyor_reduce_local(const void* in, void* inout, size_t count, conveyor_dtype t,
                          conveyor_op o) {
  return guarded([&] { conveyor::reduce_local(in, inout, count, to_dtype(t), to_op(o)); });
}

int conveyor_reduce(const void* a, const void* b, void* out, size_t count, conveyor_dtype t,
                    conveyor_op o) {
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

void conveyor_allreduce_options_init(conveyor_allreduce_options* options) {
  if (options) *options = conveyor_allreduce_options{CONVEYOR_ALLREDUCE_AUTO, 0, 0, 0, 0, nullptr, nullptr};
}

int conveyor_allreduce(const void* send, void* recv, size_t count, conveyor_dtype t, conveyor_op o,
                       MPI_Comm comm, const conveyor_allreduce_options* options,
                       conveyor_allreduce_report* report) {
  return guarded([&] {
    conveyor::allreduce_options opt;
    if (options) {
      opt.algorithm = static_cast<conveyor::allreduce_algorithm>(options->algorithm);
      opt.segment_bytes = options->segment_bytes;
      opt.ranks_per_node = options->ranks_per_node;
      opt.deterministic = options->deterministic != 0;
      opt.validate = options->validate != 0;
      if (options->on_chunk) {
        opt.on_chunk = [cb = options->on_chunk, data = options->user_data](std::size_t off, std::size_t n) {
          cb(off, n, data);
        };
      }
    }
    const conveyor::allreduce_report r = conveyor::allreduce(send, recv, count, to_dtype(t), to_op(o), comm, opt);
    if (report) {
      *report = conveyor_allreduce_report{static_cast<int>(r.algorithm), r.segment_bytes, r.nodes,
                                          r.predicted_seconds};
    }
  });
}

namespace {
// counts[0..P) of comm as a vector (P from the communicator).
std::vector<std::size_t> counts_of(const size_t* counts, MPI_Comm comm) {
  int size = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_size(comm, &size) != MPI_SUCCESS) {
    throw conveyor::error(conveyor::errc::invalid_argument, "invalid communicator");
  }
  if (!counts) throw conveyor::error(conveyor::errc::invalid_argument, "counts is NULL");
  return std::vector<std::size_t>(counts, counts + size);
}
}  // namespace

int conveyor_reduce_scatter(const void* send, void* recv, const size_t* counts, conveyor_dtype t,
                            conveyor_op o, MPI_Comm comm) {
  return guarded([&] { conveyor::reduce_scatter(send, recv, counts_of(counts, comm), to_dtype(t), to_op(o), comm); });
}

int conveyor_allgatherv(const void* send, void* recv, const size_t* counts, conveyor_dtype t, MPI_Comm comm) {
  return guarded([&] { conveyor::allgatherv(send, recv, counts_of(counts, comm), to_dtype(t), comm); });
}

const char* conveyor_simd_target(void) {
  static thread_local std::string name;
  if (guarded([&] { name = conveyor::simd_targets().active; }) != CONVEYOR_SUCCESS) name.clear();
  return name.c_str();
}

int conveyor_set_simd_target(const char* name) {
  return guarded([&] { conveyor::set_simd_target(name ? name : ""); });
}

}  // extern "C"
