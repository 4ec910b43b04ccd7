// SPDX-License-Identifier: BSD-3-Clause
// Internal: the rows of a byte map (conveyor/alltoall.hpp) in order, for the
// all-to-all's pack, unpack and direct copies, and its cross-memory reads.
#pragma once

#include <array>
#include <cstdint>

#include "conveyor/alltoall.hpp"

namespace conveyor::redistribute::detail {

inline char* at(const void* base, std::int64_t offset) {
  return reinterpret_cast<char*>(reinterpret_cast<std::intptr_t>(base) + offset);
}

// The rows of a map in order: next() gives each row's address and length.
class row_walk {
 public:
  row_walk(const byte_map& m, const void* base) : m_(m), base_(base) {}

  bool next(char*& row, std::int64_t& length) {
    while (box_ < m_.size()) {
      const byte_box& b = m_[box_];
      if (!started_) {
        started_ = true;
        idx_.fill(0);
        if (b.run <= 0 || b.bytes() <= 0) {
          advance_box();
          continue;
        }
      } else if (!step(b)) {
        advance_box();
        continue;
      }
      std::int64_t off = b.offset;
      for (int k = 0; k < b.axes; ++k) off += idx_[static_cast<std::size_t>(k)] * b.stride[static_cast<std::size_t>(k)];
      row = at(base_, off);
      length = b.run;
      return true;
    }
    return false;
  }

 private:
  // The next row of box b (odometer over its axes, innermost fastest); false at its end.
  bool step(const byte_box& b) {
    for (int k = b.axes - 1; k >= 0; --k) {
      auto& i = idx_[static_cast<std::size_t>(k)];
      if (++i < b.count[static_cast<std::size_t>(k)]) return true;
      i = 0;
    }
    return false;
  }
  void advance_box() {
    ++box_;
    started_ = false;
  }

  const byte_map& m_;
  const void* base_;
  std::size_t box_ = 0;
  bool started_ = false;
  std::array<std::int64_t, byte_box::max_axes> idx_{};
};

// A map's bytes as a stream that hands out pieces of at most a given length
// (rows cut where the other side's rows end). Copyable: a copy looks ahead.
class byte_stream {
 public:
  byte_stream(const byte_map& m, const void* base) : w_(m, base) {}
  /// The next piece of at most `max` bytes; false when the map is exhausted.
  bool take(std::int64_t max, char*& piece, std::int64_t& n) {
    if (left_ == 0 && !w_.next(p_, left_)) return false;
    n = left_ < max ? left_ : max;
    piece = p_;
    p_ += n, left_ -= n;
    return true;
  }

 private:
  row_walk w_;
  char* p_ = nullptr;
  std::int64_t left_ = 0;
};

}  // namespace conveyor::redistribute::detail
