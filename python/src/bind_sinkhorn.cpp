// SPDX-License-Identifier: BSD-3-Clause
// Python bindings of the Sinkhorn engine (conveyor.sinkhorn, conveyor.ot).
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/sinkhorn_barycenter.hpp"
#include "conveyor/sinkhorn_batch.hpp"
#include "conveyor/sinkhorn_points.hpp"
#include "convert.hpp"

namespace conveyor::python {
namespace {

namespace sk = conveyor::sinkhorn;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T> v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule free_it(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), {owned->size()}, free_it);
}

// A warm-start vector option, as float64 (absent or None: left empty).
void read_warm_start(option_reader& opt, const char* name, std::vector<double>& into) {
  opt.read_with(name, [&](nb::handle h) {
    const py_input v = input(h, name, nb::module_::import_("numpy").attr("float64"));
    const auto* p = static_cast<const double*>(v.a.data());
    into.assign(p, p + v.a.size());
  });
}

// The iteration's options, the same in both solvers' options: when to stop and
// how many threads.
template <class Options>
void read_iteration(option_reader& opt, Options& o) {
  opt.read("tol", o.tol, "a number");
  opt.read("max_iter", o.max_iter, "an int");
  opt.read_with("norm", [&](nb::handle h) { o.norm = sk::parse_norm(value<std::string>(h, "norm", "a string")); });
  opt.read("check_every", o.check_every, "an int");
  opt.read("threads", o.threads, "an int");
}

// The unbalanced-OT options, the same in both solvers' options.
template <class Options>
void read_unbalanced(option_reader& opt, Options& o) {
  opt.read("reg_m_rows", o.reg_m_rows, "a number");
  opt.read("reg_m_cols", o.reg_m_cols, "a number");
  opt.read_with("reg_type",
                [&](nb::handle h) { o.reg_type = sk::parse_reg_type(value<std::string>(h, "reg_type", "a string")); });
  opt.read_with("stop", [&](nb::handle h) { o.stop = sk::parse_stop_rule(value<std::string>(h, "stop", "a string")); });
}

// The arguments of a Sinkhorn call after conversion.
struct sinkhorn_args {
  py_input matrix;    // A or C (read-only view; A_out when in place)
  array matrix_out;   // A when in place
  py_input row, col;  // marginals, of the matrix's dtype
  nb::object plan;    // transport: the plan array, or None
  sk::options o;
  double eps = 0;
  std::size_t rows = 0, cols = 0;
  bool single = false;  // float32
};

void convert_sinkhorn(sinkhorn_args& s, nb::handle M, nb::handle r, nb::handle c, bool in_place, nb::handle options,
                      const char* row_name, const char* col_name) {
  option_reader opt(options);
  if (in_place) {
    s.matrix_out = output(M, "A");
    s.matrix.obj = nb::borrow(M);
    s.matrix.type = dtype_of(s.matrix_out.dtype());
    if (s.matrix_out.ndim() != 2) fail(errc::invalid_argument, "A must be 2-D");
    s.rows = s.matrix_out.shape(0);
    s.cols = s.matrix_out.shape(1);
  } else {
    s.matrix = input(M, row_name[0] == 'r' ? "A" : "C");
    if (s.matrix.a.ndim() != 2)
      fail(errc::invalid_argument, std::string(row_name[0] == 'r' ? "A" : "C") + " must be 2-D");
    s.rows = s.matrix.a.shape(0);
    s.cols = s.matrix.a.shape(1);
  }
  if (s.matrix.type != conveyor::dtype::float32 && s.matrix.type != conveyor::dtype::float64) {
    fail(errc::invalid_type,
         "matrix dtype must be float32 or float64, got " + std::string(conveyor::dtype_name(s.matrix.type)));
  }
  s.single = s.matrix.type == conveyor::dtype::float32;
  const nb::object dtype = s.matrix.obj.attr("dtype");
  s.row = input(r, row_name, dtype);
  s.col = input(c, col_name, dtype);
  require_shape(s.row.a, {s.rows}, row_name);
  require_shape(s.col.a, {s.cols}, col_name);
  opt.read_with("variant",
                [&](nb::handle h) { s.o.variant = sk::parse_variant(value<std::string>(h, "variant", "a string")); });
  read_iteration(opt, s.o);
  opt.read("columns_first", s.o.columns_first, "a bool");
  opt.read("log_domain", s.o.log_domain, "a bool");
  opt.read("overlap", s.o.overlap, "a bool");
  opt.read("mc", s.o.block.mc, "an int");
  opt.read("nc", s.o.block.nc, "an int");
  opt.read("mr", s.o.block.mr, "an int");
  opt.read("nr", s.o.block.nr, "an int");
  read_warm_start(opt, "init_u", s.o.init_u);
  read_warm_start(opt, "init_v", s.o.init_v);
  read_unbalanced(opt, s.o);
  read_inner_allreduce(opt, s.o.allreduce);
  opt.finish();
}

