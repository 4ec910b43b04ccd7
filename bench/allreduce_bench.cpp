// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench allreduce` and `conveyor bench overlap` (see allreduce_bench.hpp).
//
// Method (after nccl-tests and the OSU benchmarks): float32 sum; each rank's input
// is small integers, so the sum is exact and every result can be checked. For each
// size every implementation is settled (auto's measuring phase, timed apart) and
// warmed up, then sampled `reps` times round-robin with the others, the order
// reversed every other round; a sample is K back-to-back calls (K agreed by all ranks so a
// sample lasts ~2 ms at small sizes), preceded by a barrier, and its time is the
// slowest rank's. algbw = bytes / time; busbw = algbw * 2(P-1)/P (the nccl-tests
// definition: the fraction of the data each rank must send and receive).
#include "allreduce_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/simd.hpp"

namespace conveyor::bench {
namespace {

struct impl {
  std::string name;
  std::function<void()> run;
  std::string chosen;  // "-" for MPI's own; else filled from `algorithm` at the end
  // What the last call ran: stored as the enum, not a string, so that the timed
  // calls of Conveyor's rows do not pay a string (and, for the long names, a heap
  // allocation) that the stock row does not.
  allreduce_algorithm algorithm{};
  bool trial = false;         // the last call was a trial of auto's measuring phase
  int settle_calls = 0;       // calls until the implementation settled (1: at once)
  double settle_seconds = 0;  // their time, slowest rank: the cold phase
};

// `steps` dependent read-modify-writes of a volatile: local work of a few ns that
// the compiler cannot remove, placed before MPI_Allreduce in the `stock+STEPS`
// rows. Those rows show what a given amount of work in front of the call costs in
// the exchange's time (a wrapper's checks are such work).
void local_work(int steps) {
  volatile unsigned x = 1;
  for (int q = 0; q < steps; ++q) x = x * 3 + 1;
}

// Nanoseconds of local_work(steps) on this rank: the median of 15 timed batches.
double local_work_ns(int steps) {
  std::vector<double> batches;
  constexpr int kCalls = 200000;
  for (int b = 0; b < 15; ++b) {
    const double t0 = MPI_Wtime();
    for (int c = 0; c < kCalls; ++c) local_work(steps);
    batches.push_back((MPI_Wtime() - t0) / kCalls * 1e9);
  }
  std::nth_element(batches.begin(), batches.begin() + 7, batches.end());
  return batches[7];
}

// Calls before giving up on an implementation settling (auto's measuring phase
// takes 2 x 31 calls per size class at most).
constexpr int kMaxSettleCalls = 1000;

// Fills the rank's input and returns the expected sum of element i.
void fill(std::vector<float>& send, int rank) {
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>((rank + i) % 7);
}
float expected(std::size_t i, int size) {
  float s = 0;
  for (int q = 0; q < size; ++q) s += static_cast<float>((q + i) % 7);
  return s;
}

// Every power of two and 3 * 2^k in [min, max] (size_step 0), or a geometric
// series of size_step (the demo's short tour).
std::vector<std::size_t> sizes(const allreduce_bench_options& o) {
  std::vector<std::size_t> out;
  if (o.size_step == 0) {
    for (std::size_t p = 1; p <= o.max_bytes; p *= 2) {
      for (std::size_t b : {p, 3 * p}) {
        if (b >= o.min_bytes && b <= o.max_bytes && (b == p || p >= 4))
          out.push_back(b);  // 3 * 2^k from 12 B (whole floats)
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  for (std::size_t b = o.min_bytes; b <= o.max_bytes; b *= o.size_step) {
    out.push_back(b);
    if (b * o.size_step > o.max_bytes && b != o.max_bytes) out.push_back(o.max_bytes);
  }
  return out;
}

// The rows when none are named: auto, every algorithm of the table, and the baseline.
std::vector<std::string> rows_of(const allreduce_bench_options& opt) {
  if (!opt.impls.empty()) return opt.impls;
  std::vector<std::string> rows = {"auto"};
  for (const allreduce_algorithm_info& a : allreduce_algorithms()) rows.emplace_back(a.name);
  rows.emplace_back("stock");
  return rows;
}

}  // namespace

int run_allreduce_bench(const allreduce_bench_options& opt) {
  const int rank = world_rank(), P = world_size();
  const std::string mpi_label = opt.mpi_label.empty() ? "MPI_Allreduce" : opt.mpi_label;
  report rep("conveyor bench allreduce: float32 sum on " + std::to_string(P) + " ranks" +
                 (opt.config.empty() ? "" : " (" + opt.config + ")") + ", median of " + std::to_string(opt.reps),
             {"config", "size", "implementation", "algorithm", "median_us", "p10_us", "p90_us", "algbw_GB/s",
              "busbw_GB/s", "x_vs_MPI", "wrong", "settle_calls", "settle_ms"});
  rep.add_note(
      "time = slowest rank; busbw = algbw * 2(P-1)/P; x_vs_MPI = stock median / this median (same run); "
      "wrong = elements differing from the exact sum, over all ranks; settle_calls / settle_ms = the calls "
      "(and their time) before an implementation settled, made before the samples: auto's measuring phase");

  MPI_Comm dup_world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup_world);
  // Per Conveyor row: (stock median / its median, bytes) at every size.
  std::map<std::string, std::vector<std::pair<double, std::size_t>>> vs_mpi;
  const std::vector<std::string> rows = rows_of(opt);
  for (std::size_t bytes : sizes(opt)) {
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
    std::vector<float> send(n), recv(n);
    fill(send, rank);

    std::vector<impl> impls;
    impls.reserve(rows.size());  // the lambdas keep pointers into it
    for (const std::string& name : rows) {
      if (name == "stock" || name == "stock-again") {
        impls.push_back(
            {name == "stock" ? mpi_label : mpi_label + " again",
             [&] { MPI_Allreduce(send.data(), recv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
             "-"});
      } else if (name.rfind("stock+", 0) == 0) {
        // MPI_Allreduce after local_work(steps): the row's "algorithm" column says how
        // long that work takes alone.
        const int steps = std::stoi(name.substr(6));
        char label[64];
        std::snprintf(label, sizeof label, "after %.1f ns of work", local_work_ns(steps));
        impls.push_back({mpi_label + " " + name,
                         [&, steps] {
                           local_work(steps);
                           MPI_Allreduce(send.data(), recv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                                         MPI_COMM_WORLD);
                         },
                         label});
      } else if (name == "stock-dup") {
        // The library's own allreduce on a duplicate of MPI_COMM_WORLD: what a
        // wrapper that keeps a private communicator (as Conveyor does) passes
        // the call to, so that rows pinned to `mpi` can be told apart from the
        // communicator's own cost.
        impls.push_back(
            {mpi_label + " on a dup",
             [&] { MPI_Allreduce(send.data(), recv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, dup_world); },
             "-"});
      } else {
        allreduce_options ao;
        ao.algorithm = parse_algorithm(name);
        ao.ranks_per_node = opt.ranks_per_node;
        impls.push_back({"conveyor " + name, nullptr, ""});
        impl& im = impls.back();
        impl* self = &im;
        im.run = [&, ao, self] {
          const allreduce_report r = allreduce(send.data(), recv.data(), n, op::sum, MPI_COMM_WORLD, ao);
          self->algorithm = r.algorithm;
          self->trial = r.trial;
        };
      }
    }

    // Cold phase: call each implementation until it settles (auto measures its
    // candidates in its first calls of a size class), timed apart from the samples.
    for (auto& im : impls) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      do {
        im.run();
        ++im.settle_calls;
      } while (im.trial && im.settle_calls < kMaxSettleCalls);  // the same on every rank
      im.settle_seconds = max_over_ranks(MPI_Wtime() - t0);
    }
    // Warm up, and agree on K calls per sample from the slowest implementation.
    double slowest = 0;
    for (auto& im : impls) {
      im.run();
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      im.run();
      slowest = std::max(slowest, max_over_ranks(MPI_Wtime() - t0));
    }
    int k = static_cast<int>(std::clamp(2e-3 / std::max(slowest, 1e-7), 1.0, 200.0));
    MPI_Bcast(&k, 1, MPI_INT, 0, MPI_COMM_WORLD);

    std::vector<std::vector<double>> samples(impls.size());
    for (int r = 0; r < opt.reps; ++r) {
      for (std::size_t j = 0; j < impls.size(); ++j) {
        // Forward in even rounds, backward in odd ones: no row always runs first
        // (after the barrier) or always after the same neighbour.
        const std::size_t i = r % 2 == 0 ? j : impls.size() - 1 - j;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int c = 0; c < k; ++c) impls[i].run();
        samples[i].push_back(max_over_ranks((MPI_Wtime() - t0) / k));
      }
    }
    // Correctness of one more call of each.
    std::vector<long long> wrong(impls.size());
    for (std::size_t i = 0; i < impls.size(); ++i) {
      std::fill(recv.begin(), recv.end(), -1.0f);
      impls[i].run();
      long long w = 0;
      for (std::size_t e = 0; e < n; ++e) w += recv[e] != expected(e, P);
      MPI_Allreduce(&w, &wrong[i], 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }

    double t_mpi = 0;
    for (std::size_t i = 0; i < impls.size(); ++i) {
      if (impls[i].name == mpi_label) t_mpi = summarize(samples[i]).median;
    }
    for (std::size_t i = 0; i < impls.size() && t_mpi > 0; ++i) {
      if (impls[i].name == mpi_label) continue;
      vs_mpi[impls[i].name].push_back({t_mpi / summarize(samples[i]).median, n * sizeof(float)});
    }
    for (std::size_t i = 0; i < impls.size(); ++i) {
      if (impls[i].chosen.empty()) impls[i].chosen = std::string(algorithm_name(impls[i].algorithm));
      const summary s = summarize(samples[i]);
      const double algbw = static_cast<double>(n * sizeof(float)) / s.median / 1e9;
      rep.add_row({opt.config.empty() ? std::to_string(P) + " ranks" : opt.config, format_bytes(n * sizeof(float)),
                   impls[i].name, impls[i].chosen, format_fixed(s.median * 1e6, 3), format_fixed(s.p10 * 1e6, 3),
                   format_fixed(s.p90 * 1e6, 3), format_fixed(algbw, 3),
                   format_fixed(algbw * 2.0 * (P - 1) / std::max(P, 1), 3),
                   t_mpi > 0 ? format_fixed(t_mpi / s.median, 2) : "-", std::to_string(wrong[i]),
                   std::to_string(impls[i].settle_calls), format_fixed(impls[i].settle_seconds * 1e3, 3)});
    }
  }
  for (const auto& [name, ratios] : vs_mpi) {
    double log_sum = 0;
    auto worst = ratios.front();
    for (const auto& r : ratios) {
      log_sum += std::log(r.first);
      if (r.first < worst.first) worst = r;
    }
    rep.add_note(name + " vs " + mpi_label + " over " + std::to_string(ratios.size()) + " sizes: geometric mean " +
                 format_fixed(std::exp(log_sum / static_cast<double>(ratios.size())), 3) + "x, lowest " +
                 format_fixed(worst.first, 3) + "x at " + format_bytes(worst.second));
  }
  MPI_Comm_free(&dup_world);
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

int run_overlap_bench(const allreduce_bench_options& opt) {
  const int rank = world_rank(), P = world_size();
  report rep("conveyor bench overlap: allreduce(float32 sum) + per-chunk compute on the result, " + std::to_string(P) +
                 " ranks" + (opt.config.empty() ? "" : " (" + opt.config + ")"),
             {"config", "size", "allreduce_ms", "compute_ms", "sum_of_parts_ms", "sequential_ms", "overlapped_ms",
              "overlapped/sum"});
  rep.add_note(
      "compute: 24 dependent fused multiply-adds per element (~ the allreduce's cost at these sizes); "
      "overlapped = the compute runs in on_chunk as each chunk of the result completes");
  // Per Conveyor row: (stock median / its median, bytes) at every size.
  std::map<std::string, std::vector<std::pair<double, std::size_t>>> vs_mpi;
  for (std::size_t bytes : sizes(opt)) {
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
    std::vector<float> send(n), recv(n), out(n);
    fill(send, rank);
    allreduce_options ao;
    ao.ranks_per_node = opt.ranks_per_node;
    ao.segment_bytes = std::max<std::size_t>(64 << 10, bytes / 16);  // >= 16 chunks to overlap with
    const auto compute = [&](std::size_t off, std::size_t cnt) {
      for (std::size_t i = off; i < off + cnt; ++i) {
        float x = recv[i];
        for (int r = 0; r < 24; ++r) x = x * 0.999f + 0.5f;
        out[i] = x;
      }
    };
    const auto time_it = [&](const std::function<void()>& f) {
      std::vector<double> s;
      f();
      for (int r = 0; r < opt.reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        f();
        s.push_back(max_over_ranks(MPI_Wtime() - t0));
      }
      return summarize(s).median;
    };
    const double t_ar = time_it([&] { allreduce(send.data(), recv.data(), n, op::sum, MPI_COMM_WORLD, ao); });
    const double t_cp = time_it([&] { compute(0, n); });
    const double t_seq = time_it([&] {
      allreduce(send.data(), recv.data(), n, op::sum, MPI_COMM_WORLD, ao);
      compute(0, n);
    });
    allreduce_options overlapped = ao;
    overlapped.on_chunk = compute;
    const double t_ov = time_it([&] { allreduce(send.data(), recv.data(), n, op::sum, MPI_COMM_WORLD, overlapped); });
    rep.add_row({opt.config.empty() ? std::to_string(P) + " ranks" : opt.config, format_bytes(n * sizeof(float)),
                 format_fixed(t_ar * 1e3, 3), format_fixed(t_cp * 1e3, 3), format_fixed((t_ar + t_cp) * 1e3, 3),
                 format_fixed(t_seq * 1e3, 3), format_fixed(t_ov * 1e3, 3), format_fixed(t_ov / (t_ar + t_cp), 2)});
  }
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

// Combining column log-sum-exps over the ranks (what a distributed Sinkhorn solver
// does when its rows are split): every rank has its columns' partial results, and
// the rows time only the reductions, on the same float64 buffers:
//   MPI max + sum        MPI_Allreduce(MPI_MAX), then MPI_Allreduce(MPI_SUM): the
//                        typical way (the sums of exp(x - max) need the global max)
//   conveyor max + sum   the same two calls through conveyor::allreduce
//   conveyor logaddexp   one conveyor::allreduce(op::logaddexp) of each rank's
//                        max + log(scaled sum): half the bytes, one call
//   MPI logaddexp        one MPI_Allreduce with conveyor::mpi_op(logaddexp, float64)
// The local work (one exp per element of the rank's rows) is the same either way
// and not timed. Conveyor's calls settle (auto's measuring calls) before sampling;
// samples alternate the rows in rounds; time = the slowest rank's.
int run_lse_bench(const allreduce_bench_options& opt) {
  const int P = world_size(), rank = world_rank();
  report rep(
      "conveyor bench lse: column log-sum-exp of float64 over " + std::to_string(P) + " ranks" +
          (opt.config.empty() ? "" : " (" + opt.config + ")") + ", median of " + std::to_string(opt.reps * 10) +
          " calls; Conveyor SIMD target " + simd_targets().active,
      {"config", "size", "implementation", "median_us", "p10_us", "p90_us", "x_vs_MPI_max+sum", "bytes_reduced"});
  rep.add_note(
      "size = columns x 8 B; bytes_reduced = the bytes each rank puts into reductions per call (2 x size for "
      "max + sum); x_vs_MPI_max+sum = that row's median / this median (same run)");
  const MPI_Op lse_op = mpi_op(op::logaddexp, dtype::float64);
  for (std::size_t bytes : sizes(opt)) {
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(double));
    std::vector<double> mine(n), out1(n), out2(n);
    for (std::size_t j = 0; j < n; ++j)
      mine[j] = -0.01 * static_cast<double>((j * 7 + static_cast<std::size_t>(rank) * 13) % 101);
    const int count = static_cast<int>(n);
    bool trial = false;
    const std::vector<std::string> names = {"MPI max + sum", "conveyor max + sum", "conveyor logaddexp",
                                            "MPI logaddexp"};
    const std::vector<std::function<void()>> fns = {
        [&] {
          MPI_Allreduce(mine.data(), out1.data(), count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          MPI_Allreduce(mine.data(), out2.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        },
        [&] {
          trial = allreduce(mine.data(), out1.data(), n, op::max, MPI_COMM_WORLD).trial;
          trial = allreduce(mine.data(), out2.data(), n, op::sum, MPI_COMM_WORLD).trial || trial;
        },
        [&] { trial = allreduce(mine.data(), out1.data(), n, op::logaddexp, MPI_COMM_WORLD).trial; },
        [&] { MPI_Allreduce(mine.data(), out1.data(), count, MPI_DOUBLE, lse_op, MPI_COMM_WORLD); },
    };
    for (const auto& f : fns) {  // settle: auto measures its candidates in its first calls
      int calls = 0;
      do {
        trial = false;
        f();
      } while (trial && ++calls < kMaxSettleCalls);  // the same on every rank
    }
    const auto samples = interleaved_samples(fns, opt.reps * 10, opt.reps);
    const double base = summarize(samples[0]).median;
    for (std::size_t i = 0; i < fns.size(); ++i) {
      const summary s = summarize(samples[i]);
      rep.add_row({opt.config.empty() ? std::to_string(P) + " ranks" : opt.config, format_bytes(n * sizeof(double)),
                   names[i], format_fixed(s.median * 1e6, 3), format_fixed(s.p10 * 1e6, 3),
                   format_fixed(s.p90 * 1e6, 3), format_fixed(base / s.median, 2),
                   std::to_string((names[i].find("+") != std::string::npos ? 2 : 1) * n * sizeof(double))});
    }
  }
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

}  // namespace conveyor::bench
