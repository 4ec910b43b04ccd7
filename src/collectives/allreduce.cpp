// Public entry points of the collectives: argument checks, validation, algorithm
// choice, schedule building (algorithms.cpp) and execution (schedule.cpp).
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
#include "collectives/shared_memory.hpp"
#include "runtime/context.hpp"
#include "runtime/cost_model.hpp"
#include "runtime/message_pieces.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/settings.hpp"
#include "core/checks.hpp"
#include "core/names.hpp"

namespace conveyor {
namespace {

using detail::block;
using detail::range_buffer;
using detail::schedule;
using detail::scratch_alloc;

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
      case allreduce_algorithm::recursive_doubling:  // run directly, never as schedules
      case allreduce_algorithm::mpi:
      case allreduce_algorithm::shared_memory:
      case allreduce_algorithm::automatic:
        throw error(errc::internal, "allreduce: no schedule for this algorithm");
    }
  }
}

// The MPI library's own allreduce (PMPI_Allreduce: an interposing library passes
// it through), in pieces of at most INT_MAX elements (the reduction is element
// by element, so pieces are independent). Predefined types and ops where MPI has
// them and gets them right; Conveyor's kernel as an MPI_Op for the 16-bit floats
// (no MPI type) and for 8- and 16-bit integers: Open MPI 4.1's op/avx component
// saturates their sums instead of wrapping as MPI and C define (measured: ~half
// of 2^31 int8 sums wrong, tests/mpi/test_large.cpp).
struct stock_call {
  MPI_Datatype type;
  MPI_Op mop;
};
stock_call stock_call_of(dtype t, op o) {
  const bool native = dtype_size(t) > 2;  // the 8- and 16-bit types: Conveyor's kernel
  return {mpi_datatype(t), native ? mpi_builtin_op(o) : mpi_op(o, t)};
}

void stock_allreduce(MPI_Comm comm, const void* send, void* recv, std::size_t count, dtype t, op o) {
  const stock_call c = stock_call_of(t, o);
  const std::size_t esize = dtype_size(t);
  detail::for_each_piece(count, [&](std::size_t off, int n, int) {
    const void* in = send == MPI_IN_PLACE ? MPI_IN_PLACE : static_cast<const char*>(send) + off * esize;
    detail::check_mpi(PMPI_Allreduce(in, static_cast<char*>(recv) + off * esize, n, c.type, c.mop, comm), "MPI_Allreduce");
  });
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

// `auto`, measured (CONVEYOR_ALLREDUCE_MEASURE, on by default): per size class
// (two per octave) of a communicator, the first calls alternate the candidates
// (the order reversed every other round), trials_of(class) times each: the cost
// model's choice, the MPI library's own allreduce and, when the ranks share one
// node and the model chose otherwise, shared_memory. Then one MPI_Allreduce of
// the slowest rank's medians and spreads decides, identically on every rank, and
// later calls of that class run the fastest. Conveyor's candidates must beat the
// library by more than the trials' noise (kMinMargin, or the larger spread of the
// two when that is more; margin_over_library): on a tie the library's call is the
// one without Conveyor's preamble. Why shared_memory at every size: the
// model's memory terms did not predict where it wins. On 2 ranks bound to their
// own cores (Open MPI's default launch) it measured 1.3-3.1x Open MPI's allreduce
// at 12-256 KiB and 1.2-1.6x at 8-24 MiB, where the model had chosen recursive
// doubling or Rabenseifner (~1.0x), and 0.6x at 1-6 MiB; on MPICH 1.7-2.7x at
// 24-64 MiB and 0.5x at 3-16 MiB (`conveyor bench allreduce --impls
// ring,recursive_doubling,rabenseifner,shared_memory,stock`).
// Small calls are short and their single timings noisy, so they get more trials
// (a 2-rank run with 5 trials kept recursive doubling at 96 B although it was
// ~8% slower than the library afterwards). So `auto` is slower than stock only by
// its preamble and these first calls. Not with on_chunk (the overlap it buys is
// not in the allreduce's own time) or deterministic mode.
constexpr int kMaxMeasured = 31;

int size_class(std::size_t bytes) {
  const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes | 1));
  const bool upper_half = octave > 0 && (bytes >> (octave - 1)) & 1;  // >= 1.5 * 2^octave
  return 2 * octave + (upper_half ? 1 : 0);
}

