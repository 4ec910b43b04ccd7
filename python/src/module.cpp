// SPDX-License-Identifier: BSD-3-Clause
// The Python extension `conveyor._conveyor` (nanobind): NumPy arrays in and out,
// communicators (as handle addresses) from mpi4py. The Python-facing names and
// docs are in python/conveyor/__init__.py. This file makes the module: the error
// translation, and one binding function per engine (bindings.hpp), each in its
// own file; convert.hpp holds the conversions they share.
//
// The collective contract (conveyor/contract.hpp) from Python: every collective
// function takes its arguments as plain Python objects and converts them here,
// inside the local checks of a collective_call that the C++ entry point then
// joins. So a wrong dtype, a non-contiguous `out`, a bad name or a wrong shape on
// one rank fails on every rank with the same error, as nanobind's own argument
// checks (which run before any code of ours) could not. Only the communicator
// itself is converted before the call: without one there is nothing to agree on.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <exception>

#include "bindings.hpp"
#include "conveyor/node_memory.hpp"
#include "conveyor/simd.hpp"
#include "conveyor/types.hpp"
#include "conveyor/version.hpp"

namespace nb = nanobind;

NB_MODULE(_conveyor, m) {
  using conveyor::errc;
  // conveyor::error -> ValueError (bad arguments), TypeError (wrong kind or
  // dtype), NotImplementedError (unsupported), RuntimeError (MPI or internal),
  // with Conveyor's message.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const conveyor::error& e) {
      switch (e.code()) {
        case errc::invalid_argument:
          PyErr_SetString(PyExc_ValueError, e.what());
          break;
        case errc::invalid_type:
          PyErr_SetString(PyExc_TypeError, e.what());
          break;
        case errc::unsupported:
          PyErr_SetString(PyExc_NotImplementedError, e.what());
          break;
        default:
          PyErr_SetString(PyExc_RuntimeError, e.what());
          break;
      }
    }
  });

  m.attr("__version__") = CONVEYOR_VERSION_STRING;
  m.def("simd_target", [] { return conveyor::simd_targets().active; });
  // Node memory as a uint8 array that frees it with its last view (conveyor.empty
  // gives it a dtype and shape).
  m.def("node_bytes", [](std::size_t n) {
    void* p = conveyor::node_alloc(n);
    nb::capsule owner(p, [](void* q) noexcept { conveyor::node_free(q); });
    return nb::ndarray<nb::numpy, std::uint8_t>(p, {n}, owner);
  });
  conveyor::python::bind_collectives(m);
  conveyor::python::bind_sinkhorn(m);
  conveyor::python::bind_dsop(m);
  conveyor::python::bind_redistribute(m);
}
