// SPDX-License-Identifier: BSD-3-Clause
// Python bindings of the Redistribute engine (conveyor.Layout, conveyor.Plan,
// and the all-to-all under conveyor.Alltoall / Alltoallv / Alltoallw).
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "conveyor/alltoall.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/redistribute.hpp"
#include "convert.hpp"

namespace conveyor::python {
namespace {

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

std::string dtype_shown(std::int64_t v) { return std::string(conveyor::dtype_name(static_cast<conveyor::dtype>(v))); }

// What building a layout makes on one rank: the layout, the Python object that
// keeps its arrays alive, and the dtype of those arrays (none: this rank holds
// no array).
struct built_layout {
  rd::layout l;
  nb::object kept = nb::none();
  std::optional<std::int64_t> type;

  /// Counts `a` as one of this rank's arrays: all of one dtype.
  void hold(const strided& a) {
    const auto t = static_cast<std::int64_t>(dtype_of(a.dtype()));
    if (type && *type != t) fail(errc::invalid_type, "this rank's blocks differ in dtype");
    type = t;
  }
};

// Builds a layout on every rank of `comm` with `build(rank, parts)`, inside one
// collective call: a problem on one rank is every rank's error, and the ranks
// that hold an array agree on its dtype. Returns the layout with what keeps its
// arrays alive. The description itself is not compared here: the plan that uses
// the layout agrees on both layouts and its options in one agreement of its own.
template <class Build>
nb::tuple build_layout(const char* what, nb::handle comm, Build&& build) {
  conveyor::collective_call call(what, comm_of(comm));
  built_layout parts;
  convert(call, [&] { build(call.rank(), parts); });
  call.may_match("dtypes", parts.type, dtype_shown);
  call.agree();
  auto out = std::make_unique<py_layout>();
  out->l = std::move(parts.l);
  out->dtype = static_cast<int>(call.agreed("dtypes").value_or(-1));
  return nb::make_tuple(nb::cast(out.release(), nb::rv_policy::take_ownership), parts.kept);
}

nb::tuple layout_cartesian(nb::handle shape, nb::handle grid, nb::handle local, nb::handle column_major_ranks,
                           nb::handle comm) {
  return build_layout("Layout.cartesian", comm, [&](int rank, built_layout& parts) {
    const auto shp = value<std::vector<std::int64_t>>(shape, "shape", "a sequence of ints");
    const auto grd = value<std::vector<int>>(grid, "grid", "a sequence of ints");
    const bool cmr = value<bool>(column_major_ranks, "column_major_ranks", "a bool");
    parts.l = rd::layout::cartesian(shp, grd, nullptr, cmr);
    const strided a = local_array(local, parts.l.local_shape(rank));
    if (!a.is_valid()) return;
    parts.hold(a);
    parts.kept = nb::borrow(local);
    parts.l = rd::layout::cartesian(shp, grd, a.data(), cmr, element_strides(a));
  });
}

nb::tuple layout_block_cyclic(nb::handle M, nb::handle N, nb::handle mb, nb::handle nb_, nb::handle prow,
                              nb::handle pcol, nb::handle row_major_grid, nb::handle rsrc, nb::handle csrc,
                              nb::handle local, nb::handle comm, nb::handle imb, nb::handle inb) {
  return build_layout("Layout.block_cyclic", comm, [&](int rank, built_layout& parts) {
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
    parts.l = rd::layout::block_cyclic(p);
    const strided a = local_array(local, parts.l.local_shape(rank));
    if (!a.is_valid() || a.size() == 0) return;
    // Column-major local array (Fortran order): lld = its column stride.
    if (a.shape(0) > 1 && a.stride(0) != 1) {
      fail(errc::invalid_argument, "a block-cyclic local array must be column-major (order='F')");
    }
    p.local = a.data();
    p.lld = std::max<std::int64_t>(a.stride(1), std::max<std::int64_t>(1, static_cast<std::int64_t>(a.shape(0))));
    parts.hold(a);
    parts.kept = nb::borrow(local);
    parts.l = rd::layout::block_cyclic(p);
  });
}

// Custom: split points per dimension, an owner per block (row-major block
// order), and this rank's blocks as (block coordinates, array) pairs, each
// array the block's shape with any strides.
nb::tuple layout_custom(nb::handle splits, nb::handle owners, nb::handle blocks, nb::handle comm) {
  return build_layout("Layout.custom", comm, [&](int, built_layout& parts) {
    const auto points =
        value<std::vector<std::vector<std::int64_t>>>(splits, "splits", "a sequence of sequences of ints");
    const auto who = value<std::vector<int>>(owners, "owners", "a sequence of ints");
    std::vector<rd::axis_splits> axes;
    for (const auto& p : points) axes.push_back(rd::axis_splits::explicit_points(p));
    parts.l = rd::layout::custom(axes, who);
    if (!nb::isinstance<nb::sequence>(blocks))
      fail(errc::invalid_type, "blocks must be a sequence of (index, array) pairs");
    nb::list kept;
    for (nb::handle pair : nb::borrow<nb::sequence>(blocks)) {
      const auto item =
          value<std::pair<std::vector<std::int64_t>, nb::object>>(pair, "a block", "an (index, array) pair");
      const auto& index = item.first;
      if (index.size() != points.size()) {
        fail(errc::invalid_argument, "a block index has " + std::to_string(index.size()) + " coordinates for " +
                                         std::to_string(points.size()) + " dimensions");
      }
      rd::block_index b{};
      std::vector<std::int64_t> want(index.size());
      for (std::size_t d = 0; d < index.size(); ++d) {
        b[d] = index[d];
        if (index[d] < 0 || index[d] >= axes[d].count()) {
          fail(errc::invalid_argument, "block index out of range in dimension " + std::to_string(d));
        }
        want[d] = axes[d].length(index[d]);
      }
      const strided a = local_array(item.second, want);
      parts.hold(a);
      parts.l.set_storage(b, a.data(), element_strides(a));
      kept.append(pair);  // the (index, array) pair, as given
    }
    parts.kept = kept;
  });
}

void make_plan(py_plan* self, nb::list srcs, nb::list dsts, nb::list transforms, nb::handle comm, nb::handle options) {
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
                                     std::string(conveyor::dtype_name(static_cast<conveyor::dtype>(src.dtype))) +
                                     " vs " +
                                     std::string(conveyor::dtype_name(static_cast<conveyor::dtype>(dst.dtype))) + ")");
      }
      const int type = src.dtype >= 0   ? src.dtype
                       : dst.dtype >= 0 ? dst.dtype
                                        : static_cast<int>(conveyor::dtype::float64);
      t.type = static_cast<conveyor::dtype>(type);
      t.src = &src.l;
      t.dst = &dst.l;
      batch.push_back(std::move(t));
    }
    option_reader opt(options);
    opt.read_with("transport", [&](nb::handle h) {
      o.transport = rd::parse_transport(value<std::string>(h, "transport", "a string"));
    });
    opt.read_with("relabel", [&](nb::handle h) {
      o.relabel = rd::parse_relabeling(value<std::string>(h, "relabel", "a string"));
    });
    opt.read("intra_node_cost", o.intra_node_cost, "a number");
    opt.read("ranks_per_node", o.ranks_per_node, "an int");
    opt.read("chunk_bytes", o.chunk_bytes, "an int");
    opt.finish();
  });
  call.finish_front_end();
  nb::gil_scoped_release unlocked;
  self->p = std::make_unique<rd::plan>(batch, c, o);
}

