// SPDX-License-Identifier: BSD-3-Clause
#include "model_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "conveyor/alltoall.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/dsop.hpp"
#include "conveyor/redistribute.hpp"

namespace conveyor::bench {
namespace {

// The job's nodes as the library sees them: count, smallest and largest.
struct node_shape {
  int nodes = 1, min_local = 1, max_local = 1;
};

node_shape job_nodes(int ranks_per_node) {
  const int P = world_size(), me = world_rank();
  int local_rank = me, local_size = 0;
  if (ranks_per_node > 0) {
    local_rank = me % ranks_per_node;
    local_size = std::min(ranks_per_node, P - me / ranks_per_node * ranks_per_node);
  } else {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
  }
  node_shape s;
  int leader = local_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &s.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local_size, &s.min_local, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local_size, &s.max_local, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return s;
}

// One case of one engine: the candidates' predictions and measured medians.
struct candidate {
  std::string name;
  std::function<double()>
      run;  // one call; returns the model's prediction for it (NaN: a baseline the model does not cover)
  double predicted = 0, measured = 0;
};

// Times the candidates interleaved, adds a row per candidate and a summary row
// (the model's pick against the measured fastest).
void measure_case(const std::string& config, const std::string& engine, const std::string& what,
                  std::vector<candidate>& cs, const model_bench_options& opt, report& rep) {
  std::vector<std::function<void()>> fns;
  for (auto& c : cs) fns.push_back([&c] { c.predicted = c.run(); });
  const auto samples = interleaved_samples(fns, opt.iterations, opt.rounds);
  std::size_t pick = 0, fastest = 0;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    cs[i].measured = summarize(samples[i]).median;
    if (std::isnan(cs[pick].predicted) || cs[i].predicted < cs[pick].predicted) pick = i;
    if (cs[i].measured < cs[fastest].measured) fastest = i;
  }
  for (const auto& c : cs) {
    const bool modelled = !std::isnan(c.predicted);
    rep.add_row({config, engine, what, c.name, modelled ? format_fixed(c.predicted * 1e3, 4) : "-",
                 format_fixed(c.measured * 1e3, 4), modelled ? format_fixed(c.predicted / c.measured, 2) : "-", ""});
  }
  const double cost_of_pick = cs[pick].measured / cs[fastest].measured;
  rep.add_row({config, engine, what, "model picks " + cs[pick].name, format_fixed(cs[pick].predicted * 1e3, 4),
               "fastest " + cs[fastest].name, "", format_fixed(cost_of_pick, 2)});
  if (world_rank() == 0) {
    std::printf("  %-10s %-14s %-12s model picks %-22s measured fastest %-22s pick/fastest %.2f\n", config.c_str(),
                engine.c_str(), what.c_str(), cs[pick].name.c_str(), cs[fastest].name.c_str(), cost_of_pick);
    std::fflush(stdout);
  }
}

void allreduce_cases(const std::string& config, const node_shape& ns, const model_bench_options& opt, report& rep) {
  const int P = world_size();
  for (const std::size_t bytes : opt.allreduce_bytes) {
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
    std::vector<float> send(n, 1.0f), recv(n);
    // What the model compares on this layout (the table of algorithms' constraints).
    const std::vector<allreduce_algorithm> here =
        allreduce_model_candidates(n * sizeof(float), ns.nodes, P > 1 ? ns.max_local : 1);
    std::vector<candidate> cs;
    for (const auto a : here) {
      cs.push_back({std::string(algorithm_name(a)), [&, a] {
                      allreduce_options o;
                      o.algorithm = a;
                      o.ranks_per_node = opt.ranks_per_node;
                      return allreduce(send.data(), recv.data(), n, op::sum, MPI_COMM_WORLD, o).predicted_seconds;
                    }});
    }
    measure_case(config, "allreduce", format_bytes(n * sizeof(float)), cs, opt, rep);
  }
}

void dsop_cases(const std::string& config, const model_bench_options& opt, report& rep) {
  const int me = world_rank();
  for (const std::size_t N : opt.dsop_sizes) {
    std::vector<double> a(N), b(N), G(N * N);
    for (std::size_t i = 0; i < N; ++i) a[i] = b[i] = 1.0 + static_cast<double>((i + static_cast<std::size_t>(me)) % 7);
    std::vector<candidate> cs;
    for (const outer_algorithm_info& info : outer_algorithms()) {
      const outer_algorithm alg = info.algorithm;
      cs.push_back(
          {std::string(outer_algorithm_name(alg)), [&, alg] {
             outer_options o;
             o.algorithm = alg;
             o.allreduce.ranks_per_node = opt.ranks_per_node;
             return outer_sum(a.data(), N, b.data(), N, G.data(), G.size(), MPI_COMM_WORLD, o).predicted_seconds;
           }});
    }
    measure_case(config, "dsop", std::to_string(N) + "^2", cs, opt, rep);
  }
}

void redistribute_cases(const std::string& config, const model_bench_options& opt, report& rep) {
  namespace rd = redistribute;
  const int P = world_size();
  for (const std::int64_t n : opt.redistribute_sizes) {
    // Block-cyclic 32 x 32, P x 1 grid -> 1 x P grid (a column-to-row relayout).
    const auto make = [&](int prow, int pcol, std::vector<double>& storage) {
      rd::layout::block_cyclic_params bc;
      bc.M = bc.N = n;
      bc.mb = bc.nb = 32;
      bc.prow = prow;
      bc.pcol = pcol;
      rd::layout probe = rd::layout::block_cyclic(bc);
      const auto shape = probe.local_shape(world_rank());
      storage.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, shape[0] * shape[1])), 1.0);
      bc.local = storage.data();
      bc.lld = std::max<std::int64_t>(1, shape[0]);
      return rd::layout::block_cyclic(bc);
    };
    std::vector<double> src_data, dst_data;
    const rd::layout src = make(P, 1, src_data), dst = make(1, P, dst_data);
    rd::transform t;
    t.src = &src;
    t.dst = &dst;
    std::vector<rd::transport> transports;  // the ones the cost model chooses among
    for (const rd::transport_info& info : rd::transports()) {
      if (info.modeled) transports.push_back(info.transport);
    }
    std::vector<rd::plan> plans;
    for (const auto tr : transports) {
      rd::plan_options o;
      o.transport = tr;
      o.ranks_per_node = opt.ranks_per_node;
      plans.emplace_back(t, MPI_COMM_WORLD, o);
    }
    // The model's numbers for every transport come with a plan that let it choose.
    rd::plan_options chooser;
    chooser.ranks_per_node = opt.ranks_per_node;
    const rd::plan automatic(t, MPI_COMM_WORLD, chooser);
    std::vector<candidate> cs;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const double predicted = automatic.predicted_seconds(transports[i]);
      cs.push_back({std::string(rd::transport_name(transports[i])), [&plans, i, predicted] {
                      plans[i].execute();
                      return predicted;
                    }});
    }
    measure_case(config, "redistribute", std::to_string(n) + "^2", cs, opt, rep);
  }
}

