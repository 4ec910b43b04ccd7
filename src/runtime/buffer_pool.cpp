// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/buffer_pool.hpp"

#include <cstdlib>
#include <deque>
#include <mutex>

#include "conveyor/settings.hpp"

namespace conveyor::detail {
namespace {

class pool {
 public:
  static pool& instance() {
    static pool* p = new pool;  // never destroyed: plans may be freed during static destruction
    return *p;
  }

  std::unique_ptr<char[]> take(std::size_t bytes, std::size_t& capacity) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Best fit: the smallest free buffer that holds `bytes`, if at most twice as big.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->capacity >= bytes && it->capacity <= 2 * bytes &&
            (best == free_.end() || it->capacity < best->capacity))
          best = it;
      }
      if (best != free_.end()) {
        capacity = best->capacity;
        std::unique_ptr<char[]> out = std::move(best->data);
        kept_ -= best->capacity;
        free_.erase(best);
        return out;
      }
    }
    capacity = bytes;
    return std::unique_ptr<char[]>(new char[bytes]);  // default-initialized: not zeroed
  }

  void give(std::unique_ptr<char[]> data, std::size_t capacity) {
    if (capacity > limit_) return;  // (freed here) keeping it would push out every other buffer
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back({capacity, std::move(data)});  // the newest at the back
    kept_ += capacity;
    // Beyond the limit, the buffers given back longest ago go first: the working
    // set of the calls being repeated now stays.
    while ((kept_ > limit_ || free_.size() > kMaxBuffers) && !free_.empty()) {
      kept_ -= free_.front().capacity;
      free_.pop_front();
    }
  }

  std::size_t kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_;
  }

 private:
  struct entry {
    std::size_t capacity;
    std::unique_ptr<char[]> data;
  };
  static constexpr std::size_t kMaxBuffers = 256;  // searched linearly

  pool() {
    if (const auto v = setting("CONVEYOR_BUFFER_POOL_MB")) limit_ = std::strtoull(v->c_str(), nullptr, 10) << 20;
  }
  std::mutex mutex_;
  std::deque<entry> free_;  // oldest first
  std::size_t kept_ = 0;
  std::size_t limit_ = std::size_t{1024} << 20;
};

}  // namespace

void byte_buffer::resize(std::size_t bytes) {
  if (bytes <= capacity_) {
    size_ = bytes;
    return;
  }
  reset();
  if (bytes == 0) return;
  data_ = pool::instance().take(bytes, capacity_);
  size_ = bytes;
}

void byte_buffer::reset() {
  if (data_) pool::instance().give(std::move(data_), capacity_);
  data_.reset();
  size_ = capacity_ = 0;
}

std::size_t pooled_bytes() { return pool::instance().kept(); }

}  // namespace conveyor::detail
