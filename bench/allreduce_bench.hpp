// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench allreduce`: Conveyor's allreduce algorithms next to the stock
// MPI_Allreduce of the MPI library it was built with, on the ranks of the job.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace conveyor::bench {

struct allreduce_bench_options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t size_step = 0;  // 0: every power of two and 3 * 2^k; else a geometric series
  int reps = 20;
  /// Rows: Conveyor's algorithms by name ("auto", "ring", ..., "mpi": the MPI
  /// library's allreduce called through Conveyor), "stock" (MPI_Allreduce called
  /// directly: the baseline every row is compared with) and "stock-again" (the same
  /// call as a second row: an A/A control, whose ratio to stock is the noise floor)
  /// and "stock-dup" (MPI_Allreduce on a duplicate of MPI_COMM_WORLD: the call a
  /// wrapper with a private communicator makes). Empty: "auto", every algorithm
  /// of the table (conveyor::allreduce_algorithms()) and "stock".
  std::vector<std::string> impls;
  std::string mpi_label;   // label of the stock row, e.g. "MPI_Allreduce (tuned ring)"
  std::string config;      // free text naming the configuration, e.g. "2 nodes x 2 ranks, 1 Gbit"
  int ranks_per_node = 0;  // passed to Conveyor (0: real shared-memory nodes)
  std::string json_path, csv_path;
};

/// Collective over MPI_COMM_WORLD; rank 0 prints and writes the files.
int run_allreduce_bench(const allreduce_bench_options& options);

/// The column log-sum-exp over ranks: one allreduce with op::logaddexp against the
/// typical two (max, then sum), float64, Conveyor's and the MPI library's.
int run_lse_bench(const allreduce_bench_options& options);

/// The overlap benchmark: allreduce + a per-chunk compute of comparable cost,
/// overlapped through on_chunk vs run one after the other.
int run_overlap_bench(const allreduce_bench_options& options);

}  // namespace conveyor::bench
