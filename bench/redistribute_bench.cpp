// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "conveyor/node_memory.hpp"
#include "conveyor/redistribute.hpp"

namespace conveyor::bench {
namespace {

namespace rd = conveyor::redistribute;

// The tensor paper's experiment: shape (48, 24, 24, 72, 288) int32, grid (2,1,1,2,1)
// -> (1,1,1,1,4) on 4 ranks.
void tensor_case(const redistribute_bench_options& opt, report& rep) {
  const std::vector<std::int64_t> shape = {48, 24, 24, 72, 288};
  const std::vector<int> from = {2, 1, 1, 2, 1}, to = {1, 1, 1, 1, 4};
  const std::int64_t total = std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  const std::size_t local = static_cast<std::size_t>(total / 4);
  std::vector<std::int32_t> src(local), dst(local);
  for (std::size_t i = 0; i < local; ++i)
    src[i] = static_cast<std::int32_t>(i * 7 + static_cast<std::size_t>(world_rank()));
  const rd::layout a = rd::layout::cartesian(shape, from, src.data());
  const rd::layout b = rd::layout::cartesian(shape, to, dst.data());
  rd::transform t;
  t.src = &a;
  t.dst = &b;
  t.type = dtype::int32;
  // The same arrays in node memory, for one_copy: the destination (senders push
  // into it), or only the source (receivers pull from it).
  auto* node_src = static_cast<std::int32_t*>(node_alloc(local * sizeof(std::int32_t)));
  auto* node_dst = static_cast<std::int32_t*>(node_alloc(local * sizeof(std::int32_t)));
  std::memcpy(node_src, src.data(), local * sizeof(std::int32_t));
  const rd::layout a_node = rd::layout::cartesian(shape, from, node_src);
  const rd::layout b_node = rd::layout::cartesian(shape, to, node_dst);
  rd::transform t_pull = t, t_push = t;
  t_pull.src = &a_node;
  t_push.dst = &b_node;
  const std::string config = opt.config.empty() ? std::to_string(world_size()) + " ranks" : opt.config;
  struct variant {
    rd::transport method;
    const rd::transform* what;
    const char* memory;  // where the arrays are, if not on the heap
  };
  // The rows: the datatype baseline first (every ratio is to it), then every
  // transport of the table (one_copy twice: it needs node memory on one side,
  // the destination to push into or the source to pull from), then auto's choice
  // on the heap and with the destination in node memory.
  std::vector<variant> candidates = {variant{rd::transport::datatype, &t, ""}};
  for (const rd::transport_info& info : rd::transports()) {
    if (info.transport == rd::transport::datatype) continue;
    if (info.transport == rd::transport::one_copy) {
      candidates.push_back({info.transport, &t_push, " push (destination in node memory)"});
      candidates.push_back({info.transport, &t_pull, " pull (source in node memory)"});
    } else {
      candidates.push_back({info.transport, &t, ""});
    }
  }
  candidates.push_back({rd::transport::automatic, &t, ""});
  candidates.push_back({rd::transport::automatic, &t_push, " (destination in node memory)"});
  std::vector<variant> methods;
  for (const variant& v : candidates) {
    const std::string name(rd::transport_name(v.method));
    if (v.method == rd::transport::datatype || opt.transports.empty() ||
        std::find(opt.transports.begin(), opt.transports.end(), name) != opt.transports.end()) {
      methods.push_back(v);
    }
  }
  // This machine drifts between states for seconds at a time (docs/results.md: the
  // same case far slower in one run than in another), so the calls are spread over
  // `rounds` rounds, each running every transport in turn (and the memcpy bound):
  // a slow phase hits all of them alike. Each round plans anew and discards its
  // first call (warm-up); a plan's buffers live only during its turn.
  const int rounds = std::max(1, std::min(opt.rounds, opt.iterations - 1));
  const int per_round = (opt.iterations - 1 + rounds - 1) / rounds + 1;  // >= iterations - 1 samples in all
  std::vector<std::vector<double>> samples(methods.size() + 2);
  std::vector<std::string> names(methods.size());
  std::vector<double> remote(methods.size(), 0);
  std::vector<std::vector<double>> cold(methods.size());  // plan built + first execution, per round
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < methods.size(); ++i) {
      rd::plan_options o;
      o.transport = methods[i].method;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_seconds();
      rd::plan p(*methods[i].what, MPI_COMM_WORLD, o);
      p.execute();
      cold[i].push_back(max_over_ranks(now_seconds() - t0));
      names[i] =
          std::string(rd::transport_name(o.transport)) + methods[i].memory +
          (o.transport == rd::transport::automatic ? " (ran " + std::string(rd::transport_name(p.transport())) + ")"
                                                   : "");
      remote[i] = static_cast<double>(p.remote_bytes());
      collective_samples(samples[i], per_round, [&] { p.execute(); });
    }
    // The physical limit: every element must be read once and written once, so no
    // redistribution beats every rank copying its whole share at once.
    const std::size_t bytes = local * sizeof(std::int32_t);
    collective_samples(samples[methods.size()], per_round, [&] { std::memcpy(dst.data(), src.data(), bytes); });
    // Two copies of the bytes that cross ranks (pack, unpack: one_sided's least),
    // one of the rest.
    const auto crossing = static_cast<std::size_t>(remote[0] / world_size());
    collective_samples(samples[methods.size() + 1], per_round, [&] {
      std::memcpy(dst.data(), src.data(), bytes);
      std::memcpy(dst.data(), src.data(), std::min(crossing, bytes));
    });
  }
  const double datatype_ms = summarize(samples[0]).median * 1e3;
  const auto add = [&](const std::string& name, const summary& s, double bytes, const std::string& cold_ms) {
    rep.add_row({config, "tensor 5-D int32", name, format_fixed(s.median * 1e3, 2), format_fixed(s.p10 * 1e3, 2),
                 format_fixed(s.p90 * 1e3, 2), format_fixed(datatype_ms / (s.median * 1e3), 2),
                 format_fixed(bytes / 1e6, 1), format_fixed(bytes / s.median / 1e9, 2), cold_ms});
  };
  for (std::size_t i = 0; i < methods.size(); ++i) {
    add(names[i], summarize(samples[i]), remote[i], format_fixed(summarize(cold[i]).median * 1e3, 2));
  }
  add("memcpy bound (one copy of every byte)", summarize(samples[methods.size()]), 0, "-");
  add("two-copy bound (remote bytes copied twice)", summarize(samples[methods.size() + 1]), 0, "-");
  node_free(node_src);
  node_free(node_dst);
}