// MPI_Alltoall's movement, `bytes` per rank pair: every algorithm of the family's
// table (conveyor::alltoall_algorithms(): the pairwise exchange, the MPI library's
// own MPI_Alltoall, the baseline, not modelled, and, across nodes, the node-aware
// exchange), each beside its row's prediction. The layout is the library's (real
// nodes, or CONVEYOR_RANKS_PER_NODE).
void alltoall_cases(const std::string& config, const model_bench_options& opt, report& rep) {
  const int P = world_size();
  const int nodes = alltoall_nodes(MPI_COMM_WORLD);
  // (the rows' names in this benchmark's results since it began: bench/report_model.py)
  const auto label = [](std::string_view name) -> std::string {
    return name == "conveyor" ? "pairwise" : name == "mpi" ? "MPI_Alltoall" : std::string(name);
  };
  for (const std::size_t bytes : opt.alltoall_bytes) {
    const auto b = static_cast<std::int64_t>(bytes);
    std::vector<char> send(bytes * static_cast<std::size_t>(P), 1), recv(send.size());
    const std::array<double, 2> predicted = predict_alltoall(b, MPI_COMM_WORLD);
    std::vector<candidate> cs;
    for (const alltoall_algorithm_info& a : alltoall_algorithms()) {
      if (a.several_nodes && nodes == 1) continue;
      cs.push_back({label(a.name), [&send, &recv, &predicted, b, a] {
                      a.run(send.data(), recv.data(), b, MPI_COMM_WORLD);
                      return a.predicted < 0 ? std::nan("") : predicted[static_cast<std::size_t>(a.predicted)];
                    }});
    }
    measure_case(config, "alltoall", format_bytes(bytes), cs, opt, rep);
  }
}

