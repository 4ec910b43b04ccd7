// SPDX-License-Identifier: BSD-3-Clause
// conveyor::alltoallw (conveyor/alltoall.hpp): the steps, bytes and limits are in
// the public header. Here: how rows are walked, and the order of the exchange.
//
// Messages: on the runtime's private duplicate of the caller's communicator, tag
// (call number mod 512) * 64 + piece, so a message of one call can never match a
// receive of another (an erroneous program whose counts disagree leaves its
// message unmatched instead of corrupting the next call). Packages over 1 GiB go
// as several pieces (runtime/message_pieces.hpp), at most 64 (64 GiB a peer).
// Buffers: the packages of a call live in two buffers kept per communicator and
// reused by the next call (a repeated FFT transpose maps no new memory).
#include "conveyor/alltoall.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/contract.hpp"
#include "redistribute/alltoall_attach.hpp"
#include "redistribute/alltoall_by_nodes.hpp"
#include "redistribute/alltoall_copy_choice.hpp"
#include "redistribute/alltoall_shared.hpp"
#include "redistribute/alltoall_table.hpp"
#include "redistribute/alltoall_typed.hpp"
#include "redistribute/byte_rows.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/context.hpp"
#include "runtime/measured_choice.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor {
namespace {

constexpr int kCallTags = 512;    // call numbers before a tag repeats
constexpr int kTagsPerCall = 64;  // pieces 0-61, then the attach descriptor and done
constexpr int kPiecesPerPackage = kTagsPerCall - 2;
constexpr int kDescriptorTag = kTagsPerCall - 2, kDoneTag = kTagsPerCall - 1;

using shared_exchange = redistribute::detail::shared_exchange;
using way = shared_exchange::way;

// One peer's part of a call.
struct pair_plan {
  std::int64_t sbytes = 0, rbytes = 0;
  way send = way::message, recv = way::message;
  char* sdirect = nullptr;          // a message straight from the caller's buffer (one run)
  char* rdirect = nullptr;          // a message straight into it
  std::int64_t soff = 0, roff = 0;  // else its place in the package buffers
  int pieces_left = 0;
  bool failed = false;  // the sender moved it otherwise than planned: never unpacked
  bool rtyped = false;  // received as one message of the caller's type (way::typed)
  bool sent = false;    // its descriptor is out (attached pairs on one node: before this rank's own part)
  bool spacked =
      false;  // its package is packed first (a message not from the caller, an attach in place or of short rows)
};

// alltoall_auto's candidates (runtime/measured_choice.hpp): the rows of the
// family's table (alltoall_table.hpp).
using redistribute::detail::alltoall_candidates;
using redistribute::detail::alltoall_path;

// A decided trial's medians and spreads (record_trial's `agreed`: the medians,
// then the spreads, one per candidate), each with its row's name, and the choice.
void print_medians(const detail::measured_choice<alltoall_path>& m, const double* agreed) {
  for (int c = 0; c < m.count; ++c) {
    const auto& name = redistribute::detail::alltoall_row_of(m.candidates[c]).info.name;
    std::fprintf(stderr, " %.*s %.2f us (%.0f%%)", static_cast<int>(name.size()), name.data(), agreed[c] * 1e6,
                 agreed[m.count + c] * 100);
  }
  const auto& chosen = redistribute::detail::alltoall_row_of(m.decided).info.name;
  std::fprintf(stderr, " -> %.*s\n", static_cast<int>(chosen.size()), chosen.data());
}

struct alltoall_state final : detail::engine_state {
  // alltoall_auto: per size class of the bytes per peer, what its trials decided.
  std::vector<detail::measured_choice<alltoall_path>> measured;
  // alltoallw_auto on one node: per agreed vote (the class of the largest pair of
  // any rank), Conveyor's exchange against the library's call.
  std::vector<detail::measured_choice<alltoall_path>> library_measured;
  unsigned library_ahead = 0;  // calls left that run the library's call before any vote (alltoallw_ahead)
  // alltoallw_auto across nodes: per agreed class of the largest pair, the
  // pairwise exchange, the library's call and the node-aware exchange.
  std::vector<detail::measured_choice<alltoall_path>> across_measured;
  detail::byte_buffer trial_out;
  std::vector<byte_map> even_maps;  // the contiguous maps of alltoall_auto's last size
  std::int64_t even_bytes = -1;
  int nodes = 0;                                                      // alltoall_nodes, once known
  std::unique_ptr<redistribute::detail::by_nodes_exchange> by_nodes;  // made on its first call
  unsigned calls = 0;
  detail::byte_buffer send_packages, recv_packages;
  redistribute::detail::attach_state attach;
  bool prepared = false;                    // the probe ran and the slots were mapped (or not) on this communicator
  std::unique_ptr<shared_exchange> shared;  // every rank on one node, at most kMaxRanks
  redistribute::detail::copy_choice copy;   // with `shared`: this rank's ways as a sender, per plan
  // Per call, kept for their capacity (a repeated call allocates nothing).
  std::vector<std::int64_t> sbytes, rbytes;
  std::vector<pair_plan> pairs;
  std::vector<MPI_Request> rreq, sreq;
  std::vector<int> rowner, rpiece;
  std::vector<byte_map> descriptors;
  byte_map remote;
  redistribute::detail::node_mappings mapped;
};

const int kAlltoallSlot =
    detail::register_engine_state([](const detail::comm_context&) -> std::unique_ptr<detail::engine_state> {
      return std::make_unique<alltoall_state>();
    });

using redistribute::detail::at;
using redistribute::detail::row_walk;

// The one row of a map that is a single contiguous run (null otherwise).
char* single_run(const byte_map& m, const void* base) {
  char* row = nullptr;
  std::int64_t n = 0;
  for (const byte_box& b : m) {
    if (b.bytes() == 0) continue;
    if (row || b.bytes() != b.run) return nullptr;
    row = at(base, b.offset);
    n = b.run;
  }
  return n ? row : nullptr;
}

// Between a map's rows and a contiguous package: pack (into `flat`) or unpack.
void move_rows(const byte_map& m, const void* base, char* flat, bool packing) {
  row_walk w(m, base);
  char* row = nullptr;
  std::int64_t n = 0;
  while (w.next(row, n)) {
    if (packing) std::memcpy(flat, row, static_cast<std::size_t>(n));
    else std::memcpy(row, flat, static_cast<std::size_t>(n));
    flat += n;
  }
}
void pack(const byte_map& m, const void* base, char* out) { move_rows(m, base, out, true); }
void unpack(const char* in, const byte_map& m, void* base) { move_rows(m, base, const_cast<char*>(in), false); }

// This rank's own part: send rows to receive rows directly, cut where either ends.
void copy_self(const byte_map& from, const void* send, const byte_map& to, void* recv) {
  row_walk src(from, send), dst(to, recv);
  char *s = nullptr, *d = nullptr;
  std::int64_t sn = 0, dn = 0;
  while (true) {
    if (sn == 0 && !src.next(s, sn)) return;
    if (dn == 0 && !dst.next(d, dn)) return;
    const std::int64_t n = std::min(sn, dn);
    if (s != d) std::memmove(d, s, static_cast<std::size_t>(n));
    s += n, d += n, sn -= n, dn -= n;
  }
}

void check_map(const byte_map& m, const char* side, int peer) {
  for (const byte_box& b : m) {
    bool ok = b.run >= 0 && b.axes >= 0 && b.axes <= byte_box::max_axes;
    for (int k = 0; ok && k < b.axes; ++k) ok = b.count[static_cast<std::size_t>(k)] >= 0;
    if (!ok) {
      throw error(errc::invalid_argument, std::string("alltoallw: a box of the ") + side + " map of rank " +
                                              std::to_string(peer) + " has a negative length or count, or over " +
                                              std::to_string(byte_box::max_axes) + " axes");
    }
  }
}

// With validate: no byte is written by two parts of the receive side (MPI makes
// that erroneous; unchecked, the bytes would hold whichever part landed last).
// Every receive row, sorted: O(rows log rows), so only under validate.
void check_no_overlap(const std::vector<byte_map>& recv_maps) {
  struct row {
    std::int64_t lo, hi;
    int peer;
  };
  std::vector<row> rows;
  for (std::size_t q = 0; q < recv_maps.size(); ++q) {
    row_walk w(recv_maps[q], nullptr);
    char* at_row = nullptr;
    std::int64_t n = 0;
    while (w.next(at_row, n)) {
      const auto lo = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(at_row));
      rows.push_back({lo, lo + n, static_cast<int>(q)});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.lo < b.lo; });
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].lo >= rows[i - 1].hi) continue;
    throw error(errc::invalid_argument, "alltoallw: the receive parts of ranks " + std::to_string(rows[i - 1].peer) +
                                            " and " + std::to_string(rows[i].peer) + " overlap at byte " +
                                            std::to_string(rows[i].lo) + " of the receive buffer");
  }
}

