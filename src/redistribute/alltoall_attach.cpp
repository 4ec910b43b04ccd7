// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute/alltoall_attach.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "conveyor/settings.hpp"
#include "redistribute/byte_rows.hpp"
#include "runtime/node_memory.hpp"
#include "runtime/shared_windows.hpp"

namespace conveyor::redistribute::detail {
namespace {

constexpr int kRowsPerRead = 1024;  // IOV_MAX on Linux

// The word every rank reads from every other rank of its node when probing.
volatile std::uint64_t g_probe_word = 0;

// The first box of a node-memory descriptor (no row is ever like it): the
// allocation's reference in count[0..4], the mapping's absolute address in the
// sender in count[5] (read_rows' fallback).
constexpr int kNodeMemoryMark = -1;
// The first box of a shared-window descriptor: the file's device, inode and the
// rows' span's offset in it in count[0..2], the span's absolute address in the
// sender in count[3] (read_rows' fallback) and its bytes in count[4]; the rows
// follow as offsets from the span's start.
constexpr int kSharedWindowMark = -2;

// The bytes a map's rows span from base: [lo, hi).
std::pair<std::int64_t, std::int64_t> rows_span(const byte_map& m) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const byte_box& b : m) {
    if (b.bytes() == 0) continue;
    std::int64_t first = b.offset, last = b.offset + b.run;
    for (int k = 0; k < b.axes; ++k) {
      const std::int64_t reach = (b.count[static_cast<std::size_t>(k)] - 1) * b.stride[static_cast<std::size_t>(k)];
      (reach < 0 ? first : last) += reach;
    }
    lo = std::min(lo, first), hi = std::max(hi, last);
  }
  return {lo, hi};
}

// The rows of `from` (offsets from `source`, mapped here) into those of `local`.
int copy_rows(const byte_map& from_rows, const char* source, const byte_map& local, void* base, std::int64_t bytes) {
  byte_stream from(from_rows, source), to(local, base);
  char *s = nullptr, *d = nullptr;
  std::int64_t sn = 0, dn = 0;
  while (bytes > 0) {
    if (sn == 0 && !from.take(bytes, s, sn)) return EINVAL;
    if (dn == 0 && !to.take(bytes, d, dn)) return EINVAL;
    const std::int64_t n = std::min(sn, dn);
    std::memcpy(d, s, static_cast<std::size_t>(n));
    s += n, d += n, sn -= n, dn -= n, bytes -= n;
  }
  return 0;
}

}  // namespace

void probe_attach(attach_state& s, MPI_Comm comm, int rank, int size, const std::vector<int>& node_of) {
  if (s.probed) return;
  s.probed = true;
  const auto v = setting("CONVEYOR_ALLTOALL_COPY");
  // 0: fine; else an errno, or kOff / kBadValue for the setting. Folded over the
  // ranks as rank * 1000 + code: the lowest rank with a problem names it.
  constexpr int kOff = 998, kBadValue = 997;
  int code = 0;
  s.rule = sender_rule::measured;
  if (v && *v == "packed") code = kOff;
  else if (v && *v == "attach") s.rule = sender_rule::attach;
  else if (v && *v == "slots") s.rule = sender_rule::slots;
  else if (v && *v == "messages") s.rule = sender_rule::messages;
  else if (v && *v != "auto") code = kBadValue;
  g_probe_word = 0x436f6e766579ull ^ static_cast<std::uint64_t>(getpid());
  std::int64_t mine[3] = {static_cast<std::int64_t>(getpid()),
                          static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(&g_probe_word)),
                          static_cast<std::int64_t>(g_probe_word)};
  std::vector<std::int64_t> all(static_cast<std::size_t>(3 * size));
  MPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, comm);
  s.pid.assign(static_cast<std::size_t>(size), 0);
  s.node = node_of;
  for (int q = 0; q < size; ++q) {
    const auto k = static_cast<std::size_t>(q);
    s.pid[k] = static_cast<long>(all[3 * k]);
    if (code || q == rank || node_of[k] != node_of[static_cast<std::size_t>(rank)]) continue;
    std::uint64_t got = 0;
    iovec local{&got, sizeof got},
        remote{reinterpret_cast<void*>(static_cast<std::intptr_t>(all[3 * k + 1])), sizeof got};
    const ssize_t n = process_vm_readv(static_cast<pid_t>(s.pid[k]), &local, 1, &remote, 1, 0);
    if (n != static_cast<ssize_t>(sizeof got)) code = n < 0 ? (errno ? errno : EIO) : EIO;
    else if (got != static_cast<std::uint64_t>(all[3 * k + 2])) code = ESRCH;  // another process (PID namespaces)
  }
  int first = code ? rank * 1000 + (code < kBadValue ? code : code == kOff || code == kBadValue ? code : EIO) : INT_MAX;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  s.usable = first == INT_MAX;
  if (s.usable) {
    s.verdict = "cross-memory attach";
    return;
  }
  const int who = first / 1000, why = first % 1000;
  s.off = why == kOff || why == kBadValue;
  if (why == kOff) s.verdict = "packed: CONVEYOR_ALLTOALL_COPY=packed";
  else if (why == kBadValue)
    s.verdict =
        "packed: CONVEYOR_ALLTOALL_COPY is not auto, packed, attach, slots or messages on rank " + std::to_string(who);
  else
    s.verdict = "packed: rank " + std::to_string(who) +
                " cannot read its node's ranks (process_vm_readv: " + std::strerror(why) + ")";
}

