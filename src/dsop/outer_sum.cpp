// SPDX-License-Identifier: BSD-3-Clause
// Distributed sum of outer products: G = sum over P ranks of a_i b_i^T (N x M).
//
// Per algorithm, with T-byte elements, rows split N = sum_p n_p (balanced), a
// ring allgather of k bytes per rank costing (P-1)(alpha + k beta) (the model
// that `auto` uses: dsop/cost_model.hpp):
//
//   allgather:     allgather of the pairs, (N+M) T bytes per rank;
//                  local: P N M multiply-adds, N M T bytes of G written.
//   generalized_rabenseifner:
//                  allgather of the pairs, (N+M) T bytes per rank;
//                  local: P n_p M multiply-adds (N M / P on average), n_p M T written;
//                  allgather(v) of the row blocks, n_p M T bytes per rank (skipped
//                  when `distributed`).
//   allreduce:     local a b^T (N M multiplies, N M T written); MPI_Allreduce of
//                  N M T bytes (ring: 2 (P-1)/P N M T per rank, plus the additions);
//                  distributed: MPI_Reduce_scatter instead (half the bytes).
//   ring:          the same with conveyor::allreduce / conveyor::reduce_scatter.
//
// Column-major G is the row-major G^T = sum b_i a_i^T: the full result swaps the
// roles of (a, N) and (b, M); the distributed result computes its row block
// row-major and transposes it locally into column-major storage.
// Limits: float32 and float64; G must fit in memory on every rank (full mode) and
// the row-block allgather needs n_p M T bytes of scratch.
#include "conveyor/settings.hpp"
#include "conveyor/dsop.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/box_copy.hpp"
#include "runtime/context.hpp"
#include "dsop/cost_model.hpp"
#include "conveyor/contract.hpp"
#include "core/names.hpp"
#include "dsop/outer_product_kernels.hpp"
#include "runtime/message_pieces.hpp"
#include "runtime/partition.hpp"

namespace conveyor {

CONVEYOR_ENUM_NAMES(outer_algorithm, CONVEYOR_OUTER_ALGORITHM_LIST, "DSOP algorithm", kNames, outer_algorithm_name,
                    parse_outer_algorithm)
CONVEYOR_ENUM_NAMES(matrix_order, CONVEYOR_MATRIX_ORDER_LIST, "matrix order", kOrderNames, matrix_order_name,
                    parse_matrix_order)

outer_block outer_rows(std::size_t N, int rank, int size) {
  if (size <= 0 || rank < 0 || rank >= size) {
    throw error(errc::invalid_argument, "outer_rows: rank " + std::to_string(rank) + " of " + std::to_string(size));
  }
  const detail::part_range r = detail::balanced_part(N, static_cast<std::size_t>(rank), static_cast<std::size_t>(size));
  return {r.first, r.count};
}

namespace {

outer_algorithm env_algorithm() {
  static const outer_algorithm a = [] {
    const auto env = setting("CONVEYOR_DSOP_ALGORITHM");
    return env ? parse_outer_algorithm(*env) : outer_algorithm::automatic;
  }();
  return a;
}

// ---------------------------------------------------------------------------
// The algorithms (row-major G; see the top of this file)
// ---------------------------------------------------------------------------
template <class T>
struct dsop_run {
  const T* a;
  std::size_t N;
  const T* b;
  std::size_t M;
  T* out;  // full: N x M; distributed: this rank's rows x M
  bool distributed;
  MPI_Comm comm;
  int rank, size;
  const outer_options& options;
  const dsop::detail::outer_kernels<T>& k;

  outer_block mine() const { return outer_rows(N, rank, size); }
  std::vector<std::size_t> block_counts() const {
    std::vector<std::size_t> c(static_cast<std::size_t>(size));
    for (int p = 0; p < size; ++p) c[static_cast<std::size_t>(p)] = outer_rows(N, p, size).count * M;
    return c;
  }
  // Where this rank's rows go: the start of `out` when distributed, else their place in G.
  T* my_rows_out() const { return distributed ? out : out + mine().first * M; }

  // All P pairs [a_p | b_p], rank-major, (N + M) elements each.
  std::vector<T> gather_pairs() const {
    std::vector<T> mine_pair(N + M), all(static_cast<std::size_t>(size) * (N + M));
    std::copy(a, a + N, mine_pair.begin());
    std::copy(b, b + M, mine_pair.begin() + static_cast<std::ptrdiff_t>(N));
    allgather(mine_pair.data(), all.data(), N + M, dtype_of_v<T>, comm);
    return all;
  }

