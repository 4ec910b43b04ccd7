// SPDX-License-Identifier: BSD-3-Clause
// The node-aware all-to-all (alltoall_by_nodes.hpp: steps, leaders, cost). Here:
// the maps of the three steps and the stage's layout:
//   [own node's blocks][pairs this rank sends: [source on A][destination on B]]
//   [pairs it receives: [source on S][destination on A]]
// built from the bytes of every pair that leaves or reaches the node (equal
// parts: known; any parts: one allgather on the node's communicator).
#include "redistribute/alltoall_by_nodes.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <exception>

namespace conveyor::redistribute::detail {
namespace {

using conveyor::detail::node_layout;

// Appends `run` bytes at `offset` to a map, extending its last box where they follow it.
void add_run(byte_map& m, std::int64_t offset, std::int64_t run) {
  if (run == 0) return;
  if (!m.empty() && m.back().axes == 0 && m.back().offset + m.back().run == offset) {
    m.back().run += run;
    return;
  }
  m.push_back(byte_box{offset, run, 0, {}, {}});
}

// The local rank of node `from` that sends its pair to node `to`, and the local
// rank of `to` that receives it.
int sender_of(const node_layout& l, int from, int to) {
  const int d = (to - from + l.nodes) % l.nodes;
  return (d - 1) % static_cast<int>(l.members[static_cast<std::size_t>(from)].size());
}
int receiver_of(const node_layout& l, int from, int to) {
  const int d = (from - to + l.nodes) % l.nodes;
  return (d - 1) % static_cast<int>(l.members[static_cast<std::size_t>(to)].size());
}

const std::vector<int>& ranks_of(const node_layout& l, int node) { return l.members[static_cast<std::size_t>(node)]; }

}  // namespace

by_nodes_exchange::~by_nodes_exchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
}

