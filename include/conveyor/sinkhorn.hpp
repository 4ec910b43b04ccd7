// SPDX-License-Identifier: BSD-3-Clause
// Distributed Sinkhorn–Knopp: matrix scaling and entropic optimal transport.
//
// Rows are block-partitioned across the ranks of a communicator: each rank passes
// its own rows (any number, zero included) and the full-length column data. Column
// sums are combined with conveyor::allreduce every iteration. The result on P ranks
// equals the single-process result up to floating-point reassociation.
//
// Matrix scaling: given a non-negative M x N matrix A and marginals r (M) and c (N)
// with equal sums, find u, v with diag(u) A diag(v) having row sums r and column
// sums c.
//
// Entropic OT: given costs C, regularization eps and histograms a, b, the plan
// P = diag(u) exp(-C/eps) diag(v), its cost <P, C> and the log scalings log u,
// log v (the dual potentials are f = eps log u, g = eps log v; the point-cloud
// solver returns the same). The log-domain variant iterates on log u, log v
// directly and stays finite where exp(-C/eps) underflows.
//
// Convergence: the error is the column-marginal error of the iterate right after
// its row update (rows exact), sum_j |colsum_j - c_j| (or its L2 form, POT's),
// computed from the column sums the iteration needs anyway: no extra pass over A,
// and no lag for the returned (u, v) of the fused and log-domain kernels. See
// docs/algorithms.md.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <limits>
#include <string_view>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/types.hpp"

