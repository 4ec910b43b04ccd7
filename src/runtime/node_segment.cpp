// SPDX-License-Identifier: BSD-3-Clause
// Shared segments and flags (node_segment.hpp).
#include "runtime/node_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <new>
#include <thread>

namespace conveyor::detail {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void* map_fd(int fd, std::size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : base;
}

// Sizes a fresh segment and maps it; null on failure. The creator reserves every
// page (posix_fallocate): ftruncate alone makes a sparse file, and a rank touching
// a page the file system has no room for gets SIGBUS, not an error (tests/faults:
// a full /dev/shm crashed the first call). The pages then sit on the creator's
// NUMA node; every rank reads every slot either way.
void* size_and_map(int fd, std::size_t bytes) {
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || posix_fallocate(fd, 0, static_cast<off_t>(bytes)) != 0) {
    return nullptr;
  }
  return map_fd(fd, bytes);
}

// A flag per rank, each on its own cache line, zero before any other rank maps
// the segment (the broadcast that follows creation orders that).
void init_flags(void* base, int size) {
  for (int r = 0; r < size; ++r)
    new (static_cast<char*>(base) + kLine * static_cast<std::size_t>(r)) std::atomic<std::uint64_t>(0);
}

// Collective: every rank maps one segment, or none does (null everywhere).
// First an anonymous memfd, which the other ranks open through
// /proc/<creator>/fd/<fd>: it has no name, so a rank killed at any moment leaves
// nothing behind (tests/faults "kill while a segment is created"). Where a rank
// cannot open another's /proc entry (ranks in different PID namespaces), a named
// /dev/shm segment, unlinked once every rank has mapped it: a creator killed
// between those two points leaves that name behind.
void* map_anonymous(MPI_Comm comm, int rank, std::size_t bytes, int size, int& rc) {
  long where[2] = {-1, -1};  // creator's pid and fd
  void* base = nullptr;
  int fd = -1;
  if (rank == 0) {
    fd = static_cast<int>(memfd_create("conveyor-segment", MFD_CLOEXEC));
    if (fd >= 0 && (base = size_and_map(fd, bytes)) != nullptr) {
      init_flags(base, size);
      where[0] = static_cast<long>(getpid());
      where[1] = fd;
    }
  }
  rc = MPI_Bcast(where, 2, MPI_LONG, 0, comm);
  if (rc == MPI_SUCCESS && rank != 0 && where[0] >= 0) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/fd/%ld", where[0], where[1]);
    const int mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine >= 0) {
      base = map_fd(mine, bytes);
      close(mine);
    }
  }
  int failed = base == nullptr ? 1 : 0;
  if (rc == MPI_SUCCESS) rc = MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (fd >= 0) close(fd);  // every rank has mapped it (or given up)
  if (rc != MPI_SUCCESS || failed) {
    if (base) munmap(base, bytes);
    return nullptr;
  }
  return base;
}

void* map_named(MPI_Comm comm, int rank, std::size_t bytes, int size, int& rc) {
  char name[64] = {};
  void* base = nullptr;
  if (rank == 0) {
    static std::atomic<unsigned> made{0};
    std::snprintf(name, sizeof name, "/conveyor-%ld-%u", static_cast<long>(getpid()), made.fetch_add(1));
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) {
      base = size_and_map(fd, bytes);
      close(fd);
      if (base) init_flags(base, size);
      else shm_unlink(name);  // no other rank will look for it
    }
    if (!base) name[0] = '\0';
  }
  rc = MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
  if (rc == MPI_SUCCESS && rank != 0 && name[0]) {
    const int fd = shm_open(name, O_RDWR, 0);
    if (fd >= 0) {
      base = map_fd(fd, bytes);
      close(fd);
    }
  }
  int failed = base == nullptr ? 1 : 0;
  if (rc == MPI_SUCCESS) rc = MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (rank == 0 && name[0]) shm_unlink(name);  // every rank has mapped it (or given up): the name can go
  if (rc != MPI_SUCCESS || failed) {
    if (base) munmap(base, bytes);
    return nullptr;
  }
  return base;
}

}  // namespace

void wait_at_least(const std::atomic<std::uint64_t>& flag, std::uint64_t value, int spins_before_yield) {
  for (int spins = 0; flag.load(std::memory_order_acquire) < value; ++spins) {
    if (spins < spins_before_yield) cpu_relax();
    else std::this_thread::yield();
  }
}

std::unique_ptr<node_segment> node_segment::create(MPI_Comm comm, int rank, std::size_t bytes, int flags) {
  int rc = MPI_SUCCESS;
  void* base = map_anonymous(comm, rank, bytes, flags, rc);
  if (!base && rc == MPI_SUCCESS) base = map_named(comm, rank, bytes, flags, rc);
  if (!base) return nullptr;
  return std::unique_ptr<node_segment>(new node_segment(base, bytes));
}

node_segment::~node_segment() { munmap(base_, bytes_); }

}  // namespace conveyor::detail
