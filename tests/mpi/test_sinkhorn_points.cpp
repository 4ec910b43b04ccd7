// SPDX-License-Identifier: BSD-3-Clause
// Point-cloud Sinkhorn (conveyor/sinkhorn_points.hpp) at every rank count CTest
// runs it with (1-5): against a dense log-domain reference that forms C (same
// iteration, same order), against the dense engine's log-domain solver; n != m,
// d = 1..9, uneven shares with ranks that hold no X or no Y points, both metrics,
// float32 and float64, 1 and 2 threads, every SIMD target; the same error,
// iterations and cost bits on every rank; and bad input on one rank failing
// every rank alike.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "reference.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/simd.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/sinkhorn_points.hpp"

namespace conveyor {
namespace {

namespace sk = sinkhorn;
using testing::expect_error_everywhere;
using testing::rank_of;
using testing::size_of;

// Two weighted point clouds, identical on every rank (same seed).
struct clouds {
  std::size_t n = 0, m = 0, d = 0;
  std::vector<double> X, Y, a, b;  // X: n x d, Y: m x d (row-major)
};

clouds make_clouds(std::size_t n, std::size_t m, std::size_t d, std::uint64_t seed, bool uniform_weights) {
  testing::splitmix64 rng(seed);
  clouds c;
  c.n = n;
  c.m = m;
  c.d = d;
  c.X.resize(n * d);
  c.Y.resize(m * d);
  for (auto& v : c.X) v = testing::uniform01(rng);
  for (auto& v : c.Y) v = 0.3 + testing::uniform01(rng);  // shifted: the plan is not the identity
  c.a.assign(n, 1.0 / double(n));
  c.b.assign(m, 1.0 / double(m));
  if (!uniform_weights) {
    double sa = 0, sb = 0;
    for (auto& v : c.a) sa += (v = 0.2 + testing::uniform01(rng));
    for (auto& v : c.b) sb += (v = 0.2 + testing::uniform01(rng));
    for (auto& v : c.a) v /= sa;
    for (auto& v : c.b) v /= sb;
  }
  return c;
}

double ground(const clouds& c, std::size_t i, std::size_t j, sk::metric metric) {
  double s = 0;
  for (std::size_t k = 0; k < c.d; ++k) {
    const double t = c.X[i * c.d + k] - c.Y[j * c.d + k];
    s += t * t;
  }
  return metric == sk::metric::euclidean ? std::sqrt(s) : s;
}

double lse(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  double s = 0;
  for (double y : x) s += std::exp(y - m);
  return m + std::log(s);
}

// The dense reference: C formed, `iterations` updates of (log_u, log_v) in POT's
// empirical_sinkhorn order (rows first). Returns the plan.
struct reference {
  std::vector<double> log_u, log_v, plan;
  double cost = 0;
};

reference solve_dense(const clouds& c, double eps, int iterations, sk::metric metric) {
  reference r;
  r.log_u.assign(c.n, 0.0);
  r.log_v.assign(c.m, 0.0);
  std::vector<double> C(c.n * c.m), row(c.m), col(c.n);
  for (std::size_t i = 0; i < c.n; ++i) {
    for (std::size_t j = 0; j < c.m; ++j) C[i * c.m + j] = ground(c, i, j, metric);
  }
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t i = 0; i < c.n; ++i) {
      for (std::size_t j = 0; j < c.m; ++j) row[j] = r.log_v[j] - C[i * c.m + j] / eps;
      r.log_u[i] = std::log(c.a[i]) - lse(row);
    }
    for (std::size_t j = 0; j < c.m; ++j) {
      for (std::size_t i = 0; i < c.n; ++i) col[i] = r.log_u[i] - C[i * c.m + j] / eps;
      r.log_v[j] = std::log(c.b[j]) - lse(col);
    }
  }
  r.plan.resize(c.n * c.m);
  for (std::size_t i = 0; i < c.n; ++i) {
    for (std::size_t j = 0; j < c.m; ++j) {
      r.plan[i * c.m + j] = std::exp(r.log_u[i] + r.log_v[j] - C[i * c.m + j] / eps);
      r.cost += r.plan[i * c.m + j] * C[i * c.m + j];
    }
  }
  return r;
}

// This rank's share of `total` points. Skewed: rank `empty` gets none and the
// others split the rest unevenly.
sk::row_block share_of(std::size_t total, bool skewed, int empty) {
  const int P = size_of(), r = rank_of();
  if (!skewed || P == 1) return sk::balanced_rows(total, r, P);
  std::size_t weight_total = 0, before = 0;
  for (int k = 0; k < P; ++k) weight_total += k == empty ? 0 : std::size_t(k + 1);
  for (int k = 0; k < r; ++k) before += k == empty ? 0 : std::size_t(k + 1);
  const std::size_t first = total * before / weight_total;
  const std::size_t last = r == empty ? first : total * (before + std::size_t(r + 1)) / weight_total;
  return {first, last - first};
}

template <class T>
std::vector<T> slice(const std::vector<double>& v, std::size_t first, std::size_t count, std::size_t width = 1) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(first * width),
                        v.begin() + static_cast<std::ptrdiff_t>((first + count) * width));
}

// One distributed solve of `c`, gathered back.
struct distributed_run {
  sk::points_result<double> res;     // (log_u, log_v: this rank's)
  std::vector<double> log_u, log_v;  // gathered
};

template <class T>
distributed_run run_points(const clouds& c, double eps, const sk::points_options& o, bool skewed,
                           bool with_weights = true) {
  const sk::row_block bx = share_of(c.n, skewed, 0);
  const sk::row_block by = share_of(c.m, skewed, size_of() - 1);
  const auto X = slice<T>(c.X, bx.first, bx.count, c.d), Y = slice<T>(c.Y, by.first, by.count, c.d);
  const auto a = slice<T>(c.a, bx.first, bx.count), b = slice<T>(c.b, by.first, by.count);
  const auto r = sk::transport_points(X.data(), bx.count, Y.data(), by.count, c.d, with_weights ? a.data() : nullptr,
                                      with_weights ? b.data() : nullptr, eps, MPI_COMM_WORLD, o);
  distributed_run out;
  out.res.state = r.state;
  out.res.iterations = r.iterations;
  out.res.error = r.error;
  out.res.error_history = r.error_history;
  out.res.cost = r.cost;
  out.res.annealing_steps = r.annealing_steps;
  out.res.exchange_x = r.exchange_x;
  out.res.exchange_y = r.exchange_y;
  out.res.log_u.assign(r.log_u.begin(), r.log_u.end());
  out.res.log_v.assign(r.log_v.begin(), r.log_v.end());
  out.log_u = testing::gather_all(out.res.log_u);
  out.log_v = testing::gather_all(out.res.log_v);
  return out;
}

