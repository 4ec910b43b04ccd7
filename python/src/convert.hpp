// SPDX-License-Identifier: BSD-3-Clause
// What every binding of the Python extension shares: NumPy arrays in and out,
// Python values as C++ ones, the options dict, communicators from mpi4py, and
// `convert`, which runs a conversion inside a collective call's local checks.
#pragma once

#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
// Every type caster any binding uses, here: value<T> is instantiated in several
// files, and an instantiation made without T's caster would differ from the
// others (and the linker keeps one of them).
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/types.hpp"

namespace conveyor::python {

namespace nb = nanobind;
using conveyor::errc;

// A C-contiguous CPU array of any dtype: writable (outputs) or read-only (inputs).
using array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;
using input_array = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;

[[noreturn]] inline void fail(errc code, const std::string& message) { throw conveyor::error(code, message); }

// NumPy's dtype of an array as Conveyor's (bfloat16 has no NumPy dtype).
conveyor::dtype dtype_of(nb::dlpack::dtype t);

// Runs a conversion inside the call's local checks: Python's exceptions (from
// NumPy, say) and Conveyor's become this rank's problem.
template <class F>
void convert(conveyor::collective_call& call, F&& f) {
  if (!call.ok()) return;
  try {
    f();
  } catch (nb::python_error& e) {
    call.fail(e.matches(PyExc_TypeError) ? errc::invalid_type : errc::invalid_argument, nb::str(e.value()).c_str());
  } catch (const conveyor::error& e) {
    call.fail(e.code(), e.message());
  }
}

// A Python value as T (ints, floats, bools, strings, lists of ints).
template <class T>
T value(nb::handle h, const char* name, const char* kind) {
  T v{};
  if (!nb::try_cast(h, v)) {
    fail(errc::invalid_type, std::string(name) + " must be " + kind + ", got " + nb::type_name(h.type()).c_str());
  }
  return v;
}

// An input array: anything NumPy turns into an array (copied only when it is not
// already C-contiguous, or not of `dtype` when one is given).
struct py_input {
  nb::object obj;
  input_array a;
  conveyor::dtype type{};
};
py_input input(nb::handle h, const char* name, nb::handle dtype = nb::none());

// An output array: written in place, so it must already be a writable
// C-contiguous NumPy array (never copied).
array output(nb::handle h, const char* name);

// The options of a call, given from Python as a dict (the keyword arguments of
// the Python function): each read by its name, which is the C++ field's (nested
// allreduce options as allreduce_<field>, except the shared ranks_per_node). None
// keeps the engine's default. A name no reader asked for is an error, so the
// Python front end cannot pass an option that reaches nothing.
class option_reader {
 public:
  explicit option_reader(nb::handle options) : options_(nb::borrow<nb::dict>(options)) {}
  template <class T>
  void read(const char* name, T& into, const char* kind) {
    read_with(name, [&](nb::handle h) { into = value<T>(h, name, kind); });
  }
  template <class F>
  void read_with(const char* name, F&& convert) {
    asked_.emplace_back(name);
    if (options_.contains(name) && !options_[name].is_none()) convert(options_[name]);
  }
  void finish() const {
    for (auto item : options_) {
      const std::string key = nb::cast<std::string>(nb::str(item.first));
      if (std::find(asked_.begin(), asked_.end(), key) == asked_.end())
        fail(errc::invalid_argument, "unknown option '" + key + "'");
    }
  }

 private:
  nb::dict options_;
  std::vector<std::string> asked_;
};

// The options every engine passes to its inner allreduce.
void read_inner_allreduce(option_reader& r, conveyor::allreduce_options& o);

void require_shape(std::size_t got_ndim, const std::size_t* got, std::initializer_list<std::size_t> want,
                   const char* name);
template <class A>
void require_shape(const A& a, std::initializer_list<std::size_t> want, const char* name) {
  std::vector<std::size_t> got(a.ndim());
  for (std::size_t d = 0; d < a.ndim(); ++d) got[d] = a.shape(d);
  require_shape(got.size(), got.data(), want, name);
}

// An MPI handle from Python: the address of the handle inside its mpi4py object
// (mpi4py's MPI._addressof), its type checked by the Python side
// (conveyor/_mpi.py). Taking addresses rather than mpi4py's C API keeps mpi4py
// out of the build: pip builds the extension in an environment without it.
MPI_Comm comm_at(std::uintptr_t address);
MPI_Comm comm_of(nb::handle comm);

}  // namespace conveyor::python
