// SPDX-License-Identifier: BSD-3-Clause
// The C API: thin wrappers that turn C++ exceptions into status codes plus a
// per-thread message.
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <new>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/mpi.hpp"
#include "conveyor/node_memory.hpp"
#include "conveyor/outer.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/sinkhorn_barycenter.hpp"
#include "conveyor/sinkhorn_points.hpp"
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
    g_last_error = std::string("conveyor: internal: ") + e.what();
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

int conveyor_node_alloc(size_t bytes, void** result) {
  if (!result) return null_result("conveyor_node_alloc");
  return guarded([&] { *result = conveyor::node_alloc(bytes); });
}

void conveyor_node_free(void* p) { conveyor::node_free(p); }

int conveyor_note_shared_window(MPI_Win win, int* noted) {
  if (!noted) return null_result("conveyor_note_shared_window");
  return guarded([&] { *noted = conveyor::note_shared_window(win) ? 1 : 0; });
}

void conveyor_forget_shared_window(MPI_Win win) { conveyor::forget_shared_window(win); }

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

void conveyor_allreduce_options_init(conveyor_allreduce_options* options) {
  if (options) *options = conveyor_allreduce_options{CONVEYOR_ALLREDUCE_AUTO, 0, 0, 0, 0, nullptr, nullptr};
}

int conveyor_allreduce(const void* send, void* recv, size_t count, conveyor_dtype t, conveyor_op o, MPI_Comm comm,
                       const conveyor_allreduce_options* options, conveyor_allreduce_report* report) {
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
      *report = conveyor_allreduce_report{static_cast<int>(r.algorithm), r.segment_bytes, r.nodes, r.predicted_seconds};
    }
  });
}

namespace {
// counts[0..P) of comm as a vector, converted inside the call's local checks.
std::vector<std::size_t> counts_of(conveyor::collective_call& call, const size_t* counts) {
  std::vector<std::size_t> v;
  call.check([&] {
    if (!counts) throw conveyor::error(conveyor::errc::invalid_argument, "counts is NULL");
    v.assign(counts, counts + call.size());
  });
  return v;
}
}  // namespace

int conveyor_reduce_scatter(const void* send, void* recv, const size_t* counts, conveyor_dtype t, conveyor_op o,
                            MPI_Comm comm, int validate) {
  return guarded([&] {
    conveyor::collective_call call("reduce_scatter", comm);
    const auto v = counts_of(call, counts);
    call.finish_front_end(validate != 0);
    conveyor::reduce_scatter(send, recv, v, to_dtype(t), to_op(o), comm, validate != 0);
  });
}