// Max relative difference of the plans of (log_u, log_v) and the reference.
double plan_difference(const clouds& c, const distributed_run& run, const reference& ref, double eps,
                       sk::metric metric) {
  double worst = 0, largest = 0;
  for (std::size_t i = 0; i < c.n; ++i) {
    for (std::size_t j = 0; j < c.m; ++j) {
      const double p = std::exp(run.log_u[i] + run.log_v[j] - ground(c, i, j, metric) / eps);
      worst = std::max(worst, std::abs(p - ref.plan[i * c.m + j]));
      largest = std::max(largest, ref.plan[i * c.m + j]);
    }
  }
  return worst / largest;
}

// The scalars every rank must hold bit for bit.
void expect_same_everywhere(const sk::points_result<double>& r) {
  const double mine[3] = {r.error, r.cost, double(r.iterations)};
  double lo[3], hi[3];
  MPI_Allreduce(mine, lo, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(lo[k], hi[k]) << "scalar " << k << " differs between ranks";
}

sk::points_options fixed_iterations(int iterations) {
  sk::points_options o;
  o.tol = 0;  // never converged: exactly max_iter updates
  o.max_iter = iterations;
  o.threads = 1;
  return o;
}

// ---------------------------------------------------------------------------
// Against the dense reference: the same iterates, to rounding
// ---------------------------------------------------------------------------
TEST(SinkhornPoints, SameIteratesAsTheDenseReference) {
  struct shape {
    std::size_t n, m, d;
    sk::metric metric;
    bool skewed;
  };
  const shape shapes[] = {{37, 23, 3, sk::metric::sqeuclidean, false}, {41, 300, 2, sk::metric::sqeuclidean, true},
                          {29, 31, 1, sk::metric::euclidean, true},    {300, 17, 9, sk::metric::sqeuclidean, false},
                          {16, 16, 5, sk::metric::euclidean, false},   {33, 41, 40, sk::metric::sqeuclidean, true},
                          {21, 300, 64, sk::metric::euclidean, false}, {9, 7, 130, sk::metric::sqeuclidean, true}};
  const double eps = 0.05;
  for (const shape& s : shapes) {
    const clouds c = make_clouds(s.n, s.m, s.d, 7 + s.n, false);
    const reference ref = solve_dense(c, eps, 12, s.metric);
    auto o = fixed_iterations(12);
    o.metric = s.metric;
    const auto run = run_points<double>(c, eps, o, s.skewed);
    SCOPED_TRACE("n " + std::to_string(s.n) + " m " + std::to_string(s.m) + " d " + std::to_string(s.d));
    EXPECT_EQ(run.res.state, sk::status::max_iter);
    EXPECT_EQ(run.res.iterations, 12);
    EXPECT_EQ(run.res.error_history.size(), 12u);
    ASSERT_EQ(run.log_u.size(), c.n);
    ASSERT_EQ(run.log_v.size(), c.m);
    EXPECT_LT(plan_difference(c, run, ref, eps, s.metric), 1e-10);
    EXPECT_NEAR(run.res.cost, ref.cost, 1e-10 * ref.cost);
    expect_same_everywhere(run.res);
  }
}

// From dot_min_dim() on the costs are |x|^2 + |y|^2 - 2<x, y>: far from the
// origin that cancels unless the points are centered first (the solver does).
TEST(SinkhornPoints, FarFromTheOriginAtEveryDimensionAndTarget) {
  for (const std::size_t d : {std::size_t(3), std::size_t(7), std::size_t(8), std::size_t(48)}) {
    clouds c = make_clouds(29, 35, d, 53 + d, false);
    for (auto& v : c.X) v += 1e4;
    for (auto& v : c.Y) v += 1e4;
    const double eps = 0.05 * double(d);
    const reference ref = solve_dense(c, eps, 8, sk::metric::sqeuclidean);
    const std::string before = simd_targets().active;
    for (const auto& name : simd_targets().supported) {
      set_simd_target(name);
      SCOPED_TRACE(name + " d " + std::to_string(d));
      const auto run = run_points<double>(c, eps, fixed_iterations(8), true);
      EXPECT_LT(plan_difference(c, run, ref, eps, sk::metric::sqeuclidean), 1e-9);
      EXPECT_NEAR(run.res.cost, ref.cost, 1e-9 * ref.cost);
    }
    set_simd_target(before);
  }
}

TEST(SinkhornPoints, ConvergedPlanHasTheMarginalsAndTheDenseSolversCost) {
  const clouds c = make_clouds(45, 38, 3, 11, false);
  const double eps = 0.1;
  sk::points_options o;
  o.tol = 1e-12;
  o.max_iter = 5000;
  const auto run = run_points<double>(c, eps, o, true);
  ASSERT_EQ(run.res.state, sk::status::converged);
  // Marginals of the returned pair, recomputed.
  std::vector<double> rows(c.n, 0.0), cols(c.m, 0.0);
  for (std::size_t i = 0; i < c.n; ++i) {
    for (std::size_t j = 0; j < c.m; ++j) {
      const double p = std::exp(run.log_u[i] + run.log_v[j] - ground(c, i, j, sk::metric::sqeuclidean) / eps);
      rows[i] += p;
      cols[j] += p;
    }
  }
  double row_err = 0, col_err = 0;
  for (std::size_t i = 0; i < c.n; ++i) row_err += std::abs(rows[i] - c.a[i]);
  for (std::size_t j = 0; j < c.m; ++j) col_err += std::abs(cols[j] - c.b[j]);
  EXPECT_NEAR(row_err, run.res.error, 1e-14);
  EXPECT_LE(row_err, 1e-12);
  EXPECT_LE(col_err, 1e-10);
  // The dense engine's log-domain solver on the formed C, one process.
  std::vector<double> C(c.n * c.m);
  for (std::size_t i = 0; i < c.n; ++i) {
    for (std::size_t j = 0; j < c.m; ++j) C[i * c.m + j] = ground(c, i, j, sk::metric::sqeuclidean);
  }
  sk::options dense;
  dense.log_domain = true;
  dense.tol = 1e-13;
  dense.max_iter = 5000;
  const auto d = sk::transport(C.data(), c.n, c.m, c.m, c.a.data(), c.b.data(), eps, MPI_COMM_SELF, dense);
  ASSERT_EQ(d.state, sk::status::converged);
  EXPECT_NEAR(run.res.cost, d.cost, 1e-10 * d.cost);
  expect_same_everywhere(run.res);
}

TEST(SinkhornPoints, Float32MatchesToSinglePrecision) {
  for (const std::size_t d : {std::size_t(3), std::size_t(12), std::size_t(64)}) {  // both cost paths
    SCOPED_TRACE("d " + std::to_string(d));
    const clouds c = make_clouds(53, 47, d, 5, true);
    const double eps = 0.05 * double(d);
    const reference ref = solve_dense(c, eps, 20, sk::metric::sqeuclidean);
    const auto run = run_points<float>(c, eps, fixed_iterations(20), true, /*with_weights=*/false);
    EXPECT_LT(plan_difference(c, run, ref, eps, sk::metric::sqeuclidean), 1e-4);
    EXPECT_NEAR(run.res.cost, ref.cost, 1e-4 * ref.cost);
    expect_same_everywhere(run.res);
  }
}

TEST(SinkhornPoints, EverySimdTargetAndThreadCountAgree) {
  const clouds c = make_clouds(70, 301, 4, 3, false);  // 301: a full tile, then a tail
  const double eps = 0.02;
  const reference ref = solve_dense(c, eps, 6, sk::metric::sqeuclidean);
  const std::string before = simd_targets().active;
  for (const auto& name : simd_targets().supported) {
    set_simd_target(name);
    SCOPED_TRACE(name);
    auto o = fixed_iterations(6);
    const auto one = run_points<double>(c, eps, o, true);
    o.threads = 2;
    const auto two = run_points<double>(c, eps, o, true);
    EXPECT_LT(plan_difference(c, one, ref, eps, sk::metric::sqeuclidean), 1e-10);
    // Rows are independent and each visits its columns in order: thread count changes nothing.
    EXPECT_EQ(one.log_u, two.log_u);
    EXPECT_EQ(one.log_v, two.log_v);
    EXPECT_EQ(one.res.cost, two.res.cost);
  }
  set_simd_target(before);
}

// Ring, gather and the automatic choice send the same blocks and work on them in
// the same order: the same bits, with uneven shares (ranks without points) and
// the many passes of eps-scaling.
// Every exchange of the table (sk::points_exchanges()), and automatic.
TEST(SinkhornPoints, EveryExchangeGivesTheSameBits) {
  std::vector<sk::exchange> ways;
  for (const sk::exchange_info& e : sk::points_exchanges()) {
    EXPECT_EQ(sk::parse_exchange(e.name), e.way);
    EXPECT_GT(std::strlen(e.summary), 20u) << e.name;
    ways.push_back(e.way);
  }
  ASSERT_EQ(ways.size() + 1, static_cast<std::size_t>(sk::exchange_count));  // every name but auto, once
  ASSERT_EQ(std::set<sk::exchange>(ways.begin(), ways.end()).size(), ways.size());
  ways.push_back(sk::exchange::automatic);
  const clouds c = make_clouds(37, 29, 3, 23, false);
  for (bool skewed : {false, true}) {
    for (bool single : {false, true}) {
      sk::points_options o;
      o.tol = 0;
      o.max_iter = 12;
      o.eps_scaling = 0.5;
      o.threads = 1;
      std::vector<distributed_run> runs;
      for (sk::exchange e : ways) {
        o.exchange = e;
        runs.push_back(single ? run_points<float>(c, 0.05, o, skewed) : run_points<double>(c, 0.05, o, skewed));
      }
      // Each side reports the way it ran: the one asked for; auto's choice is a
      // row of the table, the same on every rank (one rank: the first row).
      for (std::size_t k = 0; k < runs.size(); ++k) {
        for (const sk::exchange got : {runs[k].res.exchange_x, runs[k].res.exchange_y}) {
          if (ways[k] != sk::exchange::automatic) {
            EXPECT_EQ(got, ways[k]);
          } else {
            EXPECT_NE(got, sk::exchange::automatic);
            if (size_of() == 1) {
              EXPECT_EQ(got, ways[0]);
            }
          }
          int lo = static_cast<int>(got), hi = lo;
          MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
          MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
          EXPECT_EQ(lo, hi) << "ranks report different exchanges";
        }
      }
      for (std::size_t k = 1; k < runs.size(); ++k) {
        SCOPED_TRACE(std::string(sk::exchange_name(ways[k])) + " against " + std::string(sk::exchange_name(ways[0])) +
                     (skewed ? " skewed" : "") + (single ? " float32" : ""));
        EXPECT_EQ(runs[k].log_u, runs[0].log_u);
        EXPECT_EQ(runs[k].log_v, runs[0].log_v);
        EXPECT_EQ(runs[k].res.cost, runs[0].res.cost);
        EXPECT_EQ(runs[k].res.error_history, runs[0].res.error_history);
        EXPECT_EQ(runs[k].res.annealing_steps, runs[0].res.annealing_steps);
      }
    }
  }
}

TEST(SinkhornPoints, ConvergenceIsTestedEveryCheckEvery) {
  const clouds c = make_clouds(30, 30, 2, 13, false);
  sk::points_options o;
  o.tol = 1e-9;
  o.check_every = 10;
  const auto run = run_points<double>(c, 0.1, o, false);
  ASSERT_EQ(run.res.state, sk::status::converged);
  EXPECT_EQ(run.res.iterations % 10, 0);
  EXPECT_LE(run.res.error, 1e-9);
  if (run.res.iterations > 10) {  // the previous tested iterate was not converged
    EXPECT_GT(run.res.error_history[static_cast<std::size_t>(run.res.iterations) - 11], 1e-9);
  }
  // A warm start from the result converges at once.
  o.init_log_u = run.res.log_u;
  o.init_log_v = run.res.log_v;
  o.check_every = 1;
  const auto again = run_points<double>(c, 0.1, o, false);
  EXPECT_EQ(again.res.state, sk::status::converged);
  EXPECT_LE(again.res.iterations, 1);
}

// eps-scaling. At a small eps and a moderate tolerance it saves the slow start
// (converged in fewer annealing steps + iterations than without); from any start
// the iteration reaches the same fixed point, so with enough iterations both
// runs give the same plan, balanced or unbalanced. Every rank alike.
TEST(SinkhornPoints, EpsScalingSavesIterationsAndReachesTheSamePlan) {
  const clouds c = make_clouds(60, 50, 2, 29, false);
  for (const sk::metric metric : {sk::metric::sqeuclidean, sk::metric::euclidean}) {
    SCOPED_TRACE(sk::metric_name(metric));
    sk::points_options o;
    o.metric = metric;
    o.tol = 1e-4;
    o.max_iter = 100000;
    const double eps = 2e-3;
    const auto plain = run_points<double>(c, eps, o, true);
    o.eps_scaling = 0.5;
    const auto scaled = run_points<double>(c, eps, o, true);
    ASSERT_EQ(plain.res.state, sk::status::converged);
    ASSERT_EQ(scaled.res.state, sk::status::converged);
    EXPECT_EQ(plain.res.annealing_steps, 0);
    // log2(D^p / eps) steps: D = 1.3 sqrt(2) here (X in [0, 1]^2, Y in [0.3, 1.3]^2)
    EXPECT_GE(scaled.res.annealing_steps, 9);
    EXPECT_LE(scaled.res.annealing_steps, 12);
    EXPECT_LT(scaled.res.iterations + scaled.res.annealing_steps, plain.res.iterations)
        << "plain " << plain.res.iterations << ", scaled " << scaled.res.iterations;
    EXPECT_NEAR(scaled.res.cost, plain.res.cost, 2e-3 * plain.res.cost);
    expect_same_everywhere(scaled.res);
    int steps[2] = {scaled.res.annealing_steps, -scaled.res.annealing_steps}, agreed[2];
    MPI_Allreduce(steps, agreed, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(agreed[0], -agreed[1]);
  }
  for (const sk::metric metric : {sk::metric::sqeuclidean, sk::metric::euclidean}) {
    for (const double reg_m : {std::numeric_limits<double>::infinity(), 0.5}) {
      SCOPED_TRACE(std::string(sk::metric_name(metric)) + " reg_m " + std::to_string(reg_m));
      const double eps = 1e-2;
      auto o = fixed_iterations(800);  // (~500 reach a 1e-10 marginal error here)
      o.metric = metric;
      o.reg_m_rows = o.reg_m_cols = reg_m;
      const auto plain = run_points<double>(c, eps, o, true);
      o.eps_scaling = 0.5;
      const auto scaled = run_points<double>(c, eps, o, true);
      double worst = 0, largest = 0;
      for (std::size_t i = 0; i < c.n; ++i) {
        for (std::size_t j = 0; j < c.m; ++j) {
          const double C = ground(c, i, j, metric) / eps;
          const double p = std::exp(plain.log_u[i] + plain.log_v[j] - C);
          worst = std::max(worst, std::abs(std::exp(scaled.log_u[i] + scaled.log_v[j] - C) - p));
          largest = std::max(largest, p);
        }
      }
      EXPECT_LT(worst / largest, 1e-9);
      EXPECT_NEAR(scaled.res.cost, plain.res.cost, 1e-9 * plain.res.cost);
    }
  }
}

TEST(SinkhornPoints, EmptyAndZeroWeightPoints) {
  // No points anywhere: nothing to do.
  std::vector<double> none;
  const auto empty = sk::transport_points(none.data(), 0, none.data(), 0, 3, nullptr, nullptr, 0.1, MPI_COMM_WORLD);
  EXPECT_EQ(empty.state, sk::status::converged);
  // A zero weight keeps its point out of the plan (log_u = -Inf) and the rest still converges.
  clouds c = make_clouds(20, 15, 2, 17, false);
  const double moved = c.a[3];
  c.a[3] = 0;
  c.a[4] += moved;
  sk::points_options o;
  o.tol = 1e-11;
  const auto run = run_points<double>(c, 0.1, o, false);
  EXPECT_EQ(run.res.state, sk::status::converged);
  EXPECT_TRUE(std::isinf(run.log_u[3]) && run.log_u[3] < 0);
  EXPECT_TRUE(std::isfinite(run.res.cost));
}

// ---------------------------------------------------------------------------
// The plan applied without forming it: against the formed plan
// ---------------------------------------------------------------------------
// (P o C^power) V (or its transpose times V) from the gathered potentials, for
// the rows [first, first + count); power -1 counts a pair at cost 0 as 0.
std::vector<double> formed_product(const clouds& c, const distributed_run& run, double eps, sk::metric metric,
                                   const std::vector<double>& V, std::size_t k, bool transpose, std::size_t first,
                                   std::size_t count, int power) {
  std::vector<double> out(count * k, 0.0);
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t own = first + r;
    for (std::size_t o = 0; o < (transpose ? c.n : c.m); ++o) {
      const std::size_t i = transpose ? o : own, j = transpose ? own : o;
      const double C = ground(c, i, j, metric);
      const double factor = power == 0 ? 1.0 : power > 0 ? C : C > 0 ? 1 / C : 0.0;
      const double P = factor * std::exp(run.log_u[i] + run.log_v[j] - C / eps);
      for (std::size_t q = 0; q < k; ++q) out[r * k + q] += P * V[o * k + q];
    }
  }
  return out;
}

template <class T>
void expect_apply_matches(const clouds& c, sk::metric metric, std::size_t k, bool transpose, double tolerance,
                          int power = 0) {
  const double eps = 0.05;
  auto o = fixed_iterations(15);
  o.metric = metric;
  const auto run = run_points<double>(c, eps, o, /*skewed=*/true);
  const sk::row_block bx = share_of(c.n, true, 0), by = share_of(c.m, true, size_of() - 1);
  testing::splitmix64 rng(31 + k);
  std::vector<double> V((transpose ? c.n : c.m) * k);
  for (auto& v : V) v = testing::uniform01(rng) - 0.25;
  const sk::row_block own = transpose ? by : bx, other = transpose ? bx : by;
  const auto X = slice<T>(c.X, bx.first, bx.count, c.d), Y = slice<T>(c.Y, by.first, by.count, c.d);
  const auto log_u = slice<T>(run.log_u, bx.first, bx.count), log_v = slice<T>(run.log_v, by.first, by.count);
  const auto mine = slice<T>(V, other.first, other.count, k);
  std::vector<T> out(own.count * k, T(-1));
  sk::plan_apply_options ao;
  ao.metric = metric;
  ao.transpose = transpose;
  ao.threads = 1;
  ao.cost_power = power;
  sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, c.d, log_u.data(), log_v.data(), eps, mine.data(), k,
                        out.data(), MPI_COMM_WORLD, ao);
  const auto want = formed_product(c, run, eps, metric, V, k, transpose, own.first, own.count, power);
  double largest = 0;
  for (double w : want) largest = std::max(largest, std::abs(w));
  for (std::size_t e = 0; e < want.size(); ++e) {
    ASSERT_NEAR(double(out[e]), want[e], tolerance * largest) << "entry " << e;
  }
  // Two threads: each row visits the columns in the same order, so the same bits.
  ao.threads = 2;
  std::vector<T> again(out.size());
  sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, c.d, log_u.data(), log_v.data(), eps, mine.data(), k,
                        again.data(), MPI_COMM_WORLD, ao);
  EXPECT_EQ(again, out);
}

