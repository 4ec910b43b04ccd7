// The Python extension `conveyor._conveyor` (nanobind): NumPy arrays in and out,
// communicators (as handle addresses) from mpi4py. The Python-facing names and docs are in
// python/conveyor/__init__.py; this file converts arguments.
//
// The collective contract (conveyor/contract.hpp) from Python: every collective
// function takes its arguments as plain Python objects and converts them here,
// inside the local checks of a collective_call that the C++ entry point then
// joins. So a wrong dtype, a non-contiguous `out`, a bad name or a wrong shape on
// one rank fails on every rank with the same error, as nanobind's own argument
// checks (which run before any code of ours) could not. Only the communicator
// itself is converted before the call: without one there is nothing to agree on.
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/outer.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/types.hpp"
#include "conveyor/version.hpp"

namespace nb = nanobind;

namespace {

using conveyor::errc;

// A C-contiguous CPU array of any dtype: writable (outputs) or read-only (inputs).
using array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;
using input_array = nb::ndarray<nb::numpy, nb::ro, nb::c_contig, nb::device::cpu>;

[[noreturn]] void fail(errc code, const std::string& message) { throw conveyor::error(code, message); }

// NumPy's dtype of an array as Conveyor's (bfloat16 has no NumPy dtype).
conveyor::dtype dtype_of(nb::dlpack::dtype t) {
  const auto code = static_cast<nb::dlpack::dtype_code>(t.code);
  const int bits = t.bits;
  if (t.lanes == 1) {
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
      case nb::dlpack::dtype_code::Bfloat:  // PyTorch's, JAX's bfloat16 (through DLPack)
        if (bits == 16) return conveyor::dtype::bfloat16;
        break;
      default:
        break;
    }
  }
  fail(errc::invalid_type, "unsupported dtype (DLPack code " + std::to_string(t.code) + ", " + std::to_string(bits) + " bits)");
}

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
py_input input(nb::handle h, const char* name, nb::handle dtype = nb::none()) {
  nb::object np = nb::module_::import_("numpy");
  py_input in;
  in.obj = dtype.is_none() ? np.attr("ascontiguousarray")(h) : np.attr("ascontiguousarray")(h, nb::arg("dtype") = dtype);
  if (!nb::try_cast(in.obj, in.a, false)) fail(errc::invalid_type, std::string(name) + " is not a CPU array");
  in.type = dtype_of(in.a.dtype());
  return in;
}

// An output array: written in place, so it must already be a writable
// C-contiguous NumPy array (never copied).
array output(nb::handle h, const char* name) {
  array a;
  if (!nb::try_cast(h, a, false)) {
    fail(errc::invalid_type, std::string(name) + " must be a writable C-contiguous NumPy array, got " +
                                 nb::type_name(h.type()).c_str());
  }
  return a;
}

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
      if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) fail(errc::invalid_argument, "unknown option '" + key + "'");
    }
  }

 private:
  nb::dict options_;
  std::vector<std::string> asked_;
};

// The options every engine passes to its inner allreduce.
void read_inner_allreduce(option_reader& r, conveyor::allreduce_options& o) {
  r.read_with("allreduce_algorithm",
              [&](nb::handle h) { o.algorithm = conveyor::parse_algorithm(value<std::string>(h, "allreduce_algorithm", "a string")); });
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
MPI_Comm comm_at(std::uintptr_t address) {
  if (address == 0) fail(errc::invalid_type, "expected the address of an MPI communicator");
  return *reinterpret_cast<const MPI_Comm*>(address);
}
MPI_Comm comm_of(nb::handle comm) {
  std::uintptr_t a = 0;
  if (!nb::try_cast(comm, a)) fail(errc::invalid_type, "expected the address of an MPI communicator");
  return comm_at(a);
}

namespace rd = conveyor::redistribute;

// Any-strided NumPy array (layouts take their storage from its strides).
using strided = nb::ndarray<nb::numpy, nb::device::cpu>;

// A layout and the dtype of the array it describes, agreed over the ranks that
// hold one (-1: no rank does).
struct py_layout {
  rd::layout l;
  int dtype = -1;
};

// The plan keeps its own copies of the layouts (the Python Layouts keep the arrays alive).
struct py_plan {
  std::unique_ptr<rd::plan> p;
};

std::vector<std::int64_t> element_strides(const strided& a) {
  std::vector<std::int64_t> s(a.ndim());
  for (std::size_t d = 0; d < a.ndim(); ++d) s[d] = a.stride(d);  // nanobind: strides in elements
  return s;
}

// `local` as this rank's array of a layout whose local shape is `want`: None is
// accepted only when the rank holds no elements.
strided local_array(nb::handle local, const std::vector<std::int64_t>& want) {
  std::int64_t elements = 1;
  for (std::int64_t x : want) elements *= x;
  std::string w;
  for (std::int64_t x : want) w += (w.empty() ? "" : ", ") + std::to_string(x);
  strided a;
  if (local.is_none()) {
    if (elements > 0) fail(errc::invalid_argument, "this rank holds a local array of shape (" + w + "), got None");
    return a;
  }
  if (!nb::try_cast(local, a, false)) fail(errc::invalid_type, "local must be a writable NumPy array");
  // A rank without elements may pass any empty array: ScaLAPACK's NUMROC gives
  // such a rank (0, LOCc) where the layout says (0, 0); both mean "nothing here".
  if (elements == 0 && a.size() == 0) return strided();
  bool same = a.ndim() == want.size();
  for (std::size_t d = 0; same && d < a.ndim(); ++d) same = static_cast<std::int64_t>(a.shape(d)) == want[d];
  if (!same) {
    std::string g;
    for (std::size_t d = 0; d < a.ndim(); ++d) g += (d ? ", " : "") + std::to_string(a.shape(d));
    fail(errc::invalid_argument, "this rank holds a local array of shape (" + w + "), got (" + g + ")");
  }
  return a;
}

namespace sk = conveyor::sinkhorn;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T> v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule free_it(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), {owned->size()}, free_it);
}

