// SPDX-License-Identifier: BSD-3-Clause
// allreduce (the DSOP paper's baseline): each rank computes its own a b^T, then
// the MPI library's MPI_Allreduce sums the N x M products (in pieces of at most
// INT_MAX elements), or, distributed, MPI_Reduce_scatter leaves each rank its
// rows (when every count fits an int; else the pieces' allreduce, keeping the
// own rows). Bytes and local work as `ring`; the model predicts it as a ring
// allreduce, so on a tie it goes to `ring` (the earlier row).
#include <climits>

#include "dsop/algorithms/table.hpp"
#include "runtime/context.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor::dsop::detail {

namespace {

template <class T>
void run(const dsop_call<T>& c) {
  const MPI_Datatype type = sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
  const auto counts = c.block_counts();
  const bool fits = std::all_of(counts.begin(), counts.end(), [](std::size_t n) { return n <= INT_MAX; });
  const std::size_t NM = c.N * c.M;
  if (c.distributed && fits) {
    std::vector<T> local(NM);
    c.local_outer(local.data());
    std::vector<int> icounts(counts.begin(), counts.end());
    check_mpi(MPI_Reduce_scatter(local.data(), c.out, icounts.data(), type, MPI_SUM, c.comm), "MPI_Reduce_scatter");
    return;
  }
  std::vector<T> full;
  T* G = c.out;
  if (c.distributed) {
    full.resize(NM);
    G = full.data();
  }
  c.local_outer(G);
  for_each_piece(NM, [&](std::size_t off, int n, int) {  // in elements
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, G + off, n, type, MPI_SUM, c.comm), "MPI_Allreduce");
  });
  if (c.distributed) std::copy(G + c.mine().first * c.M, G + (c.mine().first + c.mine().count) * c.M, c.out);
}

}  // namespace

const dsop_row allreduce_row = {
    outer_algorithm::allreduce,
    "local a b^T, then the MPI library's MPI_Allreduce (MPI_Reduce_scatter if distributed): the paper's baseline",
    reduced_outer_seconds, run<float>, run<double>};

}  // namespace conveyor::dsop::detail
