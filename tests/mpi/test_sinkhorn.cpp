// SPDX-License-Identifier: BSD-3-Clause
// Distributed Sinkhorn at every rank count CTest runs it with (1-4): matrix scaling
// (every variant, f32/f64, square and rectangular, balanced and uneven row blocks
// including a rank with no rows, 1 and 2 threads, every SIMD target) and entropic OT
// (plain and log-domain) against dense single-process references; status handling;
// and every bad input giving the same error on every rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference.hpp"
#include "mpi_test_util.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/reduce.hpp"
#include "conveyor/sinkhorn.hpp"

namespace conveyor {
namespace {

namespace sk = sinkhorn;

using testing::rank_of;
using testing::size_of;

// A dense problem, identical on every rank (same seed).
struct dense_problem {
  std::size_t M = 0, N = 0;
  std::vector<double> A;  // M x N row-major: the matrix, or the costs for OT
  std::vector<double> r, c;
};

dense_problem scaling_problem(std::size_t M, std::size_t N, std::uint64_t seed, bool doubly_stochastic) {
  testing::splitmix64 rng(seed);
  dense_problem p;
  p.M = M;
  p.N = N;
  p.A.resize(M * N);
  for (auto& x : p.A) x = 0.05 + testing::uniform01(rng);
  p.r.resize(M);
  p.c.resize(N);
  for (auto& x : p.r) x = doubly_stochastic ? 1.0 : 0.2 + testing::uniform01(rng);
  for (auto& x : p.c) x = doubly_stochastic ? 1.0 : 0.2 + testing::uniform01(rng);
  // Equal masses: scale c to the mass of r (all ones stays all ones when M == N).
  double sr = 0, sc = 0;
  for (double x : p.r) sr += x;
  for (double x : p.c) sc += x;
  for (auto& x : p.c) x *= sr / sc;
  return p;
}

// Squared distances between random points, plus `offset`; uniform histograms.
dense_problem ot_problem(std::size_t M, std::size_t N, std::uint64_t seed, double offset) {
  testing::splitmix64 rng(seed);
  dense_problem p;
  p.M = M;
  p.N = N;
  std::vector<double> x(M), y(N);
  for (auto& v : x) v = testing::uniform01(rng);
  for (auto& v : y) v = testing::uniform01(rng);
  p.A.resize(M * N);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) p.A[i * N + j] = offset + (x[i] - y[j]) * (x[i] - y[j]);
  }
  p.r.assign(M, 1.0 / double(M));
  p.c.assign(N, 1.0 / double(N));
  return p;
}

// Dense reference scaling in double: the scaled matrix diag(u) A diag(v).
std::vector<double> reference_scaled(const dense_problem& p) {
  std::vector<double> u(p.M, 1.0), v(p.N, 1.0), s(p.N);
  for (int it = 0; it < 100000; ++it) {
    for (std::size_t i = 0; i < p.M; ++i) {
      double t = 0;
      for (std::size_t j = 0; j < p.N; ++j) t += p.A[i * p.N + j] * v[j];
      u[i] = p.r[i] / t;
    }
    std::fill(s.begin(), s.end(), 0.0);
    for (std::size_t i = 0; i < p.M; ++i) {
      for (std::size_t j = 0; j < p.N; ++j) s[j] += u[i] * p.A[i * p.N + j];
    }
    double err = 0;
    for (std::size_t j = 0; j < p.N; ++j) err += std::abs(v[j] * s[j] - p.c[j]);
    if (err < 1e-14) break;
    for (std::size_t j = 0; j < p.N; ++j) v[j] = p.c[j] / s[j];
  }
  std::vector<double> P(p.M * p.N);
  for (std::size_t i = 0; i < p.M; ++i) {
    for (std::size_t j = 0; j < p.N; ++j) P[i * p.N + j] = u[i] * p.A[i * p.N + j] * v[j];
  }
  return P;
}

// Dense reference OT plan, log-domain in double (stable for any eps).
std::vector<double> reference_plan(const dense_problem& p, double eps) {
  std::vector<double> f(p.M, 0.0), g(p.N, 0.0), P(p.M * p.N);
  const auto lse = [](const std::vector<double>& x) {
    const double m = *std::max_element(x.begin(), x.end());
    double s = 0;
    for (double y : x) s += std::exp(y - m);
    return m + std::log(s);
  };
  std::vector<double> row(p.N), col(p.M);
  for (int it = 0; it < 200000; ++it) {
    for (std::size_t i = 0; i < p.M; ++i) {
      for (std::size_t j = 0; j < p.N; ++j) row[j] = (g[j] - p.A[i * p.N + j]) / eps;
      f[i] = eps * (std::log(p.r[i]) - lse(row));
    }
    double err = 0;
    for (std::size_t j = 0; j < p.N; ++j) {
      for (std::size_t i = 0; i < p.M; ++i) col[i] = (f[i] - p.A[i * p.N + j]) / eps;
      const double l = lse(col);
      err += std::abs(std::exp(l + g[j] / eps) - p.c[j]);
      g[j] = eps * (std::log(p.c[j]) - l);
    }
    if (err < 1e-14) break;
  }
  for (std::size_t i = 0; i < p.M; ++i) {
    for (std::size_t j = 0; j < p.N; ++j) P[i * p.N + j] = std::exp((f[i] + g[j] - p.A[i * p.N + j]) / eps);
  }
  return P;
}

