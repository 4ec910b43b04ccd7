// SPDX-License-Identifier: BSD-3-Clause
// ScaLAPACK drop-ins (conveyor/scalapack.h) on the Redistribute engine.
//
// A call runs in three steps:
//   1. one BLACS exchange over the processes of the call's context
//      (grid_exchange.hpp): every process learns both grids, every problem of the
//      call (the same message everywhere: nobody waits for a process that gave up),
//      and whether every process found the call in its plan cache;
//   2. the plan: the cached one, or a new one on the communicator of exactly the
//      context's processes (call_cache.hpp: agreed hits, inserts and evictions);
//   3. execute; for p?trmr2d, copy the trapezoid out of a scratch copy of B.
// Processes outside a grid pass CTXT = -1 in its descriptor (ScaLAPACK's rule) and
// take part; processes outside the context are never involved. Errors are printed
// (the routines have no INFO argument, like ScaLAPACK's) and leave B unchanged.
#include "conveyor/settings.hpp"
#include "conveyor/scalapack.h"
#include "conveyor/scalapack.hpp"

#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

// This file is compiled twice (src/CMakeLists.txt): into conveyor_scalapack
// under Conveyor's names (conveyor_pdgemr2d_, ...), and with
// CONVEYOR_SCALAPACK_COMPAT into conveyor_scalapack_compat, the library that
// interposes on ScaLAPACK's own symbols (pdgemr2d_, pdtran_, Cpdgemr2d, ...):
// linked before ScaLAPACK (or preloaded) it makes an unchanged ScaLAPACK program
// use Conveyor for these routines, every other routine still ScaLAPACK's. Under
// ScaLAPACK's names the drop-ins read p?gemr2d / p?trmr2d descriptors as the
// reference does (descriptor_rules in grid_exchange.hpp).
#ifdef CONVEYOR_SCALAPACK_COMPAT
#define CONVEYOR_SCALAPACK_NAME(x) x##_
#define CONVEYOR_SCALAPACK_CNAME(x) x
#define CONVEYOR_SCALAPACK_EXPORT __attribute__((visibility("default")))
constexpr bool kUnderScalapackNames = true;
#else
constexpr bool kUnderScalapackNames = false;
#endif

#include "conveyor/contract.hpp"
#include "conveyor/redistribute.hpp"

#include "scalapack/call_cache.hpp"
#include "scalapack/grid_exchange.hpp"
#include "scalapack/blacs.h"

