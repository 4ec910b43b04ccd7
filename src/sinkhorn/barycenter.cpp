// SPDX-License-Identifier: BSD-3-Clause
// The fixed-support entropic barycenter (conveyor/sinkhorn_barycenter.hpp): the
// contract, then one of two iterations over this rank's rows of C.
//
// Scalings (K = exp(-C/eps) formed once, rows i of this rank, H histograms):
//   row i, histogram k: d = K_i . u_k, s_k += (A_ik / d) K_i   (K read from memory
//   once: blocks of rows stay in L2 for the H histograms)
//   allreduce(s) [H x dim];  ukv_k = u_k s_k;  q = exp(sum_k w_k log ukv_k);
//   u_k = u_k q / ukv_k.   Error: sum_j std_k ukv_kj.
// From u_k = 1, the start of POT's log-domain loop: both forms then compute the
// same iterates. (POT's barycenter_sinkhorn starts from u_k = gm / (K (A_k /
// colsum K)), gm the unweighted geometric mean over k; iterative Bregman
// projections converge to the KL projection of their start, so with unequal
// weights that start moves the limit away from the barycenter, measurably:
// docs/algorithms.md, "Barycenter".)
//
// Log domain (G_k = log v_k, the scaling of the column side; f the row side):
//   row i, histogram k: x_j = G_kj - C_ij / eps, m = max_j x_j, e_j = exp(x_j - m),
//   f_ik = log A_ik - m - log sum_j e_j, s_k += (A_ik / sum_j e_j) e   (the plan row)
//   allreduce(s) [H x dim];  log KU_kj = log s_kj - G_kj;
//   log q = sum_k w_k log KU_k;  G_k = log q - log KU_k.   Error: sum_j std_k s_kj.
// A column sum that underflows to 0 makes that iteration compute log KU exactly
// (each rank's column max and scaled sum, combined by one allreduce(logaddexp):
// global_column_lse, as the OT solver's fallback).
#include "conveyor/sinkhorn_barycenter.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/large_array.hpp"
#include "sinkhorn/run_context.hpp"
#include "sinkhorn/dense/scaling_kernels.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

constexpr const char* kWhat = "sinkhorn::barycenter";

// The call's arguments: C by rows (this rank's), A and the weights whole.
template <class T>
struct barycenter_problem {
  const T* A = nullptr;  // dim x hists, row-major
  std::size_t hists = 0;
  const T* C = nullptr;
  std::size_t rows = 0, dim = 0, ld = 0;
  std::vector<double> weights;
  double eps = 1;
};

// sum_j std_k x_kj (population standard deviation over the H histograms).
template <class T>
double spread_over_histograms(const std::vector<T>& x, std::size_t hists, std::size_t dim) {
  double total = 0;
  for (std::size_t j = 0; j < dim; ++j) {
    double mean = 0, square = 0;
    for (std::size_t k = 0; k < hists; ++k) mean += static_cast<double>(x[k * dim + j]);
    mean /= static_cast<double>(hists);
    for (std::size_t k = 0; k < hists; ++k) {
      const double d = static_cast<double>(x[k * dim + j]) - mean;
      square += d * d;
    }
    total += std::sqrt(square / static_cast<double>(hists));
  }
  return total;
}

template <class T>
class barycenter_solver {
 public:
  barycenter_solver(const run_context& ctx, const barycenter_problem<T>& p, const barycenter_options& o)
      : ctx_(ctx), p_(p), o_(o), k_(active<T>()), H_(p.hists), dim_(p.dim), inv_eps_(static_cast<T>(1 / p.eps)) {}

  barycenter_result<T> run() {
    barycenter_result<T> res;
    std::vector<T> local(H_ * dim_), sums(H_ * dim_);
    std::vector<double> q(dim_), good_q(dim_, std::nan(""));
    if (o_.log_domain) {
      G_.assign(H_ * dim_, T(0));
      f_.assign(p_.rows * H_, T(0));
    } else {
      form_kernel();
      u_.assign(H_ * dim_, T(1));
    }
    for (int it = 1; it <= o_.max_iter; ++it) {
      const double t0 = now();
      o_.log_domain ? log_row_pass(local) : row_pass(local);
      const double rows_done = now();
      allreduce(local.data(), sums.data(), local.size(), op::sum, ctx_.comm, o_.allreduce);
      res.time.allreduce += now() - rows_done;
      const double err = o_.log_domain ? log_update(sums, q) : update(sums, q);
      res.time.row_pass += rows_done - t0;
      res.time.column_pass += now() - rows_done;
      res.error_history.push_back(err);
      const bool finite =
          std::isfinite(err) && std::all_of(q.begin(), q.end(), [](double x) { return std::isfinite(x); });
      if (!finite) {
        res.state = status::numerical_failure;
        break;
      }
      good_q = q;
      res.iterations = it;
      res.error = err;
      if (it >= o_.first_check && (it - o_.first_check) % o_.check_every == 0 && err <= o_.tol) {
        res.state = status::converged;
        break;
      }
    }
    res.barycenter.resize(dim_);
    for (std::size_t j = 0; j < dim_; ++j) res.barycenter[j] = static_cast<T>(good_q[j]);
    res.log_v.resize(H_ * dim_);
    for (std::size_t x = 0; x < res.log_v.size(); ++x) {
      res.log_v[x] = o_.log_domain ? static_cast<double>(G_[x]) : std::log(static_cast<double>(u_[x]));
    }
    return res;
  }