// --- the model alone, for machines this project cannot run on -------------------

// The papers' clusters. Neither paper states latencies or intra-node rates; the
// values marked "assumed" are typical of the hardware they name (docs/results.md).
cost_model named_params(const std::string& name) {
  cost_model m = current_cost_model();
  if (name == "current") return m;
  if (name == "coffee") {          // Tianhe-1, Xeon Westmere EP nodes, links limited to 1 Gb/s (COFFEE's Fig. 13)
    m.inter_beta = 1.0 / 0.125e9;  // 1 Gb/s
    m.inter_alpha = 50e-6;         // assumed: TCP over a shaped 1 Gb/s link
    m.intra_alpha = 1e-6;          // assumed: MPICH shared memory on Westmere
    m.intra_beta = 1.0 / 4e9;      // assumed
    m.gamma = 1.0 / 4e9;           // assumed: one Westmere core's streaming add
    m.copy_beta = 1.0 / 3e9;
    return m;
  }
  if (name == "dsop") {          // Euler III: 10 GbE in a bay, 1 rank per node (the DSOP paper's Section 5)
    m.inter_beta = 1.0 / 1.1e9;  // 10 Gb/s at ~90% goodput
    m.inter_alpha = 30e-6;       // assumed: TCP over 10 GbE
    m.gamma = 1.0 / 8e9;         // assumed: Xeon E3-1585L v5, DDR4-2133
    return m;
  }
  throw error(errc::invalid_argument, "bench model: --params must be coffee, dsop or current");
}

