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

// Maps the named segment (rank 0 creates it); null on failure. The creator
// reserves every page (posix_fallocate): ftruncate alone makes a sparse file, and
// a rank touching a page /dev/shm has no room for gets SIGBUS, not an error
// (tests/faults: a full /dev/shm crashed the first call). The pages then sit on
// the creator's NUMA node; every rank reads every slot either way.
void* map_segment(const char* name, std::size_t bytes, bool create) {
  const int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0);
  if (fd < 0) return nullptr;
  void* base = MAP_FAILED;
  if (!create || (ftruncate(fd, static_cast<off_t>(bytes)) == 0 &&
                  posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0)) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (base == MAP_FAILED && create) shm_unlink(name);  // no other rank will look for it
  return base == MAP_FAILED ? nullptr : base;
}

}  // namespace

std::unique_ptr<shm_allreduce> shm_allreduce::create(MPI_Comm comm, int rank, int size, int node_cpus) {
  const std::size_t bytes = segment_bytes(size);
  char name[64] = {};
  void* base = nullptr;
  if (rank == 0) {
    static std::atomic<unsigned> made{0};
    std::snprintf(name, sizeof name, "/conveyor-%ld-%u", static_cast<long>(getpid()), made.fetch_add(1));
    base = map_segment(name, bytes, true);
    if (base) {
      // A fresh segment reads as zeros; the flags are constructed before any
      // other rank maps it (the broadcast below orders that).
      for (int r = 0; r < size; ++r) new (static_cast<char*>(base) + kLine * static_cast<std::size_t>(r)) std::atomic<std::uint64_t>(0);
    } else {
      name[0] = '\0';
    }
  }
  int rc = MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
  if (rc == MPI_SUCCESS && rank != 0 && name[0]) base = map_segment(name, bytes, false);
  // Whether some rank could not map the segment.
  int failed = base == nullptr ? 1 : 0;
  if (rc == MPI_SUCCESS) rc = MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (rank == 0 && name[0]) shm_unlink(name);  // every rank has mapped it (or given up): the name can go
  if (rc != MPI_SUCCESS || failed) {
    if (base) munmap(base, bytes);
    return nullptr;
  }
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
