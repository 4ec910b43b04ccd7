// SPDX-License-Identifier: BSD-3-Clause
#include "sinkhorn_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "conveyor/sinkhorn.hpp"
#include "plain_loops.hpp"

namespace conveyor::bench {

double bench_cost(std::size_t i, std::size_t j) {
  const double x = static_cast<double>(i) * 0.6180339887498949 + static_cast<double>(j) * 0.41421356237309515;
  return x - std::floor(x);
}

namespace {

namespace sk = conveyor::sinkhorn;

struct measured {
  summary per_iter;      // seconds per iteration, slowest rank
  double row_share = 0;  // mean fraction of an iteration in the row pass
};

template <class T>
struct local_matrix {
  sk::row_block rows;
  std::size_t N = 0;
  std::vector<T> A, r, c;
};

template <class T>
local_matrix<T> make_matrix(std::size_t M, std::size_t N, int threads) {
  local_matrix<T> m;
  m.rows = sk::balanced_rows(M, world_rank(), world_size());
  m.N = N;
  m.A.resize(m.rows.count * N);
  const auto n = static_cast<std::ptrdiff_t>(m.rows.count);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {  // first touch by the threads that read it
    for (std::size_t j = 0; j < N; ++j) {
      m.A[static_cast<std::size_t>(i) * N + j] =
          static_cast<T>(std::exp(-bench_cost(m.rows.first + static_cast<std::size_t>(i), j)));
    }
  }
  m.r.assign(m.rows.count, static_cast<T>(1.0 / static_cast<double>(M)));
  m.c.assign(N, static_cast<T>(1.0 / static_cast<double>(N)));
  return m;
}

template <class T>
measured time_variant(local_matrix<T>& m, sk::variant kind, const sinkhorn_bench_options& opt) {
  sk::options o;
  o.variant = kind;
  o.threads = opt.threads;
  o.overlap = opt.overlap;
  o.tol = 0;  // never converged: exactly `iters` iterations
  // The typical variant's column pass takes seconds at 16000^2: one iteration per sample.
  const int iters = kind == sk::variant::typical ? 1 : opt.iters;
  o.max_iter = iters;
  std::vector<double> samples;
  double row_share = 0;
  for (int rep = 0; rep <= opt.reps; ++rep) {  // rep 0 warms up
    MPI_Barrier(MPI_COMM_WORLD);
    const auto res =
        sk::rewrites_matrix(kind)
            ? sk::scale_in_place(m.A.data(), m.rows.count, m.N, m.N, m.r.data(), m.c.data(), MPI_COMM_WORLD, o)
            : sk::scale(m.A.data(), m.rows.count, m.N, m.N, m.r.data(), m.c.data(), MPI_COMM_WORLD, o);
    const double iter = (res.time.row_pass + res.time.column_pass) / iters;
    const double slowest = max_over_ranks(iter);
    if (rep == 0) continue;
    samples.push_back(slowest);
    row_share += res.time.row_pass / (res.time.row_pass + res.time.column_pass) / opt.reps;
  }
  return {summarize(samples), row_share};
}

template <class T>
summary time_read_bound(const local_matrix<T>& m, const sinkhorn_bench_options& opt) {
  std::vector<double> samples;
  volatile double sink = 0;
  for (int rep = 0; rep <= opt.reps; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_seconds();
    for (int k = 0; k < opt.iters; ++k) sink = sink + read_all(m.A.data(), m.rows.count, m.N, m.N, opt.threads);
    const double slowest = max_over_ranks((now_seconds() - t0) / opt.iters);
    if (rep > 0) samples.push_back(slowest);
  }
  return summarize(samples);
}

template <class T>
void bench_dtype(const std::string& dtype, std::size_t n, const sinkhorn_bench_options& opt, report& rep) {
  local_matrix<T> m = make_matrix<T>(n, n, opt.threads);
  const std::string config = opt.config.empty()
                                 ? std::to_string(world_size()) + " rank x " + std::to_string(opt.threads) + " thread"
                                 : opt.config;
  const summary bound = time_read_bound(m, opt);
  const double bytes = static_cast<double>(n) * static_cast<double>(n) * sizeof(T);
  const auto add = [&](const std::string& impl, const summary& s, double row_share) {
    rep.add_row({config, dtype, std::to_string(n), impl, format_fixed(s.median * 1e3, 3), format_fixed(s.p10 * 1e3, 3),
                 format_fixed(s.p90 * 1e3, 3), format_fixed(s.median / bound.median, 2),
                 format_fixed(bytes / s.median / 1e9, 2), row_share < 0 ? "" : format_fixed(row_share, 2)});
  };
  add("read_bound", bound, -1);
  std::vector<std::string> names = opt.variants;
  if (names.empty()) {
    for (const sk::variant_info& v : sk::variants()) names.emplace_back(v.name);
  }
  for (const auto& name : names) {
    const measured t = time_variant(m, sk::parse_variant(name), opt);
    add(opt.overlap || !sk::rewrites_matrix(sk::parse_variant(name)) ? name : name + " (no overlap)", t.per_iter,
        t.row_share);
  }
}

}  // namespace

int run_sinkhorn_bench(const sinkhorn_bench_options& opt) {
  report rep(
      "conveyor bench sinkhorn: ms per iteration, M = N, A = exp(-C) (docs/results.md)",
      {"config", "dtype", "n", "impl", "ms_median", "ms_p10", "ms_p90", "x_read_bound", "GB_per_s", "row_share"});
  rep.add_note("read_bound: one read of A (vectorized sum, same threads); GB_per_s: bytes of A / time");
  rep.add_note("per iteration = (row pass + column pass) / iterations, slowest rank; median over samples");
  for (std::size_t n : opt.sizes) {
    for (const auto& dtype : opt.dtypes) {
      if (dtype == "float64") {
        bench_dtype<double>(dtype, n, opt, rep);
      } else if (dtype == "float32") {
        bench_dtype<float>(dtype, n, opt, rep);
      } else {
        throw error(errc::invalid_argument, "bench sinkhorn: dtype must be float32 or float64, got " + dtype);
      }
      if (world_rank() == 0) std::fflush(stdout);
    }
  }
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

}  // namespace conveyor::bench
