// SPDX-License-Identifier: BSD-3-Clause
// conveyor_p?gemr2d / conveyor_p?tran against Debian's reference ScaLAPACK (the
// oracle) on many descriptor combinations: grid shapes and orders, block sizes,
// source processes, submatrix offsets, A and B on different grids and on different
// process subsets. Values are position-encoded; results must match exactly.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference.hpp"
#include "mpi_test_util.hpp"
#include "scalapack_reference.h"
#include "conveyor/scalapack.h"
#include "conveyor/scalapack.hpp"

namespace conveyor {
namespace {

using testing::rank_of;
using testing::size_of;

// A distributed matrix on a BLACS grid over ranks [first, first + pr * pc).
struct dmatrix {
  int ctxt = -1;
  int desc[9] = {0, -1, 0, 0, 1, 1, 0, 0, 1};
  std::vector<double> local;  // doubles; complex uses 2 per element
  int myrow = -1, mycol = -1, lrows = 0, lcols = 0;
};

int system_context() {
  int ctxt = 0;
  Cblacs_get(0, 0, &ctxt);
  return ctxt;
}

// `on_ctxt` >= 0: use that existing grid (pr x pc) instead of creating one.
dmatrix make(int M, int N, int mb, int nb, int pr, int pc, int rsrc, int csrc, bool row_order, int first, int slots,
             double fill, int on_ctxt = -1) {
  dmatrix d;
  if (on_ctxt >= 0) {
    d.ctxt = on_ctxt;
  } else {
    std::vector<int> map(static_cast<std::size_t>(pr * pc));
    for (int r = 0; r < pr; ++r) {
      for (int c = 0; c < pc; ++c)
        map[static_cast<std::size_t>(r + c * pr)] = first + (row_order ? r * pc + c : c * pr + r);
    }
    d.ctxt = system_context();
    Cblacs_gridmap(&d.ctxt, map.data(), pr, pr, pc);  // collective over all processes; others get -1
  }
  int nprow = 0, npcol = 0;
  if (d.ctxt >= 0) Cblacs_gridinfo(d.ctxt, &nprow, &npcol, &d.myrow, &d.mycol);
  if (d.myrow >= 0) {
    d.lrows = numroc_(&M, &mb, &d.myrow, &rsrc, &pr);
    d.lcols = numroc_(&N, &nb, &d.mycol, &csrc, &pc);
    int lld = std::max(1, d.lrows) + 1, info = 0;  // padded leading dimension
    descinit_(d.desc, &M, &N, &mb, &nb, &rsrc, &csrc, &d.ctxt, &lld, &info);
    EXPECT_EQ(info, 0);
    d.local.assign(static_cast<std::size_t>(lld * std::max(1, d.lcols) * slots), fill);
  } else {
    d.desc[1] = -1;
    d.local.assign(static_cast<std::size_t>(slots), fill);
  }
  return d;
}

// Fill with the global (i, j) encoded: i * 10000 + j (+ 0.5 imaginary part for complex).
void encode(dmatrix& d, int mb, int nb, int pr, int pc, int rsrc, int csrc, int slots) {
  if (d.myrow < 0) return;
  const int lld = d.desc[8];
  for (int lj = 0; lj < d.lcols; ++lj) {
    for (int li = 0; li < d.lrows; ++li) {
      const int gi = ((li / mb) * pr + (d.myrow - rsrc + pr) % pr) * mb + li % mb;
      const int gj = ((lj / nb) * pc + (d.mycol - csrc + pc) % pc) * nb + lj % nb;
      const std::size_t at = static_cast<std::size_t>((li + lj * lld) * slots);
      d.local[at] = gi * 10000.0 + gj;
      if (slots == 2) d.local[at + 1] = -(gi * 10000.0 + gj) - 0.5;
    }
  }
}

struct gemr_case {
  int M, N, m, n, ia, ja, ib, jb;
  int mba, nba, pra, pca, rsa, csa, firsta;
  bool rowa;
  int mbb, nbb, prb, pcb, rsb, csb, firstb;
  bool rowb;
};

std::vector<gemr_case> cases() {
  const int P = size_of();
  std::vector<gemr_case> out;
  testing::splitmix64 rng(4242);
  for (int k = 0; k < 24; ++k) {
    gemr_case c{};
    c.M = 5 + static_cast<int>(rng() % 40);
    c.N = 5 + static_cast<int>(rng() % 40);
    c.ia = 1 + static_cast<int>(rng() % 4);
    c.ja = 1 + static_cast<int>(rng() % 4);
    c.ib = 1 + static_cast<int>(rng() % 4);
    c.jb = 1 + static_cast<int>(rng() % 4);
    c.m = std::min(c.M - c.ia + 1, c.M - c.ib + 1) - static_cast<int>(rng() % 3);
    c.n = std::min(c.N - c.ja + 1, c.N - c.jb + 1) - static_cast<int>(rng() % 3);
    // Grids over subsets of the ranks: A on the first pa ranks, B on the last pb ranks.
    const int pa = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(P)),
              pb = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(P));
    std::vector<int> fa, fb;
    for (int r = 1; r <= pa; ++r)
      if (pa % r == 0) fa.push_back(r);
    for (int r = 1; r <= pb; ++r)
      if (pb % r == 0) fb.push_back(r);
    c.pra = fa[rng() % fa.size()];
    c.pca = pa / c.pra;
    c.prb = fb[rng() % fb.size()];
    c.pcb = pb / c.prb;
    c.firsta = 0;
    c.firstb = P - pb;
    c.mba = 1 + static_cast<int>(rng() % 6);
    c.nba = 1 + static_cast<int>(rng() % 6);
    c.mbb = 1 + static_cast<int>(rng() % 6);
    c.nbb = 1 + static_cast<int>(rng() % 6);
    c.rsa = static_cast<int>(rng() % static_cast<std::uint64_t>(c.pra));
    c.csa = static_cast<int>(rng() % static_cast<std::uint64_t>(c.pca));
    c.rsb = static_cast<int>(rng() % static_cast<std::uint64_t>(c.prb));
    c.csb = static_cast<int>(rng() % static_cast<std::uint64_t>(c.pcb));
    c.rowa = rng() % 2;
    c.rowb = rng() % 2;
    out.push_back(c);
  }
  return out;
}

