// SPDX-License-Identifier: BSD-3-Clause
// The shared-memory allreduce of one node (collectives/shared_memory.hpp): each
// rank copies its vector into its slot of a segment the node's ranks map, and
// reduces every slot in rank order into its result. Two flag hand-offs; no
// message. Where the ranks cannot share a segment it runs recursive doubling.
// Predicted: shared_alpha + n copy_beta + (P-1) n (gamma + copy_beta) on one node
// (every rank reads all P inputs, so past small messages the message algorithms
// move less memory: offered by the model up to P n = kSharedMemoryMaxBytes, and
// measured by `auto` on one node).
#include "collectives/allreduce/table.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/shared_memory.hpp"
#include "collectives/state.hpp"

namespace conveyor::collectives::detail {

shm_allreduce* shared_segment_of(comm_context& ctx) {
  collectives_state& state = collectives_state_of(ctx);
  if (!state.shared_segment_tried) {
    state.shared_segment_tried = true;
    const node_layout& node = ctx.layout(0);
    if (node.nodes == 1) state.shared_segment = shm_allreduce::create(ctx.comm, ctx.rank, ctx.size, node.node_cpus);
  }
  return state.shared_segment.get();
}

namespace {

double predict(const allreduce_shape& s, const cost_model& p) {
  if (s.layout.nodes > 1) return recursive_doubling_row.predict(s, p);
  const double n = static_cast<double>(s.bytes);
  return p.shared_alpha + n * p.copy_beta + (s.size - 1) * n * (p.gamma + p.copy_beta);
}

void run(const allreduce_call& c) {
  shared_segment_of(c.ctx)->run(c.send == MPI_IN_PLACE ? c.recv : c.send, c.recv, c.count, dtype_size(c.t), c.kernel);
  if (c.options.on_chunk) c.options.on_chunk(0, c.count);
}

}  // namespace

const allreduce_row shared_memory_row = {
    allreduce_algorithm::shared_memory,
    "one node: every rank reduces all ranks' vectors from a shared segment, no messages; small messages",
    predict,
    [](const allreduce_shape& s) {
      return s.layout.nodes == 1 && s.size > 1 && s.bytes * static_cast<std::size_t>(s.size) <= kSharedMemoryMaxBytes;
    },
    [](const node_layout& layout) { return layout.nodes == 1; },
    nullptr,
    run,
    /*chunked=*/false,
    /*deterministic=*/true};

}  // namespace conveyor::collectives::detail