// Trials per candidate (odd, so the median is one sample): 31 below 32 KiB, 15 below
// 512 KiB, 9 below 8 MiB, 5 above. Depends on the class only, so every rank
// (which sees the same calls) counts alike.
int trials_of(int size_class) {
  const int octave = size_class / 2;
  return octave <= 14 ? 31 : octave <= 18 ? 15 : octave <= 22 ? 9 : 5;
}

// Trials of classes below 32 KiB time kBatchedRuns back-to-back runs, after one
// untimed run. One short call's time is mostly waiting for the other ranks (the
// skew the previous call left, waking after a yield): on 2 Open MPI ranks,
// single-call trials at 16 B chose recursive doubling in 2 launches of 3 while
// it was 13% slower than the library in a loop (849 vs 752 ns). A batch times
// what a loop of calls sees. It runs on copies, so the trial call costs
// kBatchedRuns + 1 runs (the classes with 31 trials: < 32 KiB, so the measuring
// phase stays a few ms); from 32 KiB one run is long enough to time alone.
constexpr int kBatchedRuns = 4;
bool batched_trials(int size_class) { return size_class / 2 <= 14; }

// Lead-in runs: every trial runs its candidate once untimed before timing it. With 3
// candidates in forward and backward rounds (a b c, c b a, a b c, ...), the middle
// one never ran after itself while the others did every other round, and a call
// that follows another algorithm is slower (the other's buffers in the caches,
// the ranks' arrival skew it left). On 2 Open MPI ranks bound to cores the
// trials then had Rabenseifner 4-9% ahead of the library at 2-4 MiB
// (e.g. 673 vs 736 us) while in a loop it ran 0.95x; chosen, it ran 0.84-0.93x
// at 1.5-24 MiB in the auto-vs-stock matrix. The lead-in doubles the measuring
// phase's calls from 32 KiB (the batched classes had one already). In place, the
// lead-in writes a trial buffer of the call's size, freed when the class is
// decided if it is larger than kKeptTrialBuffer.
constexpr std::size_t kKeptTrialBuffer = std::size_t{1} << 20;

// The candidates of a measured class, in the order their trials alternate.
constexpr int kMaxCandidates = 3;
struct measured_class {
  allreduce_algorithm candidates[kMaxCandidates] = {};  // [0]: the model's choice, [1]: mpi, [2]: shared_memory
  int count = 0;                                        // candidates in use (0: not yet set)
  double seconds[kMaxCandidates][kMaxMeasured] = {};
  int taken = 0;
  allreduce_algorithm decided = allreduce_algorithm::automatic;
};

// A candidate's trials: the median, and the spread (interquartile range over
// the median) that says how far apart two medians must be to mean anything.
struct trial_summary {
  double median, spread;
};
trial_summary summary_of(const double* v, int n) {
  double x[kMaxMeasured];
  std::copy(v, v + n, x);
  std::sort(x, x + n);
  const double median = x[n / 2];
  return {median, median > 0 ? (x[(3 * n) / 4] - x[n / 4]) / median : 0};
}

// How much faster than the library a candidate's median must be to be chosen.
// 3% at least; more when the trials of either were spread wider, up to 25%. Why:
// at 1.5-8 MiB on 2 Open MPI ranks the library, Rabenseifner and the ring are
// level, single calls vary by 10-30%, and with 3% alone `auto` took Rabenseifner
// on 5-9 trials that happened to favour it and then ran 0.89x stock in a loop
// (the auto-vs-stock matrix, docs/results.md). The cap keeps a candidate measured
// a third faster (shared_memory's wins) even when the trials are noisy.
constexpr double kMinMargin = 0.03, kMaxMargin = 0.25;
double margin_over_library(double candidate_spread, double library_spread) {
  return std::min(kMaxMargin, std::max({kMinMargin, candidate_spread, library_spread}));
}