template <class T>
nb::tuple run_scale(sinkhorn_args& s, MPI_Comm cm, bool in_place) {
  sk::scaling_result<T> res;
  const T* r = static_cast<const T*>(s.row.a.data());
  const T* c = static_cast<const T*>(s.col.a.data());
  {
    nb::gil_scoped_release unlocked;
    res = in_place ? sk::scale_in_place(static_cast<T*>(s.matrix_out.data()), s.rows, s.cols, s.cols, r, c, cm, s.o)
                   : sk::scale(static_cast<const T*>(s.matrix.a.data()), s.rows, s.cols, s.cols, r, c, cm, s.o);
  }
  return nb::make_tuple(to_numpy(std::move(res.u)), to_numpy(std::move(res.v)), std::string(sk::status_name(res.state)),
                        res.iterations, res.error);
}

template <class T>
nb::tuple run_transport(sinkhorn_args& s, MPI_Comm cm, T* plan) {
  sk::transport_result<T> res;
  {
    nb::gil_scoped_release unlocked;
    res = sk::transport(static_cast<const T*>(s.matrix.a.data()), s.rows, s.cols, s.cols,
                        static_cast<const T*>(s.row.a.data()), static_cast<const T*>(s.col.a.data()), s.eps, cm, s.o,
                        plan, s.cols);
  }
  return nb::make_tuple(to_numpy(std::move(res.log_u)), to_numpy(std::move(res.log_v)),
                        std::string(sk::status_name(res.state)), res.iterations, res.error, res.cost, s.plan,
                        to_numpy(std::move(res.error_history)));
}

// Two point clouds after conversion: X (n x dim) and Y (m x dim), Y of X's dtype.
struct clouds_args {
  py_input X, Y;
  std::size_t n = 0, m = 0, dim = 0;
  bool single = false;   // float32
  bool batched = false;  // 3-D clouds: batch problems (plan_apply_options::batch)
  std::size_t batch = 1;
};

// Returns X's dtype (the other arrays' conversions follow it). batch_ok: X and Y
// may also be 3-D, (problems, points, dimensions), the same problem count.
nb::object convert_clouds(clouds_args& s, nb::handle X, nb::handle Y, bool batch_ok = false) {
  s.X = input(X, "X");
  s.batched = batch_ok && s.X.a.ndim() == 3;
  if (s.X.a.ndim() != 2 && !s.batched) {
    fail(errc::invalid_argument, batch_ok
                                     ? "X must be 2-D (points x dimensions) or 3-D (problems x points x dimensions)"
                                     : "X must be 2-D (points x dimensions)");
  }
  if (s.X.type != conveyor::dtype::float32 && s.X.type != conveyor::dtype::float64) {
    fail(errc::invalid_type,
         "points dtype must be float32 or float64, got " + std::string(conveyor::dtype_name(s.X.type)));
  }
  s.single = s.X.type == conveyor::dtype::float32;
  nb::object dtype = s.X.obj.attr("dtype");
  s.Y = input(Y, "Y", dtype);
  const std::size_t axis = s.batched ? 1 : 0;
  if (s.Y.a.ndim() != s.X.a.ndim()) {
    fail(errc::invalid_argument,
         s.batched ? "Y must be 3-D (problems x points x dimensions), as X" : "Y must be 2-D (points x dimensions)");
  }
  s.batch = s.batched ? s.X.a.shape(0) : 1;
  s.n = s.X.a.shape(axis);
  s.m = s.Y.a.shape(axis);
  s.dim = s.X.a.shape(axis + 1);
  if (s.batched) require_shape(s.Y.a, {s.batch, s.m, s.dim}, "Y");
  else require_shape(s.Y.a, {s.m, s.dim}, "Y");
  return dtype;
}