TEST(SinkhornPointsPlan, ApplyingThePlanEqualsTheFormedPlanTimesValues) {
  // 300: a full tile and a tail; uneven shares, empty ranks. d = 9: the
  // dot-product path (from dot_min_dim() = 8), also 1e4 away from the origin
  // (where it needs the centering on the common bounding box).
  // (13 rows at d = 9: the product's cost, n m, kept small for the emulated CPUs.)
  clouds far = make_clouds(13, 300, 9, 42, false);
  for (auto* points : {&far.X, &far.Y}) {
    for (double& x : *points) x += 1e4;
  }
  // Each cloud has a point of Y on a point of X (and, far away, on the last
  // tile's): a cost of 0, which cost_power -1 must count as 0, not 1/0.
  for (clouds c : {make_clouds(37, 300, 3, 41, false), make_clouds(13, 300, 9, 42, false), far}) {
    const bool is_far = c.X[0] > 1e3;
    std::copy_n(c.X.begin() + 5 * c.d, c.d, c.Y.begin() + 7 * c.d);
    std::copy_n(c.X.begin() + 2 * c.d, c.d, c.Y.begin() + 290 * c.d);
    for (const sk::metric metric : {sk::metric::sqeuclidean, sk::metric::euclidean}) {
      // (powers 1 and -1, the gradients' sums, at k = 3 only: the emulated CPUs' time)
      for (const auto& [k, power] : {std::pair{std::size_t(1), 0}, std::pair{std::size_t(3), 0},
                                     std::pair{std::size_t(3), 1}, std::pair{std::size_t(3), -1}}) {
        for (const bool transpose : {false, true}) {
          SCOPED_TRACE(std::string(sk::metric_name(metric)) + " d " + std::to_string(c.d) + (is_far ? " far" : "") +
                       " k " + std::to_string(k) + (transpose ? " transposed" : "") + " cost_power " +
                       std::to_string(power));
          expect_apply_matches<double>(c, metric, k, transpose, is_far ? 1e-9 : 1e-12, power);
          if (!is_far) expect_apply_matches<float>(c, metric, k, transpose, 1e-4, power);
        }
      }
    }
  }
}

