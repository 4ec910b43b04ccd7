// SPDX-License-Identifier: BSD-3-Clause
// The run context of a solve (run_context.hpp).
#include "sinkhorn/run_context.hpp"

#include "runtime/context.hpp"
#include "runtime/cpu_affinity.hpp"
#include "core/names.hpp"

#include <omp.h>

#include <array>
#include <cstring>
#include <chrono>
#include <cstdint>
#include <numeric>

namespace conveyor::sinkhorn {

CONVEYOR_ENUM_NAMES(error_norm, CONVEYOR_SINKHORN_NORM_LIST, "error norm", kNormNames, norm_name, parse_norm)
CONVEYOR_ENUM_NAMES(variant, CONVEYOR_SINKHORN_VARIANT_LIST, "Sinkhorn variant", kVariantNames, variant_name,
                    parse_variant)
CONVEYOR_ENUM_NAMES(reg_type, CONVEYOR_SINKHORN_REG_TYPE_LIST, "reg_type", kRegTypeNames, reg_type_name, parse_reg_type)
CONVEYOR_ENUM_NAMES(stop_rule, CONVEYOR_SINKHORN_STOP_LIST, "stop rule", kStopNames, stop_rule_name, parse_stop_rule)
CONVEYOR_ENUM_NAME_ONLY(status, CONVEYOR_SINKHORN_STATUS_LIST, "Sinkhorn status", kStatusNames, status_name)

row_block balanced_rows(std::size_t M, int rank, int size) {
  if (size <= 0 || rank < 0 || rank >= size) {
    throw error(errc::invalid_argument, "balanced_rows: rank " + std::to_string(rank) + " of " + std::to_string(size));
  }
  const auto [begin, end] = detail::share(M, rank, size);
  return {begin, end - begin};
}

namespace detail {

void check_call(const call_shape& c, const options& o) {
  const auto bad = [](const std::string& m) { throw error(errc::invalid_argument, m); };
  const int kind = static_cast<int>(o.variant);
  if (kind < 0 || kind >= variant_count) bad("unknown variant " + std::to_string(kind));
  if (!c.in_place && !c.transport && rewrites_matrix(o.variant)) {
    bad("variant '" + std::string(variant_name(o.variant)) +
        "' rescales A in place; call scale_in_place (scale takes a read-only A: variant fused)");
  }
  if (c.ld < c.cols) bad("leading dimension " + std::to_string(c.ld) + " < columns " + std::to_string(c.cols));
  if (c.matrix_null && c.rows > 0 && c.cols > 0) bad("matrix is null");
  if (c.row_marginal_null && c.rows > 0) bad("row marginal is null");
  if (c.column_marginal_null && c.cols > 0) bad("column marginal is null");
  if (!(o.tol >= 0)) bad("tol must be >= 0");
  if (o.max_iter < 1) bad("max_iter must be >= 1");
  if (o.check_every < 1) bad("check_every must be >= 1");
  if (static_cast<int>(o.norm) < 0 || o.norm > error_norm::l2)
    bad("unknown norm " + std::to_string(static_cast<int>(o.norm)));
  if (o.threads < 0) bad("threads must be >= 0");
  check_unbalanced(o.reg_m_rows, o.reg_m_cols, o.reg_type, o.stop);
  if (!c.transport && (!std::isinf(o.reg_m_rows) || !std::isinf(o.reg_m_cols))) {
    bad("reg_m (unbalanced OT) applies to transport only");
  }
  if (o.block.mc == 0 || o.block.nc == 0 || o.block.mr == 0 || o.block.nr == 0) bad("blocking sizes must be > 0");
  if (!o.init_u.empty() && o.init_u.size() != c.rows) {
    bad("init_u has " + std::to_string(o.init_u.size()) + " entries for " + std::to_string(c.rows) + " rows");
  }
  if (!o.init_v.empty() && o.init_v.size() != c.cols) {
    bad("init_v has " + std::to_string(o.init_v.size()) + " entries for " + std::to_string(c.cols) + " columns");
  }
  // Scaling factors must be positive; log-domain log scalings may be any finite value.
  const bool logs = c.transport && o.log_domain;
  for (const auto* init : {&o.init_u, &o.init_v}) {
    for (double x : *init) {
      if (!std::isfinite(x) || (!logs && x <= 0)) {
        bad(std::string(init == &o.init_u ? "init_u" : "init_v") + " has " + std::to_string(x) +
            (logs ? " (log scalings must be finite)" : " (scaling factors must be finite and > 0)"));
      }
    }
  }
}

side_update update_for(double reg_m, double eps, reg_type type) {
  if (std::isinf(reg_m)) return {};
  const double fi = reg_m / (reg_m + eps);
  return {fi, type == reg_type::entropy ? fi : 1.0};
}

void check_unbalanced(double reg_m_rows, double reg_m_cols, reg_type type, stop_rule stop) {
  const auto bad = [](const std::string& m) { throw error(errc::invalid_argument, m); };
  for (double r : {reg_m_rows, reg_m_cols}) {
    if (!(r > 0)) bad("reg_m must be > 0 (infinity: a balanced marginal), got " + std::to_string(r));
  }
  if (type != reg_type::kl && type != reg_type::entropy)
    bad("unknown reg_type " + std::to_string(static_cast<int>(type)));
  if (stop != stop_rule::marginal && stop != stop_rule::change) {
    bad("unknown stop rule " + std::to_string(static_cast<int>(stop)));
  }
}

void match_unbalanced(collective_call& call, double reg_m_rows, double reg_m_cols, reg_type type, stop_rule stop) {
  std::int64_t v[4] = {0, 0, static_cast<std::int64_t>(type), static_cast<std::int64_t>(stop)};
  std::memcpy(&v[0], &reg_m_rows, sizeof(double));
  std::memcpy(&v[1], &reg_m_cols, sizeof(double));
  call.must_match_digest("unbalanced options (reg_m_rows, reg_m_cols, reg_type, stop)", digest_of(v, 4));
}

int threads_for(collective_call& call, int requested, std::size_t work_elements) {
  if (requested > 0) return requested;
  // Automatic: OpenMP's default, capped by this rank's share of its node's CPUs
  // (ranks x threads never exceeds them: oversubscribed OpenMP threads spin;
  // runtime/cpu_affinity.hpp), and no more than one thread per 64 Ki elements,
  // where a parallel region costs more than it saves.
  // (The node layout is collective the first time: every rank asks for it.)
  const conveyor::detail::node_layout& nodes = conveyor::detail::context_of(call).layout(0);
  const auto local_ranks =
      nodes.members[static_cast<std::size_t>(nodes.node_of[static_cast<std::size_t>(call.rank())])].size();
  const auto available = static_cast<std::size_t>(
      conveyor::detail::threads_per_rank(omp_get_max_threads(), nodes.node_cpus, static_cast<int>(local_ranks)));
  const std::size_t work = work_elements / (std::size_t{64} << 10);
  return static_cast<int>(std::clamp<std::size_t>(work, 1, available));
}

run_context start(collective_call& call, const call_shape& shape, dtype t, const options& o, double eps) {
  call.check([&] { check_call(shape, o); });
  call.must_match("column counts", static_cast<std::int64_t>(shape.cols)).must_match("dtypes", t);
  call.must_match("variants", o.variant, variant_name).must_match("max_iter values", o.max_iter);
  call.must_match_real("tolerances", o.tol).must_match("log_domain flags", o.log_domain ? 1 : 0);
  call.must_match("overlap flags", o.overlap ? 1 : 0);
  call.must_match("allreduce algorithms", o.allreduce.algorithm, algorithm_name);
  call.must_match("init_v given flags", o.init_v.empty() ? 0 : 1);
  call.must_match("norms", o.norm, norm_name).must_match("check_every values", o.check_every);
  call.must_match("columns_first flags", o.columns_first ? 1 : 0);
  match_unbalanced(call, o.reg_m_rows, o.reg_m_cols, o.reg_type, o.stop);
  if (eps > 0) call.must_match_real("eps values", eps);
  run_context ctx = agreed_context(call);
  place_rows(ctx, shape.rows);
  ctx.threads = threads_for(call, o.threads, shape.rows * shape.cols);
  return ctx;
}

void place_rows(run_context& ctx, std::size_t my_rows) {
  auto rows = static_cast<std::uint64_t>(my_rows), before = std::uint64_t{0}, total = std::uint64_t{0};
  conveyor::detail::check_mpi(MPI_Exscan(&rows, &before, 1, MPI_UINT64_T, MPI_SUM, ctx.comm), "MPI_Exscan");
  conveyor::detail::check_mpi(MPI_Allreduce(&rows, &total, 1, MPI_UINT64_T, MPI_SUM, ctx.comm), "MPI_Allreduce");
  ctx.first_row = ctx.rank == 0 ? 0 : static_cast<std::size_t>(before);  // Exscan leaves rank 0 undefined
  ctx.total_rows = static_cast<std::size_t>(total);
}

void check_masses(const run_context& ctx, double local_row_mass, double column_mass, bool single_precision,
                  const char* what, bool equal_masses) {
  double v[3] = {local_row_mass, column_mass, -column_mass};
  double sums[1];
  MPI_Allreduce(&v[0], sums, 1, MPI_DOUBLE, MPI_SUM, ctx.comm);
  double extremes[2] = {v[1], v[2]};
  MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_DOUBLE, MPI_MAX, ctx.comm);
  const std::string w = what;
  if (extremes[0] != -extremes[1]) {
    throw error(errc::invalid_argument, w + ": ranks passed different column marginals (sums " +
                                            std::to_string(-extremes[1]) + " to " + std::to_string(extremes[0]) + ")");
  }
  const double rows = sums[0], cols = column_mass;
  if (!(rows > 0) || !(cols > 0)) {
    throw error(errc::invalid_argument, w + ": marginals must have positive mass (rows " + std::to_string(rows) +
                                            ", columns " + std::to_string(cols) + ")");
  }
  if (!equal_masses) return;
  // Room for the rounding of marginals normalized in the caller's precision.
  const double tolerance = single_precision ? 1e-4 : 1e-8;
  if (std::abs(rows - cols) > tolerance * std::max(rows, cols)) {
    throw error(errc::invalid_argument, w + ": row and column marginals have different sums (" + std::to_string(rows) +
                                            " vs " + std::to_string(cols) + ")");
  }
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double ordered_sum(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0); }

}  // namespace detail
}  // namespace conveyor::sinkhorn