// One value per point of each problem: (count,), or (batch, count) for batched clouds.
void require_per_point(const clouds_args& s, const py_input& in, std::size_t count, const char* name) {
  if (s.batched) require_shape(in.a, {s.batch, count}, name);
  else require_shape(in.a, {count}, name);
}

// k values per point of each problem (k from the array): (count, k), or (batch,
// count, k). Returns k.
std::size_t values_per_point(const clouds_args& s, const py_input& in, std::size_t count, const char* side) {
  const std::size_t axis = s.batched ? 1 : 0;
  if (in.a.ndim() != axis + 2 || in.a.shape(axis) != count || (s.batched && in.a.shape(0) != s.batch)) {
    fail(errc::invalid_argument, std::string("V must be ") + (s.batched ? "3-D (problems x points x values)" : "2-D") +
                                     " with a row per " + side + " point of this rank (" + std::to_string(count) +
                                     " rows)");
  }
  return in.a.shape(axis + 1);
}

// An output array of `count` rows per problem, each of k values (k = 0: one value per row).
nb::object rows_out(const clouds_args& s, std::size_t count, std::size_t k, bool with_k, const nb::object& dtype) {
  const nb::module_ np = nb::module_::import_("numpy");
  nb::object shape = s.batched ? (with_k ? nb::make_tuple(s.batch, count, k) : nb::make_tuple(s.batch, count))
                               : (with_k ? nb::make_tuple(count, k) : nb::make_tuple(count));
  return np.attr("empty")(shape, nb::arg("dtype") = dtype);
}

// The arguments of a point-cloud solve after conversion.
struct points_args : clouds_args {
  py_input a, b;  // empty objects when None (uniform weights)
  bool a_given = false, b_given = false;
  double eps = 0;
  sk::points_options o;
};

void convert_points(points_args& s, nb::handle X, nb::handle Y, nb::handle a, nb::handle b, nb::handle eps,
                    nb::handle options) {
  option_reader opt(options);
  const nb::object dtype = convert_clouds(s, X, Y);
  s.a_given = !a.is_none();
  s.b_given = !b.is_none();
  if (s.a_given) {
    s.a = input(a, "a", dtype);
    require_shape(s.a.a, {s.n}, "a");
  }
  if (s.b_given) {
    s.b = input(b, "b", dtype);
    require_shape(s.b.a, {s.m}, "b");
  }
  s.eps = value<double>(eps, "eps", "a number");
  opt.read_with("metric",
                [&](nb::handle h) { s.o.metric = sk::parse_metric(value<std::string>(h, "metric", "a string")); });
  read_iteration(opt, s.o);
  opt.read("eps_scaling", s.o.eps_scaling, "a number");
  opt.read_with("exchange", [&](nb::handle h) {
    s.o.exchange = sk::parse_exchange(value<std::string>(h, "exchange", "a string"));
  });
  read_warm_start(opt, "init_log_u", s.o.init_log_u);
  read_warm_start(opt, "init_log_v", s.o.init_log_v);
  read_unbalanced(opt, s.o);
  opt.finish();
}

template <class T>
nb::tuple run_points(points_args& s, MPI_Comm cm) {
  sk::points_result<T> res;
  {
    nb::gil_scoped_release unlocked;
    res = sk::transport_points(static_cast<const T*>(s.X.a.data()), s.n, static_cast<const T*>(s.Y.a.data()), s.m,
                               s.dim, s.a_given ? static_cast<const T*>(s.a.a.data()) : nullptr,
                               s.b_given ? static_cast<const T*>(s.b.a.data()) : nullptr, s.eps, cm, s.o);
  }
  return nb::make_tuple(to_numpy(std::move(res.log_u)), to_numpy(std::move(res.log_v)),
                        std::string(sk::status_name(res.state)), res.iterations, res.error, res.cost,
                        to_numpy(std::move(res.error_history)), res.annealing_steps,
                        std::string(sk::exchange_name(res.exchange_x)), std::string(sk::exchange_name(res.exchange_y)));
}

// The arguments of applying a point-cloud plan after conversion.
struct apply_args : clouds_args {
  py_input log_u, log_v, V;
  nb::object out;
  void* out_data = nullptr;
  std::size_t k = 0;
  double eps = 0;
  sk::plan_apply_options o;
};