// The barycentric map X -> Y: (P Y)_i / a_i lies in Y's bounding box, and at
// convergence the plan's rows sum to a, so P applied to ones gives a back.
TEST(SinkhornPointsPlan, BarycentricMapAndRowSums) {
  const clouds c = make_clouds(40, 33, 2, 43, false);
  sk::points_options o;
  o.tol = 1e-12;
  const double eps = 0.05;
  const auto run = run_points<double>(c, eps, o, false);
  ASSERT_EQ(run.res.state, sk::status::converged);
  const sk::row_block bx = sk::balanced_rows(c.n, rank_of(), size_of()),
                      by = sk::balanced_rows(c.m, rank_of(), size_of());
  const auto X = slice<double>(c.X, bx.first, bx.count, c.d), Y = slice<double>(c.Y, by.first, by.count, c.d);
  std::vector<double> mapped(bx.count * c.d), sums(bx.count), ones(by.count, 1.0);
  sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, c.d, run.res.log_u.data(), run.res.log_v.data(), eps,
                        Y.data(), c.d, mapped.data(), MPI_COMM_WORLD);
  sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, c.d, run.res.log_u.data(), run.res.log_v.data(), eps,
                        ones.data(), 1, sums.data(), MPI_COMM_WORLD);
  for (std::size_t i = 0; i < bx.count; ++i) {
    EXPECT_NEAR(sums[i], c.a[bx.first + i], 1e-12);
    for (std::size_t d = 0; d < c.d; ++d) {
      const double x = mapped[i * c.d + d] / c.a[bx.first + i];
      EXPECT_GE(x, 0.3 - 1e-12);  // Y is in [0.3, 1.3]^d
      EXPECT_LE(x, 1.3 + 1e-12);
    }
  }
}

