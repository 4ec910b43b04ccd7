// Helpers shared by the MPI test programs.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

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
