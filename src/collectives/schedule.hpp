// SPDX-License-Identifier: BSD-3-Clause
// Collective algorithms as data: a *schedule* is a list of rounds; a round posts
// its sends and receives together and, once all of them completed, runs its local
// steps (reductions, copies, chunk notifications). The executor runs many
// schedules at once -- one per pipeline chunk -- so chunk c+1 communicates while
// chunk c reduces, and in the hierarchical algorithm chunk c's inter-node stage
// overlaps chunk c+1's intra-node stage.
//
// Message pieces: a transfer larger than the transport's eager limit waits for a
// rendezvous handshake (docs/algorithms.md, "Pieces below the eager limit").
// Cut into pieces of at most the piece size, all posted at once, every
// piece goes eagerly. The piece size per link level comes from the cost model
// (`conveyor tune` measures it; 0 = whole messages) -- see piece_rule.
//
// Matching rules (why tags are safe): every rank builds the same schedules in the
// same order. Schedule k uses tag k, so concurrently active schedules never match
// each other's messages; within one schedule, round r+1 is posted only after round
// r completed, so MPI's non-overtaking order matches rounds correctly.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "conveyor/reduce.hpp"
#include "runtime/message_pieces.hpp"
#include "collectives/detail_namespace.hpp"

namespace conveyor::collectives::detail {

/// How a message to `peer` of `bytes` is cut: in pieces of the model's piece size
/// (intra for a peer on this rank's node of `layout`, inter otherwise) when that
/// makes at most kPiecesPerMessage pieces; whole otherwise (up to kMaxMessageBytes
/// per message), and whole when the model's size is 0. Above that the rendezvous
/// handshake is a small part of the message's time and the pieces' own overhead
/// is not (docs/algorithms.md, "Pieces below the eager limit"). Every rank uses
/// the same model, so sender and receiver cut a message alike.
inline constexpr std::size_t kPiecesPerMessage = 8;

struct piece_rule {
  const node_layout* layout = nullptr;  // null: every peer is "intra"
  int me = 0;
  std::size_t intra = 0, inter = 0;
  std::size_t for_message(int peer, std::size_t bytes) const;
};

struct transfer {
  int peer;
  void* buf;  // for sends: data to send (not modified)
  std::size_t bytes;
  bool send;
};

struct local_step {
  enum kind_t { reduce, copy, notify } kind;
  const void* a = nullptr;  // reduce: out = a op b (elements); copy: out <- a (bytes)
  const void* b = nullptr;
  void* out = nullptr;
  std::size_t count = 0;   // reduce: elements; copy: bytes; notify: elements
  std::size_t offset = 0;  // notify: first element
};

struct round {
  std::vector<transfer> transfers;
  std::vector<local_step> after;

  void send(int peer, const void* buf, std::size_t bytes) {
    if (bytes) transfers.push_back({peer, const_cast<void*>(buf), bytes, true});
  }
  void recv(int peer, void* buf, std::size_t bytes) {
    if (bytes) transfers.push_back({peer, buf, bytes, false});
  }
  void reduce(const void* a, const void* b, void* out, std::size_t count) {
    if (count) after.push_back({local_step::reduce, a, b, out, count, 0});
  }
  void copy(const void* from, void* to, std::size_t bytes) {
    if (bytes && from != to) after.push_back({local_step::copy, from, nullptr, to, bytes, 0});
  }
  void notify(std::size_t offset, std::size_t count) {
    if (count) after.push_back({local_step::notify, nullptr, nullptr, nullptr, count, offset});
  }
};

struct schedule {
  std::vector<round> rounds;
  round& next() { return rounds.emplace_back(); }
};

/// Runs schedules on `comm`, at most `window` at once, in order of index.
class executor {
 public:
  executor(MPI_Comm comm, reduce_kernel_fn reduce_fn, const std::function<void(std::size_t, std::size_t)>* on_chunk,
           piece_rule pieces = {})
      : comm_(comm), reduce_(reduce_fn), on_chunk_(on_chunk), pieces_(pieces) {}

  void run(std::vector<schedule>& schedules, int window);

 private:
  void run_local_steps(const round& r) const;

  MPI_Comm comm_;
  reduce_kernel_fn reduce_;
  const std::function<void(std::size_t, std::size_t)>* on_chunk_;
  piece_rule pieces_;
};

/// How messages of a call on `layout` are cut, for rank `me`: the cost model's
/// piece sizes within a node and between nodes of that layout.
piece_rule pieces_for(int me, const node_layout& layout);

/// Runs `schedules` on `comm` with an executor (at most `window` at once).
void run_schedules(MPI_Comm comm, std::vector<schedule>& schedules, reduce_kernel_fn f,
                   const std::function<void(std::size_t, std::size_t)>* on_chunk, int window, const piece_rule& pieces);

}  // namespace conveyor::collectives::detail