 private:
  int threads() const {
    return std::max(1, std::min(ctx_.threads, static_cast<int>(std::max<std::size_t>(p_.rows, 1))));
  }
  const T* cost_row(std::size_t i) const { return p_.C + i * p_.ld; }
  const T* kernel_row(std::size_t i) const { return K_.data() + i * dim_; }
  T weight_of(std::size_t i, std::size_t k) const { return p_.A[(ctx_.first_row + i) * H_ + k]; }

  void form_kernel() {
    K_ = conveyor::detail::large_array<T>(p_.rows * dim_);
    const T neg_inv_eps = -inv_eps_;
    const auto n = static_cast<std::ptrdiff_t>(p_.rows);
#pragma omp parallel for num_threads(threads()) schedule(static)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      k_.gibbs_row(K_.data() + static_cast<std::size_t>(i) * dim_, cost_row(static_cast<std::size_t>(i)), neg_inv_eps,
                   dim_);
    }
  }

  // local_k = sum over my rows i of (A_ik / (K_i . u_k)) K_i. Rows go in blocks
  // of ~512 KiB of K, each block through the dense solver's fused micro-kernel
  // once per histogram: K comes from memory once per block and from L2 for the
  // other histograms, and u_k, s_k are read once per 8 rows (fused_rows' groups)
  // instead of once per row and histogram (measured: results.md, "Barycenters").
  void row_pass(std::vector<T>& local) {
    const std::size_t block =
        std::max<std::size_t>(8, (std::size_t{512} << 10) / std::max<std::size_t>(dim_ * sizeof(T), 1));
    threaded_column_reduce(threads(), p_.rows, T(0), partial_, local, k_.add,
                           [&](std::size_t lo, std::size_t hi, T* acc) {
                             std::vector<T> weights(block), factors(block);
                             for (std::size_t b0 = lo; b0 < hi; b0 += block) {
                               const std::size_t nb = std::min(block, hi - b0);
                               for (std::size_t k = 0; k < H_; ++k) {
                                 for (std::size_t r = 0; r < nb; ++r) weights[r] = weight_of(b0 + r, k);
                                 k_.fused_rows(kernel_row(b0), nb, dim_, dim_, u_.data() + k * dim_, weights.data(),
                                               factors.data(), acc + k * dim_);
                               }
                             }
                           });
  }

  // ukv = u s, q = the weighted geometric mean, u = u q / ukv; returns the error.
  double update(const std::vector<T>& s, std::vector<double>& q) {
    std::vector<T> ukv(H_ * dim_);
    for (std::size_t x = 0; x < ukv.size(); ++x) ukv[x] = u_[x] * s[x];
    for (std::size_t j = 0; j < dim_; ++j) {
      double log_q = 0;
      for (std::size_t k = 0; k < H_; ++k) log_q += p_.weights[k] * std::log(static_cast<double>(ukv[k * dim_ + j]));
      q[j] = std::exp(log_q);
      for (std::size_t k = 0; k < H_; ++k) {
        u_[k * dim_ + j] =
            static_cast<T>(static_cast<double>(u_[k * dim_ + j]) * q[j] / static_cast<double>(ukv[k * dim_ + j]));
      }
    }
    return spread_over_histograms(ukv, H_, dim_);
  }

  // local_k = the column sums of my rows of plan k, f the row side's log scalings.
  void log_row_pass(std::vector<T>& local) {
    buffers_.resize(static_cast<std::size_t>(threads()));
    threaded_column_reduce(
        threads(), p_.rows, T(0), partial_, local, k_.add, [&](std::size_t lo, std::size_t hi, T* acc) {
          auto& e = buffers_[static_cast<std::size_t>(omp_get_thread_num())];
          e.resize(dim_);
          for (std::size_t i = lo; i < hi; ++i) {
            for (std::size_t k = 0; k < H_; ++k) {
              const T a = weight_of(i, k);
              T& f = f_[i * H_ + k];
              if (a == 0) {
                f = -std::numeric_limits<T>::infinity();
                continue;
              }
              T m = 0;
              const T rs = k_.exp_row(cost_row(i), G_.data() + k * dim_, inv_eps_, e.data(), dim_, &m);
              if (!(rs > 0) || !std::isfinite(m)) {  // poisons the sums: every rank sees the failure
                f = std::numeric_limits<T>::quiet_NaN();
                if (dim_) acc[k * dim_] = std::numeric_limits<T>::quiet_NaN();
                continue;
              }
              f = std::log(a) - m - std::log(rs);
              k_.axpy(acc + k * dim_, a / rs, e.data(), dim_);
            }
          }
        });
  }

  // log KU from the plans' column sums s (exactly where one underflowed), then
  // log q and G; returns the error.
  double log_update(const std::vector<T>& s, std::vector<double>& q) {
    std::vector<double> log_ku(H_ * dim_);
    const bool underflow = std::any_of(s.begin(), s.end(), [](T x) { return x == 0; });
    if (underflow) {
      exact_log_ku(log_ku);
    } else {
      for (std::size_t x = 0; x < log_ku.size(); ++x)
        log_ku[x] = std::log(static_cast<double>(s[x])) - static_cast<double>(G_[x]);
    }
    std::vector<double> plan_columns(H_ * dim_);  // exp(G + log KU): the plans' column sums
    for (std::size_t x = 0; x < log_ku.size(); ++x) plan_columns[x] = std::exp(static_cast<double>(G_[x]) + log_ku[x]);
    for (std::size_t j = 0; j < dim_; ++j) {
      double log_q = 0;
      for (std::size_t k = 0; k < H_; ++k) log_q += p_.weights[k] * log_ku[k * dim_ + j];
      q[j] = std::exp(log_q);
      for (std::size_t k = 0; k < H_; ++k) G_[k * dim_ + j] = static_cast<T>(log_q - log_ku[k * dim_ + j]);
    }
    return spread_over_histograms(plan_columns, H_, dim_);
  }

  // log KU_kj = LSE_i (f_ik - C_ij / eps) over every rank's rows, H x dim columns.
  void exact_log_ku(std::vector<double>& log_ku) {
    std::vector<T> lse(H_ * dim_);
    global_column_lse(
        threads(), p_.rows, partial_, lse, ctx_.comm, o_.allreduce,
        [&](std::size_t lo, std::size_t hi, T* acc) {
          for (std::size_t i = lo; i < hi; ++i) {
            for (std::size_t k = 0; k < H_; ++k) {
              if (weight_of(i, k) > 0) k_.column_max(acc + k * dim_, cost_row(i), f_[i * H_ + k], inv_eps_, dim_);
            }
          }
        },
        [&](std::size_t lo, std::size_t hi, const T* m, T* acc) {
          for (std::size_t i = lo; i < hi; ++i) {
            for (std::size_t k = 0; k < H_; ++k) {
              if (weight_of(i, k) > 0)
                k_.column_expsum(acc + k * dim_, cost_row(i), f_[i * H_ + k], inv_eps_, m + k * dim_, dim_);
            }
          }
        });
    for (std::size_t x = 0; x < log_ku.size(); ++x) log_ku[x] = static_cast<double>(lse[x]);
  }

  const run_context& ctx_;
  const barycenter_problem<T>& p_;
  const barycenter_options& o_;
  const kernels<T>& k_;
  std::size_t H_, dim_;
  T inv_eps_;
  conveyor::detail::large_array<T> K_{0};
  std::vector<T> u_, G_, f_;
  std::vector<std::vector<T>> partial_, buffers_;
};

