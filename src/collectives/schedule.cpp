// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/schedule.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "conveyor/cost_model.hpp"
#include "runtime/context.hpp"

namespace conveyor::collectives::detail {
namespace {

constexpr int kTagSpace = 32000;  // well below the MPI-guaranteed MPI_TAG_UB of 32767

struct active_schedule {
  schedule* s = nullptr;
  int tag = 0;
  std::size_t round = 0;
  int pending = 0;  // requests of the current round not yet complete
};

}  // namespace

piece_rule pieces_for(int me, const node_layout& layout) {
  const cost_model& p = current_cost_model();
  return {&layout, me, p.intra_piece_bytes, p.inter_piece_bytes};
}

void run_schedules(MPI_Comm comm, std::vector<schedule>& schedules, reduce_kernel_fn f,
                   const std::function<void(std::size_t, std::size_t)>* on_chunk, int window,
                   const piece_rule& pieces) {
  executor ex(comm, f, on_chunk, pieces);
  ex.run(schedules, window);
}

std::size_t piece_rule::for_message(int peer, std::size_t bytes) const {
  const bool same_node =
      !layout || layout->node_of[static_cast<std::size_t>(peer)] == layout->node_of[static_cast<std::size_t>(me)];
  const std::size_t piece = same_node ? intra : inter;
  if (piece == 0 || bytes > kPiecesPerMessage * piece) return kMaxMessageBytes;
  return std::min(piece, kMaxMessageBytes);
}

namespace {

// The requests in flight, each with the index of the schedule it belongs to; a
// completed request's slot is reused, so MPI_Waitsome's array stays short.
struct request_table {
  std::vector<MPI_Request> requests;
  std::vector<int> owner;  // slot -> index into the active schedules
  std::vector<int> free_slots;

  void add(MPI_Request req, int schedule_index) {
    if (!free_slots.empty()) {
      const auto slot = static_cast<std::size_t>(free_slots.back());
      free_slots.pop_back();
      requests[slot] = req;
      owner[slot] = schedule_index;
    } else {
      requests.push_back(req);
      owner.push_back(schedule_index);
    }
  }
};

}  // namespace

void executor::run_local_steps(const round& r) const {
  for (const local_step& st : r.after) {
    switch (st.kind) {
      case local_step::reduce:
        reduce_(st.a, st.b, st.out, st.count);
        break;
      case local_step::copy:
        std::memmove(st.out, st.a, st.count);
        break;
      case local_step::notify:
        if (on_chunk_ && *on_chunk_) (*on_chunk_)(st.offset, st.count);
        break;
    }
  }
}

void executor::run(std::vector<schedule>& schedules, int window) {
  window = std::max(1, window);
  request_table inflight;
  std::vector<active_schedule> active;
  std::vector<int> done_indices(1);
  std::size_t next_schedule = 0;
  std::size_t running = 0;

  // Posts rounds of schedule `a` until one has transfers in flight or it ends.
  // Returns false when the schedule finished.
  const auto advance = [&](int a) {
    active_schedule& st = active[static_cast<std::size_t>(a)];
    while (st.round < st.s->rounds.size()) {
      round& r = st.s->rounds[st.round];
      for (const transfer& t : r.transfers) {
        for_each_piece(
            t.bytes,
            [&](std::size_t off, int n, int) {
              char* p = static_cast<char*>(t.buf) + off;
              MPI_Request req;
              const int rc = t.send ? MPI_Isend(p, n, MPI_BYTE, t.peer, st.tag, comm_, &req)
                                    : MPI_Irecv(p, n, MPI_BYTE, t.peer, st.tag, comm_, &req);
              check_mpi(rc, t.send ? "MPI_Isend" : "MPI_Irecv");
              inflight.add(req, a);
              ++st.pending;
            },
            pieces_.for_message(t.peer, t.bytes));
      }
      if (st.pending > 0) return true;
      run_local_steps(r);  // a round without transfers: local work only
      ++st.round;
    }
    return false;
  };

  const auto start_more = [&] {
    while (running < static_cast<std::size_t>(window) && next_schedule < schedules.size()) {
      active.push_back({&schedules[next_schedule], static_cast<int>(next_schedule % kTagSpace), 0, 0});
      ++next_schedule;
      ++running;
      if (!advance(static_cast<int>(active.size()) - 1)) --running;
    }
  };

  start_more();
  while (running > 0) {
    int outcount = 0;
    done_indices.resize(inflight.requests.size());
    check_mpi(MPI_Waitsome(static_cast<int>(inflight.requests.size()), inflight.requests.data(), &outcount,
                           done_indices.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitsome");
    if (outcount == MPI_UNDEFINED) break;  // no active requests (cannot happen while running)
    for (int k = 0; k < outcount; ++k) {
      const int slot = done_indices[static_cast<std::size_t>(k)];
      const int a = inflight.owner[static_cast<std::size_t>(slot)];
      inflight.free_slots.push_back(slot);
      active_schedule& st = active[static_cast<std::size_t>(a)];
      if (--st.pending == 0) {
        run_local_steps(st.s->rounds[st.round]);
        ++st.round;
        if (!advance(a)) {
          --running;
          start_more();
        }
      }
    }
  }
}

}  // namespace conveyor::collectives::detail