void convert_apply(apply_args& s, nb::handle X, nb::handle Y, nb::handle log_u, nb::handle log_v, nb::handle eps,
                   nb::handle V, nb::handle options) {
  option_reader opt(options);
  opt.read_with("metric",
                [&](nb::handle h) { s.o.metric = sk::parse_metric(value<std::string>(h, "metric", "a string")); });
  opt.read("transpose", s.o.transpose, "a bool");
  opt.read("threads", s.o.threads, "an int");
  opt.read("cost_power", s.o.cost_power, "an int");
  opt.finish();
  const nb::object dtype = convert_clouds(s, X, Y, /*batch_ok=*/true);
  s.o.batch = s.batch;
  s.log_u = input(log_u, "log_u", dtype);
  require_per_point(s, s.log_u, s.n, "log_u");
  s.log_v = input(log_v, "log_v", dtype);
  require_per_point(s, s.log_v, s.m, "log_v");
  s.eps = value<double>(eps, "eps", "a number");
  s.V = input(V, "V", dtype);
  const std::size_t others = s.o.transpose ? s.n : s.m, own = s.o.transpose ? s.m : s.n;
  s.k = values_per_point(s, s.V, others, s.o.transpose ? "X" : "Y");
  s.out = rows_out(s, own, s.k, true, dtype);
  s.out_data = output(s.out, "out").data();
}

template <class T>
nb::object run_apply(apply_args& s, MPI_Comm cm) {
  {
    nb::gil_scoped_release unlocked;
    sk::apply_plan_points(static_cast<const T*>(s.X.a.data()), s.n, static_cast<const T*>(s.Y.a.data()), s.m, s.dim,
                          static_cast<const T*>(s.log_u.a.data()), static_cast<const T*>(s.log_v.a.data()), s.eps,
                          static_cast<const T*>(s.V.a.data()), s.k, static_cast<T*>(s.out_data), cm, s.o);
  }
  return s.out;
}

// softmin_points: apply_args with h in log_v, no log_u, V optional (k = 0), and
// the rows' log-sum-exps beside the averages.
struct softmin_args : apply_args {
  nb::object lse;
  void* lse_data = nullptr;
};

void convert_softmin(softmin_args& s, nb::handle X, nb::handle Y, nb::handle h, nb::handle eps, nb::handle V,
                     nb::handle options) {
  option_reader opt(options);
  opt.read_with("metric",
                [&](nb::handle m) { s.o.metric = sk::parse_metric(value<std::string>(m, "metric", "a string")); });
  opt.read("threads", s.o.threads, "an int");
  opt.read("cost_power", s.o.cost_power, "an int");
  opt.finish();
  const nb::object dtype = convert_clouds(s, X, Y, /*batch_ok=*/true);
  s.o.batch = s.batch;
  s.log_v = input(h, "h", dtype);
  require_per_point(s, s.log_v, s.m, "h");
  s.eps = value<double>(eps, "eps", "a number");
  if (!V.is_none()) {
    s.V = input(V, "V", dtype);
    s.k = values_per_point(s, s.V, s.m, "Y");
  }
  s.out = rows_out(s, s.n, s.k, true, dtype);
  s.out_data = output(s.out, "avg").data();
  s.lse = rows_out(s, s.n, 0, false, dtype);
  s.lse_data = output(s.lse, "lse").data();
}

template <class T>
nb::object run_softmin(softmin_args& s, MPI_Comm cm) {
  {
    nb::gil_scoped_release unlocked;
    sk::softmin_points(static_cast<const T*>(s.X.a.data()), s.n, static_cast<const T*>(s.Y.a.data()), s.m, s.dim,
                       static_cast<const T*>(s.log_v.a.data()), s.eps,
                       s.k ? static_cast<const T*>(s.V.a.data()) : nullptr, s.k, static_cast<T*>(s.lse_data),
                       static_cast<T*>(s.out_data), cm, s.o);
  }
  return nb::make_tuple(s.lse, s.out);
}

// The arguments of a barycenter call after conversion: this rank's rows of C
// (rows x dim), A (dim x hists, whole), the weights (None: uniform).
struct barycenter_args {
  py_input C, A, weights;
  bool weights_given = false, single = false;
  std::size_t rows = 0, dim = 0, hists = 0;
  double eps = 0;
  sk::barycenter_options o;
};