TEST(ScaLAPACK, Gemr2dMatchesReference) {
  int whole = system_context();
  int all_ctxt = whole;
  Cblacs_gridinit(&all_ctxt, "R", 1, size_of());  // the context every process is in
  int k = 0;
  for (const gemr_case& c : cases()) {
    for (int slots : {1, 2}) {
      dmatrix a = make(c.M, c.N, c.mba, c.nba, c.pra, c.pca, c.rsa, c.csa, c.rowa, c.firsta, slots, 0);
      encode(a, c.mba, c.nba, c.pra, c.pca, c.rsa, c.csa, slots);
      dmatrix b = make(c.M, c.N, c.mbb, c.nbb, c.prb, c.pcb, c.rsb, c.csb, c.rowb, c.firstb, slots, -7);
      dmatrix ref = make(c.M, c.N, c.mbb, c.nbb, c.prb, c.pcb, c.rsb, c.csb, c.rowb, c.firstb, slots, -7);
      if (slots == 1) {
        pdgemr2d_(&c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, ref.local.data(), &c.ib, &c.jb, ref.desc,
                  &all_ctxt);
        conveyor_pdgemr2d(&c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, b.local.data(), &c.ib, &c.jb, b.desc,
                          &all_ctxt);
      } else {
        pzgemr2d_(&c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, ref.local.data(), &c.ib, &c.jb, ref.desc,
                  &all_ctxt);
        conveyor_pzgemr2d(&c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, b.local.data(), &c.ib, &c.jb, b.desc,
                          &all_ctxt);
      }
      EXPECT_EQ(b.local, ref.local) << "case " << k << (slots == 2 ? " complex" : " double") << ": " << c.M << "x"
                                    << c.N << " sub " << c.m << "x" << c.n << " A grid " << c.pra << "x" << c.pca
                                    << " blocks " << c.mba << "x" << c.nba << " B grid " << c.prb << "x" << c.pcb
                                    << " blocks " << c.mbb << "x" << c.nbb;
      for (dmatrix* d : {&a, &b, &ref}) {
        if (d->myrow >= 0) Cblacs_gridexit(d->ctxt);
      }
    }
    ++k;
  }
  Cblacs_gridexit(all_ctxt);
}

