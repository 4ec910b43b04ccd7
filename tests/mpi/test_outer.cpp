// SPDX-License-Identifier: BSD-3-Clause
// DSOP at every rank count CTest runs it with (1-6): every algorithm x shapes with
// N != M, N < P, N not divisible by P, N = 0, M = 0 x float32/float64 x row/column
// major x full and distributed results, against a direct reference. Inputs are small
// integers, so every summation order gives the same exact result and results are
// compared exactly; every rank's full G must also be bitwise identical.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "reference.hpp"
#include "mpi_test_util.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/dsop.hpp"

namespace conveyor {
namespace {

using testing::hash_bytes;
using testing::rank_of;
using testing::size_of;

// Rank p's vector of length n: integers in [-4, 4].
std::vector<double> vec(int p, std::size_t n, std::uint64_t salt) {
  testing::splitmix64 rng((static_cast<std::uint64_t>(p) + 1) * 7919 + salt);
  std::vector<double> v(n);
  for (auto& x : v) x = static_cast<double>(static_cast<int>(rng() % 9) - 4);
  return v;
}

// G[i][j] = sum_p a_p[i] b_p[j], row-major.
std::vector<double> reference(std::size_t N, std::size_t M, int P) {
  std::vector<double> G(N * M, 0.0);
  for (int p = 0; p < P; ++p) {
    const auto a = vec(p, N, 1), b = vec(p, M, 2);
    for (std::size_t i = 0; i < N; ++i) {
      for (std::size_t j = 0; j < M; ++j) G[i * M + j] += a[i] * b[j];
    }
  }
  return G;
}

// auto, then every algorithm of the table (conveyor::outer_algorithms()).
std::vector<outer_algorithm> every_algorithm() {
  std::vector<outer_algorithm> out = {outer_algorithm::automatic};
  for (const outer_algorithm_info& a : outer_algorithms()) out.push_back(a.algorithm);
  return out;
}

template <class T>
void check_all(std::size_t N, std::size_t M) {
  const int P = size_of(), me = rank_of();
  const auto ref = reference(N, M, P);
  const auto a64 = vec(me, N, 1), b64 = vec(me, M, 2);
  const std::vector<T> a(a64.begin(), a64.end()), b(b64.begin(), b64.end());
  for (outer_algorithm alg : every_algorithm()) {
    for (matrix_order order : {matrix_order::row_major, matrix_order::column_major}) {
      for (bool distributed : {false, true}) {
        outer_options o;
        o.algorithm = alg;
        o.order = order;
        o.distributed = distributed;
        const outer_block mine = outer_rows(N, me, P);
        const std::size_t rows = distributed ? mine.count : N;
        std::vector<T> G(rows * M + 1, T(-99));  // one canary past the end
        const std::string label = std::string(outer_algorithm_name(alg)) + " N=" + std::to_string(N) +
                                  " M=" + std::to_string(M) + (order == matrix_order::row_major ? " row" : " col") +
                                  (distributed ? " distributed" : " full") + (sizeof(T) == 4 ? " f32" : " f64");
        const outer_report r = outer_sum(a.data(), N, b.data(), M, G.data(), rows * M, MPI_COMM_WORLD, o);
        if (alg != outer_algorithm::automatic) {
          EXPECT_EQ(r.algorithm, alg) << label;
        }
        EXPECT_NE(r.algorithm, outer_algorithm::automatic) << label;
        EXPECT_EQ(r.first_row, distributed ? mine.first : 0u) << label;
        EXPECT_EQ(r.rows, rows) << label;
        EXPECT_EQ(G[rows * M], T(-99)) << label << ": wrote past the end";
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < rows; ++i) {
          for (std::size_t j = 0; j < M; ++j) {
            const T got = order == matrix_order::row_major ? G[i * M + j] : G[j * rows + i];
            wrong += got != static_cast<T>(ref[(r.first_row + i) * M + j]);
          }
        }
        EXPECT_EQ(wrong, 0u) << label;
        if (!distributed) {
          const std::uint64_t h = hash_bytes(G.data(), rows * M * sizeof(T));
          std::uint64_t lo = h, hi = h;
          MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
          MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
          EXPECT_EQ(lo, hi) << label << ": ranks hold different G";
        }
      }
    }
  }
}

struct shape {
  std::size_t N, M;
};

TEST(OuterSum, EveryAlgorithmOrderAndResultMatchesTheReference) {
  const std::size_t P = static_cast<std::size_t>(size_of());
  const shape shapes[] = {{1, 1},   {5, 3},   {3, 40}, {P - 1, 7}, {P + 1, 9},
                          {37, 29}, {64, 64}, {0, 6},  {6, 0},     {131, 250}};
  for (const shape s : shapes) {
    check_all<double>(s.N, s.M);
    check_all<float>(s.N, s.M);
  }
}

TEST(OuterSum, AutoFollowsTheEnvironmentAndReportsItsChoice) {
  // CONVEYOR_DSOP_ALGORITHM is read once per process; this only checks the report
  // names a concrete algorithm and the prediction is positive for real work.
  const auto a = vec(rank_of(), 300, 1), b = vec(rank_of(), 200, 2);
  std::vector<double> G(300 * 200);
  const outer_report r = outer_sum(a.data(), 300, b.data(), 200, G.data(), G.size(), MPI_COMM_WORLD);
  EXPECT_NE(r.algorithm, outer_algorithm::automatic);
  EXPECT_GT(r.predicted_seconds, 0.0);
  EXPECT_EQ(parse_outer_algorithm(outer_algorithm_name(r.algorithm)), r.algorithm);
  EXPECT_THROW(parse_outer_algorithm("butterfly"), error);
}

// The table of algorithms (src/dsop/algorithms/): one row for every algorithm
// but auto, each named as the setting names it and described; auto's choice is
// the cheapest row's prediction, ties going to the earlier row, on shapes where
// each of the four algorithms wins.
TEST(OuterSum, TheTableHasEveryAlgorithmOnceAndAutoTakesItsCheapestRow) {
  const auto& table = outer_algorithms();
  ASSERT_EQ(table.size() + 1, static_cast<std::size_t>(outer_algorithm_count));
  std::vector<int> seen(outer_algorithm_count, 0);
  for (const outer_algorithm_info& a : table) {
    ASSERT_NE(a.algorithm, outer_algorithm::automatic);
    ++seen[static_cast<std::size_t>(a.algorithm)];
    EXPECT_EQ(a.name, outer_algorithm_name(a.algorithm));
    EXPECT_EQ(parse_outer_algorithm(a.name), a.algorithm);
    EXPECT_GT(std::strlen(a.summary), 20u) << a.name;
  }
  for (int v = 1; v < outer_algorithm_count; ++v) EXPECT_EQ(seen[static_cast<std::size_t>(v)], 1) << v;

  const cost_model& m = current_cost_model();
  struct job {
    std::size_t N, M;
    int nodes, ppn;
    bool distributed;
  };
  std::vector<int> won(outer_algorithm_count, 0);
  for (const job j : {job{4, 4, 2, 1, false}, job{64, 64, 4, 1, false}, job{8000, 8000, 48, 1, false},
                      job{8000, 8000, 2, 1, true}, job{100000, 4, 2, 1, false}, job{4, 100000, 16, 1, true},
                      job{1000, 1000, 1, 1, false}, job{2000, 2000, 8, 4, false}}) {
    const outer_algorithm pick = predicted_outer_choice(j.N, j.M, 8, j.nodes, j.ppn, j.distributed, m);
    const outer_algorithm* best = nullptr;
    double best_s = 0;
    for (const outer_algorithm_info& a : table) {
      const double t = predict_outer_seconds(a.algorithm, j.N, j.M, 8, j.nodes, j.ppn, j.distributed, m);
      EXPECT_GE(t, 0.0) << a.name;
      if (!best || t < best_s) {
        best = &a.algorithm;
        best_s = t;
      }
    }
    EXPECT_EQ(pick, *best) << j.N << "x" << j.M << " on " << j.nodes << "x" << j.ppn;
    EXPECT_DOUBLE_EQ(predict_outer_seconds(outer_algorithm::automatic, j.N, j.M, 8, j.nodes, j.ppn, j.distributed, m),
                     best_s);
    ++won[static_cast<std::size_t>(pick)];
  }
  // ring and allreduce are predicted alike: the earlier row, ring, takes the tie.
  EXPECT_EQ(won[static_cast<std::size_t>(outer_algorithm::allreduce)], 0);
  EXPECT_EQ(predict_outer_seconds(outer_algorithm::ring, 2000, 2000, 8, 8, 1, false, m),
            predict_outer_seconds(outer_algorithm::allreduce, 2000, 2000, 8, 8, 1, false, m));
}

// The shape-only predictions (what docs/results.md's extrapolated tables use) are
// the numbers the engines report for a real job of that shape.
TEST(OuterSum, ShapeOnlyPredictionsAreWhatTheCallsReport) {
  const int P = size_of();
  const cost_model& m = current_cost_model();
  const auto a = vec(rank_of(), 300, 1), b = vec(rank_of(), 200, 2);
  std::vector<double> G(300 * 200);
  for (const outer_algorithm_info& info : outer_algorithms()) {
    const outer_algorithm alg = info.algorithm;
    outer_options o;
    o.algorithm = alg;
    o.allreduce.ranks_per_node = P;  // one node of P ranks, as the shape says
    const outer_report r = outer_sum(a.data(), 300, b.data(), 200, G.data(), G.size(), MPI_COMM_WORLD, o);
    EXPECT_DOUBLE_EQ(predict_outer_seconds(alg, 300, 200, sizeof(double), 1, P, false, m), r.predicted_seconds)
        << outer_algorithm_name(alg);
  }
  outer_options o;
  o.allreduce.ranks_per_node = P;
  const outer_report chosen = outer_sum(a.data(), 300, b.data(), 200, G.data(), G.size(), MPI_COMM_WORLD, o);
  if (std::getenv("CONVEYOR_DSOP_ALGORITHM") == nullptr) {
    EXPECT_EQ(predicted_outer_choice(300, 200, sizeof(double), 1, P, false, m), chosen.algorithm);
  }
  std::vector<float> send(1024, 1.0f), recv(1024);
  for (const auto alg :
       {allreduce_algorithm::recursive_doubling, allreduce_algorithm::rabenseifner, allreduce_algorithm::ring}) {
    allreduce_options ao;
    ao.algorithm = alg;
    ao.ranks_per_node = P;
    const allreduce_report r = allreduce(send.data(), recv.data(), send.size(), op::sum, MPI_COMM_WORLD, ao);
    EXPECT_DOUBLE_EQ(predict_allreduce_seconds(alg, sizeof(float) * send.size(), 1, P, m), r.predicted_seconds)
        << algorithm_name(alg);
  }
  // Several nodes: hierarchical is offered, and the prediction grows with the nodes.
  EXPECT_LT(predict_allreduce_seconds(allreduce_algorithm::ring, 1 << 20, 64, 8, m),
            predict_allreduce_seconds(allreduce_algorithm::ring, 1 << 20, 4096, 8, m));
  EXPECT_THROW(predict_allreduce_seconds(allreduce_algorithm::ring, 8, 0, 1, m), error);
  EXPECT_THROW(predict_outer_seconds(outer_algorithm::allgather, 8, 8, 8, 4, 0, false, m), error);
}

using testing::expect_error_everywhere;

TEST(OuterSum, BadArgumentsFailOnEveryRank) {
  const int last = size_of() - 1;
  const auto a = vec(rank_of(), 10, 1), b = vec(rank_of(), 8, 2);
  std::vector<double> G(80);
  outer_options o;
  // G too small on one rank only.
  expect_error_everywhere(
      [&] { outer_sum(a.data(), 10, b.data(), 8, G.data(), rank_of() == last ? 79 : 80, MPI_COMM_WORLD, o); },
      "G holds 79 elements");
  // Null pointers with non-zero sizes.
  expect_error_everywhere(
      [&] { outer_sum(rank_of() == last ? nullptr : a.data(), 10, b.data(), 8, G.data(), 80, MPI_COMM_WORLD, o); },
      "a is null");
  expect_error_everywhere(
      [&] { outer_sum(a.data(), 10, b.data(), 8, rank_of() == last ? nullptr : G.data(), 80, MPI_COMM_WORLD, o); },
      "G is null");
  // N or M differing across ranks.
  if (size_of() > 1) {
    expect_error_everywhere(
        [&] { outer_sum(a.data(), rank_of() == last ? 9 : 10, b.data(), 8, G.data(), 80, MPI_COMM_WORLD, o); },
        "different N (9 to 10)");
    expect_error_everywhere(
        [&] { outer_sum(a.data(), 10, b.data(), rank_of() == 0 ? 7 : 8, G.data(), 80, MPI_COMM_WORLD, o); },
        "different M (7 to 8)");
  }
  // Unsupported dtype.
  expect_error_everywhere([&] { outer_sum(a.data(), 10, b.data(), 8, G.data(), 80, dtype::int64, MPI_COMM_WORLD, o); },
                          "dtype must be float32 or float64");
}

TEST(OuterSum, CApi) {
  const int P = size_of();
  const std::size_t N = 11, M = 6;
  const auto ref = reference(N, M, P);
  const auto a = vec(rank_of(), N, 1), b = vec(rank_of(), M, 2);
  conveyor_outer_options o;
  conveyor_outer_options_init(&o);
  EXPECT_EQ(o.algorithm, CONVEYOR_OUTER_AUTO);
  o.algorithm = CONVEYOR_OUTER_GENERALIZED_RABENSEIFNER;
  o.distributed = 1;
  o.order = CONVEYOR_COLUMN_MAJOR;
  const outer_block mine = outer_rows(N, rank_of(), P);
  std::vector<double> G(mine.count * M);
  conveyor_outer_report r{};
  ASSERT_EQ(conveyor_outer_sum(a.data(), N, b.data(), M, G.data(), G.size(), CONVEYOR_FLOAT64, MPI_COMM_WORLD, &o, &r),
            CONVEYOR_SUCCESS)
      << conveyor_last_error();
  EXPECT_EQ(r.algorithm, CONVEYOR_OUTER_GENERALIZED_RABENSEIFNER);
  EXPECT_EQ(r.first_row, mine.first);
  for (std::size_t i = 0; i < mine.count; ++i) {
    for (std::size_t j = 0; j < M; ++j) EXPECT_EQ(G[j * mine.count + i], ref[(mine.first + i) * M + j]);
  }
  EXPECT_EQ(
      conveyor_outer_sum(a.data(), N, b.data(), M, G.data(), G.size(), CONVEYOR_INT8, MPI_COMM_WORLD, nullptr, nullptr),
      CONVEYOR_ERR_UNSUPPORTED);
}

}  // namespace
}  // namespace conveyor