void convert_barycenter(barycenter_args& s, nb::handle C, nb::handle A, nb::handle weights, nb::handle eps,
                        nb::handle options) {
  option_reader opt(options);
  s.C = input(C, "C");
  if (s.C.a.ndim() != 2) fail(errc::invalid_argument, "C must be 2-D (this rank's rows x dim)");
  if (s.C.type != conveyor::dtype::float32 && s.C.type != conveyor::dtype::float64) {
    fail(errc::invalid_type, "C dtype must be float32 or float64, got " + std::string(conveyor::dtype_name(s.C.type)));
  }
  s.single = s.C.type == conveyor::dtype::float32;
  s.rows = s.C.a.shape(0);
  s.dim = s.C.a.shape(1);
  const nb::object dtype = s.C.obj.attr("dtype");
  s.A = input(A, "A", dtype);
  if (s.A.a.ndim() != 2 || s.A.a.shape(0) != s.dim) {
    fail(errc::invalid_argument,
         "A must be 2-D with a row per point of the support (" + std::to_string(s.dim) + " rows)");
  }
  s.hists = s.A.a.shape(1);
  s.weights_given = !weights.is_none();
  if (s.weights_given) {
    s.weights = input(weights, "weights", dtype);
    require_shape(s.weights.a, {s.hists}, "weights");
  }
  s.eps = value<double>(eps, "eps", "a number");
  opt.read("tol", s.o.tol, "a number");
  opt.read("max_iter", s.o.max_iter, "an int");
  opt.read("check_every", s.o.check_every, "an int");
  opt.read("first_check", s.o.first_check, "an int");
  opt.read("log_domain", s.o.log_domain, "a bool");
  opt.read("threads", s.o.threads, "an int");
  read_inner_allreduce(opt, s.o.allreduce);
  opt.finish();
}

template <class T>
nb::tuple run_barycenter(barycenter_args& s, MPI_Comm cm) {
  sk::barycenter_result<T> res;
  {
    nb::gil_scoped_release unlocked;
    res =
        sk::barycenter(static_cast<const T*>(s.C.a.data()), s.rows, s.dim, s.dim, static_cast<const T*>(s.A.a.data()),
                       s.hists, s.weights_given ? static_cast<const T*>(s.weights.a.data()) : nullptr, s.eps, cm, s.o);
  }
  const std::size_t hists = s.hists, dim = s.dim;
  nb::object log_v = nb::cast(to_numpy(std::move(res.log_v))).attr("reshape")(hists, dim);
  return nb::make_tuple(to_numpy(std::move(res.barycenter)), std::string(sk::status_name(res.state)), res.iterations,
                        res.error, to_numpy(std::move(res.error_history)), log_v);
}

// The arguments of a batch of problems after conversion: costs (batch, n, m) or
// clouds (batch, n, dim) and (batch, m, dim); weights (batch, n) and (batch, m) or None.
struct batch_args : clouds_args {
  py_input C, a, b;
  bool points = false, a_given = false, b_given = false;
  double eps = 0;
  sk::batch_options o;
};

void convert_batch(batch_args& s, nb::handle C, nb::handle X, nb::handle Y, nb::handle a, nb::handle b, nb::handle eps,
                   nb::handle options) {
  option_reader opt(options);
  nb::object dtype;
  s.points = C.is_none();
  if (s.points) {
    dtype = convert_clouds(s, X, Y, /*batch_ok=*/true);
    if (!s.batched) fail(errc::invalid_argument, "X and Y must be 3-D (problems x points x dimensions)");
  } else {
    s.C = input(C, "M");
    if (s.C.a.ndim() != 3) fail(errc::invalid_argument, "M must be 3-D (problems x rows x columns)");
    if (s.C.type != conveyor::dtype::float32 && s.C.type != conveyor::dtype::float64) {
      fail(errc::invalid_type,
           "M's dtype must be float32 or float64, got " + std::string(conveyor::dtype_name(s.C.type)));
    }
    s.single = s.C.type == conveyor::dtype::float32;
    dtype = s.C.obj.attr("dtype");
    s.batch = s.C.a.shape(0);
    s.n = s.C.a.shape(1);
    s.m = s.C.a.shape(2);
  }
  s.a_given = !a.is_none();
  s.b_given = !b.is_none();
  if (s.a_given) {
    s.a = input(a, "a", dtype);
    require_shape(s.a.a, {s.batch, s.n}, "a");
  }
  if (s.b_given) {
    s.b = input(b, "b", dtype);
    require_shape(s.b.a, {s.batch, s.m}, "b");
  }
  s.eps = value<double>(eps, "eps", "a number");
  opt.read_with("metric",
                [&](nb::handle h) { s.o.metric = sk::parse_metric(value<std::string>(h, "metric", "a string")); });
  read_iteration(opt, s.o);
  opt.finish();
}