// This rank's rows: balanced, or skewed (rank 0 gets none when P > 1, the
// others split the rest unevenly: rank k's share grows with k).
sk::row_block my_rows(std::size_t M, bool skewed) {
  const int P = size_of(), r = rank_of();
  if (!skewed || P == 1) return sk::balanced_rows(M, r, P);
  std::size_t weight_total = 0, before = 0;
  for (int k = 1; k < P; ++k) weight_total += std::size_t(k);
  for (int k = 1; k < r; ++k) before += std::size_t(k);
  const auto cut = [&](std::size_t w) { return M * w / weight_total; };
  if (r == 0) return {0, 0};
  return {cut(before), cut(before + std::size_t(r)) - cut(before)};
}

template <class T>
std::vector<T> rows_of(const std::vector<double>& full, std::size_t N, sk::row_block b, std::size_t ld) {
  std::vector<T> out(std::max<std::size_t>(b.count * ld, 1), T(-7));  // padding past N stays -7
  for (std::size_t i = 0; i < b.count; ++i) {
    for (std::size_t j = 0; j < N; ++j) out[i * ld + j] = static_cast<T>(full[(b.first + i) * N + j]);
  }
  return out;
}

template <class T>
std::vector<T> convert(const double* x, std::size_t n) {
  return std::vector<T>(x, x + n);
}

template <class T>
double tolerance() {
  return sizeof(T) == 4 ? 2e-3 : 1e-8;
}

template <class T>
double solver_tol() {
  return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

// Checks this rank's rows of diag(u) A diag(v) against the reference.
template <class T>
void expect_scaled(const dense_problem& p, const std::vector<double>& ref, sk::row_block b, const std::vector<T>& u,
                   const std::vector<T>& v, const std::string& label) {
  double worst = 0, scale = 0;
  for (double x : ref) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < b.count; ++i) {
    for (std::size_t j = 0; j < p.N; ++j) {
      const std::size_t gi = b.first + i;
      const double got = double(u[i]) * p.A[gi * p.N + j] * double(v[j]);
      worst = std::max(worst, std::abs(got - ref[gi * p.N + j]));
    }
  }
  EXPECT_LE(worst, tolerance<T>() * scale) << label;
}

struct shape {
  std::size_t M, N;
};
const shape kShapes[] = {{1, 1}, {7, 5}, {5, 7}, {33, 17}, {40, 40}, {3, 101}};

template <class T>
void check_scaling_variants() {
  for (const shape s : kShapes) {
    for (bool ds : {true, false}) {
      const dense_problem p = scaling_problem(s.M, s.N, 1000 * s.M + s.N, ds);
      const auto ref = reference_scaled(p);
      for (bool skewed : {false, true}) {
        const sk::row_block b = my_rows(s.M, skewed);
        const std::size_t ld = s.N + 3;  // padded rows
        const auto r = convert<T>(p.r.data() + b.first, b.count);
        const auto c = convert<T>(p.c.data(), s.N);
        for (const sk::variant_info& row : sk::variants()) {  // every variant of the table
          const sk::variant kind = row.which;
          for (int threads : {1, 2}) {
            sk::options o;
            o.variant = kind;
            o.threads = threads;
            o.tol = solver_tol<T>();
            o.max_iter = 20000;
            o.block = {3, 5, 2, 3};  // small blocks: every edge case of the tiling
            const std::string label = std::string(sk::variant_name(kind)) + " M=" + std::to_string(s.M) +
                                      " N=" + std::to_string(s.N) + (ds ? " ones" : " random") +
                                      (skewed ? " skewed" : " balanced") + " threads=" + std::to_string(threads);
            auto A = rows_of<T>(p.A, s.N, b, ld);
            const auto A0 = A;
            const auto res = sk::rewrites_matrix(kind)
                                 ? sk::scale_in_place(A.data(), b.count, s.N, ld, r.data(), c.data(), MPI_COMM_WORLD, o)
                                 : sk::scale(A.data(), b.count, s.N, ld, r.data(), c.data(), MPI_COMM_WORLD, o);
            EXPECT_EQ(res.state, sk::status::converged) << label;
            EXPECT_LE(res.error, o.tol) << label;
            EXPECT_EQ(res.error_history.size(), std::size_t(res.iterations)) << label;
            ASSERT_EQ(res.u.size(), b.count) << label;
            ASSERT_EQ(res.v.size(), s.N) << label;
            expect_scaled(p, ref, b, res.u, res.v, label);
            // In place: A is now the scaled matrix (padding untouched); read-only: A unchanged.
            for (std::size_t i = 0; i < b.count; ++i) {
              for (std::size_t j = 0; j < ld; ++j) {
                const double want =
                    j >= s.N || !sk::rewrites_matrix(kind) ? double(A0[i * ld + j]) : ref[(b.first + i) * s.N + j];
                ASSERT_NEAR(double(A[i * ld + j]), want, tolerance<T>() * 4) << label << " A[" << i << "][" << j << "]";
              }
            }
          }
        }
      }
    }
  }
}

