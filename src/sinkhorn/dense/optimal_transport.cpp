// SPDX-License-Identifier: BSD-3-Clause
// Entropic optimal transport: the plain kernel (scaling of K = exp(-C/eps) by the
// shared iteration in dense/scaling.cpp) and the log-domain iteration on potentials.
//
// Log domain, on the log scalings log_u = f / eps, log_v = g / eps (the point-cloud
// solver's units: no eps multiplied in and divided out again), per iteration one
// read of C (rows block-partitioned):
//   row i:  x_j = log_v_j - C_ij / eps, m_i = max_j x_j, e_j = exp(x_j - m_i) (a row
//           buffer), log_u_i = log a_i - m_i - log sum_j e_j; the plan row is then
//           P_ij = a_i e_j / sum_j e_j, added into the local column sums.
//   allreduce(column sums) [N elements]; error = sum_j |colsum_j - b_j|;
//   log_v_j += log b_j - log colsum_j.
// One exp per element, and every term is <= a_i, so nothing overflows. When a
// column sum underflows to 0 (tiny eps, early iterations) the iteration falls back
// to an exact column log-sum-exp for that iteration: two more passes over C (each
// rank's column max, then its sums of exp(x - max)) and one allreduce(logaddexp)
// of N elements (global_column_lse).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "runtime/context.hpp"
#include "runtime/large_array.hpp"
#include "sinkhorn/run_context.hpp"
#include "sinkhorn/dense/scaling_kernels.hpp"
#include "sinkhorn/dense/scaling.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

constexpr const char* kWhat = "sinkhorn::transport";

template <class T>
struct ot_problem {
  const T* C = nullptr;
  std::size_t rows = 0, cols = 0, ld = 0;
  const T* a = nullptr;
  const T* b = nullptr;
  double eps = 1;
  T* plan = nullptr;
  std::size_t plan_ld = 0;
};

template <class T>
T* row_of(T* base, std::size_t i, std::size_t ld) {
  return base + i * ld;
}

double sum_over_ranks(const run_context& ctx, double local) {
  double total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, ctx.comm);
  return total;
}

// ---------------------------------------------------------------------------
// Log domain
// ---------------------------------------------------------------------------
template <class T>
class log_solver {
 public:
  log_solver(const run_context& ctx, const ot_problem<T>& p, const options& o)
      : ctx_(ctx),
        p_(p),
        o_(o),
        k_(active<T>()),
        inv_eps_(static_cast<T>(1 / p.eps)),
        rows_(update_for(o.reg_m_rows, p.eps, o.reg_type)),
        cols_(update_for(o.reg_m_cols, p.eps, o.reg_type)) {}

  transport_result<T> run() {
    const std::size_t rows = p_.rows, cols = p_.cols;
    log_u_ = initial<T>(o_.init_u, rows, T(0));
    log_v_ = initial<T>(o_.init_v, cols, T(0));
    for (std::size_t j = 0; j < cols; ++j) {
      if (p_.b[j] == 0) log_v_[j] = -std::numeric_limits<T>::infinity();  // an empty column stays empty
    }
    if (o_.columns_first) exact_column_update(log_v_);  // POT's order: v from u first
    std::vector<T> s_local(cols), s(cols), log_v_new(cols);
    std::vector<double> err_el(cols);
    iteration_log log;
    timing t;
    std::vector<T> log_u_before;
    run_iterations(
        o_, log, t, log_u_,
        [&](int) {
          if (o_.stop == stop_rule::change) log_u_before = log_u_;
          row_pass(s_local);
          const double rows_done = now();
          t.allreduce += allreduce_columns(ctx_, o_, s_local, s, [&](std::size_t off, std::size_t cnt) {
            for (std::size_t j = off; j < off + cnt; ++j) {
              err_el[j] = error_term(static_cast<double>(s[j]), static_cast<double>(p_.b[j]), o_.norm);
            }
          });
          double err = marginal_error(err_el, o_.norm);
          bool underflow = false;
          for (std::size_t j = 0; j < cols; ++j) {
            underflow |= p_.b[j] > 0 && !(s[j] > 0 && std::isfinite(s[j]));
          }
          if (std::isfinite(err)) {
            if (underflow) {
              exact_column_update(log_v_new);
            } else {
              for (std::size_t j = 0; j < cols; ++j) log_v_new[j] = p_.b[j] == 0 ? log_v_[j] : column_from_sum(j, s[j]);
            }
            if (o_.stop == stop_rule::change) err = relative_change(log_u_before, log_v_new);
          }
          bool finite = std::isfinite(err);
          for (std::size_t j = 0; j < cols && finite; ++j) finite = p_.b[j] == 0 || std::isfinite(log_v_new[j]);
          // stop_rule::change measures the whole iterate (u, v new): it is kept at once,
          // the last one included. (marginal: the column update waits for accept().)
          if (measures_whole_iterate() && finite) log_v_.swap(log_v_new);
          return iteration_step{rows_done, err, finite};
        },
        [&] {
          if (!measures_whole_iterate()) log_v_.swap(log_v_new);
        });
    transport_result<T> res;
    take_log(res, log, t);
    res.cost = cost_and_plan();
    res.log_u = std::move(log_u_);
    res.log_v = std::move(log_v_);
    return res;
  }

