// SPDX-License-Identifier: BSD-3-Clause
// Many small entropic OT problems in one call (conveyor/sinkhorn_batch.hpp): each
// problem on one thread, to its own convergence, by the point-cloud solver's
// iteration. The passes come from the dense engine's row kernel (exp_row over a
// problem's C and its transpose) or the point-cloud engine's (merge_block over
// the clouds): both fold each row's log-sum-exp with a running maximum, in the
// same order as the single-problem solvers: a point-cloud problem of a batch
// gets the bits transport_points gives it on one rank.
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "conveyor/sinkhorn_batch.hpp"
#include "sinkhorn/run_context.hpp"
#include "sinkhorn/points/kernels.hpp"
#include "sinkhorn/points/shares.hpp"
#include "sinkhorn/dense/scaling_kernels.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The arrays of one call: costs (dense) or points, weights, sizes.
template <class T>
struct batch_problem {
  const T* C = nullptr;  // dense: batch x n x m
  const T *X = nullptr, *Y = nullptr;
  std::size_t batch = 0, n = 0, m = 0, dim = 0;
  const T *a = nullptr, *b = nullptr;
  double eps = 1;
  bool points = false;
};

// A problem's rows against its columns, dense: C_i. and (C^T)_j. by exp_row.
template <class T>
class dense_passes {
 public:
  dense_passes(const batch_problem<T>& p) : p_(p), k_(active<T>()), inv_eps_(static_cast<T>(1 / p.eps)) {}

  void load(std::size_t q) {
    c_ = p_.C + q * p_.n * p_.m;
    ct_.resize(p_.n * p_.m);
    for (std::size_t i = 0; i < p_.n; ++i) {
      for (std::size_t j = 0; j < p_.m; ++j) ct_[j * p_.n + i] = c_[i * p_.m + j];
    }
    e_.resize(std::max(p_.n, p_.m));
  }
  // lse over the columns for every row (h: the columns' potentials).
  void rows(const T* h, running_lse* out, bool with_cost) { fold(c_, p_.n, p_.m, h, out, with_cost); }
  void cols(const T* h, running_lse* out) { fold(ct_.data(), p_.m, p_.n, h, out, false); }

 private:
  void fold(const T* c, std::size_t rows, std::size_t cols, const T* h, running_lse* out, bool with_cost) {
    for (std::size_t i = 0; i < rows; ++i) {
      T max = 0;
      const T sum = k_.exp_row(c + i * cols, h, inv_eps_, e_.data(), cols, &max);
      out[i] = {static_cast<double>(max), static_cast<double>(sum),
                with_cost ? static_cast<double>(k_.dot(e_.data(), c + i * cols, cols)) : 0.0};
    }
  }
  const batch_problem<T>& p_;
  const kernels<T>& k_;
  T inv_eps_;
  const T* c_ = nullptr;
  std::vector<T> ct_, e_;
};

// A problem's rows against its columns, points: merge_block over the other
// cloud transposed (centered first where the kernel takes the dot-product path).
template <class T>
class point_passes {
 public:
  point_passes(const batch_problem<T>& p, metric ground)
      : p_(p),
        k_(active_point_kernels<T>()),
        inv_eps_(static_cast<T>(1 / p.eps)),
        ground_(ground),
        scratch_(point_kernels<T>::kScratch) {}

  void load(std::size_t q) {
    const std::size_t d = p_.dim;
    x_.assign(p_.X + q * p_.n * d, p_.X + (q + 1) * p_.n * d);
    y_.assign(p_.Y + q * p_.m * d, p_.Y + (q + 1) * p_.m * d);
    if (d >= dot_min_dim()) center();
    transpose(x_, p_.n, xt_);
    transpose(y_, p_.m, yt_);
  }
  void rows(const T* h, running_lse* out, bool with_cost) { fold(x_, p_.n, yt_, p_.m, h, out, with_cost); }
  void cols(const T* h, running_lse* out) { fold(y_, p_.m, xt_, p_.n, h, out, false); }