// The table of variants (src/sinkhorn/dense/variant_table.cpp): every name once,
// in the enum's order, described; rewrites_matrix is its row's.
TEST(SinkhornScaling, TheTableHasEveryVariantOnce) {
  const auto& table = sk::variants();
  ASSERT_EQ(table.size(), static_cast<std::size_t>(sk::variant_count));
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(table[i].which), i);
    EXPECT_EQ(sk::parse_variant(table[i].name), table[i].which);
    EXPECT_GT(std::strlen(table[i].summary), 20u) << table[i].name;
    EXPECT_EQ(sk::rewrites_matrix(table[i].which), table[i].rewrites_matrix) << table[i].name;
  }
  EXPECT_FALSE(sk::rewrites_matrix(sk::variant::fused));  // the default never writes A
  EXPECT_THROW(sk::rewrites_matrix(static_cast<sk::variant>(sk::variant_count)), conveyor::error);
}

TEST(SinkhornScaling, EveryVariantMatchesReferenceF64) { check_scaling_variants<double>(); }
TEST(SinkhornScaling, EveryVariantMatchesReferenceF32) { check_scaling_variants<float>(); }

TEST(SinkhornScaling, EverySimdTarget) {
  const dense_problem p = scaling_problem(29, 37, 7, false);
  const auto ref = reference_scaled(p);
  const sk::row_block b = my_rows(p.M, true);
  const auto A = rows_of<double>(p.A, p.N, b, p.N);
  const auto r = convert<double>(p.r.data() + b.first, b.count);
  const std::string before = simd_targets().active;
  for (const auto& name : simd_targets().supported) {
    set_simd_target(name);
    for (auto kind : {sk::variant::fused, sk::variant::blocked}) {
      sk::options o;
      o.variant = kind;
      o.threads = 1;
      o.tol = 1e-12;
      auto work = A;
      const auto res = sk::scale_in_place(work.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o);
      EXPECT_EQ(res.state, sk::status::converged) << name;
      expect_scaled(p, ref, b, res.u, res.v, name + " " + std::string(sk::variant_name(kind)));
    }
  }
  set_simd_target(before);
}

TEST(SinkhornScaling, OverlapOffGivesTheSameScaling) {
  const dense_problem p = scaling_problem(24, 19, 3, false);
  const sk::row_block b = my_rows(p.M, false);
  const auto r = convert<double>(p.r.data() + b.first, b.count);
  for (const sk::variant_info& row : sk::variants()) {
    if (!row.rewrites_matrix) continue;  // overlap: the in-place variants' option
    const sk::variant kind = row.which;
    std::vector<double> results[2];
    for (bool overlap : {false, true}) {
      sk::options o;
      o.variant = kind;
      o.overlap = overlap;
      o.threads = 1;
      o.allreduce.segment_bytes = 32;  // many chunks
      auto A = rows_of<double>(p.A, p.N, b, p.N);
      sk::scale_in_place(A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o);
      results[overlap] = A;
    }
    EXPECT_EQ(results[0], results[1]) << sk::variant_name(kind);
  }
}

// The automatic thread count (options.threads = 0) is OpenMP's default capped by
// this rank's share of its node's CPUs, where the node's CPUs are the union of the
// affinity masks of the communicator's ranks on it: a rank bound to one CPU runs one
// thread even when OpenMP's default (fixed when the process started, unbound) is
// larger. The node layout is made once per communicator, so each case gets a fresh
// one; on a duplicate of MPI_COMM_SELF every rank is alone on its node. Affinity is
// restored afterwards.
TEST(SinkhornScaling, AutomaticThreadsFollowTheNodesCpus) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &original)) cpus.push_back(c);
  }
  const int P = size_of(MPI_COMM_WORLD), me = rank_of(MPI_COMM_WORLD);
  const int n = static_cast<int>(cpus.size()), openmp_default = omp_get_max_threads();
  // Enough work per rank that the one-thread-per-64-Ki-elements cap never binds.
  const std::size_t rows = 64, cols = 4096;
  std::vector<double> A(rows * cols, 1.0), r(rows, 1.0);
  const auto threads_used = [&](MPI_Comm parent, const cpu_set_t* bind) {
    if (bind) {
      EXPECT_EQ(sched_setaffinity(0, sizeof *bind, bind), 0);
    }
    MPI_Comm comm;
    MPI_Comm_dup(parent, &comm);
    const std::vector<double> c(cols, double(rows) * size_of(comm) / double(cols));
    sk::options o;
    o.max_iter = 2;
    const auto res = sk::scale(A.data(), rows, cols, cols, r.data(), c.data(), comm, o);
    MPI_Comm_free(&comm);
    EXPECT_EQ(sched_setaffinity(0, sizeof original, &original), 0);
    return res.threads;
  };
  cpu_set_t one;  // a CPU each, where there are enough
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<std::size_t>(me % n)], &one);
  // Alone on the node, bound to one CPU: one thread (the old rule, OpenMP's default
  // over the ranks on the node, gave openmp_default).
  EXPECT_EQ(threads_used(MPI_COMM_SELF, &one), 1);
  // Alone with this process's whole mask: OpenMP's default, capped by the mask.
  EXPECT_EQ(threads_used(MPI_COMM_SELF, nullptr), std::max(1, std::min(openmp_default, n)));
  // Every rank of the world, when they share one node (CTest launches on one
  // machine): a share of the union of their masks.
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  const bool one_node = size_of(shared) == P;
  MPI_Comm_free(&shared);
  if (one_node) {
    EXPECT_EQ(threads_used(MPI_COMM_WORLD, &one), std::max(1, std::min(openmp_default, std::min(P, n) / P)));
    EXPECT_EQ(threads_used(MPI_COMM_WORLD, nullptr), std::max(1, std::min(openmp_default, n / P)));
  }
  // Asked for: as many as asked, whatever the binding.
  sk::options o;
  o.max_iter = 2;
  o.threads = 3;
  const std::vector<double> c(cols, double(rows) / double(cols));
  EXPECT_EQ(sk::scale(A.data(), rows, cols, cols, r.data(), c.data(), MPI_COMM_SELF, o).threads, 3);
}

