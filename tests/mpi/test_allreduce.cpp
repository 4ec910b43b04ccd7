// SPDX-License-Identifier: BSD-3-Clause
// Conveyor's collectives at every rank count CTest runs them with (1-6): every
// algorithm (and emulated node layouts for the hierarchical one) x element counts
// {0, 1, P-1, P, prime, 10^6} x dtypes/ops x in-place/out-of-place. Integer results
// must be exact; float results within a bound derived from the count; every rank's
// result bitwise identical; deterministic mode identical across algorithms and
// segment sizes and equal to the rank-ordered fold; on_chunk sees every element
// exactly once, and only when it is final.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "reference.hpp"
#include "mpi_test_util.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/reduce.hpp"

namespace conveyor {
namespace {

using testing::visit_dtype;

using testing::hash_bytes;
using testing::rank_of;
using testing::size_of;

// Rank r's contribution: random integers, or floats in [-1, 1].
template <class T>
std::vector<T> input(int r, std::size_t n, std::uint64_t salt) {
  testing::splitmix64 rng((static_cast<std::uint64_t>(r) + 1) * 0x51ED27ull + salt);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(rng());
    } else if constexpr (testing::is_complex<T>::value) {
      using F = typename T::value_type;
      x = T(F(double(rng() >> 11) / 9007199254740992.0 * 2 - 1), F(double(rng() >> 11) / 9007199254740992.0 * 2 - 1));
    } else {
      x = T(static_cast<float>(double(rng() >> 11) / 9007199254740992.0 * 2 - 1));
    }
  }
  return v;
}

bool same_on_all_ranks(std::uint64_t h) {
  std::uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

bool all_ranks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return v != 0;
}

struct config {
  allreduce_algorithm algorithm;
  int ranks_per_node;         // for hierarchical: emulated node size (0 = real nodes)
  std::size_t segment_bytes;  // 0 = default
  std::string name() const {
    return std::string(algorithm_name(algorithm)) + (ranks_per_node ? "/ppn" + std::to_string(ranks_per_node) : "") +
           (segment_bytes ? "/seg" + std::to_string(segment_bytes) : "");
  }
};

// Whether every rank of comm shares one node (MPI_COMM_TYPE_SHARED covers it).
bool one_node(MPI_Comm comm) {
  MPI_Comm shared;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  const bool all = size_of(shared) == size_of(comm);
  MPI_Comm_free(&shared);
  int everywhere = all ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, comm);
  return everywhere == 1;
}

// What a forced algorithm reports: shared_memory runs recursive doubling across nodes
// (the emulated cluster).
allreduce_algorithm runs_as(allreduce_algorithm a, MPI_Comm comm) {
  if (a == allreduce_algorithm::shared_memory && size_of(comm) > 1 && !one_node(comm)) {
    return allreduce_algorithm::recursive_doubling;
  }
  return a;
}

std::vector<config> configs() {
  return {
      {allreduce_algorithm::automatic, 0, 0},
      {allreduce_algorithm::ring, 0, 0},
      {allreduce_algorithm::ring, 0, 256},  // many pipeline chunks
      {allreduce_algorithm::recursive_doubling, 0, 0},
      {allreduce_algorithm::rabenseifner, 0, 0},
      {allreduce_algorithm::hierarchical, 0, 0},
      {allreduce_algorithm::hierarchical, 2, 0},
      {allreduce_algorithm::hierarchical, 2, 200},  // uneven nodes at odd P, pipelined
      {allreduce_algorithm::hierarchical, 3, 0},
      {allreduce_algorithm::hierarchical, 1, 0},   // one rank per node: pure inter-node ring
      {allreduce_algorithm::mpi, 0, 0},            // the MPI library's own
      {allreduce_algorithm::shared_memory, 0, 0},  // one segment per node (1e6 elements: 123 chunks)
      {allreduce_algorithm::shared_memory, 2, 0},  // emulated nodes: still one physical node
  };
}

// The table of algorithms (src/collectives/allreduce/) and configs() agree: a row
// added to the table is run by these tests or this test fails; and the table
// lists every algorithm of the enum but automatic.
TEST(Allreduce, EveryAlgorithmOfTheTableIsTested) {
  const auto& table = allreduce_algorithms();
  EXPECT_EQ(table.size(), static_cast<std::size_t>(allreduce_algorithm_count - 1));
  for (const allreduce_algorithm_info& a : table) {
    EXPECT_NE(a.algorithm, allreduce_algorithm::automatic);
    EXPECT_EQ(a.name, algorithm_name(a.algorithm));
    EXPECT_GT(std::string(a.summary).size(), 20u) << a.name;
    const auto cs = configs();
    EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [&](const config& c) { return c.algorithm == a.algorithm; }))
        << a.name << " is in the table but not in configs()";
  }
}

