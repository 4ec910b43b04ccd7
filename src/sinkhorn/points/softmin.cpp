// SPDX-License-Identifier: BSD-3-Clause
// The softmin on a formed cost array (conveyor/sinkhorn.hpp, sinkhorn::softmin):
// GeomLoss's "tensorized" update, lse_i = LSE_j (h_j - C_ij / eps), one row at a
// time by the dense solver's exp_row (the log domain's row pass), rows over the
// OpenMP threads. Why a kernel of its own: an eps-scaling loop changes eps at
// every step, so the kernel exp(-C / eps) cannot be formed once as the solvers
// do; each call reads C once and takes one exp per entry.
// Work: batch n m (FMA + exp); bytes read: C once; no messages beyond the
// contract's agreement.
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conveyor/sinkhorn.hpp"
#include "sinkhorn/run_context.hpp"
#include "sinkhorn/dense/scaling_kernels.hpp"

namespace conveyor::sinkhorn::detail {
namespace {

template <class T>
void softmin_entry(const T* C, std::size_t batch, std::size_t n, std::size_t m, const T* h, double eps, T* lse, T* W,
                   MPI_Comm comm, int threads) {
  const char* what = "sinkhorn::softmin";
  collective_call call(what, comm);
  const bool eps_valid = std::isfinite(eps) && eps > 0;
  const std::size_t rows = batch * n;
  call.check([&] {
    if (!eps_valid) throw error(errc::invalid_argument, "eps must be finite and > 0, got " + std::to_string(eps));
    if (threads < 0) throw error(errc::invalid_argument, "threads must be >= 0");
    if (rows > 0 && m > 0 && !C) throw error(errc::invalid_argument, "C is null");
    if (batch > 0 && m > 0 && !h) throw error(errc::invalid_argument, "h is null");
    if (rows > 0 && !lse) throw error(errc::invalid_argument, "lse is null");
  });
  call.must_match("column counts m", static_cast<std::int64_t>(m))
      .must_match("batch sizes", static_cast<std::int64_t>(batch))
      .must_match("dtypes", dtype_of_v<T>);
  if (eps_valid) call.must_match_real("eps values", eps);
  agreed_context(call);
  const int nt = threads_for(call, threads, rows * m);
  const kernels<T>& k = active<T>();
  const T inv_eps = static_cast<T>(1 / eps);
  const T nan = std::numeric_limits<T>::quiet_NaN();
#pragma omp parallel num_threads(nt)
  {
    std::vector<T> scratch(W ? 0 : m);  // (with W, each row's exponentials are written in place)
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < rows; ++i) {
      const std::size_t q = i / n;
      T* e = W ? W + i * m : scratch.data();
      T max = 0;
      const T sum = k.exp_row(C + i * m, h + q * m, inv_eps, e, m, &max);
      lse[i] = max + std::log(sum);
      if (W) {
        if (sum > 0) k.scale(e, 1 / sum, m);
        else std::fill(e, e + m, nan);
      }
    }
  }
}

}  // namespace
}  // namespace conveyor::sinkhorn::detail

namespace conveyor::sinkhorn {

void softmin(const double* C, std::size_t batch, std::size_t n, std::size_t m, const double* h, double eps, double* lse,
             double* W, MPI_Comm comm, int threads) {
  detail::softmin_entry<double>(C, batch, n, m, h, eps, lse, W, comm, threads);
}

void softmin(const float* C, std::size_t batch, std::size_t n, std::size_t m, const float* h, double eps, float* lse,
             float* W, MPI_Comm comm, int threads) {
  detail::softmin_entry<float>(C, batch, n, m, h, eps, lse, W, comm, threads);
}

}  // namespace conveyor::sinkhorn
