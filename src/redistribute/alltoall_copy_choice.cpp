// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute/alltoall_copy_choice.hpp"

#include <algorithm>
#include <climits>
#include <utility>

#include "redistribute/alltoall_attach.hpp"

namespace conveyor::redistribute::detail {
namespace {

// One 64-bit word into the hash (a multiply-xorshift mix: every input bit
// reaches every output bit; a collision only shares a plan's trials).
void mix(std::uint64_t& h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
}

void mix_maps(std::uint64_t& h, const std::vector<byte_map>& maps) {
  mix(h, maps.size());
  for (const byte_map& m : maps) {
    mix(h, m.size());
    for (const byte_box& b : m) {
      mix(h, static_cast<std::uint64_t>(b.offset));
      mix(h, static_cast<std::uint64_t>(b.run));
      mix(h, static_cast<std::uint64_t>(b.axes));
      for (int k = 0; k < b.axes; ++k) {
        mix(h, static_cast<std::uint64_t>(b.count[static_cast<std::size_t>(k)]));
        mix(h, static_cast<std::uint64_t>(b.stride[static_cast<std::size_t>(k)]));
      }
    }
  }
}

}  // namespace

copy_limits limits_of(copy_rule rule, std::int64_t slot_bytes) {
  constexpr std::int64_t never = INT64_MAX;
  switch (rule) {
    case copy_rule::attach_from_mid:
      return {kMidMinBytes, never};
    case copy_rule::slots_then_messages:
      return {never, never};
    case copy_rule::messages_from_mid:
      return {never, kMidMinBytes};
    case copy_rule::slots_then_attach:
      break;
  }
  return {slot_bytes, never};
}

const char* name_of(copy_rule rule) {
  switch (rule) {
    case copy_rule::attach_from_mid:
      return "attach from 8 KiB";
    case copy_rule::slots_then_messages:
      return "slots then messages";
    case copy_rule::messages_from_mid:
      return "messages from 8 KiB";
    case copy_rule::slots_then_attach:
      break;
  }
  return "slots then attach";
}

int distinct_rules(bool mid, bool large, bool attach_usable, copy_rule* out) {
  // Each rule's way for a mid pair and a large one: 0 slots, 1 attach, 2 message.
  auto ways = [&](copy_rule r) {
    const int a = attach_usable ? 1 : 2;
    switch (r) {
      case copy_rule::attach_from_mid:
        return std::pair{attach_usable ? 1 : 0, a};
      case copy_rule::slots_then_messages:
        return std::pair{0, 2};
      case copy_rule::messages_from_mid:
        return std::pair{2, 2};
      case copy_rule::slots_then_attach:
        break;
    }
    return std::pair{0, a};
  };
  int n = 0;
  std::pair<int, int> seen[4];
  for (copy_rule r : {copy_rule::slots_then_attach, copy_rule::attach_from_mid, copy_rule::slots_then_messages,
                      copy_rule::messages_from_mid}) {
    auto w = ways(r);
    if (!mid) w.first = -1;
    if (!large) w.second = -1;
    if (std::find(seen, seen + n, w) != seen + n) continue;
    seen[n] = w, out[n++] = r;
  }
  return n;
}

std::uint64_t plan_key(const std::vector<byte_map>& send_maps, const std::vector<byte_map>& recv_maps, bool in_place) {
  std::uint64_t h = in_place ? 1 : 2;
  mix_maps(h, send_maps);
  mix_maps(h, recv_maps);
  return h;
}

std::int64_t copy_choice::pick(std::uint64_t key, const std::int64_t* candidates, int count, bool& trial) {
  count = std::clamp(count, 1, kMaxCandidates);
  auto it = std::find_if(plans_.begin(), plans_.end(), [&](const plan& p) { return p.key == key; });
  if (it == plans_.end()) {
    if (plans_.size() < static_cast<std::size_t>(kPlans)) {
      plans_.emplace_back();
      it = plans_.end() - 1;
    } else {
      it = std::min_element(plans_.begin(), plans_.end(),
                            [](const plan& a, const plan& b) { return a.last_use < b.last_use; });
    }
    *it = plan{};
    it->key = key;
    it->count = count;
    std::copy(candidates, candidates + count, it->candidates.begin());
    it->decided = count == 1;
    it->chosen = candidates[0];
  }
  plan& p = *it;
  p.last_use = ++uses_;
  trial = !p.decided;
  if (p.decided) return p.chosen;
  // Round r runs every candidate once, forward in even rounds, backward in odd ones.
  const int round = p.taken / p.count, position = p.taken % p.count;
  which_ = round % 2 == 0 ? position : p.count - 1 - position;
  current_ = static_cast<int>(it - plans_.begin());
  return p.candidates[static_cast<std::size_t>(which_)];
}

bool copy_choice::record(double seconds) {
  if (current_ < 0) return false;
  plan& p = plans_[static_cast<std::size_t>(current_)];
  current_ = -1;
  if (p.decided) return false;
  const int round = p.taken / p.count;  // round 0: untimed
  if (round >= 1) p.seconds[static_cast<std::size_t>(which_)][static_cast<std::size_t>(round - 1)] = seconds;
  if (++p.taken < p.count * (1 + kTimedRounds)) return false;
  last_ = decision{};
  last_.count = p.count;
  int best = 0;
  for (int c = 0; c < p.count; ++c) {
    auto v = p.seconds[static_cast<std::size_t>(c)];
    std::sort(v.begin(), v.end());
    last_.candidates[static_cast<std::size_t>(c)] = p.candidates[static_cast<std::size_t>(c)];
    last_.median[static_cast<std::size_t>(c)] = v[kTimedRounds / 2];
    if (last_.median[static_cast<std::size_t>(c)] < last_.median[static_cast<std::size_t>(best)]) best = c;
  }
  if (last_.median[static_cast<std::size_t>(best)] >= (1 - kMargin) * last_.median[0]) best = 0;
  p.decided = true;
  p.chosen = p.candidates[static_cast<std::size_t>(best)];
  last_.chosen = p.chosen;
  return true;
}

}  // namespace conveyor::redistribute::detail
