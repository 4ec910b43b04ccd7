// SPDX-License-Identifier: BSD-3-Clause
// Internal: the memory of MPI shared-memory windows (MPI_Win_allocate_shared) as
// the engines see it. Every rank of such a window maps the whole segment (its
// own part and its neighbours'), each at its own address, from one shared file
// (Open MPI: /dev/shm/osc_sm.*, MPICH: /dev/shm/mpich_shar_*; unlinked). A
// sender names bytes in it by that file's identity (device, inode) and their
// offset in the file; a receiver that maps the same file (it is in the window's
// communicator) finds them at its own address and copies them with memcpy.
//
// libconveyor_mpi registers each window when MPI_Win_allocate_shared returns and
// forgets it in MPI_Win_free (interpose/memory_calls.cpp): the registry knows the
// exact lifetime of every range, so a name is never read from memory reused for
// something else. The file's identity comes from /proc/self/maps, read once per
// window. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace conveyor::detail {

/// Bytes of a shared file, as a peer finds them: 3 int64 on the wire.
struct shared_file_ref {
  std::int64_t device = 0, inode = 0;
  std::int64_t offset = 0;  // in the file
};

/// Registers [lo, lo + bytes), a shared window's segment as mapped here, under
/// `key` (the window handle's bits). Nothing is registered when the range is not
/// one shared file mapping.
void register_shared_window(std::uintptr_t key, const void* lo, std::size_t bytes);
/// Forgets what `key` registered.
void forget_shared_window(std::uintptr_t key);

/// Fills `out` (the file offset of `p`) if [p, p + bytes) lies in one registered segment.
bool find_shared_window(const void* p, std::size_t bytes, shared_file_ref& out);

/// Where `ref`'s bytes are mapped in this process (a registered segment of the
/// same file covering [ref.offset, ref.offset + bytes)), or null.
char* local_shared_window(const shared_file_ref& ref, std::size_t bytes);

}  // namespace conveyor::detail
