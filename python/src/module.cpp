// The Python extension `conveyor._conveyor` (nanobind): NumPy arrays in and out,
// communicators from mpi4py. The Python-facing names and docs are in
// python/conveyor/__init__.py; this file only converts arguments.
#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/outer.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/types.hpp"
#include "conveyor/version.hpp"

namespace nb = nanobind;

namespace {

using array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;

// NumPy's dtype of an array as Conveyor's (bfloat16 has no NumPy dtype).
conveyor::dtype dtype_of(nb::dlpack::dtype t) {
  const auto code = static_cast<nb::dlpack::dtype_code>(t.code);
  const int bits = t.bits;
  if (t.lanes != 1) throw nb::type_error("conveyor: vector dtypes are not supported");
  switch (code) {
    case nb::dlpack::dtype_code::Int:
      if (bits == 8) return conveyor::dtype::int8;
      if (bits == 16) return conveyor::dtype::int16;
      if (bits == 32) return conveyor::dtype::int32;
      if (bits == 64) return conveyor::dtype::int64;
      break;
    case nb::dlpack::dtype_code::UInt:
      if (bits == 8) return conveyor::dtype::uint8;
      if (bits == 16) return conveyor::dtype::uint16;
      if (bits == 32) return conveyor::dtype::uint32;
      if (bits == 64) return conveyor::dtype::uint64;
      break;
    case nb::dlpack::dtype_code::Float:
      if (bits == 16) return conveyor::dtype::float16;
      if (bits == 32) return conveyor::dtype::float32;
      if (bits == 64) return conveyor::dtype::float64;
      break;
    case nb::dlpack::dtype_code::Complex:
      if (bits == 64) return conveyor::dtype::complex64;
      if (bits == 128) return conveyor::dtype::complex128;
      break;
    default:
      break;
  }
  throw nb::type_error(("conveyor: unsupported NumPy dtype (code " + std::to_string(t.code) + ", " + std::to_string(bits) +
                        " bits)").c_str());
}

// The two arrays of a binary operation: same dtype and element count.
conveyor::dtype matching(const array& a, const array& b, const char* what) {
  const conveyor::dtype t = dtype_of(a.dtype());
  if (dtype_of(b.dtype()) != t) throw nb::type_error((std::string("conveyor.") + what + ": arrays differ in dtype").c_str());
  if (a.size() != b.size()) {
    throw nb::value_error((std::string("conveyor.") + what + ": arrays differ in size (" + std::to_string(a.size()) + " vs " +
                           std::to_string(b.size()) + ")").c_str());
  }
  return t;
}

// mpi4py's communicator object as an MPI_Comm.
MPI_Comm comm_of(nb::handle comm) {
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type)) throw nb::type_error("conveyor: comm must be an mpi4py communicator");
  return *PyMPIComm_Get(comm.ptr());
}

namespace rd = conveyor::redistribute;

// Any-strided NumPy array (layouts take their storage from its strides).
using strided = nb::ndarray<nb::numpy, nb::device::cpu>;

// A layout and the dtype of the array it describes on this rank (none: no blocks here).
struct py_layout {
  rd::layout l;
  int dtype = -1;
};

// A plan owns copies of its layouts (they share the storage descriptions).
struct py_plan {
  std::deque<rd::layout> layouts;
  std::unique_ptr<rd::plan> p;
};

std::vector<std::int64_t> element_strides(const strided& a) {
  std::vector<std::int64_t> s(a.ndim());
  for (std::size_t d = 0; d < a.ndim(); ++d) s[d] = a.stride(d);  // nanobind: strides in elements
  return s;
}

namespace sk = conveyor::sinkhorn;

// A 2-D C-contiguous float32/float64 NumPy matrix and vectors of the same type.
template <class T>
using matrix = nb::ndarray<nb::numpy, T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <class T>
using vector = nb::ndarray<nb::numpy, T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T> v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule free_it(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), {owned->size()}, free_it);
}