template <class T>
nb::tuple run_batch(batch_args& s, MPI_Comm cm) {
  sk::batch_result<T> res;
  const auto* a = s.a_given ? static_cast<const T*>(s.a.a.data()) : nullptr;
  const auto* b = s.b_given ? static_cast<const T*>(s.b.a.data()) : nullptr;
  {
    nb::gil_scoped_release unlocked;
    res = s.points
              ? sk::transport_points_batch(static_cast<const T*>(s.X.a.data()), static_cast<const T*>(s.Y.a.data()),
                                           s.batch, s.n, s.m, s.dim, a, b, s.eps, cm, s.o)
              : sk::transport_batch(static_cast<const T*>(s.C.a.data()), s.batch, s.n, s.m, a, b, s.eps, cm, s.o);
  }
  std::vector<std::string> states;
  for (sk::status st : res.state) states.emplace_back(sk::status_name(st));
  std::vector<double> iterations(res.iterations.begin(), res.iterations.end());
  const auto per_problem = [&](std::vector<T> v, std::size_t count) {
    return nb::cast(to_numpy(std::move(v))).attr("reshape")(s.batch, count);
  };
  return nb::make_tuple(per_problem(std::move(res.log_u), s.n), per_problem(std::move(res.log_v), s.m), states,
                        to_numpy(std::move(iterations)), to_numpy(std::move(res.error)), to_numpy(std::move(res.cost)),
                        to_numpy(std::move(res.entropy)), to_numpy(std::move(res.kl)));
}

// softmin: a formed cost array (n, m) or (batch, n, m) and its columns'
// potentials h (m,) or (batch, m); with `weights`, W of C's shape beside lse.
struct softmin_dense_args {
  py_input C, h;
  nb::object lse, W;
  std::size_t batch = 1, n = 0, m = 0;
  int threads = 0;
  double eps = 0;
  bool single = false, batched = false;
};

void convert_softmin_dense(softmin_dense_args& s, nb::handle C, nb::handle h, nb::handle eps, nb::handle weights,
                           nb::handle options) {
  option_reader opt(options);
  opt.read("threads", s.threads, "an int");
  opt.finish();
  s.C = input(C, "C");
  s.batched = s.C.a.ndim() == 3;
  if (s.C.a.ndim() != 2 && !s.batched) {
    fail(errc::invalid_argument, "C must be 2-D (rows x columns) or 3-D (problems x rows x columns)");
  }
  if (s.C.type != conveyor::dtype::float32 && s.C.type != conveyor::dtype::float64) {
    fail(errc::invalid_type,
         "C's dtype must be float32 or float64, got " + std::string(conveyor::dtype_name(s.C.type)));
  }
  s.single = s.C.type == conveyor::dtype::float32;
  const nb::object dtype = s.C.obj.attr("dtype");
  s.batch = s.batched ? s.C.a.shape(0) : 1;
  s.n = s.C.a.shape(s.batched ? 1 : 0);
  s.m = s.C.a.shape(s.batched ? 2 : 1);
  s.h = input(h, "h", dtype);
  if (s.batched) require_shape(s.h.a, {s.batch, s.m}, "h");
  else require_shape(s.h.a, {s.m}, "h");
  s.eps = value<double>(eps, "eps", "a number");
  const nb::module_ np = nb::module_::import_("numpy");
  s.lse = np.attr("empty")(s.batched ? nb::make_tuple(s.batch, s.n) : nb::make_tuple(s.n), nb::arg("dtype") = dtype);
  s.W = value<bool>(weights, "weights", "a bool") ? np.attr("empty_like")(s.C.obj) : nb::none();
}

template <class T>
nb::object run_softmin_dense(softmin_dense_args& s, MPI_Comm cm) {
  T* lse = static_cast<T*>(output(s.lse, "lse").data());
  T* W = s.W.is_none() ? nullptr : static_cast<T*>(output(s.W, "W").data());
  {
    nb::gil_scoped_release unlocked;
    sk::softmin(static_cast<const T*>(s.C.a.data()), s.batch, s.n, s.m, static_cast<const T*>(s.h.a.data()), s.eps, lse,
                W, cm, s.threads);
  }
  return nb::make_tuple(s.lse, s.W);
}