// On a subset of the ranks (even / odd halves, each its own problem): the solve and
// the product equal the same calls in one process, twice on the same communicator.
TEST(SinkhornPointsPlan, OnHalfTheRanksEqualsOneProcess) {
  const int color = rank_of() % 2;
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank_of(), &half);
  const clouds c = make_clouds(23 + std::size_t(color), 19, 3, 59 + std::uint64_t(color), false);
  const double eps = 0.05;
  const auto o = fixed_iterations(10);
  const sk::row_block bx = sk::balanced_rows(c.n, rank_of(half), size_of(half));
  const sk::row_block by = sk::balanced_rows(c.m, rank_of(half), size_of(half));
  const auto X = slice<double>(c.X, bx.first, bx.count, c.d), Y = slice<double>(c.Y, by.first, by.count, c.d);
  const auto a = slice<double>(c.a, bx.first, bx.count), b = slice<double>(c.b, by.first, by.count);
  const auto whole =
      sk::transport_points(c.X.data(), c.n, c.Y.data(), c.m, c.d, c.a.data(), c.b.data(), eps, MPI_COMM_SELF, o);
  std::vector<double> whole_out(c.n * c.d);
  sk::apply_plan_points(c.X.data(), c.n, c.Y.data(), c.m, c.d, whole.log_u.data(), whole.log_v.data(), eps, c.Y.data(),
                        c.d, whole_out.data(), MPI_COMM_SELF);
  for (int repeat = 0; repeat < 2; ++repeat) {  // (the communicator's cached state reused)
    const auto r = sk::transport_points(X.data(), bx.count, Y.data(), by.count, c.d, a.data(), b.data(), eps, half, o);
    EXPECT_NEAR(r.cost, whole.cost, 1e-12 * whole.cost);
    std::vector<double> out(bx.count * c.d);
    sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, c.d, r.log_u.data(), r.log_v.data(), eps, Y.data(),
                          c.d, out.data(), half);
    for (std::size_t e = 0; e < out.size(); ++e) EXPECT_NEAR(out[e], whole_out[bx.first * c.d + e], 1e-12);
  }
  MPI_Comm_free(&half);
}

