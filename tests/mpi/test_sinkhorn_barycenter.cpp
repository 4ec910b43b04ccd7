// SPDX-License-Identifier: BSD-3-Clause
// The fixed-support barycenter (conveyor/sinkhorn_barycenter.hpp) at every rank
// count CTest runs it with (1-5): against a dense transcription of POT's two loops
// (barycenter_sinkhorn, _barycenter_sinkhorn_log) run in one process, with uneven
// row splits (ranks holding no rows), asymmetric costs, zeros in the histograms,
// 1-3 histograms, dim 1 to 23, float32 and float64, 1 and 2 threads; the same
// bits on every rank; the log domain where the plain kernel underflows; bad input
// on one rank failing every rank alike; half the ranks (a split communicator,
// used twice) equal to one process.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "reference.hpp"
#include "conveyor/sinkhorn_barycenter.hpp"

namespace conveyor {
namespace {

using testing::expect_error_everywhere;
using testing::rank_of;
using testing::size_of;
namespace sk = sinkhorn;

struct problem {
  std::size_t dim = 0, hists = 0;
  std::vector<double> C, A, weights;  // C: dim x dim; A: dim x hists
};

// Histograms of mass 1 on points of [0, 1] (bumps at different places, some
// entries exactly 0), an asymmetric cost (C_ij = (x_i - x_j)^2 + 0.1 [i > j]).
problem make_problem(std::size_t dim, std::size_t hists, std::uint64_t seed, bool zeros) {
  testing::splitmix64 rng(seed);
  problem p{dim, hists, std::vector<double>(dim * dim), {}, {}};
  const auto x = [&](std::size_t i) { return dim > 1 ? double(i) / double(dim - 1) : 0.0; };
  for (std::size_t i = 0; i < dim; ++i) {
    for (std::size_t j = 0; j < dim; ++j) p.C[i * dim + j] = (x(i) - x(j)) * (x(i) - x(j)) + (i > j ? 0.1 : 0.0);
  }
  p.A.resize(dim * hists);
  for (std::size_t k = 0; k < hists; ++k) {
    double mass = 0;
    const double centre = (double(k) + 0.5) / double(hists);
    for (std::size_t i = 0; i < dim; ++i) {
      double v = std::exp(-20 * (x(i) - centre) * (x(i) - centre)) + 0.05 * testing::uniform01(rng);
      if (zeros && dim > 2 && (i + k) % 5 == 0) v = 0;
      mass += (p.A[i * hists + k] = v);
    }
    for (std::size_t i = 0; i < dim; ++i) p.A[i * hists + k] /= mass;
  }
  p.weights.resize(hists);
  double total = 0;
  for (auto& w : p.weights) total += (w = 0.5 + testing::uniform01(rng));
  for (auto& w : p.weights) w /= total;
  return p;
}

double lse(const std::vector<double>& v) {
  const double m = *std::max_element(v.begin(), v.end());
  if (!(m > -std::numeric_limits<double>::infinity())) return m;
  double s = 0;
  for (double y : v) s += std::exp(y - m);
  return m + std::log(s);
}

double spread(const std::vector<std::vector<double>>& x) {  // sum_j std_k x[k][j]
  double total = 0;
  for (std::size_t j = 0; j < x[0].size(); ++j) {
    double mean = 0, sq = 0;
    for (const auto& xk : x) mean += xk[j];
    mean /= double(x.size());
    for (const auto& xk : x) sq += (xk[j] - mean) * (xk[j] - mean);
    total += std::sqrt(sq / double(x.size()));
  }
  return total;
}

struct reference_run {
  std::vector<double> barycenter, errors;
};

// POT's barycenter_sinkhorn loop, `iterations` times, in one process, from
// u = 1 (the log-domain loop's start; POT's own start biases the limit when the
// weights differ: see src/sinkhorn/barycenter.cpp).
reference_run pot_plain(const problem& p, double eps, int iterations) {
  const std::size_t n = p.dim, H = p.hists;
  std::vector<double> K(n * n);
  for (std::size_t x = 0; x < n * n; ++x) K[x] = std::exp(-p.C[x] / eps);
  std::vector<std::vector<double>> u(H, std::vector<double>(n, 1.0)), ukv(H, std::vector<double>(n));
  reference_run r;
  std::vector<double> q(n);
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t k = 0; k < H; ++k) {
      std::vector<double> ratio(n), t(n, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        double ku = 0;
        for (std::size_t j = 0; j < n; ++j) ku += K[i * n + j] * u[k][j];
        ratio[i] = p.A[i * H + k] / ku;
      }
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) t[j] += K[i * n + j] * ratio[i];
      for (std::size_t j = 0; j < n; ++j) ukv[k][j] = u[k][j] * t[j];
    }
    for (std::size_t j = 0; j < n; ++j) {
      double lq = 0;
      for (std::size_t k = 0; k < H; ++k) lq += p.weights[k] * std::log(ukv[k][j]);
      q[j] = std::exp(lq);
      for (std::size_t k = 0; k < H; ++k) u[k][j] = u[k][j] * q[j] / ukv[k][j];
    }
    r.errors.push_back(spread(ukv));
  }
  r.barycenter = q;
  return r;
}

