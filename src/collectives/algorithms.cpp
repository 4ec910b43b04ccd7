// SPDX-License-Identifier: BSD-3-Clause
// Schedule builders of the collective algorithms: ring reduce-scatter/allgather,
// rank-ordered reduce-scatter, recursive doubling (run directly), Rabenseifner
// and hierarchical. Each builder's steps, bytes on the wire and limits are stated
// at its declaration in algorithms.hpp; docs/algorithms.md gives the cost formulas.
#include "collectives/algorithms.hpp"
#include "runtime/partition.hpp"

#include <algorithm>
#include <numeric>

#include "runtime/context.hpp"

namespace conveyor::collectives::detail {
namespace {

int mod(int a, int g) { return ((a % g) + g) % g; }

std::size_t max_count(const std::vector<block>& blocks) {
  std::size_t m = 0;
  for (const block& b : blocks) m = std::max(m, b.count);
  return m;
}

// The fold of a non-power-of-two group into p = 2^k participants (shared by
// recursive doubling and Rabenseifner). Ranks 0..2r-1 pair up: even ranks send
// their data to the odd neighbour and wait for the final result; odd ranks and
// ranks >= 2r continue with index `id` in 0..p-1.
struct pow2_fold {
  int p = 1, r = 0, id = -1;  // id < 0: this rank sits out
  pow2_fold(int g, int me) {
    while (p * 2 <= g) p *= 2;
    r = g - p;
    if (me < 2 * r) id = (me % 2) ? me / 2 : -1;
    else id = me - r;
  }
  int real(int participant) const { return participant < r ? 2 * participant + 1 : participant + r; }
};

// Rounds that bring the data of folded-out ranks into their odd partners.
void fold_in(schedule& s, const pow2_fold& f, const std::vector<int>& group, int me, char* data, std::size_t bytes,
             std::size_t count, char* tmp) {
  if (me >= 2 * f.r) return;
  round& r = s.next();
  if (me % 2 == 0) {
    r.send(group[static_cast<std::size_t>(me + 1)], data, bytes);
  } else {
    r.recv(group[static_cast<std::size_t>(me - 1)], tmp, bytes);
    r.reduce(tmp, data, data, count);  // lower rank first
  }
}

// The round that hands the result back to a folded-out rank, which announces it.
void fold_out(schedule& s, const pow2_fold& f, const std::vector<int>& group, int me, char* data, std::size_t bytes,
              block range) {
  if (me >= 2 * f.r) return;
  round& r = s.next();
  if (me % 2 == 0) {
    r.recv(group[static_cast<std::size_t>(me + 1)], data, bytes);
    r.notify(range.offset, range.count);
  } else {
    r.send(group[static_cast<std::size_t>(me - 1)], data, bytes);
  }
}

// out = lower-ranked operand op higher-ranked operand, so both partners compute
// the same expression and get the same bits.
void reduce_ordered(round& r, bool partner_is_lower, const char* theirs, char* mine, std::size_t count) {
  if (partner_is_lower) r.reduce(theirs, mine, mine, count);
  else r.reduce(mine, theirs, mine, count);
}

}  // namespace

std::vector<int> all_ranks(int size) {
  std::vector<int> all(static_cast<std::size_t>(size));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

std::vector<block> split(std::size_t offset, std::size_t count, int parts) {
  std::vector<block> out(static_cast<std::size_t>(parts));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const part_range r = balanced_part(count, i, out.size());
    out[i] = {offset + r.first, r.count};
  }
  return out;
}

void ring_reduce_scatter(schedule& s, const std::vector<int>& group, int me, const std::vector<block>& blocks,
                         range_buffer buf, scratch_alloc& scratch) {
  const int g = static_cast<int>(group.size());
  if (g == 1) return;
  const int next = group[static_cast<std::size_t>(mod(me + 1, g))];
  const int prev = group[static_cast<std::size_t>(mod(me - 1, g))];
  char* tmp = scratch.take(max_count(blocks) * buf.esize);
  for (int step = 0; step < g - 1; ++step) {
    const block& sb = blocks[static_cast<std::size_t>(mod(me - 1 - step, g))];
    const block& rb = blocks[static_cast<std::size_t>(mod(me - 2 - step, g))];
    round& r = s.next();
    r.send(next, buf.at(sb.offset), sb.count * buf.esize);
    r.recv(prev, tmp, rb.count * buf.esize);
    r.reduce(tmp, buf.at(rb.offset), buf.at(rb.offset), rb.count);
  }
}

void ring_allgather(schedule& s, const std::vector<int>& group, int me, const std::vector<block>& blocks,
                    range_buffer buf, bool notify) {
  const int g = static_cast<int>(group.size());
  if (g == 1) return;
  const int next = group[static_cast<std::size_t>(mod(me + 1, g))];
  const int prev = group[static_cast<std::size_t>(mod(me - 1, g))];
  for (int step = 0; step < g - 1; ++step) {
    const block& sb = blocks[static_cast<std::size_t>(mod(me - step, g))];
    const block& rb = blocks[static_cast<std::size_t>(mod(me - 1 - step, g))];
    round& r = s.next();
    r.send(next, buf.at(sb.offset), sb.count * buf.esize);
    r.recv(prev, buf.at(rb.offset), rb.count * buf.esize);
    if (notify) r.notify(rb.offset, rb.count);
  }
}

void ordered_reduce_scatter(schedule& s, const std::vector<int>& group, int me, const std::vector<block>& blocks,
                            range_buffer buf, scratch_alloc& scratch) {
  const int g = static_cast<int>(group.size());
  if (g == 1) return;
  const block& mine = blocks[static_cast<std::size_t>(me)];
  const std::size_t bytes = mine.count * buf.esize;
  char* stage = scratch.take(static_cast<std::size_t>(g) * bytes);
  const auto slot = [&](int j) { return stage ? stage + static_cast<std::size_t>(j) * bytes : nullptr; };
  round& r = s.next();
  for (int j = 0; j < g; ++j) {
    if (j == me) continue;
    const block& bj = blocks[static_cast<std::size_t>(j)];
    r.send(group[static_cast<std::size_t>(j)], buf.at(bj.offset), bj.count * buf.esize);
    r.recv(group[static_cast<std::size_t>(j)], slot(j), bytes);
  }
  // Fold in group order into the (unused) slot of this rank, then copy into place.
  const auto src = [&](int j) -> const char* { return j == me ? buf.at(mine.offset) : slot(j); };
  char* acc = slot(me);
  r.reduce(src(0), src(1), acc, mine.count);
  for (int j = 2; j < g; ++j) r.reduce(acc, src(j), acc, mine.count);
  r.copy(acc, buf.at(mine.offset), bytes);
}

// Sends `out` to `peer` and / or receives `in` from it (either may be null),
// `bytes` each. Up to `piece` bytes: one blocking call. Larger: pieces of `piece`
// bytes (at most kMaxPieces of them, larger pieces if needed), all posted at once
// and completed together, so each piece travels below the eager limit instead of
// waiting for a rendezvous (schedule.hpp). Beyond kMaxPieces pieces of the largest
// message: blocking calls piece after piece (runtime/message_pieces.hpp).
void exchange_in_pieces(MPI_Comm comm, const char* out, char* in, std::size_t bytes, int peer, std::size_t piece) {
  constexpr std::size_t kMaxPieces = 64;
  const auto blocking = [&](std::size_t off, int n, int) {
    if (out && in) {
      check_mpi(MPI_Sendrecv(out + off, n, MPI_BYTE, peer, 0, in + off, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE),
                "MPI_Sendrecv");
    } else if (out) {
      check_mpi(MPI_Send(out + off, n, MPI_BYTE, peer, 0, comm), "MPI_Send");
    } else {
      check_mpi(MPI_Recv(in + off, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    }
  };
  if (bytes <= piece || bytes > kMaxPieces * kMaxMessageBytes) {
    for_each_piece(bytes, blocking);
    return;
  }
  piece = std::min(kMaxMessageBytes, std::max(piece, (bytes + kMaxPieces - 1) / kMaxPieces));
  MPI_Request requests[2 * kMaxPieces];
  int k = 0;
  if (in) {
    for_each_piece(
        bytes,
        [&](std::size_t off, int n, int) {
          check_mpi(MPI_Irecv(in + off, n, MPI_BYTE, peer, 0, comm, &requests[k++]), "MPI_Irecv");
        },
        piece);
  }
  if (out) {
    for_each_piece(
        bytes,
        [&](std::size_t off, int n, int) {
          check_mpi(MPI_Isend(out + off, n, MPI_BYTE, peer, 0, comm, &requests[k++]), "MPI_Isend");
        },
        piece);
  }
  check_mpi(MPI_Waitall(k, requests, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

void recursive_doubling_direct(MPI_Comm comm, int me, int g, char* data, std::size_t count, std::size_t esize,
                               reduce_kernel_fn reduce, char* tmp, const piece_rule& pieces,
                               const std::function<void(std::size_t, std::size_t)>* on_chunk) {
  const std::size_t bytes = count * esize;
  const pow2_fold f(g, me);
  const bool folded_out = me < 2 * f.r && me % 2 == 0;
  const auto piece_to = [&](int peer) { return pieces.for_message(peer, bytes); };
  if (me < 2 * f.r) {
    if (folded_out) {
      exchange_in_pieces(comm, data, nullptr, bytes, me + 1, piece_to(me + 1));
      exchange_in_pieces(comm, nullptr, data, bytes, me + 1, piece_to(me + 1));
    } else {
      exchange_in_pieces(comm, nullptr, tmp, bytes, me - 1, piece_to(me - 1));
      reduce(tmp, data, data, count);  // lower rank first
    }
  }
  if (!folded_out) {
    for (int mask = 1; mask < f.p; mask <<= 1) {
      const int partner = f.real(f.id ^ mask);
      exchange_in_pieces(comm, data, tmp, bytes, partner, piece_to(partner));
      if (partner < me) reduce(tmp, data, data, count);
      else reduce(data, tmp, data, count);
    }
    if (me < 2 * f.r) exchange_in_pieces(comm, data, nullptr, bytes, me - 1, piece_to(me - 1));
  }
  if (on_chunk && *on_chunk && count) (*on_chunk)(0, count);
}

void rabenseifner(schedule& s, const std::vector<int>& group, int me, block range, range_buffer buf,
                  scratch_alloc& scratch) {
  const int g = static_cast<int>(group.size());
  if (g == 1) {
    s.next().notify(range.offset, range.count);
    return;
  }
  const pow2_fold f(g, me);
  const std::size_t bytes = range.count * buf.esize;
  char* data = buf.at(range.offset);
  char* tmp = scratch.take(bytes);
  fold_in(s, f, group, me, data, bytes, range.count, tmp);
  if (f.id >= 0) {
    const std::vector<block> blocks = split(range.offset, range.count, f.p);
    const auto span_of = [&](int lo, int hi) {  // blocks [lo, hi) as one element range
      const block& first = blocks[static_cast<std::size_t>(lo)];
      const block& last = blocks[static_cast<std::size_t>(hi - 1)];
      return block{first.offset, last.offset + last.count - first.offset};
    };
    // Recursive halving: keep the half of the window selected by this bit of id.
    int lo = 0, hi = f.p;
    for (int d = f.p / 2; d >= 1; d /= 2) {
      const int partner = f.real(f.id ^ d);
      const int mid = lo + (hi - lo) / 2;
      const bool keep_low = (f.id & d) == 0;
      const block keep = keep_low ? span_of(lo, mid) : span_of(mid, hi);
      const block give = keep_low ? span_of(mid, hi) : span_of(lo, mid);
      round& r = s.next();
      r.send(group[static_cast<std::size_t>(partner)], buf.at(give.offset), give.count * buf.esize);
      r.recv(group[static_cast<std::size_t>(partner)], tmp, keep.count * buf.esize);
      reduce_ordered(r, partner < me, tmp, buf.at(keep.offset), keep.count);
      if (keep_low) hi = mid;
      else lo = mid;
    }
    const block own = blocks[static_cast<std::size_t>(f.id)];
    s.rounds.back().notify(own.offset, own.count);
    // Recursive doubling allgather: windows of d blocks merge with the partner's.
    for (int d = 1; d < f.p; d *= 2) {
      const int partner = f.real(f.id ^ d);
      const int my_lo = f.id & ~(d - 1);
      const int their_lo = my_lo ^ d;
      const block mine = span_of(my_lo, my_lo + d);
      const block theirs = span_of(their_lo, their_lo + d);
      round& r = s.next();
      r.send(group[static_cast<std::size_t>(partner)], buf.at(mine.offset), mine.count * buf.esize);
      r.recv(group[static_cast<std::size_t>(partner)], buf.at(theirs.offset), theirs.count * buf.esize);
      r.notify(theirs.offset, theirs.count);
    }
  }
  fold_out(s, f, group, me, data, bytes, range);
}

}  // namespace conveyor::collectives::detail

namespace conveyor::collectives::detail {

void notify_now(schedule& s, block b) {
  if (s.rounds.empty()) s.next();
  s.rounds.back().notify(b.offset, b.count);
}

void hierarchical(schedule& s, const node_layout& layout, int rank, block range, range_buffer buf,
                  scratch_alloc& scratch) {
  const int node = layout.node_of[static_cast<std::size_t>(rank)];
  const int local = layout.local_of[static_cast<std::size_t>(rank)];
  const std::vector<int>& members = layout.members[static_cast<std::size_t>(node)];
  const int lsize = static_cast<int>(members.size());
  const int k = layout.max_local;
  const std::vector<block> slices = split(range.offset, range.count, k);
  const auto owner = [&](int n, int j) {
    const auto& m = layout.members[static_cast<std::size_t>(n)];
    return m[static_cast<std::size_t>(j % static_cast<int>(m.size()))];
  };
  std::vector<int> mine;
  for (int j = 0; j < k; ++j) {
    if (j % lsize == local) mine.push_back(j);
  }

  // 1. Intra-node reduce-scatter (direct).
  if (lsize > 1) {
    round& r = s.next();
    for (int j = 0; j < k; ++j) {
      const int o = owner(node, j);
      if (o != rank)
        r.send(o, buf.at(slices[static_cast<std::size_t>(j)].offset),
               slices[static_cast<std::size_t>(j)].count * buf.esize);
    }
    for (int j : mine) {
      const block& sl = slices[static_cast<std::size_t>(j)];
      for (int m : members) {
        if (m == rank) continue;
        char* stage = scratch.take(sl.count * buf.esize);
        r.recv(m, stage, sl.count * buf.esize);
        r.reduce(stage, buf.at(sl.offset), buf.at(sl.offset), sl.count);
      }
    }
  }

  // 2. Inter-node ring allreduce of each owned slice; the rings of all owned
  //    slices advance in lock step (same number of rounds).
  if (layout.nodes > 1) {
    std::vector<schedule> rings(mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
      std::vector<int> group(static_cast<std::size_t>(layout.nodes));
      for (int n = 0; n < layout.nodes; ++n) group[static_cast<std::size_t>(n)] = owner(n, mine[i]);
      const std::vector<block> parts = split(slices[static_cast<std::size_t>(mine[i])].offset,
                                             slices[static_cast<std::size_t>(mine[i])].count, layout.nodes);
      ring_reduce_scatter(rings[i], group, node, parts, buf, scratch);
      ring_allgather(rings[i], group, node, parts, buf, /*notify=*/false);
    }
    const std::size_t nrounds = rings.empty() ? 0 : rings[0].rounds.size();
    for (std::size_t q = 0; q < nrounds; ++q) {
      round& r = s.next();
      for (auto& ring : rings) {
        round& src = ring.rounds[q];
        r.transfers.insert(r.transfers.end(), src.transfers.begin(), src.transfers.end());
        r.after.insert(r.after.end(), src.after.begin(), src.after.end());
      }
    }
  }
  for (int j : mine) notify_now(s, slices[static_cast<std::size_t>(j)]);

  // 3. Intra-node allgather (direct).
  if (lsize > 1) {
    round& r = s.next();
    for (int j = 0; j < k; ++j) {
      const block& sl = slices[static_cast<std::size_t>(j)];
      const int o = owner(node, j);
      if (o == rank) {
        for (int m : members) {
          if (m != rank) r.send(m, buf.at(sl.offset), sl.count * buf.esize);
        }
      } else {
        r.recv(o, buf.at(sl.offset), sl.count * buf.esize);
        r.notify(sl.offset, sl.count);
      }
    }
  }
}

}  // namespace conveyor::collectives::detail
