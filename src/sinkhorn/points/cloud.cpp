// SPDX-License-Identifier: BSD-3-Clause
// Entropic OT between point clouds (conveyor/sinkhorn_points.hpp): the log-domain
// Sinkhorn iteration with the cost recomputed by point_kernels, the other side's
// points brought by block_ring, in the way of points/exchange_table.hpp.
//
// One iteration, on every rank r (X_r, a_r, log_u_r; Y_r, b_r, log_v_r):
//   X pass: for each point x_i of X_r, lse_i = LSE_j (log_v_j - C_ij / eps) over
//           every block of Y as it comes round the ring;
//           the previous iterate's row sums are exp(log_u_i + lse_i): its
//           marginal error is summed over the ranks (rank order, so every rank
//           sees the same value and takes the same decision);
//           log_u_i = log a_i - lse_i.
//   Y pass: the same with the sides swapped: log_v_j = log b_j - LSE_i (...).
// Work per pass: n m pairs (distance in d FMAs + one exp each) over P ranks; bytes
// per rank and pass: (P - 1)/P of the circulating side's (d + 1) N elements; no
// n x m array anywhere. The X pass that measures a tested iterate also sums
// exp(...) C_ij, the transport cost of that iterate, at one FMA per pair.
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/sinkhorn_points.hpp"
#include "core/names.hpp"
#include "runtime/context.hpp"
#include "sinkhorn/run_context.hpp"
#include "sinkhorn/points/exchange_table.hpp"
#include "sinkhorn/points/kernels.hpp"
#include "sinkhorn/points/ring.hpp"
#include "sinkhorn/points/shares.hpp"

namespace conveyor::sinkhorn {

CONVEYOR_ENUM_NAMES(metric, CONVEYOR_POINTS_METRIC_LIST, "metric", kMetricNames, metric_name, parse_metric)
CONVEYOR_ENUM_NAMES(exchange, CONVEYOR_POINTS_EXCHANGE_LIST, "exchange", kExchangeNames, exchange_name, parse_exchange)

namespace detail {
namespace {

constexpr const char* kWhat = "sinkhorn::transport_points";
// eps-scaling from the diameter down: at most this many steps (a factor of 0.999
// from a diameter of 1e6 to eps = 1e-12 takes ~4e4).
constexpr int kMaxAnnealingSteps = 100000;

// The points (row-major, dim per point), their weights (null: uniform) and eps.
template <class T>
struct points_problem {
  const T *X, *Y, *a, *b;
  std::size_t n, m, dim;
  double eps;
};

// One side of the problem on this rank: its points (row-major, as given), log
// weights, and its home block for the ring: potentials, then the points transposed.
template <class T>
struct side {
  const T* points = nullptr;
  std::size_t count = 0;
  side_update update;          // this side's update (a constraint, or a KL penalty)
  std::vector<double> weight;  // a or b (uniform: 1 / total)
  std::vector<T> log_weight;
  std::vector<T> block;             // (dim + 1) * count
  std::vector<std::size_t> counts;  // every rank's count
  std::size_t first = 0;            // global index of this rank's first point
  std::size_t total = 0;
  exchange way = exchange::automatic;  // how it reaches the other ranks (automatic: until its first pass)