// What the collectives keep per communicator (in its runtime context).
struct collectives_state {
  schedule_cache schedules;
  std::vector<char> trial_out;  // where auto's batched trials and in-place lead-ins write (kKeptTrialBuffer)
  // The shared_memory algorithm's segment, mapped by the first call that runs it
  // (null if the ranks span several nodes or mapping failed: recursive doubling).
  std::unique_ptr<detail::shm_allreduce> shared_segment;
  bool shared_segment_tried = false;
  // auto's measured choices: (size class, node layout, segment size) -> choice.
  using measured_key = std::tuple<int, const detail::node_layout*, std::size_t>;
  std::map<measured_key, measured_class> measured;
  // The last class used (map nodes do not move): repeated calls of one size skip
  // the map lookup on the hot path.
  measured_key last_key{-1, nullptr, 0};
  measured_class* last = nullptr;

  measured_class& measured_for(const measured_key& key) {
    if (!last || key != last_key) {
      last = &measured[key];
      last_key = key;
    }
    return *last;
  }
};

collectives_state& collectives_state_of(detail::comm_context& ctx) {
  if (!ctx.collectives_state) ctx.collectives_state = std::make_shared<collectives_state>();
  return *static_cast<collectives_state*>(ctx.collectives_state.get());
}

// The repeated-shape fast path. Once the algorithm of a call is settled (auto
// measured its size class, or the model or CONVEYOR_ALLREDUCE_ALGORITHM chose it),
// a repeated call of the same shape (same communicator, count, dtype and op, the
// same requested algorithm and otherwise default options, on the same thread)
// skips the preamble: no call state, no context lookup, no model, no
// measured-class lookup. The library's allreduce goes straight to PMPI_Allreduce
// on the private communicator; Conveyor's algorithms run with the kernel and
// layout resolved by the first call. Small messages are where the preamble shows:
// it costs as much as the differences between the candidates that auto measures
// there (docs/results.md has the numbers). Anything else takes the full path:
// another shape, a context gone (the generation moved), a collective call open
// (a front end's on this thread, whose agreement must run; one open on another
// thread sends this one to the full path too, see g_open_collective_calls), a
// failed local check (the full path reports it). The
// same shape passed the full path's checks before, so skipping them changes
// nothing the contract promises.
//
// The entry is a constant-initialized thread_local (a zero handle, which is no
// communicator in either MPI, rather than MPI_COMM_NULL: Open MPI's is an address,
// which would make the entry dynamically initialized and put a guard check and a
// second TLS lookup on every call). allreduce() takes its address once and hides
// it from the optimizer: in a shared library every thread_local access is a TLS
// descriptor call, and GCC would repeat it after each opaque call (five on the
// `mpi` path, about half of the fast path's CPU time in a loop that stubs out
// PMPI_Allreduce; docs/results.md).
struct fast_entry {
  MPI_Comm comm{};  // the caller's
  std::size_t count = 0;
  dtype t{};
  op o{};
  std::size_t bytes = 0;
  std::uint64_t generation = 0;
  detail::comm_context* ctx = nullptr;
  allreduce_algorithm requested{};  // options.algorithm of the calls served (automatic or pinned)
  allreduce_algorithm algorithm{};  // what runs
  stock_call call{};  // for mpi: resolved once
  reduce_kernel_fn kernel = nullptr;
  const detail::node_layout* layout = nullptr;
  int window = 0;
  allreduce_report report;

  bool serves(const void* send, const void* recv, std::size_t n, dtype type, op o_, MPI_Comm c,
              const allreduce_options& options) const;
};
thread_local fast_entry t_fast;

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

// The shared-memory segment of a context, mapped at the first call that needs it:
// collective, and every rank reaches it at the same call (the algorithm is
// decided alike everywhere). Null when the ranks are not all on one node.
detail::shm_allreduce* shared_segment_of(detail::comm_context& ctx) {
  collectives_state& state = collectives_state_of(ctx);
  if (!state.shared_segment_tried) {
    state.shared_segment_tried = true;
    const detail::node_layout& node = ctx.layout(0);
    if (node.nodes == 1) state.shared_segment = detail::shm_allreduce::create(ctx.comm, ctx.rank, ctx.size, node.node_cpus);
  }
  return state.shared_segment.get();
}

