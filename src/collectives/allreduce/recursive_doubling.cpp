// SPDX-License-Identifier: BSD-3-Clause
// Recursive doubling, run directly (not as a schedule: it is for small messages,
// where building rounds would cost more than sending): log2 q exchanges of the
// whole vector with partner rank ^ 2^k, the extra P - q ranks folded in before and
// served after (algorithms.hpp). Sends log2(q) n (+n for folded ranks).
// Predicted: fold + log2 q (alpha + n beta + n gamma), the first log2(L) rounds
// (partners 2^k < L apart, L ranks per node) on the node's link.
#include <cstring>

#include "collectives/allreduce/table.hpp"
#include "collectives/state.hpp"

namespace conveyor::collectives::detail {
namespace {

double predict(const allreduce_shape& s, const cost_model& p) {
  const double n = static_cast<double>(s.bytes);
  const link_params intra = intra_node_link(p), flat = flat_link(s.layout, p);
  double t = fold_seconds(s, p);
  for (int d = 1; d < pow2_floor(s.size); d *= 2) {
    const link_params& l = d < s.layout.min_local ? intra : flat;
    t += l.alpha + n * l.beta + n * p.gamma;
  }
  return t;
}

void run(const allreduce_call& c) {
  const std::size_t esize = dtype_size(c.t), bytes = c.count * esize;
  if (c.send != MPI_IN_PLACE && c.send != c.recv) std::memcpy(c.recv, c.send, bytes);
  recursive_doubling_direct(c.ctx.comm, c.ctx.rank, c.ctx.size, static_cast<char*>(c.recv), c.count, esize, c.kernel,
                            collectives_state_of(c.ctx).scratch(bytes), pieces_for(c.ctx.rank, c.layout),
                            &c.options.on_chunk);
}

}  // namespace

const allreduce_row recursive_doubling_row = {
    allreduce_algorithm::recursive_doubling,
    "recursive doubling on the whole vector, run directly: log2 P latencies, log2(P) n bytes; small messages",
    predict,
    offered_everywhere,
    nullptr,
    nullptr,
    run,
    /*chunked=*/false,
    /*deterministic=*/false};

}  // namespace conveyor::collectives::detail
