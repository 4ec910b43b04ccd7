// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the MPI test programs.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::testing {

inline int rank_of(MPI_Comm c = MPI_COMM_WORLD) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}

inline int size_of(MPI_Comm c = MPI_COMM_WORLD) {
  int s = 1;
  MPI_Comm_size(c, &s);
  return s;
}

/// Every rank's `mine` (any lengths), concatenated in rank order on every rank;
/// `counts`, if given, receives each rank's length.
template <class T>
std::vector<T> gather_all(const std::vector<T>& mine, std::vector<int>* counts = nullptr) {
  static_assert(std::is_trivially_copyable_v<T>, "gathered as bytes");
  const int P = size_of();
  const int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<int> sizes(static_cast<std::size_t>(P)), offsets(static_cast<std::size_t>(P));
  MPI_Allgather(&bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int q = 0; q < P; ++q) {
    offsets[static_cast<std::size_t>(q)] = total;
    total += sizes[static_cast<std::size_t>(q)];
  }
  std::vector<T> all(static_cast<std::size_t>(total) / sizeof(T));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD);
  if (counts) {
    counts->clear();
    for (int s : sizes) counts->push_back(s / static_cast<int>(sizeof(T)));
  }
  return all;
}

/// Runs a collective call that must fail, on every rank, with a message containing `needle`.
inline void expect_error_everywhere(const std::function<void()>& call, const std::string& needle) {
  std::string message;
  try {
    call();
  } catch (const error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(needle), std::string::npos) << "got: '" << message << "', want '" << needle << "'";
}

/// FNV-1a of the bytes: equal on every rank iff (with overwhelming probability)
/// the buffers are bitwise identical.
inline std::uint64_t hash_bytes(const void* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace conveyor::testing
