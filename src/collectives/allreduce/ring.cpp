// SPDX-License-Identifier: BSD-3-Clause
// Ring allreduce, pipelined: per chunk of the segment size, a ring
// reduce-scatter then a ring allgather (algorithms.hpp). Sends 2(P-1)/P n in
// 2(P-1) messages per chunk; bandwidth-optimal on any P; chunks overlap.
// Predicted: 2(P-1) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma, plus one alpha per
// further chunk (runtime/cost_model.hpp's pipelined ring).
#include "collectives/allreduce/table.hpp"

namespace conveyor::collectives::detail {
namespace {

double predict(const allreduce_shape& s, const cost_model& p) {
  return pipelined_ring_allreduce_seconds(s.bytes, s.size, s.layout, s.segment_bytes, p);
}

void build(schedule& s, const allreduce_chunk& c, scratch_alloc& scratch) {
  const auto blocks = split(c.range.offset, c.range.count, static_cast<int>(c.all.size()));
  ring_reduce_scatter(s, c.all, c.rank, blocks, c.buf, scratch);
  notify_now(s, blocks[static_cast<std::size_t>(c.rank)]);
  ring_allgather(s, c.all, c.rank, blocks, c.buf, /*notify=*/true);
}

}  // namespace

const allreduce_row ring_row = {
    allreduce_algorithm::ring,
    "pipelined ring reduce-scatter + allgather: bandwidth-optimal, 2(P-1) latencies; large messages",
    predict,
    offered_everywhere,
    nullptr,
    build,
    nullptr,
    /*chunked=*/true,
    /*deterministic=*/false};

}  // namespace conveyor::collectives::detail