// The model's candidates for a job come from the table: the three flat algorithms
// everywhere, hierarchical with several nodes of several ranks, shared_memory on
// one node while P n is small; a shape that is no job is the caller's error.
TEST(Allreduce, ModelCandidatesFollowTheTable) {
  using A = allreduce_algorithm;
  const std::vector<A> flat = {A::ring, A::recursive_doubling, A::rabenseifner};
  EXPECT_EQ(allreduce_model_candidates(1 << 20, 1, 1), flat);
  std::vector<A> one_node = flat;
  one_node.push_back(A::shared_memory);
  EXPECT_EQ(allreduce_model_candidates(8, 1, 3), one_node);
  EXPECT_EQ(allreduce_model_candidates(1 << 20, 1, 3), flat);  // past shared_memory's size
  EXPECT_EQ(allreduce_model_candidates(8, 2, 1), flat);        // one rank per node: no hierarchy
  std::vector<A> nodes = flat;
  nodes.push_back(A::hierarchical);
  std::sort(nodes.begin(), nodes.end());
  auto got = allreduce_model_candidates(8, 2, 2);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, nodes);
  for (auto [n, rpn] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{-1, 2}}) {
    try {
      allreduce_model_candidates(8, n, rpn);
      ADD_FAILURE() << n << " nodes of " << rpn;
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
  }
}

std::vector<std::size_t> counts_for(int p, bool include_large) {
  std::vector<std::size_t> c = {0, 1, static_cast<std::size_t>(p > 1 ? p - 1 : 2), static_cast<std::size_t>(p), 1009};
  if (include_large) c.push_back(1000000);
  return c;
}

// One allreduce checked against the reference. Returns "" or what went wrong.
template <class T>
std::string check_one(const config& cfg, op o, std::size_t n, bool in_place, std::uint64_t salt) {
  const int P = size_of(), r = rank_of();
  const auto mine = input<T>(r, n, salt);
  std::vector<T> out(n);
  allreduce_options opt;
  opt.algorithm = cfg.algorithm;
  opt.ranks_per_node = cfg.ranks_per_node;
  opt.segment_bytes = cfg.segment_bytes;
  std::vector<unsigned char> seen(n, 0);
  bool early = false;  // a chunk announced before its values were final
  std::vector<T> expect(n);
  // Reference: rank-ordered fold in double precision for floats (bound below),
  // exact for integers.
  std::vector<double> exact(n, 0.0), magnitude(n, 0.0);
  for (int q = 0; q < P; ++q) {
    const auto x = q == r ? mine : input<T>(q, n, salt);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T>) {
        expect[i] = q == 0 ? x[i] : testing::int_ref(o, expect[i], x[i]);
      } else {
        const double v = static_cast<double>(std::real(x[i]));
        if (o == op::logaddexp) {
          exact[i] = q == 0 ? v : testing::logaddexp_ref(exact[i], v);
        } else {
          exact[i] = q == 0 ? v : (o == op::sum ? exact[i] + v : std::max(exact[i], v));
        }
        magnitude[i] += std::fabs(v);
      }
    }
  }
  const auto value_ok = [&](std::size_t i, const T& got) {
    if constexpr (std::is_integral_v<T>) {
      return got == expect[i];
    } else {
      const double g = static_cast<double>(std::real(got));
      if (o == op::max) return g == exact[i];
      const double eps = std::numeric_limits<decltype(std::real(got))>::epsilon();
      if (o == op::logaddexp) return std::fabs(g - exact[i]) <= (P + 1) * 8 * eps * std::max(std::fabs(exact[i]), 1.0);
      return std::fabs(g - exact[i]) <= (P + 1) * eps * magnitude[i] + 1e-300;
    }
  };
  opt.on_chunk = [&](std::size_t off, std::size_t cnt) {
    for (std::size_t i = off; i < off + cnt; ++i) {
      ++seen[i];
      if (!value_ok(i, out[i])) early = true;
    }
  };
  allreduce_report rep;
  if (in_place) {
    out = mine;
    rep = allreduce(out.data(), n, o, MPI_COMM_WORLD, opt);
  } else {
    rep = allreduce(mine.data(), out.data(), n, o, MPI_COMM_WORLD, opt);
  }
  if (cfg.algorithm != allreduce_algorithm::automatic && rep.algorithm != runs_as(cfg.algorithm, MPI_COMM_WORLD)) {
    return "reported algorithm " + std::string(algorithm_name(rep.algorithm));
  }
  if (rep.algorithm == allreduce_algorithm::automatic) return "automatic was not resolved";
  for (std::size_t i = 0; i < n; ++i) {
    if (!value_ok(i, out[i])) return "element " + std::to_string(i) + " of " + std::to_string(n) + " wrong";
    if (seen[i] != 1)
      return "on_chunk saw element " + std::to_string(i) + " " + std::to_string(int(seen[i])) + " times";
  }
  if (early) return "on_chunk announced a chunk before it was final";
  if (!same_on_all_ranks(hash_bytes(out.data(), n * sizeof(T)))) return "results differ between ranks";
  return "";
}