// p?trmr2d: every UPLO / DIAG on the same random cases, double and complex, plus
// the C entry point; results must equal reference ScaLAPACK's bit for bit.
TEST(ScaLAPACK, Trmr2dMatchesReference) {
  int all_ctxt = system_context();
  Cblacs_gridinit(&all_ctxt, "R", 1, size_of());
  int k = 0;
  for (const gemr_case& c : cases()) {
    for (const char* ud : {"UN", "UU", "LN", "LU"}) {
      const int slots = 1 + (k % 2);
      dmatrix a = make(c.M, c.N, c.mba, c.nba, c.pra, c.pca, c.rsa, c.csa, c.rowa, c.firsta, slots, 0);
      encode(a, c.mba, c.nba, c.pra, c.pca, c.rsa, c.csa, slots);
      dmatrix b = make(c.M, c.N, c.mbb, c.nbb, c.prb, c.pcb, c.rsb, c.csb, c.rowb, c.firstb, slots, -7);
      dmatrix ref = make(c.M, c.N, c.mbb, c.nbb, c.prb, c.pcb, c.rsb, c.csb, c.rowb, c.firstb, slots, -7);
      char uplo = ud[0], diag = ud[1];
      if (slots == 1) {
        pdtrmr2d_(&uplo, &diag, &c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, ref.local.data(), &c.ib, &c.jb,
                  ref.desc, &all_ctxt);
        conveyor_Cpdtrmr2d(&uplo, &diag, c.m, c.n, a.local.data(), c.ia, c.ja, a.desc, b.local.data(), c.ib, c.jb,
                           b.desc, all_ctxt);
      } else {
        pztrmr2d_(&uplo, &diag, &c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, ref.local.data(), &c.ib, &c.jb,
                  ref.desc, &all_ctxt);
        conveyor_pztrmr2d(&uplo, &diag, &c.m, &c.n, a.local.data(), &c.ia, &c.ja, a.desc, b.local.data(), &c.ib, &c.jb,
                          b.desc, &all_ctxt);
      }
      EXPECT_EQ(b.local, ref.local) << "case " << k << " " << ud << (slots == 2 ? " complex" : " double") << ": sub "
                                    << c.m << "x" << c.n;
      for (dmatrix* d : {&a, &b, &ref}) {
        if (d->myrow >= 0) Cblacs_gridexit(d->ctxt);
      }
    }
    ++k;
  }
  Cblacs_gridexit(all_ctxt);
}