 private:
  // Subtracts the middle of the two clouds' bounding box, as transport_points does.
  void center() {
    const std::size_t d = p_.dim;
    for (std::size_t k = 0; k < d; ++k) {
      double lo = kInf, hi = -kInf;
      for (const auto* cloud : {&x_, &y_}) {
        for (std::size_t i = k; i < cloud->size(); i += d) {
          lo = std::min(lo, static_cast<double>((*cloud)[i]));
          hi = std::max(hi, static_cast<double>((*cloud)[i]));
        }
      }
      const T middle = hi >= lo ? static_cast<T>(0.5 * (lo + hi)) : T(0);
      for (auto* cloud : {&x_, &y_}) {
        for (std::size_t i = k; i < cloud->size(); i += d) (*cloud)[i] -= middle;
      }
    }
  }
  void transpose(const std::vector<T>& points, std::size_t count, std::vector<T>& out) const {
    out.resize(points.size());
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t k = 0; k < p_.dim; ++k) out[k * count + i] = points[i * p_.dim + k];
    }
  }
  void fold(const std::vector<T>& points, std::size_t rows, const std::vector<T>& other_t, std::size_t cols, const T* h,
            running_lse* out, bool with_cost) {
    std::fill(out, out + rows, running_lse{-kInf, 0.0, 0.0});
    k_.merge_block(points.data(), rows, p_.dim, other_t.data(), cols, h, inv_eps_, ground_, with_cost, out,
                   scratch_.data());
  }
  const batch_problem<T>& p_;
  const point_kernels<T>& k_;
  T inv_eps_;
  metric ground_;
  std::vector<T> x_, y_, xt_, yt_, scratch_;
};

// One problem's weights: given or uniform, and their logs (-Inf for 0).
struct weights {
  std::vector<double> w, log_w;
  template <class T>
  void set(const T* given, std::size_t count) {  // (given: this problem's, or null)
    w.resize(count);
    log_w.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      w[i] = given ? static_cast<double>(given[i]) : 1.0 / static_cast<double>(count);
      log_w[i] = static_cast<double>(static_cast<T>(std::log(w[i])));  // (rounded as transport_points keeps it)
    }
  }
};

// What one X pass measures of the current pair.
struct measured {
  double error = 0, cost = 0;
  double mass_log_u = 0, mass_log_a = 0;  // sum_i (row sum)_i log_u_i, and log a_i
  bool finite = true;
};

// One problem, start to end, on the calling thread (the loop of
// points/cloud.cpp's point_solver::iterate, without the ranks).
template <class T, class Passes>
class problem_solver {
 public:
  problem_solver(const batch_problem<T>& p, const batch_options& o, Passes& passes) : p_(p), o_(o), passes_(passes) {}

  void solve(std::size_t q, batch_result<T>& res) {
    passes_.load(q);
    wa_.set(p_.a ? p_.a + q * p_.n : nullptr, p_.n);
    wb_.set(p_.b ? p_.b + q * p_.m : nullptr, p_.m);
    T* u = res.log_u.data() + q * p_.n;
    T* v = res.log_v.data() + q * p_.m;
    for (std::size_t i = 0; i < p_.n; ++i) u[i] = wa_.w[i] == 0 ? static_cast<T>(-kInf) : T(0);
    for (std::size_t j = 0; j < p_.m; ++j) v[j] = wb_.w[j] == 0 ? static_cast<T>(-kInf) : T(0);
    lse_.resize(std::max(p_.n, p_.m));
    good_u_.assign(u, u + p_.n);
    good_v_.assign(v, v + p_.m);
    status state = status::max_iter;
    int iterations = 0;
    double error = std::nan("");
    measured last;  // the returned pair's measurement, with its cost (when last_known)
    bool last_known = false;
    for (int k = 0; k <= o_.max_iter; ++k) {
      const bool tested = k > 0 && (k % o_.check_every == 0 || k == o_.max_iter);
      passes_.rows(v, lse_.data(), tested);
      if (k > 0) {
        const measured r = measure(u, tested);
        if (!r.finite || !std::isfinite(r.error)) {
          state = status::numerical_failure;
          std::copy(good_u_.begin(), good_u_.end(), u);
          std::copy(good_v_.begin(), good_v_.end(), v);
          break;
        }
        good_u_.assign(u, u + p_.n);
        good_v_.assign(v, v + p_.m);
        iterations = k;
        error = r.error;
        last = r;
        last_known = tested;
        if (tested && r.error <= o_.tol) {
          state = status::converged;
          break;
        }
        if (k == o_.max_iter) break;
      }
      update(u, wa_, p_.n);
      passes_.cols(u, lse_.data());
      update(v, wb_, p_.m);
      last_known = false;
    }
    if (!last_known) {  // (after a numerical failure: the restored pair's cost)
      passes_.rows(v, lse_.data(), true);
      last = measure(u, true);
    }
    double mass_log_v = 0, mass_log_b = 0;  // every column sum is b_j after a Y pass
    for (std::size_t j = 0; j < p_.m; ++j) {
      if (wb_.w[j] == 0) continue;
      mass_log_v += wb_.w[j] * static_cast<double>(v[j]);
      mass_log_b += wb_.w[j] * wb_.log_w[j];
    }
    res.state[q] = state;
    res.iterations[q] = iterations;
    res.error[q] = error;
    res.cost[q] = last.cost;
    res.entropy[q] = last.cost / p_.eps - last.mass_log_u - mass_log_v;
    res.kl[q] = -res.entropy[q] - last.mass_log_a - mass_log_b;
  }