TEST(Allreduce, EveryAlgorithmCountTypeAndPlacement) {
  const int P = size_of();
  std::uint64_t salt = 0;
  for (const config& cfg : configs()) {
    for (std::size_t n : counts_for(P, /*include_large=*/cfg.segment_bytes == 0 && cfg.ranks_per_node <= 2)) {
      for (bool in_place : {false, true}) {
        ++salt;
        std::string err = check_one<std::int32_t>(cfg, op::sum, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<double>(cfg, op::sum, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<float>(cfg, op::max, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<std::uint8_t>(cfg, op::band, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<std::int64_t>(cfg, op::prod, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<std::complex<float>>(cfg, op::sum, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<double>(cfg, op::logaddexp, n, in_place, salt);
        if (err.empty() && n <= 1009) err = check_one<float>(cfg, op::logaddexp, n, in_place, salt);
        EXPECT_TRUE(all_ranks(err.empty())) << cfg.name() << " n=" << n << (in_place ? " in place" : "") << ": " << err;
      }
    }
  }
}

// Deterministic mode: the same bits whatever the algorithm and segment size, equal
// to folding the ranks' inputs in rank order with the same kernels.
TEST(Allreduce, DeterministicIsTheRankOrderedFoldForEveryAlgorithm) {
  const int P = size_of();
  for (std::size_t n : {std::size_t{1}, std::size_t{1009}, std::size_t{100000}}) {
    std::vector<float> fold = input<float>(0, n, 77);
    for (int q = 1; q < P; ++q) {
      const auto x = input<float>(q, n, 77);
      reduce(fold.data(), x.data(), fold.data(), n, op::sum);  // fold = fold op x_q
    }
    const auto mine = input<float>(rank_of(), n, 77);
    for (const config& cfg : configs()) {
      if (cfg.algorithm == allreduce_algorithm::mpi) continue;  // MPI fixes no order: refused (below)
      allreduce_options opt;
      opt.algorithm = cfg.algorithm;
      opt.ranks_per_node = cfg.ranks_per_node;
      opt.segment_bytes = cfg.segment_bytes ? cfg.segment_bytes : 4096;
      opt.deterministic = true;
      std::vector<float> out(n);
      allreduce(mine.data(), out.data(), n, op::sum, MPI_COMM_WORLD, opt);
      EXPECT_TRUE(all_ranks(std::memcmp(out.data(), fold.data(), n * sizeof(float)) == 0)) << cfg.name() << " n=" << n;
    }
  }
}

TEST(Allreduce, HalfPrecisionUsesTheKernels) {
  const int P = size_of();
  const std::size_t n = 777;
  // auto, and the MPI library's own allreduce (16-bit floats: with Conveyor's kernel as an MPI_Op).
  for (allreduce_algorithm a : {allreduce_algorithm::automatic, allreduce_algorithm::mpi}) {
    std::vector<bfloat16> mine(n), out(n);
    for (std::size_t i = 0; i < n; ++i) mine[i] = bfloat16(static_cast<float>((i + rank_of()) % 9));
    allreduce_options opt;
    opt.algorithm = a;
    allreduce(mine.data(), out.data(), n, op::sum, MPI_COMM_WORLD, opt);
    bool ok = true;
    for (std::size_t i = 0; i < n; ++i) {
      float want = 0;
      for (int q = 0; q < P; ++q) want += static_cast<float>((i + q) % 9);
      ok = ok && static_cast<float>(out[i]) == want;  // small integers: exact in bfloat16
    }
    EXPECT_TRUE(all_ranks(ok)) << algorithm_name(a);
  }
}

TEST(Allreduce, TheMpiAlgorithmIsNeverDeterministic) {
  std::vector<double> v(10, 1.0);
  allreduce_options opt;
  opt.algorithm = allreduce_algorithm::mpi;
  opt.deterministic = true;
  testing::expect_error_everywhere([&] { allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD, opt); },
                                   "cannot be deterministic");
  opt.deterministic = false;
  std::size_t seen = 0;
  opt.on_chunk = [&](std::size_t, std::size_t count) { seen += count; };
  const allreduce_report r = allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD, opt);
  EXPECT_EQ(r.algorithm, allreduce_algorithm::mpi);
  EXPECT_EQ(v[9], size_of());
  EXPECT_EQ(seen, v.size());  // on_chunk: every element once
}

TEST(Allreduce, ValidateCatchesMismatchesOnEveryRank) {
  const int P = size_of();
  std::vector<int> buf(10, 1);
  allreduce_options opt;
  opt.validate = true;
  if (P > 1) {
    const std::size_t n = rank_of() == P - 1 ? 9 : 10;  // last rank disagrees
    try {
      allreduce(buf.data(), n, op::sum, MPI_COMM_WORLD, opt);
      ADD_FAILURE() << "mismatched counts not detected";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("different counts"), std::string::npos) << e.what();
    }
    const dtype t = rank_of() == 0 ? dtype::int32 : dtype::uint32;
    EXPECT_THROW(allreduce(buf.data(), buf.data(), 10, t, op::sum, MPI_COMM_WORLD, opt), error);
  }
  // A local problem on one rank (null buffer) becomes an error on all of them.
  void* p = rank_of() == 0 ? nullptr : buf.data();
  EXPECT_THROW(allreduce(p, p, 10, dtype::int32, op::sum, MPI_COMM_WORLD, opt), error);
  // And everything still works afterwards.
  allreduce(buf.data(), 10, op::sum, MPI_COMM_WORLD, opt);
  EXPECT_EQ(buf[0], P);
}

TEST(Allreduce, BadArgumentsThrow) {
  float x[4] = {};
  EXPECT_THROW(allreduce(x, x, 4, dtype::float32, op::band, MPI_COMM_WORLD), error);
  EXPECT_THROW(allreduce(x, x + 1, 3, dtype::float32, op::sum, MPI_COMM_WORLD), error);  // partial overlap
  EXPECT_THROW(allreduce(x, 4, op::sum, MPI_COMM_NULL), error);
  EXPECT_THROW(parse_algorithm("bogus"), error);
  EXPECT_EQ(parse_algorithm("rabenseifner"), allreduce_algorithm::rabenseifner);
}

// The environment is read when Conveyor first uses a communicator.
TEST(Allreduce, EnvironmentOverridesAutomaticAndIsReported) {
  std::vector<double> v(100, 1.0);
  setenv("CONVEYOR_ALLREDUCE_ALGORITHM", "recursive_doubling", 1);
  MPI_Comm fresh;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  const auto rep = allreduce(v.data(), v.size(), op::sum, fresh);
  unsetenv("CONVEYOR_ALLREDUCE_ALGORITHM");
  EXPECT_EQ(rep.algorithm, allreduce_algorithm::recursive_doubling);
  EXPECT_EQ(v[0], size_of());
  allreduce_options forced;
  forced.algorithm = allreduce_algorithm::ring;  // a forced choice wins over the environment
  EXPECT_EQ(allreduce(v.data(), v.size(), op::sum, fresh, forced).algorithm, allreduce_algorithm::ring);
  MPI_Comm_free(&fresh);  // frees Conveyor's context with it

  setenv("CONVEYOR_ALLREDUCE_ALGORITHM", "bogus", 1);
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  EXPECT_THROW(allreduce(v.data(), v.size(), op::sum, fresh), error);
  unsetenv("CONVEYOR_ALLREDUCE_ALGORITHM");
  MPI_Comm_free(&fresh);
}

// The collectives read CONVEYOR_ALLREDUCE_ALGORITHM when the runtime makes a
// communicator's context, inside its settings agreement (the engine's state,
// runtime/context.hpp): a bad value on one rank alone is every rank's error,
// with the same message, and no rank waits for the others.
TEST(Allreduce, EnvironmentBadOnOneRankFailsOnEveryRankAlike) {
  std::vector<double> v(10, 1.0);
  for (int bad = 0; bad < size_of(); ++bad) {
    if (rank_of() == bad) setenv("CONVEYOR_ALLREDUCE_ALGORITHM", "bogus", 1);
    MPI_Comm fresh;
    MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
    std::string message;
    try {
      allreduce(v.data(), v.size(), op::sum, fresh);
    } catch (const error& e) {
      message = e.message();
    }
    unsetenv("CONVEYOR_ALLREDUCE_ALGORITHM");
    EXPECT_NE(message.find("rank " + std::to_string(bad) + ": "), std::string::npos) << message;
    EXPECT_NE(message.find("bogus"), std::string::npos) << message;
    MPI_Comm_free(&fresh);
  }
  std::fill(v.begin(), v.end(), 1.0);
  allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD);  // every rank still in step
  EXPECT_EQ(v[0], size_of());
}

TEST(ReduceScatterAllgather, UnevenBlocksIncludingEmpty) {
  const int P = size_of(), r = rank_of();
  std::vector<std::size_t> counts(static_cast<std::size_t>(P));
  std::size_t total = 0;
  for (int q = 0; q < P; ++q)
    total += counts[static_cast<std::size_t>(q)] = static_cast<std::size_t>((q * 7) % 5);  // some zero
  const auto mine = input<std::int64_t>(r, total, 5);
  std::vector<std::int64_t> part(counts[static_cast<std::size_t>(r)] + 1);
  reduce_scatter(mine.data(), part.data(), counts, dtype::int64, op::sum, MPI_COMM_WORLD);
  std::size_t off = 0;
  for (int q = 0; q < r; ++q) off += counts[static_cast<std::size_t>(q)];
  bool ok = true;
  for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) {
    std::int64_t want = 0;
    for (int q = 0; q < P; ++q)
      want = static_cast<std::int64_t>(static_cast<std::uint64_t>(want) +
                                       static_cast<std::uint64_t>(input<std::int64_t>(q, total, 5)[off + i]));
    ok = ok && part[i] == want;
  }
  EXPECT_TRUE(all_ranks(ok)) << "reduce_scatter";

  // allgatherv, out of place and in place.
  std::vector<std::int64_t> gathered(total), inplace(total, -1);
  allgatherv(part.data(), gathered.data(), counts, dtype::int64, MPI_COMM_WORLD);
  if (counts[static_cast<std::size_t>(r)]) {  // (an empty vector's data() may be null)
    std::memcpy(inplace.data() + off, part.data(), counts[static_cast<std::size_t>(r)] * sizeof(std::int64_t));
  }
  allgatherv(MPI_IN_PLACE, inplace.data(), counts, dtype::int64, MPI_COMM_WORLD);
  std::vector<std::int64_t> full(total);
  allreduce(mine.data(), full.data(), total, op::sum, MPI_COMM_WORLD);
  EXPECT_TRUE(all_ranks(gathered == full && inplace == full)) << "allgatherv";

  // Equal-block forms.
  std::vector<int> blocks(static_cast<std::size_t>(3 * P), r + 1), one(3), back(static_cast<std::size_t>(3 * P));
  reduce_scatter_block(blocks.data(), one.data(), 3, dtype::int32, op::sum, MPI_COMM_WORLD);
  EXPECT_EQ(one[2], P * (P + 1) / 2);
  allgather(one.data(), back.data(), 3, dtype::int32, MPI_COMM_WORLD);
  EXPECT_EQ(back[static_cast<std::size_t>(3 * P - 1)], P * (P + 1) / 2);
  EXPECT_THROW(reduce_scatter(mine.data(), part.data(), std::vector<std::size_t>(1, 0), dtype::int64, op::sum,
                              P == 1 ? MPI_COMM_NULL : MPI_COMM_WORLD),
               error);
}

// Node detection: one machine is one node; under scripts/cluster the number of
// emulated nodes is passed in CONVEYOR_TEST_EXPECT_NODES.
TEST(Allreduce, DetectsTheNodes) {
  const char* e = std::getenv("CONVEYOR_TEST_EXPECT_NODES");
  const int expected = e ? std::atoi(e) : 1;
  std::vector<int> v(64, 1);
  allreduce_options opt;
  opt.algorithm = allreduce_algorithm::hierarchical;
  const auto rep = allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD, opt);
  EXPECT_EQ(rep.nodes, expected);
  EXPECT_EQ(v[63], size_of());
  opt.ranks_per_node = 1;  // the emulated override
  EXPECT_EQ(allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD, opt).nodes, size_of());
}