int conveyor_allgatherv(const void* send, void* recv, const size_t* counts, conveyor_dtype t, MPI_Comm comm,
                        int validate) {
  return guarded([&] {
    conveyor::collective_call call("allgatherv", comm);
    const auto v = counts_of(call, counts);
    call.finish_front_end(validate != 0);
    conveyor::allgatherv(send, recv, v, to_dtype(t), comm, validate != 0);
  });
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

// The fields both solvers' C options share with their C++ options: when to
// stop, threads, and the unbalanced terms.
template <class COptions, class Options>
void copy_shared_options(const COptions* o, Options& opt) {
  opt.tol = o->tol;
  opt.max_iter = o->max_iter;
  opt.norm = static_cast<sk::error_norm>(o->norm);
  opt.check_every = o->check_every;
  opt.threads = o->threads;
  opt.reg_m_rows = o->reg_m_rows;
  opt.reg_m_cols = o->reg_m_cols;
  opt.reg_type = static_cast<sk::reg_type>(o->reg_type);
  opt.stop = static_cast<sk::stop_rule>(o->stop);
}

sk::options to_sinkhorn_options(const conveyor_sinkhorn_options* o, std::size_t rows, std::size_t cols) {
  sk::options opt;
  if (!o) return opt;
  copy_shared_options(o, opt);
  opt.variant = static_cast<sk::variant>(o->variant);
  opt.log_domain = o->log_domain != 0;
  opt.overlap = o->overlap != 0;
  opt.block = {o->mc, o->nc, o->mr, o->nr};
  if (o->init_u && rows) opt.init_u.assign(o->init_u, o->init_u + rows);
  if (o->init_v && cols) opt.init_v.assign(o->init_v, o->init_v + cols);
  opt.allreduce.algorithm = static_cast<conveyor::allreduce_algorithm>(o->allreduce_algorithm);
  opt.allreduce.ranks_per_node = o->ranks_per_node;
  opt.columns_first = o->columns_first != 0;
  return opt;
}

template <class T>
void copy_out(const std::vector<T>& from, void* to) {
  if (to && !from.empty()) std::memcpy(to, from.data(), from.size() * sizeof(T));
}

// A solver's outcome to the caller's info (may be NULL).
template <class R>
void fill_info(const R& res, double cost, conveyor_sinkhorn_info* info) {
  if (info) *info = {static_cast<int>(res.state), res.iterations, res.error, cost, res.time.total};
}

// A solver's two vectors to the caller's buffers (either may be NULL), and its info.
template <class R, class V>
void deliver(const R& res, const V& first, const V& second, void* to_first, void* to_second, double cost,
             conveyor_sinkhorn_info* info) {
  copy_out(first, to_first);
  copy_out(second, to_second);
  fill_info(res, cost, info);
}

// The front end's part of a Sinkhorn call: the dtype chooses the C++ overload,
// so it is checked inside the call's local checks (the C++ entry joins the call),
// with the conversion of the options (`to_options()`).
template <class ToOptions>
auto solver_front_end(conveyor::collective_call& call, conveyor_dtype t, ToOptions&& to_options) {
  decltype(to_options()) opt;
  call.check([&] {
    if (t != CONVEYOR_FLOAT32 && t != CONVEYOR_FLOAT64) {
      throw conveyor::error(conveyor::errc::unsupported, "dtype must be float32 or float64");
    }
    opt = to_options();
  });
  call.finish_front_end();
  return opt;
}

template <class T>
void scale_as(void* A, std::size_t rows, std::size_t cols, std::size_t ld, const void* r, const void* c, MPI_Comm comm,
              int in_place, const sk::options& opt, void* u, void* v, conveyor_sinkhorn_info* info) {
  const auto res = in_place ? sk::scale_in_place(static_cast<T*>(A), rows, cols, ld, static_cast<const T*>(r),
                                                 static_cast<const T*>(c), comm, opt)
                            : sk::scale(static_cast<const T*>(A), rows, cols, ld, static_cast<const T*>(r),
                                        static_cast<const T*>(c), comm, opt);
  deliver(res, res.u, res.v, u, v, 0.0, info);
}

template <class T>
void transport_as(const void* C, std::size_t rows, std::size_t cols, std::size_t ld, const void* a, const void* b,
                  double eps, MPI_Comm comm, const sk::options& opt, void* log_u, void* log_v, void* plan,
                  std::size_t plan_ld, conveyor_sinkhorn_info* info) {
  const auto res = sk::transport(static_cast<const T*>(C), rows, cols, ld, static_cast<const T*>(a),
                                 static_cast<const T*>(b), eps, comm, opt, static_cast<T*>(plan), plan_ld);
  deliver(res, res.log_u, res.log_v, log_u, log_v, res.cost, info);
}

}  // namespace

void conveyor_sinkhorn_options_init(conveyor_sinkhorn_options* options) {
  if (!options) return;
  const sk::options d;
  *options = conveyor_sinkhorn_options{static_cast<int>(d.variant),
                                       d.tol,
                                       d.max_iter,
                                       d.threads,
                                       d.log_domain ? 1 : 0,
                                       d.overlap ? 1 : 0,
                                       d.block.mc,
                                       d.block.nc,
                                       d.block.mr,
                                       d.block.nr,
                                       nullptr,
                                       nullptr,
                                       static_cast<int>(d.allreduce.algorithm),
                                       d.allreduce.ranks_per_node,
                                       static_cast<int>(d.norm),
                                       d.check_every,
                                       d.columns_first ? 1 : 0,
                                       d.reg_m_rows,
                                       d.reg_m_cols,
                                       static_cast<int>(d.reg_type),
                                       static_cast<int>(d.stop)};
}

int conveyor_sinkhorn_scale(conveyor_dtype t, void* A, size_t rows, size_t cols, size_t ld, const void* r,
                            const void* c, MPI_Comm comm, int in_place, const conveyor_sinkhorn_options* options,
                            void* u, void* v, conveyor_sinkhorn_info* info) {
  return guarded([&] {
    conveyor::collective_call call(in_place ? "sinkhorn::scale_in_place" : "sinkhorn::scale", comm);
    const sk::options opt = solver_front_end(call, t, [&] { return to_sinkhorn_options(options, rows, cols); });
    if (t == CONVEYOR_FLOAT64) scale_as<double>(A, rows, cols, ld, r, c, comm, in_place, opt, u, v, info);
    else scale_as<float>(A, rows, cols, ld, r, c, comm, in_place, opt, u, v, info);
  });
}