int extrapolate(const model_bench_options& opt) {
  if (world_rank() != 0) return 0;
  const cost_model m = named_params(opt.params);
  report rep("conveyor bench model --extrapolate: the cost model's pick and predicted ms (" + opt.params +
                 " parameters; no measurement)",
             {"params", "engine", "size", "nodes", "ranks_per_node", "pick", "pick_ms", "baseline", "baseline_ms",
              "baseline/pick"});
  rep.add_note("inter_alpha " + format_fixed(m.inter_alpha * 1e6, 1) + " us, inter " +
               format_fixed(1e-9 / m.inter_beta, 3) + " GB/s, intra_alpha " + format_fixed(m.intra_alpha * 1e6, 1) +
               " us, intra " + format_fixed(1e-9 / m.intra_beta, 2) + " GB/s, reduction " +
               format_fixed(1e-9 / m.gamma, 1) + " GB/s");
  // Allreduce: the COFFEE paper's column sums (n = 230400 float64) and a 64 MiB
  // gradient; baseline ring (its MPICH-Ring). DSOP: N = M = 8000 float64 (the DSOP
  // paper's largest); baseline allreduce (its MPI_Allreduce).
  for (int nodes = 64; nodes <= 4096; nodes *= 2) {
    for (int rpn = 1; rpn <= 64; rpn *= 2) {
      for (const std::size_t bytes : {std::size_t{230400} * 8, std::size_t{64} << 20}) {
        const auto pick = predicted_allreduce_choice(bytes, nodes, rpn, m);
        const double t = predict_allreduce_seconds(pick, bytes, nodes, rpn, m);
        const double ring = predict_allreduce_seconds(allreduce_algorithm::ring, bytes, nodes, rpn, m);
        rep.add_row({opt.params, "allreduce", format_bytes(bytes), std::to_string(nodes), std::to_string(rpn),
                     std::string(algorithm_name(pick)), format_fixed(t * 1e3, 3), "ring", format_fixed(ring * 1e3, 3),
                     format_fixed(ring / t, 2)});
      }
      const auto pick = predicted_outer_choice(8000, 8000, 8, nodes, rpn, false, m);
      const double t = predict_outer_seconds(pick, 8000, 8000, 8, nodes, rpn, false, m);
      const double base = predict_outer_seconds(outer_algorithm::allreduce, 8000, 8000, 8, nodes, rpn, false, m);
      rep.add_row({opt.params, "dsop", "8000^2", std::to_string(nodes), std::to_string(rpn),
                   std::string(outer_algorithm_name(pick)), format_fixed(t * 1e3, 3), "allreduce",
                   format_fixed(base * 1e3, 3), format_fixed(base / t, 2)});
    }
  }
  // MPI_Alltoall of 64 B and 4 KiB per rank pair (an FFT's small transposes); baseline pairwise.
  for (int nodes = 64; nodes <= 4096; nodes *= 2) {
    for (int rpn = 1; rpn <= 64; rpn *= 2) {
      for (const std::int64_t b : {std::int64_t{64}, std::int64_t{4096}}) {
        const std::array<double, 2> t = predict_alltoall(b, nodes, rpn, m);
        const bool by_nodes = t[1] < t[0];
        rep.add_row({opt.params, "alltoall", format_bytes(static_cast<std::size_t>(b)), std::to_string(nodes),
                     std::to_string(rpn), by_nodes ? "by_nodes" : "pairwise", format_fixed(t[by_nodes] * 1e3, 3),
                     "pairwise", format_fixed(t[0] * 1e3, 3), format_fixed(t[0] / t[by_nodes], 2)});
      }
    }
  }
  // The papers' own configurations, for the comparison with what they publish.
  const auto paper_row = [&](const std::string& engine, const std::string& size, int nodes, int rpn, double pick_t,
                             const std::string& pick, const std::string& base, double base_t) {
    rep.add_row({opt.params + " (paper's job)", engine, size, std::to_string(nodes), std::to_string(rpn), pick,
                 format_fixed(pick_t * 1e3, 3), base, format_fixed(base_t * 1e3, 3), format_fixed(base_t / pick_t, 2)});
  };
  if (opt.params == "coffee") {
    for (const std::size_t n : {std::size_t{23040}, std::size_t{61440}, std::size_t{230400}}) {
      const std::size_t bytes = n * 8;
      const auto pick = predicted_allreduce_choice(bytes, 64, 9, m);
      paper_row("allreduce", format_bytes(bytes), 64, 9, predict_allreduce_seconds(pick, bytes, 64, 9, m),
                std::string(algorithm_name(pick)), "ring",
                predict_allreduce_seconds(allreduce_algorithm::ring, bytes, 64, 9, m));
    }
  } else if (opt.params == "dsop") {
    for (const int P : {8, 16, 32, 48}) {
      for (const std::size_t N : {std::size_t{1000}, std::size_t{4000}, std::size_t{8000}}) {
        paper_row("dsop", std::to_string(N) + "^2", P, 1,
                  predict_outer_seconds(outer_algorithm::generalized_rabenseifner, N, N, 8, P, 1, false, m),
                  "generalized_rabenseifner", "allreduce",
                  predict_outer_seconds(outer_algorithm::allreduce, N, N, 8, P, 1, false, m));
      }
    }
  }
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

}  // namespace

int run_model_bench(const model_bench_options& opt) {
  if (opt.extrapolate) return extrapolate(opt);
  if (opt.iterations < 2) throw error(errc::invalid_argument, "bench model: need --iterations >= 2");
  const node_shape ns = job_nodes(opt.ranks_per_node);
  const std::string config = opt.config.empty() ? std::to_string(world_size()) + " ranks" : opt.config;
  report rep(
      "conveyor bench model: the cost model's prediction beside the measured time (slowest rank; median)",
      {"config", "engine", "case", "algorithm", "predicted_ms", "measured_ms", "predicted/measured", "pick/fastest"});
  rep.add_note(std::to_string(ns.nodes) + " nodes of " + std::to_string(ns.min_local) + "-" +
               std::to_string(ns.max_local) + " ranks; barrier before each call; candidates interleaved over " +
               std::to_string(opt.rounds) + " rounds, " + std::to_string(opt.iterations) + " calls each");
  const auto wanted = [&](const char* engine) {
    return std::find(opt.engines.begin(), opt.engines.end(), engine) != opt.engines.end();
  };
  if (wanted("allreduce")) allreduce_cases(config, ns, opt, rep);
  if (wanted("dsop")) dsop_cases(config, opt, rep);
  if (wanted("redistribute")) redistribute_cases(config, opt, rep);
  // The all-to-all's layout is the library's, not the option's.
  if (wanted("alltoall") && opt.ranks_per_node == 0) alltoall_cases(config, opt, rep);
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

}  // namespace conveyor::bench
