// SPDX-License-Identifier: BSD-3-Clause
// What users do with the plan of a point-cloud solve without forming it
// (conveyor/sinkhorn_points.hpp): apply_plan_points, out = P V or P^T V; and
// softmin_points, the same pass with a column of ones put before V: its sum
// gives each row's log-sum-exp and divides the others (a row of weights that
// sums to 1, whatever the scale of the potentials).
//
// Steps, on every rank r (rows: its X points with log_u, or its Y points with
// log_v under transpose; the other side carries V):
//   1. its home block for the ring: the other side's potentials (count), its
//      points transposed (dim x count), then V transposed (k x count);
//   2. the blocks go round the ring (block_ring, the solver's); for each, every
//      row folds sum_j exp(h_j - C_ij / eps) V_jc into a running
//      (max, k sums) in double (point_kernels' apply_block: the costs by
//      differences, or from dot_min_dim() by dot products on points centered
//      on their common bounding box, as the solver), each term times C_ij^power
//      under plan_apply_options::cost_power (softmin_points: not the ones);
//   3. out_ic = exp(row potential_i + max_i) sum_ic.
// softmin_points without V takes the solver's pass instead (merge_block: no column
// of ones, each row's exponentials summed as they are taken).
// Work: one solver pass (n m pairs over the ranks) plus k FMAs per pair; bytes
// per rank: (P - 1)/P of the other side's (1 + dim + k) N elements.
// A batch of B problems (plan_apply_options::batch) is the same steps once: the
// home block holds every problem's block one after another, the ring carries
// them together (B times the bytes, the same P - 1 messages), and the threads
// share the B n rows, each row meeting its own problem's part of the block.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conveyor/sinkhorn_points.hpp"
#include "sinkhorn/run_context.hpp"
#include "sinkhorn/points/kernels.hpp"
#include "sinkhorn/points/ring.hpp"
#include "sinkhorn/points/shares.hpp"