 private:
  int threads() const {
    return static_cast<int>(
        std::min<std::size_t>(static_cast<std::size_t>(ctx_.threads), std::max<std::size_t>(p_.rows, 1)));
  }
  const T* cost_row(std::size_t i) const { return p_.C + i * p_.ld; }

  // log_u from log_v, and the column sums of the plan (u, v) into s_local. A row whose
  // log-sum-exp is not finite poisons the sums with NaN so every rank sees it.
  void row_pass(std::vector<T>& s_local) {
    const std::size_t cols = p_.cols;
    buffers_.resize(static_cast<std::size_t>(threads()));
    threaded_column_reduce(threads(), p_.rows, T(0), partial_, s_local, k_.add,
                           [&](std::size_t lo, std::size_t hi, T* acc) {
                             auto& e = buffers_[static_cast<std::size_t>(omp_get_thread_num())];
                             e.resize(cols);
                             for (std::size_t i = lo; i < hi; ++i) {
                               if (p_.a[i] == 0) {
                                 log_u_[i] = -std::numeric_limits<T>::infinity();
                                 continue;
                               }
                               T m = 0;
                               const T rs = k_.exp_row(cost_row(i), log_v_.data(), inv_eps_, e.data(), cols, &m);
                               if (!(rs > 0) || !std::isfinite(m)) {
                                 log_u_[i] = std::numeric_limits<T>::quiet_NaN();
                                 if (cols) acc[0] = std::numeric_limits<T>::quiet_NaN();
                                 continue;
                               }
                               k_.axpy(acc, row_update(i, m, rs), e.data(), cols);
                             }
                           });
  }

  // log_v_new_j = log b_j - LSE_i (log_u_i - C_ij / eps), computed exactly.
  void exact_column_update(std::vector<T>& log_v_new) {
    const std::size_t cols = p_.cols;
    const auto live = [&](std::size_t i) { return p_.a[i] > 0; };
    std::vector<T> lse(cols);
    global_column_lse(
        threads(), p_.rows, partial_, lse, ctx_.comm, o_.allreduce,
        [&](std::size_t lo, std::size_t hi, T* acc) {
          for (std::size_t i = lo; i < hi; ++i) {
            if (live(i)) k_.column_max(acc, cost_row(i), log_u_[i], inv_eps_, cols);
          }
        },
        [&](std::size_t lo, std::size_t hi, const T* m, T* acc) {
          for (std::size_t i = lo; i < hi; ++i) {
            if (live(i)) k_.column_expsum(acc, cost_row(i), log_u_[i], inv_eps_, m, cols);
          }
        });
    for (std::size_t j = 0; j < cols; ++j) {
      log_v_new[j] =
          p_.b[j] == 0 ? -std::numeric_limits<T>::infinity() : potential(cols_, p_.b[j], static_cast<double>(lse[j]));
    }
  }