// A scaling problem and this rank's balanced share of it (rows of A and r).
struct my_scaling {
  dense_problem p;
  sk::row_block b;
  std::vector<double> A, r;
  my_scaling(std::size_t M, std::size_t N, std::uint64_t seed)
      : p(scaling_problem(M, N, seed, false)),
        b(my_rows(M, false)),
        A(rows_of<double>(p.A, p.N, b, p.N)),
        r(convert<double>(p.r.data() + b.first, b.count)) {}
};

TEST(SinkhornScaling, StatusAndWarmStart) {
  const my_scaling mine(30, 20, 11);
  const dense_problem& p = mine.p;
  const sk::row_block& b = mine.b;
  const auto& A = mine.A;
  const auto& r = mine.r;
  sk::options o;
  o.threads = 1;
  o.tol = 1e-12;
  o.max_iter = 2;
  auto res = sk::scale(A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o);
  EXPECT_EQ(res.state, sk::status::max_iter);
  EXPECT_EQ(res.iterations, 2);
  ASSERT_EQ(res.error_history.size(), 2u);
  EXPECT_GT(res.error, o.tol);
  EXPECT_EQ(res.error, res.error_history.back());

  o.max_iter = 1000;
  res = sk::scale(A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o);
  ASSERT_EQ(res.state, sk::status::converged);
  EXPECT_GT(res.iterations, 3);
  // Every rank saw the same error history (identical column sums everywhere).
  double last = res.error, lo = last, hi = last;
  MPI_Allreduce(&last, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&last, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);

  // Warm start from the solution: converged at once.
  o.init_u.assign(res.u.begin(), res.u.end());
  o.init_v.assign(res.v.begin(), res.v.end());
  for (auto kind : {sk::variant::fused, sk::variant::c2r}) {
    o.variant = kind;
    auto work = A;
    const auto warm = sk::scale_in_place(work.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o);
    EXPECT_EQ(warm.state, sk::status::converged) << sk::variant_name(kind);
    EXPECT_EQ(warm.iterations, 1) << sk::variant_name(kind);
  }
}

TEST(SinkhornScaling, EmptyProblemsAndZeroLines) {
  sk::options o;
  o.threads = 1;
  // M = 0 (every rank holds no rows) and N = 0.
  auto res = sk::scale(static_cast<const double*>(nullptr), 0, 4, 4, nullptr, std::vector<double>(4, 1).data(),
                       MPI_COMM_WORLD, o);
  EXPECT_EQ(res.state, sk::status::converged);
  EXPECT_EQ(res.v.size(), 4u);
  // A zero row and a zero column are fine when their marginals are zero.
  dense_problem p = scaling_problem(12, 9, 5, false);
  for (std::size_t j = 0; j < p.N; ++j) p.A[4 * p.N + j] = 0;
  for (std::size_t i = 0; i < p.M; ++i) p.A[i * p.N + 2] = 0;
  p.r[5] += p.r[4];
  p.r[4] = 0;
  const double moved = p.c[2];
  p.c[2] = 0;
  p.c[3] += moved;
  const auto ref = reference_scaled(p);
  const sk::row_block b = my_rows(p.M, true);
  const auto r = convert<double>(p.r.data() + b.first, b.count);
  for (auto kind : {sk::variant::fused, sk::variant::typical, sk::variant::blocked}) {
    o.variant = kind;
    o.tol = 1e-12;
    auto A = rows_of<double>(p.A, p.N, b, p.N);
    const auto s = sk::scale_in_place(A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o);
    EXPECT_EQ(s.state, sk::status::converged) << sk::variant_name(kind);
    expect_scaled(p, ref, b, s.u, s.v, std::string(sk::variant_name(kind)));
  }
}

// ---------------------------------------------------------------------------
// Entropic OT
// ---------------------------------------------------------------------------
template <class T>
void check_transport(double eps, double offset, bool log_domain, sk::variant kind, double plan_tol) {
  const dense_problem p = ot_problem(23, 31, 99, offset);
  const auto ref = reference_plan(p, eps);
  double ref_cost = 0;
  for (std::size_t k = 0; k < ref.size(); ++k) ref_cost += ref[k] * p.A[k];
  const sk::row_block b = my_rows(p.M, true);
  const auto C = rows_of<T>(p.A, p.N, b, p.N);
  const auto a = convert<T>(p.r.data() + b.first, b.count);
  const auto bb = convert<T>(p.c.data(), p.N);
  sk::options o;
  o.variant = kind;
  o.log_domain = log_domain;
  o.threads = 2;
  o.tol = solver_tol<T>();
  o.max_iter = 100000;
  std::vector<T> plan(std::max<std::size_t>(b.count * p.N, 1));
  const auto res = sk::transport(C.data(), b.count, p.N, p.N, a.data(), bb.data(), eps, MPI_COMM_WORLD, o, plan.data());
  const std::string label = std::string(log_domain ? "log" : sk::variant_name(kind)) + " eps=" + std::to_string(eps);
  ASSERT_EQ(res.state, sk::status::converged) << label;
  double worst = 0;
  for (std::size_t i = 0; i < b.count; ++i) {
    for (std::size_t j = 0; j < p.N; ++j) {
      const std::size_t gi = b.first + i;
      worst = std::max(worst, std::abs(double(plan[i * p.N + j]) - ref[gi * p.N + j]));
      // The log scalings reproduce the plan.
      const double from_potentials = std::exp(double(res.log_u[i]) + double(res.log_v[j]) - p.A[gi * p.N + j] / eps);
      ASSERT_NEAR(from_potentials, double(plan[i * p.N + j]), plan_tol) << label;
    }
  }
  EXPECT_LE(worst, plan_tol) << label;
  EXPECT_NEAR(res.cost, ref_cost, 1e3 * plan_tol * std::max(1.0, ref_cost)) << label;
}

