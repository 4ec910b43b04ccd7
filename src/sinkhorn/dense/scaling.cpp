// SPDX-License-Identifier: BSD-3-Clause
// Matrix scaling: the fused kernel, the in-place iteration around a variant's walk
// (dense/walks/), and the public scale / scale_in_place entry points (steps and
// costs in dense/scaling.hpp).
#include "sinkhorn/dense/scaling.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/collectives.hpp"
#include "sinkhorn/dense/scaling_kernels.hpp"
#include "sinkhorn/dense/variant_table.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

template <class T>
scaling_result<T> make_result(iteration_log& log, std::vector<T> u, std::vector<T> v, const timing& t) {
  scaling_result<T> res;
  take_log(res, log, t);
  res.u = std::move(u);
  res.v = std::move(v);
  return res;
}

// ---------------------------------------------------------------------------
// Fused: A is read once per iteration and never written.
// ---------------------------------------------------------------------------
template <class T>
scaling_result<T> solve_fused(const run_context& ctx, const scaling_problem<T>& p, const options& o) {
  const auto& k = active<T>();
  const std::size_t rows = p.rows, cols = p.cols;
  const int nt =
      static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ctx.threads), std::max<std::size_t>(rows, 1)));
  std::vector<T> u = initial<T>(o.init_u, rows, T(1)), v = initial<T>(o.init_v, cols, T(1));
  std::vector<T> s_local(cols), s(cols), v_new(cols);
  std::vector<double> err_el(cols);
  std::vector<std::vector<T>> partial;
  iteration_log log;
  timing t;
  run_iterations(
      o, log, t, u,
      [&](int) {
        threaded_column_reduce(nt, rows, T(0), partial, s_local, k.add, [&](std::size_t lo, std::size_t hi, T* acc) {
          k.fused_rows(p.A + lo * p.ld, hi - lo, cols, p.ld, v.data(), p.r + lo, u.data() + lo, acc);
        });
        const double rows_done = now();
        // Column marginal of (u, v) is v_j s_j: the error of this iterate, and v_new = c / s.
        t.allreduce += allreduce_columns(ctx, o, s_local, s, [&](std::size_t off, std::size_t cnt) {
          for (std::size_t j = off; j < off + cnt; ++j) {
            v_new[j] = factor(p.c[j], s[j]);
            err_el[j] =
                error_term(static_cast<double>(v[j]) * static_cast<double>(s[j]), static_cast<double>(p.c[j]), o.norm);
          }
        });
        return iteration_step{rows_done, marginal_error(err_el, o.norm), all_finite(v_new)};
      },
      [&] { v.swap(v_new); });
  return make_result(log, std::move(u), std::move(v), t);
}

// ---------------------------------------------------------------------------
// In place: the iteration around a variant's walk (dense/walks/walk.hpp).
// ---------------------------------------------------------------------------
template <class T>
class in_place_solver {
 public:
  in_place_solver(const run_context& ctx, const scaling_problem<T>& p, const options& o, const walk<T>& w)
      : p_(p), o_(o), ctx_(ctx), w_(w), m_(matrix_of(p, o, ctx, partial_)) {}

  scaling_result<T> run() {
    const std::size_t rows = p_.rows, cols = p_.cols;
    std::vector<T> u = initial<T>(o_.init_u, rows, T(1)), v = initial<T>(o_.init_v, cols, T(1));
    if (!o_.init_u.empty() || !o_.init_v.empty()) prescale(u, v);
    std::vector<T> s_local(cols), s(cols), beta(cols);
    std::vector<double> err_el(cols);
    iteration_log log;
    timing t;
    run_iterations(
        o_, log, t, u,
        [&](int) {
          const double rows_done = w_.rows_and_sums(m_, u, s_local);
          t.allreduce += allreduce_columns(ctx_, o_, s_local, s, [&](std::size_t off, std::size_t cnt) {
            for (std::size_t j = off; j < off + cnt; ++j) {
              beta[j] = factor(p_.c[j], s[j]);
              err_el[j] = error_term(static_cast<double>(s[j]), static_cast<double>(p_.c[j]), o_.norm);
            }
            if (o_.overlap) w_.scale_columns(m_, beta.data(), off, cnt);
          });
          if (!o_.overlap) w_.scale_columns(m_, beta.data(), 0, cols);
          const bool finite = all_finite(beta);
          // A is rescaled already: v takes the factors on every iteration, the last included.
          if (finite) {
            for (std::size_t j = 0; j < cols; ++j) v[j] *= beta[j];
          }
          return iteration_step{rows_done, marginal_error(err_el, o_.norm), finite};
        },
        [] {});
    return make_result(log, std::move(u), std::move(v), t);
  }