// The communicator's first call (collective): the attach verdict, and the shared
// slots where every rank is on one node.
void prepare(alltoall_state& state, detail::comm_context& ctx) {
  if (state.prepared) return;  // every later call: nothing to look up
  const detail::node_layout& node = ctx.layout(ctx.env_ranks_per_node);
  redistribute::detail::probe_attach(state.attach, ctx.comm, ctx.rank, ctx.size, node.node_of);
  state.prepared = true;
  if (node.nodes == 1 && ctx.size > 1 && ctx.size <= shared_exchange::kMaxRanks) {
    state.shared = shared_exchange::create(ctx.comm, ctx.rank, ctx.size, node.node_cpus);
  }
}

detail::measuring copy_measuring() {
  static const detail::measuring m = detail::measuring_setting("CONVEYOR_ALLTOALL_MEASURE");
  return m;
}

// The library vote (alltoallw_auto, every rank on one node): MPI_Alltoallv / w
// have no size every rank knows, so each rank writes the size class of the
// largest package it sends to another rank into every header it posts (every
// pair is some rank's send: the maximum is the call's largest pair). After
// reading its peers' headers every rank holds the same maximum, the call's
// class, and runs what that class decided (or its next trial): Conveyor's
// exchange or the library's own call.
// A rank without a library call to hand to, or whose ways are forced
// (CONVEYOR_ALLTOALL_COPY) or not measured, votes kNoLibrary, which keeps every
// rank on Conveyor's exchange. Every class is measured, the smallest too: which
// of the slots and the library's small call is faster differs from CPU to CPU
// (docs/results.md). A library trial is timed from the agreed vote on, as a
// call run ahead of the vote (alltoallw_ahead) runs it: without the hand-off.
// A vote also says whether the call is one of the sender's copy trials
// (kCopyTrial): a class's trials against the library wait until no rank is
// still timing its ways, so that the exchange is timed as it will run.
constexpr std::int32_t kNoLibrary = 0xFFFF;  // the class part's largest

// Ahead of the vote: after a call whose agreed class the measurement gave to the
// library, the next kAheadCalls calls on the communicator run the library's call
// at once (alltoallw_ahead), skipping the hand-off, which costs about what a
// small call of the library does. Every rank decides alike: each holds the same
// agreed classes and decisions, in the same call order. Then one call votes
// again, so a program whose sizes change is back on its class's choice within
// kAheadCalls + 1 calls; a call of another size among them runs the library's
// call, correct at every size, only perhaps slower.
constexpr unsigned kAheadCalls = 63;
constexpr std::int32_t kClassMask = 0xFFFF, kCopyTrial = 0x10000;

std::int32_t library_vote(const alltoall_state& state, bool has_library, int me) {
  if (!has_library || state.attach.rule != redistribute::detail::sender_rule::measured ||
      copy_measuring() == detail::measuring::off) {
    return kNoLibrary;
  }
  std::int64_t largest = 0;
  for (std::size_t q = 0; q < state.sbytes.size(); ++q) {
    if (static_cast<int>(q) != me) largest = std::max(largest, state.sbytes[q]);
  }
  return detail::size_class(static_cast<std::size_t>(largest));
}

// What a call of vote `cls` runs: its class's decision, else its next trial's
// candidate (`which`: its index, -1 when the call is not a trial).
alltoall_path library_choice(alltoall_state& state, std::int32_t cls, int& which) {
  which = -1;
  if (cls == kNoLibrary) return alltoall_path::conveyor;
  auto& classes = state.library_measured;
  if (classes.size() <= static_cast<std::size_t>(cls)) classes.resize(static_cast<std::size_t>(cls) + 1);
  auto& m = classes[static_cast<std::size_t>(cls)];
  if (m.count == 0) m.count = alltoall_candidates(false, m.candidates);
  if (m.decided != alltoall_path::automatic) return m.decided;
  which = detail::next_trial(m);
  return m.candidates[which];
}

// `start`: MPI_Wtime() when this rank began timing the call, or < 0 (not timed here).
void record_library_trial(alltoall_state& state, const detail::comm_context& ctx, std::int32_t cls, int which,
                          double start) {
  auto& m = state.library_measured[static_cast<std::size_t>(cls)];
  const double seconds = start < 0 ? 0 : MPI_Wtime() - start;
  detail::record_trial(m, cls, which, seconds, ctx.comm, [&](const double* agreed, int trials) {
    if (copy_measuring() != detail::measuring::traced || ctx.rank != 0) return;
    const int octave = cls / 2;
    const double from = static_cast<double>(std::int64_t{1} << octave) * (cls % 2 ? 1.5 : 1.0);
    std::fprintf(stderr,
                 "conveyor alltoallw auto: largest pair from %.0f B on %d ranks, %d trials each, median (spread) of "
                 "the slowest rank:",
                 from, ctx.size, trials);
    print_medians(m, agreed);
  });
}

