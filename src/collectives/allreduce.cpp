// SPDX-License-Identifier: BSD-3-Clause
// The allreduce's entry point: argument checks, validation, the algorithm's choice
// (the cost model, `auto`'s measured candidates, the repeated-shape fast path),
// and its dispatch through the table of algorithms (allreduce/table.hpp): a row
// runs directly or as schedules (schedule.cpp).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <tuple>
#include <map>
#include <string>

#include "collectives/algorithms.hpp"
#include "collectives/allreduce/stock.hpp"
#include "collectives/allreduce/table.hpp"
#include "collectives/measured_choice.hpp"
#include "collectives/shared_memory.hpp"
#include "collectives/state.hpp"
#include "runtime/context.hpp"
#include "collectives/cost_model.hpp"
#include "runtime/message_pieces.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/settings.hpp"
#include "core/checks.hpp"
#include "core/names.hpp"

namespace conveyor {
namespace {

using collectives::detail::block;
using collectives::detail::range_buffer;
using collectives::detail::schedule;
using collectives::detail::scratch_alloc;

bool overlaps_partially(const void* x, const void* y, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(x), b = reinterpret_cast<std::uintptr_t>(y);
  return a != b && a < b + bytes && b < a + bytes;
}

// Builds the schedules of one allreduce (its row's rounds per chunk, or the
// ordered schedule of the deterministic mode); with a null scratch base it only
// measures.
void build_allreduce(std::vector<schedule>& out, allreduce_algorithm alg, bool deterministic, std::size_t count,
                     std::size_t chunk, detail::comm_context& ctx, const detail::node_layout* layout, range_buffer buf,
                     scratch_alloc& scratch) {
  out.clear();
  const std::vector<int> all = collectives::detail::all_ranks(ctx.size);
  const collectives::detail::allreduce_row& row = collectives::detail::allreduce_row_of(alg);
  if (!deterministic && !row.build) throw error(errc::internal, "allreduce: no schedule for this algorithm");
  for (std::size_t off = 0; off < count; off += chunk) {
    const block range{off, std::min(chunk, count - off)};
    schedule& s = out.emplace_back();
    if (deterministic) {
      const auto blocks = collectives::detail::split(range.offset, range.count, ctx.size);
      collectives::detail::ordered_reduce_scatter(s, all, ctx.rank, blocks, buf, scratch);
      collectives::detail::notify_now(s, blocks[static_cast<std::size_t>(ctx.rank)]);
      collectives::detail::ring_allgather(s, all, ctx.rank, blocks, buf, /*notify=*/true);
      continue;
    }
    row.build(s, {all, ctx.rank, *layout, range, buf}, scratch);
  }
}

// The repeated-shape fast path. Once the algorithm of a call is settled (auto
// measured its size class, or the model or CONVEYOR_ALLREDUCE_ALGORITHM chose it),
// a repeated call of the same shape (same communicator, count, dtype and op, the
// same requested algorithm and otherwise default options, on the same thread)
// skips the preamble: no call state, no context lookup, no model, no
// measured-class lookup. The library's allreduce goes straight to PMPI_Allreduce
// on the private communicator; Conveyor's algorithms run with the kernel and
// layout resolved by the first call. Why: for small messages the preamble costs
// as much as the differences between the candidates `auto` measures there.
// Anything else takes the full path: another shape, a context gone (the
// generation moved), a collective call open (a front end's on this thread, whose
// agreement must run; one open on another thread sends this one to the full path
// too, see g_open_collective_calls), a failed local check (the full path reports
// it). The same shape passed the full path's checks before, so skipping them
// changes nothing the contract promises.
//
// The entry is a constant-initialized thread_local (a zero handle, which is no
// communicator in either MPI, rather than MPI_COMM_NULL: Open MPI's is an address,
// which would make the entry dynamically initialized and put a guard check and a
// second TLS lookup on every call). allreduce() takes its address once and hides
// it from the optimizer: in a shared library every thread_local access is a TLS
// descriptor call, and GCC would otherwise repeat it after each opaque call.
struct fast_entry {
  MPI_Comm comm{};  // the caller's
  std::size_t count = 0;
  dtype t{};
  op o{};
  std::size_t bytes = 0;
  std::uint64_t generation = 0;
  detail::comm_context* ctx = nullptr;
  allreduce_algorithm requested{};         // options.algorithm of the calls served (automatic or pinned)
  allreduce_algorithm algorithm{};         // what runs
  collectives::detail::stock_call call{};  // for mpi: resolved once
  // The row's direct run (its algorithm runs directly; null: as schedules): called
  // without a lookup.
  void (*run)(const collectives::detail::allreduce_call&) = nullptr;
  reduce_kernel_fn kernel = nullptr;
  const detail::node_layout* layout = nullptr;
  int window = 0;
  allreduce_report report;

