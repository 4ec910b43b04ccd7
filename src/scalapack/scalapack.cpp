// ScaLAPACK drop-ins (conveyor/scalapack.h) on the Redistribute engine.
//
// A descriptor (DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD) plus its BLACS context
// becomes a block-cyclic layout of the addressed submatrix: process (r, c) of the
// grid is the MPI rank (in the context's system communicator) of the process that
// Cblacs_gridinfo places at (r, c).
// Processes outside a grid see CTXT = -1 in its descriptor, so the grid's shape and
// process map come from the grid's members: two MPI_Allreduce and one MPI_Bcast
// per grid and call. Then one plan, one execute.
// Errors are printed (the routines have no INFO argument, like ScaLAPACK's) and the
// destination is left unchanged.
#include "conveyor/scalapack.h"
#include "conveyor/scalapack.hpp"

#include <mpi.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/redistribute.hpp"

#include "scalapack/reference.h"

namespace conveyor::scalapack_detail {
namespace {

namespace rd = conveyor::redistribute;

enum { kCtxt = 1, kM = 2, kN = 3, kMB = 4, kNB = 5, kRsrc = 6, kCsrc = 7, kLld = 8 };

// The MPI communicator of a BLACS context (what= 10: its system handle).
MPI_Comm communicator_of(int ctxt) {
  int sys = 0;
  Cblacs_get(ctxt, 10, &sys);
  return Cblacs2sys_handle(sys);
}

struct grid {
  int M = 0, N = 0, MB = 1, NB = 1, RSRC = 0, CSRC = 0, nprow = 1, npcol = 1;
  std::vector<int> pnum;  // r * npcol + c -> rank
  bool mine = false;      // this process is in the grid
  int lld = 1;
};

grid describe(const int* desc, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  grid g;
  int myrow = -1, mycol = -1;
  if (desc[kCtxt] >= 0) Cblacs_gridinfo(desc[kCtxt], &g.nprow, &g.npcol, &myrow, &mycol);
  g.mine = myrow >= 0 && mycol >= 0;
  int root = g.mine ? rank : size;
  MPI_Allreduce(MPI_IN_PLACE, &root, 1, MPI_INT, MPI_MIN, comm);
  if (root == size) throw error(errc::invalid_argument, "no process belongs to the descriptor's BLACS grid");
  int header[8] = {desc[kM], desc[kN], desc[kMB], desc[kNB], desc[kRsrc], desc[kCsrc], g.nprow, g.npcol};
  MPI_Bcast(header, 8, MPI_INT, root, comm);
  g.M = header[0], g.N = header[1], g.MB = header[2], g.NB = header[3], g.RSRC = header[4], g.CSRC = header[5];
  g.nprow = header[6], g.npcol = header[7];
  // Which rank of `comm` is process (r, c): each grid member writes its own slot.
  // (Cblacs_pnum numbers processes within the context, not in the system
  // communicator, so it cannot be used for grids over a subset of processes.)
  g.pnum.assign(static_cast<std::size_t>(g.nprow) * static_cast<std::size_t>(g.npcol), -1);
  if (g.mine) g.pnum[static_cast<std::size_t>(myrow * g.npcol + mycol)] = rank;
  MPI_Allreduce(MPI_IN_PLACE, g.pnum.data(), static_cast<int>(g.pnum.size()), MPI_INT, MPI_MAX, comm);
  g.lld = g.mine ? desc[kLld] : 1;
  return g;
}

// The m x n submatrix at (i, j) (1-based) of a distributed matrix.
rd::layout submatrix(const grid& g, int m, int n, int i, int j, const void* local) {
  if (i < 1 || j < 1 || i - 1 + m > g.M || j - 1 + n > g.N) {
    throw error(errc::invalid_argument, "submatrix (" + std::to_string(i) + ", " + std::to_string(j) + ") of " +
                                            std::to_string(m) + " x " + std::to_string(n) + " exceeds the " +
                                            std::to_string(g.M) + " x " + std::to_string(g.N) + " matrix");
  }
  rd::layout::block_cyclic_params p;
  p.M = m;
  p.N = n;
  p.mb = g.MB;
  p.nb = g.NB;
  p.prow = g.nprow;
  p.pcol = g.npcol;
  p.rsrc = g.RSRC;
  p.csrc = g.CSRC;
  p.row_offset = i - 1;
  p.col_offset = j - 1;
  p.local = g.mine ? const_cast<void*>(local) : nullptr;
  p.lld = g.lld;
  const std::vector<int> map = g.pnum;
  const int npcol = g.npcol;
  p.rank_of_grid = [map, npcol](int r, int c) { return map[static_cast<std::size_t>(r * npcol + c)]; };
  return rd::layout::block_cyclic(p);
}

// Plans of recent calls, reused when a call repeats with the same arguments and
// buffers (the common case: an application redistributing the same matrices every
// step). A plan keeps its layouts, communicator and buffers; the cache is emptied
// in MPI_Finalize through an attribute on MPI_COMM_SELF, before MPI goes away.
struct cached_plan {
  std::vector<long long> key;
  std::unique_ptr<rd::layout> src, dst;
  std::unique_ptr<rd::plan> plan;
};

struct plan_cache {
  static constexpr std::size_t kEntries = 8;
  std::list<cached_plan> entries;  // most recent first
  int keyval = MPI_KEYVAL_INVALID;

