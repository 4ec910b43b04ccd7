// SPDX-License-Identifier: BSD-3-Clause
// Entropic optimal transport between two point clouds, the cost never stored.
//
// Given points x_1..x_n and y_1..y_m in R^d with weights a and b and a ground cost
// C_ij = ||x_i - y_j||^2 (or ||x_i - y_j||), the log-domain Sinkhorn iteration
//   log_u_i = log a_i - LSE_j (log_v_j - C_ij / eps)
//   log_v_j = log b_j - LSE_i (log_u_i - C_ij / eps)
// with the plan P_ij = exp(log_u_i + log_v_j - C_ij / eps) (POT's
// empirical_sinkhorn(isLazy=True) iterates the same, in the same order). Each
// C_ij is recomputed in SIMD tiles when it is needed; no n x m array exists.
//
// Distributed: each rank passes its share of X (with a) and its share of Y (with
// b), any sizes, zero included. The other side's points and potentials travel
// round the ranks in a ring, one block per step, the transfer of the next block
// overlapped with the work on the current one. Memory per rank: its shares plus
// two blocks of the largest share, (n_r + m_r) d + 2 (d + 1) max_q m_q elements.
// docs/algorithms.md, "Point-cloud Sinkhorn", has the steps and their costs.
//
// Convergence: the error of an iterate (log_u, log_v) is the L1 (or L2) distance
// between its row sums and a, over all ranks; the log-sum-exp of the next row
// update gives it without another pass, so the returned pair is the measured one.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <limits>
#include <string_view>
#include <vector>

#include "conveyor/point_metric.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/types.hpp"

