// Collective argument checking: every rank learns about a bad argument found on
// any rank, so a collective call fails everywhere instead of hanging the others.
#pragma once

#include <mpi.h>

#include <string>

#include "conveyor/types.hpp"

namespace conveyor::detail {

/// A problem found locally; empty message means none.
struct local_problem_report {
  errc code = errc::success;
  std::string message;
  explicit operator bool() const { return code != errc::success; }
};

/// Collective over `comm`: if any rank reports a problem, every rank throws
/// conveyor::error with the message of the lowest such rank, prefixed by
/// "rank k: " when it came from another rank. Costs one MPI_Allreduce of one int,
/// plus one MPI_Bcast when something failed.
void agree_or_throw(MPI_Comm comm, const local_problem_report& mine);

}  // namespace conveyor::detail