// Every rank on one node: how this rank's pairs move in this call
// (alltoall_copy_choice.hpp); `trial`: the call is timed.
redistribute::detail::copy_rule sender_rule_of(alltoall_state& state, const std::vector<byte_map>& send_maps,
                                               const std::vector<byte_map>& recv_maps, bool in_place,
                                               const std::vector<std::int64_t>& sbytes, int me, bool& trial) {
  using redistribute::detail::copy_rule;
  using redistribute::detail::sender_rule;
  const redistribute::detail::attach_state& a = state.attach;
  switch (a.rule) {
    case sender_rule::attach:
      return copy_rule::attach_from_mid;
    case sender_rule::slots:
      return copy_rule::slots_then_messages;
    case sender_rule::messages:
      return copy_rule::messages_from_mid;
    case sender_rule::measured:
      break;
  }
  if (copy_measuring() == detail::measuring::off) return copy_rule::slots_then_attach;
  const auto slot = static_cast<std::int64_t>(state.shared->slot_bytes());
  bool mid = false, large = false;  // pairs the rules move differently
  for (std::size_t q = 0; q < sbytes.size(); ++q) {
    if (static_cast<int>(q) == me) continue;
    mid = mid || (sbytes[q] >= redistribute::detail::kMidMinBytes && sbytes[q] < slot);
    large = large || sbytes[q] >= slot;
  }
  if (!mid && !large) return copy_rule::slots_then_attach;  // every rule moves these pairs alike
  copy_rule rules[redistribute::detail::copy_choice::kMaxCandidates];
  const int count = redistribute::detail::distinct_rules(mid, large, a.usable, rules);
  if (count == 1) return rules[0];
  std::int64_t candidates[redistribute::detail::copy_choice::kMaxCandidates];
  for (int c = 0; c < count; ++c) candidates[c] = static_cast<std::int64_t>(rules[c]);
  const std::int64_t picked =
      state.copy.pick(redistribute::detail::plan_key(send_maps, recv_maps, in_place), candidates, count, trial);
  return static_cast<copy_rule>(picked);
}

void record_trial(alltoall_state& state, const detail::comm_context& ctx, double seconds) {
  if (!state.copy.record(seconds) || copy_measuring() != detail::measuring::traced || ctx.rank != 0) return;
  const auto& d = state.copy.last_decision();
  auto name = [](std::int64_t rule) {
    return redistribute::detail::name_of(static_cast<redistribute::detail::copy_rule>(rule));
  };
  std::fprintf(stderr, "conveyor alltoallw copy: a plan on %d ranks, median of rank 0's calls:", ctx.size);
  for (int c = 0; c < d.count; ++c) {
    std::fprintf(stderr, " %s %.2f us%s", name(d.candidates[static_cast<std::size_t>(c)]),
                 d.median[static_cast<std::size_t>(c)] * 1e6, c + 1 < d.count ? "," : "");
  }
  std::fprintf(stderr, " -> %s\n", name(d.chosen));
}

}  // namespace

// The byte-map form's steps (alltoall_typed.hpp's alltoallw_maps).
alltoallw_report alltoallw_moves(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                 const std::vector<byte_map>& recv_maps, MPI_Comm comm, bool validate,
                                 const redistribute::detail::typed_parts& typed, const std::function<void()>& library);

std::int64_t bytes_of(const byte_map& m) {
  std::int64_t b = 0;
  for (const byte_box& x : m) b += x.bytes();
  return b;
}

alltoallw_report alltoallw(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                           const std::vector<byte_map>& recv_maps, MPI_Comm comm, bool validate) {
  return redistribute::detail::alltoallw_maps(send, send_maps, recv, recv_maps, comm, validate, {}, {});
}

namespace {

alltoallw_report run_by_nodes(alltoall_state& state, detail::comm_context& ctx, const detail::node_layout& layout,
                              const void* send, const std::vector<byte_map>& send_maps, void* recv,
                              const std::vector<byte_map>& recv_maps) {
  if (!state.by_nodes) state.by_nodes = std::make_unique<redistribute::detail::by_nodes_exchange>();
  return state.by_nodes->run(ctx, layout, send, send_maps, recv, recv_maps);
}

// alltoallw_auto when the ranks span several nodes. No size is shared there
// for free (on one node the headers carry the vote), so a call votes with one
// MPI_Allreduce: the largest pair any rank sends another, and whether any rank
// has its ways forced (CONVEYOR_ALLTOALL_COPY: the pairwise exchange) or not
// measured (CONVEYOR_ALLTOALL_MEASURE=0: the cost model's choice of Conveyor's
// two for that pair size). Per agreed class, the first calls time the pairwise
// exchange, the library's call and the node-aware exchange, as alltoall_auto
// does: Conveyor's two with the vote, which each of their calls pays, the
// library's without it, as it runs after a call of a class decided for it: the
// next kAheadCalls calls run the library's call without a vote (alltoallw_ahead,
// before the call's parts are decoded), as on one node.
alltoallw_report alltoallw_across_nodes(alltoall_state& state, detail::comm_context& ctx,
                                        const detail::node_layout& layout, const void* send,
                                        const std::vector<byte_map>& send_maps, void* recv,
                                        const std::vector<byte_map>& recv_maps, MPI_Comm comm,
                                        const redistribute::detail::typed_parts& typed,
                                        const std::function<void()>& library) {
  const auto run = [&](alltoall_path path) {
    if (path == alltoall_path::by_nodes) return run_by_nodes(state, ctx, layout, send, send_maps, recv, recv_maps);
    if (path == alltoall_path::conveyor)
      return alltoallw_moves(send, send_maps, recv, recv_maps, comm, false, typed, {});
    library();
    alltoallw_report rep;
    rep.library = true;
    return rep;
  };
  prepare(state, ctx);  // (collective on the first call) the forced ways
  const int me = ctx.rank;
  std::int64_t vote[2] = {0, 0};  // the largest pair; 2: ways forced, 1: not measured
  for (std::size_t q = 0; q < send_maps.size(); ++q) {
    if (static_cast<int>(q) != me) vote[0] = std::max(vote[0], bytes_of(send_maps[q]));
  }
  if (state.attach.rule != redistribute::detail::sender_rule::measured) vote[1] = 2;
  else if (copy_measuring() == detail::measuring::off) vote[1] = 1;
  const double before_vote = MPI_Wtime();
  detail::check_mpi(PMPI_Allreduce(MPI_IN_PLACE, vote, 2, MPI_INT64_T, MPI_MAX, ctx.comm), "MPI_Allreduce");
  if (vote[1] == 2) return run(alltoall_path::conveyor);
  if (vote[1] == 1) {
    const auto predicted = redistribute::detail::predict_alltoall_paths(vote[0], ctx.size, layout.nodes,
                                                                        layout.max_local, current_cost_model());
    return run(redistribute::detail::alltoall_modeled_choice(predicted, true));
  }
  const int cls = detail::size_class(static_cast<std::size_t>(vote[0]));
  if (state.across_measured.size() <= static_cast<std::size_t>(cls)) {
    state.across_measured.resize(static_cast<std::size_t>(cls) + 1);
  }
  auto& m = state.across_measured[static_cast<std::size_t>(cls)];
  if (m.decided != alltoall_path::automatic) {
    if (m.decided == alltoall_path::mpi) state.library_ahead = kAheadCalls;
    return run(m.decided);
  }
  if (m.count == 0) m.count = alltoall_candidates(true, m.candidates);
  const int which = detail::next_trial(m);
  const double start = m.candidates[which] == alltoall_path::mpi ? MPI_Wtime() : before_vote;
  alltoallw_report rep = run(m.candidates[which]);
  detail::record_trial(m, cls, which, MPI_Wtime() - start, ctx.comm, [&](const double* agreed, int trials) {
    if (copy_measuring() != detail::measuring::traced || me != 0) return;
    std::fprintf(stderr,
                 "conveyor alltoallw auto: largest pair %lld B on %d ranks (%d nodes), %d trials each, median "
                 "(spread) of the slowest rank:",
                 static_cast<long long>(vote[0]), ctx.size, layout.nodes, trials);
    print_medians(m, agreed);
  });
  rep.library_trial = true;
  return rep;
}

}  // namespace

