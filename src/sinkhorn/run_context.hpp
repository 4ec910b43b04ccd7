// SPDX-License-Identifier: BSD-3-Clause
// Internal: the run context of a solve, what the scaling and OT drivers share:
// argument checks that every rank agrees on, the row partition, OpenMP thread
// ranges and the iteration bookkeeping.
#pragma once

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/contract.hpp"
#include "runtime/partition.hpp"

namespace conveyor::sinkhorn::detail {

/// Where this rank's rows sit in the global matrix, and how many threads to use.
struct run_context {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  int threads = 1;
  std::size_t first_row = 0;   // global index of this rank's first row
  std::size_t total_rows = 0;  // M
};

/// What the caller passed, for the checks.
struct call_shape {
  const char* what;  // "sinkhorn::scale", ...
  std::size_t rows, cols, ld;
  bool matrix_null, row_marginal_null, column_marginal_null;
  bool in_place;
  bool transport;
};

/// Local checks of pointers, sizes and options: throws conveyor::error.
void check_call(const call_shape& call, const options& opts);

/// OpenMP threads for a call: `requested` when > 0, else the automatic rule
/// (OpenMP's default capped by this rank's share of its node's CPUs, and by one
/// thread per 64 Ki elements of `work_elements`). Collective on first use of the
/// communicator (its node layout).
int threads_for(collective_call& call, int requested, std::size_t work_elements);

/// The collective contract's steps 1 and 2 for a solver call: the local checks of
/// `shape` and `o` join `call` (which may hold the entry's or a front end's own
/// problems), the arguments that must be equal everywhere are matched (columns,
/// dtype, the options that shape the iteration; eps when > 0), one agreement;
/// then the row partition, on the private communicator.
run_context start(collective_call& call, const call_shape& shape, dtype t, const options& o, double eps);

/// The row partition of an agreed call: this rank's first global row (the rows
/// of the ranks before it) and the total over all ranks (collective).
void place_rows(run_context& ctx, std::size_t my_rows);

/// Step 2 of the contract (call.agree()), then the context of the agreed call:
/// its private communicator, rank and size (rows and threads left to the solver).
inline run_context agreed_context(collective_call& call) {
  call.agree();
  run_context ctx;
  ctx.comm = call.comm();
  ctx.rank = call.rank();
  ctx.size = call.size();
  return ctx;
}

/// Phase two of a solver call, after the partition is known: checks of the data
/// (values of marginals and matrices), agreed like the arguments.
template <class F>
void agree_on_data(const run_context& ctx, const char* what, F&& checks) {
  collective_call call(what, ctx.comm);
  call.check(std::forward<F>(checks));
  call.agree();
}

/// Throws for an entry of a marginal that is not finite and >= 0.
template <class T>
void check_marginal(const T* x, std::size_t n, const char* name, std::size_t offset) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!(std::isfinite(x[i]) && x[i] >= 0)) {
      throw error(errc::invalid_argument, std::string(name) + "[" + std::to_string(offset + i) +
                                              "] = " + std::to_string(static_cast<double>(x[i])) +
                                              " (marginals must be finite and >= 0)");
    }
  }
}

/// Collective: the row marginal (summed over ranks) and the column marginal must
/// have positive mass, equal unless !equal_masses (unbalanced OT), and the column marginal must be the same on every
/// rank (its sum is compared). Throws the same error on every rank.
void check_masses(const run_context& ctx, double local_row_mass, double column_mass, bool single_precision,
                  const char* what, bool equal_masses = true);

/// The thread's share [begin, end) of n items split evenly over `parts` (the
/// runtime's one partition rule).
inline std::pair<std::size_t, std::size_t> share(std::size_t n, int part, int parts) {
  const auto r = conveyor::detail::balanced_part(n, static_cast<std::size_t>(part), static_cast<std::size_t>(parts));
  return {r.first, r.first + r.count};
}