 private:
  // What the walk reads and rescales (walk.hpp).
  static walk_matrix<T> matrix_of(const scaling_problem<T>& p, const options& o, const run_context& ctx,
                                  std::vector<std::vector<T>>& partial) {
    return {p.A_mut, p.rows, p.cols, p.ld, p.r, active<T>(), ctx.threads, o.block, partial};
  }

  void prescale(const std::vector<T>& u, const std::vector<T>& v) {
    const auto rows = static_cast<std::ptrdiff_t>(p_.rows);
#pragma omp parallel for num_threads(m_.threads) schedule(static)
    for (std::ptrdiff_t ii = 0; ii < rows; ++ii) {
      const auto i = static_cast<std::size_t>(ii);
      m_.k.scale_columns_block(m_.row(i), p_.ld, 1, p_.cols, v.data(), 1, p_.cols);
      m_.k.scale(m_.row(i), u[i], p_.cols);
    }
  }

  const scaling_problem<T>& p_;
  const options& o_;
  const run_context& ctx_;
  const walk<T>& w_;
  std::vector<std::vector<T>> partial_;
  walk_matrix<T> m_;
};

// ---------------------------------------------------------------------------
// Input validation (scale / scale_in_place): every rank gets the same error.
// ---------------------------------------------------------------------------
template <class T>
void validate_data(const run_context& ctx, const scaling_problem<T>& p, const char* what) {
  const auto& k = active<T>();
  const std::size_t rows = p.rows, cols = p.cols;
  agree_on_data(ctx, what, [&] {
    check_marginal(p.r, rows, "r", ctx.first_row);
    check_marginal(p.c, cols, "c", 0);
    // One pass over A: entries finite and >= 0, and empty rows whose marginal is positive.
    std::size_t first_bad = rows;  // row index of the first bad entry or empty row
    const auto n = static_cast<std::ptrdiff_t>(rows);
#pragma omp parallel for num_threads(ctx.threads) schedule(static) reduction(min : first_bad)
    for (std::ptrdiff_t ii = 0; ii < n; ++ii) {
      const auto i = static_cast<std::size_t>(ii);
      const T* a = p.A + i * p.ld;
      bool ok = true;
      for (std::size_t j = 0; j < cols && ok; ++j) ok = std::isfinite(a[j]) && a[j] >= 0;
      if (!ok || (p.r[i] > 0 && !(k.sum(a, cols) > 0))) first_bad = std::min(first_bad, i);
    }
    if (first_bad == rows) return;
    const T* a = p.A + first_bad * p.ld;
    const auto bad = std::find_if(a, a + cols, [](T x) { return !(std::isfinite(x) && x >= 0); });
    const std::string where = std::to_string(ctx.first_row + first_bad);
    throw error(errc::invalid_argument,
                bad != a + cols ? "A[" + where + "][" + std::to_string(bad - a) + "] = " +
                                      std::to_string(static_cast<double>(*bad)) + " (entries must be finite and >= 0)"
                                : "row " + where + " is zero but its marginal r[" + where + "] is positive");
  });

  // Column sums over all ranks: an empty column with a positive marginal has no solution.
  std::vector<T> local(cols, T(0)), global(cols);
  for (std::size_t i = 0; i < rows; ++i) k.add(local.data(), p.A + i * p.ld, cols);
  if (cols) allreduce(local.data(), global.data(), cols, op::sum, ctx.comm);
  for (std::size_t j = 0; j < cols; ++j) {
    if (p.c[j] > 0 && !(global[j] > 0)) {
      throw error(errc::invalid_argument, std::string(what) + ": column " + std::to_string(j) +
                                              " is zero but its marginal c[" + std::to_string(j) + "] is positive");
    }
  }
  double row_mass = 0, column_mass = 0;
  for (std::size_t i = 0; i < rows; ++i) row_mass += static_cast<double>(p.r[i]);
  for (std::size_t j = 0; j < cols; ++j) column_mass += static_cast<double>(p.c[j]);
  check_masses(ctx, row_mass, column_mass, sizeof(T) == 4, what);
}

template <class T>
scaling_result<T> scale_entry(const T* A, T* A_mut, std::size_t rows, std::size_t cols, std::size_t ld, const T* r,
                              const T* c, MPI_Comm comm, const options& o, bool in_place, const char* what) {
  const double t0 = now();
  const call_shape shape{what, rows, cols, ld, A == nullptr, r == nullptr, c == nullptr, in_place, false};
  collective_call call(what, comm);
  const run_context ctx = start(call, shape, dtype_of_v<T>, o, 0);
  const scaling_problem<T> p{A, A_mut, in_place, rows, cols, ld, r, c};
  if (ctx.total_rows == 0 || cols == 0) {  // nothing to scale
    iteration_log log;
    log.state = status::converged;
    log.error = 0;
    scaling_result<T> res = make_result(log, std::vector<T>(rows, T(1)), std::vector<T>(cols, T(1)), timing{});
    res.threads = ctx.threads;
    return res;
  }
  validate_data(ctx, p, what);
  return finished(solve_scaling(ctx, p, o), ctx, t0);
}

