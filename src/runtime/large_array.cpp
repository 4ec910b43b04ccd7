// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/large_array.hpp"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace conveyor::detail {

namespace {
constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kAdviseFrom = std::size_t(4) << 20;  // NumPy's threshold
}  // namespace

void large_array_free::operator()(void* p) const noexcept { std::free(p); }

std::unique_ptr<void, large_array_free> allocate_large(std::size_t bytes) {
  if (bytes == 0) return {};
  void* p = nullptr;
  if (bytes >= kAdviseFrom) {
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p = std::aligned_alloc(kHugePage, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: its failure is not an error
#endif
  } else {
    p = std::malloc(bytes);
  }
  if (!p) throw std::bad_alloc();
  return std::unique_ptr<void, large_array_free>(p);
}

}  // namespace conveyor::detail