  static int clear_at_finalize(MPI_Comm, int, void*, void*) {
    instance().entries.clear();
    return MPI_SUCCESS;
  }
  static plan_cache& instance() {
    static plan_cache c;
    return c;
  }
  rd::plan* find(const std::vector<long long>& key) {
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->key == key) {
        entries.splice(entries.begin(), entries, it);
        return entries.front().plan.get();
      }
    }
    return nullptr;
  }
  void add(cached_plan entry) {
    if (keyval == MPI_KEYVAL_INVALID) {
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, clear_at_finalize, &keyval, nullptr);
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
    }
    entries.push_front(std::move(entry));
    if (entries.size() > kEntries) entries.pop_back();
  }
};

// Everything a call's plan depends on: sizes, offsets, descriptors, buffers, scalars.
std::vector<long long> call_key(std::initializer_list<long long> scalars, const int* d1, const int* d2,
                                const void* p1, const void* p2) {
  std::vector<long long> k(scalars);
  for (int i = 0; i < 9; ++i) k.push_back(d1[i]);
  for (int i = 0; i < 9; ++i) k.push_back(d2[i]);
  k.push_back(static_cast<long long>(reinterpret_cast<std::uintptr_t>(p1)));
  k.push_back(static_cast<long long>(reinterpret_cast<std::uintptr_t>(p2)));
  return k;
}

// Runs the cached plan for `key`, or builds (collectively) and caches a new one.
// Every rank takes the same branch: a hit needs the same arguments everywhere,
// which ScaLAPACK requires anyway; an allreduce makes the decision agree.
void run_cached(std::vector<long long> key, MPI_Comm comm, const std::function<cached_plan()>& build) {
  plan_cache& cache = plan_cache::instance();
  rd::plan* p = cache.find(key);
  int hit = p ? 1 : 0, all = 0;
  MPI_Allreduce(&hit, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    cached_plan entry = build();
    entry.key = std::move(key);
    p = entry.plan.get();
    if (!hit) cache.add(std::move(entry));
    else { entry.plan->execute(); return; }  // this rank had it, another did not: use the fresh one once
  }
  p->execute();
}

// A cache entry owning the two layouts and the plan of `tr` between them.
cached_plan planned(rd::layout src, rd::layout dst, rd::transform tr, MPI_Comm comm) {
  cached_plan c;
  c.src = std::make_unique<rd::layout>(std::move(src));
  c.dst = std::make_unique<rd::layout>(std::move(dst));
  tr.src = c.src.get();
  tr.dst = c.dst.get();
  c.plan = std::make_unique<rd::plan>(tr, comm);
  return c;
}

template <class Body>
void guarded(const char* name, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  }
}

void gemr2d(const char* name, dtype t, const int* m, const int* n, const void* a, const int* ia, const int* ja,
            const int* desca, void* b, const int* ib, const int* jb, const int* descb, const int* ictxt) {
  guarded(name, [&] {
    if (*m <= 0 || *n <= 0) return;
    const MPI_Comm comm = communicator_of(*ictxt);
    run_cached(call_key({static_cast<int>(t), *m, *n, *ia, *ja, *ib, *jb, *ictxt}, desca, descb, a, b), comm, [&] {
      const grid ga = describe(desca, comm), gb = describe(descb, comm);
      rd::transform tr;
      tr.type = t;
      return planned(submatrix(ga, *m, *n, *ia, *ja, a), submatrix(gb, *m, *n, *ib, *jb, b), tr, comm);
    });
  });
}