// One side of an all-to-all from conveyor/_alltoall.py: per peer (count,
// displacement in bytes, address of the MPI_Datatype handle in its mpi4py object).
std::vector<datatype_part> parts_of(nb::handle list, const char* name) {
  std::vector<std::tuple<std::int64_t, std::int64_t, std::uintptr_t>> t;
  if (!nb::try_cast(list, t)) fail(errc::invalid_type, std::string(name) + ": expected (count, displ, type) per rank");
  std::vector<datatype_part> parts(t.size());
  for (std::size_t q = 0; q < t.size(); ++q) {
    const auto [count, displ, type] = t[q];
    parts[q] = {count, displ, *reinterpret_cast<const MPI_Datatype*>(type)};
  }
  return parts;
}

}  // namespace

void bind_redistribute(nb::module_& m) {
  // The table of transports (src/redistribute/transport_table.hpp): (name, summary)
  // pairs, from which conveyor.Plan's docstring lists them.
  m.def("transports", [] {
    nb::list out;
    for (const conveyor::redistribute::transport_info& t : conveyor::redistribute::transports()) {
      out.append(nb::make_tuple(std::string(t.name), std::string(t.summary)));
    }
    return out;
  });
  // The table of relabelings (src/redistribute/relabel.cpp): (name, summary) pairs,
  // from which conveyor.Plan's docstring lists them.
  m.def("relabelings", [] {
    nb::list out;
    for (const conveyor::redistribute::relabeling_info& r : conveyor::redistribute::relabelings()) {
      out.append(nb::make_tuple(std::string(r.name), std::string(r.summary)));
    }
    return out;
  });
  // --- Redistribute: layouts are built collectively (their local arrays checked
  // against the layout and their dtype agreed), plans from two layouts ---
  // The local shape ScaLAPACK allocates on `rank` (NUMROC rows, columns), from
  // the C++ layout: from_descriptor takes the first rows of an LLD-row array.
  m.def("block_cyclic_local_shape",
        [](std::int64_t M, std::int64_t N, std::int64_t mb, std::int64_t nb_, int prow, int pcol, bool row_major_grid,
           int rsrc, int csrc, std::int64_t imb, std::int64_t inb, int rank) {
          rd::layout::block_cyclic_params p;
          p.M = M, p.N = N, p.mb = mb, p.nb = nb_, p.prow = prow, p.pcol = pcol, p.row_major_grid = row_major_grid;
          p.rsrc = rsrc, p.csrc = csrc, p.imb = imb, p.inb = inb;
          return rd::layout::block_cyclic(p).local_shape(rank);
        });
  // MPI_Alltoallw on the engine: buffers as (address, size in bytes); send None:
  // MPI_IN_PLACE. The Python side keeps the buffers alive and reads mpi4py's
  // buffer specifications (conveyor/_alltoall.py).
  m.def(
      "alltoallw",
      [](std::optional<std::uintptr_t> send, std::int64_t send_size, nb::handle send_parts, std::uintptr_t recv,
         std::int64_t recv_size, nb::handle recv_parts, std::uintptr_t comm, bool validate) {
        const std::vector<datatype_part> sp = send ? parts_of(send_parts, "sendbuf") : std::vector<datatype_part>{};
        const std::vector<datatype_part> rp = parts_of(recv_parts, "recvbuf");
        const MPI_Comm c = comm_at(comm);
        const void* s = send ? reinterpret_cast<const void*>(*send) : MPI_IN_PLACE;
        nb::gil_scoped_release unlocked;
        const alltoallw_report r =
            conveyor::alltoallw(s, sp, reinterpret_cast<void*>(recv), rp, c, validate, send_size, recv_size);
        return std::make_tuple(r.sent_bytes, r.received_bytes, r.self_bytes, r.attached_peers, r.types_decoded,
                               r.staged_parts);
      },
      nb::arg("send").none(), nb::arg("send_size"), nb::arg("send_parts"), nb::arg("recv"), nb::arg("recv_size"),
      nb::arg("recv_parts"), nb::arg("comm"), nb::arg("validate"));
  nb::class_<py_layout>(m, "_Layout")
      .def_static("cartesian", layout_cartesian, nb::arg("shape").none(), nb::arg("grid").none(),
                  nb::arg("local").none(), nb::arg("column_major_ranks").none(), nb::arg("comm").none())
      .def_static("block_cyclic", layout_block_cyclic, nb::arg("M").none(), nb::arg("N").none(), nb::arg("mb").none(),
                  nb::arg("nb").none(), nb::arg("prow").none(), nb::arg("pcol").none(),
                  nb::arg("row_major_grid").none(), nb::arg("rsrc").none(), nb::arg("csrc").none(),
                  nb::arg("local").none(), nb::arg("comm").none(), nb::arg("imb").none(), nb::arg("inb").none())
      .def_static("custom", layout_custom, nb::arg("splits").none(), nb::arg("owners").none(), nb::arg("blocks").none(),
                  nb::arg("comm").none())
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
      .def("__init__", make_plan, nb::arg("srcs"), nb::arg("dsts"), nb::arg("transforms"), nb::arg("comm").none(),
           nb::arg("options").none())
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

}  // namespace conveyor::python