// What runs for `alg`: shared_memory becomes recursive doubling where the ranks
// cannot share a segment.
allreduce_algorithm runnable(detail::comm_context& ctx, allreduce_algorithm alg) {
  if (alg != allreduce_algorithm::shared_memory || ctx.size == 1) return alg;
  return shared_segment_of(ctx) ? alg : allreduce_algorithm::recursive_doubling;
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

// How messages of a call on `layout` are cut (schedule.hpp): the model's piece
// sizes within a node and between nodes of the layout the call runs on.
detail::piece_rule pieces_of(const detail::comm_context& ctx, const detail::node_layout& layout) {
  const cost_model& p = current_cost_model();
  return {&layout, ctx.rank, p.intra_piece_bytes, p.inter_piece_bytes};
}

void run_schedules(detail::comm_context& ctx, std::vector<schedule>& schedules, reduce_kernel_fn f,
                   const std::function<void(std::size_t, std::size_t)>* on_chunk, int window,
                   const detail::piece_rule& pieces) {
  detail::executor ex(ctx.comm, f, on_chunk, pieces);
  ex.run(schedules, window);
}

// Runs `alg` (resolved) for one call.
void run_algorithm(detail::comm_context& ctx, allreduce_algorithm alg, const void* send, void* recv, std::size_t count,
                   dtype t, op o, reduce_kernel_fn kernel, const allreduce_options& options, const detail::node_layout& layout,
                   std::size_t segment_bytes, int window) {
  const std::size_t bytes = count * dtype_size(t);
  if (alg == allreduce_algorithm::mpi && !options.deterministic && count > 0 && ctx.size > 1) {
    stock_allreduce(ctx.comm, send == recv ? MPI_IN_PLACE : send, recv, count, t, o);
    if (options.on_chunk) options.on_chunk(0, count);
    return;
  }
  if (alg == allreduce_algorithm::shared_memory && count > 0 && ctx.size > 1) {  // resolved by runnable()
    shared_segment_of(ctx)->run(send == MPI_IN_PLACE ? recv : send, recv, count, dtype_size(t), kernel);
    if (options.on_chunk) options.on_chunk(0, count);
    return;
  }
  if (send != MPI_IN_PLACE && send != recv && bytes) std::memcpy(recv, send, bytes);
  if (count == 0) return;
  if (ctx.size == 1) {  // nothing to combine: the copy above is the result
    if (options.on_chunk) options.on_chunk(0, count);
    return;
  }

  const std::size_t esize = dtype_size(t);
  if (alg == allreduce_algorithm::recursive_doubling && !options.deterministic) {
    detail::recursive_doubling_direct(ctx.comm, ctx.rank, ctx.size, static_cast<char*>(recv), count, esize,
                                      kernel, scratch_of(ctx, bytes), pieces_of(ctx, layout), &options.on_chunk);
    return;
  }

  // Ring, hierarchical and the deterministic schedule are pipelined in chunks;
  // Rabenseifner runs on the whole vector.
  const bool chunked = options.deterministic || alg == allreduce_algorithm::ring ||
                       alg == allreduce_algorithm::hierarchical;
  const std::size_t chunk = chunked ? std::max<std::size_t>(1, segment_bytes / esize) : count;

  schedule_cache& cache = collectives_state_of(ctx).schedules;
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
  run_schedules(ctx, cache.schedules, kernel, &options.on_chunk, window, pieces_of(ctx, layout));
}
// CONVEYOR_ALLREDUCE_MEASURE: "0" off, "1" (default) on, "trace" on and every
// decision printed by the communicator's rank 0 (why `auto` runs what it runs).
// Anything else is an error naming the variable.
enum class measuring { off, on, traced };
measuring measuring_setting() {
  static const measuring value = [] {
    const auto v = setting("CONVEYOR_ALLREDUCE_MEASURE");
    if (!v || *v == "1") return measuring::on;
    if (*v == "0") return measuring::off;
    if (*v == "trace") return measuring::traced;
    throw error(errc::invalid_argument, "CONVEYOR_ALLREDUCE_MEASURE=" + *v + ": 0, 1 or trace expected");
  }();
  return value;
}
bool measuring_enabled() { return measuring_setting() != measuring::off; }
bool measuring_traced() { return measuring_setting() == measuring::traced; }

// `agreed`: the candidates' medians, then their spreads (the slowest rank's).
void trace_decision(const measured_class& m, const double* agreed, int trials, std::size_t bytes, int ranks) {
  std::string line = "conveyor auto: " + std::to_string(bytes) + " B on " + std::to_string(ranks) + " ranks, " +
                     std::to_string(trials) + " trials each, median (spread) of the slowest rank:";
  char buf[96];
  for (int c = 0; c < m.count; ++c) {
    std::snprintf(buf, sizeof buf, " %s %.2f us (%.0f%%)", std::string(algorithm_name(m.candidates[c])).c_str(),
                  agreed[c] * 1e6, agreed[m.count + c] * 100);
    line += buf;
  }
  line += " -> " + std::string(algorithm_name(m.decided)) + "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace

CONVEYOR_ENUM_NAMES(allreduce_algorithm, CONVEYOR_ALLREDUCE_ALGORITHM_LIST, "allreduce algorithm", kAlgorithmNames,
                    algorithm_name, parse_algorithm)

namespace {

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
    const bool in_place = send == MPI_IN_PLACE || send == recv;
    if (count > 0 && (!recv || !send)) throw error(errc::invalid_argument, "null buffer with count > 0");
    if (!in_place && overlaps_partially(send, recv, bytes)) {
      throw error(errc::invalid_argument, "send and recv buffers partially overlap");
    }
    if (static_cast<unsigned>(options.algorithm) >= static_cast<unsigned>(allreduce_algorithm_count)) {
      throw error(errc::invalid_argument, "unknown algorithm value " + std::to_string(static_cast<int>(options.algorithm)));
    }
    if (options.ranks_per_node < 0) throw error(errc::invalid_argument, "ranks_per_node must be >= 0");
    if (options.deterministic && options.algorithm == allreduce_algorithm::mpi) {
      throw error(errc::invalid_argument, "the mpi algorithm cannot be deterministic (MPI does not fix the reduction order)");
    }
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
  const bool measure_candidate = options.algorithm == allreduce_algorithm::automatic &&
                                 ctx.env_algorithm == allreduce_algorithm::automatic && !options.deterministic &&
                                 !options.on_chunk && count > 0 && ctx.size > 1 && measuring_enabled();
  alg = runnable(ctx, memo.chosen);
  report.predicted_seconds = memo.predicted;
  // What the report says about the algorithm that runs (resolved by runnable()).
  const auto report_running = [&](allreduce_algorithm a) {
    report.algorithm = a;
    report.spin_waits = a == allreduce_algorithm::shared_memory && ctx.size > 1 &&
                        shared_segment_of(ctx)->spins_before_yield();
  };
  report_running(alg);

  if (measure_candidate) {
    const int cls = size_class(bytes);
    measured_class& m = collectives_state_of(ctx).measured_for({cls, &layout, report.segment_bytes});
    if (m.decided == allreduce_algorithm::automatic) {
      const int trials = trials_of(cls);
      if (m.count == 0) {  // the same on every rank: the model's choice and the layout agree
        m.candidates[0] = alg;
        m.candidates[1] = allreduce_algorithm::mpi;
        m.count = 2;
        if (alg != allreduce_algorithm::shared_memory && layout.nodes == 1 &&
            runnable(ctx, allreduce_algorithm::shared_memory) == allreduce_algorithm::shared_memory) {
          m.candidates[m.count++] = allreduce_algorithm::shared_memory;
        }
      }
      // Round r runs every candidate once, forward in even rounds and backward in
      // odd ones, so that no candidate always follows the same one (what the
      // previous call left in the caches and on the other ranks).
      const int trial_round = m.taken / m.count, position = m.taken % m.count;
      const int which = trial_round % 2 == 0 ? position : m.count - 1 - position;
      const allreduce_algorithm trial = m.candidates[which];
      const auto run = [&](const void* in, void* out) {
        run_algorithm(ctx, trial, in, out, count, t, o, kernel, options, layout, report.segment_bytes, params.window);
      };
      // Every trial first runs its candidate once untimed, as a loop of calls
      // does: a timed call that follows another candidate pays for what that
      // one left behind (the lead-in note above kKeptTrialBuffer). The lead-in never touches the result:
      // in place, it writes the state's trial buffer.
      std::vector<char>& scratch = collectives_state_of(ctx).trial_out;
      const bool in_place = send == MPI_IN_PLACE || send == recv;
      const void* in = in_place ? recv : send;
      const bool batched = batched_trials(cls);
      if (batched || in_place) {
        scratch.resize(bytes);
        run(in, scratch.data());
      } else {
        run(send, recv);
      }
      const double t0 = MPI_Wtime();
      if (batched) {  // out of place into the trial buffer; the result is copied to recv
        for (int r = 0; r < kBatchedRuns; ++r) run(in, scratch.data());
        m.seconds[which][trial_round] = (MPI_Wtime() - t0) / kBatchedRuns;
        std::memcpy(recv, scratch.data(), bytes);
      } else {
        run(send, recv);
        m.seconds[which][trial_round] = MPI_Wtime() - t0;
      }
      if (++m.taken == m.count * trials) {
        double agreed[2 * kMaxCandidates] = {};  // medians, then spreads
        for (int c = 0; c < m.count; ++c) {
          const trial_summary summary = summary_of(m.seconds[c], trials);
          agreed[c] = summary.median;
          agreed[m.count + c] = summary.spread;
        }
        detail::check_mpi(PMPI_Allreduce(MPI_IN_PLACE, agreed, 2 * m.count, MPI_DOUBLE, MPI_MAX, ctx.comm),
                          "MPI_Allreduce");
        const double* slowest = agreed;
        const double* spread = agreed + m.count;
        int best = 0;  // the fastest of Conveyor's candidates (every one but [1])
        for (int c = 2; c < m.count; ++c) best = slowest[c] < slowest[best] ? c : best;
        const double margin = margin_over_library(spread[best], spread[1]);
        m.decided = slowest[best] < (1 - margin) * slowest[1] ? m.candidates[best] : allreduce_algorithm::mpi;
        if (measuring_traced() && ctx.rank == 0) trace_decision(m, agreed, trials, bytes, ctx.size);
        // A large in-place class's trial buffer is not kept once it is decided.
        if (scratch.capacity() > kKeptTrialBuffer) std::vector<char>().swap(scratch);
      }
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
    const stock_call stock = alg == allreduce_algorithm::mpi ? stock_call_of(t, o) : stock_call{};
    t_fast = {comm,  count,  t,       o,     bytes, detail::context_generation(), &ctx, options.algorithm, alg, stock,
              kernel, &layout, params.window, report};
  }
  run_algorithm(ctx, alg, send, recv, count, t, o, kernel, options, layout, report.segment_bytes, params.window);
  return report;
}

}  // namespace

allreduce_report allreduce(const void* send, void* recv, std::size_t count, dtype t, op o, MPI_Comm comm,
                           const allreduce_options& options) {
  const fast_entry* entry = &t_fast;
  asm("" : "+r"(entry));  // one TLS lookup for the whole call (see fast_entry)
  const fast_entry& fast = *entry;
  if (fast.serves(send, recv, count, t, o, comm, options)) {
    if (fast.algorithm == allreduce_algorithm::mpi) {
      detail::check_mpi(PMPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count), fast.call.type,
                                       fast.call.mop, fast.ctx->comm),
                        "MPI_Allreduce");
    } else {
      run_algorithm(*fast.ctx, fast.algorithm, send, recv, count, t, o, fast.kernel, options, *fast.layout,
                    fast.report.segment_bytes, fast.window);
    }
    return fast.report;
  }
  return allreduce_full(send, recv, count, t, o, comm, options);
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
    if ((bytes && !send) || ((counts[static_cast<std::size_t>(ctx.rank)] || (bytes && send == MPI_IN_PLACE)) && !recv)) {
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
  // MPI_IN_PLACE (MPI's meaning): the input is in `recv`, which then holds all
  // sum(counts) elements; the result is written to its start.
  if (bytes) std::memcpy(work, send == MPI_IN_PLACE ? recv : send, bytes);
  std::vector<schedule> schedules(1);
  detail::ring_reduce_scatter(schedules[0], all, ctx.rank, blocks, {work, esize}, scratch);
  run_schedules(ctx, schedules, kernel, nullptr, 1, pieces_of(ctx, ctx.layout(ctx.env_ranks_per_node)));
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
  run_schedules(ctx, schedules, nullptr, nullptr, 1, pieces_of(ctx, ctx.layout(ctx.env_ranks_per_node)));
}

void allgather(const void* send, void* recv, std::size_t block_count, dtype t, MPI_Comm comm, bool validate) {
  collective_call call("allgatherv", comm);  // joined by allgatherv: one agreement
  allgatherv(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(call.size()), block_count), t, comm, validate);
}

}  // namespace conveyor
