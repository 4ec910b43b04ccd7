// SPDX-License-Identifier: BSD-3-Clause
// The C API of Sinkhorn: dense, point clouds, barycenters (conveyor/c/sinkhorn.h).
#include <cstring>
#include <vector>

#include "capi/guarded.hpp"
#include "conveyor/c/sinkhorn.h"
#include "conveyor/contract.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/sinkhorn_barycenter.hpp"
#include "conveyor/sinkhorn_points.hpp"

using namespace conveyor::capi;

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