namespace conveyor::scalapack::detail {
namespace {

namespace rd = conveyor::redistribute;

enum routine_id : int { kGemr = 1, kTrmr = 2, kTran = 3 };

// One call of any of the routines, arguments by value.
struct call {
  routine_id routine = kGemr;
  dtype type = dtype::float64;
  int m = 0, n = 0, ia = 1, ja = 1, ib = 1, jb = 1;
  char uplo = 'U', diag = 'N';  // trmr2d
  const void* a = nullptr;
  const int* desca = nullptr;
  void* b = nullptr;
  const int* descb = nullptr;
  int ctxt = -1;
  std::complex<double> alpha = 1, beta = 0;  // tran
  bool conjugate = false;
};

// The rows x cols submatrix at (i, j) (1-based) of a grid's matrix; grid
// position (r, c) is rank member[r * npcol + c] of the call's communicator.
rd::layout submatrix(const grid_view& g, int rows, int cols, int i, int j, const void* local) {
  if (i < 1 || j < 1 || i - 1 + rows > g.M || j - 1 + cols > g.N) {
    throw error(errc::invalid_argument, "submatrix (" + std::to_string(i) + ", " + std::to_string(j) + ") of " +
                                            std::to_string(rows) + " x " + std::to_string(cols) + " exceeds the " +
                                            std::to_string(g.M) + " x " + std::to_string(g.N) + " matrix");
  }
  rd::layout::block_cyclic_params p;
  p.M = rows;
  p.N = cols;
  p.mb = g.mb;
  p.nb = g.nb;
  p.imb = g.imb;
  p.inb = g.inb;
  p.prow = g.nprow;
  p.pcol = g.npcol;
  p.rsrc = g.rsrc;
  p.csrc = g.csrc;
  p.row_offset = i - 1;
  p.col_offset = j - 1;
  p.local = g.my_row >= 0 ? const_cast<void*>(local) : nullptr;
  p.lld = g.lld;
  const std::vector<int> map = g.member;
  const int npcol = g.npcol;
  p.rank_of_grid = [map, npcol](int r, int c) { return map[static_cast<std::size_t>(r * npcol + c)]; };
  return rd::layout::block_cyclic(p);
}

// Rows [first, last) of column j (0-based) of an m x n trapezoid, ScaLAPACK's
// p?trmr2d rule: the upper part reaches max(m - n, 0) rows below the diagonal,
// the lower part starts max(n - m, 0) columns right of it; DIAG = 'U' leaves the
// diagonal out for UPLO = 'U' (and 'N' for UPLO = 'L' keeps it, as ScaLAPACK
// tests the two letters). Each column's part is one run of rows.
std::pair<std::int64_t, std::int64_t> trapezoid_rows(char uplo, char diag, int m, int n, std::int64_t j) {
  const auto upper = [](char c) { return std::toupper(static_cast<unsigned char>(c)); };
  if (upper(uplo) == 'U') return {0, std::min<std::int64_t>(m, std::max(m - n, 0) + j + (upper(diag) == 'N' ? 1 : 0))};
  return {std::max<std::int64_t>(0, j - std::max(n - m, 0) + (upper(diag) == 'U' ? 1 : 0)), m};
}

// Everything a cached plan depends on, as this process sees it.
std::vector<long long> key_of(const call& c) {
  std::vector<long long> k = {
      c.routine, static_cast<int>(c.type), c.m, c.n, c.ia, c.ja, c.ib, c.jb, c.uplo, c.diag, c.conjugate, c.ctxt};
  const double scalars[4] = {c.alpha.real(), c.alpha.imag(), c.beta.real(), c.beta.imag()};
  long long bits[4];
  std::memcpy(bits, scalars, sizeof bits);
  k.insert(k.end(), bits, bits + 4);
  // Each descriptor with this process's own position in its grid: if every
  // process still sits where it sat, the grid (and so the plan) is the same.
  for (const int* d : {c.desca, c.descb}) {
    if (!d || d[1] < 0) {
      k.push_back(-1);
      continue;
    }
    int nprow = 0, npcol = 0, row = -1, col = -1;
    Cblacs_gridinfo(d[1], &nprow, &npcol, &row, &col);
    k.insert(k.end(), {nprow, npcol, row, col});
    k.insert(k.end(), d + 2, d + (d[0] == 2 ? 11 : 9));
  }
  k.push_back(static_cast<long long>(reinterpret_cast<std::uintptr_t>(c.a)));
  k.push_back(static_cast<long long>(reinterpret_cast<std::uintptr_t>(c.b)));
  return k;
}

// A new plan for call `c` on `comm` (collective), cold (packed: nothing to set
// up) or warm (the cost model's transport).
void plan_call(cached_call& entry, const call& c, const exchange_result& x, MPI_Comm comm, bool warm) {
  rd::transform tr;
  tr.type = c.type;
  rd::plan_options options;
  options.transport = warm ? rd::transport::automatic : rd::transport::packed;
  if (c.routine == kTran) {
    // C(ic.., jc..) (m x n) = beta C + alpha op(A(ia.., ja..)), A being n x m.
    entry.src = std::make_unique<rd::layout>(submatrix(x.a, c.n, c.m, c.ia, c.ja, c.a));
    entry.dst = std::make_unique<rd::layout>(submatrix(x.b, c.m, c.n, c.ib, c.jb, c.b));
    tr.perm = {1, 0};
    tr.alpha = c.alpha.real();
    tr.alpha_imag = c.alpha.imag();
    tr.beta = c.beta.real();
    tr.beta_imag = c.beta.imag();
    tr.conjugate = c.conjugate;
  } else if (c.routine == kGemr) {
    entry.src = std::make_unique<rd::layout>(submatrix(x.a, c.m, c.n, c.ia, c.ja, c.a));
    entry.dst = std::make_unique<rd::layout>(submatrix(x.b, c.m, c.n, c.ib, c.jb, c.b));
  } else {
    // Trapezoid: the whole m x n rectangle into a scratch copy of B's local
    // array, then only the trapezoid's elements into B.
    entry.src = std::make_unique<rd::layout>(submatrix(x.a, c.m, c.n, c.ia, c.ja, c.a));
    const rd::layout probe = submatrix(x.b, c.m, c.n, c.ib, c.jb, c.b);
    const std::size_t esize = dtype_size(c.type);
    int me = 0;
    MPI_Comm_rank(comm, &me);
    const auto es = static_cast<std::int64_t>(esize);
    std::int64_t span = 0;
    for (const rd::block_index& blk : probe.blocks_of(me)) {
      const rd::block_storage s = probe.storage(blk);
      const std::int64_t row0 = probe.splits(0).start(blk[0]), col0 = probe.splits(1).start(blk[1]);
      const std::int64_t rows = probe.splits(0).length(blk[0]), cols = probe.splits(1).length(blk[1]);
      span = std::max(span, s.offset + (rows - 1) * s.strides[0] + (cols - 1) * s.strides[1] + 1);
      for (std::int64_t j = 0; j < cols; ++j) {  // (block-cyclic storage: rows contiguous, stride 1)
        const auto [first, last] = trapezoid_rows(c.uplo, c.diag, c.m, c.n, col0 + j);
        const std::int64_t i0 = std::max<std::int64_t>(first - row0, 0), i1 = std::min(last - row0, rows);
        if (i1 > i0) entry.copy_runs.push_back({(s.offset + i0 + j * s.strides[1]) * es, (i1 - i0) * es});
      }
    }
    entry.scratch.assign(static_cast<std::size_t>(span) * esize, 0);
    entry.dst = std::make_unique<rd::layout>(submatrix(x.b, c.m, c.n, c.ib, c.jb, entry.scratch.data()));
  }
  tr.src = entry.src.get();
  tr.dst = entry.dst.get();
  // The call's exchange has agreed on everything the plan would agree on.
  collective_call agreed("redistribute::plan", comm);
  agreed.agreed_by_caller();
  entry.plan = std::make_unique<rd::plan>(tr, comm, options);
  entry.warm = warm;
}

// The phases of a call whose wall time the report adds up: agreeing on the call
// (the grid exchange), making process sets' communicators, planning, moving.
enum call_phase { kAgree, kProcessSet, kPlan, kMove, kPhases };

// Calls made, per routine family, and their time by phase, for
// CONVEYOR_SCALAPACK_REPORT.
struct call_counts {
  long long calls[4] = {}, planned = 0, cached = 0, empty = 0;
  double seconds[kPhases] = {};
  int world_rank = -1;  // read while MPI runs (the report prints after MPI_Finalize)
  static call_counts& instance() {
    static call_counts c;
    return c;
  }
};

void report_at_exit() {
  const call_counts& c = call_counts::instance();
  std::fprintf(
      stderr,
      "conveyor scalapack report: rank %d: gemr2d %lld, trmr2d %lld, tran %lld calls (%lld planned, %lld cached, "
      "%lld empty); seconds: agreeing %.4f, process sets %.4f, planning %.4f, moving %.4f\n",
      c.world_rank, c.calls[kGemr], c.calls[kTrmr], c.calls[kTran], c.planned, c.cached, c.empty, c.seconds[kAgree],
      c.seconds[kProcessSet], c.seconds[kPlan], c.seconds[kMove]);
}

enum class call_kind { planned, cached, empty };

// CONVEYOR_SCALAPACK_REPORT, read at the first call (which arranges the report).
bool reporting() {
  static const bool on = [] {
    const auto v = setting("CONVEYOR_SCALAPACK_REPORT");
    const bool report = v && *v != "0";
    if (report) std::atexit(report_at_exit);
    return report;
  }();
  return on;
}

void count(routine_id r, call_kind kind) {
  (void)reporting();
  call_counts& c = call_counts::instance();
  if (c.world_rank < 0) MPI_Comm_rank(MPI_COMM_WORLD, &c.world_rank);
  ++c.calls[r];
  ++(kind == call_kind::planned ? c.planned : kind == call_kind::cached ? c.cached : c.empty);
}

void execute(cached_call& entry, const call& c) {
  entry.plan->execute();
  ++entry.uses;
  char* to = static_cast<char*>(c.b);
  for (const cached_call::byte_run& r : entry.copy_runs) {
    std::memcpy(to + r.at, entry.scratch.data() + r.at, static_cast<std::size_t>(r.bytes));
  }
}

// Adds the time since the last lap to `phase`; reads no clock unless reporting.
struct phase_clock {
  bool on = reporting();
  double last = on ? MPI_Wtime() : 0;
  void lap(call_phase phase) {
    if (!on) return;
    const double now = MPI_Wtime();
    call_counts::instance().seconds[phase] += now - last;
    last = now;
  }
};

void run(const char* name, const call& c) {
  try {
    phase_clock clock;
    if (c.m <= 0 || c.n <= 0) {  // nothing to move (ScaLAPACK returns before communicating)
      count(c.routine, call_kind::empty);
      return;
    }
    const std::vector<long long> key = key_of(c);
    process_set* candidate = candidate_set(c.ctxt);
    const call_scalars scalars{c.routine, static_cast<int>(c.type), c.m, c.n, c.ia, c.ja, c.ib, c.jb, c.uplo, c.diag};
    const descriptor_rules rules =
        kUnderScalapackNames && c.routine != kTran ? descriptor_rules::reference_redist : descriptor_rules::pblas;
    const exchange_result x = exchange(c.ctxt, scalars, c.desca, c.descb, candidate ? candidate->fingerprint : 0,
                                       find_call(candidate, key), rules);
    clock.lap(kAgree);
    if (!x.problem.empty()) throw error(errc::invalid_argument, x.problem);
    cached_call* entry = nullptr;
    if (x.hit >= 0) {
      entry = &use_call(*candidate, x.hit);
      if (!entry->warm) plan_call(*entry, c, x, candidate->comm, /*warm=*/true);  // the call repeats: worth the setup
      count(c.routine, call_kind::cached);
    } else {
      process_set& set = set_of(c.ctxt, x.world_ranks, x.system_ranks, system_communicator(c.ctxt));
      clock.lap(kProcessSet);
      cached_call fresh;
      fresh.key = key;
      plan_call(fresh, c, x, set.comm, /*warm=*/false);
      count(c.routine, call_kind::planned);
      if (cache_capacity() == 0) {  // cold: plan, run, free
        clock.lap(kPlan);
        execute(fresh, c);
        clock.lap(kMove);
        return;
      }
      entry = &insert_call(set, std::move(fresh));
    }
    clock.lap(kPlan);
    execute(*entry, c);
    clock.lap(kMove);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  }
}

void gemr2d(const char* name, dtype t, int m, int n, const void* a, int ia, int ja, const int* desca, void* b, int ib,
            int jb, const int* descb, int ictxt) {
  call c;
  c.routine = kGemr, c.type = t, c.m = m, c.n = n, c.a = a, c.ia = ia, c.ja = ja, c.desca = desca;
  c.b = b, c.ib = ib, c.jb = jb, c.descb = descb, c.ctxt = ictxt;
  run(name, c);
}

void trmr2d(const char* name, dtype t, const char* uplo, const char* diag, int m, int n, const void* a, int ia, int ja,
            const int* desca, void* b, int ib, int jb, const int* descb, int ictxt) {
  call c;
  c.routine = kTrmr, c.type = t, c.m = m, c.n = n, c.a = a, c.ia = ia, c.ja = ja, c.desca = desca;
  c.b = b, c.ib = ib, c.jb = jb, c.descb = descb, c.ctxt = ictxt;
  c.uplo = uplo ? *uplo : 'U';
  c.diag = diag ? *diag : 'N';
  run(name, c);
}

// C = beta * C + alpha * op(A)^T on A's grid; processes outside it return at once
// (PBLAS's rule); alpha, beta complex (imaginary parts 0 for real types).
void tran(const char* name, dtype t, int m, int n, std::complex<double> alpha, const void* a, int ia, int ja,
          const int* desca, std::complex<double> beta, void* cc, int ic, int jc, const int* descc, bool conjugate) {
  if (!desca || desca[1] < 0) return;
  int nprow = 0, npcol = 0, row = -1, col = -1;
  Cblacs_gridinfo(desca[1], &nprow, &npcol, &row, &col);
  if (row < 0 || col < 0) return;
  call c;
  c.routine = kTran, c.type = t, c.m = m, c.n = n, c.a = a, c.ia = ia, c.ja = ja, c.desca = desca;
  c.b = cc, c.ib = ic, c.jb = jc, c.descb = descc, c.ctxt = desca[1];
  c.alpha = alpha, c.beta = beta, c.conjugate = conjugate;
  run(name, c);
}

#ifndef CONVEYOR_SCALAPACK_COMPAT  // (conveyor_scalapack only: layout_from_descriptor)
// layout_from_descriptor's grid: the caller's communicator, not a BLACS exchange.
grid_view describe_on(const int* desc, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  grid_view g;
  if (desc && desc[1] >= 0) Cblacs_gridinfo(desc[1], &g.nprow, &g.npcol, &g.my_row, &g.my_col);
  const bool mine = g.my_row >= 0 && g.my_col >= 0;
  int root = mine ? rank : size;
  MPI_Allreduce(MPI_IN_PLACE, &root, 1, MPI_INT, MPI_MIN, comm);
  if (root == size) throw error(errc::invalid_argument, "no process belongs to the descriptor's BLACS grid");
  std::string problem;
  const descriptor d = mine ? read_descriptor(desc, problem, "the matrix") : descriptor{};
  int header[10] = {d.M, d.N, d.imb, d.inb, d.mb, d.nb, d.rsrc, d.csrc, g.nprow, g.npcol};
  MPI_Bcast(header, 10, MPI_INT, root, comm);
  g.M = header[0], g.N = header[1], g.imb = header[2], g.inb = header[3], g.mb = header[4], g.nb = header[5];
  g.rsrc = header[6], g.csrc = header[7], g.nprow = header[8], g.npcol = header[9];
  // Which rank of `comm` is process (r, c): each grid member writes its own slot.
  g.member.assign(static_cast<std::size_t>(g.nprow) * static_cast<std::size_t>(g.npcol), -1);
  if (mine) g.member[static_cast<std::size_t>(g.my_row * g.npcol + g.my_col)] = rank;
  MPI_Allreduce(MPI_IN_PLACE, g.member.data(), static_cast<int>(g.member.size()), MPI_INT, MPI_MAX, comm);
  if (!mine) g.my_row = g.my_col = -1;
  g.lld = mine ? d.lld : 1;
  return g;
}
#endif

}  // namespace
}  // namespace conveyor::scalapack::detail