TEST(SinkhornTransport, PlainAndLogDomainAgreeForModerateEps) {
  for (auto kind : {sk::variant::fused, sk::variant::c2r}) check_transport<double>(0.05, 0.0, false, kind, 1e-10);
  check_transport<double>(0.05, 0.0, true, sk::variant::fused, 1e-10);
  check_transport<float>(0.05, 0.0, false, sk::variant::fused, 2e-5);
  check_transport<float>(0.05, 0.0, true, sk::variant::fused, 2e-5);
}

TEST(SinkhornTransport, KernelPastTheHugePageThreshold) {
  // From 4 MiB on, the plain solver's K = exp(-C/eps) is uninitialized, 2 MiB-aligned,
  // huge-page-advised memory (src/runtime/large_array.hpp), with a size rounded up
  // to whole huge pages: every rank's K here is 1100 x 517 doubles = 4.3 MiB, an odd
  // width so no row starts on a page. The log domain builds no K: both plans agree.
  const std::size_t rows_each = 1100, N = 517;
  const dense_problem p = ot_problem(rows_each * std::size_t(size_of()), N, 17, 0.0);
  const sk::row_block b = my_rows(p.M, false);
  ASSERT_GE(b.count * N * sizeof(double), std::size_t(4) << 20);
  const auto C = rows_of<double>(p.A, N, b, N);
  const auto a = convert<double>(p.r.data() + b.first, b.count);
  std::vector<double> plain_plan(b.count * N, -1), log_plan(b.count * N, -1);
  sk::options o;
  o.threads = 2;
  o.tol = 0;
  o.max_iter = 30;  // the same iterations in both domains
  const auto plain =
      sk::transport(C.data(), b.count, N, N, a.data(), p.c.data(), 0.5, MPI_COMM_WORLD, o, plain_plan.data());
  o.log_domain = true;
  const auto logd =
      sk::transport(C.data(), b.count, N, N, a.data(), p.c.data(), 0.5, MPI_COMM_WORLD, o, log_plan.data());
  EXPECT_EQ(plain.iterations, logd.iterations);
  double worst = 0;
  for (std::size_t k = 0; k < plain_plan.size(); ++k) {
    worst = std::max(worst, std::abs(plain_plan[k] - log_plan[k]) / std::max(log_plan[k], 1e-300));
  }
  EXPECT_LE(worst, 1e-10);
  EXPECT_NEAR(plain.cost, logd.cost, 1e-10 * std::abs(logd.cost));
}

TEST(SinkhornTransport, TinyEpsPlainFailsLogDomainConverges) {
  // Costs in [1, 2] and eps = 1/800: every exp(-C/eps) underflows in double.
  const double eps = 1.0 / 800;
  const dense_problem p = ot_problem(23, 31, 99, 1.0);
  const sk::row_block b = my_rows(p.M, false);
  const auto a = convert<double>(p.r.data() + b.first, b.count);
  const auto C = rows_of<double>(p.A, p.N, b, p.N);
  sk::options o;
  o.threads = 1;
  for (auto kind : {sk::variant::fused, sk::variant::typical}) {
    o.variant = kind;
    const auto plain = sk::transport(C.data(), b.count, p.N, p.N, a.data(), p.c.data(), eps, MPI_COMM_WORLD, o);
    EXPECT_EQ(plain.state, sk::status::numerical_failure) << sk::variant_name(kind);
    EXPECT_EQ(plain.iterations, 0);
    EXPECT_FALSE(std::isfinite(plain.error_history.back()));
  }
  check_transport<double>(eps, 1.0, true, sk::variant::fused, 1e-9);
  check_transport<float>(1.0 / 100, 1.0, true, sk::variant::fused, 2e-5);  // exp(-100) underflows in float
}

TEST(SinkhornTransport, WarmStartFromPotentialsOrScalings) {
  const dense_problem p = ot_problem(21, 18, 5, 0.0);
  const sk::row_block b = my_rows(p.M, true);
  const auto C = rows_of<double>(p.A, p.N, b, p.N);
  const auto a = convert<double>(p.r.data() + b.first, b.count);
  for (bool log_domain : {true, false}) {
    sk::options o;
    o.threads = 1;
    o.tol = 1e-11;
    o.log_domain = log_domain;
    const auto cold = sk::transport(C.data(), b.count, p.N, p.N, a.data(), p.c.data(), 0.05, MPI_COMM_WORLD, o);
    ASSERT_EQ(cold.state, sk::status::converged);
    ASSERT_GT(cold.iterations, 2);
    // Log domain: the log scalings; plain kernel: the scalings u = exp(log_u), v = exp(log_v).
    for (double log_u : cold.log_u) o.init_u.push_back(log_domain ? log_u : std::exp(log_u));
    for (double log_v : cold.log_v) o.init_v.push_back(log_domain ? log_v : std::exp(log_v));
    const auto warm = sk::transport(C.data(), b.count, p.N, p.N, a.data(), p.c.data(), 0.05, MPI_COMM_WORLD, o);
    EXPECT_EQ(warm.state, sk::status::converged) << log_domain;
    EXPECT_EQ(warm.iterations, 1) << log_domain;
    EXPECT_NEAR(warm.cost, cold.cost, 1e-12) << log_domain;
  }
}