// POT's _barycenter_sinkhorn_log, `iterations` times (A's zeros as log 0 = -inf).
reference_run pot_log(const problem& p, double eps, int iterations) {
  const std::size_t n = p.dim, H = p.hists;
  std::vector<std::vector<double>> G(H, std::vector<double>(n, 0.0)), log_ku(H, std::vector<double>(n)),
      plan_columns(H, std::vector<double>(n));
  reference_run r;
  std::vector<double> log_bar(n);
  for (int it = 0; it < iterations; ++it) {
    std::fill(log_bar.begin(), log_bar.end(), 0.0);
    for (std::size_t k = 0; k < H; ++k) {
      std::vector<double> f(n), terms(n);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) terms[j] = -p.C[i * n + j] / eps + G[k][j];
        f[i] = p.A[i * H + k] > 0 ? std::log(p.A[i * H + k]) - lse(terms) : -std::numeric_limits<double>::infinity();
      }
      for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t i = 0; i < n; ++i) terms[i] = -p.C[i * n + j] / eps + f[i];
        log_ku[k][j] = lse(terms);
        log_bar[j] += p.weights[k] * log_ku[k][j];
        plan_columns[k][j] = std::exp(G[k][j] + log_ku[k][j]);
      }
    }
    r.errors.push_back(spread(plan_columns));
    for (std::size_t k = 0; k < H; ++k)
      for (std::size_t j = 0; j < n; ++j) G[k][j] = log_bar[j] - log_ku[k][j];
  }
  for (double& x : log_bar) x = std::exp(x);
  r.barycenter = log_bar;
  return r;
}

// Row split: the balanced one, or (uneven) everything on the last ranks with the
// first rank holding none.
sk::row_block rows_for(std::size_t n, bool uneven) {
  const int P = size_of(), r = rank_of();
  if (!uneven || P == 1) return sk::balanced_rows(n, r, P);
  if (r == 0) return {0, 0};
  return sk::balanced_rows(n, r - 1, P - 1);
}

template <class T>
sk::barycenter_result<T> solve(const problem& p, double eps, const sk::barycenter_options& o, bool uneven,
                               bool weighted = true) {
  const sk::row_block b = rows_for(p.dim, uneven);
  std::vector<T> C(p.C.begin() + long(b.first * p.dim), p.C.begin() + long((b.first + b.count) * p.dim));
  std::vector<T> A(p.A.begin(), p.A.end()), w(p.weights.begin(), p.weights.end());
  return sk::barycenter(C.data(), b.count, p.dim, p.dim, A.data(), p.hists, weighted ? w.data() : nullptr, eps,
                        MPI_COMM_WORLD, o);
}

void expect_same_bits_everywhere(const std::vector<double>& x) {
  const auto h = testing::hash_bytes(x.data(), x.size() * sizeof(double));
  std::uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
}

TEST(SinkhornBarycenter, EqualsPotsLoopsAtAFixedIterationCount) {
  for (bool log_domain : {false, true}) {
    for (std::size_t dim : {1, 2, 7, 23}) {
      for (std::size_t hists : {1, 2, 3}) {
        for (bool uneven : {false, true}) {
          const problem p = make_problem(dim, hists, 11 * dim + hists, /*zeros=*/true);
          const double eps = 0.05;
          const int iterations = 15;
          const auto pot = [&](int count) { return log_domain ? pot_log(p, eps, count) : pot_plain(p, eps, count); };
          // tol = 0 stops only where the plans' column sums agree exactly (one
          // histogram; one point): there, on the reference's iteration too.
          const reference_run full = pot(iterations);
          const auto exact = std::find(full.errors.begin(), full.errors.end(), 0.0);
          const int expected = exact == full.errors.end() ? iterations : int(exact - full.errors.begin()) + 1;
          const reference_run ref = pot(expected);
          sk::barycenter_options o;
          o.tol = 0;
          o.max_iter = iterations;
          o.log_domain = log_domain;
          o.threads = uneven ? 2 : 1;
          const auto res = solve<double>(p, eps, o, uneven);
          const std::string label = std::string(log_domain ? "log" : "plain") + " dim " + std::to_string(dim) +
                                    " hists " + std::to_string(hists) + (uneven ? " uneven" : "");
          ASSERT_EQ(res.state, expected < iterations ? sk::status::converged : sk::status::max_iter) << label;
          ASSERT_EQ(res.iterations, expected) << label;
          ASSERT_EQ(res.barycenter.size(), dim);
          for (std::size_t j = 0; j < dim; ++j) {
            EXPECT_NEAR(res.barycenter[j], ref.barycenter[j], 1e-10 * std::max(1.0, ref.barycenter[j])) << label;
          }
          for (int it = 0; it < expected; ++it) {
            EXPECT_NEAR(res.error_history[std::size_t(it)], ref.errors[std::size_t(it)], 1e-10) << label;
          }
          expect_same_bits_everywhere(res.barycenter);
        }
      }
    }
  }
}

