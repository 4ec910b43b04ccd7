// SPDX-License-Identifier: BSD-3-Clause
// The engines share one partition rule (src/runtime/partition.hpp): the row block a
// rank holds of a distributed Sinkhorn plan or of a distributed DSOP result is its
// block of a Cartesian layout with grid {P, 1}. So both results go straight into a
// ScaLAPACK-style block-cyclic matrix with the Redistribute engine, and every
// element must land where the global matrix has it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mpi_test_util.hpp"
#include "conveyor/dsop.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/sinkhorn.hpp"

namespace conveyor {
namespace {

using testing::rank_of;
using testing::size_of;
namespace rd = redistribute;

// Every rank's rows (row-major, `cols` wide, rank p holding `counts[p]` rows) as the whole matrix.
std::vector<double> gather_rows(const std::vector<double>& mine, std::size_t cols, const std::vector<int>& counts) {
  const int P = size_of();
  std::vector<int> sizes(static_cast<std::size_t>(P)), offsets(static_cast<std::size_t>(P));
  int total = 0;
  for (int p = 0; p < P; ++p) {
    sizes[static_cast<std::size_t>(p)] = counts[static_cast<std::size_t>(p)] * static_cast<int>(cols);
    offsets[static_cast<std::size_t>(p)] = total;
    total += sizes[static_cast<std::size_t>(p)];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), sizes[static_cast<std::size_t>(rank_of())], MPI_DOUBLE, all.data(), sizes.data(),
                 offsets.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

// Moves this rank's row block (a Cartesian {rows, cols} / {P, 1} layout) into a
// block-cyclic matrix (mb x nb blocks, P x 1 grid) and checks every local element
// against the global matrix.
void into_block_cyclic_and_check(std::vector<double>& rows_of_mine, std::int64_t rows, std::int64_t cols,
                                 const std::vector<double>& whole) {
  const int P = size_of(), me = rank_of();
  const rd::layout cart =
      rd::layout::cartesian({rows, cols}, {P, 1}, rows_of_mine.empty() ? nullptr : rows_of_mine.data());
  rd::layout::block_cyclic_params p;
  p.M = rows;
  p.N = cols;
  p.mb = 3;
  p.nb = 2;
  p.prow = P;
  p.pcol = 1;
  const std::vector<std::int64_t> shape = rd::layout::block_cyclic(p).local_shape(me);
  std::vector<double> local(static_cast<std::size_t>(std::max<std::int64_t>(1, shape[0] * shape[1])), -1.0);
  p.local = local.data();
  p.lld = std::max<std::int64_t>(1, shape[0]);
  const rd::layout bc = rd::layout::block_cyclic(p);
  rd::transform t;
  t.src = &cart;
  t.dst = &bc;
  rd::plan(t, MPI_COMM_WORLD).execute();
  int wrong = 0;
  for (std::int64_t lj = 0; lj < shape[1]; ++lj) {
    for (std::int64_t li = 0; li < shape[0]; ++li) {
      const std::int64_t gi = ((li / p.mb) * P + me) * p.mb + li % p.mb;  // ScaLAPACK's indxl2g, source process 0
      const std::int64_t gj = lj;
      wrong += local[static_cast<std::size_t>(li + lj * p.lld)] != whole[static_cast<std::size_t>(gi * cols + gj)];
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(EnginesTogether, DistributedSinkhornPlanIntoBlockCyclic) {
  const int P = size_of(), me = rank_of();
  const std::size_t M = 7 * static_cast<std::size_t>(P) + 3, N = 9;  // M % P != 0: uneven row blocks
  const sinkhorn::row_block mine = sinkhorn::balanced_rows(M, me, P);
  std::vector<double> C(mine.count * N), a(mine.count, 1.0 / static_cast<double>(M)),
      b(N, 1.0 / static_cast<double>(N));
  for (std::size_t i = 0; i < mine.count; ++i) {
    for (std::size_t j = 0; j < N; ++j) C[i * N + j] = static_cast<double>(((mine.first + i) * 7 + j * 3) % 11) / 10.0;
  }
  std::vector<double> plan(mine.count * N);
  sinkhorn::options o;
  o.max_iter = 200;
  sinkhorn::transport(C.data(), mine.count, N, N, a.data(), b.data(), 0.5, MPI_COMM_WORLD, o, plan.data(), N);
  std::vector<int> counts(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p)
    counts[static_cast<std::size_t>(p)] = static_cast<int>(sinkhorn::balanced_rows(M, p, P).count);
  into_block_cyclic_and_check(plan, static_cast<std::int64_t>(M), static_cast<std::int64_t>(N),
                              gather_rows(plan, N, counts));
}

TEST(EnginesTogether, DistributedOuterSumIntoBlockCyclic) {
  const int P = size_of(), me = rank_of();
  const std::size_t N = 5 * static_cast<std::size_t>(P) + 2, M = 6;
  std::vector<double> x(N), y(M);
  for (std::size_t i = 0; i < N; ++i) x[i] = static_cast<double>((i + static_cast<std::size_t>(me)) % 5);
  for (std::size_t j = 0; j < M; ++j) y[j] = static_cast<double>(j + 1);
  const outer_block mine = outer_rows(N, me, P);
  std::vector<double> G(std::max<std::size_t>(1, mine.count * M));
  outer_options o;
  o.distributed = true;
  outer_sum(x.data(), N, y.data(), M, G.data(), G.size(), MPI_COMM_WORLD, o);
  G.resize(mine.count * M);
  std::vector<int> counts(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) counts[static_cast<std::size_t>(p)] = static_cast<int>(outer_rows(N, p, P).count);
  // The row blocks are also sinkhorn::balanced_rows: one rule.
  for (int p = 0; p < P; ++p) {
    EXPECT_EQ(outer_rows(N, p, P).first, sinkhorn::balanced_rows(N, p, P).first);
    EXPECT_EQ(outer_rows(N, p, P).count, sinkhorn::balanced_rows(N, p, P).count);
  }
  into_block_cyclic_and_check(G, static_cast<std::int64_t>(N), static_cast<std::int64_t>(M), gather_rows(G, M, counts));
}

}  // namespace
}  // namespace conveyor