TEST(CostModel, MeasuredOnTheJobIsPositiveAndAgreed) {
  const cost_model m = measure_cost_model(MPI_COMM_WORLD);
  EXPECT_GT(m.intra_alpha, 0);
  EXPECT_GT(m.intra_beta, 0);
  EXPECT_GT(m.gamma, 0);
  EXPECT_GE(m.segment_bytes, 64u * 1024);
  double v[3] = {m.intra_alpha, m.gamma, static_cast<double>(m.segment_bytes)}, lo[3], hi[3];
  MPI_Allreduce(v, lo, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(v, hi, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(lo[i], hi[i]) << i;
  EXPECT_THROW(measure_cost_model(MPI_COMM_WORLD, -1), error);
}

extern "C" void count_chunk(std::size_t, std::size_t n, void* user) { *static_cast<std::size_t*>(user) += n; }

TEST(CApi, AllreduceReduceScatterAllgatherv) {
  const int P = size_of();
  std::vector<double> v(1000, 2.0);
  conveyor_allreduce_options opt;
  conveyor_allreduce_options_init(&opt);
  opt.algorithm = CONVEYOR_ALLREDUCE_RABENSEIFNER;
  std::size_t seen = 0;
  opt.on_chunk = count_chunk;
  opt.user_data = &seen;
  conveyor_allreduce_report rep;
  ASSERT_EQ(
      conveyor_allreduce(MPI_IN_PLACE, v.data(), v.size(), CONVEYOR_FLOAT64, CONVEYOR_SUM, MPI_COMM_WORLD, &opt, &rep),
      CONVEYOR_SUCCESS);
  EXPECT_EQ(v[999], 2.0 * P);
  EXPECT_EQ(seen, v.size());
  EXPECT_EQ(rep.algorithm, CONVEYOR_ALLREDUCE_RABENSEIFNER);
  ASSERT_EQ(conveyor_allreduce(v.data(), v.data(), v.size(), CONVEYOR_FLOAT64, CONVEYOR_SUM, MPI_COMM_WORLD, nullptr,
                               nullptr),
            CONVEYOR_SUCCESS);
  EXPECT_EQ(
      conveyor_allreduce(v.data(), v.data(), 10, CONVEYOR_FLOAT64, CONVEYOR_BAND, MPI_COMM_WORLD, nullptr, nullptr),
      CONVEYOR_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(conveyor_last_error()), "");
  std::vector<std::size_t> counts(static_cast<std::size_t>(P), 2);
  std::vector<int> in(static_cast<std::size_t>(2 * P), 1), part(2), all(static_cast<std::size_t>(2 * P));
  ASSERT_EQ(
      conveyor_reduce_scatter(in.data(), part.data(), counts.data(), CONVEYOR_INT32, CONVEYOR_SUM, MPI_COMM_WORLD, 0),
      CONVEYOR_SUCCESS);
  EXPECT_EQ(part[1], P);
  ASSERT_EQ(conveyor_allgatherv(part.data(), all.data(), counts.data(), CONVEYOR_INT32, MPI_COMM_WORLD, 0),
            CONVEYOR_SUCCESS);
  EXPECT_EQ(all[static_cast<std::size_t>(2 * P - 1)], P);
  EXPECT_EQ(conveyor_allgatherv(part.data(), all.data(), nullptr, CONVEYOR_INT32, MPI_COMM_WORLD, 0),
            CONVEYOR_ERR_INVALID_ARGUMENT);
}

// Conveyor communicates on its own duplicate: a caller's pending message with any
// tag is never consumed by a Conveyor collective.
TEST(Allreduce, NeverTouchesTheCallersMessages) {
  const int P = size_of(), r = rank_of();
  int token = 1000 + r, got = -1;
  MPI_Request req;
  MPI_Irecv(&got, 1, MPI_INT, (r + P - 1) % P, 0, MPI_COMM_WORLD, &req);
  MPI_Send(&token, 1, MPI_INT, (r + 1) % P, 0, MPI_COMM_WORLD);
  std::vector<int> v(1000, 1);
  allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  EXPECT_EQ(got, 1000 + (r + P - 1) % P);
  EXPECT_EQ(v[999], P);
}

}  // namespace
}  // namespace conveyor

