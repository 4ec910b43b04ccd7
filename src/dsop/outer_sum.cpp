// SPDX-License-Identifier: BSD-3-Clause
// Distributed sum of outer products: G = sum over P ranks of a_i b_i^T (N x M).
//
// The checks, the agreement and the choice of algorithm; each algorithm (its
// steps, bytes on the wire and local work) is one row of dsop/algorithms/table.hpp,
// one file each, and runs on row-major G.
//
// Column-major G is the row-major G^T = sum b_i a_i^T: the full result swaps the
// roles of (a, N) and (b, M); the distributed result computes its row block
// row-major and transposes it locally into column-major storage.
// Limits: float32 and float64; G must fit in memory on every rank (full mode) and
// the row-block allgather needs n_p M T bytes of scratch.
#include "conveyor/settings.hpp"
#include "conveyor/dsop.hpp"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/box_copy.hpp"
#include "runtime/context.hpp"
#include "dsop/algorithms/table.hpp"
#include "conveyor/contract.hpp"
#include "core/names.hpp"
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
  const dsop::detail::dsop_row& row = dsop::detail::dsop_row_of(alg);
  const auto& tables = dsop::detail::outer_active_tables();
  const auto& k = [&]() -> const dsop::detail::outer_kernels<T>& {
    if constexpr (sizeof(T) == 4) return tables.f32;
    else return tables.f64;
  }();
  const T* ta = static_cast<const T*>(a);
  const T* tb = static_cast<const T*>(b);
  T* tG = static_cast<T*>(G);
  if (o.order == matrix_order::row_major) {
    row.run(dsop::detail::dsop_call<T>{ta, N, tb, M, tG, o.distributed, comm, rank, size, o, k});
  } else if (!o.distributed) {
    row.run(dsop::detail::dsop_call<T>{tb, M, ta, N, tG, false, comm, rank, size, o, k});  // G^T row-major
  } else {
    const outer_block mine = outer_rows(N, rank, size);
    std::vector<T> block(mine.count * M);
    row.run(dsop::detail::dsop_call<T>{ta, N, tb, M, block.data(), true, comm, rank, size, o, k});
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