/// Runs work(lo, hi, acc) on `nt` threads, each over its share [lo, hi) of `rows`
/// rows with its own column accumulator `acc` (filled with `init`), then combines
/// the accumulators into `out` in thread order with combine(dst, src, n), each
/// thread over its share of the columns. Deterministic for a fixed thread count.
template <class T, class Work, class Combine>
void threaded_column_reduce(int nt, std::size_t rows, T init, std::vector<std::vector<T>>& partial, std::vector<T>& out,
                            Combine&& combine, Work&& work) {
  const std::size_t cols = out.size();
  if (nt <= 1) {
    std::fill(out.begin(), out.end(), init);
    work(std::size_t{0}, rows, out.data());
    return;
  }
  partial.resize(static_cast<std::size_t>(nt));
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num();
    auto& mine = partial[static_cast<std::size_t>(tid)];
    mine.assign(cols, init);
    const auto [lo, hi] = share(rows, tid, nt);
    work(lo, hi, mine.data());
#pragma omp barrier
    const auto [j0, j1] = share(cols, tid, nt);
    std::copy(partial[0].begin() + static_cast<std::ptrdiff_t>(j0),
              partial[0].begin() + static_cast<std::ptrdiff_t>(j1), out.begin() + static_cast<std::ptrdiff_t>(j0));
    for (int q = 1; q < nt; ++q) combine(out.data() + j0, partial[static_cast<std::size_t>(q)].data() + j0, j1 - j0);
  }
}

/// lse_j = LSE_i x_ij over every rank's rows i, for the columns j < lse.size():
/// each rank's column maxima (max_rows(lo, hi, acc): acc_j = max(acc_j, x_ij)) and
/// sums of exp(x_ij - max_j) (sum_rows(lo, hi, max, acc)) over its rows on `nt`
/// threads, folded into one number per column, max + log(sum) (the (max, scaled
/// sum) pair), and combined over the ranks by one allreduce with op::logaddexp:
/// one number per column on the wire, the same bits on every rank. A column
/// without live rows anywhere gives -inf.
template <class T, class MaxRows, class SumRows>
void global_column_lse(int nt, std::size_t rows, std::vector<std::vector<T>>& partial, std::vector<T>& lse,
                       MPI_Comm comm, const allreduce_options& options, MaxRows&& max_rows, SumRows&& sum_rows) {
  const std::size_t n = lse.size();
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::vector<T> m(n), s(n);
  threaded_column_reduce(
      nt, rows, minus_inf, partial, m,
      [](T* dst, const T* src, std::size_t k) {
        for (std::size_t j = 0; j < k; ++j) dst[j] = std::max(dst[j], src[j]);
      },
      max_rows);
  threaded_column_reduce(
      nt, rows, T(0), partial, s,
      [](T* dst, const T* src, std::size_t k) {
        for (std::size_t j = 0; j < k; ++j) dst[j] += src[j];
      },
      [&](std::size_t lo, std::size_t hi, T* acc) { sum_rows(lo, hi, m.data(), acc); });
  for (std::size_t j = 0; j < n; ++j) m[j] = m[j] == minus_inf ? minus_inf : m[j] + std::log(s[j]);
  allreduce(m.data(), lse.data(), n, op::logaddexp, comm, options);
}

/// Seconds on a monotonic clock.
double now();

/// A solver's result as its entry returns it: the threads it ran with and the
/// whole call's seconds (from t0).
template <class Result>
Result finished(Result res, const run_context& ctx, double t0) {
  res.threads = ctx.threads;
  res.time.total = now() - t0;
  return res;
}

/// Sum of x in index order (identical on every rank for identical x).
double ordered_sum(const std::vector<double>& x);

/// Status bookkeeping shared by every driver loop.
struct iteration_log {
  status state = status::max_iter;
  int iterations = 0;
  double error = std::nan("");
  std::vector<double> history;
};

/// The column sums of one iteration, combined over ranks; calls `chunk(off, cnt)`
/// as each range of the global sums arrives. Returns the seconds spent.
template <class T, class Chunk>
double allreduce_columns(const run_context& ctx, const options& o, const std::vector<T>& local, std::vector<T>& global,
                         Chunk&& chunk) {
  allreduce_options ao = o.allreduce;
  ao.on_chunk = [&](std::size_t off, std::size_t cnt) { chunk(off, cnt); };
  const double t0 = now();
  if (!local.empty()) allreduce(local.data(), global.data(), local.size(), op::sum, ctx.comm, ao);
  return now() - t0;
}

/// One column's share of the marginal error: |d| (l1) or d^2 (l2).
inline double error_term(double colsum, double target, error_norm n) {
  const double d = colsum - target;
  return n == error_norm::l2 ? d * d : std::abs(d);
}