#ifndef CONVEYOR_SCALAPACK_COMPAT  // (the C++ entry points: in conveyor_scalapack only, not the compat library)
namespace conveyor::scalapack {

MPI_Comm context_communicator(int ctxt) { return scalapack::detail::system_communicator(ctxt); }

redistribute::layout layout_from_descriptor(const int* desc, void* local, MPI_Comm comm, int m, int n, int ia, int ja) {
  if (!desc) throw error(errc::invalid_argument, "layout_from_descriptor: descriptor is null");
  const scalapack::detail::grid_view g = scalapack::detail::describe_on(desc, comm);
  return scalapack::detail::submatrix(g, m < 0 ? g.M - ia + 1 : m, n < 0 ? g.N - ja + 1 : n, ia, ja, local);
}

}  // namespace conveyor::scalapack

extern "C" CONVEYOR_SCALAPACK_API void conveyor_scalapack_set_cache_size(int calls) {
  conveyor::scalapack::detail::set_cache_capacity(static_cast<std::size_t>(std::max(calls, 0)));
}
#endif

using conveyor::dtype;
namespace sd = conveyor::scalapack::detail;

// The entry points, once: CONVEYOR_SCALAPACK_NAME(x) is conveyor_x in
// conveyor_scalapack and x_ in the compat library; the C entry points
// (ScaLAPACK's Cp?gemr2d / Cp?trmr2d, arguments by value) are
// CONVEYOR_SCALAPACK_CNAME(x): conveyor_x, or x.
#ifndef CONVEYOR_SCALAPACK_COMPAT
#define CONVEYOR_SCALAPACK_NAME(x) conveyor_##x
#define CONVEYOR_SCALAPACK_CNAME(x) conveyor_##x
#define CONVEYOR_SCALAPACK_EXPORT CONVEYOR_SCALAPACK_API
#endif
// The element types of ScaLAPACK's redistribution routines: the routine's
// letter, the C type of A and B (complex ones as pairs of reals), Conveyor's dtype.
#define CONVEYOR_FOR_EACH_REDISTRIBUTION_TYPE(X) \
  X(s, float, dtype::float32)                    \
  X(d, double, dtype::float64)                   \
  X(c, float, dtype::complex64)                  \
  X(z, double, dtype::complex128)                \
  X(i, int, dtype::int32)
