// SPDX-License-Identifier: BSD-3-Clause
// What every ScaLAPACK drop-in call learns before it moves anything: one BLACS
// sum-reduction over the processes of the call's context, in which each process
// writes one row (its descriptors as it sees them, its world rank, its cache
// lookup), so that afterwards every process knows every other's view.
//
// From that one exchange every process derives, identically:
//   - the grids of A and B (shape, block sizes, source process, which context
//     process sits at each grid position), including on processes outside a grid,
//     whose descriptors say only CTXT = -1;
//   - the problems of the call (a bad argument on any one process, or scalars that
//     differ between processes), reported with the same message everywhere;
//   - whether every process found the call in its plan cache at the same place.
// Cost: one reduction of (context size) x kRecordInts integers per call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor::scalapack::detail {

/// A distributed matrix's descriptor, 9 integers (DTYPE 1) or PBLAS's 11 (DTYPE 2:
/// with the sizes IMB / INB of the first row and column block).
struct descriptor {
  int ctxt = -1;
  int M = 0, N = 0, imb = 1, inb = 1, mb = 1, nb = 1, rsrc = 0, csrc = 0, lld = 1;
};

/// How descriptors are read and checked.
///   pblas: DTYPE 1 (9 integers) or 2 (11), anything else an error; LLD >=
///     max(1, local rows) (DESCINIT's rule). Conveyor's own names, and p?tran
///     under every name (PBLAS honours DTYPE 2).
///   reference_redist: as reference ScaLAPACK's p?gemr2d / p?trmr2d read them:
///     9 integers whatever DTYPE says (they never read it), LLD checked only on a
///     process that holds elements. Their drop-ins under ScaLAPACK's own names:
///     a drop-in accepts every call the reference accepts, and ScaLAPACK's REDIST
///     tester leaves DTYPE unset on process 0 and passes LLD 0 on a process with
///     no rows.
enum class descriptor_rules { pblas, reference_redist };

/// Reads `desc` as this process sees it: only CTXT when the process is outside the
/// context's grid (ScaLAPACK's rule); a problem text when the descriptor is invalid.
descriptor read_descriptor(const int* desc, std::string& problem, const char* which,
                           descriptor_rules rules = descriptor_rules::pblas);

/// One grid of a call as every process of the context knows it after the exchange.
struct grid_view {
  int nprow = 0, npcol = 0;
  int M = 0, N = 0, imb = 1, inb = 1, mb = 1, nb = 1, rsrc = 0, csrc = 0;
  std::vector<int> member;                // r * npcol + c -> index of that process in the context
  int my_row = -1, my_col = -1, lld = 1;  // this process (-1: outside the grid)
};

/// The scalars every process must pass alike (ScaLAPACK's "global" arguments).
struct call_scalars {
  int routine = 0, dtype = 0, m = 0, n = 0, ia = 1, ja = 1, ib = 1, jb = 1, uplo = 0, diag = 0;
};

/// The outcome of the exchange, the same on every process of the context.
struct exchange_result {
  std::string problem;            // empty: the call is valid everywhere
  std::vector<int> world_ranks;   // context process -> MPI_COMM_WORLD rank
  std::vector<int> system_ranks;  // context process -> rank in the context's system communicator
  int my_index = 0;               // this process's index in the context
  int hit = -1;                   // the cache position every process found, or -1
  grid_view a, b;
};

/// A 64-bit fingerprint of a process list (which process set a cache belongs to).
std::uint64_t fingerprint(const std::vector<int>& ranks);

/// Collective over the BLACS context `ctxt` (every process of its grid calls).
/// `a_desc` / `b_desc`: this process's descriptors; `candidate`: the fingerprint of
/// the process set whose cache this process looked in (every process compares it
/// with the exchanged ranks), `hit`: where it found the call there (-1: not found).
exchange_result exchange(int ctxt, const call_scalars& s, const int* a_desc, const int* b_desc, std::uint64_t candidate,
                         int hit, descriptor_rules rules);

/// The communicator of a BLACS context's system context (where its grid lives).
MPI_Comm system_communicator(int ctxt);

}  // namespace conveyor::scalapack::detail