// A batch (plan_apply_options::batch): B problems in one call give what each
// gives alone -- apply_plan_points both ways and softmin_points, uneven shares
// with an empty rank, both metrics, d = 3 (differences) and d = 9 (dot products,
// centered on the whole batch's box instead of each problem's: the tolerance).
// Then no problems at all, and batch sizes that differ between ranks.
TEST(SinkhornPointsPlan, ABatchEqualsEachProblemAlone) {
  constexpr std::size_t B = 4, k = 2;
  for (const std::size_t d : {std::size_t(3), std::size_t(9)}) {
    const std::size_t n = 37, m = 29;
    std::vector<clouds> problems;
    for (std::size_t b = 0; b < B; ++b) problems.push_back(make_clouds(n, m, d, 70 + b + 10 * d, false));
    const sk::row_block bx = share_of(n, true, 0), by = share_of(m, true, size_of() - 1);
    // This rank's share of every problem, problem after problem; potentials and values drawn alike on every rank.
    std::vector<double> X, Y, log_u, log_v, V_y, V_x;
    testing::splitmix64 rng(99 + d);
    for (std::size_t b = 0; b < B; ++b) {
      std::vector<double> u(n), v(m), vy(m * k), vx(n * k);
      for (auto& e : u) e = -testing::uniform01(rng);
      for (auto& e : v) e = -testing::uniform01(rng);
      v[m / 2] = -std::numeric_limits<double>::infinity();  // a point of weight 0
      for (auto& e : vy) e = testing::uniform01(rng) - 0.25;
      for (auto& e : vx) e = testing::uniform01(rng) - 0.25;
      for (const auto& [to, from] : {std::pair{&X, slice<double>(problems[b].X, bx.first, bx.count, d)},
                                     std::pair{&Y, slice<double>(problems[b].Y, by.first, by.count, d)},
                                     std::pair{&log_u, slice<double>(u, bx.first, bx.count)},
                                     std::pair{&log_v, slice<double>(v, by.first, by.count)},
                                     std::pair{&V_y, slice<double>(vy, by.first, by.count, k)},
                                     std::pair{&V_x, slice<double>(vx, bx.first, bx.count, k)}}) {
        to->insert(to->end(), from.begin(), from.end());
      }
    }
    const double tolerance = d >= 8 ? 1e-9 : 1e-12;
    const auto expect_close = [&](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
      ASSERT_EQ(got.size(), want.size()) << what;
      double largest = 0;
      for (double w : want) largest = std::isfinite(w) ? std::max(largest, std::abs(w)) : largest;
      for (std::size_t e = 0; e < want.size(); ++e) {
        if (std::isinf(want[e])) EXPECT_EQ(got[e], want[e]) << what << " entry " << e;
        else ASSERT_NEAR(got[e], want[e], tolerance * std::max(largest, 1.0)) << what << " entry " << e;
      }
    };
    for (const sk::metric metric : {sk::metric::sqeuclidean, sk::metric::euclidean}) {
      SCOPED_TRACE(std::string(sk::metric_name(metric)) + " d " + std::to_string(d));
      const double eps = 0.07;
      sk::plan_apply_options one;
      one.metric = metric;
      sk::plan_apply_options all = one;
      all.batch = B;
      for (const bool transpose : {false, true}) {
        one.transpose = all.transpose = transpose;
        const std::size_t own = transpose ? by.count : bx.count;
        const std::vector<double>& V = transpose ? V_x : V_y;
        const std::size_t other = transpose ? bx.count : by.count;
        std::vector<double> batched(B * own * k, -7), alone(B * own * k, -7);
        sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, d, log_u.data(), log_v.data(), eps, V.data(), k,
                              batched.data(), MPI_COMM_WORLD, all);
        for (std::size_t b = 0; b < B; ++b) {
          sk::apply_plan_points(X.data() + b * bx.count * d, bx.count, Y.data() + b * by.count * d, by.count, d,
                                log_u.data() + b * bx.count, log_v.data() + b * by.count, eps, V.data() + b * other * k,
                                k, alone.data() + b * own * k, MPI_COMM_WORLD, one);
        }
        expect_close(batched, alone, transpose ? "P^T V" : "P V");
      }
      one.transpose = all.transpose = false;
      for (const std::size_t values : {std::size_t(0), k}) {  // softmin alone, and with averages of V
        std::vector<double> lse(B * bx.count, -7), avg(B * bx.count * values, -7);
        std::vector<double> lse1(lse.size(), -7), avg1(avg.size(), -7);
        sk::softmin_points(X.data(), bx.count, Y.data(), by.count, d, log_v.data(), eps, values ? V_y.data() : nullptr,
                           values, lse.data(), avg.data(), MPI_COMM_WORLD, all);
        for (std::size_t b = 0; b < B; ++b) {
          sk::softmin_points(X.data() + b * bx.count * d, bx.count, Y.data() + b * by.count * d, by.count, d,
                             log_v.data() + b * by.count, eps, values ? V_y.data() + b * by.count * k : nullptr, values,
                             lse1.data() + b * bx.count, avg1.data() + b * bx.count * values, MPI_COMM_WORLD, one);
        }
        expect_close(lse, lse1, "softmin lse");
        expect_close(avg, avg1, "softmin averages");
      }
    }
  }
  // No problems: nothing read or written, on every rank.
  sk::plan_apply_options none;
  none.batch = 0;
  double untouched = -7;
  sk::softmin_points(static_cast<const double*>(nullptr), 5, nullptr, 4, 3, nullptr, 0.1, nullptr, 0, &untouched,
                     &untouched, MPI_COMM_WORLD, none);
  EXPECT_EQ(untouched, -7);
  if (size_of() > 1) {
    for (int bad = 0; bad < size_of(); ++bad) {
      sk::plan_apply_options o;
      o.batch = rank_of() == bad ? 3 : 2;
      std::vector<double> X(3 * 2, 0.5), h(3 * 2, 0.0), lse(3 * 2), avg;
      expect_error_everywhere(
          [&] {
            sk::softmin_points(X.data(), 2, X.data(), 2, 1, h.data(), 0.1, nullptr, 0, lse.data(), nullptr,
                               MPI_COMM_WORLD, o);
          },
          "different batch sizes");
    }
  }
}

