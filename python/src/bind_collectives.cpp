// SPDX-License-Identifier: BSD-3-Clause
// Python bindings of the collectives (conveyor.allreduce, reduce_local, and the
// mpi4py-style Allreduce, Reduce_scatter_block, Allgather over any buffer).
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/reduce.hpp"
#include "convert.hpp"

namespace conveyor::python {
namespace {

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
    fail(errc::invalid_argument,
         "in place, recvbuf's " + std::to_string(n) + " elements are not " + std::to_string(P) + " equal blocks");
  }
  if (kind == buffer_collective::allgather && n != P * (in_place ? block : send.size)) {
    fail(errc::invalid_argument, "recvbuf has " + std::to_string(n) + " elements, needs " + std::to_string(P) +
                                     " x sendbuf's " + std::to_string(in_place ? block : send.size));
  }
  if (!in_place && send.size != expected_send) {
    fail(errc::invalid_argument,
         "sendbuf has " + std::to_string(send.size) + " elements, needs " + std::to_string(expected_send));
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
// Why: the buffer protocol gives a buffer in one call, where nanobind's ndarray
// import and the Python wrapper each cost several times more (docs/results.md,
// "Per-call overhead of the Python layer").
struct mpi_style_objects {
  PyObject* in_place = nullptr;
  PyObject* world = nullptr;
  MPI_Comm world_comm = MPI_COMM_NULL;
  PyObject* comm_type = nullptr;   // MPI.Comm
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
      case 1:
        return is_signed ? dtype::int8 : dtype::uint8;
      case 2:
        return is_signed ? dtype::int16 : dtype::uint16;
      case 4:
        return is_signed ? dtype::int32 : dtype::uint32;
      case 8:
        return is_signed ? dtype::int64 : dtype::uint64;
      default:
        return std::nullopt;
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

// --- PyTorch CPU tensors without DLPack (conveyor.Allreduce & co., and the
// "conveyor" torch backend): torch.Tensor and its dtypes, registered once torch
// is imported (conveyor/_mpi.py). A tensor is read from its own attributes and
// methods, cheaper than torch's __dlpack__, which runs in Python
// (docs/results.md, "Per-call overhead of the Python layer"); anything unusual
// declines to the general path, which
// also words its errors (a tensor that requires grad, on another device, not
// contiguous, sparse, with its negative bit set, complex, empty).
struct torch_objects {
  PyTypeObject* tensor_type = nullptr;
  std::vector<std::pair<PyObject*, conveyor::dtype>> dtypes;  // torch.float32 -> float32, ...
  PyObject *is_cpu, *requires_grad, *dtype, *is_contiguous, *is_neg, *numel, *data_ptr;  // interned names
};
torch_objects* g_torch = nullptr;  // kept for the process, as g_mpi_style

// Reads attribute or method `name` of o (called when `call`); nullptr (no error
// set) where it fails.
nb::object torch_attribute(PyObject* o, PyObject* name, bool call) {
  PyObject* r = call ? PyObject_CallMethodNoArgs(o, name) : PyObject_GetAttr(o, name);
  if (!r) PyErr_Clear();
  return nb::steal(r);
}

bool tensor_of(PyObject* o, raw_buffer& out) {
  const torch_objects* t = g_torch;
  if (!t || !PyObject_TypeCheck(o, t->tensor_type)) return false;
  const nb::object type = torch_attribute(o, t->dtype, false);
  const auto it =
      std::find_if(t->dtypes.begin(), t->dtypes.end(), [&](const auto& e) { return e.first == type.ptr(); });
  if (!type.is_valid() || it == t->dtypes.end()) return false;
  for (PyObject* flag : {t->is_cpu, t->requires_grad, t->is_contiguous, t->is_neg}) {
    const nb::object v = torch_attribute(o, flag, flag == t->is_contiguous || flag == t->is_neg);
    const bool wanted = flag == t->is_cpu || flag == t->is_contiguous;
    if (!v.is_valid() || v.ptr() != (wanted ? Py_True : Py_False)) return false;
  }
  const nb::object numel = torch_attribute(o, t->numel, true), address = torch_attribute(o, t->data_ptr, true);
  if (!numel.is_valid() || !address.is_valid()) return false;
  const unsigned long long n = PyLong_AsUnsignedLongLong(numel.ptr());
  const unsigned long long a = PyLong_AsUnsignedLongLong(address.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (n == 0 || a == 0) return false;  // (an empty buffer's null address would read as MPI.IN_PLACE)
  out = {reinterpret_cast<const void*>(static_cast<std::uintptr_t>(a)), static_cast<std::size_t>(n), it->second};
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
  const auto read = [](held_buffer& view, PyObject* o, bool writable, raw_buffer& out) {
    if (PyObject_CheckBuffer(o)) return view.acquire(o, writable) && buffer_of(view, out);
    return tensor_of(o, out);
  };
  if (!(sendbuf.is_none() || sendbuf.ptr() == g->in_place)) {
    if (PyList_Check(sendbuf.ptr()) || PyTuple_Check(sendbuf.ptr())) return false;
    if (!read(send_view, sendbuf.ptr(), false, send)) return false;
  }
  if (!read(recv_view, recvbuf.ptr(), true, recv)) return false;
  run_buffer_collective(kind, send, recv, reduction, c);
  return true;
}

raw_buffer raw_of(const any_input& a) { return {a.data(), a.size(), dtype_of(a.dtype())}; }
raw_buffer raw_of(const any_output& a) { return {a.data(), a.size(), dtype_of(a.dtype())}; }

}  // namespace

namespace {

// conveyor.reduce_local and conveyor.allreduce: NumPy arrays, Python's names.
void bind_array_collectives(nb::module_& m) {
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
        // open call keeps the entry off its repeated-shape fast path, which is
        // most of a small call's time (docs/results.md, "Per-call overhead of the
        // Python layer").
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
          opt.read_with("algorithm", [&](nb::handle h) {
            o.algorithm = conveyor::parse_algorithm(value<std::string>(h, "algorithm", "a string"));
          });
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
}

// conveyor.Allreduce, Reduce_scatter_block, Allgather (mpi4py's style over any
// buffer), their fast path for buffer-protocol objects, and the timing hook.
void bind_buffer_collectives(nb::module_& m) {
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
  // conveyor/_mpi.py, once torch is imported: the tensors tensor_of reads.
  m.def("register_torch_objects",
        [](nb::handle tensor_type, const std::vector<std::pair<nb::handle, std::string>>& dtypes) {
          auto* t = new torch_objects;  // kept for the process (see g_torch)
          t->tensor_type = reinterpret_cast<PyTypeObject*>(tensor_type.inc_ref().ptr());
          for (const auto& [object, name] : dtypes)
            t->dtypes.emplace_back(object.inc_ref().ptr(), conveyor::parse_dtype(name));
          PyObject** names[] = {&t->is_cpu, &t->requires_grad, &t->dtype,   &t->is_contiguous,
                                &t->is_neg, &t->numel,         &t->data_ptr};
          const char* spelled[] = {"is_cpu", "requires_grad", "dtype", "is_contiguous", "is_neg", "numel", "data_ptr"};
          for (std::size_t k = 0; k < std::size(names); ++k) *names[k] = PyUnicode_InternFromString(spelled[k]);
          g_torch = t;
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
}

}  // namespace

void bind_collectives(nb::module_& m) {
  bind_array_collectives(m);
  bind_buffer_collectives(m);
  // The table of allreduce's algorithms (src/collectives/allreduce/): (name,
  // summary) pairs, from which conveyor.allreduce's docstring lists them.
  m.def("allreduce_algorithms", [] {
    nb::list out;
    for (const conveyor::allreduce_algorithm_info& a : conveyor::allreduce_algorithms()) {
      out.append(nb::make_tuple(std::string(a.name), std::string(a.summary)));
    }
    return out;
  });
}

}  // namespace conveyor::python