  T* potential() { return block.data(); }
  const T* potential() const { return block.data(); }
};

template <class T>
side<T> make_side(const T* points, std::size_t count, std::size_t dim, std::vector<std::size_t> counts, int rank) {
  side<T> s;
  s.points = points;
  s.count = count;
  s.counts = std::move(counts);
  s.first = first_of(s.counts, rank);
  for (std::size_t c : s.counts) s.total += c;
  s.block.assign((dim + 1) * count, T(0));
  T* transposed = s.block.data() + count;
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t k = 0; k < dim; ++k) transposed[k * count + i] = points[i * dim + k];
  }
  return s;
}

// The weights (uniform 1 / total when none are given) and their logs.
template <class T>
void set_weights(side<T>& s, const T* w) {
  s.weight.resize(s.count);
  s.log_weight.resize(s.count);
  for (std::size_t i = 0; i < s.count; ++i) {
    s.weight[i] = w ? static_cast<double>(w[i]) : 1.0 / static_cast<double>(s.total);
    s.log_weight[i] = static_cast<T>(std::log(s.weight[i]));
  }
}

// What one pass over the other side reports.
struct pass_result {
  double error_terms = 0;  // this rank's share of the previous iterate's marginal error (before the norm's root)
  double cost = 0;         // this rank's share of <P, C> of the previous iterate (with_cost)
  bool finite = true;
};

template <class T>
class point_solver {
 public:
  point_solver(const run_context& ctx, const points_problem<T>& p, const points_options& o, side<T>& x, side<T>& y,
               conveyor::detail::link_params link)
      : ctx_(ctx), p_(p), o_(o), k_(active_point_kernels<T>()), x_(x), y_(y), link_(link) {
    set_eps(p.eps);
    for (side<T>* s : {&x_, &y_}) {
      s->way = o.exchange == exchange::automatic && ctx.size == 1 ? exchange_rows().front().way : o.exchange;
    }
  }

  points_result<T> run() {
    const int annealing_steps = o_.eps_scaling > 0 ? anneal() : 0;
    points_result<T> res = iterate();
    res.annealing_steps = annealing_steps;  // (their time: in time.total only)
    res.exchange_x = exchange_row_of(x_.way).way;
    res.exchange_y = exchange_row_of(y_.way).way;
    return res;
  }

 private:
  // The regularization the passes use now: the kernel's 1/eps and the sides'
  // updates (an unbalanced update's powers depend on eps).
  void set_eps(double eps) {
    eps_ = eps;
    inv_eps_ = static_cast<T>(1 / eps);
    x_.update = update_for(o_.reg_m_rows, eps, o_.reg_type);
    y_.update = update_for(o_.reg_m_cols, eps, o_.reg_type);
  }

  // Moves the potentials to a new eps keeping the dual potentials f = eps log_u
  // (and g) fixed: log_u scales by eps_old / eps_new.
  void rescale_to(double eps) {
    const double factor = eps_ / eps;
    for (side<T>* s : {&x_, &y_}) {
      T* potential = s->potential();
      for (std::size_t i = 0; i < s->count; ++i) potential[i] = static_cast<T>(potential[i] * factor);
    }
    set_eps(eps);
  }

  // eps-scaling: one update of each side at eps_k = D^p s^k (D the diameter of
  // the two clouds' common bounding box, p = 2 for sqeuclidean, 1 for euclidean,
  // s = eps_scaling) while eps_k > eps, then back at the target eps. The steps
  // agree on every rank (the diameter is a global maximum). Returns their count.
  int anneal() {
    const double target = eps_;
    const double diameter = bounding_box(ctx_.comm, x_.points, x_.count, y_.points, y_.count, p_.dim).diameter();
    double eps = o_.metric == metric::euclidean ? diameter : diameter * diameter;
    int steps = 0;
    for (; eps > target && steps < kMaxAnnealingSteps; eps *= o_.eps_scaling, ++steps) {
      rescale_to(eps);
      pass(x_, y_, false, false, true);
      pass(y_, x_, false, false, true);
    }
    rescale_to(target);
    return steps;
  }

