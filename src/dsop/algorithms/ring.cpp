// SPDX-License-Identifier: BSD-3-Clause
// ring: each rank computes its own a b^T, then conveyor::allreduce sums the N x M
// products (any of its algorithms: outer_options::allreduce), or, distributed,
// conveyor::reduce_scatter leaves each rank its rows.
// Bytes per rank: the allreduce's (ring: 2 (P-1)/P N M T), half of it
// distributed. Local: N M multiplies, N M T written (distributed: an N x M
// scratch for the local product).
#include "dsop/algorithms/table.hpp"

namespace conveyor::dsop::detail {

namespace {

template <class T>
void run(const dsop_call<T>& c) {
  if (!c.distributed) {
    c.local_outer(c.out);
    allreduce(c.out, c.N * c.M, op::sum, c.comm, c.options.allreduce);
    return;
  }
  std::vector<T> local(c.N * c.M);
  c.local_outer(local.data());
  reduce_scatter(local.data(), c.out, c.block_counts(), dtype_of_v<T>, op::sum, c.comm);
}

}  // namespace

const dsop_row ring_row = {
    outer_algorithm::ring,
    "local a b^T, then conveyor::allreduce of its N M entries (conveyor::reduce_scatter if distributed)",
    reduced_outer_seconds, run<float>, run<double>};

}  // namespace conveyor::dsop::detail
