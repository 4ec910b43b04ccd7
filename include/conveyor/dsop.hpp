// SPDX-License-Identifier: BSD-3-Clause
// Distributed sum of outer products (DSOP): every rank i holds a_i (length N) and
// b_i (length M); every rank ends with G = sum_i a_i b_i^T (N x M), or with its own
// block of rows of G (`distributed`), which is what data-parallel training needs
// before the optimizer step.
//
// Algorithms (outer_algorithms() lists them, one row each of
// src/dsop/algorithms/; steps, bytes on the wire and flops in docs/algorithms.md,
// "DSOP"): allgather, allreduce (the MPI library's, the paper's baseline), ring
// (conveyor::allreduce), generalized_rabenseifner; automatic: the cheapest by the
// cost model (conveyor tune parameters); CONVEYOR_DSOP_ALGORITHM overrides it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/types.hpp"

namespace conveyor {

/// automatic, allgather, allreduce, ring, generalized_rabenseifner (conveyor/enums.h).
CONVEYOR_DECLARE_ENUM(outer_algorithm, CONVEYOR_OUTER_ALGORITHM_LIST, outer_algorithm_name, parse_outer_algorithm);

/// row_major, column_major.
CONVEYOR_DECLARE_ENUM(matrix_order, CONVEYOR_MATRIX_ORDER_LIST, matrix_order_name, parse_matrix_order);

/// One of DSOP's algorithms, as its table describes it (src/dsop/algorithms/:
/// one file and one row each).
struct outer_algorithm_info {
  outer_algorithm algorithm;
  std::string_view name;  // the setting's and Python's name ("ring", ...)
  const char* summary;    // what it does and when it pays
};
/// Every algorithm but `automatic`, in the model's order of preference on ties:
/// what `conveyor info` lists, and the case lists of the benchmarks and tests.
CONVEYOR_API const std::vector<outer_algorithm_info>& outer_algorithms();

struct outer_options {
  outer_algorithm algorithm = outer_algorithm::automatic;
  matrix_order order = matrix_order::row_major;
  /// Each rank receives only rows [report.first_row, report.first_row + report.rows)
  /// of G: a rows x M block (row-major: stride M; column-major: stride rows).
  bool distributed = false;
  /// How `ring` reduces (its algorithm, segment size, ranks per node); the node
  /// layout also feeds the cost model.
  allreduce_options allreduce;
};

struct outer_report {
  outer_algorithm algorithm = outer_algorithm::automatic;  // the one that ran
  std::size_t first_row = 0;                               // rows of G this rank holds in distributed mode
  std::size_t rows = 0;
  double predicted_seconds = 0;  // the cost model's estimate for the chosen algorithm
};

/// G = sum over ranks of a b^T. `G_count` is the capacity of G in elements: N * M,
/// or rows * M in distributed mode (outer_rows tells rows in advance). dtype:
/// float32 or float64. Collective over `comm`; bad or mismatched arguments on any
/// rank (null pointers with non-zero sizes, G too small, unsupported dtype,
/// different N) raise the same error on every rank.
CONVEYOR_API outer_report outer_sum(const void* a, std::size_t N, const void* b, std::size_t M, void* G,
                                    std::size_t G_count, dtype t, MPI_Comm comm, const outer_options& options = {});

template <class T>
outer_report outer_sum(const T* a, std::size_t N, const T* b, std::size_t M, T* G, std::size_t G_count, MPI_Comm comm,
                       const outer_options& options = {}) {
  return outer_sum(static_cast<const void*>(a), N, static_cast<const void*>(b), M, static_cast<void*>(G), G_count,
                   dtype_of_v<T>, comm, options);
}

/// The rows of an N-row G that `rank` of `size` holds in distributed mode: the
/// balanced block partition (the first N % size ranks get one more row).
using outer_block = row_range;  // {first, count}: the same type as sinkhorn::row_block
CONVEYOR_API outer_block outer_rows(std::size_t N, int rank, int size);

/// The cost model alone, without MPI: the seconds DSOP algorithm `a` is predicted
/// to take for an N x M result of `element_bytes`-byte elements on `nodes` nodes of
/// `ranks_per_node` ranks (`automatic`: the model's pick). As
/// predict_allreduce_seconds, for machines one cannot run on.
CONVEYOR_API double predict_outer_seconds(outer_algorithm a, std::size_t N, std::size_t M, std::size_t element_bytes,
                                          int nodes, int ranks_per_node, bool distributed, const cost_model& m);
/// The algorithm the model picks for that job (never `automatic`).
CONVEYOR_API outer_algorithm predicted_outer_choice(std::size_t N, std::size_t M, std::size_t element_bytes, int nodes,
                                                    int ranks_per_node, bool distributed, const cost_model& m);

}  // namespace conveyor
