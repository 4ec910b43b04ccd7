// SPDX-License-Identifier: BSD-3-Clause
// Working memory that outlives the plan that used it: the packages of a
// Redistribute plan go back to a process-wide pool when the plan is freed, and
// the next plan takes them again. A cold sequence (ScaLAPACK's drop-ins planning
// once per call, the REDIST tester's many distinct calls) then reuses pages
// already faulted in instead of mapping, zero-filling and faulting in fresh ones
// on every call: measured on `conveyor bench scalapack --cache cold`, that was
// half of a cold 4000² pdgemr2d (docs/results.md).
//
// Why not malloc: glibc serves blocks above its (adaptive, at most 32 MiB) mmap
// threshold with fresh mappings, so a 32 MiB package costs 8192 page faults plus
// the kernel's zeroing on every call; std::vector adds its own zero fill.
//
// Limits: keeps at most CONVEYOR_BUFFER_POOL_MB (default 1024) MiB and 256 free
// buffers per process, dropping the ones given back longest ago beyond that (so
// the buffers of the calls being repeated stay; a buffer larger than the limit is
// freed when given back); a request takes the smallest free buffer that holds it
// if that is at most twice its size.
// Thread-safe (one mutex; taken only when a buffer changes hands).
#pragma once

#include <cstddef>
#include <memory>

namespace conveyor::detail {

/// A byte buffer from the pool: contents undefined after resize (never zeroed).
class byte_buffer {
 public:
  byte_buffer() = default;
  ~byte_buffer() { reset(); }
  byte_buffer(byte_buffer&& o) noexcept { swap(o); }
  byte_buffer& operator=(byte_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;

  /// Holds `bytes` bytes (a new buffer from the pool unless this one is big enough;
  /// the old contents are not kept).
  void resize(std::size_t bytes);
  /// Gives the memory back to the pool.
  void reset();
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void swap(byte_buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

/// Bytes the pool keeps free right now (for tests and reports).
std::size_t pooled_bytes();

}  // namespace conveyor::detail