// The arguments of a Sinkhorn call after conversion.
struct sinkhorn_args {
  py_input matrix;          // A or C (read-only view; A_out when in place)
  array matrix_out;         // A when in place
  py_input row, col;        // marginals, of the matrix's dtype
  nb::object plan;          // transport: the plan array, or None
  sk::options o;
  double eps = 0;
  std::size_t rows = 0, cols = 0;
  bool single = false;      // float32
};

void convert_sinkhorn(sinkhorn_args& s, nb::handle M, nb::handle r, nb::handle c, bool in_place, option_reader& opt,
                      const char* row_name, const char* col_name) {
  if (in_place) {
    s.matrix_out = output(M, "A");
    s.matrix.obj = nb::borrow(M);
    s.matrix.type = dtype_of(s.matrix_out.dtype());
    if (s.matrix_out.ndim() != 2) fail(errc::invalid_argument, "A must be 2-D");
    s.rows = s.matrix_out.shape(0);
    s.cols = s.matrix_out.shape(1);
  } else {
    s.matrix = input(M, row_name[0] == 'r' ? "A" : "C");
    if (s.matrix.a.ndim() != 2) fail(errc::invalid_argument, std::string(row_name[0] == 'r' ? "A" : "C") + " must be 2-D");
    s.rows = s.matrix.a.shape(0);
    s.cols = s.matrix.a.shape(1);
  }
  if (s.matrix.type != conveyor::dtype::float32 && s.matrix.type != conveyor::dtype::float64) {
    fail(errc::invalid_type, "matrix dtype must be float32 or float64, got " + std::string(conveyor::dtype_name(s.matrix.type)));
  }
  s.single = s.matrix.type == conveyor::dtype::float32;
  const nb::object dtype = s.matrix.obj.attr("dtype");
  s.row = input(r, row_name, dtype);
  s.col = input(c, col_name, dtype);
  require_shape(s.row.a, {s.rows}, row_name);
  require_shape(s.col.a, {s.cols}, col_name);
  opt.read_with("variant", [&](nb::handle h) { s.o.variant = sk::parse_variant(value<std::string>(h, "variant", "a string")); });
  opt.read("tol", s.o.tol, "a number");
  opt.read("max_iter", s.o.max_iter, "an int");
  opt.read_with("norm", [&](nb::handle h) { s.o.norm = sk::parse_norm(value<std::string>(h, "norm", "a string")); });
  opt.read("check_every", s.o.check_every, "an int");
  opt.read("columns_first", s.o.columns_first, "a bool");
  opt.read("threads", s.o.threads, "an int");
  opt.read("log_domain", s.o.log_domain, "a bool");
  opt.read("overlap", s.o.overlap, "a bool");
  opt.read("mc", s.o.block.mc, "an int");
  opt.read("nc", s.o.block.nc, "an int");
  opt.read("mr", s.o.block.mr, "an int");
  opt.read("nr", s.o.block.nr, "an int");
  const nb::object float64 = nb::module_::import_("numpy").attr("float64");
  const auto warm = [&](const char* name, std::vector<double>& into) {
    opt.read_with(name, [&](nb::handle h) {
      const py_input v = input(h, name, float64);
      const auto* p = static_cast<const double*>(v.a.data());
      into.assign(p, p + v.a.size());
    });
  };
  warm("init_u", s.o.init_u);
  warm("init_v", s.o.init_v);
  read_inner_allreduce(opt, s.o.allreduce);
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
  return nb::make_tuple(to_numpy(std::move(res.f)), to_numpy(std::move(res.g)), std::string(sk::status_name(res.state)),
                        res.iterations, res.error, res.cost, s.plan, to_numpy(std::move(res.error_history)));
}

// --- mpi4py-style buffer collectives (conveyor.Allreduce, Reduce_scatter_block,
// Allgather). Buffers: any C-contiguous CPU object nanobind imports through
// DLPack or the buffer protocol (NumPy, PyTorch, JAX, memoryview, ...), never
// copied (recvbuf is taken as it is, `noconvert`). The checks are MPI's kind:
// a bad argument raises on its own rank, with no agreement (as mpi4py), and the
// engine runs with its defaults (the repeated-shape fast path). send = None
// stands for MPI.IN_PLACE.
using any_output = nb::ndarray<nb::c_contig, nb::device::cpu>;
using any_input = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

enum class buffer_collective { allreduce, reduce_scatter_block, allgather };

// One buffer as the collective sees it: address, elements, element type.
struct raw_buffer {
  const void* data = nullptr;  // nullptr for MPI.IN_PLACE (send only)
  std::size_t size = 0;
  conveyor::dtype type{};
};

