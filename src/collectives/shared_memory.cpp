// The shared_memory allreduce (see shared_memory.hpp).
#include "collectives/shared_memory.hpp"

#include "runtime/cpu_affinity.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

namespace conveyor::detail {

namespace {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "flags in shared memory must be lock-free");

constexpr std::size_t kLine = 64;  // one flag per cache line: each rank writes its own only
// Spins before a waiting rank yields its core: a flag hand-off between two busy
// cores takes ~0.1 us, ~100 pauses; after that the rank being waited for may need
// this core, so the waiter yields. When the node's ranks share cores it yields at
// once: spinning there only delays the rank it waits for (3 and 4 Open MPI ranks
// on 2 cores lost 0.79-0.93x at 8-512 B with 128 spins).
constexpr int kSpinsBeforeYield = 128;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

std::atomic<std::uint64_t>& flag_of(void* flags_base, int rank) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(static_cast<char*>(flags_base) + kLine * static_cast<std::size_t>(rank))[0];
}

void wait_at_least(const std::atomic<std::uint64_t>& flag, std::uint64_t value, int spins_before_yield) {
  for (int spins = 0; flag.load(std::memory_order_acquire) < value; ++spins) {
    if (spins < spins_before_yield) cpu_relax();
    else std::this_thread::yield();
  }
}

std::size_t segment_bytes(int size) {
  return kLine * static_cast<std::size_t>(size) + 2 * shm_allreduce::slot_bytes * static_cast<std::size_t>(size);
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
  for (int r = 0; r < size; ++r) new (static_cast<char*>(base) + kLine * static_cast<std::size_t>(r)) std::atomic<std::uint64_t>(0);
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
    fd = static_cast<int>(memfd_create("conveyor-allreduce", MFD_CLOEXEC));
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

std::unique_ptr<shm_allreduce> shm_allreduce::create(MPI_Comm comm, int rank, int size, int node_cpus) {
  const std::size_t bytes = segment_bytes(size);
  int rc = MPI_SUCCESS;
  void* base = map_anonymous(comm, rank, bytes, size, rc);
  if (!base && rc == MPI_SUCCESS) base = map_named(comm, rank, bytes, size, rc);
  if (!base) return nullptr;
  const int spins = ranks_share_cores(size, node_cpus) ? 0 : kSpinsBeforeYield;
  return std::unique_ptr<shm_allreduce>(new shm_allreduce(base, bytes, rank, size, spins));
}

shm_allreduce::~shm_allreduce() { munmap(base_, bytes_); }

void* shm_allreduce::posted() const { return base_; }

char* shm_allreduce::slot(int buffer, int rank) const {
  const std::size_t index = static_cast<std::size_t>(buffer) * static_cast<std::size_t>(size_) + static_cast<std::size_t>(rank);
  return static_cast<char*>(base_) + kLine * static_cast<std::size_t>(size_) + index * slot_bytes;
}

void shm_allreduce::run(const void* in, void* out, std::size_t count, std::size_t esize, reduce_kernel_fn kernel) {
  const std::size_t per_chunk = slot_bytes / esize;
  for (std::size_t off = 0; off < count; off += per_chunk) {
    const std::size_t n = std::min(per_chunk, count - off), bytes = n * esize;
    const std::uint64_t s = ++chunks_;
    const int buffer = static_cast<int>(s % 2);
    std::memcpy(slot(buffer, rank_), static_cast<const char*>(in) + off * esize, bytes);
    flag_of(posted(), rank_).store(s, std::memory_order_release);
    for (int r = 0; r < size_; ++r) wait_at_least(flag_of(posted(), r), s, spins_);
    char* result = static_cast<char*>(out) + off * esize;
    kernel(slot(buffer, 0), slot(buffer, 1), result, n);
    for (int r = 2; r < size_; ++r) kernel(result, slot(buffer, r), result, n);
  }
}

}  // namespace conveyor::detail
