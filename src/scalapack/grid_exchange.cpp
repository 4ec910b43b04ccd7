// SPDX-License-Identifier: BSD-3-Clause
#include "scalapack/grid_exchange.hpp"

#include <climits>
#include <string>

#include "conveyor/types.hpp"
#include "scalapack/blacs.h"

namespace conveyor::scalapack::detail {
namespace {

enum { kDtype = 0, kCtxt = 1 };

// One process's row of the exchange.
enum : int {
  kPresent,
  kWorld,
  kSystem,
  kCandidateLo,
  kCandidateHi,
  kHit,
  kProblem,
  kProblemValue,
  kScalars,  // call_scalars, kScalarCount ints
  kScalarCount = 10,
  kGridA = kScalars + kScalarCount,  // kGridInts ints per grid
  kGridInts = 13,
  kGridB = kGridA + kGridInts,
  kRecordInts = kGridB + kGridInts,
};
// Offsets inside a grid's part.
enum { gIn, gRow, gCol, gNprow, gNpcol, gM, gN, gImb, gInb, gMb, gNb, gRsrc, gCsrc };

// Local problems travel as a code (which descriptor, what is wrong) and a value.
enum reason : int { kNone = 0, kBadType, kNegativeSize, kBadBlock, kBadSource, kBadLld, kNullDescriptor };

std::string reason_text(int code, int value) {
  const char* which = code % 4 == 1 ? "A" : "B";
  switch (code / 4) {
    case kBadType:
      return std::string("descriptor of ") + which + " has DTYPE " + std::to_string(value) + " (1 or 2 expected)";
    case kNegativeSize:
      return std::string("descriptor of ") + which + " has a negative dimension (" + std::to_string(value) + ")";
    case kBadBlock:
      return std::string("descriptor of ") + which + " has a block size " + std::to_string(value) + " < 1";
    case kBadSource:
      return std::string("descriptor of ") + which + " has a source process " + std::to_string(value) +
             " outside its grid";
    case kBadLld:
      return std::string("descriptor of ") + which + " has LLD " + std::to_string(value) + " below the local rows";
    case kNullDescriptor:
      return std::string("descriptor of ") + which + " is null";
    default:
      return "invalid argument";
  }
}

int numroc(int n, int first, int nb, int me, int src, int P) {
  // Rows of a first-block-`first` cyclic distribution that process `me` holds.
  if (n <= 0) return 0;
  const int dist = ((me - src) % P + P) % P;
  if (n <= first) return dist == 0 ? n : 0;
  const int rest = n - first;  // after the first block
  const int full = rest / nb, tail = rest % nb;
  // Blocks 1, 2, ... go to src+1, src+2, ...: process at distance d gets blocks k = d, d+P, ... (k >= 1).
  int mine = (dist == 0 ? first : 0);
  const int k0 = dist == 0 ? P : dist;  // first block index >= 1 on this process
  if (k0 <= full) mine += ((full - k0) / P + 1) * nb;
  if (tail > 0 && (full + 1 - k0) >= 0 && (full + 1 - k0) % P == 0) mine += tail;
  return mine;
}

// Fills a grid's part of my row from my descriptor; returns a problem code.
int describe(const int* desc, int which, int* g, int& value, descriptor_rules rules) {
  const bool pblas = rules == descriptor_rules::pblas;
  for (int i = 0; i < kGridInts; ++i) g[i] = 0;
  g[gIn] = 0;
  if (!desc) {
    value = 0;
    return kNullDescriptor * 4 + which;
  }
  if (desc[kCtxt] < 0) return kNone;
  int nprow = 0, npcol = 0, row = -1, col = -1;
  Cblacs_gridinfo(desc[kCtxt], &nprow, &npcol, &row, &col);
  if (row < 0 || col < 0 || row >= nprow || col >= npcol) return kNone;  // not in this grid
  std::string ignored;
  const descriptor d = read_descriptor(desc, ignored, "", rules);
  g[gIn] = 1, g[gRow] = row, g[gCol] = col, g[gNprow] = nprow, g[gNpcol] = npcol;
  g[gM] = d.M, g[gN] = d.N, g[gImb] = d.imb, g[gInb] = d.inb, g[gMb] = d.mb, g[gNb] = d.nb;
  g[gRsrc] = d.rsrc, g[gCsrc] = d.csrc;
  if (pblas && desc[kDtype] != 1 && desc[kDtype] != 2) return value = desc[kDtype], kBadType * 4 + which;
  if (d.M < 0 || d.N < 0) return value = d.M < 0 ? d.M : d.N, kNegativeSize * 4 + which;
  for (int b : {d.mb, d.nb, d.imb, d.inb}) {
    if (b < 1) return value = b, kBadBlock * 4 + which;
  }
  if (d.rsrc < 0 || d.rsrc >= nprow) return value = d.rsrc, kBadSource * 4 + which;
  if (d.csrc < 0 || d.csrc >= npcol) return value = d.csrc, kBadSource * 4 + which;
  const int local_rows = numroc(d.M, d.imb, d.mb, row, d.rsrc, nprow);
  // reference_redist: LLD matters only where it is used, on a process that holds
  // elements (descriptor_rules).
  const bool holds_elements = local_rows > 0 && numroc(d.N, d.inb, d.nb, col, d.csrc, npcol) > 0;
  const int lowest_lld = pblas ? std::max(1, local_rows) : holds_elements ? local_rows : INT_MIN;
  if (d.lld < lowest_lld) return value = d.lld, kBadLld * 4 + which;
  return kNone;
}

// The grid described by the rows of its members; a problem if they disagree.
grid_view assemble(const std::vector<int>& rows, int np, int part, int me, const int* my_desc, std::string& problem,
                   const char* which, descriptor_rules rules) {
  grid_view g;
  int leader = -1;
  for (int p = 0; p < np; ++p) {
    const int* r = &rows[static_cast<std::size_t>(p * kRecordInts + part)];
    if (r[gIn] != 1) continue;
    if (leader < 0) {
      leader = p;
      g.nprow = r[gNprow], g.npcol = r[gNpcol], g.M = r[gM], g.N = r[gN], g.imb = r[gImb], g.inb = r[gInb];
      g.mb = r[gMb], g.nb = r[gNb], g.rsrc = r[gRsrc], g.csrc = r[gCsrc];
      g.member.assign(static_cast<std::size_t>(g.nprow) * static_cast<std::size_t>(g.npcol), -1);
    } else if (r[gNprow] != g.nprow || r[gNpcol] != g.npcol || r[gM] != g.M || r[gN] != g.N || r[gImb] != g.imb ||
               r[gInb] != g.inb || r[gMb] != g.mb || r[gNb] != g.nb || r[gRsrc] != g.rsrc || r[gCsrc] != g.csrc) {
      if (problem.empty()) {
        problem = std::string("processes ") + std::to_string(leader) + " and " + std::to_string(p) +
                  " of the context pass different descriptors of " + which;
      }
      continue;
    }
    int& slot = g.member[static_cast<std::size_t>(r[gRow] * g.npcol + r[gCol])];
    if (slot >= 0 && problem.empty()) problem = std::string("two processes claim one position in the grid of ") + which;
    slot = p;
  }
  if (leader < 0) {
    if (problem.empty()) problem = std::string("no process of the context belongs to the grid of ") + which;
    return g;
  }
  for (int s : g.member) {
    if (s < 0 && problem.empty()) problem = std::string("the grid of ") + which + " has processes outside the context";
  }
  const int* mine = &rows[static_cast<std::size_t>(me * kRecordInts + part)];
  if (mine[gIn] == 1) {
    g.my_row = mine[gRow], g.my_col = mine[gCol];
    std::string ignored;
    g.lld = read_descriptor(my_desc, ignored, "", rules).lld;
  }
  return g;
}

}  // namespace

descriptor read_descriptor(const int* desc, std::string& problem, const char* which, descriptor_rules rules) {
  descriptor d;
  if (!desc) {
    problem = std::string("descriptor of ") + which + " is null";
    return d;
  }
  d.ctxt = desc[kCtxt];
  if (rules == descriptor_rules::pblas && desc[kDtype] == 2) {  // DTYPE, CTXT, M, N, IMB, INB, MB, NB, RSRC, CSRC, LLD
    d.M = desc[2], d.N = desc[3], d.imb = desc[4], d.inb = desc[5], d.mb = desc[6], d.nb = desc[7];
    d.rsrc = desc[8], d.csrc = desc[9], d.lld = desc[10];
  } else {  // DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD
    d.M = desc[2], d.N = desc[3], d.mb = desc[4], d.nb = desc[5], d.imb = d.mb, d.inb = d.nb;
    d.rsrc = desc[6], d.csrc = desc[7], d.lld = desc[8];
  }
  return d;
}

std::uint64_t fingerprint(const std::vector<int>& ranks) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ ranks.size();
  for (int r : ranks) {  // splitmix64 steps
    h += static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)) + 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
  }
  return h;
}