namespace conveyor::sinkhorn {

/// How one iteration walks the matrix (docs/algorithms.md, "Sinkhorn").
/// fused (default: never writes A), typical, c2r, blocked (the paper's Algorithms
/// 1-3, in place): described in conveyor/enums.h.
CONVEYOR_DECLARE_ENUM(variant, CONVEYOR_SINKHORN_VARIANT_LIST, variant_name, parse_variant);
/// One variant, as the table of variants describes it (src/sinkhorn/dense/variant_table.cpp).
struct variant_info {
  variant which;
  std::string_view name;  // Python's and the tools' name ("fused", ...)
  const char* summary;    // how it walks the matrix
  bool rewrites_matrix;   // it rescales A itself (the in-place solver)
};
/// Every variant, in the enum's order: what `conveyor info` lists, and the case
/// lists of the benchmarks and tests.
CONVEYOR_API const std::vector<variant_info>& variants();
/// The row's rewrites_matrix: true for the variants that rescale A itself
/// (typical, c2r, blocked).
CONVEYOR_API bool rewrites_matrix(variant v);

/// The norm of the column-marginal error: l1 (default), l2 (POT's).
CONVEYOR_DECLARE_ENUM(error_norm, CONVEYOR_SINKHORN_NORM_LIST, norm_name, parse_norm);

/// Unbalanced OT: the plan's entropic term, kl (KL(P | a b^T), POT's default) or
/// entropy (KL(P | 1)); described in conveyor/enums.h.
CONVEYOR_DECLARE_ENUM(reg_type, CONVEYOR_SINKHORN_REG_TYPE_LIST, reg_type_name, parse_reg_type);

/// What the stopping test measures: marginal (default) or change (POT's rule for
/// unbalanced OT); described in conveyor/enums.h.
CONVEYOR_DECLARE_ENUM(stop_rule, CONVEYOR_SINKHORN_STOP_LIST, stop_rule_name, parse_stop_rule);

/// converged (error <= tol), max_iter, numerical_failure (a scaling factor or
/// column sum became 0, Inf or NaN; the last good iterate is kept).
CONVEYOR_DECLARE_REPORTED_ENUM(status, CONVEYOR_SINKHORN_STATUS_LIST, status_name);

/// Blocking of the `blocked` variant (the paper's defaults).
struct blocking {
  std::size_t mc = 8;     // rows per block
  std::size_t nc = 1000;  // columns per block (the length of the temp vector)
  std::size_t mr = 4;     // rows of the micro-kernel
  std::size_t nr = 4;     // columns of the micro-kernel (rounded up to whole SIMD vectors)
};

struct options {
  sinkhorn::variant variant = sinkhorn::variant::fused;
  double tol = 1e-9;  // on the column-marginal error, in `norm`
  int max_iter = 1000;
  /// The error's norm (l1: sum_j |colsum_j - c_j|; l2: POT's).
  error_norm norm = error_norm::l1;
  /// Convergence is tested on iterations 1, 1 + check_every, 1 + 2 check_every, ...
  /// (POT tests every 10th); the error is recorded on every iteration either way.
  int check_every = 1;
  /// Begin with a column update from init_u (ones when empty; log domain: log u,
  /// zeros when empty) instead of a row update from init_v, which
  /// is then ignored: POT's order (v = b / K^T u, then u = a / K v). One more
  /// pass over the matrix, before the first iteration.
  bool columns_first = false;
  /// OpenMP threads per rank; 0: OpenMP's default for this process, capped by the
  /// rank's share of its node's CPUs (the union of the node's ranks' affinity
  /// masks, divided among them), fewer for small local blocks (one per 64 Ki
  /// elements). With more threads than cores, set OMP_WAIT_POLICY=passive so idle
  /// threads sleep.
  int threads = 0;
  /// Entropic OT only: iterate on potentials with log-sum-exp (any eps).
  bool log_domain = false;
  /// Entropic OT only, unbalanced: KL penalties on the row and column marginals
  /// (POT's reg_m) instead of constraints; infinity keeps a marginal a
  /// constraint. Either finite: the log-domain iteration runs (log_domain is
  /// implied), the masses of a and b may differ, and the updates become
  /// log u = log a - fi LSE(...) with fi = reg_m / (reg_m + eps) (reg_type kl;
  /// entropy: fi (log a - LSE)). docs/algorithms.md, "Unbalanced".
  double reg_m_rows = std::numeric_limits<double>::infinity();
  double reg_m_cols = std::numeric_limits<double>::infinity();
  sinkhorn::reg_type reg_type = sinkhorn::reg_type::kl;
  /// What the convergence test measures (marginal: the column-marginal error;
  /// change runs the log-domain iteration and lets a and b differ in mass).
  stop_rule stop = stop_rule::marginal;
  /// In-place variants: scale each chunk of columns as soon as its column sums
  /// arrive from the allreduce (the paper's overlap). The fused kernel overlaps
  /// the v update and the error with the allreduce either way.
  bool overlap = true;
  blocking block;
  /// Warm start. Scaling vectors (u: this rank's rows, v: all columns), or for
  /// log-domain OT their logs (a transport_result's log_u, log_v). Empty: start
  /// from ones / zeros.
  std::vector<double> init_u, init_v;
  /// Passed to the column-sum allreduce (algorithm, segment size, ranks per node).
  allreduce_options allreduce;
};

/// Where an iteration spent its time, summed over the iterations (this rank).
struct timing {
  double row_pass = 0;     // row sums/dots and u
  double column_pass = 0;  // local column sums, allreduce, v, column scaling
  double allreduce = 0;    // the part of column_pass inside allreduce (includes on_chunk work)
  double total = 0;        // the whole solve, validation included
};

template <class T>
struct scaling_result {
  status state = status::max_iter;
  int iterations = 0;
  double error = 0;                   // column-marginal error of the returned (u, v) (options.norm)
  std::vector<double> error_history;  // one entry per iteration
  std::vector<T> u;                   // this rank's rows
  std::vector<T> v;                   // all columns (identical on every rank)
  int threads = 0;                    // OpenMP threads this rank ran with (options.threads or automatic)
  timing time;
};

template <class T>
struct transport_result {
  status state = status::max_iter;
  int iterations = 0;
  double error = 0;
  std::vector<double> error_history;
  double cost = 0;       // <P, C> summed over all ranks
  std::vector<T> log_u;  // this rank's rows: log u = f / eps (f the dual potential)
  std::vector<T> log_v;  // all columns: log v = g / eps
  int threads = 0;       // OpenMP threads this rank ran with (options.threads or automatic)
  timing time;
};

/// Scales `rows` x `cols` rows of A (row stride `ld` >= cols) held by this rank.
/// `r`: this rank's row marginals; `c`: all column marginals (same on every rank).
/// Only options.kind == fused is allowed here (A is read-only); use scale_in_place
/// for the paper's in-place variants. Collective over `comm`.
CONVEYOR_API scaling_result<double> scale(const double* A, std::size_t rows, std::size_t cols, std::size_t ld,
                                          const double* r, const double* c, MPI_Comm comm, const options& opts = {});
CONVEYOR_API scaling_result<float> scale(const float* A, std::size_t rows, std::size_t cols, std::size_t ld,
                                         const float* r, const float* c, MPI_Comm comm, const options& opts = {});

/// Like scale, with any variant, and A overwritten by diag(u) A diag(v).
/// On numerical failure u, v are the last good iterate but A has its last state.
CONVEYOR_API scaling_result<double> scale_in_place(double* A, std::size_t rows, std::size_t cols, std::size_t ld,
                                                   const double* r, const double* c, MPI_Comm comm,
                                                   const options& opts = {});
CONVEYOR_API scaling_result<float> scale_in_place(float* A, std::size_t rows, std::size_t cols, std::size_t ld,
                                                  const float* r, const float* c, MPI_Comm comm,
                                                  const options& opts = {});

/// Entropic OT on this rank's `rows` x `cols` rows of the cost matrix C (stride ld).
/// `a`: this rank's row histogram; `b`: the column histogram. If `plan` is not null
/// it receives this rank's rows of the plan (stride `plan_ld`, 0 means `cols`).
/// The plain kernel uses options.kind (exp(-C/eps) is formed once); log_domain
/// ignores it.
CONVEYOR_API transport_result<double> transport(const double* C, std::size_t rows, std::size_t cols, std::size_t ld,
                                                const double* a, const double* b, double eps, MPI_Comm comm,
                                                const options& opts = {}, double* plan = nullptr,
                                                std::size_t plan_ld = 0);
CONVEYOR_API transport_result<float> transport(const float* C, std::size_t rows, std::size_t cols, std::size_t ld,
                                               const float* a, const float* b, double eps, MPI_Comm comm,
                                               const options& opts = {}, float* plan = nullptr,
                                               std::size_t plan_ld = 0);

/// GeomLoss's softmin on a formed cost array (the dense counterpart of
/// softmin_points): for each of this rank's rows i of C (batch x n x m, row-major,
/// contiguous; every problem's m columns whole on every rank),
///   lse_i = LSE_j (h_j - C_ij / eps)      (h: batch x m, the columns' potentials),
/// and with W not null the row's weights W_ij = exp(h_j - C_ij / eps - lse_i),
/// which sum to 1 (W: batch x n x m; GEMMs of W give the averages softmin_points
/// folds into its pass). Each row is one exp_row of the dense solver's log domain
/// (a running maximum, then the sum of exponentials in T). A row whose every h_j
/// is -Inf gets lse_i = -Inf and a NaN row of W. NaN in C or h gives NaN. Rows go
/// over the OpenMP threads (`threads`; 0: the solvers' automatic rule). Local
/// work; collective over `comm` only for the contract (m, batch, eps and dtype
/// must match), so a bad argument raises the same error on every rank.
CONVEYOR_API void softmin(const double* C, std::size_t batch, std::size_t n, std::size_t m, const double* h, double eps,
                          double* lse, double* W, MPI_Comm comm, int threads = 0);
CONVEYOR_API void softmin(const float* C, std::size_t batch, std::size_t n, std::size_t m, const float* h, double eps,
                          float* lse, float* W, MPI_Comm comm, int threads = 0);

/// The rows [first, first + count) of an M-row matrix that `rank` of `size` holds
/// under the balanced block partition (the first M % size ranks get one more).
using row_block = row_range;
CONVEYOR_API row_block balanced_rows(std::size_t M, int rank, int size);

}  // namespace conveyor::sinkhorn