#define CONVEYOR_STR2(x) #x
#define CONVEYOR_STR(x) CONVEYOR_STR2(x)

extern "C" {

// p?gemr2d (Fortran: by pointer) and Cp?gemr2d (C: by value); complex types as
// interleaved (re, im) pairs of the real type.
#define CONVEYOR_GEMR2D(x, T, dt)                                                                                   \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(p##x##gemr2d)(                                             \
      const int* m, const int* n, const T* a, const int* ia, const int* ja, const int* desca, T* b, const int* ib,  \
      const int* jb, const int* descb, const int* ictxt) {                                                          \
    sd::gemr2d(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(p##x##gemr2d)), dt, *m, *n, a, *ia, *ja, desca, b, *ib, *jb,    \
               descb, *ictxt);                                                                                      \
  }                                                                                                                 \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_CNAME(Cp##x##gemr2d)(                                           \
      int m, int n, T* a, int ia, int ja, int* desca, T* b, int ib, int jb, int* descb, int ictxt) {                \
    sd::gemr2d(CONVEYOR_STR(CONVEYOR_SCALAPACK_CNAME(Cp##x##gemr2d)), dt, m, n, a, ia, ja, desca, b, ib, jb, descb, \
               ictxt);                                                                                              \
  }
CONVEYOR_FOR_EACH_REDISTRIBUTION_TYPE(CONVEYOR_GEMR2D)
#undef CONVEYOR_GEMR2D

// p?trmr2d / Cp?trmr2d: the trapezoid of the submatrix (UPLO, DIAG as ScaLAPACK).
// (Fortran passes the lengths of UPLO and DIAG as extra trailing arguments; they
// are not needed for one character each.)
#define CONVEYOR_TRMR2D(x, T, dt)                                                                                    \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(p##x##trmr2d)(                                              \
      const char* uplo, const char* diag, const int* m, const int* n, const T* a, const int* ia, const int* ja,      \
      const int* desca, T* b, const int* ib, const int* jb, const int* descb, const int* ictxt) {                    \
    sd::trmr2d(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(p##x##trmr2d)), dt, uplo, diag, *m, *n, a, *ia, *ja, desca, b,   \
               *ib, *jb, descb, *ictxt);                                                                             \
  }                                                                                                                  \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_CNAME(Cp##x##trmr2d)(char* uplo, char* diag, int m, int n, T* a, \
                                                                         int ia, int ja, int* desca, T* b, int ib,   \
                                                                         int jb, int* descb, int ictxt) {            \
    sd::trmr2d(CONVEYOR_STR(CONVEYOR_SCALAPACK_CNAME(Cp##x##trmr2d)), dt, uplo, diag, m, n, a, ia, ja, desca, b, ib, \
               jb, descb, ictxt);                                                                                    \
  }
CONVEYOR_FOR_EACH_REDISTRIBUTION_TYPE(CONVEYOR_TRMR2D)
#undef CONVEYOR_TRMR2D

#define CONVEYOR_TRAN(x, T, dt)                                                                                    \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(x)(                                                       \
      const int* m, const int* n, const T* alpha, const T* a, const int* ia, const int* ja, const int* desca,      \
      const T* beta, T* c, const int* ic, const int* jc, const int* descc) {                                       \
    sd::tran(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(x)), dt, *m, *n, *alpha, a, *ia, *ja, desca, *beta, c, *ic, *jc, \
             descc, false);                                                                                        \
  }
CONVEYOR_TRAN(pstran, float, dtype::float32)
CONVEYOR_TRAN(pdtran, double, dtype::float64)
#undef CONVEYOR_TRAN

// Complex: alpha and beta are (re, im) pairs; tranu transposes, tranc also conjugates.
#define CONVEYOR_CTRAN(x, F, dt, conj)                                                                        \
  CONVEYOR_SCALAPACK_EXPORT void CONVEYOR_SCALAPACK_NAME(x)(                                                  \
      const int* m, const int* n, const F* alpha, const F* a, const int* ia, const int* ja, const int* desca, \
      const F* beta, F* c, const int* ic, const int* jc, const int* descc) {                                  \
    sd::tran(CONVEYOR_STR(CONVEYOR_SCALAPACK_NAME(x)), dt, *m, *n, {alpha[0], alpha[1]}, a, *ia, *ja, desca,  \
             {beta[0], beta[1]}, c, *ic, *jc, descc, conj);                                                   \
  }
CONVEYOR_CTRAN(pctranu, float, dtype::complex64, false)
CONVEYOR_CTRAN(pztranu, double, dtype::complex128, false)
CONVEYOR_CTRAN(pctranc, float, dtype::complex64, true)
CONVEYOR_CTRAN(pztranc, double, dtype::complex128, true)
#undef CONVEYOR_CTRAN

}  // extern "C"