MPI_Comm system_communicator(int ctxt) {
  int sys = 0;
  Cblacs_get(ctxt, 10, &sys);
  return Cblacs2sys_handle(sys);
}

exchange_result exchange(int ctxt, const call_scalars& s, const int* a_desc, const int* b_desc, std::uint64_t candidate,
                         int hit, descriptor_rules rules) {
  int nprow = 0, npcol = 0, row = -1, col = -1;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &row, &col);
  if (row < 0 || col < 0) throw error(errc::invalid_argument, "this process is not in the call's BLACS context");
  const int np = nprow * npcol, me = row * npcol + col;
  std::vector<int> rows(static_cast<std::size_t>(np) * kRecordInts, 0);  // a sum of rows that only their process fills
  int* r = &rows[static_cast<std::size_t>(me) * kRecordInts];
  int world = 0, system = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(system_communicator(ctxt), &system);
  r[kPresent] = 1, r[kWorld] = world, r[kSystem] = system, r[kHit] = hit;
  r[kCandidateLo] = static_cast<int>(static_cast<std::uint32_t>(candidate));
  r[kCandidateHi] = static_cast<int>(static_cast<std::uint32_t>(candidate >> 32));
  const int scalars[kScalarCount] = {s.routine, s.dtype, s.m, s.n, s.ia, s.ja, s.ib, s.jb, s.uplo, s.diag};
  for (int i = 0; i < kScalarCount; ++i) r[kScalars + i] = scalars[i];
  int value = 0;
  int code = describe(a_desc, 1, r + kGridA, value, rules);
  const int code_b = b_desc == a_desc ? kNone : describe(b_desc, 2, r + kGridB, value, rules);
  if (b_desc == a_desc) {
    for (int i = 0; i < kGridInts; ++i) r[kGridB + i] = r[kGridA + i];
  }
  if (code == kNone) code = code_b;
  r[kProblem] = code, r[kProblemValue] = value;

  Cigsum2d(ctxt, "All", " ", kRecordInts, np, rows.data(), kRecordInts, -1, -1);

  exchange_result out;
  out.my_index = me;
  out.world_ranks.resize(static_cast<std::size_t>(np));
  out.system_ranks.resize(static_cast<std::size_t>(np));
  for (int p = 0; p < np; ++p) {
    const int* q = &rows[static_cast<std::size_t>(p) * kRecordInts];
    out.world_ranks[static_cast<std::size_t>(p)] = q[kWorld];
    out.system_ranks[static_cast<std::size_t>(p)] = q[kSystem];
    if (out.problem.empty() && q[kProblem] != kNone)
      out.problem = "process " + std::to_string(p) + ": " + reason_text(q[kProblem], q[kProblemValue]);
  }
  static const char* const kScalarNames[kScalarCount] = {"routine", "type", "M",  "N",    "IA",
                                                         "JA",      "IB",   "JB", "UPLO", "DIAG"};
  for (int p = 1; p < np && out.problem.empty(); ++p) {
    for (int i = 0; i < kScalarCount; ++i) {
      const int x = rows[static_cast<std::size_t>(p) * kRecordInts + kScalars + i], y = rows[kScalars + i];
      if (x != y) {
        out.problem = std::string("processes 0 and ") + std::to_string(p) + " pass different " + kScalarNames[i] +
                      " (" + std::to_string(y) + " and " + std::to_string(x) + ")";
        break;
      }
    }
  }
  if (out.problem.empty()) out.a = assemble(rows, np, kGridA, me, a_desc, out.problem, "A", rules);
  if (out.problem.empty()) out.b = assemble(rows, np, kGridB, me, b_desc, out.problem, "B", rules);
  // The cache position, if every process found the call at the same place in the
  // cache of this very process set.
  const std::uint64_t actual = fingerprint(out.world_ranks);
  out.hit = rows[kHit];
  for (int p = 0; p < np; ++p) {
    const int* q = &rows[static_cast<std::size_t>(p) * kRecordInts];
    const std::uint64_t c = static_cast<std::uint32_t>(q[kCandidateLo]) |
                            (std::uint64_t{static_cast<std::uint32_t>(q[kCandidateHi])} << 32);
    if (q[kHit] != out.hit || c != actual) out.hit = -1;
  }
  return out;
}

}  // namespace conveyor::scalapack::detail