namespace conveyor {
namespace {

// Schedules are cached per communicator (the last shape and buffer): repeated
// calls on one buffer, calls alternating between buffers, counts, algorithms,
// deterministic mode and segment sizes, and collectives in between that grow the
// shared scratch memory, must all give the reference sum every time.
TEST(Allreduce, CachedSchedulesFollowEveryChange) {
  const int P = size_of(MPI_COMM_WORLD), r = rank_of(MPI_COMM_WORLD);
  std::vector<std::int64_t> a(5000), b(5000);
  const auto expect_sum = [&](const std::vector<std::int64_t>& v, std::size_t n, std::int64_t base,
                              const std::string& what) {
    // rank q contributed base + q + i at element i: sum = P (base + i) + P (P - 1) / 2
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(v[i], P * (base + static_cast<std::int64_t>(i)) + std::int64_t{P} * (P - 1) / 2) << what << " at " << i;
    }
  };
  struct step {
    std::vector<std::int64_t>* buf;
    std::size_t n;
    allreduce_algorithm alg;
    bool deterministic;
    std::size_t segment;
    bool grow_scratch;  // a reduce_scatter of a larger buffer first
  };
  const allreduce_algorithm ring = allreduce_algorithm::ring, rab = allreduce_algorithm::rabenseifner,
                            hier = allreduce_algorithm::hierarchical;
  const std::vector<step> steps = {
      {&a, 5000, ring, false, 1024, false}, {&a, 5000, ring, false, 1024, false}, {&a, 5000, ring, false, 1024, false},
      {&b, 5000, ring, false, 1024, false}, {&a, 5000, ring, false, 1024, false}, {&a, 4999, ring, false, 1024, false},
      {&a, 5000, ring, false, 2048, false}, {&a, 5000, rab, false, 0, false},     {&a, 5000, rab, false, 0, false},
      {&a, 5000, ring, true, 1024, false},  {&a, 5000, ring, false, 1024, true},  {&a, 5000, ring, false, 1024, false},
      {&b, 17, hier, false, 64, false},     {&b, 17, hier, false, 64, false},     {&a, 5000, ring, false, 1024, true},
  };
  std::int64_t base = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const step& s = steps[k];
    if (s.grow_scratch) {
      const std::size_t big = 40000 * static_cast<std::size_t>(k + 1);
      std::vector<std::int64_t> in(big * static_cast<std::size_t>(P), 1), out(big);
      reduce_scatter_block(in.data(), out.data(), big, dtype::int64, op::sum, MPI_COMM_WORLD);
    }
    base += 1000;
    for (std::size_t i = 0; i < s.n; ++i) (*s.buf)[i] = base + r + static_cast<std::int64_t>(i);
    allreduce_options o;
    o.algorithm = s.alg;
    o.deterministic = s.deterministic;
    o.segment_bytes = s.segment;
    o.ranks_per_node = s.alg == hier ? 2 : 0;
    allreduce(s.buf->data(), s.buf->data(), s.n, dtype::int64, op::sum, MPI_COMM_WORLD, o);
    expect_sum(*s.buf, s.n, base, "step " + std::to_string(k));
  }
}

}  // namespace
}  // namespace conveyor