// options.columns_first (POT's order): v = c / (A^T u0) over all ranks, with u0 =
// init_u or ones; the solvers then start from (u0, v) with a row update. One
// read of A and one allreduce of N elements.
template <class T>
std::vector<double> first_column_update(const run_context& ctx, const scaling_problem<T>& p, const options& o) {
  const auto& k = active<T>();
  const std::vector<T> u = initial<T>(o.init_u, p.rows, T(1));
  const int nt =
      static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ctx.threads), std::max<std::size_t>(p.rows, 1)));
  std::vector<T> s_local(p.cols), s(p.cols);
  std::vector<std::vector<T>> partial;
  threaded_column_reduce(nt, p.rows, T(0), partial, s_local, k.add, [&](std::size_t lo, std::size_t hi, T* acc) {
    for (std::size_t i = lo; i < hi; ++i) k.axpy(acc, u[i], p.A + i * p.ld, p.cols);
  });
  allreduce_columns(ctx, o, s_local, s, [](std::size_t, std::size_t) {});
  std::vector<double> v(p.cols);
  for (std::size_t j = 0; j < p.cols; ++j) v[j] = static_cast<double>(factor(p.c[j], s[j]));
  return v;
}

}  // namespace

template <class T>
scaling_result<T> solve_scaling(const run_context& ctx, const scaling_problem<T>& p, const options& o) {
  if (o.columns_first) {
    options from_columns = o;
    from_columns.columns_first = false;
    from_columns.init_v = first_column_update(ctx, p, o);
    if (from_columns.init_u.empty()) from_columns.init_u.assign(p.rows, 1.0);
    return solve_scaling(ctx, p, from_columns);
  }
  if (const walk<T>* w = walk_of<T>(o.variant); p.in_place && w) return in_place_solver<T>(ctx, p, o, *w).run();
  scaling_result<T> res = solve_fused(ctx, p, o);
  if (p.in_place) {  // scale_in_place with the fused kernel: write diag(u) A diag(v) once
    const auto& k = active<T>();
    const auto rows = static_cast<std::ptrdiff_t>(p.rows);
#pragma omp parallel for num_threads(ctx.threads) schedule(static)
    for (std::ptrdiff_t ii = 0; ii < rows; ++ii) {
      const auto i = static_cast<std::size_t>(ii);
      T* a = p.A_mut + i * p.ld;
      k.scale_columns_block(a, p.ld, 1, p.cols, res.v.data(), 1, p.cols);
      k.scale(a, res.u[i], p.cols);
    }
  }
  return res;
}

template scaling_result<float> solve_scaling(const run_context&, const scaling_problem<float>&, const options&);
template scaling_result<double> solve_scaling(const run_context&, const scaling_problem<double>&, const options&);

}  // namespace conveyor::sinkhorn::detail

namespace conveyor::sinkhorn {

scaling_result<double> scale(const double* A, std::size_t rows, std::size_t cols, std::size_t ld, const double* r,
                             const double* c, MPI_Comm comm, const options& opts) {
  return detail::scale_entry<double>(A, nullptr, rows, cols, ld, r, c, comm, opts, false, "sinkhorn::scale");
}
scaling_result<float> scale(const float* A, std::size_t rows, std::size_t cols, std::size_t ld, const float* r,
                            const float* c, MPI_Comm comm, const options& opts) {
  return detail::scale_entry<float>(A, nullptr, rows, cols, ld, r, c, comm, opts, false, "sinkhorn::scale");
}
scaling_result<double> scale_in_place(double* A, std::size_t rows, std::size_t cols, std::size_t ld, const double* r,
                                      const double* c, MPI_Comm comm, const options& opts) {
  return detail::scale_entry<double>(A, A, rows, cols, ld, r, c, comm, opts, true, "sinkhorn::scale_in_place");
}
scaling_result<float> scale_in_place(float* A, std::size_t rows, std::size_t cols, std::size_t ld, const float* r,
                                     const float* c, MPI_Comm comm, const options& opts) {
  return detail::scale_entry<float>(A, A, rows, cols, ld, r, c, comm, opts, true, "sinkhorn::scale_in_place");
}

}  // namespace conveyor::sinkhorn