namespace redistribute::detail {
alltoallw_report alltoallw_maps(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                const std::vector<byte_map>& recv_maps, MPI_Comm comm, bool validate,
                                const typed_parts& typed, const std::function<void()>& library) {
  if (library && !validate && comm != MPI_COMM_NULL) {
    conveyor::detail::comm_context& ctx = conveyor::detail::context_for(comm);
    const conveyor::detail::node_layout& layout = ctx.layout(ctx.env_ranks_per_node);
    if (layout.nodes > 1 && send_maps.size() == static_cast<std::size_t>(ctx.size) &&
        recv_maps.size() == static_cast<std::size_t>(ctx.size)) {
      return alltoallw_across_nodes(ctx.state<alltoall_state>(kAlltoallSlot), ctx, layout, send, send_maps, recv,
                                    recv_maps, comm, typed, library);
    }
  }
  return alltoallw_moves(send, send_maps, recv, recv_maps, comm, validate, typed, library);
}
}  // namespace redistribute::detail

alltoallw_report alltoallw_moves(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                 const std::vector<byte_map>& recv_maps, MPI_Comm comm, bool validate,
                                 const redistribute::detail::typed_parts& typed, const std::function<void()>& library) {
  collective_call call("alltoallw", comm);
  detail::comm_context& ctx = detail::context_of(call);
  const int P = ctx.size, me = ctx.rank;
  const auto uP = static_cast<std::size_t>(P);
  auto& state = ctx.state<alltoall_state>(kAlltoallSlot);
  std::vector<std::int64_t>& sbytes = state.sbytes;
  std::vector<std::int64_t>& rbytes = state.rbytes;
  sbytes.assign(uP, 0), rbytes.assign(uP, 0);
  call.check([&] {
    if (send_maps.size() != uP || recv_maps.size() != uP) {
      throw error(errc::invalid_argument, "alltoallw: send_maps and recv_maps need one map per rank (" +
                                              std::to_string(P) + "), got " + std::to_string(send_maps.size()) +
                                              " and " + std::to_string(recv_maps.size()));
    }
    for (int q = 0; q < P; ++q) {
      const auto k = static_cast<std::size_t>(q);
      check_map(send_maps[k], "send", q);
      check_map(recv_maps[k], "receive", q);
      sbytes[k] = bytes_of(send_maps[k]);
      rbytes[k] = bytes_of(recv_maps[k]);
      const std::int64_t limit = static_cast<std::int64_t>(detail::kMaxMessageBytes) * kPiecesPerPackage;
      if (sbytes[k] > limit || rbytes[k] > limit) {
        throw error(errc::unsupported, "alltoallw: over 62 GiB to or from one rank");
      }
    }
    if (validate) check_no_overlap(recv_maps);
    const auto k = static_cast<std::size_t>(me);
    if (sbytes[k] != rbytes[k]) {
      throw error(errc::invalid_argument, "alltoallw: this rank sends itself " + std::to_string(sbytes[k]) +
                                              " bytes but receives " + std::to_string(rbytes[k]) + " from itself");
    }
  });
  call.agree_if(validate);

  prepare(state, ctx);
  const int tag0 = static_cast<int>(state.calls++ % kCallTags) * kTagsPerCall;
  const bool in_place = send == recv;
  const redistribute::detail::attach_state& attach = state.attach;
  shared_exchange* shared = attach.off ? nullptr : state.shared.get();
  alltoallw_report rep;
  rep.self_bytes = sbytes[static_cast<std::size_t>(me)];

  // How each pair moves. Every rank on one node (the shared slots): the sender
  // chooses, per plan by timing (alltoall_copy_choice.hpp), from how many bytes its
  // pairs are attached or sent as messages; smaller ones go through the slots; the
  // receiver follows the sender's header. Else both
  // sides decide alike from the pair's byte count (equal on both by MPI's matching
  // rule): from kAttachMinBytes by cross-memory attach within a node, else as MPI
  // messages. Messages go straight from / into the caller's buffer where a map is
  // one run (never sends in place: receives may land there first).
  // A rank whose own vote's class runs the library's call (decided or as a trial)
  // sends every pair as a message, packs and attaches nothing: if the agreed vote
  // runs the library nothing was spent; if not, its receivers take messages.
  bool copy_trial = false;
  redistribute::detail::copy_limits limits{};
  std::int32_t vote = kNoLibrary;
  alltoall_path intent = alltoall_path::conveyor;
  double start = -1;
  if (shared) {
    vote = library_vote(state, static_cast<bool>(library), me);
    int which = -1;
    intent = library_choice(state, vote, which);
    // A trial of the agreed class times the call from here on the ranks whose own
    // class is undecided: the rank that voted the agreed class is one of them, and
    // the others record 0, which the slowest rank's median (the decision's) passes
    // over. Not on every call: a clock read is a measurable part of a small call.
    if (which >= 0) start = MPI_Wtime();
    if (intent == alltoall_path::mpi) {
      limits = {INT64_MAX, 0};
    } else {
      const auto rule = sender_rule_of(state, send_maps, recv_maps, in_place, sbytes, me, copy_trial);
      limits = redistribute::detail::limits_of(rule, static_cast<std::int64_t>(shared->slot_bytes()));
      if (copy_trial) vote |= kCopyTrial;
    }
  }
  const double copy_start = copy_trial ? MPI_Wtime() : 0;
  // A message of the caller's own types where it has them (one node: the
  // receiver follows the header; one message of at most kMaxMessageBytes).
  auto message = [&](int q, std::int64_t bytes) {
    if (!typed.send || in_place || bytes > static_cast<std::int64_t>(detail::kMaxMessageBytes)) return way::message;
    return (*typed.send)[static_cast<std::size_t>(q)].count <= INT_MAX ? way::typed : way::message;
  };
  auto how = [&](int q, std::int64_t bytes) {
    if (shared) {
      if (attach.usable && bytes >= limits.attach_from) return way::attach;
      if (bytes >= limits.message_from) return message(q, bytes);
      return bytes < static_cast<std::int64_t>(shared->slot_bytes()) ? way::shared : message(q, bytes);
    }
    const bool node_peer = attach.node[static_cast<std::size_t>(q)] == attach.node[static_cast<std::size_t>(me)];
    if (attach.usable && node_peer && bytes >= redistribute::detail::kAttachMinBytes) return way::attach;
    return way::message;
  };
  std::vector<pair_plan>& pairs = state.pairs;
  pairs.assign(uP, pair_plan{});
  std::int64_t stotal = 0, rtotal = 0;
  auto plan_receive = [&](int q) {  // once the pair's way is known
    pair_plan& pp = pairs[static_cast<std::size_t>(q)];
    if (!pp.rbytes || pp.failed) return;
    if (pp.recv == way::typed && typed.recv && (*typed.recv)[static_cast<std::size_t>(q)].count <= INT_MAX) {
      pp.rtyped = true;  // into the caller's buffer with its type
    } else if (pp.recv == way::message || pp.recv == way::typed) {
      pp.rdirect = single_run(recv_maps[static_cast<std::size_t>(q)], recv);
      if (!pp.rdirect) pp.roff = rtotal, rtotal += pp.rbytes;
    }
  };
  for (int i = 1; i < P; ++i) {
    const auto q = static_cast<std::size_t>((me + i) % P);
    pair_plan& pp = pairs[q];
    pp.sbytes = sbytes[q], pp.rbytes = rbytes[q];
    pp.send = how(static_cast<int>(q), pp.sbytes);
    if (pp.sbytes) ++rep.send_peers, rep.sent_bytes += pp.sbytes;
    if (pp.rbytes) ++rep.recv_peers, rep.received_bytes += pp.rbytes;
    // Package space: messages not straight from the caller, attached sends in place
    // or of short rows (read as one run).
    if (pp.sbytes && pp.send == way::message) {
      if (!in_place) pp.sdirect = single_run(send_maps[q], send);
      pp.spacked = !pp.sdirect;
    }
    if (pp.sbytes && pp.send == way::attach) {
      pp.spacked = in_place || redistribute::detail::pack_before_attach(send_maps[q], send);
    }
    if (pp.spacked) pp.soff = stotal, stotal += pp.sbytes;
    if (!shared) {
      pp.recv = how(static_cast<int>(q), pp.rbytes);
      plan_receive(static_cast<int>(q));
    }
  }
  state.send_packages.resize(static_cast<std::size_t>(stotal));
  char* sbuf = state.send_packages.data();

  std::string problem;
  auto mismatch = [&](int q, std::int64_t sent, std::int64_t expected) {
    if (!problem.empty()) return;
    problem = "alltoallw: rank " + std::to_string(q) + " sent " + std::to_string(sent) +
              " bytes where this rank expects " + std::to_string(expected) + " (type signatures that do not match)";
  };
  auto pack_peer = [&](int q) {
    const auto k = static_cast<std::size_t>(q);
    const pair_plan& pp = pairs[k];
    if (pp.spacked) pack(send_maps[k], send, sbuf + pp.soff);
  };
  auto pack_in_place = [&] {  // every package packed before anything can arrive
    if (in_place) {
      for (int i = 1; i < P; ++i) pack_peer((me + i) % P);
    }
  };
  if (intent == alltoall_path::conveyor) pack_in_place();
  auto& rreq = state.rreq;
  auto& sreq = state.sreq;
  auto& rowner = state.rowner;
  auto& rpiece = state.rpiece;
  rreq.clear(), sreq.clear(), rowner.clear(), rpiece.clear();
  // An attached pair: the rows' absolute addresses (the packed copy's when in
  // place, where the receive buffer changes while the peer reads, or when the
  // rows are short), and a done to wait for.
  auto& descriptors = state.descriptors;
  descriptors.resize(uP);
  auto reply_done = [&](int q) {
    MPI_Request r;
    detail::check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, q, tag0 + kDoneTag, ctx.comm, &r), "MPI_Isend");
    sreq.push_back(r);
  };
  // An attached pair's descriptor from `q` (sent at the start of its call), into state.remote.
  auto take_descriptor = [&](int q) {
    MPI_Message msg;
    MPI_Status st;
    detail::check_mpi(MPI_Mprobe(q, tag0 + kDescriptorTag, ctx.comm, &msg, &st), "MPI_Mprobe");
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    state.remote.resize(static_cast<std::size_t>(n) / sizeof(byte_box));
    detail::check_mpi(MPI_Mrecv(state.remote.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
  };
  auto send_peer = [&](int q) {
    const auto k = static_cast<std::size_t>(q);
    const pair_plan& pp = pairs[k];
    if (!pp.sbytes || pp.send == way::shared) return;
    MPI_Request r;
    if (pp.send == way::attach) {
      byte_map& d = descriptors[k];
      if (pp.spacked) d.assign(1, byte_box{reinterpret_cast<std::intptr_t>(sbuf + pp.soff), pp.sbytes, 0, {}, {}});
      else d = redistribute::detail::attach_descriptor(send_maps[k], send);
      detail::check_mpi(MPI_Isend(d.data(), static_cast<int>(d.size() * sizeof(byte_box)), MPI_BYTE, q,
                                  tag0 + kDescriptorTag, ctx.comm, &r),
                        "MPI_Isend");
      sreq.push_back(r);
      detail::check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, q, tag0 + kDoneTag, ctx.comm, &r), "MPI_Irecv");
      sreq.push_back(r);
      return;
    }
    if (pp.send == way::typed) {  // one message, the piece-0 tag
      const datatype_part& part = (*typed.send)[k];
      detail::check_mpi(MPI_Isend(static_cast<const char*>(send) + part.displ, static_cast<int>(part.count), part.type,
                                  q, tag0, ctx.comm, &r),
                        "MPI_Isend");
      sreq.push_back(r);
      return;
    }
    char* buf = pp.sdirect ? pp.sdirect : sbuf + pp.soff;
    detail::for_each_piece(static_cast<std::size_t>(pp.sbytes), [&](std::size_t off, int n, int piece) {
      detail::check_mpi(MPI_Isend(buf + off, n, MPI_BYTE, q, tag0 + piece, ctx.comm, &r), "MPI_Isend");
      sreq.push_back(r);
    });
  };
  // The shared slots: every small package written (in place: read from the
  // receive buffer before anything lands there), and a header for every peer;
  // then each peer's header, which says how its package to this rank moves (a
  // count that differs from this rank's is an error; what the sender waits for is
  // answered below, after this rank's own sends are out).
  std::int32_t agreed_vote = vote & kClassMask;  // with `shared`: the largest of every rank's
  bool copy_trials = (vote & kCopyTrial) != 0;   // some rank's copy trial
  int library_trial = -1;                        // the agreed class's trial candidate, when the call is one
  if (shared) {
    shared->begin();
    for (int i = 1; i < P; ++i) {
      const int q = (me + i) % P;
      const pair_plan& pp = pairs[static_cast<std::size_t>(q)];
      if (pp.send == way::shared && pp.sbytes) pack(send_maps[static_cast<std::size_t>(q)], send, shared->slot(me, q));
      shared->post(q, pp.send, pp.sbytes, vote);
    }
    // Attached pairs' descriptors out now, so the peers can read while this rank
    // copies its own part and waits for their headers.
    for (int i = 1; i < P; ++i) {
      const int q = (me + i) % P;
      pair_plan& pp = pairs[static_cast<std::size_t>(q)];
      if (pp.send != way::attach || !pp.sbytes) continue;
      if (!in_place) pack_peer(q);
      send_peer(q);
      pp.sent = true;
    }
    // This rank's own part while the peers write theirs (every read of the
    // receive buffer in place is done: the packages are packed).
    if (intent == alltoall_path::conveyor) {
      copy_self(send_maps[static_cast<std::size_t>(me)], send, recv_maps[static_cast<std::size_t>(me)], recv);
    }
    for (int i = 1; i < P; ++i) {
      const int q = (me - i + P) % P;
      pair_plan& pp = pairs[static_cast<std::size_t>(q)];
      shared->wait_from(q);
      const shared_exchange::header& h = shared->head(q, me);
      agreed_vote = std::max(agreed_vote, h.vote & kClassMask);
      copy_trials = copy_trials || (h.vote & kCopyTrial);
      pp.recv = h.how;
      if (h.bytes != pp.rbytes) {
        mismatch(q, h.bytes, pp.rbytes);
        pp.failed = true;
      }
      plan_receive(q);
    }
    // Every rank holds the same agreed vote: the library's call runs on all or none.
    int which = -1;
    alltoall_path action = library_choice(state, agreed_vote, which);
    if (which >= 0 && copy_trials) action = alltoall_path::conveyor, which = -1;  // the trial waits
    state.library_ahead = action == alltoall_path::mpi && which < 0 ? kAheadCalls : 0;
    if (action == alltoall_path::mpi) {
      // What the peers sent ahead is answered first: each attached pair's descriptor taken, and its done.
      for (int i = 1; i < P; ++i) {
        const int q = (me - i + P) % P;
        const shared_exchange::header& h = shared->head(q, me);
        if (h.how != way::attach || !h.bytes) continue;
        take_descriptor(q);
        reply_done(q);
      }
      const int rc = MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE);
      if (start >= 0) start = MPI_Wtime();  // a trial times the library's call alone
      std::exception_ptr failed;
      try {
        library();
      } catch (...) {
        failed = std::current_exception();
      }
      if (which >= 0) record_library_trial(state, ctx, agreed_vote, which, start);  // on every rank alike
      if (failed) std::rethrow_exception(failed);
      detail::check_mpi(rc, "MPI_Waitall");
      if (!problem.empty()) throw error(errc::invalid_argument, problem);
      rep.library = true, rep.library_trial = which >= 0;
      return rep;
    }
    library_trial = which;
    if (intent == alltoall_path::mpi) {  // this rank's steps skipped for the library, taken now
      pack_in_place();
      copy_self(send_maps[static_cast<std::size_t>(me)], send, recv_maps[static_cast<std::size_t>(me)], recv);
    }
  }
  rep.copy_trial = copy_trial;
  rep.library_trial = library_trial >= 0;
  for (const pair_plan& pp : pairs) {
    rep.attached_peers += pp.recv == way::attach && pp.rbytes && !pp.failed;
    rep.typed_peers += pp.rtyped;
    rep.packed_for_peers += pp.send == way::attach && pp.sbytes && pp.spacked && !in_place;
  }
  state.recv_packages.resize(static_cast<std::size_t>(rtotal));
  char* rbuf = state.recv_packages.data();

  for (int i = 1; i < P; ++i) {  // receives first, so no package waits unexpected
    const int q = (me - i + P) % P;
    pair_plan& pp = pairs[static_cast<std::size_t>(q)];
    if (!pp.rbytes || (pp.recv != way::message && pp.recv != way::typed) || pp.failed) continue;
    if (pp.rtyped) {
      const datatype_part& part = (*typed.recv)[static_cast<std::size_t>(q)];
      MPI_Request r;
      detail::check_mpi(MPI_Irecv(static_cast<char*>(recv) + part.displ, static_cast<int>(part.count), part.type, q,
                                  tag0, ctx.comm, &r),
                        "MPI_Irecv");
      rreq.push_back(r), rowner.push_back(q), rpiece.push_back(static_cast<int>(pp.rbytes));
      pp.pieces_left = 1;
      continue;
    }
    char* buf = pp.rdirect ? pp.rdirect : rbuf + pp.roff;
    detail::for_each_piece(static_cast<std::size_t>(pp.rbytes), [&](std::size_t off, int n, int piece) {
      MPI_Request r;
      detail::check_mpi(MPI_Irecv(buf + off, n, MPI_BYTE, q, tag0 + piece, ctx.comm, &r), "MPI_Irecv");
      rreq.push_back(r), rowner.push_back(q), rpiece.push_back(n);
      ++pp.pieces_left;
    });
  }
  for (int i = 1; i < P; ++i) {
    const int q = (me + i) % P;
    if (pairs[static_cast<std::size_t>(q)].sent) continue;
    if (!in_place) pack_peer(q);  // each package leaves as soon as it is packed
    send_peer(q);
  }
  if (!shared) copy_self(send_maps[static_cast<std::size_t>(me)], send, recv_maps[static_cast<std::size_t>(me)], recv);

  // Every request completes before this returns, even after an error: a receive
  // left posted could write into the caller's buffer after the call.
  // The slots' packages unpacked; where a count did not match, what the sender
  // waits for answered instead (a done to a reader; its message drained).
  if (shared) {
    for (int i = 1; i < P; ++i) {
      const int q = (me - i + P) % P;
      const pair_plan& pp = pairs[static_cast<std::size_t>(q)];
      const shared_exchange::header& h = shared->head(q, me);
      if (!pp.failed) {
        if (h.how == way::shared && h.bytes) unpack(shared->slot(q, me), recv_maps[static_cast<std::size_t>(q)], recv);
        continue;
      }
      if (h.how == way::attach) reply_done(q);
      if (h.how == way::message || h.how == way::typed) {
        detail::for_each_piece(static_cast<std::size_t>(h.bytes), [&](std::size_t, int, int piece) {
          MPI_Message msg;
          MPI_Status st;
          int n = 0;
          detail::check_mpi(MPI_Mprobe(q, tag0 + piece, ctx.comm, &msg, &st), "MPI_Mprobe");
          MPI_Get_count(&st, MPI_BYTE, &n);
          std::vector<char> sink(static_cast<std::size_t>(n));
          detail::check_mpi(MPI_Mrecv(sink.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
        });
      }
    }
  }
  // Attached pairs: the peer's descriptor (sent at the start of its call), one
  // read, then done (also after a failure: the peer waits for it).
  for (int i = 1; i < P; ++i) {
    const int q = (me - i + P) % P;
    const auto k = static_cast<std::size_t>(q);
    const pair_plan& pp = pairs[k];
    if (!pp.rbytes || pp.recv != way::attach || pp.failed) continue;
    take_descriptor(q);
    byte_map& remote = state.remote;
    const std::int64_t has = bytes_of(remote);
    if (has != pp.rbytes) {
      mismatch(q, has, pp.rbytes);
    } else {
      bool node_memory = false;
      if (const int err = redistribute::detail::read_attached(attach.pid[k], remote, recv_maps[k], recv, has,
                                                              state.mapped, node_memory)) {
        if (problem.empty()) {
          problem = "alltoallw: reading rank " + std::to_string(q) +
                    "'s rows (process_vm_readv) failed: " + std::strerror(err);
        }
      }
      rep.node_memory_peers += node_memory;
    }
    reply_done(q);
  }
  state.mapped.call_done();
  int mpi_error = MPI_SUCCESS;
  for (std::size_t done = 0; done < rreq.size(); ++done) {
    int idx = MPI_UNDEFINED;
    MPI_Status st;
    const int rc = MPI_Waitany(static_cast<int>(rreq.size()), rreq.data(), &idx, &st);
    if (idx == MPI_UNDEFINED) {
      if (rc != MPI_SUCCESS) mpi_error = rc;
      break;  // every request is complete (cancelled ones included)
    }
    const auto i = static_cast<std::size_t>(idx);
    const int q = rowner[i];
    pair_plan& pp = pairs[static_cast<std::size_t>(q)];
    int got = 0;
    if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_BYTE, &got);
    if (rc != MPI_SUCCESS || got != rpiece[i]) {
      if (rc == MPI_SUCCESS) mismatch(q, got, rpiece[i]);
      else if (problem.empty())
        problem = "alltoallw: rank " + std::to_string(q) +
                  " sent more bytes than this rank expects (type signatures that do not match)";
      pp.failed = true;
      continue;
    }
    if (--pp.pieces_left == 0 && !pp.rdirect && !pp.rtyped && !pp.failed)
      unpack(rbuf + pp.roff, recv_maps[static_cast<std::size_t>(q)], recv);
  }
  const int rc = MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE);
  if (copy_trial) record_trial(state, ctx, MPI_Wtime() - copy_start);
  if (library_trial >= 0) record_library_trial(state, ctx, agreed_vote, library_trial, start);
  auto outcome = [&] {
    if (mpi_error != MPI_SUCCESS) detail::check_mpi(mpi_error, "MPI_Waitany");
    if (!problem.empty()) throw error(errc::invalid_argument, problem);
    detail::check_mpi(rc, "MPI_Waitall");
  };
  if (validate) {  // the lowest failing rank's error, on every rank
    collective_call after("alltoallw", comm);
    after.check(outcome);
    after.agree();
  } else {
    outcome();
  }
  return rep;
}

