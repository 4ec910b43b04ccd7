// SPDX-License-Identifier: BSD-3-Clause
// The all-to-all family's algorithms as data: one row per algorithm, saying what
// it is, which entry of the cost model's prediction is its own
// (alltoall_by_nodes.hpp's predict_alltoall_paths), whether it needs the ranks
// on several nodes, and how it runs on contiguous parts. alltoall_auto's and
// alltoallw_auto's candidates and their traces, the cost model's choice
// (CONVEYOR_ALLTOALL_MEASURE=0), the contiguous form's dispatch and the public
// list conveyor::alltoall_algorithms() behind `conveyor info`, the benchmarks'
// and the tests' case lists read this table.
//
// Adding an algorithm (docs/architecture.md, "Adding an all-to-all algorithm"):
// its file (the exchange and its contiguous run), its value in alltoall_path,
// its row in alltoall_table.cpp, and, if the cost model predicts it, its entry
// in predict_alltoall_paths.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "conveyor/alltoall.hpp"

namespace conveyor::redistribute::detail {

/// A row's key; `automatic` is measured_choice's "undecided", and `mpi` the MPI
/// library's own call (the caller's: libconveyor_mpi hands its PMPI call in).
enum class alltoall_path { automatic, mpi, conveyor, by_nodes };

struct alltoall_row {
  alltoall_path path;
  alltoall_algorithm_info info;
};

/// Every row, in the table's order (the library's second: measured_choice takes
/// candidates[1] as the library's call).
const std::vector<alltoall_row>& alltoall_rows();
const alltoall_row& alltoall_row_of(alltoall_path path);

/// The rows `auto` times, in the table's order: every row, those that need
/// several nodes only when the ranks span several. Returns how many (into `out`).
int alltoall_candidates(bool several_nodes, alltoall_path* out);

/// The cost model's choice among the modeled rows that apply.
alltoall_path alltoall_modeled_choice(const std::array<double, 2>& predicted, bool several_nodes);

/// The rows' contiguous runs that have no public name of their own: the
/// pairwise exchange (alltoallw of contiguous maps) and the library's
/// MPI_Alltoall of bytes.
alltoallw_report alltoall_pairwise(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm);
alltoallw_report alltoall_library(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm);

}  // namespace conveyor::redistribute::detail
