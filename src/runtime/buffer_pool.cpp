#include "runtime/buffer_pool.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

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
      auto it = free_.lower_bound(bytes);
      if (it != free_.end() && it->first <= 2 * bytes) {
        capacity = it->first;
        std::unique_ptr<char[]> out = std::move(it->second);
        kept_ -= it->first;
        free_.erase(it);
        return out;
      }
    }
    capacity = bytes;
    return std::unique_ptr<char[]>(new char[bytes]);  // default-initialized: not zeroed
  }

  void give(std::unique_ptr<char[]> data, std::size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace(capacity, std::move(data));
    kept_ += capacity;
    while (kept_ > limit_ && !free_.empty()) {  // the largest first
      auto last = std::prev(free_.end());
      kept_ -= last->first;
      free_.erase(last);
    }
  }

  std::size_t kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_;
  }

 private:
  pool() {
    if (const char* v = std::getenv("CONVEYOR_BUFFER_POOL_MB"); v && *v) limit_ = std::strtoull(v, nullptr, 10) << 20;
  }
  std::mutex mutex_;
  std::multimap<std::size_t, std::unique_ptr<char[]>> free_;  // by capacity
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