// Relabeling: bytes between ranks under each relabeling of the table, and the
// brute-force optimum (every permutation, up to 8 ranks).
std::int64_t brute_force(const std::vector<std::int64_t>& V, int P) {
  std::vector<int> s(static_cast<std::size_t>(P));
  std::iota(s.begin(), s.end(), 0);
  std::int64_t best = -1;
  do {
    std::int64_t moved = 0;
    for (int i = 0; i < P; ++i) {
      for (int j = 0; j < P; ++j) {
        if (i != s[static_cast<std::size_t>(j)]) moved += V[static_cast<std::size_t>(i * P + j)];
      }
    }
    if (best < 0 || moved < best) best = moved;
  } while (std::next_permutation(s.begin(), s.end()));
  return best;
}

void relabel_case(const std::string& name, const rd::layout& a, const rd::layout& b, report& rep) {
  rd::transform t;
  t.src = &a;
  t.dst = &b;
  std::vector<std::string> row{std::to_string(world_size()) + " ranks", name};
  std::vector<std::int64_t> V;
  for (const rd::relabeling_info& r : rd::relabelings()) {  // a column per row of the table
    rd::plan_options o;
    o.relabel = r.mode;
    rd::plan p(t, MPI_COMM_WORLD, o);
    row.push_back(format_fixed(static_cast<double>(p.relabeled_remote_bytes()) / 1e6, 3));
    V = p.volume();
  }
  const int P = world_size();
  row.push_back(P <= 8 ? format_fixed(static_cast<double>(brute_force(V, P)) / 1e6, 3) : "-");
  rep.add_row(row);
}

void relabel_cases(report& rep) {
  const int P = world_size(), me = world_rank();
  // Layouts are planned, never executed: storage is a dummy buffer (validation needs one).
  static std::vector<double> dummy(1);
  // 1. Block-cyclic 32 -> 128 blocks on a row-major grid, destination on a column-major grid.
  for (int pr = 1; pr <= P; ++pr) {
    if (P % pr) continue;
    rd::layout::block_cyclic_params s, d;
    s.M = d.M = 4000;
    s.N = d.N = 4000;
    s.mb = s.nb = 32;
    d.mb = d.nb = 128;
    s.prow = d.prow = pr;
    s.pcol = d.pcol = P / pr;
    d.row_major_grid = false;
    s.local = d.local = dummy.data();
    s.lld = d.lld = 1 << 20;
    relabel_case(
        "block-cyclic 4000^2, 32->128, grid " + std::to_string(pr) + "x" + std::to_string(P / pr) + " row->col order",
        rd::layout::block_cyclic(s), rd::layout::block_cyclic(d), rep);
  }
  // 2. Cartesian grids with shifted rank numbering: a rotation of owners.
  {
    std::vector<int> owners(static_cast<std::size_t>(P)), rotated(static_cast<std::size_t>(P));
    std::iota(owners.begin(), owners.end(), 0);
    for (int r = 0; r < P; ++r) rotated[static_cast<std::size_t>(r)] = (r + 1) % P;
    const auto split = rd::axis_splits::regular(1000 * P, 1000);
    rd::layout a = rd::layout::custom({split, rd::axis_splits::regular(1000, 1000)}, owners);
    rd::layout b = rd::layout::custom({split, rd::axis_splits::regular(1000, 1000)}, rotated);
    for (rd::layout* l : {&a, &b}) {  // planned only, never executed
      for (const auto& blk : l->blocks_of(me)) l->set_storage(blk, dummy.data(), {1000, 1});
    }
    relabel_case("1-D blocks, owners rotated by one rank", a, b, rep);
  }
}

