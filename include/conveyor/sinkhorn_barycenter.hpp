// SPDX-License-Identifier: BSD-3-Clause
// Entropic Wasserstein barycenter on a fixed support: iterative Bregman projections
// (Benamou, Carlier, Cuturi, Nenna, Peyré 2015), POT's ot.bregman.barycenter.
//
// Given H histograms A_k on `dim` points, weights w_k and the dim x dim cost C,
// find the histogram q minimizing sum_k w_k OT_eps(q, A_k). With K = exp(-C/eps)
// and one scaling u_k per histogram (all ranks hold all of them), an iteration is
//   s_k = K^T (A_k / K u_k)          [the plans' column sums, / u_k]
//   q   = exp(sum_k w_k log(u_k s_k)) (the weighted geometric mean)
//   u_k = u_k q / (u_k s_k)
// and its error is sum_j std_k (u_k s_k)_j: how far the H plans' second marginals
// still are from one another (POT's test). The log-domain form iterates on log
// scalings with one log-sum-exp per row and histogram and stays finite for any eps.
//
// Distributed like the dense OT solver: each rank holds its rows of C (any split)
// and the whole A; the column sums of the H plans, H x dim values, are combined
// with conveyor::allreduce once per iteration, and every rank returns the same q.
// Per iteration: H dot products and H axpys per row of K (one read of K), or H
// exp passes over a row of C in the log domain. docs/algorithms.md, "Barycenter".
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/types.hpp"

namespace conveyor::sinkhorn {

struct barycenter_options {
  double tol = 1e-4;  // on sum_j std_k of the plans' column sums
  int max_iter = 1000;
  /// Convergence is tested on iterations first_check, first_check + check_every,
  /// ... (POT: 2, 12, 22, ...); the error is recorded on every iteration.
  int check_every = 1;
  int first_check = 1;
  /// Iterate on log scalings (POT's method="sinkhorn_log").
  bool log_domain = false;
  /// OpenMP threads per rank; 0: automatic, as options::threads.
  int threads = 0;
  /// Passed to the allreduce of the plans' column sums.
  allreduce_options allreduce;
};

template <class T>
struct barycenter_result {
  status state = status::max_iter;
  int iterations = 0;
  double error = 0;                   // of the returned barycenter's iteration
  std::vector<double> error_history;  // one entry per iteration
  std::vector<T> barycenter;          // dim values, the same on every rank
  /// hists x dim: log v_k, the column-side log scaling of plan k = diag(A_k / K v_k)
  /// K diag(v_k) after the last iteration (what gradients through the barycenter
  /// start from); the same on every rank.
  std::vector<double> log_v;
  int threads = 0;
  timing time;
};

/// The barycenter of the columns of A (dim x hists, row-major: A[i * hists + k]
/// is point i of histogram k; the same on every rank) with weights (hists values;
/// null: uniform), under this rank's `rows` rows of the cost (row stride ld >=
/// dim). Every histogram must be finite, >= 0 and have the mass of the first;
/// weights finite and >= 0. Collective over `comm`.
CONVEYOR_API barycenter_result<double> barycenter(const double* C, std::size_t rows, std::size_t dim, std::size_t ld,
                                                  const double* A, std::size_t hists, const double* weights, double eps,
                                                  MPI_Comm comm, const barycenter_options& opts = {});
CONVEYOR_API barycenter_result<float> barycenter(const float* C, std::size_t rows, std::size_t dim, std::size_t ld,
                                                 const float* A, std::size_t hists, const float* weights, double eps,
                                                 MPI_Comm comm, const barycenter_options& opts = {});

}  // namespace conveyor::sinkhorn