// BLACS hands a released context handle to the next grid: the same handle, the
// same descriptors and buffers, but the processes in another order. The cached
// plan of the first grid must not be reused for the second.
TEST(ScaLAPACK, ReusedContextHandleWithAnotherProcessOrder) {
  const int P = size_of();
  if (P < 2) GTEST_SKIP() << "needs two processes to reorder";
  // Every process holds the same number of rows of B, so its descriptor (LLD
  // included) reads the same in both grids: only the positions differ.
  const int mb = 3, M = mb * P * 4, N = 19, nb = 2, m = M - 2, n = 17, i1 = 2, j1 = 3;
  int all_ctxt = system_context();
  Cblacs_gridinit(&all_ctxt, "R", 1, P);
  dmatrix a = make(M, N, mb, nb, 1, P, 0, 0, true, 0, 1, 0);
  encode(a, mb, nb, 1, P, 0, 0, 1);
  std::vector<double> b_store, r_store;
  int handle = -1;
  for (bool reversed : {false, true}) {
    // B on a P x 1 grid, processes in rank order, then reversed.
    std::vector<int> map(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) map[static_cast<std::size_t>(r)] = reversed ? P - 1 - r : r;
    int ctxt = system_context();
    Cblacs_gridmap(&ctxt, map.data(), P, P, 1);
    if (handle >= 0) {
      ASSERT_EQ(ctxt, handle) << "BLACS did not reuse the released handle";
    }
    handle = ctxt;
    int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    int zero = 0, lrows = numroc_(&M, &mb, &myrow, &zero, &P), lld = std::max(1, lrows), info = 0;
    int desc[9];
    descinit_(desc, &M, &N, &mb, &nb, &zero, &zero, &ctxt, &lld, &info);
    // The same buffers both times (the cache key holds the pointers).
    b_store.assign(static_cast<std::size_t>(lld * N), -7);
    r_store.assign(static_cast<std::size_t>(lld * N), -7);
    pdgemr2d_(&m, &n, a.local.data(), &i1, &j1, a.desc, r_store.data(), &i1, &j1, desc, &all_ctxt);
    for (int repeat = 0; repeat < 2; ++repeat) {  // planned, then cached
      std::fill(b_store.begin(), b_store.end(), -7.0);
      conveyor_pdgemr2d(&m, &n, a.local.data(), &i1, &j1, a.desc, b_store.data(), &i1, &j1, desc, &all_ctxt);
      EXPECT_EQ(b_store, r_store) << (reversed ? "reversed grid" : "first grid") << ", call " << repeat;
    }
    Cblacs_gridexit(ctxt);
  }
  Cblacs_gridexit(a.ctxt);
  Cblacs_gridexit(all_ctxt);
}

