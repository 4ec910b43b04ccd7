// Counts beyond 2^31 elements (MPI's int counts): an int8 allreduce of 2^31 + 17
// elements, which Conveyor must split into messages MPI accepts. Label "long";
// run at 2 ranks (about 4 GiB of memory per rank with scratch).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "conveyor/collectives.hpp"

namespace conveyor {
namespace {

std::int8_t value(std::size_t i, int rank) { return static_cast<std::int8_t>((i * 7 + static_cast<std::size_t>(rank) * 3) & 0xFF); }

TEST(Large, Int8AllreduceBeyondIntCount) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::size_t n = (std::size_t{1} << 31) + 17;
  std::vector<std::int8_t> buf(n);
  for (allreduce_algorithm a : {allreduce_algorithm::ring, allreduce_algorithm::automatic}) {
    for (std::size_t i = 0; i < n; ++i) buf[i] = value(i, rank);
    allreduce_options opt;
    opt.algorithm = a;
    const auto rep = allreduce(buf.data(), n, op::sum, MPI_COMM_WORLD, opt);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      unsigned sum = 0;
      for (int q = 0; q < size; ++q) sum += static_cast<std::uint8_t>(value(i, q));
      wrong += buf[i] != static_cast<std::int8_t>(sum & 0xFF);
    }
    EXPECT_EQ(wrong, 0u) << algorithm_name(rep.algorithm);
  }
}

}  // namespace
}  // namespace conveyor
