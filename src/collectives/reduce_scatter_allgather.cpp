// SPDX-License-Identifier: BSD-3-Clause
// reduce_scatter and allgather(v) (conveyor/collectives.hpp): the two halves of
// a ring allreduce, run as one schedule each (algorithms.hpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/state.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "core/checks.hpp"
#include "runtime/context.hpp"

namespace conveyor {
namespace {

using collectives::detail::block;
using collectives::detail::schedule;
using collectives::detail::scratch_alloc;

// The per-rank counts of a v-collective must be the same list on every rank.
collective_call& match_counts(collective_call& call, const std::vector<std::size_t>& counts) {
  std::vector<std::int64_t> v(counts.begin(), counts.end());
  return call.must_match_digest("counts", digest_of(v.data(), v.size()));
}

// Consecutive blocks of the given sizes (one per rank); `total` gets their sum.
std::vector<block> consecutive_blocks(const std::vector<std::size_t>& counts, int size, const char* what,
                                      std::size_t& total) {
  if (counts.size() != static_cast<std::size_t>(size)) {
    throw error(errc::invalid_argument, std::string(what) + ": need one count per rank (" + std::to_string(size) +
                                            "), got " + std::to_string(counts.size()));
  }
  std::vector<block> blocks(counts.size());
  total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    blocks[i] = {total, counts[i]};
    total += counts[i];
  }
  return blocks;
}

}  // namespace

void reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, dtype t, op o, MPI_Comm comm,
                    bool validate) {
  collective_call call("reduce_scatter", comm);
  detail::comm_context& ctx = detail::context_of(call);
  std::size_t total = 0, bytes = 0;
  std::vector<block> blocks;
  reduce_kernel_fn kernel = nullptr;
  call.check([&] {
    blocks = consecutive_blocks(counts, ctx.size, "reduce_scatter", total);
    kernel = reduce_kernel(t, o);
    bytes = detail::checked_bytes(total, t, "reduce_scatter");
    if ((bytes && !send) ||
        ((counts[static_cast<std::size_t>(ctx.rank)] || (bytes && send == MPI_IN_PLACE)) && !recv)) {
      throw error(errc::invalid_argument, "null buffer");
    }
  });
  if (validate) match_counts(call, counts).must_match("dtypes", t).must_match("ops", o);
  call.agree_if(validate);

  const std::size_t esize = dtype_size(t);
  const std::size_t mine = counts[static_cast<std::size_t>(ctx.rank)];
  const std::vector<int> all = collectives::detail::all_ranks(ctx.size);
  // Scratch: a working copy of `send`, plus the ring's receive block.
  std::size_t largest = 0;
  for (const block& b : blocks) largest = std::max(largest, b.count);
  scratch_alloc measure(nullptr);
  measure.take(bytes);
  measure.take(largest * esize);
  scratch_alloc scratch(collectives::detail::collectives_state_of(ctx).scratch(measure.used()));
  char* work = scratch.take(bytes);
  // MPI_IN_PLACE (MPI's meaning): the input is in `recv`, which then holds all
  // sum(counts) elements; the result is written to its start.
  if (bytes) std::memcpy(work, send == MPI_IN_PLACE ? recv : send, bytes);
  std::vector<schedule> schedules(1);
  collectives::detail::ring_reduce_scatter(schedules[0], all, ctx.rank, blocks, {work, esize}, scratch);
  collectives::detail::run_schedules(ctx.comm, schedules, kernel, nullptr, 1,
                                     collectives::detail::pieces_for(ctx.rank, ctx.layout(ctx.env_ranks_per_node)));
  if (mine) std::memcpy(recv, work + blocks[static_cast<std::size_t>(ctx.rank)].offset * esize, mine * esize);
}

void reduce_scatter_block(const void* send, void* recv, std::size_t block_count, dtype t, op o, MPI_Comm comm,
                          bool validate) {
  // The call of reduce_scatter below joins this one: one agreement.
  collective_call call("reduce_scatter", comm);
  reduce_scatter(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(call.size()), block_count), t, o, comm,
                 validate);
}

void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, dtype t, MPI_Comm comm,
                bool validate) {
  collective_call call("allgatherv", comm);
  detail::comm_context& ctx = detail::context_of(call);
  std::size_t total = 0;
  std::vector<block> blocks;
  call.check([&] {
    detail::check_enum(t);
    blocks = consecutive_blocks(counts, ctx.size, "allgatherv", total);
    detail::checked_bytes(total, t, "allgatherv");
    if ((total && !recv) || (blocks[static_cast<std::size_t>(ctx.rank)].count && !send)) {
      throw error(errc::invalid_argument, "null buffer");
    }
  });
  if (validate) match_counts(call, counts).must_match("dtypes", t);
  call.agree_if(validate);

  const std::size_t esize = dtype_size(t);
  const block& mine = blocks[static_cast<std::size_t>(ctx.rank)];
  if (send != MPI_IN_PLACE && mine.count) {
    std::memmove(static_cast<char*>(recv) + mine.offset * esize, send, mine.count * esize);
  }
  const std::vector<int> all = collectives::detail::all_ranks(ctx.size);
  std::vector<schedule> schedules(1);
  collectives::detail::ring_allgather(schedules[0], all, ctx.rank, blocks, {static_cast<char*>(recv), esize}, false);
  collectives::detail::run_schedules(ctx.comm, schedules, nullptr, nullptr, 1,
                                     collectives::detail::pieces_for(ctx.rank, ctx.layout(ctx.env_ranks_per_node)));
}

void allgather(const void* send, void* recv, std::size_t block_count, dtype t, MPI_Comm comm, bool validate) {
  collective_call call("allgatherv", comm);  // joined by allgatherv: one agreement
  allgatherv(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(call.size()), block_count), t, comm,
             validate);
}

}  // namespace conveyor