void run_buffer_collective(buffer_collective kind, const raw_buffer& send, const raw_buffer& recv,
                           conveyor::op reduction, MPI_Comm comm) {
  const bool in_place = send.data == nullptr;
  const conveyor::dtype t = recv.type;
  if (!in_place && send.type != t) fail(errc::invalid_type, "sendbuf and recvbuf differ in dtype");
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  const std::size_t P = static_cast<std::size_t>(ranks), n = recv.size;
  // Elements of one block, and how many the send buffer must hold.
  std::size_t block = n, expected_send = n;
  if (kind == buffer_collective::reduce_scatter_block) {
    block = in_place ? n / P : n;
    expected_send = P * block;
  } else if (kind == buffer_collective::allgather) {
    block = n / P;
    expected_send = block;
  }
  if (in_place && kind != buffer_collective::allreduce && n % P != 0) {
    fail(errc::invalid_argument, "in place, recvbuf's " + std::to_string(n) + " elements are not " +
                                     std::to_string(P) + " equal blocks");
  }
  if (kind == buffer_collective::allgather && n != P * (in_place ? block : send.size)) {
    fail(errc::invalid_argument, "recvbuf has " + std::to_string(n) + " elements, needs " + std::to_string(P) +
                                     " x sendbuf's " + std::to_string(in_place ? block : send.size));
  }
  if (!in_place && send.size != expected_send) {
    fail(errc::invalid_argument, "sendbuf has " + std::to_string(send.size) + " elements, needs " +
                                     std::to_string(expected_send));
  }
  const void* in = in_place ? MPI_IN_PLACE : send.data;
  void* out = const_cast<void*>(recv.data);
  nb::gil_scoped_release unlocked;
  switch (kind) {
    case buffer_collective::allreduce:
      conveyor::allreduce(in, out, n, t, reduction, comm);
      break;
    case buffer_collective::reduce_scatter_block:
      conveyor::reduce_scatter_block(in, out, block, t, reduction, comm);
      break;
    case buffer_collective::allgather:
      conveyor::allgather(in, out, block, t, comm);
      break;
  }
}

// --- The common case without the Python layer (conveyor.Allreduce & co. try it
// first): buffers with the buffer protocol (NumPy, memoryview, bytearray, ...),
// MPI.IN_PLACE or None as sendbuf, a predefined MPI.Op object, comm None or an
// mpi4py communicator. Anything else (buffer specifications, DLPack-only objects
// such as PyTorch or JAX arrays, bfloat16, op names, a buffer the protocol
// refuses) returns false and goes the general way, which also words the errors.
// Why: nanobind's ndarray import costs ~0.2 us per array and the Python wrapper
// ~0.5 us; the buffer protocol ~0.04 us per array (docs/results.md, "Python").
struct mpi_style_objects {
  PyObject* in_place = nullptr;
  PyObject* world = nullptr;
  MPI_Comm world_comm = MPI_COMM_NULL;
  PyObject* comm_type = nullptr;  // MPI.Comm
  PyObject* address_of = nullptr;  // MPI._addressof: read on every call (a handle can change, e.g. Free())
  std::vector<std::pair<PyObject*, conveyor::op>> ops;  // the predefined MPI.Op instances
};
// Registered once at import and kept for the process (references never
// dropped: no destructor runs against a finalized interpreter).
mpi_style_objects* g_mpi_style = nullptr;

// A Py_buffer held for one call.
class held_buffer {
 public:
  held_buffer() = default;
  held_buffer(const held_buffer&) = delete;
  held_buffer& operator=(const held_buffer&) = delete;
  ~held_buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  bool acquire(PyObject* o, bool writable) {
    if (!PyObject_CheckBuffer(o)) return false;
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, &view_, flags) != 0) {
      PyErr_Clear();  // the general path reports it
      return false;
    }
    held_ = true;
    return true;
  }
  const Py_buffer& view() const { return view_; }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// The element type of a struct-module format string (native or little-endian
// byte order, one element), as NumPy and memoryview write them.
std::optional<conveyor::dtype> dtype_of_format(const char* format, Py_ssize_t itemsize) {
  using conveyor::dtype;
  std::string_view f = format ? format : "B";
  // '<' is native only on little-endian machines; '>' and '!' never here (declined).
  static const bool little_endian = [] {
    const std::uint16_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1;
  }();
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || (f[0] == '<' && little_endian))) f.remove_prefix(1);
  const auto integer = [itemsize](bool is_signed) -> std::optional<dtype> {
    switch (itemsize) {
      case 1: return is_signed ? dtype::int8 : dtype::uint8;
      case 2: return is_signed ? dtype::int16 : dtype::uint16;
      case 4: return is_signed ? dtype::int32 : dtype::uint32;
      case 8: return is_signed ? dtype::int64 : dtype::uint64;
      default: return std::nullopt;
    }
  };
  if (f == "f" && itemsize == 4) return dtype::float32;
  if (f == "d" && itemsize == 8) return dtype::float64;
  if (f == "e" && itemsize == 2) return dtype::float16;
  if (f == "Zf" && itemsize == 8) return dtype::complex64;
  if (f == "Zd" && itemsize == 16) return dtype::complex128;
  if (f.size() == 1 && std::string_view("bhilq").find(f[0]) != std::string_view::npos) return integer(true);
  if (f.size() == 1 && std::string_view("BHILQ").find(f[0]) != std::string_view::npos) return integer(false);
  return std::nullopt;
}

bool buffer_of(const held_buffer& b, raw_buffer& out) {
  const auto t = dtype_of_format(b.view().format, b.view().itemsize);
  if (!t || b.view().itemsize <= 0) return false;
  out = {b.view().buf, static_cast<std::size_t>(b.view().len / b.view().itemsize), *t};
  return true;
}

