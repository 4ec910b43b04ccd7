// SPDX-License-Identifier: BSD-3-Clause
// measure_cost_model: the numbers behind `conveyor tune`.
//
// alpha and beta of a link come from a ping-pong between two ranks (half the
// round trip, median of repetitions) at 8 bytes and at 4 MiB:
//   alpha = t(8 B),  beta = (t(4 MiB) - t(8 B)) / 4 MiB.
// Within a node: rank 0 and the next rank on its node; between nodes: rank 0 and
// the first rank of node 1. gamma is the slowest rank's time for a 4 MiB float32
// sum divided by 4 MiB. The pipeline segment is chosen so one segment's transfer
// time is ~16 message latencies (latency is then ~6% of a step), within
// [64 KiB, 4 MiB]. copy_beta: the slowest rank's time per byte packing 64 MiB in
// 288-byte rows (the Redistribute engine's local work). Piece size of a link: the
// time of a two-way exchange of 16 KiB and of 64 KiB (what recursive doubling and
// a ring step do), sent whole and in pieces of 4, 8, 16 and 32 KiB posted at once;
// the fastest total wins (0: whole messages). This finds the transport's eager
// limit where crossing it costs a rendezvous handshake, and leaves messages whole
// where the transport pipelines large messages well by itself. shared_alpha: the
// shared_memory allreduce of one float, 100 runs back to back, median of 15
// batches, slowest rank (ranks of one node only).
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/shared_memory.hpp"
#include "runtime/context.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/reduce.hpp"

namespace conveyor {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One-way time between ranks a and b for `bytes`; collective over ctx.comm (ranks
// other than a and b only wait), same answer on every rank.
double ping_pong(detail::comm_context& ctx, int a, int b, std::size_t bytes) {
  std::vector<char> buf(bytes);
  std::vector<double> samples;
  const int reps = bytes > (1 << 16) ? 10 : 200;
  detail::check_mpi(MPI_Barrier(ctx.comm), "MPI_Barrier");
  for (int r = -2; r < reps; ++r) {  // two warm-ups
    const double t0 = MPI_Wtime();
    if (ctx.rank == a) {
      detail::check_mpi(MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, b, 7, ctx.comm), "MPI_Send");
      detail::check_mpi(MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, b, 7, ctx.comm, MPI_STATUS_IGNORE),
                        "MPI_Recv");
      if (r >= 0) samples.push_back((MPI_Wtime() - t0) / 2);
    } else if (ctx.rank == b) {
      detail::check_mpi(MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, a, 7, ctx.comm, MPI_STATUS_IGNORE),
                        "MPI_Recv");
      detail::check_mpi(MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, a, 7, ctx.comm), "MPI_Send");
    }
  }
  double t = ctx.rank == a ? median(samples) : 0;
  detail::check_mpi(MPI_Bcast(&t, 1, MPI_DOUBLE, a, ctx.comm), "MPI_Bcast");
  return t;
}

// Median time of a step of recursive doubling between a and b: a two-way
// exchange of `bytes` in pieces of `piece` bytes, then a float32 sum of what
// arrived into what was sent (a bare exchange loop hides part of the rendezvous
// cost on MPICH). The same answer on every rank.
double exchange_time(detail::comm_context& ctx, int a, int b, std::size_t bytes, std::size_t piece) {
  std::vector<float> out(bytes / sizeof(float), 1.0f), in(bytes / sizeof(float));
  std::vector<double> samples;
  detail::check_mpi(MPI_Barrier(ctx.comm), "MPI_Barrier");
  for (int r = -3; r < 31; ++r) {
    const double t0 = MPI_Wtime();
    if (ctx.rank == a || ctx.rank == b) {
      collectives::detail::exchange_in_pieces(ctx.comm, reinterpret_cast<const char*>(out.data()),
                                              reinterpret_cast<char*>(in.data()), bytes, ctx.rank == a ? b : a, piece);
      reduce_local(in.data(), out.data(), out.size(), op::sum);
    }
    if (r >= 0) samples.push_back(MPI_Wtime() - t0);
  }
  double t = ctx.rank == a ? median(samples) : 0;
  detail::check_mpi(MPI_Bcast(&t, 1, MPI_DOUBLE, a, ctx.comm), "MPI_Bcast");
  return t;
}

std::size_t measure_piece(detail::comm_context& ctx, int a, int b) {
  std::size_t best_piece = 0;
  double best = 0;
  for (std::size_t piece :
       {std::size_t{0}, std::size_t{4096}, std::size_t{8192}, std::size_t{16384}, std::size_t{32768}}) {
    const std::size_t as_bytes = piece ? piece : detail::kMaxMessageBytes;
    const double t = exchange_time(ctx, a, b, 16384, as_bytes) + exchange_time(ctx, a, b, 65536, as_bytes);
    if (piece == 0 || t < 0.95 * best) {  // pieces must win clearly
      best = piece == 0 ? t : std::min(best, t);
      best_piece = piece;
    }
  }
  return best_piece;
}