/// The error from the terms of every column, summed in index order.
inline double marginal_error(const std::vector<double>& terms, error_norm n) {
  const double s = ordered_sum(terms);
  return n == error_norm::l2 ? std::sqrt(s) : s;
}

/// Bookkeeping after the column sums: records err, decides the status
/// (convergence is tested on iterations 1, 1 + check_every, ...).
/// Returns true when the loop must stop.
inline bool finish_iteration(iteration_log& log, int it, double err, bool finite, const options& o) {
  log.history.push_back(err);
  if (!finite || !std::isfinite(err)) {
    log.state = status::numerical_failure;
    return true;  // log.error keeps the last good value
  }
  log.iterations = it;
  log.error = err;
  if ((it - 1) % o.check_every == 0 && err <= o.tol) {
    log.state = status::converged;
    return true;
  }
  return false;
}

/// What one iteration's step reports to the loop: when its row part ended (the
/// rest is the column part), the marginal error of the iterate it measured, and
/// whether the new factors are finite.
struct iteration_step {
  double rows_done;
  double error;
  bool finite;
};

/// The iteration loop every solver runs (fused, in place, log domain): up to
/// o.max_iter times, `step(it)` does one iteration (row part, column sums over
/// the ranks, the error); the loop times its two parts, records the error and
/// stops on convergence (finish_iteration) or on a numerical failure, which
/// restores the row factors (`row_factors`: u or f) to those of the last good
/// iterate. `accept()` then takes the iteration's new column factors, except
/// after the last iteration, whose measured pair is returned as it is.
template <class Vec, class Step, class Accept>
void run_iterations(const options& o, iteration_log& log, timing& t, Vec& row_factors, Step&& step, Accept&& accept) {
  Vec previous(row_factors.size());
  for (int it = 1; it <= o.max_iter; ++it) {
    const double t0 = now();
    previous = row_factors;
    const iteration_step r = step(it);
    t.row_pass += r.rows_done - t0;
    t.column_pass += now() - r.rows_done;
    if (finish_iteration(log, it, r.error, r.finite, o)) {
      if (log.state == status::numerical_failure) row_factors = std::move(previous);
      return;
    }
    if (it < o.max_iter) accept();
  }
}

/// One side's update in (unbalanced) entropic OT, in units of eps:
///   potential / eps = weight_power * log w - lse_power * LSE(...)
/// A constraint (reg_m = infinity) has both powers 1; a KL penalty reg_m has
/// lse_power fi = reg_m / (reg_m + eps) and weight_power 1 (reg_type kl) or fi
/// (entropy).
struct side_update {
  double lse_power = 1;
  double weight_power = 1;
  bool constraint() const { return lse_power == 1 && weight_power == 1; }
};
side_update update_for(double reg_m, double eps, reg_type type);

/// Local checks of the unbalanced options (reg_m > 0, a known reg_type and stop rule).
void check_unbalanced(double reg_m_rows, double reg_m_cols, reg_type type, stop_rule stop);

/// The unbalanced options must be equal on every rank (one slot of the contract).
void match_unbalanced(collective_call& call, double reg_m_rows, double reg_m_cols, reg_type type, stop_rule stop);

/// stop_rule::change: the largest change of one side's scalings in an iteration
/// and the largest scalings before and after, each kept as its maximum.
struct change_terms {
  double diff = 0, now = 0, before = 0;
  void add(double u, double u_prev) {
    diff = std::max(diff, std::abs(u - u_prev));
    now = std::max(now, std::abs(u));
    before = std::max(before, std::abs(u_prev));
  }
  double relative() const { return diff / std::max({now, before, 1.0}); }
};

/// Moves the log's outcome into a scaling_result or transport_result.
template <class Result>
void take_log(Result& res, iteration_log& log, const timing& t) {
  res.state = log.state;
  res.iterations = log.iterations;
  res.error = log.error;
  res.error_history = std::move(log.history);
  res.time = t;
}

template <class T>
bool all_finite(const std::vector<T>& x) {
  return std::all_of(x.begin(), x.end(), [](T y) { return std::isfinite(y); });
}

/// Validated warm-start vector (empty: `fill`), converted to T.
template <class T>
std::vector<T> initial(const std::vector<double>& given, std::size_t n, T fill) {
  if (given.empty()) return std::vector<T>(n, fill);
  return std::vector<T>(given.begin(), given.end());
}

}  // namespace conveyor::sinkhorn::detail
