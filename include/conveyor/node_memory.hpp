// SPDX-License-Identifier: BSD-3-Clause
// Node memory: memory the other ranks of this node can read directly. A buffer
// allocated here lets the engines move it with one copy (the receiver reads the
// owner's bytes straight into its own) instead of two (pack into a shared
// segment, unpack), and without cross-memory attach's system calls: the
// Redistribute plan's one_copy transport reads every source from node memory,
// and the all-to-all reads send rows that lie in it.
//
// Each allocation is an anonymous shared-memory file (memfd) of its own, mapped
// by the owner; a peer maps it through /proc/<owner>/fd/<fd> the
// first time it needs it, for as long as a plan or call uses it. Nothing has a
// name, so nothing is left behind if a job dies. Where memfd is missing the
// memory is private (the engines then use their other paths); where a peer cannot
// open another process's /proc entry (other PID namespaces, another user), the
// plan or call agrees on its other paths on every rank.
//
// Not collective: any rank allocates and frees on its own, any number of times.
//
// MPI shared-memory windows (MPI_Win_allocate_shared) are node memory too once
// noted (note_shared_window; libconveyor_mpi notes every one it sees created):
// every rank of the window maps its whole segment, so a peer in the window reads
// a sender's rows there with memcpy from its own mapping.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "conveyor/export.hpp"

namespace conveyor {

/// `bytes` of node memory (page-aligned, contents zero; 0 gives a valid
/// pointer to no bytes). Every page is reserved now: a full memory limit is an
/// error here (errc::invalid_argument with the reason), never a SIGBUS later.
/// C: conveyor_node_alloc; Python: conveyor.empty.
CONVEYOR_API void* node_alloc(std::size_t bytes);

/// Frees what node_alloc returned; false (and nothing done) for any other
/// pointer, null included. A peer that still has it mapped keeps reading the
/// freed bytes, never another allocation's.
CONVEYOR_API bool node_free(void* p) noexcept;

/// True if [p, p + bytes) lies in one allocation of node_alloc that peers can map.
CONVEYOR_API bool is_node_memory(const void* p, std::size_t bytes);

/// Notes the segment of `win` (from MPI_Win_allocate_shared; MPI_Win_shared_query
/// gives every rank's part as mapped here) so that the all-to-all's peers that
/// noted the same window read rows in it with memcpy. Local, not collective;
/// returns false (nothing noted) if the segment is not one shared file mapping.
/// Call forget_shared_window before MPI_Win_free.
CONVEYOR_API bool note_shared_window(MPI_Win win);
/// Forgets what note_shared_window noted for `win` (nothing if it noted nothing).
CONVEYOR_API void forget_shared_window(MPI_Win win);

}  // namespace conveyor