namespace conveyor::sinkhorn {
namespace detail {
namespace {

constexpr const char* kApply = "sinkhorn::apply_plan_points";
constexpr const char* kSoftmin = "sinkhorn::softmin_points";

template <class T>
struct apply_problem {
  const T *X, *Y, *log_u, *log_v, *V;
  T* out;
  std::size_t n, m, dim, k;
  double eps;
  bool softmin = false;  // softmin_points: log_u unused, lse the rows' log-sum-exps, out their averages
  T* lse = nullptr;
};

// One side of the product: the points and potentials of the rows (out's), and
// those of the columns (V's).
template <class T>
struct apply_sides {
  const T *row_points, *row_potential, *col_points, *col_potential;
  std::size_t rows, cols;
  std::vector<std::size_t> row_counts, col_counts;
};

template <class T>
apply_sides<T> sides_of(const apply_problem<T>& p, point_shares shares, bool transpose) {
  if (transpose) return {p.Y, p.log_v, p.X, p.log_u, p.m, p.n, std::move(shares.m_of), std::move(shares.n_of)};
  return {p.X, p.log_u, p.Y, p.log_v, p.n, p.m, std::move(shares.n_of), std::move(shares.m_of)};
}

// Potentials may be -Inf (a point of weight 0), never NaN or +Inf.
template <class T>
void check_potentials(const T* f, std::size_t count, const char* name, std::size_t first) {
  for (std::size_t i = 0; i < count; ++i) {
    if (std::isnan(f[i]) || f[i] == std::numeric_limits<T>::infinity()) {
      throw error(errc::invalid_argument, std::string(name) + "[" + std::to_string(first + i) +
                                              "] = " + std::to_string(static_cast<double>(f[i])) +
                                              " (potentials must be finite or -inf)");
    }
  }
}

template <class T>
void product(const run_context& ctx, const apply_problem<T>& p, const plan_apply_options& o, const apply_sides<T>& s);

template <class T>
void apply_entry(const apply_problem<T>& p, MPI_Comm comm, const plan_apply_options& o) {
  collective_call call(p.softmin ? kSoftmin : kApply, comm);
  const bool eps_valid = std::isfinite(p.eps) && p.eps > 0;
  const std::size_t own = o.transpose ? p.m : p.n, other = o.transpose ? p.n : p.m;
  call.check([&] {
    const auto bad = [](const std::string& msg) { throw error(errc::invalid_argument, msg); };
    if (!eps_valid) bad("eps must be finite and > 0, got " + std::to_string(p.eps));
    if (p.dim == 0) bad("dim must be >= 1");
    if (o.metric != metric::sqeuclidean && o.metric != metric::euclidean) {
      bad("unknown metric " + std::to_string(static_cast<int>(o.metric)));
    }
    if (o.threads < 0) bad("threads must be >= 0");
    if (o.cost_power < -1 || o.cost_power > 1)
      bad("cost_power must be -1, 0 or 1, got " + std::to_string(o.cost_power));
    if (o.batch > (std::size_t{1} << 40)) bad("batch " + std::to_string(o.batch) + " is not a problem count");
    // (arrays of no elements may be null: no points, or no problems)
    const std::size_t n = p.n * o.batch, m = p.m * o.batch;
    if (p.softmin) {
      if (o.transpose) bad("transpose must be false (swap X and Y)");
      if ((!p.X && n > 0) || (!p.lse && n > 0)) bad("X or lse is null");
      if ((!p.Y && m > 0) || (!p.log_v && m > 0)) bad("Y or h is null");
    } else {
      if ((!p.X && n > 0) || (!p.log_u && n > 0)) bad("X or log_u is null");
      if ((!p.Y && m > 0) || (!p.log_v && m > 0)) bad("Y or log_v is null");
    }
    if (!p.V && other * o.batch > 0 && p.k > 0) bad("V is null");
    if (!p.out && own * o.batch > 0 && p.k > 0) bad(p.softmin ? "avg is null" : "out is null");
  });
  call.must_match("dims", static_cast<std::int64_t>(p.dim))
      .must_match("value counts (k)", static_cast<std::int64_t>(p.k));
  call.must_match("dtypes", dtype_of_v<T>).must_match("metrics", o.metric, metric_name);
  call.must_match("transpose flags", o.transpose ? 1 : 0).must_match("calls (softmin_points: 1)", p.softmin ? 1 : 0);
  call.must_match("batch sizes", static_cast<std::int64_t>(o.batch))
      .must_match("cost powers", std::int64_t{o.cost_power});
  if (eps_valid) call.must_match_real("eps values", p.eps);
  run_context ctx = agreed_context(call);
  const apply_sides<T> s = sides_of(p, gather_shares(ctx.comm, ctx.size, p.n, p.m), o.transpose);
  // (a batch: every array is batch problems of this rank's rows and columns, and
  // the indices named in errors are flat over them)
  const std::size_t B = o.batch, rows = B * s.rows, cols = B * s.cols;
  const std::size_t first_row = B == 1 ? first_of(s.row_counts, ctx.rank) : 0;
  const std::size_t first_col = B == 1 ? first_of(s.col_counts, ctx.rank) : 0;
  std::size_t total_cols = 0;
  for (std::size_t c : s.col_counts) total_cols += c;
  ctx.threads = threads_for(call, o.threads, std::max<std::size_t>(rows, 1) * std::max<std::size_t>(total_cols, 1));
  const char* row_name = o.transpose ? "Y" : "X";
  const char* col_name = o.transpose ? "X" : "Y";
  agree_on_data(ctx, kApply, [&] {
    check_rows_finite(s.row_points, rows, p.dim, row_name, first_row);
    check_rows_finite(s.col_points, cols, p.dim, col_name, first_col);
    if (!p.softmin) check_potentials(s.row_potential, rows, o.transpose ? "log_v" : "log_u", first_row);
    check_potentials(s.col_potential, cols, p.softmin ? "h" : o.transpose ? "log_u" : "log_v", first_col);
    check_rows_finite(p.V, p.k > 0 ? cols : 0, p.k, "V", first_col, "values");
  });
  // (k and batch are the same on every rank; a rank without rows still serves the ring)
  if ((p.k == 0 && !p.softmin) || B == 0) return;

  // The dot-product path (as the solver's): on points centered on their common
  // box (a batch's: of every problem's points).
  if (p.dim >= dot_min_dim()) {
    const centered_points<T> c(ctx.comm, s.row_points, rows, s.col_points, cols, p.dim);
    apply_sides<T> moved = s;
    moved.row_points = c.X.data();
    moved.col_points = c.Y.data();
    return product(ctx, p, o, moved);
  }
  product(ctx, p, o, s);
}

// Steps 1-3 on checked arguments.
template <class T>
void product(const run_context& ctx, const apply_problem<T>& p, const plan_apply_options& o, const apply_sides<T>& s) {
  // 1. The home block, a part per problem: potentials, points transposed, values
  // transposed (after a column of ones for softmin_points).
  const std::size_t B = o.batch, rows = B * s.rows;
  // A softmin without V needs only each row's log-sum-exp: the solver's own pass
  // (merge_block), which sums the exponentials as it takes them, where a column of
  // ones would store them and read them back for a product.
  const bool lse_only = p.softmin && p.k == 0;
  const std::size_t ones = p.softmin && !lse_only ? 1 : 0, k = ones + p.k;
  const std::size_t per_point = 1 + p.dim + k;
  std::vector<T> home(per_point * s.cols * B);
  for (std::size_t b = 0; b < B; ++b) {
    T* part = home.data() + b * per_point * s.cols;
    const T* points = s.col_points + b * s.cols * p.dim;
    const T* values = p.k ? p.V + b * s.cols * p.k : nullptr;
    std::copy(s.col_potential + b * s.cols, s.col_potential + (b + 1) * s.cols, part);
    for (std::size_t j = 0; j < s.cols; ++j) {
      for (std::size_t d = 0; d < p.dim; ++d) part[s.cols * (1 + d) + j] = points[j * p.dim + d];
      if (ones) part[s.cols * (1 + p.dim) + j] = T(1);
      for (std::size_t c = 0; c < p.k; ++c) part[s.cols * (1 + p.dim + ones + c) + j] = values[j * p.k + c];
    }
  }
  // 2. Round the ring: each rank's block is its B parts (B times its count).
  std::vector<std::size_t> block_counts = s.col_counts;
  for (std::size_t& c : block_counts) c *= B;
  const point_kernels<T>& kernels = active_point_kernels<T>();
  const int nt =
      static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ctx.threads), std::max<std::size_t>(rows, 1)));
  std::vector<T> scratch(static_cast<std::size_t>(nt) * point_kernels<T>::kScratch);
  std::vector<double> acc(lse_only ? 0 : rows * (k + 1), 0.0);
  for (std::size_t i = 0; i < acc.size(); i += k + 1) acc[i] = -std::numeric_limits<double>::infinity();
  std::vector<running_lse> lse(lse_only ? rows : 0, running_lse{-std::numeric_limits<double>::infinity(), 0.0, 0.0});
  const T inv_eps = static_cast<T>(1 / p.eps);
  block_ring<T> ring(ctx.comm, ctx.rank, std::move(block_counts), per_point);
  ring.circulate(home.data(), [&](const T* block, std::size_t count, int) {
    const std::size_t part_count = count / B;  // the owner's points of each problem
    ring.in_slabs(rows, nt, [&](std::size_t r0, std::size_t r1, int tid) {
      // rows [r0, r1) of the flat (problem, row) range, a problem's run at a time
      for (std::size_t r = r0; r < r1;) {
        const std::size_t b = r / s.rows, end = std::min(r1, (b + 1) * s.rows);
        const T* part = block + b * per_point * part_count;
        T* own_scratch = scratch.data() + static_cast<std::size_t>(tid) * point_kernels<T>::kScratch;
        if (lse_only) {
          kernels.merge_block(s.row_points + r * p.dim, end - r, p.dim, part + part_count, part_count, part, inv_eps,
                              o.metric, false, lse.data() + r, own_scratch);
        } else {
          kernels.apply_block(s.row_points + r * p.dim, end - r, p.dim, part + part_count, part_count, part, inv_eps,
                              o.metric, o.cost_power, ones, part + part_count * (1 + p.dim), k,
                              acc.data() + r * (k + 1), own_scratch);
        }
        r = end;
      }
    });
  });
  // 3. The rows' own potentials (softmin_points: the log of the ones' sum, which
  // divides the others).
  if (lse_only) {
    for (std::size_t i = 0; i < rows; ++i) p.lse[i] = static_cast<T>(lse[i].max + std::log(lse[i].sum));
    return;
  }
  if (p.softmin) {
    for (std::size_t i = 0; i < rows; ++i) {
      const double* a = acc.data() + i * (k + 1);
      p.lse[i] = static_cast<T>(a[0] + std::log(a[1]));  // -Inf + log(0) for a row that meets no point
      for (std::size_t c = 0; c < p.k; ++c) p.out[i * p.k + c] = static_cast<T>(a[2 + c] / a[1]);
    }
    return;
  }
  for (std::size_t i = 0; i < rows; ++i) {
    const double* a = acc.data() + i * (k + 1);
    const double scale = std::exp(static_cast<double>(s.row_potential[i]) + a[0]);  // 0 for an empty row or column set
    for (std::size_t c = 0; c < p.k; ++c) p.out[i * p.k + c] = static_cast<T>(scale * a[1 + c]);
  }
}

}  // namespace
}  // namespace detail