sk::options sinkhorn_options(const std::string& variant, double tol, int max_iter, int threads, bool log_domain) {
  sk::options o;
  o.kind = sk::parse_variant(variant);
  o.tol = tol;
  o.max_iter = max_iter;
  o.threads = threads;
  o.log_domain = log_domain;
  return o;
}

template <class T>
void require_length(const vector<T>& v, std::size_t n, const char* what) {
  if (v.shape(0) != n) {
    throw nb::value_error((std::string("conveyor: ") + what + " has " + std::to_string(v.shape(0)) + " entries, needs " +
                           std::to_string(n)).c_str());
  }
}

template <class T>
void bind_sinkhorn(nb::module_& m) {
  m.def(
      "sinkhorn_scale",
      [](matrix<T> A, vector<T> r, vector<T> c, nb::handle comm, bool in_place, const std::string& variant, double tol,
         int max_iter, int threads) {
        require_length(r, A.shape(0), "r");
        require_length(c, A.shape(1), "c");
        const sk::options o = sinkhorn_options(variant, tol, max_iter, threads, false);
        const MPI_Comm cm = comm_of(comm);
        sk::scaling_result<T> res;
        {
          nb::gil_scoped_release unlocked;
          res = in_place ? sk::scale_in_place(A.data(), A.shape(0), A.shape(1), A.shape(1), r.data(), c.data(), cm, o)
                         : sk::scale(A.data(), A.shape(0), A.shape(1), A.shape(1), r.data(), c.data(), cm, o);
        }
        return nb::make_tuple(to_numpy(std::move(res.u)), to_numpy(std::move(res.v)), std::string(sk::status_name(res.state)),
                              res.iterations, res.error);
      },
      nb::arg("A").noconvert(), nb::arg("r"), nb::arg("c"), nb::arg("comm"), nb::arg("in_place"), nb::arg("variant"),
      nb::arg("tol"), nb::arg("max_iter"), nb::arg("threads"));
  m.def(
      "sinkhorn_transport",
      [](matrix<T> C, vector<T> a, vector<T> b, double eps, nb::handle comm, double tol, int max_iter, bool log_domain,
         int threads, nb::object plan) {
        require_length(a, C.shape(0), "a");
        require_length(b, C.shape(1), "b");
        T* plan_data = nullptr;
        if (!plan.is_none()) {
          const matrix<T> p = nb::cast<matrix<T>>(plan);
          if (p.shape(0) != C.shape(0) || p.shape(1) != C.shape(1)) throw nb::value_error("conveyor: plan must have C's shape");
          plan_data = p.data();
        }
        const sk::options o = sinkhorn_options("fused", tol, max_iter, threads, log_domain);
        const MPI_Comm cm = comm_of(comm);
        sk::transport_result<T> res;
        {
          nb::gil_scoped_release unlocked;
          res = sk::transport(C.data(), C.shape(0), C.shape(1), C.shape(1), a.data(), b.data(), eps, cm, o, plan_data, C.shape(1));
        }
        return nb::make_tuple(to_numpy(std::move(res.f)), to_numpy(std::move(res.g)), std::string(sk::status_name(res.state)),
                              res.iterations, res.error, res.cost);
      },
      nb::arg("C"), nb::arg("a"), nb::arg("b"), nb::arg("eps"), nb::arg("comm"), nb::arg("tol"), nb::arg("max_iter"),
      nb::arg("log_domain"), nb::arg("threads"), nb::arg("plan").none());
}

}  // namespace