// POT's loop (ot.bregman.sinkhorn_knopp / sinkhorn_log), dense, in double: a
// column update first, the L2 column-marginal error tested on iterations
// 0, 10, 20, ... (0-based), stopping when it is below tol. Returns the plan and
// the 0-based index of the last iteration (POT's log["niter"]).
struct pot_result {
  std::vector<double> plan;
  int niter = -1;
  double err = 0;
};
pot_result pot_reference(const dense_problem& p, double eps, bool log_domain, double tol, int max_iter) {
  const std::size_t M = p.M, N = p.N;
  std::vector<double> u(M, log_domain ? 0.0 : 1.0 / double(M)), v(N, log_domain ? 0.0 : 1.0 / double(N));
  const auto K = [&](std::size_t i, std::size_t j) { return std::exp(p.A[i * N + j] / -eps); };
  const auto lse = [](const std::vector<double>& x) {
    const double m = *std::max_element(x.begin(), x.end());
    double s = 0;
    for (double y : x) s += std::exp(y - m);
    return m + std::log(s);
  };
  const auto plan_entry = [&](std::size_t i, std::size_t j) {
    return log_domain ? std::exp(p.A[i * N + j] / -eps + u[i] + v[j]) : u[i] * K(i, j) * v[j];
  };
  pot_result out;
  std::vector<double> col(M), row(N);
  for (int ii = 0; ii < max_iter; ++ii) {
    for (std::size_t j = 0; j < N; ++j) {
      double t = 0;
      for (std::size_t i = 0; i < M; ++i) {
        if (log_domain) col[i] = p.A[i * N + j] / -eps + u[i];
        else t += K(i, j) * u[i];
      }
      v[j] = log_domain ? std::log(p.c[j]) - lse(col) : p.c[j] / t;
    }
    for (std::size_t i = 0; i < M; ++i) {
      double t = 0;
      for (std::size_t j = 0; j < N; ++j) {
        if (log_domain) row[j] = p.A[i * N + j] / -eps + v[j];
        else t += K(i, j) * v[j];
      }
      u[i] = log_domain ? std::log(p.r[i]) - lse(row) : p.r[i] / t;
    }
    out.niter = ii;
    if (ii % 10 == 0) {
      double e2 = 0;
      for (std::size_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::size_t i = 0; i < M; ++i) s += plan_entry(i, j);
        e2 += (s - p.c[j]) * (s - p.c[j]);
      }
      out.err = std::sqrt(e2);
      if (out.err < tol) break;
    }
  }
  out.plan.resize(M * N);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) out.plan[i * N + j] = plan_entry(i, j);
  }
  return out;
}

// columns_first + norm l2 + check_every 10 is POT's iteration: the same number of
// iterations and the same plan (1e-10 relative), for the plain kernel (fused) and
// the log domain, converged or stopped at max_iter. An in-place variant (c2r)
// stops on the same iteration, but its matrix has already taken that
// iteration's column scaling: its plan is half an iteration ahead (1e-6 here).
TEST(SinkhornTransport, PotOrderMatchesPotsLoop) {
  const dense_problem p = ot_problem(23, 31, 17, 0.0);
  const sk::row_block b = my_rows(p.M, true);
  const auto C = rows_of<double>(p.A, p.N, b, p.N);
  const auto a = convert<double>(p.r.data() + b.first, b.count);
  for (int max_iter : {1000, 25}) {
    for (int kind = 0; kind < 3; ++kind) {
      const bool log_domain = kind == 2;
      const pot_result ref = pot_reference(p, 0.05, log_domain, 1e-9, max_iter);
      sk::options o;
      o.threads = 2;
      o.tol = 1e-9;
      o.max_iter = max_iter;
      o.norm = sk::error_norm::l2;
      o.check_every = 10;
      o.columns_first = true;
      o.log_domain = log_domain;
      o.variant = kind == 1 ? sk::variant::c2r : sk::variant::fused;
      if (!log_domain) o.init_u.assign(b.count, 1.0 / double(p.M));
      std::vector<double> plan(std::max<std::size_t>(b.count * p.N, 1));
      const auto res =
          sk::transport(C.data(), b.count, p.N, p.N, a.data(), p.c.data(), 0.05, MPI_COMM_WORLD, o, plan.data());
      const std::string label = std::to_string(kind) + " max_iter " + std::to_string(max_iter);
      EXPECT_EQ(res.iterations - 1, ref.niter) << label;
      EXPECT_EQ(res.state, max_iter == 1000 ? sk::status::converged : sk::status::max_iter) << label;
      EXPECT_EQ(res.error_history.size(), std::size_t(ref.niter + 1)) << label;
      if (max_iter == 1000) {
        EXPECT_NEAR(res.error, ref.err, 1e-6 * ref.err) << label;
      }
      if (kind == 1 && max_iter != 1000) continue;  // unconverged: the half step is large
      const double relative = kind == 1 ? 1e-6 : 1e-10;
      for (std::size_t i = 0; i < b.count; ++i) {
        for (std::size_t j = 0; j < p.N; ++j) {
          const double want = ref.plan[(b.first + i) * p.N + j];
          ASSERT_NEAR(plan[i * p.N + j], want, relative * want) << label << " at " << b.first + i << "," << j;
        }
      }
    }
  }
}

