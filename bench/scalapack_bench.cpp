// SPDX-License-Identifier: BSD-3-Clause
#include "scalapack_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "scalapack_reference.h"
#include "conveyor/scalapack.h"

namespace conveyor::bench {
namespace {

struct grid_matrix {
  int ctxt = -1;
  int desc[9] = {};
  std::vector<double> local;
};

grid_matrix make(int n, int nb, int pr, int pc, int on_ctxt = -1) {
  grid_matrix g;
  if (on_ctxt >= 0) {
    g.ctxt = on_ctxt;
  } else {
    Cblacs_get(0, 0, &g.ctxt);
    Cblacs_gridinit(&g.ctxt, "R", pr, pc);
  }
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(g.ctxt, &nprow, &npcol, &myrow, &mycol);
  const int zero = 0;
  const int lr = numroc_(&n, &nb, &myrow, &zero, &pr), lc = numroc_(&n, &nb, &mycol, &zero, &pc);
  int lld = std::max(1, lr), info = 0;
  descinit_(g.desc, &n, &n, &nb, &nb, &zero, &zero, &g.ctxt, &lld, &info);
  g.local.assign(static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, lc)), 0.0);
  for (std::size_t i = 0; i < g.local.size(); ++i) g.local[i] = static_cast<double>(i % 1000);
  return g;
}

// Reference and Conveyor calls alternate in rounds (bench_util's interleaved_samples).
std::pair<summary, summary> time_pair(const std::function<void()>& reference, const std::function<void()>& ours,
                                      const scalapack_bench_options& opt, int n) {
  const int iterations = n < 600     ? 3 * opt.iterations
                         : n <= 2048 ? opt.iterations
                         : n <= 4096 ? std::min(opt.iterations, 11)
                                     : std::min(opt.iterations, 7);
  const auto s = interleaved_samples({reference, ours}, iterations, opt.rounds);
  return {summarize(s[0]), summarize(s[1])};
}

}  // namespace

int run_scalapack_bench(const scalapack_bench_options& opt) {
  report rep("conveyor bench scalapack: ms per call vs reference ScaLAPACK (slowest rank; median)",
             {"config", "routine", "plans", "n", "blocks", "grids", "scalapack_ms", "conveyor_ms", "speedup"});
  std::vector<std::string> modes;
  if (opt.cache != "cold") modes.push_back("warm");
  if (opt.cache != "warm") modes.push_back("cold");
  const int P = world_size();
  struct grids {
    int pra, pca, prb, pcb;
  };
  // The issue's grids: 1x2, 2x1 and a shape change on 2 ranks; 2x2 and 1x4 -> 2x2 on 4.
  const std::vector<grids> layouts = P == 2   ? std::vector<grids>{{1, 2, 1, 2}, {2, 1, 2, 1}, {1, 2, 2, 1}}
                                     : P == 4 ? std::vector<grids>{{2, 2, 2, 2}, {1, 4, 2, 2}}
                                              : std::vector<grids>{{1, P, 1, P}};
  const std::string config = opt.config.empty() ? std::to_string(P) + " ranks" : opt.config;
  int whole = 0;
  Cblacs_get(0, 0, &whole);
  Cblacs_gridinit(&whole, "R", 1, P);
  for (int n : opt.sizes) {
    for (const grids& g : layouts) {
      grid_matrix a = make(n, 32, g.pra, g.pca), b = make(n, 128, g.prb, g.pcb);
      const int one = 1;
      const std::string gname = std::to_string(g.pra) + "x" + std::to_string(g.pca) + " -> " + std::to_string(g.prb) +
                                "x" + std::to_string(g.pcb);
      for (const std::string& mode : modes) {
        // Cold: no plan kept, so every Conveyor call plans, runs and frees (ScaLAPACK
        // never keeps anything); warm: the cached plan of the previous call.
        conveyor_scalapack_set_cache_size(mode == "cold" ? 0 : 8);
        const auto row = [&](const std::string& routine, const summary& ref, const summary& ours) {
          rep.add_row({config, routine, mode, std::to_string(n), "32 -> 128", gname, format_fixed(ref.median * 1e3, 3),
                       format_fixed(ours.median * 1e3, 3), format_fixed(ref.median / ours.median, 2)});
          if (world_rank() == 0) {
            std::printf("  %-10s %-4s n=%-6d %-12s scalapack %9.3f ms  conveyor %9.3f ms  %5.2fx\n", routine.c_str(),
                        mode.c_str(), n, gname.c_str(), ref.median * 1e3, ours.median * 1e3, ref.median / ours.median);
            std::fflush(stdout);
          }
        };
        const auto [ref, ours] = time_pair(
            [&] { pdgemr2d_(&n, &n, a.local.data(), &one, &one, a.desc, b.local.data(), &one, &one, b.desc, &whole); },
            [&] {
              conveyor_pdgemr2d(&n, &n, a.local.data(), &one, &one, a.desc, b.local.data(), &one, &one, b.desc, &whole);
            },
            opt, n);
        row("pdgemr2d", ref, ours);
        if (g.pra == g.prb && g.pca == g.pcb) {  // p?tran: A and C on one grid
          for (double beta : {0.0, 1.0}) {
            const double alpha = 1.0;
            grid_matrix c = make(n, 32, g.pra, g.pca, a.ctxt);  // p?tran: one context
            const auto [rt, ct] = time_pair(
                [&] {
                  pdtran_(&n, &n, &alpha, a.local.data(), &one, &one, a.desc, &beta, c.local.data(), &one, &one,
                          c.desc);
                },
                [&] {
                  conveyor_pdtran(&n, &n, &alpha, a.local.data(), &one, &one, a.desc, &beta, c.local.data(), &one, &one,
                                  c.desc);
                },
                opt, n);
            row(beta == 0 ? "pdtran b=0" : "pdtran b=1", rt, ct);
          }
        }
      }
      conveyor_scalapack_set_cache_size(8);
      Cblacs_gridexit(a.ctxt);
      Cblacs_gridexit(b.ctxt);
    }
  }
  Cblacs_gridexit(whole);
  rep.publish(opt.json_path, opt.csv_path);
  return 0;
}

}  // namespace conveyor::bench