TEST(SinkhornPointsPlan, BadInputOnAnyOneRankFailsEveryRank) {
  const clouds c = make_clouds(12, 10, 3, 47, false);
  const sk::row_block bx = sk::balanced_rows(c.n, rank_of(), size_of()),
                      by = sk::balanced_rows(c.m, rank_of(), size_of());
  for (int bad = 0; bad < size_of(); ++bad) {
    SCOPED_TRACE("bad rank " + std::to_string(bad));
    const bool me = rank_of() == bad;
    struct call_case {
      std::vector<double> X, Y, log_u, log_v, V, out;
      std::size_t k = 2;
      double eps = 0.1;
      sk::plan_apply_options o;
    };
    const auto fresh = [&] {
      call_case t;
      t.X = slice<double>(c.X, bx.first, bx.count, c.d);
      t.Y = slice<double>(c.Y, by.first, by.count, c.d);
      t.log_u.assign(bx.count, 0.0);
      t.log_v.assign(by.count, 0.0);
      t.V.assign(by.count * 3, 1.0);  // room for k = 3
      t.out.assign(std::max(bx.count, by.count) * 3, 0.0);
      return t;
    };
    const auto run = [&](call_case& t) {
      sk::apply_plan_points(t.X.data(), bx.count, t.Y.data(), by.count, c.d, t.log_u.data(), t.log_v.data(), t.eps,
                            t.V.data(), t.k, t.out.data(), MPI_COMM_WORLD, t.o);
    };
    {
      call_case t = fresh();
      if (me) t.V[1] = std::nan("");
      expect_error_everywhere([&] { run(t); }, "(values must be finite)");
    }
    {
      call_case t = fresh();
      if (me) t.log_u[0] = std::numeric_limits<double>::infinity();
      expect_error_everywhere([&] { run(t); }, "(potentials must be finite or -inf)");
    }
    {
      call_case t = fresh();
      if (me) t.X[0] = std::nan("");
      expect_error_everywhere([&] { run(t); }, "(points must be finite)");
    }
    {
      call_case t = fresh();
      if (me) t.eps = -1;
      expect_error_everywhere([&] { run(t); }, "eps must be finite and > 0");
    }
    if (size_of() > 1) {
      call_case t = fresh();
      if (me) t.k = 3;
      expect_error_everywhere([&] { run(t); }, "different value counts (k)");
      call_case u = fresh();
      if (me) u.o.transpose = true;
      expect_error_everywhere([&] { run(u); }, "different transpose flags");
      call_case w = fresh();
      if (me) w.o.cost_power = -1;
      expect_error_everywhere([&] { run(w); }, "different cost powers");
    }
    {
      call_case t = fresh();
      if (me) t.o.cost_power = 2;
      expect_error_everywhere([&] { run(t); }, "cost_power must be -1, 0 or 1, got 2");
    }
  }
}