// C = beta * C + alpha * op(A)^T; alpha, beta complex (imaginary parts 0 for real types).
void tran(const char* name, dtype t, const int* m, const int* n, std::complex<double> alpha, const void* a, const int* ia,
          const int* ja, const int* desca, std::complex<double> beta, void* c, const int* ic, const int* jc,
          const int* descc, bool conjugate) {
  guarded(name, [&] {
    if (*m <= 0 || *n <= 0) return;
    const MPI_Comm comm = communicator_of(desca[kCtxt]);
    // alpha and beta are part of the key by their bits.
    long long bits[4] = {};
    const double scalars[4] = {alpha.real(), alpha.imag(), beta.real(), beta.imag()};
    std::memcpy(bits, scalars, sizeof scalars);
    run_cached(call_key({100 + static_cast<int>(t), *m, *n, *ia, *ja, *ic, *jc, bits[0], bits[1], bits[2], bits[3], conjugate},
                        desca, descc, a, c),
               comm, [&] {
      const grid ga = describe(desca, comm), gc = describe(descc, comm);
      rd::transform tr;
      tr.perm = {1, 0};
      tr.alpha = alpha.real();
      tr.alpha_imag = alpha.imag();
      tr.beta = beta.real();
      tr.beta_imag = beta.imag();
      tr.conjugate = conjugate;
      tr.type = t;
      return planned(submatrix(ga, *n, *m, *ia, *ja, a), submatrix(gc, *m, *n, *ic, *jc, c), tr, comm);
    });
  });
}

}  // namespace
}  // namespace conveyor::scalapack_detail

#ifndef CONVEYOR_SCALAPACK_NAME  // (the C++ entry points: in conveyor_scalapack only, not the compat library)
namespace conveyor::scalapack {

MPI_Comm context_communicator(int ctxt) { return scalapack_detail::communicator_of(ctxt); }

redistribute::layout layout_from_descriptor(const int* desc, void* local, MPI_Comm comm, int m, int n, int ia, int ja) {
  if (!desc) throw error(errc::invalid_argument, "layout_from_descriptor: descriptor is null");
  const scalapack_detail::grid g = scalapack_detail::describe(desc, comm);
  return scalapack_detail::submatrix(g, m < 0 ? g.M - ia + 1 : m, n < 0 ? g.N - ja + 1 : n, ia, ja, local);
}

}  // namespace conveyor::scalapack
#endif

using conveyor::dtype;
namespace sd = conveyor::scalapack_detail;

// The entry points, once: CONVEYOR_SCALAPACK_NAME(x) is conveyor_x here and x_ in
// compat.cpp (the library that interposes on ScaLAPACK's own symbols).
#ifndef CONVEYOR_SCALAPACK_NAME
#define CONVEYOR_SCALAPACK_NAME(x) conveyor_##x
#define CONVEYOR_SCALAPACK_EXPORT CONVEYOR_SCALAPACK_API
#endif
#define CONVEYOR_STR2(x) #x
#define CONVEYOR_STR(x) CONVEYOR_STR2(x)

extern "C" {

#define CONVEYOR_GEMR2D(x, T, dt)                                                                                    \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(x)(const int* m, const int* n, const T* a, const int* ia,     \
                                                            const int* ja, const int* desca, T* b, const int* ib,     \
                                                            const int* jb, const int* descb, const int* ictxt) {      \
    sd::gemr2d(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(x)), dt, m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);         \
  }
CONVEYOR_GEMR2D(psgemr2d, float, dtype::float32)
CONVEYOR_GEMR2D(pdgemr2d, double, dtype::float64)
CONVEYOR_GEMR2D(pcgemr2d, float, dtype::complex64)
CONVEYOR_GEMR2D(pzgemr2d, double, dtype::complex128)
#undef CONVEYOR_GEMR2D

#define CONVEYOR_TRAN(x, T, dt)                                                                                      \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(x)(const int* m, const int* n, const T* alpha, const T* a,    \
                                                            const int* ia, const int* ja, const int* desca,           \
                                                            const T* beta, T* c, const int* ic, const int* jc,        \
                                                            const int* descc) {                                       \
    sd::tran(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(x)), dt, m, n, *alpha, a, ia, ja, desca, *beta, c, ic, jc, descc,  \
             false);                                                                                                  \
  }
CONVEYOR_TRAN(pstran, float, dtype::float32)
CONVEYOR_TRAN(pdtran, double, dtype::float64)
#undef CONVEYOR_TRAN

// Complex: alpha and beta are (re, im) pairs; tranu transposes, tranc also conjugates.
#define CONVEYOR_CTRAN(x, F, dt, conj)                                                                               \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(x)(const int* m, const int* n, const F* alpha, const F* a,    \
                                                            const int* ia, const int* ja, const int* desca,           \
                                                            const F* beta, F* c, const int* ic, const int* jc,        \
                                                            const int* descc) {                                       \
    sd::tran(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(x)), dt, m, n, {alpha[0], alpha[1]}, a, ia, ja, desca,              \
             {beta[0], beta[1]}, c, ic, jc, descc, conj);                                                             \
  }
CONVEYOR_CTRAN(pctranu, float, dtype::complex64, false)
CONVEYOR_CTRAN(pztranu, double, dtype::complex128, false)
CONVEYOR_CTRAN(pctranc, float, dtype::complex64, true)
CONVEYOR_CTRAN(pztranc, double, dtype::complex128, true)
#undef CONVEYOR_CTRAN

}  // extern "C"