namespace conveyor {
namespace {

// auto, measured: the first calls of a size class alternate the candidates (the
// model's choice, the MPI library's allreduce and, on one node when the model
// chose otherwise, shared_memory; every result correct), then every rank keeps
// the same one of them.
TEST(Allreduce, AutoMeasuresItsChoiceAgainstTheMpiLibrary) {
  // On the whole world, and on a subset (even and odd ranks: sizes 1..3 at P = 1..5).
  for (int subset = 0; subset < 2; ++subset) {
    MPI_Comm comm;
    if (subset) MPI_Comm_split(MPI_COMM_WORLD, rank_of(MPI_COMM_WORLD) % 2, 0, &comm);
    else MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const int P = size_of(comm);
    constexpr int kTrialsEach = 31;  // at 24 KB (trials_of in src/collectives/allreduce.cpp)
    std::vector<int> seen;
    int trials = 0;
    for (int call = 0; call < 3 * kTrialsEach + 6; ++call) {
      std::vector<std::int64_t> v(3000, call + 1);
      const allreduce_report r = allreduce(v.data(), v.size(), op::sum, comm);
      ASSERT_EQ(v[2999], std::int64_t{P} * (call + 1)) << "call " << call;
      seen.push_back(static_cast<int>(r.algorithm));
      if (r.trial) {
        ASSERT_EQ(trials, call) << "a trial after the class was settled";
        ++trials;
      }
    }
    if (P == 1) {
      EXPECT_EQ(trials, 0);  // one rank: nothing to measure
    } else {
      const auto as_int = [](allreduce_algorithm a) { return static_cast<int>(a); };
      // The model's choice, then the library's, then (one node, model chose
      // otherwise) shared_memory; in that order in even rounds, reversed in odd ones.
      const int shm = as_int(allreduce_algorithm::shared_memory);
      MPI_Comm node;
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
      const char* emulated = std::getenv("CONVEYOR_RANKS_PER_NODE");
      const bool one_node = size_of(node) == P && (!emulated || std::atoi(emulated) == 0 || std::atoi(emulated) >= P);
      MPI_Comm_free(&node);
      const int candidates = one_node && seen[0] != shm ? 3 : 2;
      EXPECT_EQ(trials, candidates * kTrialsEach);
      EXPECT_EQ(seen[1], as_int(allreduce_algorithm::mpi));
      if (candidates == 3) {
        EXPECT_EQ(seen[2], shm);
      }
      for (int call = 0; call < trials; ++call) {
        const int trial_round = call / candidates, position = call % candidates;
        const int first_round_call = trial_round % 2 == 0 ? position : candidates - 1 - position;
        EXPECT_EQ(seen[static_cast<std::size_t>(call)], seen[static_cast<std::size_t>(first_round_call)])
            << "call " << call;
      }
      const int decided = seen[static_cast<std::size_t>(trials)];
      EXPECT_TRUE(decided == seen[0] || decided == seen[1] || decided == seen[candidates - 1]);
      for (std::size_t call = static_cast<std::size_t>(trials); call < seen.size(); ++call) {
        EXPECT_EQ(seen[call], decided) << "call " << call;
      }
      int lo = decided, hi = decided;
      MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, comm);
      MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, comm);
      EXPECT_EQ(lo, hi);  // the same decision on every rank
    }
    MPI_Comm_free(&comm);
  }
}