namespace conveyor::sinkhorn {

/// How the other side's points reach every rank: automatic (default), ring,
/// gather. Described in conveyor/enums.h; docs/algorithms.md, "Point clouds".
CONVEYOR_DECLARE_ENUM(exchange, CONVEYOR_POINTS_EXCHANGE_LIST, exchange_name, parse_exchange);

/// One of the exchanges, as their table describes it
/// (src/sinkhorn/points/exchange_table.cpp: one row each).
struct exchange_info {
  exchange way;
  std::string_view name;  // Python's name ("ring", ...)
  const char* summary;    // what it does and when it pays
};
/// Every exchange but `automatic`, in the table's order (`automatic` runs a side's
/// first pass by the first, then the cheapest for that side): what `conveyor info`
/// lists, and the case lists of the benchmarks and tests.
CONVEYOR_API const std::vector<exchange_info>& points_exchanges();

struct points_options {
  sinkhorn::metric metric = sinkhorn::metric::sqeuclidean;
  double tol = 1e-9;  // on the row-marginal error, in `norm`
  int max_iter = 1000;
  error_norm norm = error_norm::l1;  // l1 is POT's for point clouds
  /// The error is measured after every iteration; convergence is tested after
  /// iterations check_every, 2 check_every, ... (POT's empirical_sinkhorn: 10).
  int check_every = 1;
  /// OpenMP threads per rank; 0: as sinkhorn::options::threads.
  int threads = 0;
  /// Unbalanced OT, as sinkhorn::options: KL penalties on the X (row) and Y
  /// (column) marginals; infinity keeps a marginal a constraint.
  double reg_m_rows = std::numeric_limits<double>::infinity();
  double reg_m_cols = std::numeric_limits<double>::infinity();
  sinkhorn::reg_type reg_type = sinkhorn::reg_type::kl;
  /// What the convergence test measures (marginal: the row-marginal error).
  stop_rule stop = stop_rule::marginal;
  /// eps-scaling (0: off): before iterating at eps, one update of each side at
  /// eps_k = D^p s^k for k = 0, 1, ... while eps_k > eps, D the diameter of the
  /// clouds' common bounding box, p = 2 (sqeuclidean) or 1 (euclidean), s this
  /// factor in (0, 1) (GeomLoss's `scaling` is s^(1/p)); the dual potentials
  /// f = eps log_u carry from one step to the next. Fewer iterations at small eps.
  double eps_scaling = 0;
  /// Warm start: log_u of this rank's X points, log_v of its Y points (both or
  /// neither; empty: zeros).
  std::vector<double> init_log_u, init_log_v;
  /// How each side travels to the other's ranks (the result's bits do not depend on it).
  sinkhorn::exchange exchange = sinkhorn::exchange::automatic;
};

template <class T>
struct points_result {
  status state = status::max_iter;
  int iterations = 0;                 // completed (log_u, log_v) updates at eps
  int annealing_steps = 0;            // eps-scaling steps before them (one update of each side each)
  double error = 0;                   // row-marginal error of the returned pair (options.norm)
  std::vector<double> error_history;  // the error of iterations 1, 2, ... (as measured)
  double cost = 0;                    // <P, C> over all ranks
  std::vector<T> log_u;               // this rank's X points: f / eps
  std::vector<T> log_v;               // this rank's Y points: g / eps
  int threads = 0;                    // OpenMP threads this rank ran with
  timing time;                        // row_pass: X updates; column_pass: Y updates
  /// How X's and Y's points reached the other ranks: the way of each side's last
  /// pass (never automatic: automatic's choice after that side's first pass, or
  /// the table's first row if it made none), the same on every rank.
  sinkhorn::exchange exchange_x = sinkhorn::exchange::automatic;
  sinkhorn::exchange exchange_y = sinkhorn::exchange::automatic;
};

/// Entropic OT between this rank's n points X (n x dim, row-major) with weights a
/// and its m points Y (m x dim) with weights b; the other ranks hold the rest.
/// a or b null: uniform weights 1/N (N the total count over all ranks). dim must
/// be the same on every rank and >= 1. Collective over `comm`.
CONVEYOR_API points_result<double> transport_points(const double* X, std::size_t n, const double* Y, std::size_t m,
                                                    std::size_t dim, const double* a, const double* b, double eps,
                                                    MPI_Comm comm, const points_options& opts = {});
CONVEYOR_API points_result<float> transport_points(const float* X, std::size_t n, const float* Y, std::size_t m,
                                                   std::size_t dim, const float* a, const float* b, double eps,
                                                   MPI_Comm comm, const points_options& opts = {});

/// What apply_plan_points computes.
struct plan_apply_options {
  sinkhorn::metric metric = sinkhorn::metric::sqeuclidean;  // the solve's
  /// false: out = P V, a row of k per X point of this rank, V a row per Y point;
  /// true: out = P^T V, a row per Y point of this rank, V a row per X point.
  bool transpose = false;
  /// OpenMP threads per rank; 0: as points_options::threads.
  int threads = 0;
  /// Independent problems in one call (GeomLoss's batches (B, N, D)): every
  /// array holds `batch` problems one after another, problem-major (X: batch x n
  /// x dim, Y: batch x m x dim, potentials batch x n and batch x m, V and out
  /// batch x count x k), each problem's points meeting only its own, with one eps
  /// and metric. Each rank holds its share (n, m) of every problem's points. One
  /// ring carries every problem's blocks at once and the threads share all the
  /// problems' rows, so many small problems cost one call's latency, not batch's.
  /// The indices in error messages are then flat over (problem, point). 0: nothing.
  std::size_t batch = 1;
  /// The entries used, (P o C^cost_power): 0 the plan itself; 1 each entry times
  /// its cost C_ij (the rows' transport costs, sum_j P_ij C_ij); -1 divided by it,
  /// 0 where C_ij = 0 (with the euclidean metric, sum_j P_ij (x_i - y_j) / C_ij is
  /// the cost's gradient in x_i: a p = 1 loss's). softmin_points weighs its
  /// averages so and keeps its log-sum-exps the plain ones. Costs near 0 are
  /// computed by differences (exact at distance 0), also on the dot-product path.
  int cost_power = 0;
};

/// The plan of a point-cloud solve, P_ij = exp(log_u_i + log_v_j - C(x_i, y_j) / eps),
/// applied to k values per point without forming it:
///   out_i = sum_j P_ij V_j   (this rank's X points; every rank's Y points and V),
/// or with transpose out_j = sum_i P_ij V_i. The arguments are those of the solve
/// (this rank's points and its result's log_u, log_v) plus V (k values per point
/// of the other side held by this rank, row-major) and out (k per own point).
/// Each row's sum is folded in double with a running maximum (no overflow for any
/// eps). The barycentric map of X onto Y: V = Y (k = dim), then divide out_i by a_i.
/// Collective over `comm`; the work is that of one solver pass.
CONVEYOR_API void apply_plan_points(const double* X, std::size_t n, const double* Y, std::size_t m, std::size_t dim,
                                    const double* log_u, const double* log_v, double eps, const double* V,
                                    std::size_t k, double* out, MPI_Comm comm, const plan_apply_options& opts = {});
CONVEYOR_API void apply_plan_points(const float* X, std::size_t n, const float* Y, std::size_t m, std::size_t dim,
                                    const float* log_u, const float* log_v, double eps, const float* V, std::size_t k,
                                    float* out, MPI_Comm comm, const plan_apply_options& opts = {});

/// The softmin behind entropic OT's dual updates (GeomLoss's and the symmetric
/// eps-scaling loop's), and averages under it, without forming a matrix: for each
/// of this rank's points x_i,
///   lse_i = LSE_j (h_j - C(x_i, y_j) / eps)           over every rank's y_j,
///   avg_i = sum_j w_ij V_j,  w_ij = exp(h_j - C(x_i, y_j) / eps - lse_i)
/// (k values per point, row-major; nothing with k = 0). h: this rank's Y points'
/// potentials (-Inf: a point left out). The softmin of GeomLoss is -eps lse_i
/// with h_j = log b_j + g_j / eps; with V = Y and the squared Euclidean cost,
/// 2 (x_i - avg_i) is its gradient in x_i (the w_ij of a row sum to 1). Each row is
/// folded in double with a running maximum (no overflow for any h or eps); a row
/// whose every h_j is -Inf gets lse_i = -Inf and avg_i = NaN. opts.transpose must
/// be false (swap the sides instead). Collective over `comm`; one solver pass.
CONVEYOR_API void softmin_points(const double* X, std::size_t n, const double* Y, std::size_t m, std::size_t dim,
                                 const double* h, double eps, const double* V, std::size_t k, double* lse, double* avg,
                                 MPI_Comm comm, const plan_apply_options& opts = {});
CONVEYOR_API void softmin_points(const float* X, std::size_t n, const float* Y, std::size_t m, std::size_t dim,
                                 const float* h, double eps, const float* V, std::size_t k, float* lse, float* avg,
                                 MPI_Comm comm, const plan_apply_options& opts = {});

}  // namespace conveyor::sinkhorn