TEST(SinkhornScaling, NormAndCheckEvery) {
  const my_scaling m(19, 14, 3);
  const std::size_t N = m.p.N, rows = m.b.count;
  const auto solve = [&](const sk::options& o) {
    return sk::scale(m.A.data(), rows, N, N, m.r.data(), m.p.c.data(), MPI_COMM_WORLD, o);
  };
  sk::options o;
  o.threads = 1;
  o.tol = 1e-10;
  const auto every = solve(o);
  o.check_every = 7;
  const auto sparse = solve(o);
  ASSERT_EQ(every.state, sk::status::converged);
  ASSERT_EQ(sparse.state, sk::status::converged);
  EXPECT_EQ((sparse.iterations - 1) % 7, 0);
  EXPECT_GE(sparse.iterations, every.iterations);
  EXPECT_LT(sparse.iterations, every.iterations + 7);
  // The L2 error of the returned pair, recomputed from it.
  o.check_every = 1;
  o.norm = sk::error_norm::l2;
  const auto l2 = solve(o);
  std::vector<double> s(N, 0.0), all(N);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < N; ++j) s[j] += l2.u[i] * m.A[i * N + j] * l2.v[j];
  }
  MPI_Allreduce(s.data(), all.data(), int(N), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double e2 = 0, e1 = 0;
  for (std::size_t j = 0; j < N; ++j) {
    e2 += (all[j] - m.p.c[j]) * (all[j] - m.p.c[j]);
    e1 += std::abs(all[j] - m.p.c[j]);
  }
  EXPECT_NEAR(l2.error, std::sqrt(e2), 1e-13);
  EXPECT_LE(std::sqrt(e2), e1 + 1e-15);
  o.check_every = 0;
  EXPECT_THROW(solve(o), error);
}

// ---------------------------------------------------------------------------
// Bad input: the same error on every rank
// ---------------------------------------------------------------------------
using testing::expect_error_everywhere;

struct bad_input_case {
  dense_problem p = scaling_problem(10, 6, 21, false);
  sk::row_block b = my_rows(10, false);
  std::vector<double> A = rows_of<double>(p.A, p.N, b, p.N);
  std::vector<double> r = convert<double>(p.r.data() + b.first, b.count);
  sk::options o;
  // The last rank that holds rows (balanced: ranks 0 .. min(P, M) - 1 do), whose
  // first row or argument a case makes bad.
  bool on_last_rank() const { return rank_of() == std::min<int>(size_of(), static_cast<int>(p.M)) - 1; }
  void run() { sk::scale(A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, o); }
};

TEST(SinkhornErrors, BadDataOnOneRankFailsEveryRank) {
  {
    bad_input_case t;
    if (t.on_last_rank()) t.A[1] = -0.5;
    expect_error_everywhere([&] { t.run(); }, "(entries must be finite and >= 0)");
  }
  {
    bad_input_case t;
    if (t.on_last_rank()) t.A[2] = std::nan("");
    expect_error_everywhere([&] { t.run(); }, "(entries must be finite and >= 0)");
  }
  {
    bad_input_case t;
    if (t.on_last_rank()) std::fill(t.A.begin(), t.A.begin() + static_cast<std::ptrdiff_t>(t.p.N), 0.0);
    expect_error_everywhere([&] { t.run(); }, "is zero but its marginal r[");
  }
  {
    bad_input_case t;
    for (std::size_t i = 0; i < t.b.count; ++i) t.A[i * t.p.N + 3] = 0;
    expect_error_everywhere([&] { t.run(); }, "column 3 is zero but its marginal c[3] is positive");
  }
  {
    bad_input_case t;
    if (t.on_last_rank()) t.r[0] *= 2;
    expect_error_everywhere([&] { t.run(); }, "different sums");
  }
  {
    bad_input_case t;
    if (t.on_last_rank()) t.r[0] = -1;
    expect_error_everywhere([&] { t.run(); }, "(marginals must be finite and >= 0)");
  }
  {
    bad_input_case t;
    if (rank_of() == 0) t.p.c[0] += 1e-3;  // column marginals differ between ranks
    if (size_of() > 1) expect_error_everywhere([&] { t.run(); }, "different column marginals");
  }
}

