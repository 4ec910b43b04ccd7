// SPDX-License-Identifier: BSD-3-Clause
// The MPI library's own allreduce (PMPI_Allreduce: an interposing library passes
// it through), in pieces of at most INT_MAX elements (the reduction is element by
// element, so pieces are independent). Never the model's choice: `auto` measures
// it beside that choice, and a caller may pin it.
// Predicted: the better of recursive doubling and Rabenseifner (the textbook
// algorithms MPI libraries run, small and large).
#include <algorithm>

#include "collectives/allreduce/stock.hpp"
#include "collectives/allreduce/table.hpp"
#include "conveyor/mpi.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor::collectives::detail {

stock_call stock_call_of(dtype t, op o) {
  const bool native = dtype_size(t) > 2 && o != op::logaddexp;  // else Conveyor's kernel
  return {mpi_datatype(t), native ? mpi_builtin_op(o) : mpi_op(o, t)};
}

namespace {

double predict(const allreduce_shape& s, const cost_model& p) {
  return std::min(recursive_doubling_row.predict(s, p), rabenseifner_row.predict(s, p));
}

void run(const allreduce_call& c) {
  const stock_call call = stock_call_of(c.t, c.o);
  const std::size_t esize = dtype_size(c.t);
  const void* send = c.send == c.recv ? MPI_IN_PLACE : c.send;
  for_each_piece(c.count, [&](std::size_t off, int n, int) {
    const void* in = send == MPI_IN_PLACE ? MPI_IN_PLACE : static_cast<const char*>(send) + off * esize;
    check_mpi(PMPI_Allreduce(in, static_cast<char*>(c.recv) + off * esize, n, call.type, call.mop, c.ctx.comm),
              "MPI_Allreduce");
  });
  if (c.options.on_chunk) c.options.on_chunk(0, c.count);
}

}  // namespace

const allreduce_row mpi_row = {allreduce_algorithm::mpi,
                               "the MPI library's own MPI_Allreduce (measured by auto beside the model's choice)",
                               predict,
                               nullptr,
                               [](const node_layout&) { return true; },
                               nullptr,
                               run,
                               /*chunked=*/false,
                               /*deterministic=*/false};

}  // namespace conveyor::collectives::detail
