// SPDX-License-Identifier: BSD-3-Clause
// GoogleTest main for MPI tests. Every rank runs every test. Rank 0 prints the
// usual report; other ranks print only their failures, prefixed with the rank.
// After each test the ranks agree on who failed, and rank 0 names them, so a
// failure on rank 3 is visible in rank 0's log. The process exit code is the
// maximum over ranks, so mpiexec (and CTest) fail if any rank failed.
//
// Tests are collective: a test that fails an ASSERT on one rank before a
// collective call can leave the others waiting; CTest's TIMEOUT ends such a run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "mpi_test_util.hpp"

namespace {

using conveyor::testing::rank_of;
using conveyor::testing::size_of;

// Printer for ranks other than 0: failures only.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                 r.summary());
    std::fflush(stderr);
  }

 private:
  int rank_;
};

// After each test: which ranks failed it?
class CollectiveVerdict : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& info) override {
    const int size = size_of();
    const int mine = info.result()->Failed() ? 1 : 0;
    std::string failed(static_cast<std::size_t>(size), '\0');
    char flag = static_cast<char>(mine);
    MPI_Gather(&flag, 1, MPI_CHAR, failed.data(), 1, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank_of() != 0) return;
    std::string list;
    for (int r = 0; r < size; ++r) {
      if (failed[static_cast<std::size_t>(r)]) list += " " + std::to_string(r);
    }
    if (!list.empty()) {
      std::printf("[ MPI FAIL ] %s.%s failed on rank(s):%s (of %d)\n", info.test_suite_name(), info.name(),
                  list.c_str(), size);
      std::fflush(stdout);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  // CONVEYOR_TEST_THREAD_LEVEL=multiple: for tests that call MPI from several threads.
  const char* level = std::getenv("CONVEYOR_TEST_THREAD_LEVEL");
  const bool multiple = level && std::string(level) == "multiple";
  int provided = 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED, &provided);
  testing::InitGoogleTest(&argc, argv);

  const int rank = rank_of();
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  } else {
    std::printf("MPI tests on %d rank(s)\n", size_of());
  }
  listeners.Append(new CollectiveVerdict);

  int result = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && result != 0) std::printf("MPI tests FAILED on at least one rank\n");
  // CONVEYOR_TEST_PMPI_FINALIZE=1: finalize as MPICH's mpi_f08 bindings do, past an
  // interposed MPI_Finalize (libconveyor_mpi must still print its report).
  const char* pmpi_finalize = std::getenv("CONVEYOR_TEST_PMPI_FINALIZE");
  if (pmpi_finalize && std::string(pmpi_finalize) == "1") PMPI_Finalize();
  else MPI_Finalize();
  return result;
}