// Repeated calls of one shape once the algorithm is settled take a fast path
// that skips the context lookup (allreduce.cpp), for the MPI library's allreduce
// and for Conveyor's. It must stay correct across buffers, in place, other shapes
// in between, and a communicator freed and its handle reused by one of another
// size.
TEST(Allreduce, RepeatedCallsOfASettledShapeStayCorrect) {
  for (const char* algorithm : {"mpi", "recursive_doubling", "ring", "rabenseifner"}) {
    setenv("CONVEYOR_ALLREDUCE_ALGORITHM", algorithm, 1);  // read when a communicator is first used
    for (int round = 0; round < 3; ++round) {
      MPI_Comm comm;
      if (round == 1) MPI_Comm_split(MPI_COMM_WORLD, rank_of(MPI_COMM_WORLD) % 2, 0, &comm);
      else MPI_Comm_dup(MPI_COMM_WORLD, &comm);
      const int P = size_of(comm);
      for (int call = 0; call < 20; ++call) {
        const std::size_t n = call % 5 == 2 ? 7 : 3000;  // another shape now and then; the last and first alike
        std::vector<double> a(n, call + 1.0), b(n, -1.0);
        const allreduce_report r = call % 3 == 0 ? allreduce(a.data(), n, op::sum, comm)  // in place
                                                 : allreduce(a.data(), b.data(), n, op::sum, comm);
        const double got = call % 3 == 0 ? a[n - 1] : b[n - 1];
        ASSERT_EQ(got, P * (call + 1.0)) << algorithm << " round " << round << " call " << call;
        if (P > 1) {
          EXPECT_EQ(algorithm_name(r.algorithm), algorithm);
        }
      }
      MPI_Comm_free(&comm);
    }
  }
  unsetenv("CONVEYOR_ALLREDUCE_ALGORITHM");
}

// The shared_memory algorithm reuses two buffers of one segment per communicator:
// many calls in a row with changing inputs, two communicators interleaved (each
// has its own segment), in place and not, chunked and not, must never read a
// buffer another rank is still writing or has not yet written.
TEST(Allreduce, SharedMemoryBackToBackOnTwoCommunicators) {
  MPI_Comm split, dup;
  MPI_Comm_split(MPI_COMM_WORLD, rank_of(MPI_COMM_WORLD) % 2, 0, &split);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  allreduce_options opt;
  opt.algorithm = allreduce_algorithm::shared_memory;
  const allreduce_algorithm on_split = runs_as(opt.algorithm, split), on_dup = runs_as(opt.algorithm, dup);
  for (int call = 0; call < 300; ++call) {
    MPI_Comm comm = call % 3 == 2 ? split : dup;
    const int P = size_of(comm), me = rank_of(comm);
    const std::size_t n = call % 7 == 0 ? 20000 : static_cast<std::size_t>(1 + call % 13);  // 20000: 3 chunks
    std::vector<std::int64_t> a(n), b(n, -1);
    for (std::size_t i = 0; i < n; ++i) a[i] = (me + 1) * 1000 + call + static_cast<std::int64_t>(i);
    const bool in_place = call % 2 == 1;
    const allreduce_report r =
        in_place ? allreduce(a.data(), n, op::sum, comm, opt) : allreduce(a.data(), b.data(), n, op::sum, comm, opt);
    const std::vector<std::int64_t>& got = in_place ? a : b;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t want = 1000 * P * (P + 1) / 2 + P * (call + static_cast<std::int64_t>(i));
      ASSERT_EQ(got[i], want) << "call " << call << " element " << i << " of " << n;
    }
    if (P > 1) {
      EXPECT_EQ(r.algorithm, comm == split ? on_split : on_dup);  // recursive doubling across nodes
    }
  }
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
}