void check_options(const barycenter_options& o) {
  const auto bad = [](const std::string& m) { throw error(errc::invalid_argument, m); };
  if (!(o.tol >= 0)) bad("tol must be >= 0");
  if (o.max_iter < 1) bad("max_iter must be >= 1");
  if (o.check_every < 1) bad("check_every must be >= 1");
  if (o.first_check < 1) bad("first_check must be >= 1");
  if (o.threads < 0) bad("threads must be >= 0");
}

template <class T>
void check_data(const run_context& ctx, const barycenter_problem<T>& p) {
  const auto bad = [](const std::string& m) { throw error(errc::invalid_argument, m); };
  if (ctx.total_rows != p.dim) {
    bad("the cost has " + std::to_string(ctx.total_rows) + " rows over all ranks for " + std::to_string(p.dim) +
        " columns (a barycenter's cost is square)");
  }
  for (std::size_t k = 0; k < p.weights.size(); ++k) {
    if (!(std::isfinite(p.weights[k]) && p.weights[k] >= 0)) {
      bad("weights[" + std::to_string(k) + "] = " + std::to_string(p.weights[k]) +
          " (weights must be finite and >= 0)");
    }
  }
  std::vector<double> mass(p.hists, 0.0);
  for (std::size_t i = 0; i < p.dim; ++i) {
    for (std::size_t k = 0; k < p.hists; ++k) {
      const T x = p.A[i * p.hists + k];
      if (!(std::isfinite(x) && x >= 0)) {
        bad("A[" + std::to_string(i) + "][" + std::to_string(k) + "] = " + std::to_string(static_cast<double>(x)) +
            " (histograms must be finite and >= 0)");
      }
      mass[k] += static_cast<double>(x);
    }
  }
  // Room for the rounding of histograms normalized in the caller's precision.
  const double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-8;
  for (std::size_t k = 0; k < p.hists && p.dim > 0; ++k) {
    if (!(mass[k] > 0)) bad("histogram " + std::to_string(k) + " has no mass");
    if (std::abs(mass[k] - mass[0]) > tolerance * std::max(mass[k], mass[0])) {
      bad("histograms 0 and " + std::to_string(k) + " have different masses (" + std::to_string(mass[0]) + " vs " +
          std::to_string(mass[k]) + "): their barycenter does not exist");
    }
  }
  for (std::size_t i = 0; i < p.rows; ++i) {
    const T* c = p.C + i * p.ld;
    const auto hit = std::find_if(c, c + p.dim, [](T x) { return !std::isfinite(x); });
    if (hit != c + p.dim) {
      bad("C[" + std::to_string(ctx.first_row + i) + "][" + std::to_string(hit - c) +
          "] = " + std::to_string(static_cast<double>(*hit)) + " (costs must be finite)");
    }
  }
}

