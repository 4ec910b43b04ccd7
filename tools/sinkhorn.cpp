// SPDX-License-Identifier: BSD-3-Clause
// `conveyor sinkhorn`: solve one matrix-scaling or entropic-OT problem on the ranks
// of the job, generated or read (each rank its own rows) from a .npy file, and
// print iterations, error and time.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "conveyor/sinkhorn.hpp"
#include "npy.hpp"
#include "tool.hpp"

namespace conveyor::tool {
namespace {

namespace sk = conveyor::sinkhorn;

double uniform(std::uint64_t seed, std::uint64_t i) {  // splitmix64 of (seed, i), in [0, 1)
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 9007199254740992.0;
}

template <class T>
int solve(const sinkhorn_cli_options& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::size_t M = o.rows, N = o.cols;
  npy_header h;
  if (!o.input.empty()) {
    h = read_npy_header(o.input);
    if (h.item_size != sizeof(T)) {
      throw error(errc::invalid_argument, o.input + ": holds float" + std::to_string(8 * h.item_size) +
                                              ", but --dtype is float" + std::to_string(8 * sizeof(T)));
    }
    M = h.rows;
    N = h.cols;
  }
  const sk::row_block b = sk::balanced_rows(M, rank, size);
  std::vector<T> A;
  if (!o.input.empty()) {
    A = read_npy_rows<T>(o.input, h, b.first, b.count);
  } else {
    A.resize(b.count * N);
    // Scaling: entries in [0.05, 1.05). OT: squared distances of random points on [0, 1).
    for (std::size_t i = 0; i < b.count; ++i) {
      const double x = uniform(o.seed, b.first + i);
      for (std::size_t j = 0; j < N; ++j) {
        const double y = uniform(o.seed + 1, j);
        A[i * N + j] = static_cast<T>(o.ot ? (x - y) * (x - y) : 0.05 + uniform(o.seed + 2, (b.first + i) * N + j));
      }
    }
  }
  const std::vector<T> r(b.count, static_cast<T>(1.0 / static_cast<double>(M)));
  const std::vector<T> c(N, static_cast<T>(1.0 / static_cast<double>(N)));
  sk::options opts;
  opts.variant = sk::parse_variant(o.variant);
  opts.tol = o.tol;
  opts.max_iter = o.max_iter;
  opts.threads = o.threads;
  opts.log_domain = o.log_domain;

  sk::status state;
  int iterations;
  double err, total, per_iter, cost = 0;
  if (o.ot) {
    const auto res = sk::transport(A.data(), b.count, N, N, r.data(), c.data(), o.eps, comm, opts);
    state = res.state, iterations = res.iterations, err = res.error, cost = res.cost, total = res.time.total;
    per_iter = (res.time.row_pass + res.time.column_pass) / std::max<std::size_t>(res.error_history.size(), 1);
  } else {
    const auto res = sk::rewrites_matrix(opts.variant)
                         ? sk::scale_in_place(A.data(), b.count, N, N, r.data(), c.data(), comm, opts)
                         : sk::scale(A.data(), b.count, N, N, r.data(), c.data(), comm, opts);
    state = res.state, iterations = res.iterations, err = res.error, total = res.time.total;
    per_iter = (res.time.row_pass + res.time.column_pass) / std::max<std::size_t>(res.error_history.size(), 1);
  }
  double slowest[2] = {total, per_iter};
  MPI_Allreduce(MPI_IN_PLACE, slowest, 2, MPI_DOUBLE, MPI_MAX, comm);
  if (rank == 0) {
    std::printf("problem     %s %zu x %zu %s (%s)\n", o.ot ? "entropic OT" : "matrix scaling", M, N,
                sizeof(T) == 8 ? "float64" : "float32", o.input.empty() ? "generated" : o.input.c_str());
    std::printf("solver      %s%s on %d rank(s)\n", o.ot && o.log_domain ? "log-domain" : o.variant.c_str(),
                o.ot ? (" eps=" + std::to_string(o.eps)).c_str() : "", size);
    std::printf("status      %s after %d iterations\n", std::string(sk::status_name(state)).c_str(), iterations);
    std::printf("error       %.3e (L1 column-marginal, tol %.1e)\n", err, o.tol);
    if (o.ot) std::printf("cost        %.9g\n", cost);
    std::printf("time        %.3f s total, %.3f ms per iteration\n", slowest[0], slowest[1] * 1e3);
  }
  return state == sk::status::numerical_failure ? 2 : 0;
}

}  // namespace

void add_sinkhorn_options(CLI::App& app, sinkhorn_cli_options& o) {
  app.add_option("--input", o.input,
                 ".npy matrix (C order, float32/float64): A to scale, or the cost matrix with --ot");
  app.add_option("--rows", o.rows, "Rows of a generated problem")->capture_default_str();
  app.add_option("--cols", o.cols, "Columns of a generated problem")->capture_default_str();
  app.add_option("--dtype", o.dtype, "float64 or float32")
      ->capture_default_str()
      ->check(CLI::IsMember({"float64", "float32"}));
  app.add_option("--variant", o.variant, "fused, typical, c2r or blocked")->capture_default_str();
  app.add_flag("--ot", o.ot, "Entropic optimal transport with uniform histograms (the input is the cost matrix)");
  app.add_option("--eps", o.eps, "OT regularization")->capture_default_str();
  app.add_flag("--log", o.log_domain, "Log-domain OT iteration (stable for small eps)");
  app.add_option("--tol", o.tol, "Stop when the L1 column-marginal error is <= tol")->capture_default_str();
  app.add_option("--max-iter", o.max_iter, "Iteration limit")->capture_default_str();
  app.add_option("--threads", o.threads, "OpenMP threads per rank (0: automatic)")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of a generated problem")->capture_default_str();
}

int run_sinkhorn(const sinkhorn_cli_options& o) {
  return o.dtype == "float32" ? solve<float>(o, MPI_COMM_WORLD) : solve<double>(o, MPI_COMM_WORLD);
}

}  // namespace conveyor::tool