int conveyor_sinkhorn_transport(conveyor_dtype t, const void* C, size_t rows, size_t cols, size_t ld, const void* a,
                                const void* b, double eps, MPI_Comm comm, const conveyor_sinkhorn_options* options,
                                void* log_u, void* log_v, void* plan, size_t plan_ld, conveyor_sinkhorn_info* info) {
  return guarded([&] {
    conveyor::collective_call call("sinkhorn::transport", comm);
    const sk::options opt = solver_front_end(call, t, [&] { return to_sinkhorn_options(options, rows, cols); });
    if (t == CONVEYOR_FLOAT64) {
      transport_as<double>(C, rows, cols, ld, a, b, eps, comm, opt, log_u, log_v, plan, plan_ld, info);
    } else {
      transport_as<float>(C, rows, cols, ld, a, b, eps, comm, opt, log_u, log_v, plan, plan_ld, info);
    }
  });
}

namespace {

sk::points_options to_points_options(const conveyor_points_options* o, std::size_t n, std::size_t m) {
  sk::points_options opt;
  if (!o) return opt;
  copy_shared_options(o, opt);
  opt.metric = static_cast<sk::metric>(o->metric);
  if (o->init_log_u) opt.init_log_u.assign(o->init_log_u, o->init_log_u + n);
  if (o->init_log_v) opt.init_log_v.assign(o->init_log_v, o->init_log_v + m);
  opt.eps_scaling = o->eps_scaling;
  opt.exchange = static_cast<sk::exchange>(o->exchange);
  return opt;
}

template <class T>
void points_as(const void* X, std::size_t n, const void* Y, std::size_t m, std::size_t dim, const void* a,
               const void* b, double eps, MPI_Comm comm, const sk::points_options& opt, void* log_u, void* log_v,
               conveyor_sinkhorn_info* info) {
  const auto res = sk::transport_points(static_cast<const T*>(X), n, static_cast<const T*>(Y), m, dim,
                                        static_cast<const T*>(a), static_cast<const T*>(b), eps, comm, opt);
  deliver(res, res.log_u, res.log_v, log_u, log_v, res.cost, info);
}

}  // namespace

void conveyor_points_options_init(conveyor_points_options* options) {
  if (!options) return;
  const sk::points_options d;
  *options = conveyor_points_options{static_cast<int>(d.metric),
                                     d.tol,
                                     d.max_iter,
                                     static_cast<int>(d.norm),
                                     d.check_every,
                                     d.threads,
                                     nullptr,
                                     nullptr,
                                     d.reg_m_rows,
                                     d.reg_m_cols,
                                     static_cast<int>(d.reg_type),
                                     static_cast<int>(d.stop),
                                     d.eps_scaling,
                                     static_cast<int>(d.exchange)};
}

int conveyor_sinkhorn_points(conveyor_dtype t, const void* X, size_t n, const void* Y, size_t m, size_t dim,
                             const void* a, const void* b, double eps, MPI_Comm comm,
                             const conveyor_points_options* options, void* log_u, void* log_v,
                             conveyor_sinkhorn_info* info) {
  return guarded([&] {
    conveyor::collective_call call("sinkhorn::transport_points", comm);
    const sk::points_options opt = solver_front_end(call, t, [&] { return to_points_options(options, n, m); });
    if (t == CONVEYOR_FLOAT64) points_as<double>(X, n, Y, m, dim, a, b, eps, comm, opt, log_u, log_v, info);
    else points_as<float>(X, n, Y, m, dim, a, b, eps, comm, opt, log_u, log_v, info);
  });
}

void conveyor_plan_apply_options_init(conveyor_plan_apply_options* options) {
  if (!options) return;
  const sk::plan_apply_options d;
  *options =
      conveyor_plan_apply_options{static_cast<int>(d.metric), d.transpose ? 1 : 0, d.threads, d.batch, d.cost_power};
}

namespace {

template <class T>
void apply_as(const void* X, std::size_t n, const void* Y, std::size_t m, std::size_t dim, const void* log_u,
              const void* log_v, double eps, const void* V, std::size_t k, void* out, MPI_Comm comm,
              const sk::plan_apply_options& opt) {
  sk::apply_plan_points(static_cast<const T*>(X), n, static_cast<const T*>(Y), m, dim, static_cast<const T*>(log_u),
                        static_cast<const T*>(log_v), eps, static_cast<const T*>(V), k, static_cast<T*>(out), comm,
                        opt);
}

}  // namespace