TEST(SinkhornBarycenter, ConvergesToOneBarycenterInBothDomainsAndBothPrecisions) {
  const problem p = make_problem(31, 3, 5, false);
  sk::barycenter_options o;
  o.tol = 1e-9;
  o.max_iter = 20000;
  o.check_every = 10;
  o.first_check = 2;  // POT's iterations 1, 11, 21, ... (0-based)
  const auto plain = solve<double>(p, 0.02, o, false);
  o.log_domain = true;
  const auto logd = solve<double>(p, 0.02, o, true);
  ASSERT_EQ(plain.state, sk::status::converged);
  ASSERT_EQ(logd.state, sk::status::converged);
  EXPECT_EQ((plain.iterations - 2) % 10, 0);
  EXPECT_EQ(plain.iterations, logd.iterations);  // the same iterates in both forms
  double mass = 0;
  for (std::size_t j = 0; j < p.dim; ++j) {
    EXPECT_NEAR(plain.barycenter[j], logd.barycenter[j], 1e-8);
    mass += plain.barycenter[j];
  }
  EXPECT_NEAR(mass, 1.0, 1e-8);
  o.tol = 1e-5;
  for (bool log_domain : {false, true}) {
    o.log_domain = log_domain;
    const auto single = solve<float>(p, 0.02, o, false);
    ASSERT_EQ(single.state, sk::status::converged) << log_domain;
    for (std::size_t j = 0; j < p.dim; ++j) EXPECT_NEAR(single.barycenter[j], plain.barycenter[j], 1e-4) << log_domain;
  }
  // Uniform weights when none are given.
  problem even = p;
  even.weights.assign(3, 1.0 / 3);
  o.log_domain = false;
  o.tol = 1e-9;
  const auto given = solve<double>(even, 0.02, o, false), defaulted = solve<double>(even, 0.02, o, false, false);
  EXPECT_EQ(given.barycenter, defaulted.barycenter);
}

TEST(SinkhornBarycenter, LogDomainRunsWhereTheKernelUnderflows) {
  // Two histograms at the two ends of [0, 1], eps = 1e-3: exp(-C/eps) is 0 in
  // double between points farther apart than 0.84, so the plain kernel fails,
  // and in the log domain the first row passes' column sums underflow far from
  // a histogram's support (the exact column log-sum-exp runs).
  problem p;
  p.dim = 40;
  p.hists = 2;
  p.C.resize(p.dim * p.dim);
  p.A.assign(p.dim * 2, 0.0);
  for (std::size_t i = 0; i < p.dim; ++i) {
    for (std::size_t j = 0; j < p.dim; ++j) p.C[i * p.dim + j] = std::pow((double(i) - double(j)) / 39.0, 2);
  }
  for (std::size_t i = 0; i < 5; ++i) {
    p.A[i * 2] = 0.2;
    p.A[(p.dim - 1 - i) * 2 + 1] = 0.2;
  }
  p.weights = {0.3, 0.7};
  sk::barycenter_options o;
  o.tol = 0;
  o.max_iter = 25;
  const auto plain = solve<double>(p, 1e-3, o, false);
  EXPECT_EQ(plain.state, sk::status::numerical_failure);
  o.log_domain = true;
  for (bool uneven : {false, true}) {
    const auto logd = solve<double>(p, 1e-3, o, uneven);
    const reference_run ref = pot_log(p, 1e-3, 25);
    ASSERT_EQ(logd.state, sk::status::max_iter);
    double mass = 0;
    for (std::size_t j = 0; j < p.dim; ++j) {
      EXPECT_NEAR(logd.barycenter[j], ref.barycenter[j], 1e-10) << j;
      mass += logd.barycenter[j];
    }
    EXPECT_NEAR(mass, 1.0, 1e-3);
    expect_same_bits_everywhere(logd.barycenter);
  }
}