bool try_mpi_style(buffer_collective kind, nb::handle sendbuf, nb::handle recvbuf, nb::handle op, nb::handle comm) {
  const mpi_style_objects* g = g_mpi_style;
  if (!g) return false;
  MPI_Comm c = g->world_comm;
  if (!(comm.is_none() || comm.ptr() == g->world)) {
    if (PyObject_IsInstance(comm.ptr(), g->comm_type) != 1) return false;
    c = comm_at(nb::cast<std::uintptr_t>(nb::handle(g->address_of)(comm)));
  }
  conveyor::op reduction = conveyor::op::sum;
  if (kind != buffer_collective::allgather) {
    const auto it = std::find_if(g->ops.begin(), g->ops.end(), [&](const auto& e) { return e.first == op.ptr(); });
    if (it == g->ops.end()) return false;
    reduction = it->second;
  }
  held_buffer send_view, recv_view;
  raw_buffer send, recv;
  if (!(sendbuf.is_none() || sendbuf.ptr() == g->in_place)) {
    if (PyList_Check(sendbuf.ptr()) || PyTuple_Check(sendbuf.ptr())) return false;
    if (!send_view.acquire(sendbuf.ptr(), false) || !buffer_of(send_view, send)) return false;
  }
  if (!recv_view.acquire(recvbuf.ptr(), true) || !buffer_of(recv_view, recv)) return false;
  run_buffer_collective(kind, send, recv, reduction, c);
  return true;
}

raw_buffer raw_of(const any_input& a) { return {a.data(), a.size(), dtype_of(a.dtype())}; }
raw_buffer raw_of(const any_output& a) { return {a.data(), a.size(), dtype_of(a.dtype())}; }

std::string dtype_shown(std::int64_t v) { return std::string(conveyor::dtype_name(static_cast<conveyor::dtype>(v))); }

std::uint64_t digest_of_ints(const std::vector<std::int64_t>& v) { return conveyor::digest_of(v.data(), v.size()); }

}  // namespace