// One solver call from Python: the arguments converted inside the collective
// contract (`to_args`) and agreed over the ranks, then `run` for their dtype.
template <class Args, class ToArgs, class Run>
nb::object solver_call(const char* what, nb::handle comm, ToArgs&& to_args, Run&& run) {
  const MPI_Comm cm = comm_of(comm);
  conveyor::collective_call call(what, cm);
  Args s;
  convert(call, [&] { to_args(s); });
  call.finish_front_end();
  return run(s, cm);
}

// The solvers on a dense matrix: scaling, OT, the fixed-support barycenter.
void bind_dense_solvers(nb::module_& m) {
  m.def(
      "softmin",
      [](nb::handle C, nb::handle h, nb::handle eps, nb::handle weights, nb::handle comm, nb::handle options) {
        return solver_call<softmin_dense_args>(
            "sinkhorn::softmin", comm,
            [&](softmin_dense_args& s) { convert_softmin_dense(s, C, h, eps, weights, options); },
            [](softmin_dense_args& s, MPI_Comm cm) {
              return s.single ? run_softmin_dense<float>(s, cm) : run_softmin_dense<double>(s, cm);
            });
      },
      nb::arg("C").none(), nb::arg("h").none(), nb::arg("eps").none(), nb::arg("weights").none(),
      nb::arg("comm").none(), nb::arg("options").none());
  m.def(
      "sinkhorn_scale",
      [](nb::handle A, nb::handle r, nb::handle c, nb::handle comm, nb::handle in_place, nb::handle options) {
        bool in_place_value = false;
        return solver_call<sinkhorn_args>(
            "sinkhorn::scale", comm,
            [&](sinkhorn_args& s) {
              in_place_value = value<bool>(in_place, "in_place", "a bool");
              convert_sinkhorn(s, A, r, c, in_place_value, options, "r", "c");
            },
            [&](sinkhorn_args& s, MPI_Comm cm) {
              return s.single ? run_scale<float>(s, cm, in_place_value) : run_scale<double>(s, cm, in_place_value);
            });
      },
      nb::arg("A").none(), nb::arg("r").none(), nb::arg("c").none(), nb::arg("comm").none(), nb::arg("in_place").none(),
      nb::arg("options").none());

  m.def(
      "sinkhorn_transport",
      [](nb::handle C, nb::handle a, nb::handle b, nb::handle eps, nb::handle comm, nb::handle plan,
         nb::handle options) {
        void* plan_data = nullptr;
        return solver_call<sinkhorn_args>(
            "sinkhorn::transport", comm,
            [&](sinkhorn_args& s) {
              s.plan = nb::none();
              convert_sinkhorn(s, C, a, b, false, options, "a", "b");
              s.eps = value<double>(eps, "eps", "a number");
              if (value<bool>(plan, "plan", "a bool")) {
                s.plan = nb::module_::import_("numpy").attr("empty_like")(s.matrix.obj);
                plan_data = output(s.plan, "plan").data();
              }
            },
            [&](sinkhorn_args& s, MPI_Comm cm) {
              return s.single ? run_transport<float>(s, cm, static_cast<float*>(plan_data))
                              : run_transport<double>(s, cm, static_cast<double*>(plan_data));
            });
      },
      nb::arg("C").none(), nb::arg("a").none(), nb::arg("b").none(), nb::arg("eps").none(), nb::arg("comm").none(),
      nb::arg("plan").none(), nb::arg("options").none());

  m.def(
      "sinkhorn_barycenter",
      [](nb::handle C, nb::handle A, nb::handle weights, nb::handle eps, nb::handle comm, nb::handle options) {
        return solver_call<barycenter_args>(
            "sinkhorn::barycenter", comm,
            [&](barycenter_args& s) { convert_barycenter(s, C, A, weights, eps, options); },
            [](barycenter_args& s, MPI_Comm cm) {
              return s.single ? run_barycenter<float>(s, cm) : run_barycenter<double>(s, cm);
            });
      },
      nb::arg("C").none(), nb::arg("A").none(), nb::arg("weights").none(), nb::arg("eps").none(),
      nb::arg("comm").none(), nb::arg("options").none());
}

