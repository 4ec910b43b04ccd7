// SPDX-License-Identifier: BSD-3-Clause
// Threads (issue 27). Two CTest entries run this program:
//   threads.multiple (CONVEYOR_TEST_THREAD_LEVEL=multiple): the Threads tests,
//     where three threads call the engines at once, each on its own communicator;
//   threads.serialized (the harness's default level): the ThreadLevel tests, where
//     a call that needs more than MPI provides is a clear error.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/sinkhorn.hpp"
#include "mpi_test_util.hpp"
#include "transpose_case.hpp"

namespace conveyor {
namespace {

using testing::rank_of;
using testing::size_of;
namespace rd = redistribute;

int thread_level() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided;
}

// Allreduces of every algorithm and many sizes; returns the wrong results seen.
int allreduce_rounds(MPI_Comm comm, int rounds) {
  const int P = size_of();
  const allreduce_algorithm algorithms[] = {allreduce_algorithm::ring,         allreduce_algorithm::recursive_doubling,
                                            allreduce_algorithm::rabenseifner, allreduce_algorithm::shared_memory,
                                            allreduce_algorithm::automatic,    allreduce_algorithm::mpi};
  int wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::size_t n = (std::size_t{1} << (round % 15)) + static_cast<std::size_t>(round % 3);
    std::vector<std::int64_t> v(n, rank_of() + 1);
    allreduce_options o;
    o.algorithm = algorithms[round % 6];
    allreduce(v.data(), n, op::sum, comm, o);
    for (std::int64_t x : v) wrong += x != static_cast<std::int64_t>(P) * (P + 1) / 2;
  }
  return wrong;
}

// A plan transposing an n x n matrix from row blocks to column blocks, built and
// run on `comm`; returns the wrong elements seen over the executions.
int plan_rounds(MPI_Comm comm, int executions) {
  testing::transpose_case c(97, rank_of(), size_of());
  rd::plan p(c.t, comm);
  int wrong = 0;
  for (int e = 0; e < executions; ++e) {
    std::fill(c.dst.begin(), c.dst.end(), -1.0);
    p.execute();
    wrong += c.wrong();
  }
  return wrong;
}

sinkhorn::scaling_result<double> solve(MPI_Comm comm) {
  const std::size_t n = 60;
  const auto rows = sinkhorn::balanced_rows(n, rank_of(), size_of());
  std::vector<double> A(rows.count * n);
  for (std::size_t i = 0; i < rows.count; ++i)
    for (std::size_t j = 0; j < n; ++j) A[i * n + j] = 1.0 + static_cast<double>(((rows.first + i) * 7 + j * 3) % 11);
  std::vector<double> r(rows.count, 1.0 / static_cast<double>(n)), c(n, 1.0 / static_cast<double>(n));
  sinkhorn::options o;
  o.tol = 1e-12;
  o.max_iter = 300;
  o.threads = 1;
  return sinkhorn::scale(A.data(), rows.count, n, n, r.data(), c.data(), comm, o);
}

TEST(Threads, EnginesAtOnceOnTheirOwnCommunicators) {
  ASSERT_EQ(thread_level(), MPI_THREAD_MULTIPLE) << "run with CONVEYOR_TEST_THREAD_LEVEL=multiple";
  const auto alone = solve(MPI_COMM_WORLD);  // the reference: one thread
  MPI_Comm comms[3];
  for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  int wrong_allreduce = 0, wrong_plan = 0;
  sinkhorn::scaling_result<double> together;
  std::string error_allreduce, error_plan, error_sinkhorn;  // one writer each; read after join
  const auto catching = [](std::string& error, auto&& body) {
    try {
      body();
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  std::thread plan_thread([&] { catching(error_plan, [&] { wrong_plan = plan_rounds(comms[1], 30); }); });
  std::thread sinkhorn_thread([&] {
    catching(error_sinkhorn, [&] {
      for (int k = 0; k < 5; ++k) together = solve(comms[2]);
    });
  });
  catching(error_allreduce, [&] { wrong_allreduce = allreduce_rounds(comms[0], 120); });
  plan_thread.join();
  sinkhorn_thread.join();
  EXPECT_EQ(error_allreduce, "");
  EXPECT_EQ(error_plan, "");
  EXPECT_EQ(error_sinkhorn, "");
  EXPECT_EQ(wrong_allreduce, 0);
  EXPECT_EQ(wrong_plan, 0);
  // Bitwise what one thread alone computes.
  ASSERT_EQ(together.v.size(), alone.v.size());
  EXPECT_EQ(std::memcmp(together.v.data(), alone.v.data(), alone.v.size() * sizeof(double)), 0);
  ASSERT_EQ(together.u.size(), alone.u.size());
  EXPECT_EQ(std::memcmp(together.u.data(), alone.u.data(), alone.u.size() * sizeof(double)), 0);
  EXPECT_EQ(together.iterations, alone.iterations);
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
}

// Below MPI_THREAD_MULTIPLE, a call that starts while another thread has one open
// is refused with an error naming the level, before it makes any MPI call. The open
// call is held by this thread (no other rank is involved, so the case is the same
// on every rank and at every rank count).
TEST(ThreadLevel, ACallWhileAnotherThreadHasOneOpenIsAnError) {
  ASSERT_LT(thread_level(), MPI_THREAD_MULTIPLE) << "run at the harness's default level (MPI_THREAD_SERIALIZED)";
  std::string message;
  errc code = errc::success;
  {
    collective_call held("held open", MPI_COMM_WORLD);
    std::thread other([&] {
      try {
        std::vector<double> v(8, 1.0);
        allreduce(v.data(), v.size(), op::sum, MPI_COMM_WORLD);
      } catch (const error& e) {
        code = e.code();
        message = e.message();
      }
    });
    other.join();
  }
  EXPECT_EQ(code, errc::mpi);
  EXPECT_NE(message.find("another thread has a Conveyor call open, but MPI provides MPI_THREAD_SERIALIZED"),
            std::string::npos)
      << message;
  // Calls one after another from other threads are fine at MPI_THREAD_SERIALIZED.
  int wrong = 0;
  std::thread later([&] { wrong = allreduce_rounds(MPI_COMM_WORLD, 12); });
  later.join();
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace conveyor