  // weight_power log w - lse_power lse: one side's new log scaling.
  T potential(const side_update& u, T w, double lse) const {
    if (u.constraint()) return std::log(w) - static_cast<T>(lse);
    return static_cast<T>(u.weight_power * std::log(static_cast<double>(w)) - u.lse_power * lse);
  }

  // Row i's new log_u from the log-sum-exp m + log rs of its row pass, and the
  // weight of the row's exp(x_j - m) in its plan row: exp(log_u_i + m) (a_i / rs
  // for a constraint, the same quantity without the exp and log).
  T row_update(std::size_t i, T m, T rs) {
    if (rows_.constraint()) {
      log_u_[i] = std::log(p_.a[i]) - m - std::log(rs);
      return p_.a[i] / rs;
    }
    const double lse = static_cast<double>(m) + std::log(static_cast<double>(rs));
    log_u_[i] = potential(rows_, p_.a[i], lse);
    return static_cast<T>(std::exp(static_cast<double>(log_u_[i]) + static_cast<double>(m)));
  }

  // log_v_j's update from the column sum s_j of the plan (u new, v old): the
  // column's log-sum-exp is log s_j - log_v_j.
  T column_from_sum(std::size_t j, T s) const {
    if (cols_.constraint()) return log_v_[j] + (std::log(p_.b[j]) - std::log(s));
    return potential(cols_, p_.b[j], std::log(static_cast<double>(s)) - static_cast<double>(log_v_[j]));
  }

  // stop_rule::change (POT's unbalanced test): the relative change of the
  // scalings u and v (divided by a and b for reg_type kl, as POT's kernel holds
  // a b^T), u's maxima taken over the ranks.
  double relative_change(const std::vector<T>& log_u_before, const std::vector<T>& log_v_new) const {
    const bool kl = o_.reg_type == reg_type::kl;
    const auto scaling = [&](T log_scaling, T weight) {
      return std::exp(static_cast<double>(log_scaling) - (kl ? std::log(static_cast<double>(weight)) : 0.0));
    };
    change_terms u, v;
    for (std::size_t i = 0; i < p_.rows; ++i) {
      if (p_.a[i] > 0) u.add(scaling(log_u_[i], p_.a[i]), scaling(log_u_before[i], p_.a[i]));
    }
    for (std::size_t j = 0; j < p_.cols; ++j) {
      if (p_.b[j] > 0) v.add(scaling(log_v_new[j], p_.b[j]), scaling(log_v_[j], p_.b[j]));
    }
    double local[3] = {u.diff, u.now, u.before}, global[3];
    conveyor::detail::check_mpi(MPI_Allreduce(local, global, 3, MPI_DOUBLE, MPI_MAX, ctx_.comm), "MPI_Allreduce");
    const change_terms all_u{global[0], global[1], global[2]};
    return 0.5 * (all_u.relative() + v.relative());
  }

  bool measures_whole_iterate() const { return o_.stop == stop_rule::change; }

  // The weight of row i's exp(x_j - m) in its plan row, exp(log_u_i + m): log_u
  // the returned one (for the marginal rule, a row update from log_v itself, which
  // for a constraint is a_i / rs).
  T plan_weight(std::size_t i, T m, T rs) const {
    if (rows_.constraint() && !measures_whole_iterate()) return p_.a[i] / rs;
    return static_cast<T>(std::exp(static_cast<double>(log_u_[i]) + static_cast<double>(m)));
  }

