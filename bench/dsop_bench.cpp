// SPDX-License-Identifier: BSD-3-Clause
#include "dsop_bench.hpp"

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "conveyor/dsop.hpp"

namespace conveyor::bench {
namespace {

struct shape {
  std::size_t N, M;
};

shape parse_shape(const std::string& s) {
  const std::size_t x = s.find('x');
  try {
    if (x == std::string::npos) return {std::stoul(s), std::stoul(s)};
    return {std::stoul(s.substr(0, x)), std::stoul(s.substr(x + 1))};
  } catch (const std::exception&) {
    throw error(errc::invalid_argument, "bench dsop: bad shape '" + s + "' (N or NxM)");
  }
}

// The rows when none are named: auto, then every algorithm of the table.
std::vector<std::string> algorithms_of(const dsop_bench_options& opt) {
  if (!opt.algorithms.empty()) return opt.algorithms;
  std::vector<std::string> names = {"auto"};
  for (const outer_algorithm_info& a : outer_algorithms()) names.emplace_back(a.name);
  return names;
}

template <class T>
void bench_shape(const shape s, const dsop_bench_options& opt, report& rep) {
  const int me = world_rank();
  std::vector<T> a(s.N), b(s.M);
  for (std::size_t i = 0; i < s.N; ++i) a[i] = static_cast<T>(1 + (i * 7 + static_cast<std::size_t>(me)) % 13);
  for (std::size_t j = 0; j < s.M; ++j) b[j] = static_cast<T>(1 + (j * 5 + static_cast<std::size_t>(me)) % 11);
  const outer_block mine = outer_rows(s.N, me, world_size());
  std::vector<T> G((opt.distributed ? mine.count : s.N) * s.M);
  const std::string config = opt.config.empty() ? std::to_string(world_size()) + " ranks" : opt.config;
  for (const auto& name : algorithms_of(opt)) {
    outer_options o;
    o.algorithm = parse_outer_algorithm(name);
    o.distributed = opt.distributed;
    std::vector<double> samples;
    outer_report r;
    for (int it = 0; it < opt.iterations; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      r = outer_sum(a.data(), s.N, b.data(), s.M, G.data(), G.size(), MPI_COMM_WORLD, o);
      const double slowest = max_over_ranks(MPI_Wtime() - t0);
      if (it > 0) samples.push_back(slowest);
    }
    const summary t = summarize(samples);
    rep.add_row({config, opt.dtype, std::to_string(s.N), std::to_string(s.M), name,
                 std::string(outer_algorithm_name(r.algorithm)), format_fixed(t.median * 1e3, 3),
                 format_fixed(t.p10 * 1e3, 3), format_fixed(t.p90 * 1e3, 3),
                 format_fixed(r.predicted_seconds * 1e3, 3)});
    if (me == 0) {
      std::printf("  %-26s %6zu x %-6zu %-25s %10.3f ms (chose %s)\n", config.c_str(), s.N, s.M, name.c_str(),
                  t.median * 1e3, std::string(outer_algorithm_name(r.algorithm)).c_str());
      std::fflush(stdout);
    }
  }
}

}  // namespace

int run_dsop_bench(const dsop_bench_options& opt) {
  report rep("conveyor bench dsop: G = sum of outer products, ms per call (slowest rank; median, p10, p90)",
             {"config", "dtype", "N", "M", "impl", "ran", "ms_median", "ms_p10", "ms_p90", "ms_predicted"});
  rep.add_note("barrier before each call; the first of " + std::to_string(opt.iterations) + " calls is a warm-up");
  if (opt.iterations < 2) throw error(errc::invalid_argument, "bench dsop: need --iterations >= 2");
  for (const auto& s : opt.shapes) {
    if (opt.dtype == "float64") bench_shape<double>(parse_shape(s), opt, rep);
    else if (opt.dtype == "float32") bench_shape<float>(parse_shape(s), opt, rep);
    else throw error(errc::invalid_argument, "bench dsop: dtype must be float32 or float64");
  }
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

}  // namespace conveyor::bench
