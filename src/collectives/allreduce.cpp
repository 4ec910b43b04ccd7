// Public entry points of the collectives: argument checks, validation, algorithm
// choice, schedule building (algorithms.cpp) and execution (schedule.cpp).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "collectives/algorithms.hpp"
#include "runtime/context.hpp"
#include "runtime/cost_model.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "core/checks.hpp"
#include "core/names.hpp"

namespace conveyor {
namespace {

using detail::block;
using detail::range_buffer;
using detail::schedule;
using detail::scratch_alloc;

constexpr auto kAlgorithmNames = CONVEYOR_NAMES_OF(CONVEYOR_ALLREDUCE_ALGORITHM_LIST);

bool overlaps_partially(const void* x, const void* y, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(x), b = reinterpret_cast<std::uintptr_t>(y);
  return a != b && a < b + bytes && b < a + bytes;
}

// The per-rank counts of a v-collective must be the same list on every rank.
collective_call& match_counts(collective_call& call, const std::vector<std::size_t>& counts) {
  std::vector<std::int64_t> v(counts.begin(), counts.end());
  return call.must_match_digest("counts", digest_of(v.data(), v.size()));
}

// 0, 1, ..., size-1: the group of a flat algorithm.
std::vector<int> all_ranks(int size) {
  std::vector<int> all(static_cast<std::size_t>(size));
  std::iota(all.begin(), all.end(), 0);
  return all;
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

// Builds the schedules of one allreduce; with a null scratch base it only measures.
void build_allreduce(std::vector<schedule>& out, allreduce_algorithm alg, bool deterministic,
                     std::size_t count, std::size_t chunk, detail::comm_context& ctx,
                     const detail::node_layout* layout, range_buffer buf, scratch_alloc& scratch) {
  out.clear();
  const std::vector<int> all = all_ranks(ctx.size);
  for (std::size_t off = 0; off < count; off += chunk) {
    const block range{off, std::min(chunk, count - off)};
    schedule& s = out.emplace_back();
    if (deterministic) {
      const auto blocks = detail::split(range.offset, range.count, ctx.size);
      detail::ordered_reduce_scatter(s, all, ctx.rank, blocks, buf, scratch);
      detail::notify_now(s, blocks[static_cast<std::size_t>(ctx.rank)]);
      detail::ring_allgather(s, all, ctx.rank, blocks, buf, /*notify=*/true);
      continue;
    }
    switch (alg) {
      case allreduce_algorithm::ring: {
        const auto blocks = detail::split(range.offset, range.count, ctx.size);
        detail::ring_reduce_scatter(s, all, ctx.rank, blocks, buf, scratch);
        detail::notify_now(s, blocks[static_cast<std::size_t>(ctx.rank)]);
        detail::ring_allgather(s, all, ctx.rank, blocks, buf, /*notify=*/true);
        break;
      }
      case allreduce_algorithm::rabenseifner:
        detail::rabenseifner(s, all, ctx.rank, range, buf, scratch);
        break;
      case allreduce_algorithm::hierarchical:
        detail::hierarchical(s, *layout, ctx.rank, range, buf, scratch);
        break;
      case allreduce_algorithm::recursive_doubling:  // runs directly, never as a schedule
      case allreduce_algorithm::automatic:
        throw error(errc::internal, "allreduce: no schedule for this algorithm");
    }
  }
}

// The schedules of the last scheduled allreduce on a context, with what they were
// built for. Schedules hold addresses (of recv and of the scratch memory), so a
// call reuses them only for the same buffer and the same shape: the common case
// of a training loop or a solver calling allreduce on one buffer again and again,
// which then builds nothing (building costs allocations per round and chunk).
struct schedule_cache {
  allreduce_algorithm algorithm{};
  bool deterministic = false;
  std::size_t count = 0, chunk = 0, esize = 0;
  const detail::node_layout* layout = nullptr;
  const void* recv = nullptr;
  std::size_t scratch_bytes = 0;  // what these schedules need
  const char* scratch = nullptr;  // where they were built to find it
  std::vector<schedule> schedules;

  bool fits(allreduce_algorithm a, bool det, std::size_t n, std::size_t c, std::size_t e, const detail::node_layout* l) const {
    return algorithm == a && deterministic == det && count == n && chunk == c && esize == e && layout == l;
  }
};

schedule_cache& schedule_cache_of(detail::comm_context& ctx) {
  if (!ctx.schedule_cache) ctx.schedule_cache = std::make_shared<schedule_cache>();
  return *static_cast<schedule_cache*>(ctx.schedule_cache.get());
}

// Scratch memory of a context: grows, never shrinks, so repeated calls do not
// fault in fresh pages (MPI forbids concurrent collectives on one communicator).
char* scratch_of(detail::comm_context& ctx, std::size_t bytes) {
  if (ctx.scratch.size() < bytes) {
    ctx.scratch.clear();
    ctx.scratch.shrink_to_fit();
    ctx.scratch.resize(bytes);
  }
  return ctx.scratch.data();
}

void run_schedules(detail::comm_context& ctx, std::vector<schedule>& schedules, reduce_kernel_fn f,
                   const std::function<void(std::size_t, std::size_t)>* on_chunk, int window) {
  detail::executor ex(ctx.comm, f, on_chunk);
  ex.run(schedules, window);
}

}  // namespace

std::string_view algorithm_name(allreduce_algorithm a) {
  const auto i = static_cast<std::size_t>(a);
  if (i >= std::size(kAlgorithmNames)) throw error(errc::invalid_argument, "unknown allreduce algorithm");
  return kAlgorithmNames[i];
}

allreduce_algorithm parse_algorithm(std::string_view name) {
  return detail::value_of<allreduce_algorithm>(kAlgorithmNames, name, "allreduce algorithm");
}

allreduce_report allreduce(const void* send, void* recv, std::size_t count, dtype t, op o, MPI_Comm comm,
                           const allreduce_options& options) {
  collective_call call("allreduce", comm);
  detail::comm_context& ctx = detail::context_of(call);
  reduce_kernel_fn kernel = nullptr;
  std::size_t bytes = 0;
  call.check([&] {
    kernel = reduce_kernel(t, o);
    bytes = detail::checked_bytes(count, t, "allreduce");
    const bool in_place = send == MPI_IN_PLACE || send == recv;
    if (count > 0 && (!recv || !send)) throw error(errc::invalid_argument, "null buffer with count > 0");
    if (!in_place && overlaps_partially(send, recv, bytes)) {
      throw error(errc::invalid_argument, "send and recv buffers partially overlap");
    }
    if (options.algorithm < allreduce_algorithm::automatic || options.algorithm > allreduce_algorithm::hierarchical) {
      throw error(errc::invalid_argument, "unknown algorithm value " + std::to_string(static_cast<int>(options.algorithm)));
    }
    if (options.ranks_per_node < 0) throw error(errc::invalid_argument, "ranks_per_node must be >= 0");
  });
  if (options.validate) {
    call.must_match("counts", static_cast<std::int64_t>(count)).must_match("dtypes", t).must_match("ops", o);
    call.must_match("algorithms", options.algorithm, algorithm_name)
        .must_match("segment sizes", static_cast<std::int64_t>(options.segment_bytes))
        .must_match("ranks_per_node values", options.ranks_per_node)
        .must_match("deterministic flags", options.deterministic ? 1 : 0);
  }
  call.agree_if(options.validate);

  const cost_model& params = current_cost_model();
  const detail::node_layout& layout = ctx.layout(options.ranks_per_node > 0 ? options.ranks_per_node : ctx.env_ranks_per_node);

  allreduce_report report;
  report.nodes = layout.nodes;
  report.segment_bytes = options.segment_bytes ? options.segment_bytes : params.segment_bytes;
  allreduce_algorithm alg = options.algorithm;
  if (alg == allreduce_algorithm::automatic) alg = ctx.env_algorithm;
  auto& memo = ctx.last_choice;
  if (memo.bytes != bytes || memo.layout != &layout || memo.segment_bytes != report.segment_bytes ||
      memo.algorithm != alg) {
    // The model is fixed for the process (read once), so these three and the
    // requested algorithm determine the outcome.
    const allreduce_algorithm chosen =
        alg == allreduce_algorithm::automatic ? detail::choose_allreduce(bytes, ctx.size, layout, report.segment_bytes, params) : alg;
    memo.bytes = bytes;
    memo.layout = &layout;
    memo.segment_bytes = report.segment_bytes;
    memo.algorithm = alg;
    memo.chosen = chosen;
    memo.predicted = detail::predict_allreduce(chosen, bytes, ctx.size, layout, report.segment_bytes, params);
  }
  alg = memo.chosen;
  report.algorithm = alg;
  report.predicted_seconds = memo.predicted;

  if (send != MPI_IN_PLACE && send != recv && bytes) std::memcpy(recv, send, bytes);
  if (count == 0) return report;
  if (ctx.size == 1) {  // nothing to combine: the copy above is the result
    if (options.on_chunk) options.on_chunk(0, count);
    return report;
  }

  const std::size_t esize = dtype_size(t);
  if (alg == allreduce_algorithm::recursive_doubling && !options.deterministic) {
    detail::recursive_doubling_direct(ctx.comm, ctx.rank, ctx.size, static_cast<char*>(recv), count, esize,
                                      kernel, scratch_of(ctx, bytes), &options.on_chunk);
    return report;
  }

  // Ring, hierarchical and the deterministic schedule are pipelined in chunks;
  // Rabenseifner runs on the whole vector.
  const bool chunked = options.deterministic || alg == allreduce_algorithm::ring ||
                       alg == allreduce_algorithm::hierarchical;
  const std::size_t chunk = chunked ? std::max<std::size_t>(1, report.segment_bytes / esize) : count;

  schedule_cache& cache = schedule_cache_of(ctx);
  range_buffer buf{static_cast<char*>(recv), esize};
  const bool same_shape = cache.fits(alg, options.deterministic, count, chunk, esize, &layout);
  if (!same_shape) {  // measure the scratch memory once per shape
    scratch_alloc measure(nullptr);
    build_allreduce(cache.schedules, alg, options.deterministic, count, chunk, ctx, &layout, buf, measure);
    cache = schedule_cache{alg, options.deterministic, count, chunk, esize, &layout, nullptr, measure.used(), nullptr, {}};
  }
  char* scratch_base = scratch_of(ctx, cache.scratch_bytes);
  if (cache.recv != recv || cache.scratch != scratch_base || cache.schedules.empty()) {
    scratch_alloc scratch(scratch_base);
    build_allreduce(cache.schedules, alg, options.deterministic, count, chunk, ctx, &layout, buf, scratch);
    cache.recv = recv;
    cache.scratch = scratch_base;
  }
  run_schedules(ctx, cache.schedules, kernel, &options.on_chunk, params.window);
  return report;
}

void reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, dtype t, op o,
                    MPI_Comm comm, bool validate) {
  collective_call call("reduce_scatter", comm);
  detail::comm_context& ctx = detail::context_of(call);
  std::size_t total = 0, bytes = 0;
  std::vector<block> blocks;
  reduce_kernel_fn kernel = nullptr;
  call.check([&] {
    blocks = consecutive_blocks(counts, ctx.size, "reduce_scatter", total);
    kernel = reduce_kernel(t, o);
    bytes = detail::checked_bytes(total, t, "reduce_scatter");
    if ((bytes && !send) || (counts[static_cast<std::size_t>(ctx.rank)] && !recv)) {
      throw error(errc::invalid_argument, "null buffer");
    }
  });
  if (validate) match_counts(call, counts).must_match("dtypes", t).must_match("ops", o);
  call.agree_if(validate);

  const std::size_t esize = dtype_size(t);
  const std::size_t mine = counts[static_cast<std::size_t>(ctx.rank)];
  const std::vector<int> all = all_ranks(ctx.size);
  // Scratch: a working copy of `send`, plus the ring's receive block.
  std::size_t largest = 0;
  for (const block& b : blocks) largest = std::max(largest, b.count);
  scratch_alloc measure(nullptr);
  measure.take(bytes);
  measure.take(largest * esize);
  scratch_alloc scratch(scratch_of(ctx, measure.used()));
  char* work = scratch.take(bytes);
  if (bytes) std::memcpy(work, send, bytes);
  std::vector<schedule> schedules(1);
  detail::ring_reduce_scatter(schedules[0], all, ctx.rank, blocks, {work, esize}, scratch);
  run_schedules(ctx, schedules, kernel, nullptr, 1);
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
  const std::vector<int> all = all_ranks(ctx.size);
  std::vector<schedule> schedules(1);
  detail::ring_allgather(schedules[0], all, ctx.rank, blocks, {static_cast<char*>(recv), esize}, false);
  run_schedules(ctx, schedules, nullptr, nullptr, 1);
}

void allgather(const void* send, void* recv, std::size_t block_count, dtype t, MPI_Comm comm, bool validate) {
  collective_call call("allgatherv", comm);  // joined by allgatherv: one agreement
  allgatherv(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(call.size()), block_count), t, comm, validate);
}

}  // namespace conveyor
