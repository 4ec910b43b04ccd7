// SPDX-License-Identifier: BSD-3-Clause
// libconveyor_mpi's settings (the CONVEYOR_MPI* entries of the runtime's settings
// table, read once at the first intercepted call) and its counters, printed at
// MPI_Finalize when CONVEYOR_MPI_REPORT=1.
#pragma once

#include <cstddef>

#include "conveyor/collectives.hpp"

namespace conveyor::interpose {

/// The calls libconveyor_mpi can serve (CONVEYOR_MPI_CALLS names them).
enum class call : int {
  allreduce,
  reduce_scatter_block,
  reduce_scatter,
  allgather,
  allgatherv,
  reduce_local,
  alltoall,
  alltoallv,
  alltoallw
};
inline constexpr int call_count = 9;

/// Why a call went to the MPI library.
enum class pass_reason : int {
  off,              // CONVEYOR_MPI=0
  not_selected,     // not in CONVEYOR_MPI_CALLS
  below_threshold,  // fewer bytes than CONVEYOR_MPI_MIN_BYTES
  empty,            // nothing to move
  op,               // user-defined, MINLOC, MAXLOC, REPLACE, NO_OP
  type,             // several basic types, or a pair (op, type) Conveyor does not reduce
  intercomm,        // an intercommunicator
  arguments,        // a null handle, a negative count, mismatched sizes: MPI reports it
  internal,         // Conveyor's own call (not the program's)
  measured,         // the all-to-all family: the library's own, measured faster for the size
};
inline constexpr int pass_reason_count = 10;

struct policy {
  bool on = true;
  bool serves[call_count] = {true, true, true, true, true, true, true, true, true};
  std::size_t min_bytes = 0;
  bool report = false;
};

/// The settings, read at the first call (an invalid value: a message naming the
/// setting, then MPI_Abort).
const policy& current_policy();

void count_served(call c, std::size_t bytes, bool staged);
void count_algorithm(allreduce_algorithm a);
void count_passed(call c, pass_reason why);
/// Derived datatypes decoded by the all-to-all calls.
void count_decoded(int types);
/// An MPI_Alloc_mem served from node memory.
void count_node_memory();
/// An MPI_Win_allocate_shared window noted (conveyor::note_shared_window).
void count_shared_window();

/// Rank 0 prints the counts summed over MPI_COMM_WORLD (collective on it; from the
/// interposed MPI_Finalize).
void print_report();

/// Makes sure a report is printed even when the program's MPI_Finalize bypasses the
/// interposed symbol: each process that calls this prints its own counts when
/// MPI_Finalize starts, unless print_report ran (called at the first intercepted
/// call when CONVEYOR_MPI_REPORT=1).
void arrange_report_at_finalize();

}  // namespace conveyor::interpose