// shared_alpha: the shared_memory allreduce of one float on the real node layout,
// the median of 15 batches of 100 back-to-back runs, slowest rank. Only when every
// rank is on one node (the algorithm's precondition); else the default stays.
void measure_shared_alpha(detail::comm_context& ctx, double& shared_alpha) {
  const detail::node_layout& node = ctx.layout(0);
  if (ctx.size < 2 || node.nodes != 1) return;
  const auto segment = collectives::detail::shm_allreduce::create(ctx.comm, ctx.rank, ctx.size, node.node_cpus);
  if (!segment) return;
  const reduce_kernel_fn kernel = reduce_kernel(dtype::float32, op::sum);
  float in = 1.0f, out = 0.0f;
  std::vector<double> samples;
  for (int batch = -1; batch < 15; ++batch) {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < 100; ++i) segment->run(&in, &out, 1, sizeof(float), kernel);
    if (batch >= 0) samples.push_back((MPI_Wtime() - t0) / 100);
  }
  double t = median(samples);
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, ctx.comm), "MPI_Allreduce");
  shared_alpha = t;
}

void measure_link(detail::comm_context& ctx, int a, int b, double& alpha, double& beta) {
  constexpr std::size_t kBig = std::size_t{4} << 20;
  alpha = ping_pong(ctx, a, b, 8);
  beta = std::max(1e-12, (ping_pong(ctx, a, b, kBig) - alpha) / static_cast<double>(kBig));
}

}  // namespace

cost_model measure_cost_model(MPI_Comm comm, int ranks_per_node) {
  detail::comm_context& ctx = detail::context_for(comm);
  if (ranks_per_node < 0) throw error(errc::invalid_argument, "ranks_per_node must be >= 0");
  const detail::node_layout& layout = ctx.layout(ranks_per_node);
  cost_model m;
  const auto& node0 = layout.members[0];
  if (node0.size() > 1) {
    measure_link(ctx, node0[0], node0[1], m.intra_alpha, m.intra_beta);
    m.intra_piece_bytes = measure_piece(ctx, node0[0], node0[1]);
  }
  measure_shared_alpha(ctx, m.shared_alpha);
  if (layout.nodes > 1) {
    measure_link(ctx, node0[0], layout.members[1][0], m.inter_alpha, m.inter_beta);
    m.inter_piece_bytes = measure_piece(ctx, node0[0], layout.members[1][0]);
  }

  // gamma: the slowest rank's local reduction speed.
  constexpr std::size_t kFloats = (std::size_t{4} << 20) / sizeof(float);
  std::vector<float> a(kFloats, 1.0f), b(kFloats, 2.0f);
  std::vector<double> samples;
  for (int r = 0; r < 7; ++r) {
    const double t0 = MPI_Wtime();
    reduce_local(a.data(), b.data(), kFloats, op::sum);
    samples.push_back(MPI_Wtime() - t0);
  }
  double t = median(samples);
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, ctx.comm), "MPI_Allreduce");
  m.gamma = t / static_cast<double>(kFloats * sizeof(float));

  // copy_beta: the slowest rank copying 64 MiB (larger than any cache) in rows of
  // 288 bytes out of rows of 1152 (a pack: what the Redistribute transports do).
  constexpr std::size_t kBytes = std::size_t{64} << 20, kRow = 288, kPitch = 4 * kRow;
  std::vector<char> from(kBytes * 4, 1), to(kBytes);
  samples.clear();
  for (int r = 0; r < 3; ++r) {
    const double t0 = MPI_Wtime();
    for (std::size_t i = 0; i < kBytes / kRow; ++i)
      std::memcpy(to.data() + i * kRow, from.data() + i * kPitch + (i % 4) * kRow, kRow);
    samples.push_back(MPI_Wtime() - t0);
  }
  t = median(samples);
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, ctx.comm), "MPI_Allreduce");
  m.copy_beta = t / static_cast<double>(kBytes);

  const double alpha = layout.nodes > 1 ? m.inter_alpha : m.intra_alpha;
  const double beta = layout.nodes > 1 ? m.inter_beta : m.intra_beta;
  const double seg = std::clamp(16 * alpha / beta, 64.0 * 1024, 4.0 * 1024 * 1024);
  std::size_t pow2 = 64 * 1024;
  while (pow2 * 2 <= seg) pow2 *= 2;
  m.segment_bytes = pow2;
  return m;
}

}  // namespace conveyor