  void rows_from(const std::vector<T>& pairs, std::size_t row0, std::size_t rows, T* G) const {
    k.rows_from_pairs(pairs.data(), N + M, pairs.data() + N, N + M, static_cast<std::size_t>(size), row0, rows, M, G,
                      M);
  }

  void local_outer(T* G) const { k.rows_from_pairs(a, 0, b, 0, 1, 0, N, M, G, M); }

  void run_allgather() const {
    const auto pairs = gather_pairs();
    if (distributed) rows_from(pairs, mine().first, mine().count, out);
    else rows_from(pairs, 0, N, out);
  }

  void run_generalized_rabenseifner() const {
    const auto pairs = gather_pairs();
    rows_from(pairs, mine().first, mine().count, my_rows_out());
    if (!distributed) allgatherv(MPI_IN_PLACE, out, block_counts(), dtype_of_v<T>, comm);
  }

  void run_ring() const {
    if (!distributed) {
      local_outer(out);
      allreduce(out, N * M, op::sum, comm, options.allreduce);
      return;
    }
    std::vector<T> local(N * M);
    local_outer(local.data());
    reduce_scatter(local.data(), out, block_counts(), dtype_of_v<T>, op::sum, comm);
  }

  // The paper's baseline: the MPI library's own collectives.
  void run_allreduce() const {
    const MPI_Datatype type = sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
    const auto counts = block_counts();
    const bool fits = std::all_of(counts.begin(), counts.end(), [](std::size_t c) { return c <= INT_MAX; });
    if (distributed && fits) {
      std::vector<T> local(N * M);
      local_outer(local.data());
      std::vector<int> icounts(counts.begin(), counts.end());
      detail::check_mpi(MPI_Reduce_scatter(local.data(), out, icounts.data(), type, MPI_SUM, comm),
                        "MPI_Reduce_scatter");
      return;
    }
    std::vector<T> full;
    T* G = out;
    if (distributed) {  // counts beyond int: a chunked allreduce, then keep the own rows
      full.resize(N * M);
      G = full.data();
    }
    local_outer(G);
    detail::for_each_piece(N * M, [&](std::size_t off, int n, int) {  // in elements
      detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, G + off, n, type, MPI_SUM, comm), "MPI_Allreduce");
    });
    if (distributed) std::copy(G + mine().first * M, G + (mine().first + mine().count) * M, out);
  }

  void run(outer_algorithm alg) const {
    switch (alg) {
      case outer_algorithm::allgather:
        run_allgather();
        break;
      case outer_algorithm::generalized_rabenseifner:
        run_generalized_rabenseifner();
        break;
      case outer_algorithm::ring:
        run_ring();
        break;
      case outer_algorithm::allreduce:
        run_allreduce();
        break;
      case outer_algorithm::automatic:
        throw error(errc::internal, "outer_sum: no algorithm chosen");
    }
  }
};

// rows x M row-major block -> the same block column-major (stride rows).
// The row block (rows x M, row-major) into column-major storage (leading
// dimension rows), by the runtime's one tiled transpose (runtime/box_copy.hpp).
template <class T>
void to_column_major(const T* in, std::size_t rows, std::size_t M, T* out) {
  detail::box_copy c;  // destination order: column j, then row i
  c.ndim = 2;
  c.extent = {static_cast<std::int64_t>(M), static_cast<std::int64_t>(rows)};
  c.src_stride = {1, static_cast<std::int64_t>(M)};
  c.dst_stride = {static_cast<std::int64_t>(rows), 1};
  detail::apply(dtype_of_v<T>, c, in, out, detail::scaling{});
}

template <class T>
void run_typed(const void* a, std::size_t N, const void* b, std::size_t M, void* G, outer_algorithm alg,
               const outer_options& o, MPI_Comm comm, int rank, int size) {
  const auto& tables = dsop::detail::outer_active_tables();
  const auto& k = [&]() -> const dsop::detail::outer_kernels<T>& {
    if constexpr (sizeof(T) == 4) return tables.f32;
    else return tables.f64;
  }();
  const T* ta = static_cast<const T*>(a);
  const T* tb = static_cast<const T*>(b);
  T* tG = static_cast<T*>(G);
  if (o.order == matrix_order::row_major) {
    dsop_run<T>{ta, N, tb, M, tG, o.distributed, comm, rank, size, o, k}.run(alg);
  } else if (!o.distributed) {
    dsop_run<T>{tb, M, ta, N, tG, false, comm, rank, size, o, k}.run(alg);  // G^T row-major
  } else {
    const outer_block mine = outer_rows(N, rank, size);
    std::vector<T> block(mine.count * M);
    dsop_run<T>{ta, N, tb, M, block.data(), true, comm, rank, size, o, k}.run(alg);
    to_column_major(block.data(), mine.count, M, tG);
  }
}

}  // namespace