template <class SendPart, class RecvPart>
void by_nodes_exchange::plan(const conveyor::detail::comm_context& ctx, const node_layout& l, const SendPart& send_part,
                             const RecvPart& recv_part) {
  const int me = ctx.rank, P = ctx.size, A = l.node_of[static_cast<std::size_t>(me)];
  const int mine = l.local_of[static_cast<std::size_t>(me)];
  const std::vector<int>& here = ranks_of(l, A);
  const int L = static_cast<int>(here.size());
  const auto uL = static_cast<std::size_t>(L), uN = static_cast<std::size_t>(l.nodes);
  // bytes local rank s sends rank q; local rank j receives from rank r
  auto sends = [&](int s, int q) {
    return rows_[static_cast<std::size_t>(s) * static_cast<std::size_t>(P) + static_cast<std::size_t>(q)];
  };
  auto gets = [&](int j, int r) {
    return cols_[static_cast<std::size_t>(j) * static_cast<std::size_t>(P) + static_cast<std::size_t>(r)];
  };
  auto row_total = [&](int s, int B) {  // what local rank s sends node B
    std::int64_t t = 0;
    for (int q : ranks_of(l, B)) t += sends(s, q);
    return t;
  };

  // The stage: own blocks, then the pairs this rank sends, then those it receives.
  // Every block is sized as its receiver expects it (where a program's counts do
  // not match, the step that moves it finds the difference, and the later steps
  // still match on every rank: run() then throws, and no rank waits for another).
  std::vector<std::int64_t> own_at(uL + 1, 0);
  for (int s = 0; s < L; ++s)
    own_at[static_cast<std::size_t>(s) + 1] =
        own_at[static_cast<std::size_t>(s)] + gets(mine, here[static_cast<std::size_t>(s)]);
  std::vector<std::int64_t> send_at(uN, -1), recv_at(uN, -1), send_total(uN, 0), recv_total(uN, 0);
  std::int64_t cursor = own_at[uL];
  for (int B = 0; B < l.nodes; ++B) {
    if (B == A || sender_of(l, A, B) != mine) continue;
    send_at[static_cast<std::size_t>(B)] = cursor;
    for (int s = 0; s < L; ++s) send_total[static_cast<std::size_t>(B)] += row_total(s, B);
    cursor += send_total[static_cast<std::size_t>(B)];
  }
  recv_region_ = cursor;
  for (int S = 0; S < l.nodes; ++S) {
    if (S == A || receiver_of(l, S, A) != mine) continue;
    recv_at[static_cast<std::size_t>(S)] = cursor - recv_region_;
    for (int r : ranks_of(l, S)) {
      for (int j = 0; j < L; ++j) recv_total[static_cast<std::size_t>(S)] += gets(j, r);
    }
    cursor += recv_total[static_cast<std::size_t>(S)];
  }
  stage_.resize(static_cast<std::size_t>(cursor));

  // 1. gather: to local rank t, this rank's parts for each node t leads to, then
  // its part for t; from t, t's row of each pair this rank leads, then t's block.
  gather_send_.assign(uL, {}), gather_recv_.assign(uL, {});
  for (int t = 0; t < L; ++t) {
    byte_map &out = gather_send_[static_cast<std::size_t>(t)], &in = gather_recv_[static_cast<std::size_t>(t)];
    for (int B = 0; B < l.nodes; ++B) {
      if (B == A) continue;
      if (sender_of(l, A, B) == t) {
        for (int q : ranks_of(l, B)) send_part(out, q);
      }
      if (sender_of(l, A, B) == mine) {
        std::int64_t row_at = send_at[static_cast<std::size_t>(B)];
        for (int s = 0; s < t; ++s) row_at += row_total(s, B);
        add_run(in, row_at, row_total(t, B));
      }
    }
    send_part(out, here[static_cast<std::size_t>(t)]);
    add_run(in, own_at[static_cast<std::size_t>(t)], gets(mine, here[static_cast<std::size_t>(t)]));
  }
  // 2. cross: one message per node pair this rank leads, stage to stage (none
  // where the pair has nothing to move).
  cross_send_.assign(static_cast<std::size_t>(P), {}), cross_recv_.assign(static_cast<std::size_t>(P), {});
  for (int B = 0; B < l.nodes; ++B) {
    if (B == A) continue;
    const auto k = static_cast<std::size_t>(B);
    if (send_at[k] >= 0) {
      const int q = ranks_of(l, B)[static_cast<std::size_t>(receiver_of(l, A, B))];
      add_run(cross_send_[static_cast<std::size_t>(q)], send_at[k], send_total[k]);
    }
    if (recv_at[k] >= 0) {
      const int q = ranks_of(l, B)[static_cast<std::size_t>(sender_of(l, B, A))];
      add_run(cross_recv_[static_cast<std::size_t>(q)], recv_at[k], recv_total[k]);
    }
  }
  // 3. scatter: to local rank j, its column of each pair this rank received
  // (the block from each source rank of the pair, in order); from its own stage,
  // the own blocks.
  scatter_send_.assign(uL, {}), scatter_recv_.assign(uL, {});
  for (int j = 0; j < L; ++j) {
    byte_map &out = scatter_send_[static_cast<std::size_t>(j)], &in = scatter_recv_[static_cast<std::size_t>(j)];
    for (int S = 0; S < l.nodes; ++S) {
      if (S == A) continue;
      if (recv_at[static_cast<std::size_t>(S)] >= 0) {
        std::int64_t at = recv_region_ + recv_at[static_cast<std::size_t>(S)];
        for (int r : ranks_of(l, S)) {
          for (int i = 0; i < L; ++i) {
            if (i == j) add_run(out, at, gets(i, r));
            at += gets(i, r);
          }
        }
      }
      if (receiver_of(l, S, A) == j) {
        for (int r : ranks_of(l, S)) recv_part(in, r);
      }
    }
    if (j == mine) {
      add_run(out, 0, own_at[uL]);
      for (int q : here) recv_part(in, q);
    }
  }
}

void by_nodes_exchange::split(const conveyor::detail::comm_context& ctx, const node_layout& l) {
  if (node_comm_ != MPI_COMM_NULL) return;
  const int me = ctx.rank;
  conveyor::detail::check_mpi(MPI_Comm_split(ctx.comm, l.node_of[static_cast<std::size_t>(me)],
                                             l.local_of[static_cast<std::size_t>(me)], &node_comm_),
                              "MPI_Comm_split (node-aware all-to-all)");
}

// Every step runs on every rank even after an earlier one threw here (a count
// that did not match: alltoallw completes its requests before it throws), so the
// peers waiting in a later step are answered; the first error is thrown at the end.
alltoallw_report by_nodes_exchange::steps(conveyor::detail::comm_context& ctx, const void* send, void* recv) {
  char* stage = stage_.data();
  std::exception_ptr failed;
  const auto step = [&](const void* from, const std::vector<byte_map>& out, void* to, const std::vector<byte_map>& in,
                        MPI_Comm comm) {
    try {
      return alltoallw(from, out, to, in, comm);
    } catch (const error& e) {
      if (e.code() != errc::invalid_argument) throw;  // an MPI failure: nothing is left to answer
      if (!failed) failed = std::current_exception();
      return alltoallw_report{};
    }
  };
  const alltoallw_report gathered = step(send, gather_send_, stage, gather_recv_, node_comm_);
  alltoallw_report rep = step(stage, cross_send_, stage + recv_region_, cross_recv_, ctx.comm);
  const alltoallw_report scattered = step(stage, scatter_send_, recv, scatter_recv_, node_comm_);
  if (failed) std::rethrow_exception(failed);
  rep.self_bytes = gathered.sent_bytes + gathered.self_bytes + scattered.sent_bytes + scattered.self_bytes;
  return rep;
}