namespace {

// The contiguous maps of `bytes` per peer (part q at q * bytes), kept for the last size.
const std::vector<byte_map>& even_maps(alltoall_state& state, int P, std::int64_t bytes) {
  if (state.even_bytes != bytes || state.even_maps.size() != static_cast<std::size_t>(P)) {
    state.even_maps.assign(static_cast<std::size_t>(P), {});
    for (int q = 0; q < P; ++q) {
      if (bytes) state.even_maps[static_cast<std::size_t>(q)] = {byte_box{q * bytes, bytes, 0, {}, {}}};
    }
    state.even_bytes = bytes;
  }
  return state.even_maps;
}

alltoallw_report run_by_nodes(alltoall_state& state, detail::comm_context& ctx, const detail::node_layout& layout,
                              const void* send, void* recv, std::int64_t bytes) {
  if (!state.by_nodes) state.by_nodes = std::make_unique<redistribute::detail::by_nodes_exchange>();
  return state.by_nodes->run(ctx, layout, send, recv, bytes);
}

}  // namespace

alltoallw_report redistribute::detail::alltoall_pairwise(const void* send, void* recv, std::int64_t bytes,
                                                         MPI_Comm comm) {
  if (bytes < 0) throw error(errc::invalid_argument, "alltoall: negative bytes per peer");
  conveyor::detail::comm_context& ctx = conveyor::detail::context_for(comm);
  const std::vector<byte_map>& maps = even_maps(ctx.state<alltoall_state>(kAlltoallSlot), ctx.size, bytes);
  return alltoallw(send == MPI_IN_PLACE ? recv : send, maps, recv, maps, comm);
}