  points_result<T> iterate() {
    iteration_log log;
    timing t;
    double cost = 0;
    bool cost_known = false;
    // The potentials of the iterate this X pass measures, and of the last iterate
    // found finite (restored on a numerical failure).
    std::vector<T> measured_u, good_u(x_.potential(), x_.potential() + x_.count),
        good_v(y_.potential(), y_.potential() + y_.count);
    // The X pass at step k measures iterate k (k updates of both sides) and then
    // starts iteration k + 1; the Y pass completes it. The last step measures the
    // last iterate and updates nothing.
    for (int k = 0; k <= o_.max_iter; ++k) {
      const bool tested = k > 0 && (k % o_.check_every == 0 || k == o_.max_iter);
      const double t0 = now();
      measured_u.assign(x_.potential(), x_.potential() + x_.count);
      const pass_result r = pass(x_, y_, /*measure=*/k > 0, /*with_cost=*/tested, /*update=*/k < o_.max_iter);
      t.row_pass += now() - t0;
      if (k > 0) {
        const double err = o_.stop == stop_rule::change ? change_since(measured_u, good_u, good_v) : global_error(r);
        log.history.push_back(err);
        if (!r.finite || !std::isfinite(err)) {
          log.state = status::numerical_failure;
          std::copy(good_u.begin(), good_u.end(), x_.potential());
          std::copy(good_v.begin(), good_v.end(), y_.potential());
          break;
        }
        good_u = measured_u;
        good_v.assign(y_.potential(), y_.potential() + y_.count);
        log.iterations = k;
        log.error = err;
        if (tested) {
          cost = sum_over_ranks(r.cost);
          cost_known = true;
        }
        if (tested && err <= o_.tol) {
          log.state = status::converged;
          std::copy(measured_u.begin(), measured_u.end(), x_.potential());
          break;
        }
        if (k == o_.max_iter) break;
      }
      const double t1 = now();
      pass(y_, x_, false, false, true);
      t.column_pass += now() - t1;
      cost_known = false;
    }
    if (!cost_known) cost = sum_over_ranks(pass(x_, y_, true, true, false).cost);  // after a failure
    points_result<T> res;
    res.state = log.state;
    res.iterations = log.iterations;
    res.error = log.error;
    res.error_history = std::move(log.history);
    res.time = t;
    res.cost = cost;
    res.log_u.assign(x_.potential(), x_.potential() + x_.count);
    res.log_v.assign(y_.potential(), y_.potential() + y_.count);
    return res;
  }