// The point-cloud solver and its plan's action.
void bind_point_solvers(nb::module_& m) {
  m.def(
      "sinkhorn_points",
      [](nb::handle X, nb::handle Y, nb::handle a, nb::handle b, nb::handle eps, nb::handle comm, nb::handle options) {
        return solver_call<points_args>(
            "sinkhorn::transport_points", comm, [&](points_args& s) { convert_points(s, X, Y, a, b, eps, options); },
            [](points_args& s, MPI_Comm cm) {
              return s.single ? run_points<float>(s, cm) : run_points<double>(s, cm);
            });
      },
      nb::arg("X").none(), nb::arg("Y").none(), nb::arg("a").none(), nb::arg("b").none(), nb::arg("eps").none(),
      nb::arg("comm").none(), nb::arg("options").none());

  m.def(
      "sinkhorn_batch",
      [](nb::handle C, nb::handle X, nb::handle Y, nb::handle a, nb::handle b, nb::handle eps, nb::handle comm,
         nb::handle options) {
        return solver_call<batch_args>(
            C.is_none() ? "sinkhorn::transport_points_batch" : "sinkhorn::transport_batch", comm,
            [&](batch_args& s) { convert_batch(s, C, X, Y, a, b, eps, options); },
            [](batch_args& s, MPI_Comm cm) { return s.single ? run_batch<float>(s, cm) : run_batch<double>(s, cm); });
      },
      nb::arg("C").none(), nb::arg("X").none(), nb::arg("Y").none(), nb::arg("a").none(), nb::arg("b").none(),
      nb::arg("eps").none(), nb::arg("comm").none(), nb::arg("options").none());

  m.def(
      "apply_plan_points",
      [](nb::handle X, nb::handle Y, nb::handle log_u, nb::handle log_v, nb::handle eps, nb::handle V, nb::handle comm,
         nb::handle options) {
        return solver_call<apply_args>(
            "sinkhorn::apply_plan_points", comm,
            [&](apply_args& s) { convert_apply(s, X, Y, log_u, log_v, eps, V, options); },
            [](apply_args& s, MPI_Comm cm) { return s.single ? run_apply<float>(s, cm) : run_apply<double>(s, cm); });
      },
      nb::arg("X").none(), nb::arg("Y").none(), nb::arg("log_u").none(), nb::arg("log_v").none(), nb::arg("eps").none(),
      nb::arg("V").none(), nb::arg("comm").none(), nb::arg("options").none());

  m.def(
      "softmin_points",
      [](nb::handle X, nb::handle Y, nb::handle h, nb::handle eps, nb::handle V, nb::handle comm, nb::handle options) {
        return solver_call<softmin_args>(
            "sinkhorn::softmin_points", comm, [&](softmin_args& s) { convert_softmin(s, X, Y, h, eps, V, options); },
            [](softmin_args& s, MPI_Comm cm) {
              return s.single ? run_softmin<float>(s, cm) : run_softmin<double>(s, cm);
            });
      },
      nb::arg("X").none(), nb::arg("Y").none(), nb::arg("h").none(), nb::arg("eps").none(), nb::arg("V").none(),
      nb::arg("comm").none(), nb::arg("options").none());
}

}  // namespace

void bind_sinkhorn(nb::module_& m) {
  bind_dense_solvers(m);
  bind_point_solvers(m);
  // The table of the dense solver's variants (src/sinkhorn/dense/variant_table.cpp):
  // (name, summary, in place) triples, from which the solvers' docstrings list them.
  m.def("sinkhorn_variants", [] {
    nb::list out;
    for (const sk::variant_info& v : sk::variants()) {
      out.append(nb::make_tuple(std::string(v.name), std::string(v.summary), v.rewrites_matrix));
    }
    return out;
  });
  // The table of the point-cloud exchanges (src/sinkhorn/points/exchange_table.cpp):
  // (name, summary) pairs, from which conveyor.sinkhorn_points's docstring lists them.
  m.def("points_exchanges", [] {
    nb::list out;
    for (const sk::exchange_info& e : sk::points_exchanges()) {
      out.append(nb::make_tuple(std::string(e.name), std::string(e.summary)));
    }
    return out;
  });
  m.def("balanced_rows", [](std::size_t M, int rank, int size) {
    const sk::row_block b = sk::balanced_rows(M, rank, size);
    return nb::make_tuple(b.first, b.count);
  });
}

}  // namespace conveyor::python