alltoallw_report alltoall_by_nodes(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm) {
  if (bytes < 0) throw error(errc::invalid_argument, "alltoall_by_nodes: negative bytes per peer");
  detail::comm_context& ctx = detail::context_for(comm);
  auto& state = ctx.state<alltoall_state>(kAlltoallSlot);
  const detail::node_layout& layout = ctx.layout(ctx.env_ranks_per_node);
  if (send == MPI_IN_PLACE) send = recv;
  if (layout.nodes == 1 || bytes == 0) {
    const std::vector<byte_map>& maps = even_maps(state, ctx.size, bytes);
    return alltoallw(send, maps, recv, maps, comm);
  }
  return run_by_nodes(state, ctx, layout, send, recv, bytes);
}

alltoallw_report alltoallw_by_nodes(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                    const std::vector<byte_map>& recv_maps, MPI_Comm comm) {
  detail::comm_context& ctx = detail::context_for(comm);
  const detail::node_layout& layout = ctx.layout(ctx.env_ranks_per_node);
  if (send == MPI_IN_PLACE) send = recv;
  const auto uP = static_cast<std::size_t>(ctx.size);
  if (layout.nodes == 1 || send_maps.size() != uP || recv_maps.size() != uP) {
    return alltoallw(send, send_maps, recv, recv_maps, comm);  // (which reports maps of the wrong count)
  }
  return run_by_nodes(ctx.state<alltoall_state>(kAlltoallSlot), ctx, layout, send, send_maps, recv, recv_maps);
}