  // One pass: the rows of `rows` against every block of `cols`. `measure`: the
  // marginal error of the current (rows, cols) potentials (and their cost with
  // `with_cost`); `update`: then the rows' potentials are replaced.
  pass_result pass(side<T>& rows, side<T>& cols, bool measure, bool with_cost, bool update) {
    const std::size_t n = rows.count;
    lse_.assign(n, running_lse{-std::numeric_limits<double>::infinity(), 0.0, 0.0});
    const int nt =
        static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ctx_.threads), std::max<std::size_t>(n, 1)));
    scratch_.resize(static_cast<std::size_t>(nt) * point_kernels<T>::kScratch);
    block_ring<T> ring(ctx_.comm, ctx_.rank, cols.counts, p_.dim + 1, exchange_row_of(cols.way).gathered);
    ring.circulate(cols.block.data(), [&](const T* block, std::size_t count, int) {
      const T* h = block;
      const T* transposed = block + count;
      ring.in_slabs(n, nt, [&](std::size_t r0, std::size_t r1, int tid) {
        T* scratch = scratch_.data() + static_cast<std::size_t>(tid) * point_kernels<T>::kScratch;
        k_.merge_block(rows.points + r0 * p_.dim, r1 - r0, p_.dim, transposed, count, h, inv_eps_, o_.metric, with_cost,
                       lse_.data() + r0, scratch);
      });
    });
    if (cols.way == exchange::automatic) {  // after this side's first pass, by the table's first row
      const double side_bytes = static_cast<double>(cols.total) * static_cast<double>((p_.dim + 1) * sizeof(T));
      cols.way = choose_exchange(ctx_.comm, {ring.pass_seconds(), ring.work_seconds(), side_bytes, ctx_.size, link_});
    }
    pass_result r;
    T* potential = rows.potential();
    for (std::size_t i = 0; i < n; ++i) {
      const running_lse& l = lse_[i];
      const double weight = rows.weight[i];
      if (weight == 0) continue;  // an empty point keeps log_u = -Inf
      const double lse = l.max + std::log(l.sum);
      if (!std::isfinite(lse)) {
        r.finite = false;
        continue;
      }
      if (measure) {
        const double mass = std::exp(static_cast<double>(potential[i]) + lse);
        r.error_terms += error_term(mass, weight, o_.norm);
        if (with_cost) r.cost += std::exp(static_cast<double>(potential[i]) + l.max) * l.weighted;
      }
      if (update) {
        const side_update& u = rows.update;
        potential[i] =
            u.constraint()
                ? static_cast<T>(static_cast<double>(rows.log_weight[i]) - lse)
                : static_cast<T>(u.weight_power * static_cast<double>(rows.log_weight[i]) - u.lse_power * lse);
      }
    }
    return r;
  }

  // Sum over ranks in rank order: the same bits on every rank.
  double sum_over_ranks(double local) const {
    std::vector<double> all(static_cast<std::size_t>(ctx_.size));
    conveyor::detail::check_mpi(MPI_Allgather(&local, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, ctx_.comm),
                                "MPI_Allgather");
    return ordered_sum(all);
  }

  // stop_rule::change: the relative change from iterate k - 1 (u_before,
  // v_before) to iterate k (u_now, the Y side's current potentials), POT's
  // unbalanced rule on the scalings (divided by the weights for reg_type kl);
  // maxima over the ranks.
  double change_since(const std::vector<T>& u_now, const std::vector<T>& u_before,
                      const std::vector<T>& v_before) const {
    const bool kl = o_.reg_type == reg_type::kl;
    const auto add = [&](change_terms& c, const side<T>& s, const T* now, const T* before) {
      for (std::size_t i = 0; i < s.count; ++i) {
        if (s.weight[i] == 0) continue;
        const double ref = kl ? static_cast<double>(s.log_weight[i]) : 0.0;
        c.add(std::exp(static_cast<double>(now[i]) - ref), std::exp(static_cast<double>(before[i]) - ref));
      }
    };
    change_terms u, v;
    add(u, x_, u_now.data(), u_before.data());
    add(v, y_, y_.potential(), v_before.data());
    double local[6] = {u.diff, u.now, u.before, v.diff, v.now, v.before}, global[6];
    conveyor::detail::check_mpi(MPI_Allreduce(local, global, 6, MPI_DOUBLE, MPI_MAX, ctx_.comm), "MPI_Allreduce");
    const change_terms all_u{global[0], global[1], global[2]}, all_v{global[3], global[4], global[5]};
    return 0.5 * (all_u.relative() + all_v.relative());
  }

  double global_error(const pass_result& r) const {
    const double s = sum_over_ranks(r.finite ? r.error_terms : std::numeric_limits<double>::quiet_NaN());
    return o_.norm == error_norm::l2 ? std::sqrt(s) : s;
  }

  const run_context& ctx_;
  const points_problem<T>& p_;
  const points_options& o_;
  const point_kernels<T>& k_;
  side<T>& x_;
  side<T>& y_;
  conveyor::detail::link_params link_;  // the cost model's link between the ranks (the gather's)
  double eps_ = 1;
  T inv_eps_ = 1;
  std::vector<running_lse> lse_;
  std::vector<T> scratch_;
};

void check_options(const points_options& o, std::size_t n, std::size_t m) {
  const auto bad = [](const std::string& msg) { throw error(errc::invalid_argument, msg); };
  if (o.metric != metric::sqeuclidean && o.metric != metric::euclidean) {
    bad("unknown metric " + std::to_string(static_cast<int>(o.metric)));
  }
  if (!(o.tol >= 0)) bad("tol must be >= 0");
  if (o.max_iter < 1) bad("max_iter must be >= 1");
  if (o.check_every < 1) bad("check_every must be >= 1");
  if (o.norm != error_norm::l1 && o.norm != error_norm::l2)
    bad("unknown norm " + std::to_string(static_cast<int>(o.norm)));
  if (static_cast<int>(o.exchange) < 0 || static_cast<int>(o.exchange) >= exchange_count) {
    bad("unknown exchange " + std::to_string(static_cast<int>(o.exchange)));
  }
  if (o.threads < 0) bad("threads must be >= 0");
  if (!(o.eps_scaling >= 0 && o.eps_scaling < 1)) {
    bad("eps_scaling must be 0 (off) or in (0, 1), got " + std::to_string(o.eps_scaling));
  }
  if (o.init_log_u.empty() != o.init_log_v.empty()) bad("init_log_u and init_log_v: give both or neither");
  if (!o.init_log_u.empty() && (o.init_log_u.size() != n || o.init_log_v.size() != m)) {
    bad("init_log_u / init_log_v have " + std::to_string(o.init_log_u.size()) + " / " +
        std::to_string(o.init_log_v.size()) + " entries for " + std::to_string(n) + " / " + std::to_string(m) +
        " points");
  }
  for (const auto* init : {&o.init_log_u, &o.init_log_v}) {
    for (double v : *init) {
      if (!std::isfinite(v)) bad("warm-start potentials must be finite, got " + std::to_string(v));
    }
  }
}

