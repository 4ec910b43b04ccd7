// SPDX-License-Identifier: BSD-3-Clause
// The shared windows' registry (shared_windows.hpp).
#include "runtime/shared_windows.hpp"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "conveyor/node_memory.hpp"

namespace conveyor::detail {
namespace {

struct segment {
  std::uintptr_t key;
  std::uintptr_t lo, hi;  // mapped here
  shared_file_ref file;   // of lo
};

std::mutex g_lock;
std::vector<segment> g_segments;  // a handful: one per live shared window

// The shared file mapping of this process that holds [lo, hi), from /proc/self/maps.
bool file_of(std::uintptr_t lo, std::uintptr_t hi, shared_file_ref& out) {
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) {
    std::uintptr_t start = 0, end = 0;
    char perms[8] = {};
    unsigned long long offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %x:%x %llu", &start, &end, perms, &offset, &major, &minor,
                    &inode) != 7) {
      continue;
    }
    if (lo < start || lo >= end) continue;
    found = true;
    if (hi > end || perms[3] != 's' || inode == 0) return std::fclose(f), false;  // not one shared file mapping
    out.device = static_cast<std::int64_t>((static_cast<std::uint64_t>(major) << 32) | minor);
    out.inode = static_cast<std::int64_t>(inode);
    out.offset = static_cast<std::int64_t>(offset + (lo - start));
  }
  std::fclose(f);
  return found;
}

}  // namespace

void register_shared_window(std::uintptr_t key, const void* lo, std::size_t bytes) {
  if (!lo || bytes == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(lo);
  shared_file_ref file;
  if (!file_of(a, a + bytes, file)) return;
  std::lock_guard<std::mutex> hold(g_lock);
  g_segments.push_back({key, a, a + bytes, file});
}

void forget_shared_window(std::uintptr_t key) {
  std::lock_guard<std::mutex> hold(g_lock);
  for (std::size_t i = 0; i < g_segments.size(); ++i) {
    if (g_segments[i].key == key) g_segments.erase(g_segments.begin() + static_cast<std::ptrdiff_t>(i--));
  }
}

bool find_shared_window(const void* p, std::size_t bytes, shared_file_ref& out) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> hold(g_lock);
  for (const segment& s : g_segments) {
    if (a >= s.lo && a + bytes <= s.hi) {
      out = s.file;
      out.offset += static_cast<std::int64_t>(a - s.lo);
      return true;
    }
  }
  return false;
}

char* local_shared_window(const shared_file_ref& ref, std::size_t bytes) {
  std::lock_guard<std::mutex> hold(g_lock);
  for (const segment& s : g_segments) {
    if (s.file.device != ref.device || s.file.inode != ref.inode || ref.offset < s.file.offset) continue;
    const auto from = static_cast<std::uintptr_t>(ref.offset - s.file.offset);
    if (from + bytes <= s.hi - s.lo) return reinterpret_cast<char*>(s.lo + from);
  }
  return nullptr;
}

}  // namespace conveyor::detail

namespace conveyor {
namespace {

std::uintptr_t key_of(MPI_Win win) {
  std::uintptr_t key = 0;
  std::memcpy(&key, &win, std::min(sizeof key, sizeof win));
  return key;
}

}  // namespace

bool note_shared_window(MPI_Win win) {
  MPI_Group group = MPI_GROUP_NULL;
  if (MPI_Win_get_group(win, &group) != MPI_SUCCESS) return false;
  int n = 0;
  MPI_Group_size(group, &n);
  MPI_Group_free(&group);
  // Every rank's part as mapped here: the segment is their span.
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int r = 0; r < n; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    void* base = nullptr;
    if (MPI_Win_shared_query(win, r, &bytes, &unit, &base) != MPI_SUCCESS) return false;
    if (bytes <= 0 || !base) continue;
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    lo = std::min(lo, b), hi = std::max(hi, b + static_cast<std::uintptr_t>(bytes));
  }
  if (lo >= hi) return false;
  detail::forget_shared_window(key_of(win));  // a reused handle's old segment
  detail::register_shared_window(key_of(win), reinterpret_cast<const void*>(lo), hi - lo);
  detail::shared_file_ref probe;
  return detail::find_shared_window(reinterpret_cast<const void*>(lo), hi - lo, probe);
}

void forget_shared_window(MPI_Win win) { detail::forget_shared_window(key_of(win)); }

}  // namespace conveyor
