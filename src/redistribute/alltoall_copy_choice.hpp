// SPDX-License-Identifier: BSD-3-Clause
// Internal: per plan, how a sender moves its pairs within one node, chosen by
// timing (redistribute/alltoall.cpp). Where every rank of the communicator is on
// one node, each sender decides how each of its pairs moves and writes it in the
// pair's header of the shared segment (alltoall_shared.hpp); the receiver reads
// the header before it posts anything for that pair and follows it. So a sender
// may change its mind from one call to the next without asking anyone, and two
// ranks may choose differently.
//
// Candidates (copy_rule), by how they move a pair of "mid" size (from
// kMidMinBytes = 8 KiB to the slot size) and a "large" one (from the slot size):
//   - slots_then_attach (the default, the rule before measuring): mid through the
//     slots (two copies), large read by the receiver (cross-memory attach);
//   - attach_from_mid: both attached (one copy, at the price of a descriptor, a
//     read call and a done per pair);
//   - slots_then_messages: mid through the slots, large as MPI messages (the
//     library's own transfer: of the caller's datatypes where alltoallw's datatype
//     form passed them, alltoall_typed.hpp, else of the package, straight from /
//     into the caller's buffer where a part is one run);
//   - messages_from_mid: both as MPI messages.
// Only rules that move some pair of the plan differently are timed (without
// attach, the first two are the third); with one left nothing is.
// A plan: this rank's maps of a call (both sides, every peer, in place or not),
// hashed; the repeated call of an FFT or a tensor code is one plan. Up to kPlans
// are kept per communicator, the least recently used replaced.
// Trials: one untimed round, then kTimedRounds rounds of every candidate, forward
// and backward, each call timed whole on this rank; the default stays unless
// another's median is kMargin faster. So 6 calls per candidate (at most 24),
// then a lookup.
// Limits: the time is this rank's own call, so ranks may decide differently (each
// is still right: the receiver follows); a plan whose maps change every call
// (types staged through MPI's packing, MPI_BOTTOM with moving buffers) never
// finishes its trials and runs the candidates in turn.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "conveyor/alltoall.hpp"

namespace conveyor::redistribute::detail {

/// The smallest pair the rules move differently: below it every rule uses the
/// slots. 8 KiB, not kAttachMinBytes' 32: pairs just above 8 KiB through the
/// slots (two copies) were measured slower than the library's single-copy
/// transfer (docs/results.md, "The all-to-all family").
inline constexpr std::int64_t kMidMinBytes = std::int64_t{8} << 10;

/// How a sender on one node moves its pairs (the candidates above).
enum class copy_rule : std::int64_t { slots_then_attach, attach_from_mid, slots_then_messages, messages_from_mid };

/// A rule as byte limits: a pair of at least attach_from bytes is attached (where
/// attach works), else from message_from (or the slot size) a message, else
/// through the slots.
struct copy_limits {
  std::int64_t attach_from, message_from;
};
copy_limits limits_of(copy_rule rule, std::int64_t slot_bytes);
const char* name_of(copy_rule rule);

/// The rules that move a sender's pairs differently, default first, into `out`
/// (room for 4); `mid` / `large`: it has pairs of those sizes. Returns how many.
int distinct_rules(bool mid, bool large, bool attach_usable, copy_rule* out);

/// The key of a call's plan on this rank.
std::uint64_t plan_key(const std::vector<byte_map>& send_maps, const std::vector<byte_map>& recv_maps, bool in_place);

class copy_choice {
 public:
  static constexpr int kPlans = 64;
  static constexpr int kMaxCandidates = 4;
  static constexpr int kTimedRounds = 5;
  static constexpr double kMargin = 0.03;

  /// A decided plan, for the trace.
  struct decision {
    int count = 0;
    std::array<std::int64_t, kMaxCandidates> candidates{};
    std::array<double, kMaxCandidates> median{};
    std::int64_t chosen = 0;
  };

  /// The candidate (a copy_rule) for a call of plan `key`, whose distinct candidates are
  /// candidates[0..count) ([0]: the default; the same list every time for a key).
  /// `trial`: the call is one of the plan's trials; time it and pass the seconds
  /// to record().
  std::int64_t pick(std::uint64_t key, const std::int64_t* candidates, int count, bool& trial);
  /// The seconds of the trial call pick() returned last. True when this decided
  /// its plan (last_decision() says how).
  bool record(double seconds);
  const decision& last_decision() const { return last_; }

 private:
  struct plan {
    std::uint64_t key = 0, last_use = 0;
    int count = 0, taken = 0;
    std::array<std::int64_t, kMaxCandidates> candidates{};
    std::array<std::array<double, kTimedRounds>, kMaxCandidates> seconds{};
    bool decided = false;
    std::int64_t chosen = 0;
  };
  std::vector<plan> plans_;
  std::uint64_t uses_ = 0;
  int current_ = -1, which_ = 0;  // the plan and candidate of the last trial pick
  decision last_;
};

}  // namespace conveyor::redistribute::detail