NB_MODULE(_conveyor, m) {
  if (import_mpi4py() < 0) throw nb::python_error();
  // conveyor::error -> ValueError (bad arguments), NotImplementedError
  // (unsupported), RuntimeError (MPI or internal), with Conveyor's message.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const conveyor::error& e) {
      switch (e.code()) {
        case conveyor::errc::invalid_argument: PyErr_SetString(PyExc_ValueError, e.what()); break;
        case conveyor::errc::unsupported: PyErr_SetString(PyExc_NotImplementedError, e.what()); break;
        default: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
      }
    }
  });

  m.attr("__version__") = CONVEYOR_VERSION_STRING;
  m.def("simd_target", [] { return conveyor::simd_targets().active; });

  m.def(
      "reduce_local",
      [](array in, array inout, const std::string& op) {
        const conveyor::dtype t = matching(in, inout, "reduce_local");
        const conveyor::op o = conveyor::parse_op(op);
        nb::gil_scoped_release unlocked;
        conveyor::reduce_local(in.data(), inout.data(), in.size(), t, o);
      },
      nb::arg("inbuf"), nb::arg("inoutbuf").noconvert(), nb::arg("op") = "sum");

  m.def(
      "allreduce",
      [](array send, array recv, const std::string& op, nb::handle comm, const std::string& algorithm, bool deterministic) {
        const conveyor::dtype t = matching(send, recv, "allreduce");
        conveyor::allreduce_options o;
        o.algorithm = conveyor::parse_algorithm(algorithm);
        o.deterministic = deterministic;
        const conveyor::op reduction = conveyor::parse_op(op);
        const MPI_Comm c = comm_of(comm);
        conveyor::allreduce_report r;
        {
          nb::gil_scoped_release unlocked;
          r = conveyor::allreduce(send.data(), recv.data(), send.size(), t, reduction, c, o);
        }
        return std::string(conveyor::algorithm_name(r.algorithm));
      },
      nb::arg("send"), nb::arg("recv").noconvert(), nb::arg("op"), nb::arg("comm"), nb::arg("algorithm"),
      nb::arg("deterministic"));

  bind_sinkhorn<double>(m);
  bind_sinkhorn<float>(m);
  m.def("balanced_rows", [](std::size_t M, int rank, int size) {
    const sk::row_block b = sk::balanced_rows(M, rank, size);
    return nb::make_tuple(b.first, b.count);
  });

  m.def(
      "outer_sum",
      [](array a, array b, array G, nb::handle comm, const std::string& algorithm, bool distributed) {
        const conveyor::dtype t = dtype_of(a.dtype());
        if (dtype_of(b.dtype()) != t || dtype_of(G.dtype()) != t) throw nb::type_error("conveyor.outer_sum: arrays differ in dtype");
        conveyor::outer_options o;
        o.algorithm = conveyor::parse_outer_algorithm(algorithm);
        o.distributed = distributed;
        o.validate = true;
        const MPI_Comm c = comm_of(comm);
        conveyor::outer_report r;
        {
          nb::gil_scoped_release unlocked;
          r = conveyor::outer_sum(a.data(), a.size(), b.data(), b.size(), G.data(), G.size(), t, c, o);
        }
        return std::string(conveyor::outer_algorithm_name(r.algorithm));
      },
      nb::arg("a"), nb::arg("b"), nb::arg("G").noconvert(), nb::arg("comm"), nb::arg("algorithm"), nb::arg("distributed"));
  m.def("outer_rows", [](std::size_t N, int rank, int size) {
    const conveyor::outer_block b = conveyor::outer_rows(N, rank, size);
    return nb::make_tuple(b.first_row, b.rows);
  });

  // --- Redistribute (the Python layer checks shapes against the rank's blocks) ---
  nb::class_<py_layout>(m, "_Layout")
      .def_static("cartesian",
                  [](std::vector<std::int64_t> shape, std::vector<int> grid, nb::object local, bool column_major_ranks) {
                    auto out = std::make_unique<py_layout>();
                    void* data = nullptr;
                    std::vector<std::int64_t> strides;
                    if (!local.is_none()) {
                      const strided a = nb::cast<strided>(local);
                      data = a.data();
                      strides = element_strides(a);
                      out->dtype = static_cast<int>(dtype_of(a.dtype()));
                    }
                    out->l = rd::layout::cartesian(std::move(shape), std::move(grid), data, column_major_ranks, std::move(strides));
                    return out.release();
                  })
      .def_static("block_cyclic",
                  [](std::int64_t M, std::int64_t N, std::int64_t mb, std::int64_t nb_, int prow, int pcol, bool row_major_grid,
                     int rsrc, int csrc, nb::object local) {
                    auto out = std::make_unique<py_layout>();
                    rd::layout::block_cyclic_params p;
                    p.M = M;
                    p.N = N;
                    p.mb = mb;
                    p.nb = nb_;
                    p.prow = prow;
                    p.pcol = pcol;
                    p.row_major_grid = row_major_grid;
                    p.rsrc = rsrc;
                    p.csrc = csrc;
                    if (!local.is_none()) {  // column-major local array (Fortran order): lld = its column stride
                      const strided a = nb::cast<strided>(local);
                      if (a.ndim() != 2 || (a.shape(0) > 1 && a.stride(0) != 1)) {
                        throw nb::value_error("conveyor: a block-cyclic local array must be 2-D and column-major (order='F')");
                      }
                      p.local = a.data();
                      p.lld = std::max<std::int64_t>(a.stride(1), std::max<std::int64_t>(1, static_cast<std::int64_t>(a.shape(0))));
                      out->dtype = static_cast<int>(dtype_of(a.dtype()));
                    }
                    out->l = rd::layout::block_cyclic(p);
                    return out.release();
                  })
      .def("blocks_of", [](const py_layout& l, int rank) { return l.l.blocks_of(rank).size(); })
      .def_prop_ro("dtype", [](const py_layout& l) { return l.dtype; })
      .def_prop_ro("shape", [](const py_layout& l) {
        std::vector<std::int64_t> s(static_cast<std::size_t>(l.l.ndim()));
        for (int d = 0; d < l.l.ndim(); ++d) s[static_cast<std::size_t>(d)] = l.l.extent(d);
        return s;
      });

  nb::class_<py_plan>(m, "_Plan")
      .def("__init__",
           [](py_plan* self, const py_layout& src, const py_layout& dst, nb::handle comm, std::vector<int> perm, double alpha,
              double beta, bool conjugate, int dtype, const std::string& transport, const std::string& relabel) {
             new (self) py_plan();
             rd::transform t;
             t.src = &self->layouts.emplace_back(src.l);
             t.dst = &self->layouts.emplace_back(dst.l);
             t.perm = std::move(perm);
             t.alpha = alpha;
             t.beta = beta;
             t.conjugate = conjugate;
             t.type = static_cast<conveyor::dtype>(dtype);
             rd::plan_options o;
             o.method = rd::parse_transport(transport);
             if (relabel == "none") o.relabel = rd::relabeling::none;
             else if (relabel == "greedy") o.relabel = rd::relabeling::greedy;
             else if (relabel == "optimal") o.relabel = rd::relabeling::optimal;
             else throw nb::value_error("conveyor: relabel must be 'none', 'greedy' or 'optimal'");
             const MPI_Comm c = comm_of(comm);
             nb::gil_scoped_release unlocked;
             self->p = std::make_unique<rd::plan>(t, c, o);
           })
      .def("execute",
           [](py_plan& p) {
             nb::gil_scoped_release unlocked;
             p.p->execute();
           })
      .def_prop_ro("transport", [](const py_plan& p) { return std::string(rd::transport_name(p.p->method())); })
      .def_prop_ro("volume", [](const py_plan& p) { return p.p->volume(); })
      .def_prop_ro("sigma", [](const py_plan& p) { return p.p->sigma(); })
      .def_prop_ro("remote_bytes", [](const py_plan& p) { return p.p->remote_bytes(); })
      .def_prop_ro("relabeled_remote_bytes", [](const py_plan& p) { return p.p->relabeled_remote_bytes(); });
}