// The total masses of a and b must be equal and positive (balanced OT).
template <class T>
void check_masses(const run_context& ctx, const side<T>& x, const side<T>& y, const T* a, const T* b,
                  bool equal_masses) {
  double local[2] = {0, 0};
  for (std::size_t i = 0; i < x.count; ++i)
    local[0] += a ? static_cast<double>(a[i]) : 1.0 / static_cast<double>(x.total);
  for (std::size_t j = 0; j < y.count; ++j)
    local[1] += b ? static_cast<double>(b[j]) : 1.0 / static_cast<double>(y.total);
  double mass[2];
  conveyor::detail::check_mpi(MPI_Allreduce(local, mass, 2, MPI_DOUBLE, MPI_SUM, ctx.comm), "MPI_Allreduce");
  const std::string w = kWhat;
  if (!(mass[0] > 0) || !(mass[1] > 0)) {
    throw error(errc::invalid_argument, w + ": weights must have positive mass (a " + std::to_string(mass[0]) + ", b " +
                                            std::to_string(mass[1]) + ")");
  }
  const double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-8;
  if (equal_masses && std::abs(mass[0] - mass[1]) > tolerance * std::max(mass[0], mass[1])) {
    throw error(errc::invalid_argument, w + ": a and b have different masses (" + std::to_string(mass[0]) + " vs " +
                                            std::to_string(mass[1]) + "; balanced OT needs equal masses)");
  }
}