  bool serves(const void* send, const void* recv, std::size_t n, dtype type, op o_, MPI_Comm c,
              const allreduce_options& options) const;
};
thread_local fast_entry t_repeated_shape;

// Every option at its default except the algorithm (automatic or pinned).
bool plain_options(const allreduce_options& o) {
  return !o.validate && !o.deterministic && !o.on_chunk && o.ranks_per_node == 0 && o.segment_bytes == 0;
}

bool fast_entry::serves(const void* send, const void* recv, std::size_t n, dtype type, op o_, MPI_Comm c,
                        const allreduce_options& options) const {
  return c == comm && n == count && type == t && o_ == o && send && recv &&
         generation == detail::context_generation() && options.algorithm == requested && plain_options(options) &&
         !detail::any_collective_call_open() &&
         (send == MPI_IN_PLACE || send == recv || !overlaps_partially(send, recv, bytes));
}

// What runs for `alg`: shared_memory becomes recursive doubling where the ranks
// cannot share a segment.
allreduce_algorithm runnable(detail::comm_context& ctx, allreduce_algorithm alg) {
  if (alg != allreduce_algorithm::shared_memory || ctx.size == 1) return alg;
  return collectives::detail::shared_segment_of(ctx) ? alg : allreduce_algorithm::recursive_doubling;
}

// Runs `alg` (resolved) for one call: directly if its row runs so, else as the
// row's schedules (cached per shape), pipelined in chunks where the row says.
void run_algorithm(detail::comm_context& ctx, allreduce_algorithm alg, const void* send, void* recv, std::size_t count,
                   dtype t, op o, reduce_kernel_fn kernel, const allreduce_options& options,
                   const detail::node_layout& layout, std::size_t segment_bytes, int window) {
  const collectives::detail::allreduce_row& row = collectives::detail::allreduce_row_of(alg);
  if (row.run && (row.deterministic || !options.deterministic) && count > 0 && ctx.size > 1) {
    row.run({ctx, send, recv, count, t, o, kernel, options, layout});
    return;
  }
  const std::size_t bytes = count * dtype_size(t);
  if (send != MPI_IN_PLACE && send != recv && bytes) std::memcpy(recv, send, bytes);
  if (count == 0) return;
  if (ctx.size == 1) {  // nothing to combine: the copy above is the result
    if (options.on_chunk) options.on_chunk(0, count);
    return;
  }

  const std::size_t esize = dtype_size(t);
  const bool chunked = options.deterministic || row.chunked;
  const std::size_t chunk = chunked ? std::max<std::size_t>(1, segment_bytes / esize) : count;

  collectives::detail::schedule_cache& cache = collectives::detail::collectives_state_of(ctx).schedules;
  range_buffer buf{static_cast<char*>(recv), esize};
  const bool same_shape = cache.fits(alg, options.deterministic, count, chunk, esize, &layout);
  if (!same_shape) {  // measure the scratch memory once per shape
    scratch_alloc measure(nullptr);
    build_allreduce(cache.schedules, alg, options.deterministic, count, chunk, ctx, &layout, buf, measure);
    cache = collectives::detail::schedule_cache{alg,     options.deterministic, count,   chunk, esize, &layout,
                                                nullptr, measure.used(),        nullptr, {}};
  }
  char* scratch_base = collectives::detail::collectives_state_of(ctx).scratch(cache.scratch_bytes);
  if (cache.recv != recv || cache.scratch != scratch_base || cache.schedules.empty()) {
    scratch_alloc scratch(scratch_base);
    build_allreduce(cache.schedules, alg, options.deterministic, count, chunk, ctx, &layout, buf, scratch);
    cache.recv = recv;
    cache.scratch = scratch_base;
  }
  collectives::detail::run_schedules(ctx.comm, cache.schedules, kernel, &options.on_chunk, window,
                                     collectives::detail::pieces_for(ctx.rank, layout));
}
}  // namespace

CONVEYOR_ENUM_NAMES(allreduce_algorithm, CONVEYOR_ALLREDUCE_ALGORITHM_LIST, "allreduce algorithm", kAlgorithmNames,
                    algorithm_name, parse_algorithm)

namespace {

// The candidates of a class `auto` is about to measure: the model's choice
// (already resolved by runnable()), then each row that `auto` measures on this
// layout and that runs as itself here (the library's allreduce; shared_memory
// where the ranks share a node and the model chose otherwise). The same on every
// rank: the model's choice and the layout agree.
void set_candidates(collectives::detail::measured_class& m, detail::comm_context& ctx, allreduce_algorithm model_choice,
                    const detail::node_layout& layout) {
  m.candidates[0] = model_choice;
  m.count = 1;
  for (const collectives::detail::allreduce_row* row : collectives::detail::allreduce_rows()) {
    if (row->measured && row->measured(layout) && row->algorithm != model_choice &&
        runnable(ctx, row->algorithm) == row->algorithm && m.count < static_cast<int>(std::size(m.candidates))) {
      m.candidates[m.count++] = row->algorithm;
    }
  }
}

// The local checks of an allreduce (besides the kernel and the byte count).
void check_arguments(const void* send, const void* recv, std::size_t bytes, const allreduce_options& options) {
  const bool in_place = send == MPI_IN_PLACE || send == recv;
  if (bytes > 0 && (!recv || !send)) throw error(errc::invalid_argument, "null buffer with count > 0");
  if (!in_place && overlaps_partially(send, recv, bytes)) {
    throw error(errc::invalid_argument, "send and recv buffers partially overlap");
  }
  if (static_cast<unsigned>(options.algorithm) >= static_cast<unsigned>(allreduce_algorithm_count)) {
    throw error(errc::invalid_argument,
                "unknown algorithm value " + std::to_string(static_cast<int>(options.algorithm)));
  }
  if (options.ranks_per_node < 0) throw error(errc::invalid_argument, "ranks_per_node must be >= 0");
  if (options.deterministic && options.algorithm == allreduce_algorithm::mpi) {
    throw error(errc::invalid_argument,
                "the mpi algorithm cannot be deterministic (MPI does not fix the reduction order)");
  }
}

// The cost model's choice for `requested` (automatic: the cheapest) and its
// prediction, memoized in the state for repeated calls of one size.
const collectives::detail::model_choice& model_choice_for(collectives::detail::collectives_state& state,
                                                          allreduce_algorithm requested, std::size_t bytes, int size,
                                                          const detail::node_layout& layout,
                                                          std::size_t segment_bytes) {
  collectives::detail::model_choice& memo = state.last_choice;
  if (memo.bytes == bytes && memo.layout == &layout && memo.segment_bytes == segment_bytes &&
      memo.requested == requested) {
    return memo;
  }
  const cost_model& params = current_cost_model();
  const allreduce_algorithm chosen =
      requested == allreduce_algorithm::automatic
          ? collectives::detail::choose_allreduce(bytes, size, layout, segment_bytes, params)
          : requested;
  memo = {bytes,         &layout,
          segment_bytes, requested,
          chosen,        collectives::detail::predict_allreduce(chosen, bytes, size, layout, segment_bytes, params)};
  return memo;
}

// The full path of allreduce, kept out of line so that the fast path's caller
// does not pay its stack frame.
[[gnu::noinline]] allreduce_report allreduce_full(const void* send, void* recv, std::size_t count, dtype t, op o,
                                                  MPI_Comm comm, const allreduce_options& options) {
  collective_call call("allreduce", comm);
  detail::comm_context& ctx = detail::context_of(call);
  reduce_kernel_fn kernel = nullptr;
  std::size_t bytes = 0;
  call.check([&] {
    kernel = reduce_kernel(t, o);
    bytes = detail::checked_bytes(count, t, "allreduce");
    check_arguments(send, recv, bytes, options);
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
  const detail::node_layout& layout =
      ctx.layout(options.ranks_per_node > 0 ? options.ranks_per_node : ctx.env_ranks_per_node);

  allreduce_report report;
  report.nodes = layout.nodes;
  report.segment_bytes = options.segment_bytes ? options.segment_bytes : params.segment_bytes;
  collectives::detail::collectives_state& state = collectives::detail::collectives_state_of(ctx);
  const allreduce_algorithm requested =
      options.algorithm == allreduce_algorithm::automatic ? state.env_algorithm : options.algorithm;
  const collectives::detail::model_choice& memo =
      model_choice_for(state, requested, bytes, ctx.size, layout, report.segment_bytes);
  const bool measure_candidate = options.algorithm == allreduce_algorithm::automatic &&
                                 state.env_algorithm == allreduce_algorithm::automatic && !options.deterministic &&
                                 !options.on_chunk && count > 0 && ctx.size > 1 &&
                                 collectives::detail::measuring_enabled();
  allreduce_algorithm alg = runnable(ctx, memo.chosen);
  report.predicted_seconds = memo.predicted;
  // What the report says about the algorithm that runs (resolved by runnable()).
  const auto report_running = [&](allreduce_algorithm a) {
    report.algorithm = a;
    report.spin_waits = a == allreduce_algorithm::shared_memory && ctx.size > 1 &&
                        collectives::detail::shared_segment_of(ctx)->spins_before_yield();
  };
  report_running(alg);

  if (measure_candidate) {
    const int cls = detail::size_class(bytes);
    const int kernel_class = o == op::logaddexp ? 1 : 0;  // compute-bound: its own decisions (state.hpp)
    collectives::detail::measured_class& m = state.measured_for({cls, &layout, report.segment_bytes, kernel_class});
    if (m.decided == allreduce_algorithm::automatic) {
      if (m.count == 0) set_candidates(m, ctx, alg, layout);
      const allreduce_algorithm trial = collectives::detail::run_next_trial(
          m, cls, send, recv, bytes, state.trial_out,
          [&](allreduce_algorithm a, const void* in, void* out) {
            run_algorithm(ctx, a, in, out, count, t, o, kernel, options, layout, report.segment_bytes, params.window);
          },
          ctx.comm, ctx.rank, ctx.size);
      report_running(trial);
      report.trial = true;
      return report;
    }
    alg = m.decided;
    report_running(alg);
  }
  // Settled: the next call of this shape may take the fast path.
  if (plain_options(options) && count > 0 && ctx.size > 1 &&
      (alg != allreduce_algorithm::mpi || count <= detail::kMaxMessageBytes)) {
    const collectives::detail::stock_call stock =
        alg == allreduce_algorithm::mpi ? collectives::detail::stock_call_of(t, o) : collectives::detail::stock_call{};
    t_repeated_shape = {comm,
                        count,
                        t,
                        o,
                        bytes,
                        detail::context_generation(),
                        &ctx,
                        options.algorithm,
                        alg,
                        stock,
                        collectives::detail::allreduce_row_of(alg).run,
                        kernel,
                        &layout,
                        params.window,
                        report};
  }
  run_algorithm(ctx, alg, send, recv, count, t, o, kernel, options, layout, report.segment_bytes, params.window);
  return report;
}

}  // namespace

allreduce_report allreduce(const void* send, void* recv, std::size_t count, dtype t, op o, MPI_Comm comm,
                           const allreduce_options& options) {
  const fast_entry* entry = &t_repeated_shape;
  asm("" : "+r"(entry));  // one TLS lookup for the whole call (see fast_entry)
  const fast_entry& fast = *entry;
  if (fast.serves(send, recv, count, t, o, comm, options)) {
    if (fast.algorithm == allreduce_algorithm::mpi) {
      detail::check_mpi(PMPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                                       fast.call.type, fast.call.mop, fast.ctx->comm),
                        "MPI_Allreduce");
    } else if (fast.run) {  // (plain options: not deterministic; count > 0 and ranks > 1 when it was kept)
      fast.run({*fast.ctx, send, recv, count, t, o, fast.kernel, options, *fast.layout});
    } else {
      run_algorithm(*fast.ctx, fast.algorithm, send, recv, count, t, o, fast.kernel, options, *fast.layout,
                    fast.report.segment_bytes, fast.window);
    }
    return fast.report;
  }
  return allreduce_full(send, recv, count, t, o, comm, options);
}

}  // namespace conveyor