template <class T>
barycenter_result<T> barycenter_entry(barycenter_problem<T>& p, const T* weights, MPI_Comm comm,
                                      const barycenter_options& o) {
  const double t0 = now();
  collective_call call(kWhat, comm);
  const bool eps_valid = std::isfinite(p.eps) && p.eps > 0;
  call.check([&] {
    const auto bad = [](const std::string& m) { throw error(errc::invalid_argument, m); };
    check_options(o);
    if (!eps_valid) bad("eps must be finite and > 0, got " + std::to_string(p.eps));
    if (p.hists == 0) bad("no histograms (A has 0 columns)");
    if (p.ld < p.dim) bad("leading dimension " + std::to_string(p.ld) + " < dim " + std::to_string(p.dim));
    if (!p.C && p.rows > 0 && p.dim > 0) bad("C is null");
    if (!p.A && p.dim > 0) bad("A is null");
  });
  call.must_match("dims", static_cast<std::int64_t>(p.dim))
      .must_match("histogram counts", static_cast<std::int64_t>(p.hists));
  call.must_match("dtypes", dtype_of_v<T>).must_match("max_iter values", o.max_iter);
  call.must_match_real("tolerances", o.tol).must_match("log_domain flags", o.log_domain ? 1 : 0);
  call.must_match("check_every values", o.check_every).must_match("first_check values", o.first_check);
  call.must_match("allreduce algorithms", o.allreduce.algorithm, algorithm_name);
  call.must_match("weights given flags", weights ? 1 : 0);
  if (eps_valid) call.must_match_real("eps values", p.eps);
  run_context ctx = agreed_context(call);
  place_rows(ctx, p.rows);
  ctx.threads = threads_for(call, o.threads, p.rows * p.dim * std::max<std::size_t>(p.hists, 1));
  p.weights.assign(p.hists, 1.0 / static_cast<double>(std::max<std::size_t>(p.hists, 1)));
  if (weights) std::copy(weights, weights + p.hists, p.weights.begin());
  agree_on_data(ctx, kWhat, [&] { check_data(ctx, p); });

  if (p.dim > 0) return finished(barycenter_solver<T>(ctx, p, o).run(), ctx, t0);
  barycenter_result<T> empty;
  empty.state = status::converged;
  return finished(std::move(empty), ctx, t0);
}

}  // namespace
}  // namespace conveyor::sinkhorn::detail

namespace conveyor::sinkhorn {

barycenter_result<double> barycenter(const double* C, std::size_t rows, std::size_t dim, std::size_t ld,
                                     const double* A, std::size_t hists, const double* weights, double eps,
                                     MPI_Comm comm, const barycenter_options& opts) {
  detail::barycenter_problem<double> p{A, hists, C, rows, dim, ld, {}, eps};
  return detail::barycenter_entry(p, weights, comm, opts);
}

barycenter_result<float> barycenter(const float* C, std::size_t rows, std::size_t dim, std::size_t ld, const float* A,
                                    std::size_t hists, const float* weights, double eps, MPI_Comm comm,
                                    const barycenter_options& opts) {
  detail::barycenter_problem<float> p{A, hists, C, rows, dim, ld, {}, eps};
  return detail::barycenter_entry(p, weights, comm, opts);
}

}  // namespace conveyor::sinkhorn