template <class T>
points_result<T> transport_points_entry(const points_problem<T>& p, MPI_Comm comm, const points_options& o) {
  const double t0 = now();
  collective_call call(kWhat, comm);
  const bool eps_valid = std::isfinite(p.eps) && p.eps > 0;
  call.check([&] {
    if (!eps_valid) throw error(errc::invalid_argument, "eps must be finite and > 0, got " + std::to_string(p.eps));
    if (p.dim == 0) throw error(errc::invalid_argument, "dim must be >= 1");
    if (!p.X && p.n > 0) throw error(errc::invalid_argument, "X is null");
    if (!p.Y && p.m > 0) throw error(errc::invalid_argument, "Y is null");
    check_options(o, p.n, p.m);
    check_unbalanced(o.reg_m_rows, o.reg_m_cols, o.reg_type, o.stop);
    dot_min_dim();  // (reads CONVEYOR_POINTS_DOT_MIN_DIM: a bad value fails here, on every rank)
  });
  match_unbalanced(call, o.reg_m_rows, o.reg_m_cols, o.reg_type, o.stop);
  call.must_match("dims", static_cast<std::int64_t>(p.dim)).must_match("dtypes", dtype_of_v<T>);
  call.must_match("metrics", o.metric, metric_name).must_match("max_iter values", o.max_iter);
  call.must_match_real("tolerances", o.tol).must_match("norms", o.norm, norm_name);
  call.must_match_real("eps_scaling values", o.eps_scaling).must_match("exchanges", o.exchange, exchange_name);
  call.must_match("check_every values", o.check_every).must_match("warm start flags", o.init_log_u.empty() ? 0 : 1);
  // Weights given or uniform: the same choice on every rank that holds points (a
  // rank without points may pass null either way).
  const auto given = [](const T* w, std::size_t count) {
    return count > 0 ? std::optional<std::int64_t>(w ? 1 : 0) : std::nullopt;
  };
  call.may_match("a given flags", given(p.a, p.n)).may_match("b given flags", given(p.b, p.m));
  if (eps_valid) call.must_match_real("eps values", p.eps);
  run_context ctx = agreed_context(call);
  point_shares shares = gather_shares(ctx.comm, ctx.size, p.n, p.m);
  const std::size_t x_first = first_of(shares.n_of, ctx.rank), y_first = first_of(shares.m_of, ctx.rank);
  ctx.first_row = x_first;
  std::size_t m_total = 0;
  for (std::size_t c : shares.m_of) m_total += c;
  ctx.threads = threads_for(call, o.threads, std::max(p.n, p.m) * std::max<std::size_t>(m_total, 1));
  agree_on_data(ctx, kWhat, [&] {
    if (p.a) check_marginal(p.a, p.n, "a", x_first);
    if (p.b) check_marginal(p.b, p.m, "b", y_first);
    check_rows_finite(p.X, p.n, p.dim, "X", x_first);
    check_rows_finite(p.Y, p.m, p.dim, "Y", y_first);
  });
  // The dot-product path computes |x|^2 + |y|^2 - 2<x, y>: centered points keep
  // its cancellation within the clouds' diameter (distances do not move).
  const bool centered = p.dim >= dot_min_dim();
  const centered_points<T> cx =
      centered ? centered_points<T>(ctx.comm, p.X, p.n, p.Y, p.m, p.dim) : centered_points<T>{};
  side<T> x = make_side(centered ? cx.X.data() : p.X, p.n, p.dim, std::move(shares.n_of), ctx.rank);
  side<T> y = make_side(centered ? cx.Y.data() : p.Y, p.m, p.dim, std::move(shares.m_of), ctx.rank);
  ctx.total_rows = x.total;
  points_result<T> res;
  res.threads = ctx.threads;
  if (x.total == 0 || y.total == 0) {
    res.state = status::converged;
    res.log_u.assign(p.n, T(0));
    res.log_v.assign(p.m, T(0));
    return res;
  }
  // (as the dense solver: equal masses for a balanced problem tested on its marginal error)
  check_masses(ctx, x, y, p.a, p.b,
               /*equal_masses=*/std::isinf(o.reg_m_rows) && std::isinf(o.reg_m_cols) && o.stop == stop_rule::marginal);
  set_weights(x, p.a);
  set_weights(y, p.b);
  if (!o.init_log_u.empty()) {
    std::copy(o.init_log_u.begin(), o.init_log_u.end(), x.potential());
    std::copy(o.init_log_v.begin(), o.init_log_v.end(), y.potential());
  }
  // An empty point (weight 0) has no mass to move: potential -Inf, skipped by exp.
  for (std::size_t j = 0; j < y.count; ++j) {
    if (std::isinf(y.log_weight[j])) y.potential()[j] = -std::numeric_limits<T>::infinity();
  }
  for (std::size_t i = 0; i < x.count; ++i) {
    if (std::isinf(x.log_weight[i])) x.potential()[i] = -std::numeric_limits<T>::infinity();
  }
  const auto link = conveyor::detail::flat_link(conveyor::detail::context_of(call).layout(0), current_cost_model());
  return finished(point_solver<T>(ctx, p, o, x, y, link).run(), ctx, t0);
}

}  // namespace
}  // namespace detail

points_result<double> transport_points(const double* X, std::size_t n, const double* Y, std::size_t m, std::size_t dim,
                                       const double* a, const double* b, double eps, MPI_Comm comm,
                                       const points_options& opts) {
  return detail::transport_points_entry<double>({X, Y, a, b, n, m, dim, eps}, comm, opts);
}

points_result<float> transport_points(const float* X, std::size_t n, const float* Y, std::size_t m, std::size_t dim,
                                      const float* a, const float* b, double eps, MPI_Comm comm,
                                      const points_options& opts) {
  return detail::transport_points_entry<float>({X, Y, a, b, n, m, dim, eps}, comm, opts);
}

}  // namespace conveyor::sinkhorn