  // <P, C> over all ranks for the final (u, v); writes the plan rows if asked.
  double cost_and_plan() {
    const std::size_t cols = p_.cols;
    double local = 0;
    const auto rows = static_cast<std::ptrdiff_t>(p_.rows);
    buffers_.resize(static_cast<std::size_t>(ctx_.threads));
#pragma omp parallel for num_threads(ctx_.threads) schedule(static) reduction(+ : local)
    for (std::ptrdiff_t ii = 0; ii < rows; ++ii) {
      const auto i = static_cast<std::size_t>(ii);
      auto& e = buffers_[static_cast<std::size_t>(omp_get_thread_num())];
      e.resize(cols);
      T m = 0, w = 0;
      if (p_.a[i] > 0) {
        const T rs = k_.exp_row(cost_row(i), log_v_.data(), inv_eps_, e.data(), cols, &m);
        w = rs > 0 ? plan_weight(i, m, rs) : T(0);
      }
      if (w > 0) local += static_cast<double>(w) * static_cast<double>(k_.dot(e.data(), cost_row(i), cols));
      if (p_.plan) {
        T* out = row_of(p_.plan, i, p_.plan_ld);
        if (w > 0) {
          std::copy(e.begin(), e.end(), out);
          k_.scale(out, w, cols);
        } else {
          std::fill(out, out + cols, T(0));
        }
      }
    }
    return sum_over_ranks(ctx_, local);
  }

  const run_context& ctx_;
  const ot_problem<T>& p_;
  const options& o_;
  const kernels<T>& k_;
  T inv_eps_;
  side_update rows_, cols_;
  std::vector<T> log_u_, log_v_;
  std::vector<std::vector<T>> partial_, buffers_;
};

// ---------------------------------------------------------------------------
// Plain kernel
// ---------------------------------------------------------------------------
template <class T>
transport_result<T> solve_plain(const run_context& ctx, const ot_problem<T>& p, const options& o) {
  const auto& k = active<T>();
  const std::size_t rows = p.rows, cols = p.cols;
  const auto n = static_cast<std::ptrdiff_t>(rows);
  const T neg_inv_eps = static_cast<T>(-1 / p.eps);
  conveyor::detail::large_array<T> K(rows * cols);  // written in full by gibbs_row
#pragma omp parallel for num_threads(ctx.threads) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    k.gibbs_row(K.data() + static_cast<std::size_t>(i) * cols, p.C + static_cast<std::size_t>(i) * p.ld, neg_inv_eps,
                cols);
  }
  const bool in_place = rewrites_matrix(o.variant);
  const scaling_problem<T> kernel_problem{K.data(), K.data(), in_place, rows, cols, cols, p.a, p.b};
  scaling_result<T> s = solve_scaling(ctx, kernel_problem, o);

  // After an in-place variant K holds the plan itself; after fused, P = diag(u) K diag(v).
  double local = 0;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) reduction(+ : local)
  for (std::ptrdiff_t ii = 0; ii < n; ++ii) {
    const auto i = static_cast<std::size_t>(ii);
    const T* krow = K.data() + i * cols;
    const T* cost_row = p.C + i * p.ld;
    local += in_place ? static_cast<double>(k.dot(krow, cost_row, cols))
                      : static_cast<double>(s.u[i]) * static_cast<double>(k.dot3(krow, s.v.data(), cost_row, cols));
    if (p.plan) {
      T* out = row_of(p.plan, i, p.plan_ld);
      std::copy(krow, krow + cols, out);
      if (!in_place) {
        k.scale_columns_block(out, p.plan_ld, 1, cols, s.v.data(), 1, cols);
        k.scale(out, s.u[i], cols);
      }
    }
  }
  transport_result<T> res;
  res.state = s.state;
  res.iterations = s.iterations;
  res.error = s.error;
  res.error_history = std::move(s.error_history);
  res.cost = sum_over_ranks(ctx, local);
  res.log_u.resize(rows);
  res.log_v.resize(cols);
  for (std::size_t i = 0; i < rows; ++i) res.log_u[i] = std::log(s.u[i]);
  for (std::size_t j = 0; j < cols; ++j) res.log_v[j] = std::log(s.v[j]);
  res.time = s.time;
  return res;
}