// On a subset of the ranks (even / odd halves, each its own problem), twice on the
// same communicator: the same barycenter as one process.
TEST(SinkhornBarycenter, OnHalfTheRanksEqualsOneProcess) {
  const int color = rank_of() % 2;
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank_of(), &half);
  const problem p = make_problem(19, 2 + std::size_t(color), 61 + std::uint64_t(color), false);
  sk::barycenter_options o;
  o.tol = 1e-10;
  o.max_iter = 5000;
  o.log_domain = color == 1;
  std::vector<double> A = p.A, w = p.weights;
  const auto alone =
      sk::barycenter(p.C.data(), p.dim, p.dim, p.dim, A.data(), p.hists, w.data(), 0.05, MPI_COMM_SELF, o);
  const sk::row_block b = sk::balanced_rows(p.dim, rank_of(half), size_of(half));
  for (int call = 0; call < 2; ++call) {
    const auto shared =
        sk::barycenter(p.C.data() + b.first * p.dim, b.count, p.dim, p.dim, A.data(), p.hists, w.data(), 0.05, half, o);
    ASSERT_EQ(shared.state, sk::status::converged);
    EXPECT_EQ(shared.iterations, alone.iterations);
    for (std::size_t j = 0; j < p.dim; ++j) EXPECT_NEAR(shared.barycenter[j], alone.barycenter[j], 1e-12) << call;
  }
  MPI_Comm_free(&half);
}

TEST(SinkhornBarycenter, EmptySupportConverges) {
  problem p;
  p.hists = 2;
  p.weights = {0.5, 0.5};
  const auto res = solve<double>(p, 0.1, {}, false);
  EXPECT_EQ(res.state, sk::status::converged);
  EXPECT_TRUE(res.barycenter.empty());
}

TEST(SinkhornBarycenter, BadInputOnAnyOneRankFailsEveryRank) {
  const problem good = make_problem(9, 2, 7, false);
  for (int bad = 0; bad < size_of(); ++bad) {
    SCOPED_TRACE("bad rank " + std::to_string(bad));
    const bool me = rank_of() == bad;
    const auto run = [&](const problem& p, double eps, const sk::barycenter_options& o) {
      solve<double>(p, eps, o, false);
    };
    {
      problem p = good;
      if (me) p.A[3] = std::nan("");
      expect_error_everywhere([&] { run(p, 0.1, {}); }, "(histograms must be finite and >= 0)");
    }
    {
      problem p = good;
      if (me) p.A[4] = -p.A[4];
      expect_error_everywhere([&] { run(p, 0.1, {}); }, "(histograms must be finite and >= 0)");
    }
    {
      problem p = good;
      if (me) p.weights[1] = -0.5;
      expect_error_everywhere([&] { run(p, 0.1, {}); }, "(weights must be finite and >= 0)");
    }
    {
      problem p = good;  // every rank holds rows of C at 1-5 ranks (9 rows)
      const sk::row_block b = sk::balanced_rows(9, rank_of(), size_of());
      if (me) p.C[b.first * 9 + 1] = std::numeric_limits<double>::infinity();
      expect_error_everywhere([&] { run(p, 0.1, {}); }, "(costs must be finite)");
    }
    expect_error_everywhere([&] { run(good, me ? -1.0 : 0.1, {}); }, "eps must be finite and > 0");
    {
      sk::barycenter_options o;
      if (me) o.first_check = 0;
      expect_error_everywhere([&] { run(good, 0.1, o); }, "first_check must be >= 1");
    }
    if (size_of() > 1) {  // an option differing on one rank
      sk::barycenter_options o;
      if (me) o.max_iter = 7;
      expect_error_everywhere([&] { run(good, 0.1, o); }, "max_iter");
    }
  }
  {
    problem p = good;  // the same on every rank, and still wrong: different masses
    for (std::size_t i = 0; i < p.dim; ++i) p.A[i * 2 + 1] *= 2;
    expect_error_everywhere([&] { solve<double>(p, 0.1, {}, false); }, "have different masses");
  }
  {
    const problem p = good;  // 8 rows of C over all ranks for 9 columns
    const sk::row_block b = rows_for(p.dim, false);
    const std::size_t rows = b.first + b.count == p.dim ? b.count - 1 : b.count;
    std::vector<double> A = p.A;
    expect_error_everywhere(
        [&] {
          sk::barycenter(p.C.data() + b.first * p.dim, rows, p.dim, p.dim, A.data(), p.hists, nullptr, 0.1,
                         MPI_COMM_WORLD);
        },
        "(a barycenter's cost is square)");
  }
}

}  // namespace
}  // namespace conveyor
