// SPDX-License-Identifier: BSD-3-Clause
// Node memory (conveyor/node_memory.hpp, runtime/node_memory.hpp).
//
// An allocation is one memfd: a header page (magic, the process's token, the
// allocation's serial) and then the caller's bytes, so a user pointer is
// page-aligned. A peer checks the header after mapping: a reused fd number, or a
// process of the same pid in another PID namespace, shows another serial or token.
#include "runtime/node_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <utility>

#include "conveyor/types.hpp"

namespace conveyor {
namespace detail {
namespace {

constexpr std::size_t kHeader = 4096;
constexpr std::int64_t kMagic = 0x6e6f64656d656d31;  // "nodemem1"

struct header {
  std::int64_t magic, token, serial, bytes;
};

struct allocation {
  char* base;         // the header
  std::size_t total;  // header + data, page-rounded
  int fd;             // -1: private memory (memfd unavailable)
  std::int64_t serial;
};

struct registry {
  std::mutex lock;
  std::map<std::uintptr_t, allocation> by_data;  // key: the caller's pointer
  std::int64_t next_serial = 1;
  std::int64_t token = 0;
  std::map<std::pair<std::int64_t, std::int64_t>, std::weak_ptr<const peer_memory>> peers;  // (token, serial)
};

registry& the_registry() {
  static registry* r = [] {
    auto* made = new registry;  // never destroyed: node_free may run from static destructors
    std::random_device rd;
    made->token = (static_cast<std::int64_t>(rd()) << 32) ^ rd() ^ static_cast<std::int64_t>(getpid());
    return made;
  }();
  return *r;
}

std::size_t page_round(std::size_t n) { return (n + kHeader - 1) / kHeader * kHeader; }

}  // namespace

bool find_node_memory(const void* p, std::size_t bytes, node_memory_ref& out) {
  registry& r = the_registry();
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> hold(r.lock);
  auto it = r.by_data.upper_bound(at);
  if (it == r.by_data.begin()) return false;
  --it;
  const allocation& a = it->second;
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(a.base) + a.total;
  if (a.fd < 0 || at + bytes > end || at + bytes < at) return false;
  out.pid = static_cast<std::int64_t>(getpid());
  out.fd = a.fd;
  out.serial = a.serial;
  out.token = r.token;
  out.bytes = static_cast<std::int64_t>(a.total);
  out.offset = static_cast<std::int64_t>(at - reinterpret_cast<std::uintptr_t>(a.base));
  return true;
}

peer_memory::~peer_memory() { munmap(base_, bytes_); }

std::shared_ptr<const peer_memory> map_node_memory(const node_memory_ref& ref) {
  registry& r = the_registry();
  std::lock_guard<std::mutex> hold(r.lock);
  if (r.peers.size() >= 64) {  // forget allocations no holder maps any more
    for (auto it = r.peers.begin(); it != r.peers.end();) it = it->second.expired() ? r.peers.erase(it) : std::next(it);
  }
  auto& slot = r.peers[{ref.token, ref.serial}];
  if (auto mapped = slot.lock()) return mapped;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%lld/fd/%lld", static_cast<long long>(ref.pid),
                static_cast<long long>(ref.fd));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* base = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size == ref.bytes) {
    base = mmap(nullptr, static_cast<std::size_t>(ref.bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  const auto* h = static_cast<const header*>(base);
  if (h->magic != kMagic || h->token != ref.token || h->serial != ref.serial) {
    munmap(base, static_cast<std::size_t>(ref.bytes));
    return nullptr;
  }
  auto mapped = std::make_shared<const peer_memory>(static_cast<char*>(base), static_cast<std::size_t>(ref.bytes));
  slot = mapped;
  return mapped;
}

}  // namespace detail

void* node_alloc(std::size_t bytes) {
  using detail::kHeader;
  detail::registry& r = detail::the_registry();
  const std::size_t total = kHeader + detail::page_round(bytes);
  if (total < bytes)
    throw error(errc::invalid_argument, "node_alloc: " + std::to_string(bytes) + " bytes is too large");
  const int fd = static_cast<int>(memfd_create("conveyor-node-memory", MFD_CLOEXEC));
  void* base = MAP_FAILED;
  int err = 0;
  if (fd >= 0) {
    // Reserved now: a sparse file past the memory limit would SIGBUS on first touch.
    if (ftruncate(fd, static_cast<off_t>(total)) != 0) err = errno;
    else if ((err = posix_fallocate(fd, 0, static_cast<off_t>(total))) == 0)
      base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      if (err == 0) err = errno;
      close(fd);
      throw error(errc::invalid_argument, "node_alloc: " + std::to_string(bytes) + " bytes: " + std::strerror(err));
    }
  } else {
    // No memfd (old kernels, seccomp): private memory, which no peer maps.
    base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
      throw error(errc::invalid_argument, "node_alloc: " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  }
  std::lock_guard<std::mutex> hold(r.lock);
  const std::int64_t serial = r.next_serial++;
  new (base) detail::header{detail::kMagic, r.token, serial, static_cast<std::int64_t>(total)};
  char* data = static_cast<char*>(base) + kHeader;
  r.by_data[reinterpret_cast<std::uintptr_t>(data)] = {static_cast<char*>(base), total, fd, serial};
  return data;
}

bool node_free(void* p) noexcept {
  if (!p) return false;
  detail::registry& r = detail::the_registry();
  std::lock_guard<std::mutex> hold(r.lock);
  auto it = r.by_data.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == r.by_data.end()) return false;
  munmap(it->second.base, it->second.total);
  if (it->second.fd >= 0) close(it->second.fd);
  r.by_data.erase(it);
  return true;
}

bool is_node_memory(const void* p, std::size_t bytes) {
  detail::node_memory_ref ref;
  return detail::find_node_memory(p, bytes, ref);
}

}  // namespace conveyor
