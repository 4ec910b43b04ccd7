// SPDX-License-Identifier: BSD-3-Clause
// libconveyor_mpi's MPI_Alloc_mem and MPI_Free_mem: allocations of at least
// kNodeMemoryMinBytes come from node memory (conveyor/node_memory.hpp), so an
// all-to-all whose send buffer is one of them moves each attached pair with one
// memcpy by the receiver (redistribute/alltoall_attach.hpp) instead of
// process_vm_readv. Smaller ones, and any that node memory cannot give (the
// process's descriptor limit: each allocation holds one), go to the MPI library.
// MPI_Free_mem frees ours and passes the rest on. CONVEYOR_MPI=0: all to MPI.
// MPI_Win_allocate_shared: the library's window, noted (conveyor::note_shared_window)
// so that send rows in it are read the same way by the window's other ranks;
// MPI_Win_free forgets it first (a freed window's handle and memory are reused).
#include <mpi.h>

#include <exception>

#include "conveyor/node_memory.hpp"
#include "interpose/policy.hpp"

namespace {

// Below this an all-to-all pair never reads the sender's rows (kAttachMinBytes).
constexpr MPI_Aint kNodeMemoryMinBytes = MPI_Aint{64} << 10;

}  // namespace

// The interposed symbols are the library's interface (its other symbols stay hidden).
#pragma GCC visibility push(default)
extern "C" {

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
  if (size >= kNodeMemoryMinBytes && baseptr && conveyor::interpose::current_policy().on) {
    try {
      *static_cast<void**>(baseptr) = conveyor::node_alloc(static_cast<std::size_t>(size));
      conveyor::interpose::count_node_memory();
      return MPI_SUCCESS;
    } catch (const std::exception&) {
      // The MPI library's memory instead.
    }
  }
  return PMPI_Alloc_mem(size, info, baseptr);
}

int MPI_Free_mem(void* base) {
  if (conveyor::node_free(base)) return MPI_SUCCESS;
  return PMPI_Free_mem(base);
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
  const int rc = PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
  if (rc == MPI_SUCCESS && win && conveyor::interpose::current_policy().on && conveyor::note_shared_window(*win)) {
    conveyor::interpose::count_shared_window();
  }
  return rc;
}

int MPI_Win_free(MPI_Win* win) {
  if (win) conveyor::forget_shared_window(*win);
  return PMPI_Win_free(win);
}

}  // extern "C"
#pragma GCC visibility pop