int conveyor_apply_plan_points(conveyor_dtype t, const void* X, size_t n, const void* Y, size_t m, size_t dim,
                               const void* log_u, const void* log_v, double eps, const void* V, size_t k, void* out,
                               MPI_Comm comm, const conveyor_plan_apply_options* options) {
  return guarded([&] {
    conveyor::collective_call call("sinkhorn::apply_plan_points", comm);
    const sk::plan_apply_options opt = solver_front_end(call, t, [&] {
      sk::plan_apply_options o;
      if (options) {
        o.metric = static_cast<sk::metric>(options->metric);
        o.transpose = options->transpose != 0;
        o.threads = options->threads;
        o.batch = options->batch;
        o.cost_power = options->cost_power;
      }
      return o;
    });
    if (t == CONVEYOR_FLOAT64) apply_as<double>(X, n, Y, m, dim, log_u, log_v, eps, V, k, out, comm, opt);
    else apply_as<float>(X, n, Y, m, dim, log_u, log_v, eps, V, k, out, comm, opt);
  });
}

void conveyor_barycenter_options_init(conveyor_barycenter_options* options) {
  if (!options) return;
  const sk::barycenter_options d;
  *options = conveyor_barycenter_options{d.tol,
                                         d.max_iter,
                                         d.check_every,
                                         d.first_check,
                                         d.log_domain ? 1 : 0,
                                         d.threads,
                                         static_cast<int>(d.allreduce.algorithm),
                                         d.allreduce.ranks_per_node};
}

namespace {

sk::barycenter_options to_barycenter_options(const conveyor_barycenter_options* o) {
  sk::barycenter_options opt;
  if (!o) return opt;
  opt.tol = o->tol;
  opt.max_iter = o->max_iter;
  opt.check_every = o->check_every;
  opt.first_check = o->first_check;
  opt.log_domain = o->log_domain != 0;
  opt.threads = o->threads;
  opt.allreduce.algorithm = static_cast<conveyor::allreduce_algorithm>(o->allreduce_algorithm);
  opt.allreduce.ranks_per_node = o->ranks_per_node;
  return opt;
}

template <class T>
void barycenter_as(const void* C, std::size_t rows, std::size_t dim, std::size_t ld, const void* A, std::size_t hists,
                   const void* weights, double eps, MPI_Comm comm, const sk::barycenter_options& opt, void* barycenter,
                   conveyor_sinkhorn_info* info) {
  const auto res = sk::barycenter(static_cast<const T*>(C), rows, dim, ld, static_cast<const T*>(A), hists,
                                  static_cast<const T*>(weights), eps, comm, opt);
  copy_out(res.barycenter, barycenter);
  fill_info(res, 0.0, info);
}

}  // namespace

int conveyor_sinkhorn_barycenter(conveyor_dtype t, const void* C, size_t rows, size_t dim, size_t ld, const void* A,
                                 size_t hists, const void* weights, double eps, MPI_Comm comm,
                                 const conveyor_barycenter_options* options, void* barycenter,
                                 conveyor_sinkhorn_info* info) {
  return guarded([&] {
    conveyor::collective_call call("sinkhorn::barycenter", comm);
    const sk::barycenter_options opt = solver_front_end(call, t, [&] { return to_barycenter_options(options); });
    if (t == CONVEYOR_FLOAT64)
      barycenter_as<double>(C, rows, dim, ld, A, hists, weights, eps, comm, opt, barycenter, info);
    else barycenter_as<float>(C, rows, dim, ld, A, hists, weights, eps, comm, opt, barycenter, info);
  });
}

// ---------------------------------------------------------------------------
// Redistribute
// ---------------------------------------------------------------------------
namespace rd = conveyor::redistribute;

struct conveyor_layout_s {
  rd::layout l;
};

// The plan keeps its own copies of the layouts: the caller's handles may go first.
struct conveyor_redistribution_s {
  std::unique_ptr<rd::plan> p;
};

namespace {

void require(bool ok, const char* what) {
  if (!ok) throw conveyor::error(conveyor::errc::invalid_argument, what);
}

int check_ndim(int ndim) {
  require(ndim >= 1 && ndim <= rd::max_dims, "ndim must be 1..8");
  return ndim;
}

conveyor_layout wrap(rd::layout l) { return new conveyor_layout_s{std::move(l)}; }

}  // namespace

