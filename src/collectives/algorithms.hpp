// SPDX-License-Identifier: BSD-3-Clause
// Builders that turn one allreduce / reduce-scatter / allgather over a range of
// elements into schedule rounds (see schedule.hpp). Each builder's comment gives
// its steps, the bytes each rank sends, and its limits; docs/algorithms.md has the
// cost formulas.
//
// Common conventions: `group` lists the participating ranks of the executor's
// communicator in ring/tree order and `me` is this rank's index in it; `data` is
// the element buffer the result is built in (the caller's recv buffer); element
// ranges are [offset, offset + count) in elements of `esize` bytes.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/schedule.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

struct block {
  std::size_t offset = 0;
  std::size_t count = 0;
};

/// `parts` consecutive blocks covering [offset, offset + count), sizes differing by
/// at most one element (the first count % parts blocks are one larger).
std::vector<block> split(std::size_t offset, std::size_t count, int parts);

/// 0, 1, ..., size-1: the group of a flat algorithm.
std::vector<int> all_ranks(int size);

/// Hands out scratch memory. With a null base it only measures how much is needed.
class scratch_alloc {
 public:
  explicit scratch_alloc(char* base) : base_(base) {}
  char* take(std::size_t bytes) {
    char* p = base_ ? base_ + used_ : nullptr;
    used_ += (bytes + 63) & ~std::size_t{63};
    return p;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t used_ = 0;
};

struct range_buffer {
  char* data;         // element 0 of the whole buffer
  std::size_t esize;  // bytes per element
  char* at(std::size_t element) const { return data + element * esize; }
};

/// Ring reduce-scatter. G-1 rounds; in round s, rank i sends block (i-1-s) mod G to
/// i+1 and receives block (i-2-s) mod G from i-1 into scratch, then reduces it into
/// `data`. Afterwards rank i holds block i fully reduced. Sends (G-1)/G of the
/// range; does (G-1)/G of the range in reductions. Works for any G and any block
/// sizes (including empty blocks).
void ring_reduce_scatter(schedule& s, const std::vector<int>& group, int me, const std::vector<block>& blocks,
                         range_buffer buf, scratch_alloc& scratch);

/// Ring allgather: G-1 rounds; in round t rank i sends block (i-t) mod G to i+1 and
/// receives block (i-1-t) mod G from i-1 straight into `data`. With `notify`, each
/// received block is announced to on_chunk. Sends (G-1)/G of the range.
void ring_allgather(schedule& s, const std::vector<int>& group, int me, const std::vector<block>& blocks,
                    range_buffer buf, bool notify);

/// Rank-ordered reduce-scatter (the deterministic mode): one round in which every
/// rank sends block j to rank j and receives all G-1 contributions to its own
/// block, then folds them as ((x_0 op x_1) op x_2) ... in group order. Same bytes
/// as the ring; G-1 concurrent messages per rank; G blocks of scratch.
void ordered_reduce_scatter(schedule& s, const std::vector<int>& group, int me, const std::vector<block>& blocks,
                            range_buffer buf, scratch_alloc& scratch);

/// Sends `out` to `peer` and / or receives `in` from it (either may be null),
/// `bytes` each: up to `piece` bytes as one blocking call, larger in pieces of
/// `piece` bytes (at most 64; larger pieces if needed) posted at once.
void exchange_in_pieces(MPI_Comm comm, const char* out, char* in, std::size_t bytes, int peer, std::size_t piece);

/// Recursive doubling on the whole range, run directly (not as a schedule: it is
/// for small messages, where building rounds would cost more than sending):
/// log2(p) exchanges of the full range with partner me^mask (in pieces of the
/// piece rule, all posted at once: schedule.hpp), both reducing lower-rank-first
/// so the bits agree. Non-power-of-two G: the first 2r
/// ranks (r = G - p) fold pairwise into p participants before, and the results
/// are sent back after. Sends log2(p)·n (+n for folded ranks).
void recursive_doubling_direct(MPI_Comm comm, int me, int g, char* data, std::size_t count, std::size_t esize,
                               reduce_kernel_fn reduce, char* tmp, const piece_rule& pieces,
                               const std::function<void(std::size_t, std::size_t)>* on_chunk);

/// Rabenseifner: the same fold to p = 2^k participants, then a recursive-halving
/// reduce-scatter (round k: exchange half of the current window with partner
/// me^(p/2^k), reduce the kept half) and a recursive-doubling allgather of the p
/// blocks. Sends 2(p-1)/p·n in 2 log2(p) messages.
void rabenseifner(schedule& s, const std::vector<int>& group, int me, block range, range_buffer buf,
                  scratch_alloc& scratch);

}  // namespace conveyor::collectives::detail

namespace conveyor::collectives::detail {

/// Appends a chunk notification to the last round (or a new one if there is none).
void notify_now(schedule& s, block b);

/// Hierarchical (node-aware) allreduce of one chunk, for `rank` in `layout`:
///   1. intra-node reduce-scatter, direct: the chunk is cut into K slices (K = the
///      largest node size); on a node of L ranks, local rank l owns slices j with
///      j mod L == l and receives the other L-1 local contributions to them, so
///      every local rank does an equal share of the additions (L-1)/L·n (the
///      balanced reduce of the COFFEE paper, for any L, not only powers of two);
///   2. inter-node ring allreduce of each owned slice among the owners of that
///      slice on every node -- every rank leads for its own slices, rather than
///      one leader per node; sends 2(N-1)/N·n/L per rank across the network;
///   3. intra-node allgather, direct: owners send finished slices to the other
///      local ranks.
/// Chunks run as concurrent schedules, so chunk c's stage 2 overlaps chunk c+1's
/// stage 1 and chunk c-1's stage 3 (SALaR/COFFEE pipelining). Uneven nodes work:
/// ranks of smaller nodes own more slices.
void hierarchical(schedule& s, const node_layout& layout, int rank, block range, range_buffer buf,
                  scratch_alloc& scratch);

}  // namespace conveyor::collectives::detail