TEST(SinkhornErrors, BadArgumentsOnOneRankFailEveryRank) {
  {
    bad_input_case t;
    if (rank_of() == 0) t.o.variant = sk::variant::typical;  // scale() takes a read-only A
    expect_error_everywhere([&] { t.run(); }, "call scale_in_place");
  }
  {
    bad_input_case t;
    if (t.on_last_rank()) t.o.max_iter = 0;
    expect_error_everywhere([&] { t.run(); }, "max_iter must be >= 1");
  }
  {
    bad_input_case t;
    if (t.on_last_rank()) {
      expect_error_everywhere(
          [&] { sk::scale(t.A.data(), t.b.count, t.p.N, t.p.N - 1, t.r.data(), t.p.c.data(), MPI_COMM_WORLD, t.o); },
          "leading dimension");
    } else {
      expect_error_everywhere([&] { t.run(); }, "leading dimension");
    }
  }
  if (size_of() > 1) {
    // Different column counts: rank 0 claims one more column.
    bad_input_case t;
    std::vector<double> wide(t.b.count * (t.p.N + 1) + 1, 1.0), c(t.p.N + 1, 1.0);
    if (rank_of() == 0) {
      expect_error_everywhere(
          [&] { sk::scale(wide.data(), t.b.count, t.p.N + 1, t.p.N + 1, t.r.data(), c.data(), MPI_COMM_WORLD, t.o); },
          "different column counts");
    } else {
      expect_error_everywhere([&] { t.run(); }, "different column counts");
    }
  }
  {
    const dense_problem p = ot_problem(8, 8, 1, 0.0);
    const sk::row_block b = my_rows(8, false);
    auto C = rows_of<double>(p.A, p.N, b, p.N);
    const auto a = convert<double>(p.r.data() + b.first, b.count);
    sk::options o;
    expect_error_everywhere(
        [&] { sk::transport(C.data(), b.count, p.N, p.N, a.data(), p.c.data(), 0.0, MPI_COMM_WORLD, o); },
        "eps must be finite and > 0");
    if (rank_of() == std::min(size_of(), 8) - 1)
      C[0] = std::numeric_limits<double>::infinity();  // (the last with rows)
    expect_error_everywhere(
        [&] { sk::transport(C.data(), b.count, p.N, p.N, a.data(), p.c.data(), 0.1, MPI_COMM_WORLD, o); },
        "(costs must be finite)");
  }
}

// ---------------------------------------------------------------------------
// C API
// ---------------------------------------------------------------------------
TEST(SinkhornCApi, ScaleAndTransportMatchTheCppApi) {
  const dense_problem p = scaling_problem(17, 13, 8, false);
  const sk::row_block b = my_rows(p.M, true);
  auto A = rows_of<double>(p.A, p.N, b, p.N);
  const auto r = convert<double>(p.r.data() + b.first, b.count);
  conveyor_sinkhorn_options o;
  conveyor_sinkhorn_options_init(&o);
  EXPECT_EQ(o.variant, CONVEYOR_SINKHORN_FUSED);
  EXPECT_EQ(o.nc, 1000u);
  o.threads = 1;
  o.tol = 1e-12;
  std::vector<double> u(b.count + 1), v(p.N);
  conveyor_sinkhorn_info info{};
  ASSERT_EQ(conveyor_sinkhorn_scale(CONVEYOR_FLOAT64, A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD,
                                    0, &o, u.data(), v.data(), &info),
            CONVEYOR_SUCCESS)
      << conveyor_last_error();
  EXPECT_EQ(info.status, CONVEYOR_SINKHORN_CONVERGED);
  sk::options cpp;
  cpp.threads = 1;
  cpp.tol = 1e-12;
  const auto want = sk::scale(A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD, cpp);
  EXPECT_EQ(info.iterations, want.iterations);
  EXPECT_EQ(std::vector<double>(u.begin(), u.begin() + static_cast<std::ptrdiff_t>(b.count)), want.u);
  EXPECT_EQ(v, want.v);

  // In place with a variant the read-only call refuses.
  o.variant = CONVEYOR_SINKHORN_BLOCKED;
  EXPECT_EQ(conveyor_sinkhorn_scale(CONVEYOR_FLOAT64, A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD,
                                    0, &o, nullptr, nullptr, nullptr),
            CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(conveyor_last_error()).find("scale_in_place"), std::string::npos);
  EXPECT_EQ(conveyor_sinkhorn_scale(CONVEYOR_FLOAT64, A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD,
                                    1, &o, nullptr, nullptr, &info),
            CONVEYOR_SUCCESS);
  EXPECT_EQ(conveyor_sinkhorn_scale(CONVEYOR_INT32, A.data(), b.count, p.N, p.N, r.data(), p.c.data(), MPI_COMM_WORLD,
                                    1, &o, nullptr, nullptr, &info),
            CONVEYOR_ERR_UNSUPPORTED);

  const dense_problem q = ot_problem(9, 11, 4, 0.0);
  const sk::row_block qb = my_rows(q.M, false);
  const auto C = rows_of<float>(q.A, q.N, qb, q.N);
  const auto a = convert<float>(q.r.data() + qb.first, qb.count);
  const auto bb = convert<float>(q.c.data(), q.N);
  conveyor_sinkhorn_options_init(&o);
  o.log_domain = 1;
  o.tol = 1e-6;
  std::vector<float> f(qb.count + 1), g(q.N), plan(qb.count * q.N + 1);
  ASSERT_EQ(conveyor_sinkhorn_transport(CONVEYOR_FLOAT32, C.data(), qb.count, q.N, q.N, a.data(), bb.data(), 0.1,
                                        MPI_COMM_WORLD, &o, f.data(), g.data(), plan.data(), 0, &info),
            CONVEYOR_SUCCESS)
      << conveyor_last_error();
  EXPECT_EQ(info.status, CONVEYOR_SINKHORN_CONVERGED);
  EXPECT_GT(info.cost, 0.0);
}

}  // namespace
}  // namespace conveyor
