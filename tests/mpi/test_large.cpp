// SPDX-License-Identifier: BSD-3-Clause
// Counts beyond 2^31 elements (MPI's int counts): an int8 allreduce of 2^31 + 17
// elements, which Conveyor must split into messages MPI accepts, and a
// redistribution of an int8 array of 2^31 + 17 elements whose packages exceed
// the 1 GiB per-message limit. Label "long"; run at 2 ranks (about 4.3 GiB of
// memory per rank).
#include <gtest/gtest.h>
#include <mpi.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "conveyor/collectives.hpp"
#include "conveyor/redistribute.hpp"

namespace conveyor {
namespace {

// n bytes of zeroed memory, asked for in transparent huge pages: std::vector's
// zero fill faulted in each rank's gigabytes 4 KiB at a time, which was most of
// this file's system time.
class huge_buffer {
 public:
  explicit huge_buffer(std::size_t n) : n_(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, n, MADV_HUGEPAGE);  // a hint: where THP is off, ordinary pages
    p_ = static_cast<std::int8_t*>(p);
  }
  huge_buffer(const huge_buffer&) = delete;
  huge_buffer& operator=(const huge_buffer&) = delete;
  ~huge_buffer() { munmap(p_, n_); }
  std::int8_t* data() { return p_; }
  std::size_t size() const { return n_; }

 private:
  std::int8_t* p_ = nullptr;
  std::size_t n_;
};

// (i * mul + add) mod 256: every array here holds such a pattern, of period 256 in i.
std::int8_t pattern(std::size_t i, std::size_t mul, std::size_t add) {
  return static_cast<std::int8_t>((i * mul + add) & 0xFF);
}

// Writes, and counts the elements that differ from, pattern(first + k) over
// p[0, n), a period at a time with memcpy / memcmp: a loop of one element at a
// time over 2^31 of them took most of this file's time (docs/testing.md).
class periodic {
 public:
  periodic(std::size_t mul, std::size_t add) {
    for (std::size_t k = 0; k < sizeof table_; ++k) table_[k] = pattern(k, mul, add);
  }
  void fill(std::int8_t* p, std::size_t n, std::size_t first) const {
    for (std::size_t k = 0; k < n; k += 256) std::memcpy(p + k, window(first + k), std::min<std::size_t>(256, n - k));
  }
  std::size_t wrong(const std::int8_t* p, std::size_t n, std::size_t first) const {
    std::size_t bad = 0;
    for (std::size_t k = 0; k < n; k += 256) {
      const std::size_t len = std::min<std::size_t>(256, n - k);
      const std::int8_t* w = window(first + k);
      if (std::memcmp(p + k, w, len) == 0) continue;
      for (std::size_t j = 0; j < len; ++j) bad += p[k + j] != w[j];
    }
    return bad;
  }

 private:
  // 256 bytes of the pattern from element i (two periods, so any start fits).
  const std::int8_t* window(std::size_t i) const { return table_ + (i & 0xFF); }
  std::int8_t table_[512];
};

TEST(Large, Int8AllreduceBeyondIntCount) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::size_t n = (std::size_t{1} << 31) + 17;
  huge_buffer buf(n);
  // mpi: the MPI library's own allreduce, called in pieces of at most INT_MAX elements.
  // The int8 sum wraps: sum_q (7i + 3q) mod 256 = (7 size i + 3 size (size - 1) / 2) mod 256.
  const auto P = static_cast<std::size_t>(size);
  const periodic mine(7, 3 * static_cast<std::size_t>(rank)), sum(7 * P, 3 * P * (P - 1) / 2);
  for (allreduce_algorithm a : {allreduce_algorithm::ring, allreduce_algorithm::automatic, allreduce_algorithm::mpi}) {
    mine.fill(buf.data(), n, 0);
    allreduce_options opt;
    opt.algorithm = a;
    const auto rep = allreduce(buf.data(), n, op::sum, MPI_COMM_WORLD, opt);
    EXPECT_EQ(sum.wrong(buf.data(), n, 0), 0u) << algorithm_name(rep.algorithm);
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
  huge_buffer a(static_cast<std::size_t>(mine)), b(static_cast<std::size_t>(gets));
  const periodic values(7, 0);  // at every global index i
  values.fill(a.data(), a.size(), static_cast<std::size_t>(mine_lo));
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
    std::memset(b.data(), 0, b.size());
    p.execute();
    EXPECT_EQ(values.wrong(b.data(), b.size(), static_cast<std::size_t>(gets_lo)), 0u) << rd::transport_name(m);
  }
}

}  // namespace
}  // namespace conveyor