int conveyor_layout_cartesian(int ndim, const int64_t* shape, const int* grid, void* local, int column_major_ranks,
                              const int64_t* local_strides, conveyor_layout* result) {
  if (!result) return null_result("conveyor_layout_cartesian");
  return guarded([&] {
    const auto n = static_cast<std::size_t>(check_ndim(ndim));
    require(shape && grid, "conveyor_layout_cartesian: shape and grid must not be NULL");
    std::vector<std::int64_t> strides;
    if (local_strides) strides.assign(local_strides, local_strides + n);
    *result = wrap(rd::layout::cartesian(std::vector<std::int64_t>(shape, shape + n), std::vector<int>(grid, grid + n),
                                         local, column_major_ranks != 0, std::move(strides)));
  });
}

void conveyor_block_cyclic_init(conveyor_block_cyclic* params) {
  if (params) *params = conveyor_block_cyclic{0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, nullptr, 1};
}

int conveyor_layout_block_cyclic(const conveyor_block_cyclic* params, conveyor_layout* result) {
  if (!result) return null_result("conveyor_layout_block_cyclic");
  return guarded([&] {
    require(params != nullptr, "conveyor_layout_block_cyclic: params is NULL");
    const conveyor_block_cyclic& c = *params;
    // Every field of the C struct, in the C++ struct's order (imb, inb: the C API
    // has no irregular first block; rank_of_grid: none).
    const rd::layout::block_cyclic_params p{
        c.M,    c.N,    c.mb,         c.nb,         0,       0,     c.prow, c.pcol, c.row_major_grid != 0,
        c.rsrc, c.csrc, c.row_offset, c.col_offset, c.local, c.lld, {}};
    *result = wrap(rd::layout::block_cyclic(p));
  });
}

int conveyor_layout_custom(int ndim, const int64_t* const* split_points, const int64_t* split_counts, const int* owners,
                           int64_t owner_count, conveyor_layout* result) {
  if (!result) return null_result("conveyor_layout_custom");
  return guarded([&] {
    const auto n = static_cast<std::size_t>(check_ndim(ndim));
    require(split_points && split_counts, "conveyor_layout_custom: split points are NULL");
    require(owner_count >= 0 && (owners || owner_count == 0), "conveyor_layout_custom: owners are NULL");
    std::vector<rd::axis_splits> splits;
    for (std::size_t d = 0; d < n; ++d) {
      require(split_counts[d] >= 0 && (split_points[d] || split_counts[d] == 0),
              "conveyor_layout_custom: split points are NULL");
      splits.push_back(rd::axis_splits::explicit_points(
          std::vector<std::int64_t>(split_points[d], split_points[d] + split_counts[d])));
    }
    *result = wrap(rd::layout::custom(std::move(splits), std::vector<int>(owners, owners + owner_count)));
  });
}

int conveyor_layout_set_storage(conveyor_layout layout, const int64_t* block, void* data, const int64_t* strides) {
  return guarded([&] {
    require(layout && block && strides, "conveyor_layout_set_storage: layout, block or strides is NULL");
    const auto n = static_cast<std::size_t>(layout->l.ndim());
    rd::block_index b{};
    std::copy(block, block + n, b.begin());
    layout->l.set_storage(b, data, std::vector<std::int64_t>(strides, strides + n));
  });
}

int conveyor_layout_ndim(conveyor_layout layout, int* result) {
  if (!result) return null_result("conveyor_layout_ndim");
  return guarded([&] {
    require(layout != nullptr, "conveyor_layout_ndim: layout is NULL");
    *result = layout->l.ndim();
  });
}

int conveyor_layout_local_blocks(conveyor_layout layout, int rank, int64_t* result) {
  if (!result) return null_result("conveyor_layout_local_blocks");
  return guarded([&] {
    require(layout != nullptr, "conveyor_layout_local_blocks: layout is NULL");
    *result = static_cast<int64_t>(layout->l.blocks_of(rank).size());
  });
}

void conveyor_layout_free(conveyor_layout layout) { delete layout; }

void conveyor_transform_init(conveyor_transform* t) {
  if (t) *t = conveyor_transform{nullptr, nullptr, nullptr, 0, 1.0, 0.0, 0.0, 0.0, CONVEYOR_FLOAT64};
}

void conveyor_redistribute_options_init(conveyor_redistribute_options* options) {
  const rd::plan_options d;
  if (options) {
    *options = conveyor_redistribute_options{static_cast<int>(d.transport), static_cast<int>(d.relabel),
                                             d.intra_node_cost, d.ranks_per_node, d.chunk_bytes};
  }
}