int read_rows(long pid, const byte_map& remote, const byte_map& local, void* base, std::int64_t bytes) {
  byte_stream from(remote, nullptr), to(local, base);
  std::vector<iovec> liov(kRowsPerRead), riov(kRowsPerRead);
  char* p = nullptr;
  std::int64_t n = 0;
  while (bytes > 0) {
    // Up to kRowsPerRead remote pieces (looked ahead), then local pieces up to
    // their bytes, then exactly that many remote bytes.
    byte_stream ahead = from;
    std::int64_t can = 0;
    for (int i = 0; i < kRowsPerRead && can < SSIZE_MAX / 2 && ahead.take(bytes - can, p, n); ++i) can += n;
    int lc = 0;
    std::int64_t l = 0;
    while (lc < kRowsPerRead && l < can && to.take(can - l, p, n))
      liov[static_cast<std::size_t>(lc++)] = {p, static_cast<std::size_t>(n)}, l += n;
    int rc = 0;
    std::int64_t r = 0;
    while (r < l && from.take(l - r, p, n))
      riov[static_cast<std::size_t>(rc++)] = {p, static_cast<std::size_t>(n)}, r += n;
    if (l == 0 || r != l) return EINVAL;  // the maps hold fewer bytes than promised
    const ssize_t got = process_vm_readv(static_cast<pid_t>(pid), liov.data(), static_cast<unsigned long>(lc),
                                         riov.data(), static_cast<unsigned long>(rc), 0);
    if (got != static_cast<ssize_t>(l)) return got < 0 ? (errno ? errno : EIO) : EIO;
    bytes -= l;
  }
  return 0;
}

bool pack_before_attach(const byte_map& rows, const void* base) {
  std::int64_t bytes = 0, count = 0;
  for (const byte_box& b : rows) {
    std::int64_t n = b.run > 0 ? 1 : 0;
    for (int k = 0; k < b.axes; ++k) n *= b.count[static_cast<std::size_t>(k)];
    bytes += b.bytes(), count += n;
  }
  if (count == 0 || bytes >= kPackAttachedBelow * count) return false;
  const auto [lo, hi] = rows_span(rows);
  const char* p = static_cast<const char*>(base) + lo;
  conveyor::detail::node_memory_ref ref;
  conveyor::detail::shared_file_ref file;
  return !conveyor::detail::find_node_memory(p, static_cast<std::size_t>(hi - lo), ref) &&
         !conveyor::detail::find_shared_window(p, static_cast<std::size_t>(hi - lo), file);
}

byte_map attach_descriptor(const byte_map& rows, const void* base) {
  byte_map d = rows;
  const auto [lo, hi] = rows_span(rows);
  conveyor::detail::node_memory_ref ref;
  const char* b = static_cast<const char*>(base);
  if (lo < hi && conveyor::detail::find_node_memory(b + lo, static_cast<std::size_t>(hi - lo), ref)) {
    const std::int64_t mapping = reinterpret_cast<std::intptr_t>(b + lo) - ref.offset;  // the allocation's start here
    for (byte_box& box : d) box.offset += reinterpret_cast<std::intptr_t>(b) - mapping;
    byte_box mark;
    mark.axes = kNodeMemoryMark;
    mark.count = {ref.pid, ref.fd, ref.serial, ref.token, ref.bytes, mapping, 0};
    d.insert(d.begin(), mark);
    return d;
  }
  conveyor::detail::shared_file_ref file;
  if (lo < hi && conveyor::detail::find_shared_window(b + lo, static_cast<std::size_t>(hi - lo), file)) {
    for (byte_box& box : d) box.offset -= lo;
    byte_box mark;
    mark.axes = kSharedWindowMark;
    mark.count = {file.device, file.inode, file.offset, reinterpret_cast<std::intptr_t>(b + lo), hi - lo, 0, 0};
    d.insert(d.begin(), mark);
    return d;
  }
  for (byte_box& box : d) box.offset += reinterpret_cast<std::intptr_t>(b);
  return d;
}

int read_attached(long pid, byte_map& descriptor, const byte_map& local, void* base, std::int64_t bytes,
                  node_mappings& maps, bool& from_node_memory) {
  from_node_memory = false;
  const int mark = descriptor.empty() ? 0 : descriptor.front().axes;
  if (mark != kNodeMemoryMark && mark != kSharedWindowMark) return read_rows(pid, descriptor, local, base, bytes);
  const auto c = descriptor.front().count;  // a copy: the box goes next
  descriptor.erase(descriptor.begin());
  std::int64_t mapping = c[5];
  if (mark == kSharedWindowMark) {
    mapping = c[3];
    if (const char* here = conveyor::detail::local_shared_window({c[0], c[1], c[2]}, static_cast<std::size_t>(c[4]))) {
      from_node_memory = true;
      return copy_rows(descriptor, here, local, base, bytes);
    }
  } else if (auto m = conveyor::detail::map_node_memory({c[0], c[1], c[2], c[3], c[4], 0})) {
    maps.used.push_back(m);
    from_node_memory = true;
    return copy_rows(descriptor, m->at(0), local, base, bytes);
  }
  for (byte_box& box : descriptor) box.offset += mapping;  // back to absolute addresses
  return read_rows(pid, descriptor, local, base, bytes);
}

}  // namespace conveyor::redistribute::detail
