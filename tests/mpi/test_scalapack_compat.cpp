// SPDX-License-Identifier: BSD-3-Clause
// Link-time interposition: this program calls ScaLAPACK's own pdgemr2d_ and is
// linked with conveyor_scalapack_compat ahead of ScaLAPACK, so the call must land
// in Conveyor (checked with dladdr) and give what reference ScaLAPACK's C entry
// point Cpdgemr2d (not interposed) gives.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "scalapack_reference.h"

namespace conveyor {
namespace {

TEST(ScaLAPACKCompat, Pdgemr2dIsInterposedAndCorrect) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&pdgemr2d_), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("conveyor_scalapack_compat"), std::string::npos) << info.dli_fname;

  const int P = testing::size_of();
  int ctxt = 0;
  Cblacs_get(0, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "R", 1, P);
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  const int M = 37, N = 29, zero = 0, one = 1;
  int desca[9], descb[9], info_a = 0, info_b = 0;
  const int mba = 4, nba = 3, mbb = 7, nbb = 5;
  const int la = numroc_(&N, &nba, &mycol, &zero, &P), lb = numroc_(&N, &nbb, &mycol, &zero, &P);
  descinit_(desca, &M, &N, &mba, &nba, &zero, &zero, &ctxt, &M, &info_a);
  descinit_(descb, &M, &N, &mbb, &nbb, &zero, &zero, &ctxt, &M, &info_b);
  std::vector<double> a(static_cast<std::size_t>(M * std::max(la, 1))),
      b(static_cast<std::size_t>(M * std::max(lb, 1)), -1), ref(b);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i) + 1000.0 * testing::rank_of();
  pdgemr2d_(&M, &N, a.data(), &one, &one, desca, b.data(), &one, &one, descb, &ctxt);
  Cpdgemr2d(M, N, a.data(), 1, 1, desca, ref.data(), 1, 1, descb, ctxt);
  EXPECT_EQ(b, ref);
  Cblacs_gridexit(ctxt);
}

// The global columns that process `me` of P holds when the first column block has
// `first` columns and the others `nb`, block 0 on process 0.
std::vector<int> columns_held(int n, int first, int nb, int me, int P) {
  std::vector<int> out;
  for (int g = 0; g < n; ++g) {
    const int block = g < first ? 0 : 1 + (g - first) / nb;
    if (block % P == me) out.push_back(g);
  }
  return out;
}

// Under ScaLAPACK's names p?gemr2d / p?trmr2d read descriptors as reference REDIST
// does (9 integers, DTYPE unread), but p?tran is PBLAS, which honours DTYPE 2's
// first blocks IMB / INB: pdtran_ must still read all 11 integers.
TEST(ScaLAPACKCompat, PdtranHonoursElevenIntegerDescriptors) {
  const int P = testing::size_of(), me = testing::rank_of();
  int ctxt = 0;
  Cblacs_get(0, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "R", 1, P);
  const int M = 13, N = 11, one = 1;
  // A: M x N, first column block 2 wide, then 4; C = A^T: N x M, first 3, then 5.
  const int desca[11] = {2, ctxt, M, N, 5, 2, 3, 4, 0, 0, M};
  const int descc[11] = {2, ctxt, N, M, 4, 3, 2, 5, 0, 0, N};
  const std::vector<int> a_cols = columns_held(N, 2, 4, me, P), c_cols = columns_held(M, 3, 5, me, P);
  std::vector<double> a(static_cast<std::size_t>(M) * std::max<std::size_t>(a_cols.size(), 1));
  for (std::size_t lc = 0; lc < a_cols.size(); ++lc) {
    for (int i = 0; i < M; ++i) a[static_cast<std::size_t>(i) + M * lc] = i + 100.0 * a_cols[lc];
  }
  std::vector<double> c(static_cast<std::size_t>(N) * std::max<std::size_t>(c_cols.size(), 1), -1.0);
  const double alpha = 1.0, beta = 0.0;
  pdtran_(&N, &M, &alpha, a.data(), &one, &one, desca, &beta, c.data(), &one, &one, descc);
  for (std::size_t lc = 0; lc < c_cols.size(); ++lc) {
    for (int j = 0; j < N; ++j) {
      ASSERT_EQ(c[static_cast<std::size_t>(j) + N * lc], c_cols[lc] + 100.0 * j)
          << "C(" << j << ", " << c_cols[lc] << ")";
    }
  }
  Cblacs_gridexit(ctxt);
}

}  // namespace
}  // namespace conveyor
