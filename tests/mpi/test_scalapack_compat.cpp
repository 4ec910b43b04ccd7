// Link-time interposition: this program calls ScaLAPACK's own pdgemr2d_ and is
// linked with conveyor_scalapack_compat ahead of ScaLAPACK, so the call must land
// in Conveyor (checked with dladdr) and give what reference ScaLAPACK's C entry
// point Cpdgemr2d (not interposed) gives.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>

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
  std::vector<double> a(static_cast<std::size_t>(M * std::max(la, 1))), b(static_cast<std::size_t>(M * std::max(lb, 1)), -1),
      ref(b);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i) + 1000.0 * testing::rank_of();
  pdgemr2d_(&M, &N, a.data(), &one, &one, desca, b.data(), &one, &one, descb, &ctxt);
  Cpdgemr2d(M, N, a.data(), 1, 1, desca, ref.data(), 1, 1, descb, ctxt);
  EXPECT_EQ(b, ref);
  Cblacs_gridexit(ctxt);
}

}  // namespace
}  // namespace conveyor