NB_MODULE(_conveyor, m) {
  // conveyor::error -> ValueError (bad arguments), TypeError (wrong kind or
  // dtype), NotImplementedError (unsupported), RuntimeError (MPI or internal),
  // with Conveyor's message.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const conveyor::error& e) {
      switch (e.code()) {
        case errc::invalid_argument: PyErr_SetString(PyExc_ValueError, e.what()); break;
        case errc::invalid_type: PyErr_SetString(PyExc_TypeError, e.what()); break;
        case errc::unsupported: PyErr_SetString(PyExc_NotImplementedError, e.what()); break;
        default: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
      }
    }
  });

  m.attr("__version__") = CONVEYOR_VERSION_STRING;
  m.def("simd_target", [] { return conveyor::simd_targets().active; });

  // Local (not collective): raises on this rank.
  m.def(
      "reduce_local",
      [](nb::handle in, nb::handle inout, nb::handle op) {
        const py_input a = input(in, "inbuf");
        const array b = output(inout, "inoutbuf");
        if (dtype_of(b.dtype()) != a.type) fail(errc::invalid_type, "reduce_local: arrays differ in dtype");
        if (a.a.size() != b.size()) {
          fail(errc::invalid_argument, "reduce_local: arrays differ in size (" + std::to_string(a.a.size()) + " vs " +
                                           std::to_string(b.size()) + ")");
        }
        const conveyor::op o = conveyor::parse_op(value<std::string>(op, "op", "a string"));
        nb::gil_scoped_release unlocked;
        conveyor::reduce_local(a.a.data(), b.data(), b.size(), a.type, o);
      },
      nb::arg("inbuf").none(), nb::arg("inoutbuf").none(), nb::arg("op").none());

  m.def(
      "allreduce",
      [](nb::handle send, nb::handle out, nb::handle op, nb::handle comm, bool validate, nb::handle options) {
        const MPI_Comm c = comm_of(comm);
        // The front end's call is closed before the entry point runs when nothing
        // is to be agreed (validate off: the entry's call would only throw this
        // rank's own problems, and the front end calls it only without any): an
        // open call keeps the entry off its repeated-shape fast path, which cost
        // ~2 us per call at 1 KiB on 2 Open MPI ranks.
        std::optional<conveyor::collective_call> front(std::in_place, "allreduce", c);
        conveyor::collective_call& call = *front;
        py_input in;
        array result;
        nb::object result_obj;
        conveyor::op reduction{};
        conveyor::allreduce_options o;
        o.validate = validate;
        convert(call, [&] {
          in = input(send, "send");
          result_obj = out.is_none() ? nb::module_::import_("numpy").attr("empty_like")(in.obj) : nb::borrow(out);
          result = output(result_obj, "out");
          if (dtype_of(result.dtype()) != in.type) fail(errc::invalid_type, "send and out differ in dtype");
          if (result.size() != in.a.size()) {
            fail(errc::invalid_argument, "send and out differ in size (" + std::to_string(in.a.size()) + " vs " +
                                             std::to_string(result.size()) + ")");
          }
          reduction = conveyor::parse_op(value<std::string>(op, "op", "a string"));
          option_reader opt(options);
          opt.read_with("algorithm", [&](nb::handle h) { o.algorithm = conveyor::parse_algorithm(value<std::string>(h, "algorithm", "a string")); });
          opt.read("segment_bytes", o.segment_bytes, "an int");
          opt.read("ranks_per_node", o.ranks_per_node, "an int");
          opt.read("deterministic", o.deterministic, "a bool");
          opt.finish();
        });
        call.finish_front_end(validate);
        if (!validate) front.reset();
        conveyor::allreduce_report r;
        {
          nb::gil_scoped_release unlocked;
          r = conveyor::allreduce(in.a.data(), result.data(), in.a.size(), in.type, reduction, c, o);
        }
        return nb::make_tuple(result_obj, std::string(conveyor::algorithm_name(r.algorithm)));
      },
      nb::arg("send").none(), nb::arg("out").none(), nb::arg("op").none(), nb::arg("comm").none(), nb::arg("validate"),
      nb::arg("options").none());

  const auto def_buffer_collective = [&m](const char* name, buffer_collective kind) {
    m.def(
        name,
        [kind](std::optional<any_input> send, any_output recv, const char* op, std::uintptr_t comm) {
          run_buffer_collective(kind, send ? raw_of(*send) : raw_buffer{}, raw_of(recv), conveyor::parse_op(op),
                                comm_at(comm));
        },
        nb::arg("send").none(), nb::arg("recv").noconvert(), nb::arg("op"), nb::arg("comm"));
    m.def((std::string("try_") + name).c_str(),
          [kind](nb::handle send, nb::handle recv, nb::handle op, nb::handle comm) {
            return try_mpi_style(kind, send, recv, op, comm);
          },
          nb::arg("send").none(), nb::arg("recv").none(), nb::arg("op").none(), nb::arg("comm").none());
  };
  // conveyor/_mpi.py, once at import: the objects try_buffer_* recognizes.
  m.def("register_mpi_style_objects",
        [](nb::handle in_place, nb::handle world, std::uintptr_t world_address, nb::handle comm_type,
           nb::handle address_of, const std::vector<std::pair<nb::handle, std::string>>& ops) {
          auto* g = new mpi_style_objects;  // kept for the process (see g_mpi_style)
          g->in_place = in_place.inc_ref().ptr();
          g->world = world.inc_ref().ptr();
          g->comm_type = comm_type.inc_ref().ptr();
          g->address_of = address_of.inc_ref().ptr();
          g->world_comm = comm_at(world_address);
          for (const auto& [object, name] : ops) g->ops.emplace_back(object.inc_ref().ptr(), conveyor::parse_op(name));
          g_mpi_style = g;
        });
  def_buffer_collective("buffer_allreduce", buffer_collective::allreduce);
  def_buffer_collective("buffer_reduce_scatter_block", buffer_collective::reduce_scatter_block);
  def_buffer_collective("buffer_allgather", buffer_collective::allgather);
  // For bench/python_overhead.py: seconds per call of `calls` back-to-back
  // conveyor::allreduce calls made from C++ on these buffers (the baseline the
  // Python call's overhead is measured against).
  m.def("_time_cpp_allreduce", [](any_input send, any_output recv, const char* op, std::uintptr_t comm, int calls) {
    const MPI_Comm c = comm_at(comm);
    const conveyor::dtype t = dtype_of(recv.dtype());
    const conveyor::op o = conveyor::parse_op(op);
    nb::gil_scoped_release unlocked;
    const double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) conveyor::allreduce(send.data(), recv.data(), recv.size(), t, o, c);
    return (MPI_Wtime() - t0) / std::max(calls, 1);
  });

  m.def(
      "sinkhorn_scale",
      [](nb::handle A, nb::handle r, nb::handle c, nb::handle comm, nb::handle in_place, nb::handle options) {
        const MPI_Comm cm = comm_of(comm);
        bool in_place_value = false;
        {
          conveyor::collective_call call("sinkhorn::scale", cm);
          sinkhorn_args s;
          convert(call, [&] {
            in_place_value = value<bool>(in_place, "in_place", "a bool");
            option_reader opt(options);
            convert_sinkhorn(s, A, r, c, in_place_value, opt, "r", "c");
            opt.finish();
          });
          call.finish_front_end();
          return s.single ? run_scale<float>(s, cm, in_place_value) : run_scale<double>(s, cm, in_place_value);
        }
      },
      nb::arg("A").none(), nb::arg("r").none(), nb::arg("c").none(), nb::arg("comm").none(), nb::arg("in_place").none(),
      nb::arg("options").none());

  m.def(
      "sinkhorn_transport",
      [](nb::handle C, nb::handle a, nb::handle b, nb::handle eps, nb::handle comm, nb::handle plan, nb::handle options) {
        const MPI_Comm cm = comm_of(comm);
        conveyor::collective_call call("sinkhorn::transport", cm);
        sinkhorn_args s;
        void* plan_data = nullptr;
        s.plan = nb::none();
        convert(call, [&] {
          option_reader opt(options);
          convert_sinkhorn(s, C, a, b, false, opt, "a", "b");
          opt.finish();
          s.eps = value<double>(eps, "eps", "a number");
          if (value<bool>(plan, "plan", "a bool")) {
            s.plan = nb::module_::import_("numpy").attr("empty_like")(s.matrix.obj);
            plan_data = output(s.plan, "plan").data();
          }
        });
        call.finish_front_end();
        return s.single ? run_transport<float>(s, cm, static_cast<float*>(plan_data))
                        : run_transport<double>(s, cm, static_cast<double*>(plan_data));
      },
      nb::arg("C").none(), nb::arg("a").none(), nb::arg("b").none(), nb::arg("eps").none(), nb::arg("comm").none(),
      nb::arg("plan").none(), nb::arg("options").none());

  m.def("balanced_rows", [](std::size_t M, int rank, int size) {
    const sk::row_block b = sk::balanced_rows(M, rank, size);
    return nb::make_tuple(b.first, b.count);
  });

  m.def(
      "outer_sum",
      [](nb::handle a, nb::handle b, nb::handle G, nb::handle comm, nb::handle options) {
        const MPI_Comm c = comm_of(comm);
        conveyor::collective_call call("outer_sum", c);
        py_input x, y;
        array g;
        nb::object g_obj = nb::borrow(G);
        conveyor::outer_options o;
        convert(call, [&] {
          x = input(a, "a");
          y = input(b, "b", x.obj.attr("dtype"));
          option_reader opt(options);
          opt.read_with("algorithm", [&](nb::handle h) {
            o.algorithm = conveyor::parse_outer_algorithm(value<std::string>(h, "algorithm", "a string"));
          });
          opt.read_with("order", [&](nb::handle h) { o.order = conveyor::parse_matrix_order(value<std::string>(h, "order", "a string")); });
          opt.read("distributed", o.distributed, "a bool");
          read_inner_allreduce(opt, o.allreduce);
          opt.finish();
          const std::size_t rows = o.distributed ? conveyor::outer_rows(x.a.size(), call.rank(), call.size()).count : x.a.size();
          const bool column_major = o.order == conveyor::matrix_order::column_major;
          if (G.is_none()) {
            g_obj = nb::module_::import_("numpy").attr("empty")(nb::make_tuple(rows, y.a.size()), nb::arg("dtype") = x.obj.attr("dtype"),
                                                                 nb::arg("order") = column_major ? "F" : "C");
          }
          // Column-major G is the C-contiguous transpose (M x rows) of the Fortran-ordered rows x M array.
          g = output(column_major ? g_obj.attr("T") : g_obj, column_major ? "out.T (order='F' with column_major)" : "out");
          if (dtype_of(g.dtype()) != x.type) fail(errc::invalid_type, "out differs in dtype from a");
        });
        call.finish_front_end();
        conveyor::outer_report r;
        {
          nb::gil_scoped_release unlocked;
          r = conveyor::outer_sum(x.a.data(), x.a.size(), y.a.data(), y.a.size(), g.data(), g.size(), x.type, c, o);
        }
        return nb::make_tuple(g_obj, std::string(conveyor::outer_algorithm_name(r.algorithm)));
      },
      nb::arg("a").none(), nb::arg("b").none(), nb::arg("G").none(), nb::arg("comm").none(), nb::arg("options").none());
  m.def("outer_rows", [](std::size_t N, int rank, int size) {
    const conveyor::outer_block b = conveyor::outer_rows(N, rank, size);
    return nb::make_tuple(b.first, b.count);
  });

  // --- Redistribute: layouts are built collectively (their local arrays checked
  // against the layout and their dtype agreed), plans from two layouts ---
  // The local shape ScaLAPACK allocates on `rank` (NUMROC rows, columns), from
  // the C++ layout: from_descriptor takes the first rows of an LLD-row array.
  m.def("block_cyclic_local_shape", [](std::int64_t M, std::int64_t N, std::int64_t mb, std::int64_t nb_, int prow,
                                       int pcol, bool row_major_grid, int rsrc, int csrc, std::int64_t imb,
                                       std::int64_t inb, int rank) {
    rd::layout::block_cyclic_params p;
    p.M = M, p.N = N, p.mb = mb, p.nb = nb_, p.prow = prow, p.pcol = pcol, p.row_major_grid = row_major_grid;
    p.rsrc = rsrc, p.csrc = csrc, p.imb = imb, p.inb = inb;
    return rd::layout::block_cyclic(p).local_shape(rank);
  });
  nb::class_<py_layout>(m, "_Layout")
      .def_static("cartesian",
                  [](nb::handle shape, nb::handle grid, nb::handle local, nb::handle column_major_ranks, nb::handle comm) {
                    const MPI_Comm c = comm_of(comm);
                    conveyor::collective_call call("Layout.cartesian", c);
                    auto out = std::make_unique<py_layout>();
                    nb::object kept = nb::none();
                    std::optional<std::int64_t> type;
                    std::vector<std::int64_t> described;
                    convert(call, [&] {
                      const auto shp = value<std::vector<std::int64_t>>(shape, "shape", "a sequence of ints");
                      const auto grd = value<std::vector<int>>(grid, "grid", "a sequence of ints");
                      const bool cmr = value<bool>(column_major_ranks, "column_major_ranks", "a bool");
                      described = shp;
                      described.insert(described.end(), grd.begin(), grd.end());
                      described.push_back(cmr);
                      const rd::layout probe = rd::layout::cartesian(shp, grd, nullptr, cmr);
                      const strided a = local_array(local, probe.local_shape(call.rank()));
                      if (a.is_valid()) {
                        type = static_cast<std::int64_t>(dtype_of(a.dtype()));
                        kept = nb::borrow(local);
                        out->l = rd::layout::cartesian(shp, grd, a.data(), cmr, element_strides(a));
                      } else {
                        out->l = probe;
                      }
                    });
                    call.must_match_digest("shapes or grids", digest_of_ints(described)).may_match("dtypes", type, dtype_shown);
                    call.agree();
                    out->dtype = static_cast<int>(call.agreed("dtypes").value_or(-1));
                    return nb::make_tuple(nb::cast(out.release(), nb::rv_policy::take_ownership), kept);
                  },
                  nb::arg("shape").none(), nb::arg("grid").none(), nb::arg("local").none(),
                  nb::arg("column_major_ranks").none(), nb::arg("comm").none())
      .def_static("block_cyclic",
                  [](nb::handle M, nb::handle N, nb::handle mb, nb::handle nb_, nb::handle prow, nb::handle pcol,
                     nb::handle row_major_grid, nb::handle rsrc, nb::handle csrc, nb::handle local, nb::handle comm,
                     nb::handle imb, nb::handle inb) {
                    const MPI_Comm c = comm_of(comm);
                    conveyor::collective_call call("Layout.block_cyclic", c);
                    auto out = std::make_unique<py_layout>();
                    nb::object kept = nb::none();
                    std::optional<std::int64_t> type;
                    std::vector<std::int64_t> described;
                    convert(call, [&] {
                      rd::layout::block_cyclic_params p;
                      p.M = value<std::int64_t>(M, "M", "an int");
                      p.N = value<std::int64_t>(N, "N", "an int");
                      p.mb = value<std::int64_t>(mb, "mb", "an int");
                      p.nb = value<std::int64_t>(nb_, "nb", "an int");
                      p.prow = value<int>(prow, "prow", "an int");
                      p.pcol = value<int>(pcol, "pcol", "an int");
                      p.row_major_grid = value<bool>(row_major_grid, "row_major_grid", "a bool");
                      p.rsrc = value<int>(rsrc, "rsrc", "an int");
                      p.csrc = value<int>(csrc, "csrc", "an int");
                      p.imb = value<std::int64_t>(imb, "imb", "an int");
                      p.inb = value<std::int64_t>(inb, "inb", "an int");
                      described = {p.M, p.N, p.mb, p.nb, p.prow, p.pcol, p.row_major_grid, p.rsrc, p.csrc, p.imb, p.inb};
                      const rd::layout probe = rd::layout::block_cyclic(p);
                      const strided a = local_array(local, probe.local_shape(call.rank()));
                      if (a.is_valid() && a.size() > 0) {
                        // Column-major local array (Fortran order): lld = its column stride.
                        if (a.shape(0) > 1 && a.stride(0) != 1) {
                          fail(errc::invalid_argument, "a block-cyclic local array must be column-major (order='F')");
                        }
                        p.local = a.data();
                        p.lld = std::max<std::int64_t>(a.stride(1), std::max<std::int64_t>(1, static_cast<std::int64_t>(a.shape(0))));
                        type = static_cast<std::int64_t>(dtype_of(a.dtype()));
                        kept = nb::borrow(local);
                        out->l = rd::layout::block_cyclic(p);
                      } else {
                        out->l = probe;
                      }
                    });
                    call.must_match_digest("matrix or grid descriptions", digest_of_ints(described)).may_match("dtypes", type, dtype_shown);
                    call.agree();
                    out->dtype = static_cast<int>(call.agreed("dtypes").value_or(-1));
                    return nb::make_tuple(nb::cast(out.release(), nb::rv_policy::take_ownership), kept);
                  },
                  nb::arg("M").none(), nb::arg("N").none(), nb::arg("mb").none(), nb::arg("nb").none(),
                  nb::arg("prow").none(), nb::arg("pcol").none(), nb::arg("row_major_grid").none(),
                  nb::arg("rsrc").none(), nb::arg("csrc").none(), nb::arg("local").none(), nb::arg("comm").none(),
                  nb::arg("imb").none(), nb::arg("inb").none())
      // Custom: split points per dimension, an owner per block (row-major block
      // order), and this rank's blocks as (block coordinates, array) pairs, each
      // array the block's shape with any strides.
      .def_static("custom",
                  [](nb::handle splits, nb::handle owners, nb::handle blocks, nb::handle comm) {
                    const MPI_Comm c = comm_of(comm);
                    conveyor::collective_call call("Layout.custom", c);
                    auto out = std::make_unique<py_layout>();
                    nb::list kept;
                    std::optional<std::int64_t> type;
                    std::vector<std::int64_t> described;
                    convert(call, [&] {
                      const auto points = value<std::vector<std::vector<std::int64_t>>>(splits, "splits", "a sequence of sequences of ints");
                      const auto who = value<std::vector<int>>(owners, "owners", "a sequence of ints");
                      std::vector<rd::axis_splits> axes;
                      for (const auto& p : points) {
                        axes.push_back(rd::axis_splits::explicit_points(p));
                        described.push_back(static_cast<std::int64_t>(p.size()));
                        described.insert(described.end(), p.begin(), p.end());
                      }
                      described.insert(described.end(), who.begin(), who.end());
                      out->l = rd::layout::custom(axes, who);
                      if (!nb::isinstance<nb::sequence>(blocks)) fail(errc::invalid_type, "blocks must be a sequence of (index, array) pairs");
                      for (nb::handle pair : nb::borrow<nb::sequence>(blocks)) {
                        const auto item = value<std::pair<std::vector<std::int64_t>, nb::object>>(pair, "a block", "an (index, array) pair");
                        const auto& index = item.first;
                        if (index.size() != points.size()) fail(errc::invalid_argument, "a block index has " + std::to_string(index.size()) + " coordinates for " + std::to_string(points.size()) + " dimensions");
                        rd::block_index b{};
                        std::vector<std::int64_t> want(index.size());
                        for (std::size_t d = 0; d < index.size(); ++d) {
                          b[d] = index[d];
                          if (index[d] < 0 || index[d] >= axes[d].count()) fail(errc::invalid_argument, "block index out of range in dimension " + std::to_string(d));
                          want[d] = axes[d].start(index[d] + 1) - axes[d].start(index[d]);
                        }
                        const strided a = local_array(item.second, want);
                        const auto t = static_cast<std::int64_t>(dtype_of(a.dtype()));
                        if (type && *type != t) fail(errc::invalid_type, "this rank's blocks differ in dtype");
                        type = t;
                        out->l.set_storage(b, a.data(), element_strides(a));
                        kept.append(pair);  // the (index, array) pair, as given
                      }
                    });
                    call.must_match_digest("splits or owners", digest_of_ints(described)).may_match("dtypes", type, dtype_shown);
                    call.agree();
                    out->dtype = static_cast<int>(call.agreed("dtypes").value_or(-1));
                    return nb::make_tuple(nb::cast(out.release(), nb::rv_policy::take_ownership), kept);
                  },
                  nb::arg("splits").none(), nb::arg("owners").none(), nb::arg("blocks").none(), nb::arg("comm").none())
      .def("blocks_of", [](const py_layout& l, int rank) { return l.l.blocks_of(rank).size(); })
      .def("local_shape", [](const py_layout& l, int rank) { return l.l.local_shape(rank); })
      .def_prop_ro("dtype", [](const py_layout& l) { return l.dtype; })
      .def_prop_ro("shape", [](const py_layout& l) {
        std::vector<std::int64_t> s(static_cast<std::size_t>(l.l.ndim()));
        for (int d = 0; d < l.l.ndim(); ++d) s[static_cast<std::size_t>(d)] = l.l.extent(d);
        return s;
      });

  nb::class_<py_plan>(m, "_Plan")
      // A batch of transforms (one or more): srcs[k], dsts[k] with transforms[k]
      // (perm, alpha, beta, conjugate), and the plan's options.
      .def("__init__",
           [](py_plan* self, nb::list srcs, nb::list dsts, nb::list transforms, nb::handle comm, nb::handle options) {
             new (self) py_plan();
             const MPI_Comm c = comm_of(comm);
             conveyor::collective_call call("redistribute::plan", c);
             std::vector<rd::transform> batch;
             rd::plan_options o;
             convert(call, [&] {
               if (srcs.size() != dsts.size() || srcs.size() != transforms.size() || srcs.size() == 0) {
                 fail(errc::invalid_argument, "a plan needs one or more (source, destination) pairs");
               }
               for (std::size_t k = 0; k < srcs.size(); ++k) {
                 const py_layout& src = nb::cast<const py_layout&>(srcs[k]);
                 const py_layout& dst = nb::cast<const py_layout&>(dsts[k]);
                 rd::transform t;
                 option_reader opt(transforms[k]);
                 opt.read("perm", t.perm, "a sequence of ints");
                 // alpha and beta may be complex (alpha_imag, beta_imag of the C++ and C transform).
                 const auto complex_scalar = [&](const char* name, double& re, double& im) {
                   opt.read_with(name, [&](nb::handle h) {
                     const auto z = value<std::complex<double>>(h, name, "a number");
                     re = z.real();
                     im = z.imag();
                   });
                 };
                 complex_scalar("alpha", t.alpha, t.alpha_imag);
                 complex_scalar("beta", t.beta, t.beta_imag);
                 opt.read("conjugate", t.conjugate, "a bool");
                 opt.finish();
                 // Both dtypes were agreed when the layouts were built: the same here on every rank.
                 if (src.dtype >= 0 && dst.dtype >= 0 && src.dtype != dst.dtype) {
                   fail(errc::invalid_type, "source and destination arrays differ in dtype (" +
                                                std::string(conveyor::dtype_name(static_cast<conveyor::dtype>(src.dtype))) + " vs " +
                                                std::string(conveyor::dtype_name(static_cast<conveyor::dtype>(dst.dtype))) + ")");
                 }
                 const int type = src.dtype >= 0 ? src.dtype : dst.dtype >= 0 ? dst.dtype : static_cast<int>(conveyor::dtype::float64);
                 t.type = static_cast<conveyor::dtype>(type);
                 t.src = &src.l;
                 t.dst = &dst.l;
                 batch.push_back(std::move(t));
               }
               option_reader opt(options);
               opt.read_with("transport", [&](nb::handle h) { o.transport = rd::parse_transport(value<std::string>(h, "transport", "a string")); });
               opt.read_with("relabel", [&](nb::handle h) { o.relabel = rd::parse_relabeling(value<std::string>(h, "relabel", "a string")); });
               opt.read("intra_node_cost", o.intra_node_cost, "a number");
               opt.read("ranks_per_node", o.ranks_per_node, "an int");
               opt.read("chunk_bytes", o.chunk_bytes, "an int");
               opt.finish();
             });
             call.finish_front_end();
             nb::gil_scoped_release unlocked;
             self->p = std::make_unique<rd::plan>(batch, c, o);
           },
           nb::arg("srcs"), nb::arg("dsts"), nb::arg("transforms"), nb::arg("comm").none(), nb::arg("options").none())
      .def("execute",
           [](py_plan& p) {
             nb::gil_scoped_release unlocked;
             p.p->execute();
           })
      .def_prop_ro("transport", [](const py_plan& p) { return std::string(rd::transport_name(p.p->transport())); })
      .def_prop_ro("volume", [](const py_plan& p) { return p.p->volume(); })
      .def_prop_ro("sigma", [](const py_plan& p) { return p.p->sigma(); })
      .def_prop_ro("remote_bytes", [](const py_plan& p) { return p.p->remote_bytes(); })
      .def_prop_ro("relabeled_remote_bytes", [](const py_plan& p) { return p.p->relabeled_remote_bytes(); });
}