outer_report outer_sum(const void* a, std::size_t N, const void* b, std::size_t M, void* G, std::size_t G_count,
                       dtype t, MPI_Comm user_comm, const outer_options& o) {
  collective_call call("outer_sum", user_comm);
  const MPI_Comm comm = call.comm();
  const int rank = call.rank(), size = call.size();
  const outer_block mine = outer_rows(N, rank, size);
  const int alg_value = static_cast<int>(o.algorithm), order_value = static_cast<int>(o.order);
  const auto bad = [&](errc code, const std::string& m) { call.fail(code, m); };
  if (t != dtype::float32 && t != dtype::float64) bad(errc::unsupported, "dtype must be float32 or float64");
  if (alg_value < 0 || alg_value >= static_cast<int>(kNames.size())) bad(errc::invalid_argument, "unknown algorithm");
  if (order_value < 0 || order_value >= static_cast<int>(kOrderNames.size()))
    bad(errc::invalid_argument, "unknown matrix order");
  if (static_cast<unsigned>(o.allreduce.algorithm) >= static_cast<unsigned>(allreduce_algorithm_count)) {
    bad(errc::invalid_argument, "unknown allreduce algorithm");
  }
  if (o.allreduce.ranks_per_node < 0) bad(errc::invalid_argument, "ranks_per_node must be >= 0");
  if (N != 0 && M != 0 && N > SIZE_MAX / M) bad(errc::invalid_argument, "N * M overflows");
  if (N > 0 && !a) bad(errc::invalid_argument, "a is null with N = " + std::to_string(N));
  if (M > 0 && !b) bad(errc::invalid_argument, "b is null with M = " + std::to_string(M));
  const std::size_t need = (o.distributed ? mine.count : N) * M;
  if (call.ok() && G_count < need) {
    bad(errc::invalid_argument,
        "G holds " + std::to_string(G_count) + " elements, " +
            (o.distributed ? "this rank's " + std::to_string(mine.count) + " rows" : std::string("N x M")) + " need " +
            std::to_string(need));
  }
  if (need > 0 && !G) bad(errc::invalid_argument, "G is null");
  // A heavy operation: always agreed, arguments always matched (`validate` adds nothing).
  call.must_match("N", static_cast<std::int64_t>(N))
      .must_match("M", static_cast<std::int64_t>(M))
      .must_match("dtypes", t);
  call.must_match("algorithms", o.algorithm, outer_algorithm_name)
      .must_match("matrix orders", order_value)
      .must_match("distributed flags", o.distributed ? 1 : 0)
      .must_match("allreduce algorithms", o.allreduce.algorithm, algorithm_name)
      .must_match("ranks_per_node values", o.allreduce.ranks_per_node);
  call.agree();

  outer_report report;
  report.first_row = o.distributed ? mine.first : 0;
  report.rows = o.distributed ? mine.count : N;
  outer_algorithm alg = o.algorithm == outer_algorithm::automatic ? env_algorithm() : o.algorithm;
  detail::comm_context& ctx = detail::context_of(call);
  const int ppn = o.allreduce.ranks_per_node > 0 ? o.allreduce.ranks_per_node : ctx.env_ranks_per_node;
  const detail::node_layout& layout = ctx.layout(ppn);
  const dsop::detail::dsop_shape shape{N, M, dtype_size(t), size, o.distributed};
  const cost_model& params = current_cost_model();
  if (alg == outer_algorithm::automatic) alg = dsop::detail::choose_dsop(shape, layout, params);
  report.algorithm = alg;
  report.predicted_seconds = dsop::detail::predict_dsop(alg, shape, layout, params);
  if (N == 0 || M == 0) return report;
  if (t == dtype::float32) run_typed<float>(a, N, b, M, G, alg, o, comm, rank, size);
  else run_typed<double>(a, N, b, M, G, alg, o, comm, rank, size);
  return report;
}

}  // namespace conveyor
