// SPDX-License-Identifier: BSD-3-Clause
// The table of the point-cloud exchanges (exchange_table.hpp): one row each.
#include "sinkhorn/points/exchange_table.hpp"

#include <limits>
#include <string>

#include "runtime/context.hpp"

namespace conveyor::sinkhorn {
namespace detail {
namespace {

// The ring's pass is what the first pass measured: its work overlapped with the
// P - 1 transfers.
double ring_pass(const exchange_evidence& e) { return e.pass_seconds; }

// The gather's: the same work, after the cost model's allgather of the side
// (recursive doubling or Bruck: ceil(log2 P) alpha + (P - 1)/P bytes beta).
double gather_pass(const exchange_evidence& e) {
  int steps = 0;
  while ((1 << steps) < e.size) ++steps;
  return e.work_seconds + steps * e.link.alpha + (e.size - 1.0) / e.size * e.side_bytes * e.link.beta;
}

// The largest side `auto` gathers: every rank then holds all of it.
constexpr double kGatherMaxBytes = 256.0 * (1 << 20);

}  // namespace

const std::vector<exchange_row>& exchange_rows() {
  static const std::vector<exchange_row> rows = {
      {exchange::ring,
       "the blocks go round the ranks, each transfer overlapped with the work on the previous block: P - 1 "
       "messages a pass, two blocks in memory",
       false, std::numeric_limits<double>::infinity(), ring_pass},
      {exchange::gather,
       "one MPI_Allgatherv of the side a pass, then the same work on the same blocks: log2 P latencies, not "
       "overlapped, the whole side in memory (auto: up to 256 MiB)",
       true, kGatherMaxBytes, gather_pass},
  };
  return rows;
}

const exchange_row& exchange_row_of(exchange way) {
  if (way == exchange::automatic) return exchange_rows().front();
  for (const exchange_row& r : exchange_rows()) {
    if (r.way == way) return r;
  }
  throw error(errc::internal, "points: no row for the exchange " + std::string(exchange_name(way)));
}

exchange choose_exchange(MPI_Comm comm, const exchange_evidence& mine) {
  const auto& rows = exchange_rows();
  std::vector<double> slowest(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) slowest[i] = rows[i].predict(mine);
  conveyor::detail::check_mpi(
      MPI_Allreduce(MPI_IN_PLACE, slowest.data(), static_cast<int>(slowest.size()), MPI_DOUBLE, MPI_MAX, comm),
      "MPI_Allreduce");
  std::size_t best = 0;  // the first row fits any side
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (mine.side_bytes <= rows[i].max_side_bytes && slowest[i] < slowest[best]) best = i;
  }
  return rows[best].way;
}

}  // namespace detail

const std::vector<exchange_info>& points_exchanges() {
  static const std::vector<exchange_info> infos = [] {
    std::vector<exchange_info> out;
    for (const detail::exchange_row& r : detail::exchange_rows())
      out.push_back({r.way, exchange_name(r.way), r.summary});
    return out;
  }();
  return infos;
}

}  // namespace conveyor::sinkhorn
