// SPDX-License-Identifier: BSD-3-Clause
// Python bindings of DSOP (conveyor.outer_sum).
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "bindings.hpp"
#include "conveyor/dsop.hpp"
#include "convert.hpp"

namespace conveyor::python {

void bind_dsop(nb::module_& m) {
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
          opt.read_with("order", [&](nb::handle h) {
            o.order = conveyor::parse_matrix_order(value<std::string>(h, "order", "a string"));
          });
          opt.read("distributed", o.distributed, "a bool");
          read_inner_allreduce(opt, o.allreduce);
          opt.finish();
          const std::size_t rows =
              o.distributed ? conveyor::outer_rows(x.a.size(), call.rank(), call.size()).count : x.a.size();
          const bool column_major = o.order == conveyor::matrix_order::column_major;
          if (G.is_none()) {
            g_obj = nb::module_::import_("numpy").attr("empty")(nb::make_tuple(rows, y.a.size()),
                                                                nb::arg("dtype") = x.obj.attr("dtype"),
                                                                nb::arg("order") = column_major ? "F" : "C");
          }
          // Column-major G is the C-contiguous transpose (M x rows) of the Fortran-ordered rows x M array.
          g = output(column_major ? g_obj.attr("T") : g_obj,
                     column_major ? "out.T (order='F' with column_major)" : "out");
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
  // The table of DSOP's algorithms (src/dsop/algorithms/): (name, summary) pairs,
  // from which conveyor.outer_sum's docstring lists them.
  m.def("outer_algorithms", [] {
    nb::list out;
    for (const conveyor::outer_algorithm_info& a : conveyor::outer_algorithms()) {
      out.append(nb::make_tuple(std::string(a.name), std::string(a.summary)));
    }
    return out;
  });
  m.def("outer_rows", [](std::size_t N, int rank, int size) {
    const conveyor::outer_block b = conveyor::outer_rows(N, rank, size);
    return nb::make_tuple(b.first, b.count);
  });
}

}  // namespace conveyor::python
