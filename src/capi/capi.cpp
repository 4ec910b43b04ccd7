// The C API: thin wrappers that turn C++ exceptions into status codes plus a
// per-thread message.
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/mpi.hpp"
#include "conveyor/outer.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/sinkhorn.hpp"
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

// ---------------------------------------------------------------------------
// Sinkhorn
// ---------------------------------------------------------------------------
namespace {

namespace sk = conveyor::sinkhorn;

sk::options to_sinkhorn_options(const conveyor_sinkhorn_options* o, std::size_t rows, std::size_t cols) {
  sk::options opt;
  if (!o) return opt;
  opt.kind = static_cast<sk::variant>(o->variant);
  opt.tol = o->tol;
  opt.max_iter = o->max_iter;
  opt.threads = o->threads;
  opt.log_domain = o->log_domain != 0;
  opt.overlap = o->overlap != 0;
  opt.block = {o->mc, o->nc, o->mr, o->nr};
  if (o->init_u && rows) opt.init_u.assign(o->init_u, o->init_u + rows);
  if (o->init_v && cols) opt.init_v.assign(o->init_v, o->init_v + cols);
  opt.allreduce.algorithm = static_cast<conveyor::allreduce_algorithm>(o->allreduce_algorithm);
  return opt;
}

template <class T>
void copy_out(const std::vector<T>& from, void* to) {
  if (to && !from.empty()) std::memcpy(to, from.data(), from.size() * sizeof(T));
}

template <class R>
void fill_info(const R& res, double cost, conveyor_sinkhorn_info* info) {
  if (info) *info = {static_cast<int>(res.state), res.iterations, res.error, cost, res.time.total};
}

void require_float(conveyor_dtype t) {
  if (t != CONVEYOR_FLOAT32 && t != CONVEYOR_FLOAT64) {
    throw conveyor::error(conveyor::errc::unsupported, "sinkhorn: dtype must be float32 or float64");
  }
}

template <class T>
void scale_as(void* A, std::size_t rows, std::size_t cols, std::size_t ld, const void* r, const void* c, MPI_Comm comm,
              int in_place, const sk::options& opt, void* u, void* v, conveyor_sinkhorn_info* info) {
  const auto res = in_place ? sk::scale_in_place(static_cast<T*>(A), rows, cols, ld, static_cast<const T*>(r),
                                                 static_cast<const T*>(c), comm, opt)
                            : sk::scale(static_cast<const T*>(A), rows, cols, ld, static_cast<const T*>(r),
                                        static_cast<const T*>(c), comm, opt);
  copy_out(res.u, u);
  copy_out(res.v, v);
  fill_info(res, 0.0, info);
}

template <class T>
void transport_as(const void* C, std::size_t rows, std::size_t cols, std::size_t ld, const void* a, const void* b,
                  double eps, MPI_Comm comm, const sk::options& opt, void* f, void* g, void* plan, std::size_t plan_ld,
                  conveyor_sinkhorn_info* info) {
  const auto res = sk::transport(static_cast<const T*>(C), rows, cols, ld, static_cast<const T*>(a),
                                 static_cast<const T*>(b), eps, comm, opt, static_cast<T*>(plan), plan_ld);
  copy_out(res.f, f);
  copy_out(res.g, g);
  fill_info(res, res.cost, info);
}

}  // namespace

void conveyor_sinkhorn_options_init(conveyor_sinkhorn_options* options) {
  if (!options) return;
  const sk::options d;
  *options = conveyor_sinkhorn_options{static_cast<int>(d.kind), d.tol, d.max_iter, d.threads, d.log_domain ? 1 : 0,
                                       d.overlap ? 1 : 0, d.block.mc, d.block.nc, d.block.mr, d.block.nr,
                                       nullptr, nullptr, static_cast<int>(d.allreduce.algorithm)};
}

int conveyor_sinkhorn_scale(conveyor_dtype t, void* A, size_t rows, size_t cols, size_t ld, const void* r,
                            const void* c, MPI_Comm comm, int in_place, const conveyor_sinkhorn_options* options,
                            void* u, void* v, conveyor_sinkhorn_info* info) {
  return guarded([&] {
    require_float(t);
    const sk::options opt = to_sinkhorn_options(options, rows, cols);
    if (t == CONVEYOR_FLOAT64) scale_as<double>(A, rows, cols, ld, r, c, comm, in_place, opt, u, v, info);
    else scale_as<float>(A, rows, cols, ld, r, c, comm, in_place, opt, u, v, info);
  });
}

int conveyor_sinkhorn_transport(conveyor_dtype t, const void* C, size_t rows, size_t cols, size_t ld, const void* a,
                                const void* b, double eps, MPI_Comm comm, const conveyor_sinkhorn_options* options,
                                void* f, void* g, void* plan, size_t plan_ld, conveyor_sinkhorn_info* info) {
  return guarded([&] {
    require_float(t);
    const sk::options opt = to_sinkhorn_options(options, rows, cols);
    if (t == CONVEYOR_FLOAT64) transport_as<double>(C, rows, cols, ld, a, b, eps, comm, opt, f, g, plan, plan_ld, info);
    else transport_as<float>(C, rows, cols, ld, a, b, eps, comm, opt, f, g, plan, plan_ld, info);
  });
}

// ---------------------------------------------------------------------------
// Distributed sum of outer products
// ---------------------------------------------------------------------------
void conveyor_outer_options_init(conveyor_outer_options* options) {
  if (options) *options = conveyor_outer_options{CONVEYOR_OUTER_AUTO, CONVEYOR_ROW_MAJOR, 0, 0, CONVEYOR_ALLREDUCE_AUTO, 0};
}

int conveyor_outer_sum(const void* a, size_t N, const void* b, size_t M, void* G, size_t G_count, conveyor_dtype t,
                       MPI_Comm comm, const conveyor_outer_options* options, conveyor_outer_report* report) {
  return guarded([&] {
    conveyor::outer_options o;
    if (options) {
      o.algorithm = static_cast<conveyor::outer_algorithm>(options->algorithm);
      o.order = static_cast<conveyor::matrix_order>(options->order);
      o.distributed = options->distributed != 0;
      o.validate = options->validate != 0;
      o.allreduce.algorithm = static_cast<conveyor::allreduce_algorithm>(options->allreduce_algorithm);
      o.allreduce.ranks_per_node = options->ranks_per_node;
    }
    const conveyor::outer_report r = conveyor::outer_sum(a, N, b, M, G, G_count, to_dtype(t), comm, o);
    if (report) *report = {static_cast<int>(r.algorithm), r.first_row, r.rows, r.predicted_seconds};
  });
}