// Whether shared_memory's waiting ranks spin or yield at once follows what the
// node's ranks share, not one rank's own mask: bound each to a core of its own (as
// Open MPI's mpirun binds by default) they spin; bound two to one core they yield.
// The decision is made when a communicator's segment is made, so each binding
// gets a fresh communicator. Affinity is restored afterwards.
TEST(Allreduce, SharedMemorySpinsUnlessRanksShareCores) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
  std::vector<int> cpus;  // this rank's CPUs; under CTest every rank may use all
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &original)) cpus.push_back(c);
  }
  const int P = size_of(MPI_COMM_WORLD), me = rank_of(MPI_COMM_WORLD);
  int same_mask = 1;  // every rank may use the same CPUs (the case this test binds from)
  {
    std::vector<std::uint64_t> words(CPU_SETSIZE / 64), low(words.size()), high(words.size());
    for (int c : cpus) words[static_cast<std::size_t>(c / 64)] |= std::uint64_t{1} << (c % 64);
    MPI_Allreduce(words.data(), low.data(), static_cast<int>(words.size()), MPI_UINT64_T, MPI_BAND, MPI_COMM_WORLD);
    MPI_Allreduce(words.data(), high.data(), static_cast<int>(words.size()), MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD);
    same_mask = low == high ? 1 : 0;
  }
  if (P < 2 || !same_mask) GTEST_SKIP() << "needs 2+ ranks that start with the same CPU mask";

  const auto spin_waits_when_bound = [&](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    EXPECT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    allreduce_options opt;
    opt.algorithm = allreduce_algorithm::shared_memory;
    std::int64_t x = me + 1;
    const allreduce_report r = allreduce(&x, 1, op::sum, comm, opt);
    EXPECT_EQ(x, std::int64_t{P} * (P + 1) / 2);
    MPI_Comm_free(&comm);
    EXPECT_EQ(sched_setaffinity(0, sizeof original, &original), 0);
    return r.algorithm == allreduce_algorithm::shared_memory ? std::optional<bool>(r.spin_waits) : std::nullopt;
  };
  // Two ranks on one CPU: they share a core, so waiting ranks yield at once.
  const std::optional<bool> shared = spin_waits_when_bound(cpus.front());
  if (!shared) GTEST_SKIP() << "shared_memory does not run here (ranks on several nodes)";
  EXPECT_FALSE(*shared);
  // A CPU of its own for every rank (where there are enough): they spin.
  if (static_cast<int>(cpus.size()) >= P) {
    EXPECT_EQ(spin_waits_when_bound(cpus[static_cast<std::size_t>(me)]), std::optional<bool>(true));
  }
  // The whole mask, as CTest launches: spin unless the ranks outnumber the CPUs.
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  allreduce_options opt;
  opt.algorithm = allreduce_algorithm::shared_memory;
  std::int64_t x = 1;
  EXPECT_EQ(allreduce(&x, 1, op::sum, comm, opt).spin_waits, static_cast<int>(cpus.size()) >= P);
  MPI_Comm_free(&comm);
}

// auto's trials below 32 KiB run on copies and copy the result to recv: the
// first calls of a size class must give the right result in place and out of
// place, with send left intact.
TEST(Allreduce, AutoTrialsLeaveTheRightResult) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int P = size_of(comm), me = rank_of(comm);
  for (const std::size_t n : {std::size_t{1}, std::size_t{24}, std::size_t{5000}, std::size_t{12000}}) {
    for (int call = 0; call < 80; ++call) {  // beyond the 2 x 31 trials of the smallest classes
      std::vector<float> a(n), b(n, -1.0f);
      for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<float>((me + 1) * (call + 1) + static_cast<int>(i % 7));
      const std::vector<float> a0 = a;
      const bool in_place = call % 2 == 0;
      if (in_place) allreduce(a.data(), n, op::sum, comm);
      else allreduce(a.data(), b.data(), n, op::sum, comm);
      const std::vector<float>& got = in_place ? a : b;
      for (std::size_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(P * (P + 1) / 2 * (call + 1) + P * static_cast<int>(i % 7));
        ASSERT_EQ(got[i], want) << "n " << n << " call " << call << " element " << i;
      }
      if (!in_place) {
        ASSERT_EQ(a, a0) << "send changed, n " << n << " call " << call;
      }
    }
  }
  MPI_Comm_free(&comm);
}

}  // namespace
}  // namespace conveyor
