// SPDX-License-Identifier: BSD-3-Clause
// The shared conversions of the Python extension (convert.hpp).
#include "convert.hpp"

namespace conveyor::python {

conveyor::dtype dtype_of(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  using conveyor::dtype;
  struct known {
    code c;
    int bits;
    dtype type;
  };
  // Bfloat: PyTorch's and JAX's bfloat16 (through DLPack).
  static constexpr known kKnown[] = {{code::Int, 8, dtype::int8},
                                     {code::Int, 16, dtype::int16},
                                     {code::Int, 32, dtype::int32},
                                     {code::Int, 64, dtype::int64},
                                     {code::UInt, 8, dtype::uint8},
                                     {code::UInt, 16, dtype::uint16},
                                     {code::UInt, 32, dtype::uint32},
                                     {code::UInt, 64, dtype::uint64},
                                     {code::Float, 16, dtype::float16},
                                     {code::Float, 32, dtype::float32},
                                     {code::Float, 64, dtype::float64},
                                     {code::Complex, 64, dtype::complex64},
                                     {code::Complex, 128, dtype::complex128},
                                     {code::Bfloat, 16, dtype::bfloat16}};
  if (t.lanes == 1) {
    for (const known& k : kKnown) {
      if (static_cast<code>(t.code) == k.c && t.bits == k.bits) return k.type;
    }
  }
  fail(errc::invalid_type,
       "unsupported dtype (DLPack code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits)");
}

py_input input(nb::handle h, const char* name, nb::handle dtype) {
  nb::object np = nb::module_::import_("numpy");
  py_input in;
  in.obj =
      dtype.is_none() ? np.attr("ascontiguousarray")(h) : np.attr("ascontiguousarray")(h, nb::arg("dtype") = dtype);
  if (!nb::try_cast(in.obj, in.a, false)) fail(errc::invalid_type, std::string(name) + " is not a CPU array");
  in.type = dtype_of(in.a.dtype());
  return in;
}

array output(nb::handle h, const char* name) {
  array a;
  if (!nb::try_cast(h, a, false)) {
    fail(errc::invalid_type,
         std::string(name) + " must be a writable C-contiguous NumPy array, got " + nb::type_name(h.type()).c_str());
  }
  return a;
}

void read_inner_allreduce(option_reader& r, conveyor::allreduce_options& o) {
  r.read_with("allreduce_algorithm", [&](nb::handle h) {
    o.algorithm = conveyor::parse_algorithm(value<std::string>(h, "allreduce_algorithm", "a string"));
  });
  r.read("ranks_per_node", o.ranks_per_node, "an int");
}

void require_shape(std::size_t got_ndim, const std::size_t* got, std::initializer_list<std::size_t> want,
                   const char* name) {
  bool same = got_ndim == want.size();
  for (std::size_t d = 0; same && d < got_ndim; ++d) same = got[d] == want.begin()[d];
  if (same) return;
  std::string g, w;
  for (std::size_t d = 0; d < got_ndim; ++d) g += (d ? ", " : "") + std::to_string(got[d]);
  for (std::size_t x : want) w += (w.empty() ? "" : ", ") + std::to_string(x);
  fail(errc::invalid_argument, std::string(name) + " has shape (" + g + "), needs (" + w + ")");
}

MPI_Comm comm_at(std::uintptr_t address) {
  if (address == 0) fail(errc::invalid_type, "expected the address of an MPI communicator");
  return *reinterpret_cast<const MPI_Comm*>(address);
}
MPI_Comm comm_of(nb::handle comm) {
  std::uintptr_t a = 0;
  if (!nb::try_cast(comm, a)) fail(errc::invalid_type, "expected the address of an MPI communicator");
  return comm_at(a);
}

}  // namespace conveyor::python