void softmin_points(const double* X, std::size_t n, const double* Y, std::size_t m, std::size_t dim, const double* h,
                    double eps, const double* V, std::size_t k, double* lse, double* avg, MPI_Comm comm,
                    const plan_apply_options& opts) {
  detail::apply_entry<double>({X, Y, nullptr, h, V, avg, n, m, dim, k, eps, true, lse}, comm, opts);
}

void softmin_points(const float* X, std::size_t n, const float* Y, std::size_t m, std::size_t dim, const float* h,
                    double eps, const float* V, std::size_t k, float* lse, float* avg, MPI_Comm comm,
                    const plan_apply_options& opts) {
  detail::apply_entry<float>({X, Y, nullptr, h, V, avg, n, m, dim, k, eps, true, lse}, comm, opts);
}

void apply_plan_points(const double* X, std::size_t n, const double* Y, std::size_t m, std::size_t dim,
                       const double* log_u, const double* log_v, double eps, const double* V, std::size_t k,
                       double* out, MPI_Comm comm, const plan_apply_options& opts) {
  detail::apply_entry<double>({X, Y, log_u, log_v, V, out, n, m, dim, k, eps}, comm, opts);
}

void apply_plan_points(const float* X, std::size_t n, const float* Y, std::size_t m, std::size_t dim,
                       const float* log_u, const float* log_v, double eps, const float* V, std::size_t k, float* out,
                       MPI_Comm comm, const plan_apply_options& opts) {
  detail::apply_entry<float>({X, Y, log_u, log_v, V, out, n, m, dim, k, eps}, comm, opts);
}

}  // namespace conveyor::sinkhorn