// A call whose context holds only some processes (as p?gesvd's inner calls do):
// the others never call, and nobody may wait for them. Repeated, with evictions.
TEST(ScaLAPACK, CallsOnASubgridContextInvolveOnlyItsProcesses) {
  const int P = size_of();
  if (P < 2) GTEST_SKIP() << "needs a process outside the subgrid";
  const int q = P - 1;  // ranks 0..q-1
  std::vector<int> map(static_cast<std::size_t>(q));
  for (int r = 0; r < q; ++r) map[static_cast<std::size_t>(r)] = r;
  int sub = system_context();
  Cblacs_gridmap(&sub, map.data(), 1, 1, q);
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
  if (sub >= 0) Cblacs_gridinfo(sub, &nprow, &npcol, &myrow, &mycol);
  if (myrow >= 0) {
    for (int size = 5; size < 5 + 12; ++size) {  // more distinct calls than the cache holds
      const int one = 1, zero = 0, mb = 2;
      int lcols = numroc_(&size, &mb, &mycol, &zero, &q), lld = size, info = 0, da[9], db[9];
      descinit_(da, &size, &size, &size, &mb, &zero, &zero, &sub, &lld, &info);
      descinit_(db, &size, &size, &mb, &size, &zero, &zero, &sub, &lld, &info);
      std::vector<double> a(static_cast<std::size_t>(size * std::max(1, lcols))), b, r;
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i) + 1000.0 * mycol;
      b.assign(static_cast<std::size_t>(size * size), -1);
      r = b;
      pdgemr2d_(&size, &size, a.data(), &one, &one, da, r.data(), &one, &one, db, &sub);
      conveyor_pdgemr2d(&size, &size, a.data(), &one, &one, da, b.data(), &one, &one, db, &sub);
      EXPECT_EQ(b, r) << "size " << size;
    }
    Cblacs_gridexit(sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A layout from a descriptor feeds any Redistribute transform: the submatrix at
// (ia, ja) of A (on a grid over all ranks but the last, which calls from outside
// the grid), transposed and scaled into a Cartesian layout over every rank; then
// the whole matrix (m = n = -1) copied into row blocks; and the errors.
TEST(ScaLAPACK, LayoutFromDescriptor) {
  namespace rd = redistribute;
  const int P = size_of(), me = rank_of();
  const int pa = std::max(1, P - 1), pr = pa % 2 == 0 ? 2 : 1, pc = pa / pr;
  const int M = 17, N = 13, mb = 3, nb = 2, ia = 2, ja = 3, m = 11, n = 9;
  dmatrix a = make(M, N, mb, nb, pr, pc, pr - 1, 0, true, 0, 1, 0);
  encode(a, mb, nb, pr, pc, pr - 1, 0, 1);
  const MPI_Comm comm = MPI_COMM_WORLD;
  const rd::layout sub = scalapack::layout_from_descriptor(a.desc, a.local.data(), comm, m, n, ia, ja);
  const rd::layout whole = scalapack::layout_from_descriptor(a.desc, a.local.data(), comm);
  EXPECT_EQ(sub.extent(0), m);
  EXPECT_EQ(sub.extent(1), n);
  EXPECT_EQ(whole.extent(0), M);
  EXPECT_EQ(whole.extent(1), N);
  if (a.myrow < 0) {
    EXPECT_TRUE(sub.blocks_of(me).empty());
  }

  // dst (i, j) = 2 * A(ia - 1 + j, ja - 1 + i): n x m in min(P, n) row blocks
  // (on the first ranks; the others hold none), row-major. Cartesian row blocks:
  // the first rows % blocks blocks one row longer.
  const auto first_row = [&](int rows, int k) {
    const int blocks = std::min(P, rows);
    k = std::min(k, blocks);
    return rows / blocks * k + std::min(k, rows % blocks);
  };
  const int r0 = first_row(n, me), r1 = first_row(n, me + 1);
  std::vector<double> t(static_cast<std::size_t>(std::max(1, (r1 - r0) * m)), std::nan(""));
  const rd::layout tl = rd::layout::cartesian({n, m}, {std::min(P, n), 1}, t.data());
  rd::transform tr;
  tr.src = &sub;
  tr.dst = &tl;
  tr.perm = {1, 0};
  tr.alpha = 2;
  rd::plan(tr, comm).execute();
  int wrong = 0;
  for (int i = r0; i < r1; ++i) {
    for (int j = 0; j < m; ++j)
      wrong += t[static_cast<std::size_t>((i - r0) * m + j)] != 2.0 * ((ia - 1 + j) * 10000.0 + (ja - 1 + i));
  }
  EXPECT_EQ(wrong, 0);

  const int w0 = first_row(M, me), w1 = first_row(M, me + 1);
  std::vector<double> w(static_cast<std::size_t>(std::max(1, (w1 - w0) * N)), std::nan(""));
  const rd::layout wl = rd::layout::cartesian({M, N}, {std::min(P, M), 1}, w.data());
  rd::transform copy;
  copy.src = &whole;
  copy.dst = &wl;
  rd::plan(copy, comm).execute();
  wrong = 0;
  for (int i = w0; i < w1; ++i) {
    for (int j = 0; j < N; ++j) wrong += w[static_cast<std::size_t>((i - w0) * N + j)] != i * 10000.0 + j;
  }
  EXPECT_EQ(wrong, 0);

  testing::expect_error_everywhere([&] { scalapack::layout_from_descriptor(a.desc, a.local.data(), comm, m, n, M, 1); },
                                   "exceeds the 17 x 13 matrix");
  if (a.myrow >= 0) Cblacs_gridexit(a.ctxt);
}

TEST(ScaLAPACK, TranMatchesReference) {
  const int P = size_of();
  testing::splitmix64 rng(99);
  for (int k = 0; k < 16; ++k) {
    std::vector<int> f;
    for (int r = 1; r <= P; ++r)
      if (P % r == 0) f.push_back(r);
    const int pr = f[rng() % f.size()], pc = P / pr;
    const int m = 3 + static_cast<int>(rng() % 30), n = 3 + static_cast<int>(rng() % 30);
    const int ia = 1 + static_cast<int>(rng() % 3), ja = 1 + static_cast<int>(rng() % 3);
    const int ic = 1 + static_cast<int>(rng() % 3), jc = 1 + static_cast<int>(rng() % 3);
    const int mba = 1 + static_cast<int>(rng() % 5), nba = 1 + static_cast<int>(rng() % 5);
    const int mbc = mba, nbc = nba;  // pdtran's reference requires square-compatible blocking
    const double alpha = k % 2 ? 2.0 : 1.0, beta = k % 3 == 0 ? 0.0 : 0.5;
    // A: (n + ia - 1) x (m + ja - 1); C: (m + ic - 1) x (n + jc - 1), both on the same grid.
    dmatrix a = make(n + ia - 1, m + ja - 1, mba, nba, pr, pc, 0, 0, true, 0, 1, 0);
    encode(a, mba, nba, pr, pc, 0, 0, 1);
    dmatrix c = make(m + ic - 1, n + jc - 1, mbc, nbc, pr, pc, 0, 0, true, 0, 1, 0, a.ctxt);
    encode(c, mbc, nbc, pr, pc, 0, 0, 1);
    dmatrix ref = c;
    pdtran_(&m, &n, &alpha, a.local.data(), &ia, &ja, a.desc, &beta, ref.local.data(), &ic, &jc, ref.desc);
    conveyor_pdtran(&m, &n, &alpha, a.local.data(), &ia, &ja, a.desc, &beta, c.local.data(), &ic, &jc, c.desc);
    EXPECT_EQ(c.local, ref.local) << "case " << k << ": " << m << "x" << n << " grid " << pr << "x" << pc << " blocks "
                                  << mba << "x" << nba;
    Cblacs_gridexit(a.ctxt);
  }
}

// PBLAS's 11-integer descriptors (DTYPE 2: IMB, INB = the sizes of the first row
// and column block, which may differ from MB, NB), as reference pdtran accepts
// them: the same result as reference pdtran_ on the same descriptors, and as
// Conveyor with the 9-integer form when the first blocks are regular.
struct dmatrix2 {
  int desc[11] = {};
  std::vector<double> local;
};

// Rows (or columns) of a dimension of n with first block `first` and then `nb`,
// owned by process `me` of P, global block 0 on process `src`: the global indices.
std::vector<int> owned(int n, int first, int nb, int me, int src, int P) {
  std::vector<int> out;
  for (int g = 0; g < n; ++g) {
    const int block = g < first ? 0 : 1 + (g - first) / nb;
    if ((block + src) % P == me) out.push_back(g);
  }
  return out;
}

dmatrix2 make11(int M, int N, int imb, int inb, int mb, int nb, int ctxt, double base) {
  dmatrix2 d;
  int pr = 0, pc = 0, myrow = -1, mycol = -1;
  Cblacs_gridinfo(ctxt, &pr, &pc, &myrow, &mycol);
  const auto rows = owned(M, imb, mb, myrow, 0, pr), cols = owned(N, inb, nb, mycol, 0, pc);
  const int lld = static_cast<int>(rows.size()) + 2;  // padded
  const int desc[11] = {2, ctxt, M, N, imb, inb, mb, nb, 0, 0, lld};
  std::copy(desc, desc + 11, d.desc);
  d.local.assign(static_cast<std::size_t>(lld) * std::max<std::size_t>(1, cols.size()), -1.0);
  for (std::size_t lj = 0; lj < cols.size(); ++lj) {
    for (std::size_t li = 0; li < rows.size(); ++li) {
      d.local[li + lj * static_cast<std::size_t>(lld)] = base + rows[li] * 1000.0 + cols[lj];
    }
  }
  return d;
}

TEST(ScaLAPACK, TranWithElevenIntegerDescriptorsMatchesReference) {
  const int P = size_of();
  testing::splitmix64 rng(11);
  for (int k = 0; k < 16; ++k) {
    std::vector<int> f;
    for (int r = 1; r <= P; ++r)
      if (P % r == 0) f.push_back(r);
    const int pr = f[rng() % f.size()], pc = P / pr;
    int ctxt = system_context();
    Cblacs_gridinit(&ctxt, "R", pr, pc);
    const int m = 2 + static_cast<int>(rng() % 25), n = 2 + static_cast<int>(rng() % 25);
    const int mb = 1 + static_cast<int>(rng() % 5), nb = mb;  // square blocks, as pdtran needs
    // Half the cases with regular first blocks, half with smaller ones.
    const int imb = k % 2 ? mb : 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(mb)), inb = imb;
    const double alpha = k % 3 ? 2.0 : 1.0, beta = k % 4 ? 0.5 : 0.0;
    const dmatrix2 a = make11(n, m, imb, inb, mb, nb, ctxt, 0.25);
    const dmatrix2 c0 = make11(m, n, imb, inb, mb, nb, ctxt, 0.75);
    const int one = 1;
    dmatrix2 ref = c0, ours = c0;
    pdtran_(&m, &n, &alpha, a.local.data(), &one, &one, a.desc, &beta, ref.local.data(), &one, &one, ref.desc);
    conveyor_pdtran(&m, &n, &alpha, a.local.data(), &one, &one, a.desc, &beta, ours.local.data(), &one, &one,
                    ours.desc);
    EXPECT_EQ(ours.local, ref.local) << "case " << k << ": " << m << "x" << n << " grid " << pr << "x" << pc
                                     << " blocks " << mb << " first " << imb;
    int changed = ours.local != c0.local ? 1 : 0;  // somewhere (a process may hold none of C)
    MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(changed, 1) << "case " << k << ": nothing was written";
    Cblacs_gridexit(ctxt);
  }
}

TEST(ScaLAPACK, ComplexTranuTrancMatchReference) {
  const int P = size_of();
  testing::splitmix64 rng(7);
  for (int k = 0; k < 12; ++k) {
    std::vector<int> f;
    for (int r = 1; r <= P; ++r)
      if (P % r == 0) f.push_back(r);
    const int pr = f[rng() % f.size()], pc = P / pr;
    const int m = 3 + static_cast<int>(rng() % 20), n = 3 + static_cast<int>(rng() % 20);
    const int ia = 1 + static_cast<int>(rng() % 3), ja = 1 + static_cast<int>(rng() % 3);
    const int ic = 1 + static_cast<int>(rng() % 3), jc = 1 + static_cast<int>(rng() % 3);
    const int mb = 1 + static_cast<int>(rng() % 5), nb = mb;
    const double alpha[2] = {k % 2 ? 2.0 : 1.0, k % 3 ? 0.5 : 0.0}, beta[2] = {k % 4 ? 0.5 : 0.0, k % 5 ? -1.0 : 0.0};
    dmatrix a = make(n + ia - 1, m + ja - 1, mb, nb, pr, pc, 0, 0, true, 0, 2, 0);
    encode(a, mb, nb, pr, pc, 0, 0, 2);
    for (bool conj : {false, true}) {
      dmatrix c = make(m + ic - 1, n + jc - 1, mb, nb, pr, pc, 0, 0, true, 0, 2, 0, a.ctxt);
      encode(c, mb, nb, pr, pc, 0, 0, 2);
      dmatrix ref = c;
      if (conj) {
        pztranc_(&m, &n, alpha, a.local.data(), &ia, &ja, a.desc, beta, ref.local.data(), &ic, &jc, ref.desc);
        conveyor_pztranc(&m, &n, alpha, a.local.data(), &ia, &ja, a.desc, beta, c.local.data(), &ic, &jc, c.desc);
      } else {
        pztranu_(&m, &n, alpha, a.local.data(), &ia, &ja, a.desc, beta, ref.local.data(), &ic, &jc, ref.desc);
        conveyor_pztranu(&m, &n, alpha, a.local.data(), &ia, &ja, a.desc, beta, c.local.data(), &ic, &jc, c.desc);
      }
      EXPECT_EQ(c.local, ref.local) << "case " << k << (conj ? " tranc" : " tranu") << ": " << m << "x" << n << " grid "
                                    << pr << "x" << pc << " alpha (" << alpha[0] << ", " << alpha[1] << ") beta ("
                                    << beta[0] << ", " << beta[1] << ")";
    }
    Cblacs_gridexit(a.ctxt);
  }
}

}  // namespace
}  // namespace conveyor
