// SPDX-License-Identifier: BSD-3-Clause
// Storage for the big matrices an engine builds itself (the Sinkhorn kernel
// K = exp(-C/eps)): uninitialized (the builder writes every element, so
// std::vector's zero fill would be one wasted pass over memory) and, from 4 MiB
// on, 2 MiB-aligned with madvise(MADV_HUGEPAGE).
//
// Why huge pages: a one-thread pass over a matrix much larger than the caches
// is bound by how many cache misses the core keeps in flight; with 4 KiB pages
// each 4 KiB of the stream also needs a page walk and the hardware prefetchers
// stop at every page boundary. Linux gives transparent huge pages only to
// memory that asks for them when THP is in "madvise" mode (Debian's default);
// NumPy asks for its arrays of 4 MiB and more, so POT's K had them and
// Conveyor's did not. Where THP is off, or the advice fails, the memory is
// ordinary pages: the advice is a hint, never an error.
#pragma once

#include <cstddef>
#include <memory>

namespace conveyor::detail {

struct large_array_free {
  void operator()(void* p) const noexcept;
};

/// `bytes` bytes of uninitialized memory, huge-page advised from 4 MiB on.
std::unique_ptr<void, large_array_free> allocate_large(std::size_t bytes);

/// An uninitialized array of `n` trivially copyable T.
template <class T>
class large_array {
 public:
  explicit large_array(std::size_t n) : memory_(allocate_large(n * sizeof(T))), size_(n) {}
  T* data() { return static_cast<T*>(memory_.get()); }
  const T* data() const { return static_cast<const T*>(memory_.get()); }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<void, large_array_free> memory_;
  std::size_t size_;
};

}  // namespace conveyor::detail