 private:
  measured measure(const T* u, bool with_cost) const {
    measured r;
    for (std::size_t i = 0; i < p_.n; ++i) {
      if (wa_.w[i] == 0) continue;
      const running_lse& l = lse_[i];
      const double lse = l.max + std::log(l.sum);
      if (!std::isfinite(lse)) {
        r.finite = false;
        continue;
      }
      const double mass = std::exp(static_cast<double>(u[i]) + lse);
      r.error += error_term(mass, wa_.w[i], o_.norm);
      if (with_cost) {
        r.cost += std::exp(static_cast<double>(u[i]) + l.max) * l.weighted;
        r.mass_log_u += mass * static_cast<double>(u[i]);
        r.mass_log_a += mass * wa_.log_w[i];
      }
    }
    if (o_.norm == error_norm::l2) r.error = std::sqrt(r.error);
    return r;
  }
  void update(T* potential, const weights& w, std::size_t count) const {
    for (std::size_t i = 0; i < count; ++i) {
      if (w.w[i] > 0) potential[i] = static_cast<T>(w.log_w[i] - (lse_[i].max + std::log(lse_[i].sum)));
    }
  }

  const batch_problem<T>& p_;
  const batch_options& o_;
  Passes& passes_;
  weights wa_, wb_;
  std::vector<running_lse> lse_;
  std::vector<T> good_u_, good_v_;
};

void check_batch_options(const batch_options& o) {
  const auto bad = [](const std::string& msg) { throw error(errc::invalid_argument, msg); };
  if (!(o.tol >= 0)) bad("tol must be >= 0");
  if (o.max_iter < 1) bad("max_iter must be >= 1");
  if (o.check_every < 1) bad("check_every must be >= 1");
  if (o.norm != error_norm::l1 && o.norm != error_norm::l2)
    bad("unknown norm " + std::to_string(static_cast<int>(o.norm)));
  if (o.threads < 0) bad("threads must be >= 0");
  if (o.metric != metric::sqeuclidean && o.metric != metric::euclidean) {
    bad("unknown metric " + std::to_string(static_cast<int>(o.metric)));
  }
}

// Each problem's weights: finite, >= 0, equal positive masses (balanced OT).
template <class T>
void check_weights(const batch_problem<T>& p) {
  const double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-8;
  for (std::size_t q = 0; q < p.batch; ++q) {
    double mass[2] = {1, 1};
    const T* given[2] = {p.a ? p.a + q * p.n : nullptr, p.b ? p.b + q * p.m : nullptr};
    const std::size_t count[2] = {p.n, p.m};
    for (int s = 0; s < 2; ++s) {
      if (!given[s]) continue;
      check_marginal(given[s], count[s], s == 0 ? "a" : "b", q * count[s]);
      mass[s] = 0;
      for (std::size_t i = 0; i < count[s]; ++i) mass[s] += static_cast<double>(given[s][i]);
    }
    if (p.n == 0 || p.m == 0) continue;  // (an empty problem: nothing to balance)
    if (!(mass[0] > 0) || !(mass[1] > 0) || std::abs(mass[0] - mass[1]) > tolerance * std::max(mass[0], mass[1])) {
      throw error(errc::invalid_argument, "problem " + std::to_string(q) +
                                              ": a and b must have equal positive masses (" + std::to_string(mass[0]) +
                                              " vs " + std::to_string(mass[1]) + ")");
    }
  }
}