// ---------------------------------------------------------------------------
// C API
// ---------------------------------------------------------------------------
TEST(SinkhornPointsCApi, MatchesTheCppApi) {
  const clouds c = make_clouds(31, 26, 3, 23, false);
  const sk::row_block bx = share_of(c.n, true, 0), by = share_of(c.m, true, size_of() - 1);
  const auto X = slice<float>(c.X, bx.first, bx.count, c.d), Y = slice<float>(c.Y, by.first, by.count, c.d);
  const auto a = slice<float>(c.a, bx.first, bx.count), b = slice<float>(c.b, by.first, by.count);
  conveyor_points_options o;
  conveyor_points_options_init(&o);
  EXPECT_EQ(o.metric, CONVEYOR_POINTS_SQEUCLIDEAN);
  EXPECT_EQ(o.norm, CONVEYOR_SINKHORN_L1);
  o.tol = 1e-5;
  o.metric = CONVEYOR_POINTS_EUCLIDEAN;
  std::vector<float> log_u(bx.count + 1), log_v(by.count + 1);
  conveyor_sinkhorn_info info{};
  ASSERT_EQ(conveyor_sinkhorn_points(CONVEYOR_FLOAT32, X.data(), bx.count, Y.data(), by.count, c.d, a.data(), b.data(),
                                     0.05, MPI_COMM_WORLD, &o, log_u.data(), log_v.data(), &info),
            CONVEYOR_SUCCESS)
      << conveyor_last_error();
  sk::points_options cpp;
  cpp.tol = 1e-5;
  cpp.metric = sk::metric::euclidean;
  const auto r =
      sk::transport_points(X.data(), bx.count, Y.data(), by.count, c.d, a.data(), b.data(), 0.05, MPI_COMM_WORLD, cpp);
  EXPECT_EQ(info.status, static_cast<int>(r.state));
  EXPECT_EQ(info.iterations, r.iterations);
  EXPECT_EQ(info.cost, r.cost);
  EXPECT_TRUE(std::equal(r.log_u.begin(), r.log_u.end(), log_u.begin()));
  EXPECT_TRUE(std::equal(r.log_v.begin(), r.log_v.end(), log_v.begin()));
  // A bad dtype is refused on every rank.
  EXPECT_NE(conveyor_sinkhorn_points(CONVEYOR_INT32, X.data(), bx.count, Y.data(), by.count, c.d, nullptr, nullptr,
                                     0.05, MPI_COMM_WORLD, nullptr, nullptr, nullptr, nullptr),
            CONVEYOR_SUCCESS);
  // The plan applied (transposed: a row per Y point), C against C++.
  conveyor_plan_apply_options ao;
  conveyor_plan_apply_options_init(&ao);
  EXPECT_EQ(ao.metric, CONVEYOR_POINTS_SQEUCLIDEAN);
  EXPECT_EQ(ao.transpose, 0);
  EXPECT_EQ(ao.cost_power, 0);
  ao.metric = CONVEYOR_POINTS_EUCLIDEAN;
  ao.transpose = 1;
  ao.cost_power = -1;
  const std::vector<float> W(bx.count * 2, 0.5f);
  std::vector<float> from_c(by.count * 2), from_cpp(by.count * 2);
  ASSERT_EQ(conveyor_apply_plan_points(CONVEYOR_FLOAT32, X.data(), bx.count, Y.data(), by.count, c.d, log_u.data(),
                                       log_v.data(), 0.05, W.data(), 2, from_c.data(), MPI_COMM_WORLD, &ao),
            CONVEYOR_SUCCESS)
      << conveyor_last_error();
  sk::plan_apply_options cpp_apply;
  cpp_apply.metric = sk::metric::euclidean;
  cpp_apply.transpose = true;
  cpp_apply.cost_power = -1;
  sk::apply_plan_points(X.data(), bx.count, Y.data(), by.count, c.d, r.log_u.data(), r.log_v.data(), 0.05, W.data(), 2,
                        from_cpp.data(), MPI_COMM_WORLD, cpp_apply);
  EXPECT_EQ(from_c, from_cpp);
  EXPECT_NE(conveyor_apply_plan_points(CONVEYOR_INT32, X.data(), bx.count, Y.data(), by.count, c.d, log_u.data(),
                                       log_v.data(), 0.05, W.data(), 2, from_c.data(), MPI_COMM_WORLD, nullptr),
            CONVEYOR_SUCCESS);
}

// ---------------------------------------------------------------------------
// Bad input: the same error on every rank, whichever rank has it
// ---------------------------------------------------------------------------
struct bad_points_case {
  clouds c = make_clouds(12, 10, 3, 19, false);
  sk::row_block bx = sk::balanced_rows(c.n, rank_of(), size_of());
  sk::row_block by = sk::balanced_rows(c.m, rank_of(), size_of());
  std::vector<double> X = slice<double>(c.X, bx.first, bx.count, c.d), Y = slice<double>(c.Y, by.first, by.count, c.d);
  std::vector<double> a = slice<double>(c.a, bx.first, bx.count), b = slice<double>(c.b, by.first, by.count);
  std::size_t dim = c.d;
  double eps = 0.1;
  sk::points_options o;
  void run() {
    sk::transport_points(X.data(), bx.count, Y.data(), by.count, dim, a.data(), b.data(), eps, MPI_COMM_WORLD, o);
  }
};

TEST(SinkhornPointsErrors, BadInputOnAnyOneRankFailsEveryRank) {
  for (int bad = 0; bad < size_of(); ++bad) {
    SCOPED_TRACE("bad rank " + std::to_string(bad));
    const bool me = rank_of() == bad;
    {
      bad_points_case t;
      if (me) t.X[1] = std::nan("");  // (12 and 10 points: every rank of 1-5 holds some of each)
      expect_error_everywhere([&] { t.run(); }, "(points must be finite)");
    }
    {
      bad_points_case t;
      if (me) t.Y[0] = std::numeric_limits<double>::infinity();
      expect_error_everywhere([&] { t.run(); }, "(points must be finite)");
    }
    {
      bad_points_case t;
      if (me) t.a[0] = -t.a[0];
      expect_error_everywhere([&] { t.run(); }, "(marginals must be finite and >= 0)");
    }
    {
      bad_points_case t;
      if (me) t.b[0] *= 3;
      expect_error_everywhere([&] { t.run(); }, "different masses");
    }
    {
      bad_points_case t;
      if (me) t.eps = bad % 2 ? 0.0 : std::nan("");
      expect_error_everywhere([&] { t.run(); }, "eps");
    }
    {
      bad_points_case t;
      if (me) t.o.max_iter = 0;
      expect_error_everywhere([&] { t.run(); }, "max_iter must be >= 1");
    }
    if (size_of() > 1) {
      bad_points_case t;
      if (me) t.dim = 2;  // d differs on one rank (its arrays are long enough either way)
      expect_error_everywhere([&] { t.run(); }, "different dims");
    }
    {
      bad_points_case t;
      if (me) t.o.eps_scaling = bad % 2 ? 1.0 : -0.5;
      expect_error_everywhere([&] { t.run(); }, "eps_scaling must be 0 (off) or in (0, 1)");
    }
    if (size_of() > 1) {
      bad_points_case t;
      if (me) t.o.eps_scaling = 0.5;  // valid, but on one rank only
      expect_error_everywhere([&] { t.run(); }, "eps_scaling values");
    }
    {
      bad_points_case t;
      if (me) t.o.init_log_u.assign(t.bx.count, 0.0);  // init_log_v missing
      expect_error_everywhere([&] { t.run(); }, "give both or neither");
    }
    {
      bad_points_case t;
      if (me) t.o.exchange = static_cast<sk::exchange>(7);
      expect_error_everywhere([&] { t.run(); }, "unknown exchange 7");
    }
    if (size_of() > 1) {
      bad_points_case t;
      if (me) t.o.exchange = sk::exchange::gather;  // valid, but on one rank only
      expect_error_everywhere([&] { t.run(); }, "exchanges");
    }
  }
  {
    bad_points_case t;
    t.dim = 0;
    expect_error_everywhere([&] { t.run(); }, "dim must be >= 1");
  }
}

}  // namespace
}  // namespace conveyor