alltoallw_report by_nodes_exchange::run(conveyor::detail::comm_context& ctx, const node_layout& l, const void* send,
                                        void* recv, std::int64_t b) {
  split(ctx, l);
  if (bytes_ != b) {
    const auto n = l.members[static_cast<std::size_t>(l.node_of[static_cast<std::size_t>(ctx.rank)])].size() *
                   static_cast<std::size_t>(ctx.size);
    rows_.assign(n, b), cols_.assign(n, b);
    plan(
        ctx, l, [b](byte_map& out, int q) { add_run(out, q * b, b); },
        [b](byte_map& in, int r) { add_run(in, r * b, b); });
    bytes_ = b;
  }
  return steps(ctx, send, recv);
}

alltoallw_report by_nodes_exchange::run(conveyor::detail::comm_context& ctx, const node_layout& l, const void* send,
                                        const std::vector<byte_map>& send_maps, void* recv,
                                        const std::vector<byte_map>& recv_maps) {
  split(ctx, l);
  const auto uP = static_cast<std::size_t>(ctx.size);
  // Every rank of the node: the bytes it sends each rank, then those it receives from each.
  std::vector<std::int64_t> mine(2 * uP);
  for (std::size_t q = 0; q < uP; ++q) mine[q] = bytes_of(send_maps[q]), mine[uP + q] = bytes_of(recv_maps[q]);
  int L = 0;
  MPI_Comm_size(node_comm_, &L);
  std::vector<std::int64_t> all(static_cast<std::size_t>(L) * 2 * uP);
  conveyor::detail::check_mpi(MPI_Allgather(mine.data(), static_cast<int>(2 * uP), MPI_INT64_T, all.data(),
                                            static_cast<int>(2 * uP), MPI_INT64_T, node_comm_),
                              "MPI_Allgather (node-aware all-to-all)");
  rows_.resize(static_cast<std::size_t>(L) * uP), cols_.resize(static_cast<std::size_t>(L) * uP);
  for (std::size_t j = 0; j < static_cast<std::size_t>(L); ++j) {
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(j * 2 * uP), uP,
                rows_.begin() + static_cast<std::ptrdiff_t>(j * uP));
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(j * 2 * uP + uP), uP,
                cols_.begin() + static_cast<std::ptrdiff_t>(j * uP));
  }
  auto append = [](byte_map& to, const byte_map& from) { to.insert(to.end(), from.begin(), from.end()); };
  plan(
      ctx, l, [&](byte_map& out, int q) { append(out, send_maps[static_cast<std::size_t>(q)]); },
      [&](byte_map& in, int r) { append(in, recv_maps[static_cast<std::size_t>(r)]); });
  bytes_ = -1;  // the maps above hold this call's parts
  return steps(ctx, send, recv);
}

std::array<double, 2> predict_alltoall_paths(std::int64_t b, int ranks, int nodes, int largest_node,
                                             const cost_model& p) {
  const double L = largest_node, P = ranks, N = nodes;
  const double bytes = static_cast<double>(b);
  const double intra_wire = (L - 1) * bytes * p.intra_beta;
  if (nodes == 1) {  // the same exchange either way
    const double t = (L - 1) * p.intra_alpha + intra_wire;
    return {t, t};
  }
  // Every message is posted at once: one latency of the slowest link, and each
  // other message its software cost (taken as a message within the node's).
  const double inter_wire = L * (P - L) * bytes * p.inter_beta;
  const double pairwise = p.inter_alpha + (P - 2) * p.intra_alpha + intra_wire + inter_wire;
  const double stage = (L - 1) * p.intra_alpha + P * bytes * p.intra_beta;
  const double by_nodes = 2 * stage + p.inter_alpha + (std::ceil((N - 1) / L) - 1) * p.intra_alpha + inter_wire;
  return {pairwise, by_nodes};
}

}  // namespace conveyor::redistribute::detail