bool alltoallw_ahead(MPI_Comm comm) {
  auto& state = detail::context_for(comm).state<alltoall_state>(kAlltoallSlot);
  if (state.library_ahead == 0) return false;
  --state.library_ahead;
  return true;
}

namespace {
// This thread's last alltoall_auto call whose class had been decided for the
// library: a loop repeating it skips the lookups (context, class, maps) and runs
// the library's call at once. The context generation changes whenever a
// communicator's context is freed (its handle may be reused).
struct library_decided {
  MPI_Comm comm = MPI_COMM_NULL;
  std::int64_t bytes = -1;
  std::uint64_t generation = 0;
};
thread_local library_decided t_library_decided;
}  // namespace

alltoall_auto_report alltoall_auto(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm,
                                   const std::function<void(const void* in, void* out)>& library) {
  static const detail::measuring measuring = detail::measuring_setting("CONVEYOR_ALLTOALL_MEASURE");
  alltoall_auto_report rep;
  if (bytes < 0) throw error(errc::invalid_argument, "alltoall: negative bytes per peer");
  const library_decided& last = t_library_decided;
  if (comm == last.comm && bytes == last.bytes && last.generation == detail::context_generation() &&
      comm != MPI_COMM_NULL) {
    const void* in = send == MPI_IN_PLACE ? recv : send;
    library(in == recv ? MPI_IN_PLACE : in, recv);
    rep.library = true;
    return rep;
  }
  detail::comm_context* ctx = &detail::context_for(comm);  // alltoallw below makes the collective call
  auto& state = ctx->state<alltoall_state>(kAlltoallSlot);
  const int P = ctx->size;
  const detail::node_layout& layout = ctx->layout(ctx->env_ranks_per_node);
  const bool several_nodes = layout.nodes > 1;
  // (the library's call is the caller's: libconveyor_mpi's PMPI call on its own arguments)
  const auto run = [&](alltoall_path path, const void* in, void* out) {
    if (in == MPI_IN_PLACE) in = out;
    rep.by_nodes = path == alltoall_path::by_nodes;
    if (path == alltoall_path::mpi) library(in == out ? MPI_IN_PLACE : in, out);
    else rep.exchange = redistribute::detail::alltoall_row_of(path).info.run(in, out, bytes, comm);
  };
  if (P == 1 || bytes == 0) {
    run(alltoall_path::conveyor, send, recv);
    return rep;
  }
  if (measuring == detail::measuring::off) {  // the cost model chooses between Conveyor's two
    const auto predicted =
        redistribute::detail::predict_alltoall_paths(bytes, P, layout.nodes, layout.max_local, current_cost_model());
    run(redistribute::detail::alltoall_modeled_choice(predicted, several_nodes), send, recv);
    return rep;
  }
  const int cls = detail::size_class(static_cast<std::size_t>(bytes));
  if (state.measured.size() <= static_cast<std::size_t>(cls)) state.measured.resize(static_cast<std::size_t>(cls) + 1);
  auto& m = state.measured[static_cast<std::size_t>(cls)];
  if (m.decided == alltoall_path::automatic) {
    if (m.count == 0) m.count = alltoall_candidates(several_nodes, m.candidates);
    const alltoall_path trial = detail::run_next_trial(
        m, cls, send, recv, static_cast<std::size_t>(bytes) * static_cast<std::size_t>(P), state.trial_out, run,
        ctx->comm, [&](const double* agreed, int trials) {
          if (measuring != detail::measuring::traced || ctx->rank != 0) return;
          std::fprintf(stderr,
                       "conveyor alltoall auto: %lld B per peer on %d ranks (%d nodes), %d trials each, median "
                       "(spread) of the slowest rank:",
                       static_cast<long long>(bytes), P, layout.nodes, trials);
          print_medians(m, agreed);
        });
    rep.trial = true;
    rep.library = trial == alltoall_path::mpi;
    return rep;
  }
  rep.library = m.decided == alltoall_path::mpi;
  if (rep.library) t_library_decided = {comm, bytes, detail::context_generation()};
  run(m.decided, send, recv);
  return rep;
}

