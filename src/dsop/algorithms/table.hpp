// SPDX-License-Identifier: BSD-3-Clause
// DSOP's algorithms as data: one row per algorithm, saying what it is, what the
// cost model predicts for it, and how it runs on float32 and float64. Everything
// that lists, chooses or dispatches the algorithms reads this table: `auto`'s
// choice (dsop/cost_model.cpp: the cheapest prediction, ties to the earlier row),
// outer_sum's dispatch (dsop/outer_sum.cpp), and the public list
// conveyor::outer_algorithms() behind `conveyor info`, the Python docstring, and
// the benchmarks' and tests' case lists.
//
// Adding an algorithm (docs/architecture.md, "Adding a DSOP algorithm"): its name
// in CONVEYOR_OUTER_ALGORITHM_LIST (include/conveyor/enums.h), its file here
// defining its row (prediction and run), and that row in table.cpp's kRows, at its
// place in the model's order of preference on ties.
//
// Every run computes row-major G (or this rank's rows of it, `distributed`);
// outer_sum maps column-major storage onto that (dsop/outer_sum.cpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/dsop.hpp"
#include "dsop/cost_model.hpp"
#include "dsop/outer_product_kernels.hpp"

namespace conveyor::dsop::detail {

/// One call, row-major: G = sum over the P ranks of a b^T (N x M), into `out`
/// (full: N x M; distributed: this rank's rows x M). N, M > 0.
template <class T>
struct dsop_call {
  const T* a;
  std::size_t N;
  const T* b;
  std::size_t M;
  T* out;
  bool distributed;
  MPI_Comm comm;
  int rank, size;
  const outer_options& options;
  const outer_kernels<T>& k;

  outer_block mine() const { return outer_rows(N, rank, size); }
  /// Every rank's rows, in elements of G (the row blocks' counts).
  std::vector<std::size_t> block_counts() const {
    std::vector<std::size_t> c(static_cast<std::size_t>(size));
    for (int p = 0; p < size; ++p) c[static_cast<std::size_t>(p)] = outer_rows(N, p, size).count * M;
    return c;
  }
  /// Where this rank's rows go: the start of `out` when distributed, else their place in G.
  T* my_rows_out() const { return distributed ? out : out + mine().first * M; }

  /// All P pairs [a_p | b_p], rank-major, (N + M) elements each.
  std::vector<T> gather_pairs() const {
    std::vector<T> mine_pair(N + M), all(static_cast<std::size_t>(size) * (N + M));
    std::copy(a, a + N, mine_pair.begin());
    std::copy(b, b + M, mine_pair.begin() + static_cast<std::ptrdiff_t>(N));
    allgather(mine_pair.data(), all.data(), N + M, dtype_of_v<T>, comm);
    return all;
  }
  /// Rows [row0, row0 + rows) of G from all P pairs, into G (stride M).
  void rows_from(const std::vector<T>& pairs, std::size_t row0, std::size_t rows, T* G) const {
    k.rows_from_pairs(pairs.data(), N + M, pairs.data() + N, N + M, static_cast<std::size_t>(size), row0, rows, M, G,
                      M);
  }
  /// This rank's own a b^T, N x M, into G.
  void local_outer(T* G) const { k.rows_from_pairs(a, 0, b, 0, 1, 0, N, M, G, M); }
};

struct dsop_row {
  outer_algorithm algorithm;
  /// One line: what it does and when it pays (conveyor info, the docstrings).
  const char* summary;
  /// Predicted seconds (runtime/cost_model.hpp's parameters; dsop/cost_model.hpp's terms).
  double (*predict)(const dsop_shape& s, const node_layout& layout, const cost_model& p);
  void (*run_f32)(const dsop_call<float>& c);
  void (*run_f64)(const dsop_call<double>& c);

  template <class T>
  void run(const dsop_call<T>& c) const {
    if constexpr (sizeof(T) == 4) run_f32(c);
    else run_f64(c);
  }
};

/// Every row, in the model's order of preference on ties (Conveyor's own before
/// the MPI library's baseline).
const std::vector<const dsop_row*>& dsop_rows();
/// The row of `a` (every algorithm but `automatic`).
const dsop_row& dsop_row_of(outer_algorithm a);

// The rows, one file each.
extern const dsop_row allgather_row;
extern const dsop_row generalized_rabenseifner_row;
extern const dsop_row ring_row;
extern const dsop_row allreduce_row;

}  // namespace conveyor::dsop::detail