// A local transpose (one rank, MPI_COMM_SELF): a 4000 x 2000 float64 block-cyclic
// matrix into its 2000 x 4000 transpose, in 32 x 32 blocks (ScaLAPACK's case: every
// piece one tile) and as one block (one piece: the kernel tiles it), next to a
// memcpy of the same 64 MB (the physical limit: one read and one write of every byte).
void local_transpose_case(const redistribute_bench_options& opt, report& rep) {
  const std::int64_t R = 4000, C = 2000;
  std::vector<double> a(static_cast<std::size_t>(R * C), 1.0), c(static_cast<std::size_t>(R * C), 0.0);
  const auto median_ms = [&](auto&& fn) {
    std::vector<double> t;
    for (int i = 0; i <= opt.iterations; ++i) {
      const double t0 = MPI_Wtime();
      fn();
      if (i > 0) t.push_back(MPI_Wtime() - t0);
    }
    return summarize(t).median * 1e3;
  };
  const double bound = median_ms([&] { std::memcpy(c.data(), a.data(), a.size() * sizeof(double)); });
  for (std::int64_t blk : {std::int64_t{32}, R}) {
    rd::layout::block_cyclic_params p;
    p.M = R;
    p.N = C;
    p.mb = blk;
    p.nb = std::min(blk, C);
    p.local = a.data();
    p.lld = R;
    rd::layout::block_cyclic_params q = p;
    q.M = C;
    q.N = R;
    q.mb = p.nb;
    q.nb = p.mb;
    q.local = c.data();
    q.lld = C;
    const rd::layout src = rd::layout::block_cyclic(p), dst = rd::layout::block_cyclic(q);
    rd::transform t;
    t.src = &src;
    t.dst = &dst;
    t.perm = {1, 0};
    rd::plan_options o;
    o.transport = rd::transport::one_sided;
    rd::plan plan(t, MPI_COMM_SELF, o);
    const double ms = median_ms([&] { plan.execute(); });
    rep.add_row({blk == R ? "one block" : "32 x 32 blocks", format_fixed(ms, 2), format_fixed(bound, 2),
                 format_fixed(ms / bound, 2)});
  }
}

}  // namespace

int run_redistribute_bench(const redistribute_bench_options& opt) {
  report rep("conveyor bench redistribute: tensor paper case, ms per redistribution (slowest rank)",
             {"config", "case", "transport", "ms_median", "ms_p10", "ms_p90", "x_datatype", "MB_between_ranks",
              "GB_per_s", "cold_ms"});
  rep.add_note("barrier before each call; " + std::to_string(opt.rounds) + " rounds over all transports, " +
               std::to_string(opt.iterations) +
               " calls per transport in all, the first of each round a warm-up; cold_ms: "
               "the plan built and executed once (median over rounds)");
  if (world_size() == 4) {
    tensor_case(opt, rep);
  } else if (world_rank() == 0) {
    std::printf("tensor case skipped: it needs 4 ranks (grids (2,1,1,2,1) -> (1,1,1,1,4)), have %d\n", world_size());
  }
  std::vector<std::string> relabel_columns{"config", "case"};
  for (const rd::relabeling_info& r : rd::relabelings()) relabel_columns.emplace_back(r.name);
  relabel_columns.emplace_back("brute_force");
  report rel("conveyor bench redistribute: MB moved between ranks by relabeling", relabel_columns);
  relabel_cases(rel);
  report tr("conveyor bench redistribute: local transpose, 4000 x 2000 float64 on one rank (median ms)",
            {"pieces", "transpose_ms", "memcpy_ms", "x_memcpy"});
  if (world_rank() == 0) local_transpose_case(opt, tr);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    rep.print();
    rel.print();
    tr.print();
    if (!opt.json_path.empty()) rep.write_json(opt.json_path);
    if (!opt.csv_path.empty()) {
      rep.write_csv(opt.csv_path);
      rel.write_csv(opt.csv_path.substr(0, opt.csv_path.size() - 4) + "-relabel.csv");
    }
  }
  return 0;
}

}  // namespace conveyor::bench