std::array<double, 2> predict_alltoall(std::int64_t bytes, MPI_Comm comm) {
  detail::comm_context& ctx = detail::context_for(comm);
  const detail::node_layout& l = ctx.layout(ctx.env_ranks_per_node);
  return redistribute::detail::predict_alltoall_paths(bytes, ctx.size, l.nodes, l.max_local, current_cost_model());
}

std::array<double, 2> predict_alltoall(std::int64_t bytes, int nodes, int ranks_per_node, const cost_model& model) {
  if (nodes < 1 || ranks_per_node < 1)
    throw error(errc::invalid_argument, "predict_alltoall: nodes and ranks per node must be >= 1");
  return redistribute::detail::predict_alltoall_paths(bytes, nodes * ranks_per_node, nodes, ranks_per_node, model);
}

int alltoall_nodes(MPI_Comm comm) {
  detail::comm_context& ctx = detail::context_for(comm);
  auto& state = ctx.state<alltoall_state>(kAlltoallSlot);
  if (state.nodes == 0) state.nodes = ctx.layout(ctx.env_ranks_per_node).nodes;
  return state.nodes;
}

std::string alltoall_copy_path(MPI_Comm comm) {
  collective_call call("alltoall_copy_path", comm);
  detail::comm_context& ctx = detail::context_of(call);
  call.agree_if(false);
  auto& state = ctx.state<alltoall_state>(kAlltoallSlot);
  prepare(state, ctx);
  return state.attach.verdict;
}

}  // namespace conveyor