int conveyor_redistribution_create(const conveyor_transform* transforms, size_t count, MPI_Comm comm,
                                   const conveyor_redistribute_options* options, conveyor_redistribution* result) {
  if (result) *result = nullptr;
  return guarded([&] {
    // The conversion is the front end's part of the plan's collective call.
    conveyor::collective_call call("redistribute::plan", comm);
    auto out = std::make_unique<conveyor_redistribution_s>();
    std::vector<rd::transform> batch(count);
    rd::plan_options o;
    call.check([&] {
      require(result != nullptr, "result pointer is NULL");
      require(transforms || count == 0, "transforms is NULL");
      for (std::size_t i = 0; i < count; ++i) {
        const conveyor_transform& c = transforms[i];
        rd::transform& t = batch[i];
        if (c.src) t.src = &c.src->l;
        if (c.dst) t.dst = &c.dst->l;
        if (c.perm && c.src) t.perm.assign(c.perm, c.perm + c.src->l.ndim());
        t.conjugate = c.conjugate != 0;
        t.alpha = c.alpha;
        t.beta = c.beta;
        t.alpha_imag = c.alpha_imag;
        t.beta_imag = c.beta_imag;
        t.type = to_dtype(c.type);
      }
      if (options) {
        o.transport = static_cast<rd::transport>(options->transport);
        o.relabel = static_cast<rd::relabeling>(options->relabel);
        o.intra_node_cost = options->intra_node_cost;
        o.ranks_per_node = options->ranks_per_node;
        o.chunk_bytes = options->chunk_bytes;
      }
    });
    call.finish_front_end();
    out->p = std::make_unique<rd::plan>(batch, comm, o);
    *result = out.release();
  });
}

int conveyor_redistribution_execute(conveyor_redistribution plan) {
  return guarded([&] {
    require(plan != nullptr, "conveyor_redistribution_execute: plan is NULL");
    plan->p->execute();
  });
}

int conveyor_redistribution_transport(conveyor_redistribution plan, int* result) {
  if (!result) return null_result("conveyor_redistribution_transport");
  return guarded([&] {
    require(plan != nullptr, "conveyor_redistribution_transport: plan is NULL");
    *result = static_cast<int>(plan->p->transport());
  });
}

namespace {

// Copies one of a plan's vectors (`what` of the plan) to the caller's array of
// `capacity` entries.
template <class T>
int copy_out(const char* fn, conveyor_redistribution plan, T* out, size_t capacity,
             const std::vector<T>& (rd::plan::*what)() const, const char* needed) {
  return guarded([&] {
    require(plan && out, (std::string(fn) + ": plan or output array is NULL").c_str());
    const std::vector<T>& v = (plan->p.get()->*what)();
    require(capacity >= v.size(), (std::string(fn) + ": capacity below " + needed).c_str());
    std::copy(v.begin(), v.end(), out);
  });
}

}  // namespace

int conveyor_redistribution_volume(conveyor_redistribution plan, int64_t* matrix, size_t capacity) {
  return copy_out<std::int64_t>("conveyor_redistribution_volume", plan, matrix, capacity, &rd::plan::volume, "P * P");
}

int conveyor_redistribution_sigma(conveyor_redistribution plan, int* sigma, size_t capacity) {
  return copy_out<int>("conveyor_redistribution_sigma", plan, sigma, capacity, &rd::plan::sigma, "P");
}

int conveyor_redistribution_relabeled_destination(conveyor_redistribution plan, size_t k, conveyor_layout* result) {
  if (!result) return null_result("conveyor_redistribution_relabeled_destination");
  return guarded([&] {
    require(plan != nullptr, "conveyor_redistribution_relabeled_destination: plan is NULL");
    try {
      *result = wrap(plan->p->relabeled_destination(k));
    } catch (const std::out_of_range&) {
      throw conveyor::error(conveyor::errc::invalid_argument,
                            "conveyor_redistribution_relabeled_destination: no transform " + std::to_string(k));
    }
  });
}

void conveyor_redistribution_free(conveyor_redistribution plan) { delete plan; }

// ---------------------------------------------------------------------------
// Distributed sum of outer products
// ---------------------------------------------------------------------------
void conveyor_outer_options_init(conveyor_outer_options* options) {
  if (options)
    *options = conveyor_outer_options{CONVEYOR_OUTER_AUTO, CONVEYOR_ROW_MAJOR, 0, 0, CONVEYOR_ALLREDUCE_AUTO, 0};
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
