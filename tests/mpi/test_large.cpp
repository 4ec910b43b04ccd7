// Counts beyond 2^31 elements (MPI's int counts): an int8 allreduce of 2^31 + 17
// elements, which Conveyor must split into messages MPI accepts, and a
// redistribution of an int8 array of 2^31 + 17 elements whose packages exceed
// the 1 GiB per-message limit. Label "long"; run at 2 ranks (about 4.3 GiB of
// memory per rank).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/redistribute.hpp"

namespace conveyor {
namespace {

std::int8_t value(std::size_t i, int rank) { return static_cast<std::int8_t>((i * 7 + static_cast<std::size_t>(rank) * 3) & 0xFF); }

TEST(Large, Int8AllreduceBeyondIntCount) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::size_t n = (std::size_t{1} << 31) + 17;
  std::vector<std::int8_t> buf(n);
  // mpi: the MPI library's own allreduce, called in pieces of at most INT_MAX elements.
  for (allreduce_algorithm a : {allreduce_algorithm::ring, allreduce_algorithm::automatic, allreduce_algorithm::mpi}) {
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

// Rank r's half of [0, 2^31 + 17) moves to the other rank: 1 GiB + 8 bytes per
// package, so every transport splits or (datatype) sends it whole within int counts.
TEST(Large, Int8RedistributionBeyondIntCount) {
  namespace rd = redistribute;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, 2) << "registered at 2 ranks only (tests/CMakeLists.txt)";
  const std::int64_t n = (std::int64_t{1} << 31) + 17, half = n / 2;
  const auto splits = rd::axis_splits::explicit_points({0, half, n});
  rd::layout src = rd::layout::custom({splits}, {0, 1}), dst = rd::layout::custom({splits}, {1, 0});
  const std::int64_t mine_lo = rank == 0 ? 0 : half, mine = rank == 0 ? half : n - half;
  const std::int64_t gets_lo = rank == 0 ? half : 0, gets = rank == 0 ? n - half : half;
  std::vector<std::int8_t> a(static_cast<std::size_t>(mine)), b(static_cast<std::size_t>(gets));
  for (std::int64_t i = 0; i < mine; ++i) a[static_cast<std::size_t>(i)] = value(static_cast<std::size_t>(mine_lo + i), 0);
  src.set_storage({rank}, a.data(), {1});
  dst.set_storage({1 - rank}, b.data(), {1});
  rd::transform t;
  t.src = &src;
  t.dst = &dst;
  t.type = dtype::int8;
  for (rd::transport m : {rd::transport::packed, rd::transport::one_sided, rd::transport::datatype}) {
    rd::plan_options opt;
    opt.transport = m;
    rd::plan p(t, MPI_COMM_WORLD, opt);
    EXPECT_EQ(p.remote_bytes(), n);
    std::fill(b.begin(), b.end(), std::int8_t{0});
    p.execute();
    std::size_t wrong = 0;
    for (std::int64_t i = 0; i < gets; ++i) wrong += b[static_cast<std::size_t>(i)] != value(static_cast<std::size_t>(gets_lo + i), 0);
    EXPECT_EQ(wrong, 0u) << rd::transport_name(m);
  }
}

}  // namespace
}  // namespace conveyor