template <class T>
transport_result<T> transport_entry(const ot_problem<T>& p, MPI_Comm comm, const options& o) {
  const double t0 = now();
  const call_shape shape{kWhat, p.rows, p.cols, p.ld, p.C == nullptr, p.a == nullptr, p.b == nullptr, false, true};
  collective_call call(kWhat, comm);
  const bool eps_valid = std::isfinite(p.eps) && p.eps > 0;
  if (!eps_valid) call.fail(errc::invalid_argument, "eps must be finite and > 0, got " + std::to_string(p.eps));
  if (p.plan && p.plan_ld < p.cols) {
    call.fail(errc::invalid_argument,
              "plan leading dimension " + std::to_string(p.plan_ld) + " < columns " + std::to_string(p.cols));
  }
  const run_context ctx = start(call, shape, dtype_of_v<T>, o, eps_valid ? p.eps : 0);

  // Data: histograms finite and >= 0, costs finite.
  agree_on_data(ctx, kWhat, [&] {
    check_marginal(p.a, p.rows, "a", ctx.first_row);
    check_marginal(p.b, p.cols, "b", 0);
    std::size_t first_bad = p.rows;
    const auto n = static_cast<std::ptrdiff_t>(p.rows);
#pragma omp parallel for num_threads(ctx.threads) schedule(static) reduction(min : first_bad)
    for (std::ptrdiff_t ii = 0; ii < n; ++ii) {
      const T* c = p.C + static_cast<std::size_t>(ii) * p.ld;
      if (!std::all_of(c, c + p.cols, [](T x) { return std::isfinite(x); })) {
        first_bad = std::min(first_bad, static_cast<std::size_t>(ii));
      }
    }
    if (first_bad == p.rows) return;
    const T* c = p.C + first_bad * p.ld;
    const auto bad = std::find_if(c, c + p.cols, [](T x) { return !std::isfinite(x); });
    throw error(errc::invalid_argument,
                "C[" + std::to_string(ctx.first_row + first_bad) + "][" + std::to_string(bad - c) +
                    "] = " + std::to_string(static_cast<double>(*bad)) + " (costs must be finite)");
  });
  transport_result<T> res;
  if (ctx.total_rows == 0 || p.cols == 0) {
    res.state = status::converged;
    res.log_u.assign(p.rows, T(0));
    res.log_v.assign(p.cols, T(0));
    res.threads = ctx.threads;
    return res;
  }
  double row_mass = 0, column_mass = 0;
  for (std::size_t i = 0; i < p.rows; ++i) row_mass += static_cast<double>(p.a[i]);
  for (std::size_t j = 0; j < p.cols; ++j) column_mass += static_cast<double>(p.b[j]);
  // Equal masses: a balanced problem whose test is its marginal error (which
  // could never reach tol otherwise); POT's unbalanced solver runs reg_m = inf
  // with any masses, under the change rule.
  const bool unbalanced = !std::isinf(o.reg_m_rows) || !std::isinf(o.reg_m_cols);
  check_masses(ctx, row_mass, column_mass, sizeof(T) == 4, kWhat,
               /*equal_masses=*/!unbalanced && o.stop == stop_rule::marginal);

  const bool log_domain = o.log_domain || unbalanced || o.stop == stop_rule::change;
  return finished(log_domain ? log_solver<T>(ctx, p, o).run() : solve_plain(ctx, p, o), ctx, t0);
}

}  // namespace
}  // namespace conveyor::sinkhorn::detail

namespace conveyor::sinkhorn {

transport_result<double> transport(const double* C, std::size_t rows, std::size_t cols, std::size_t ld, const double* a,
                                   const double* b, double eps, MPI_Comm comm, const options& opts, double* plan,
                                   std::size_t plan_ld) {
  return detail::transport_entry<double>({C, rows, cols, ld, a, b, eps, plan, plan_ld ? plan_ld : cols}, comm, opts);
}

transport_result<float> transport(const float* C, std::size_t rows, std::size_t cols, std::size_t ld, const float* a,
                                  const float* b, double eps, MPI_Comm comm, const options& opts, float* plan,
                                  std::size_t plan_ld) {
  return detail::transport_entry<float>({C, rows, cols, ld, a, b, eps, plan, plan_ld ? plan_ld : cols}, comm, opts);
}

}  // namespace conveyor::sinkhorn
