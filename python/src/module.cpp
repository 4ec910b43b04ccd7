// The Python extension `conveyor._conveyor` (nanobind): NumPy arrays in and out,
// communicators from mpi4py. The Python-facing names and docs are in
// python/conveyor/__init__.py; this file only converts arguments.
#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>

#include "conveyor/collectives.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/types.hpp"
#include "conveyor/version.hpp"

namespace nb = nanobind;

namespace {

using array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;

// NumPy's dtype of an array as Conveyor's (bfloat16 has no NumPy dtype).
conveyor::dtype dtype_of(const array& a) {
  const nb::dlpack::dtype t = a.dtype();
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
  const conveyor::dtype t = dtype_of(a);
  if (dtype_of(b) != t) throw nb::type_error((std::string("conveyor.") + what + ": arrays differ in dtype").c_str());
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
}
