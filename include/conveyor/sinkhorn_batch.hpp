// SPDX-License-Identifier: BSD-3-Clause
// Many small entropic OT problems in one call (minibatch OT in training loops:
// POT's ot.batch, ott-jax under vmap, GeomLoss's (B, N, D) batches).
//
// Each problem is solved to its own convergence by the log-domain Sinkhorn
// iteration, in the point-cloud solver's order and units (log_u = f / eps,
// log_v = g / eps, both starting at 0):
//   X pass: lse_i = LSE_j (log_v_j - C_ij / eps); the previous iterate's row sums
//           exp(log_u_i + lse_i) give its marginal error (every column sum is
//           exact after a Y pass); log_u_i = log a_i - lse_i;
//   Y pass: log_v_j = log b_j - LSE_i (log_u_i - C_ij / eps).
// C is a given cost array (transport_batch) or recomputed from the points in
// SIMD tiles (transport_points_batch: no n x m array, as transport_points).
//
// Parallelism: the problems, not the pairs. The OpenMP threads of a rank take
// its problems one at a time (dynamic schedule), each problem on one thread from
// start to end, so a problem that converges early frees its thread for the next.
// With a communicator, each rank passes its own problems (any number, zero
// included) and gets their results: nothing travels but the contract's checks.
// Work per problem: 2 n m (exp + FMA) per iteration (+ d FMAs per pair for
// points); memory per thread: C^T of one problem (transport_batch) or both
// clouds transposed (points). For few large problems use transport /
// transport_points instead, which split one problem over threads and ranks.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "conveyor/point_metric.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/types.hpp"

namespace conveyor::sinkhorn {

struct batch_options {
  double tol = 1e-9;    // on each problem's row-marginal error, in `norm`
  int max_iter = 1000;  // per problem
  error_norm norm = error_norm::l1;
  /// Convergence is tested after iterations check_every, 2 check_every, ...
  /// (POT's batch solvers: 10), and after the last.
  int check_every = 1;
  /// OpenMP threads per rank; 0: as sinkhorn::options::threads.
  int threads = 0;
  /// transport_points_batch only: the ground cost.
  sinkhorn::metric metric = sinkhorn::metric::sqeuclidean;
};

/// One entry per problem of this rank, problem-major like the inputs.
template <class T>
struct batch_result {
  std::vector<status> state;
  std::vector<int> iterations;
  std::vector<double> error;    // row-marginal error of the returned pair
  std::vector<double> cost;     // <P, C>
  std::vector<double> entropy;  // H(P) = -sum P log P (0 log 0 = 0)
  std::vector<double> kl;       // KL(P | a b^T) = sum P log(P / (a b^T)) (POT's reg_type "kl" term)
  std::vector<T> log_u;         // batch x n
  std::vector<T> log_v;         // batch x m
  int threads = 0;
  double seconds = 0;
};

/// `batch` problems on this rank, each an n x m cost matrix (C: batch x n x m,
/// row-major, contiguous) with weights a (batch x n) and b (batch x m), null:
/// uniform 1/n, 1/m. Each problem's weights must have equal positive masses.
/// n, m, eps and the options must agree over `comm`; batch may differ. Collective.
CONVEYOR_API batch_result<double> transport_batch(const double* C, std::size_t batch, std::size_t n, std::size_t m,
                                                  const double* a, const double* b, double eps, MPI_Comm comm,
                                                  const batch_options& opts = {});
CONVEYOR_API batch_result<float> transport_batch(const float* C, std::size_t batch, std::size_t n, std::size_t m,
                                                 const float* a, const float* b, double eps, MPI_Comm comm,
                                                 const batch_options& opts = {});

/// The same between point clouds: X (batch x n x dim) and Y (batch x m x dim),
/// the cost recomputed from the points (opts.metric).
CONVEYOR_API batch_result<double> transport_points_batch(const double* X, const double* Y, std::size_t batch,
                                                         std::size_t n, std::size_t m, std::size_t dim, const double* a,
                                                         const double* b, double eps, MPI_Comm comm,
                                                         const batch_options& opts = {});
CONVEYOR_API batch_result<float> transport_points_batch(const float* X, const float* Y, std::size_t batch,
                                                        std::size_t n, std::size_t m, std::size_t dim, const float* a,
                                                        const float* b, double eps, MPI_Comm comm,
                                                        const batch_options& opts = {});

}  // namespace conveyor::sinkhorn