template <class T>
batch_result<T> transport_batch_entry(const batch_problem<T>& p, MPI_Comm comm, const batch_options& o) {
  const double t0 = now();
  const bool points = p.points;
  const char* what = points ? "sinkhorn::transport_points_batch" : "sinkhorn::transport_batch";
  collective_call call(what, comm);
  const bool eps_valid = std::isfinite(p.eps) && p.eps > 0;
  const bool has_data = p.batch > 0 && p.n > 0 && p.m > 0;
  call.check([&] {
    if (!eps_valid) throw error(errc::invalid_argument, "eps must be finite and > 0, got " + std::to_string(p.eps));
    if (points && p.dim == 0) throw error(errc::invalid_argument, "dim must be >= 1");
    if (has_data && !points && !p.C) throw error(errc::invalid_argument, "C is null");
    if (has_data && points && (!p.X || !p.Y)) throw error(errc::invalid_argument, p.X ? "Y is null" : "X is null");
    check_batch_options(o);
    if (points) dot_min_dim();  // (reads CONVEYOR_POINTS_DOT_MIN_DIM: a bad value fails here, on every rank)
  });
  call.must_match("point counts n", static_cast<std::int64_t>(p.n))
      .must_match("point counts m", static_cast<std::int64_t>(p.m))
      .must_match("dims", static_cast<std::int64_t>(p.dim))
      .must_match("dtypes", dtype_of_v<T>);
  call.must_match("max_iter values", o.max_iter)
      .must_match_real("tolerances", o.tol)
      .must_match("norms", o.norm, norm_name);
  call.must_match("check_every values", o.check_every).must_match("metrics", o.metric, metric_name);
  if (eps_valid) call.must_match_real("eps values", p.eps);
  run_context ctx = agreed_context(call);
  ctx.threads = threads_for(call, o.threads, p.batch * p.n * p.m);
  agree_on_data(ctx, what, [&] {
    check_weights(p);
    if (!has_data) return;
    if (points) {
      check_rows_finite(p.X, p.batch * p.n, p.dim, "X", 0);
      check_rows_finite(p.Y, p.batch * p.m, p.dim, "Y", 0);
    } else {
      const std::size_t size = p.batch * p.n * p.m;
      const auto bad = std::find_if(p.C, p.C + size, [](T x) { return !std::isfinite(x); });
      if (bad != p.C + size) {
        const std::size_t at = static_cast<std::size_t>(bad - p.C);
        throw error(errc::invalid_argument, "C[" + std::to_string(at / (p.n * p.m)) + "][" +
                                                std::to_string(at / p.m % p.n) + "][" + std::to_string(at % p.m) +
                                                "] = " + std::to_string(static_cast<double>(*bad)) +
                                                " (costs must be finite)");
      }
    }
  });
  batch_result<T> res;
  res.state.assign(p.batch, status::converged);
  res.iterations.assign(p.batch, 0);
  res.error.assign(p.batch, 0);
  res.cost.assign(p.batch, 0);
  res.entropy.assign(p.batch, 0);
  res.kl.assign(p.batch, 0);
  res.log_u.assign(p.batch * p.n, T(0));
  res.log_v.assign(p.batch * p.m, T(0));
  if (has_data) {
    const int nt = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ctx.threads), p.batch));
#pragma omp parallel num_threads(nt)
    {
      // (each thread's scratch lives for all the problems it takes)
      const auto run = [&](auto&& passes) {
        problem_solver<T, std::decay_t<decltype(passes)>> solver(p, o, passes);
#pragma omp for schedule(dynamic, 1)
        for (std::size_t q = 0; q < p.batch; ++q) solver.solve(q, res);
      };
      if (points) run(point_passes<T>(p, o.metric));
      else run(dense_passes<T>(p));
    }
  }
  res.threads = ctx.threads;
  res.seconds = now() - t0;
  return res;
}

}  // namespace
}  // namespace conveyor::sinkhorn::detail

namespace conveyor::sinkhorn {

batch_result<double> transport_batch(const double* C, std::size_t batch, std::size_t n, std::size_t m, const double* a,
                                     const double* b, double eps, MPI_Comm comm, const batch_options& opts) {
  return detail::transport_batch_entry<double>({C, nullptr, nullptr, batch, n, m, 0, a, b, eps, false}, comm, opts);
}

batch_result<float> transport_batch(const float* C, std::size_t batch, std::size_t n, std::size_t m, const float* a,
                                    const float* b, double eps, MPI_Comm comm, const batch_options& opts) {
  return detail::transport_batch_entry<float>({C, nullptr, nullptr, batch, n, m, 0, a, b, eps, false}, comm, opts);
}

batch_result<double> transport_points_batch(const double* X, const double* Y, std::size_t batch, std::size_t n,
                                            std::size_t m, std::size_t dim, const double* a, const double* b,
                                            double eps, MPI_Comm comm, const batch_options& opts) {
  return detail::transport_batch_entry<double>({nullptr, X, Y, batch, n, m, dim, a, b, eps, true}, comm, opts);
}

batch_result<float> transport_points_batch(const float* X, const float* Y, std::size_t batch, std::size_t n,
                                           std::size_t m, std::size_t dim, const float* a, const float* b, double eps,
                                           MPI_Comm comm, const batch_options& opts) {
  return detail::transport_batch_entry<float>({nullptr, X, Y, batch, n, m, dim, a, b, eps, true}, comm, opts);
}

}  // namespace conveyor::sinkhorn
