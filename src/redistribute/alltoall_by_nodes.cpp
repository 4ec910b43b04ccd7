// The node-aware all-to-all (alltoall_by_nodes.hpp: steps, leaders, cost). Here:
// the maps of the three steps, built once per size, and the stage's layout:
//   [own node's blocks: L b][pairs this rank sends: L * L_B * b each][pairs it receives: L_A * L * b each]
#include "redistribute/alltoall_by_nodes.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>

namespace conveyor::redistribute::detail {
namespace {

using conveyor::detail::node_layout;

// Appends `run` bytes at `offset` to a map, extending its last box where they follow it.
void add_run(byte_map& m, std::int64_t offset, std::int64_t run) {
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

int ranks_on(const node_layout& l, int node) { return static_cast<int>(l.members[static_cast<std::size_t>(node)].size()); }

}  // namespace

by_nodes_exchange::~by_nodes_exchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
}

void by_nodes_exchange::plan(const conveyor::detail::comm_context& ctx, const node_layout& l, std::int64_t b) {
  const int me = ctx.rank, A = l.node_of[static_cast<std::size_t>(me)], mine = l.local_of[static_cast<std::size_t>(me)];
  const int L = ranks_on(l, A);
  const auto uL = static_cast<std::size_t>(L), uP = static_cast<std::size_t>(ctx.size);
  const std::vector<int>& here = l.members[static_cast<std::size_t>(A)];
  // The stage: own blocks, then the pairs this rank sends, then those it receives.
  std::vector<std::int64_t> send_at(static_cast<std::size_t>(l.nodes), -1), recv_at(static_cast<std::size_t>(l.nodes), -1);
  std::int64_t cursor = L * b;
  for (int B = 0; B < l.nodes; ++B) {
    if (B != A && sender_of(l, A, B) == mine) send_at[static_cast<std::size_t>(B)] = cursor, cursor += L * ranks_on(l, B) * b;
  }
  recv_region_ = cursor;
  for (int S = 0; S < l.nodes; ++S) {
    if (S != A && receiver_of(l, S, A) == mine) recv_at[static_cast<std::size_t>(S)] = cursor - recv_region_, cursor += ranks_on(l, S) * L * b;
  }
  stage_.resize(static_cast<std::size_t>(cursor));

  // 1. gather: to local rank s, the blocks of each node s leads to, then s's own block.
  gather_send_.assign(uL, {}), gather_recv_.assign(uL, {});
  for (int s = 0; s < L; ++s) {
    byte_map &out = gather_send_[static_cast<std::size_t>(s)], &in = gather_recv_[static_cast<std::size_t>(s)];
    for (int B = 0; B < l.nodes; ++B) {
      if (B == A) continue;
      const int LB = ranks_on(l, B);
      if (sender_of(l, A, B) == s) {
        for (int q : l.members[static_cast<std::size_t>(B)]) add_run(out, q * b, b);
      }
      if (sender_of(l, A, B) == mine) add_run(in, send_at[static_cast<std::size_t>(B)] + s * LB * b, LB * b);
    }
    add_run(out, here[static_cast<std::size_t>(s)] * b, b);
    add_run(in, s * b, b);
  }
  // 2. cross: one message per node pair this rank leads, stage to stage.
  cross_send_.assign(uP, {}), cross_recv_.assign(uP, {});
  for (int B = 0; B < l.nodes; ++B) {
    if (B == A) continue;
    const int LB = ranks_on(l, B);
    if (send_at[static_cast<std::size_t>(B)] >= 0) {
      const int q = l.members[static_cast<std::size_t>(B)][static_cast<std::size_t>(receiver_of(l, A, B))];
      add_run(cross_send_[static_cast<std::size_t>(q)], send_at[static_cast<std::size_t>(B)], L * LB * b);
    }
    if (recv_at[static_cast<std::size_t>(B)] >= 0) {
      const int q = l.members[static_cast<std::size_t>(B)][static_cast<std::size_t>(sender_of(l, B, A))];
      add_run(cross_recv_[static_cast<std::size_t>(q)], recv_at[static_cast<std::size_t>(B)], LB * L * b);
    }
  }
  // 3. scatter: to local rank j, its column of each pair this rank received
  // ([source rank][j]: L_S blocks L b apart); from its own stage, the own blocks.
  scatter_send_.assign(uL, {}), scatter_recv_.assign(uL, {});
  for (int j = 0; j < L; ++j) {
    byte_map &out = scatter_send_[static_cast<std::size_t>(j)], &in = scatter_recv_[static_cast<std::size_t>(j)];
    for (int S = 0; S < l.nodes; ++S) {
      if (S == A) continue;
      const int LS = ranks_on(l, S);
      if (recv_at[static_cast<std::size_t>(S)] >= 0) {
        byte_box column{recv_region_ + recv_at[static_cast<std::size_t>(S)] + j * b, b, 0, {}, {}};
        if (LS > 1) column.axes = 1, column.count[0] = LS, column.stride[0] = L * b;
        out.push_back(column);
      }
      if (receiver_of(l, S, A) == j) {
        for (int q : l.members[static_cast<std::size_t>(S)]) add_run(in, q * b, b);
      }
    }
    if (j == mine) {
      add_run(out, 0, L * b);
      for (int q : here) add_run(in, q * b, b);
    }
  }
  bytes_ = b;
}

alltoallw_report by_nodes_exchange::run(conveyor::detail::comm_context& ctx, const node_layout& l, const void* send,
                                        void* recv, std::int64_t b) {
  if (node_comm_ == MPI_COMM_NULL) {
    const int me = ctx.rank;
    conveyor::detail::check_mpi(MPI_Comm_split(ctx.comm, l.node_of[static_cast<std::size_t>(me)],
                                               l.local_of[static_cast<std::size_t>(me)], &node_comm_),
                                "MPI_Comm_split (node-aware all-to-all)");
  }
  if (bytes_ != b) plan(ctx, l, b);
  char* stage = stage_.data();
  const alltoallw_report gathered = alltoallw(send, gather_send_, stage, gather_recv_, node_comm_);
  alltoallw_report rep = alltoallw(stage, cross_send_, stage + recv_region_, cross_recv_, ctx.comm);
  const alltoallw_report scattered = alltoallw(stage, scatter_send_, recv, scatter_recv_, node_comm_);
  rep.self_bytes = gathered.sent_bytes + gathered.self_bytes + scattered.sent_bytes + scattered.self_bytes;
  return rep;
}

std::array<double, 2> predict_alltoall_paths(std::int64_t b, int ranks, int nodes, int largest_node, const cost_model& p) {
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
