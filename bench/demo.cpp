// SPDX-License-Identifier: BSD-3-Clause
// `conveyor demo` (= `conveyor-bench demo`): a short tour of each engine next to what users would otherwise
// use, on whatever ranks it was launched with (scripts/demo uses 2 local ranks).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "allreduce_bench.hpp"
#include "dsop_bench.hpp"
#include "bench_util.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/version.hpp"
#include "reduce_bench.hpp"
#ifdef CONVEYOR_HAVE_SCALAPACK
#include "scalapack_bench.hpp"
#endif
#include "sinkhorn_bench.hpp"
#include "demo.hpp"

namespace conveyor::bench {
namespace {

void section(const char* title) {
  if (world_rank() == 0) std::printf("\n=== %s ===\n", title);
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
}

// Median over ranks-synchronised repetitions of the slowest rank's time.
double median_allreduce_seconds(const float* send, float* recv, std::size_t n, MPI_Op op, int reps) {
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(send, recv, static_cast<int>(n), MPI_FLOAT, op, MPI_COMM_WORLD);
    samples.push_back(bench::max_over_ranks(MPI_Wtime() - t0));
  }
  return bench::summarize(samples).median;
}

void demo_mpi_op() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rank = world_rank();
  if (rank == 0) {
    std::printf(
        "MPI_Allreduce(float32, sum) on %d rank(s): the MPI library's MPI_SUM vs\n"
        "conveyor::mpi_op(op::sum, dtype::float32) -- same collective algorithm,\n"
        "only the local reduction differs.\n\n",
        size);
    std::printf("%10s  %14s  %14s  %8s  %s\n", "size", "MPI_SUM ms", "conveyor ms", "speedup", "results");
  }
  for (std::size_t bytes : {std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{16} << 20}) {
    const std::size_t n = bytes / sizeof(float);
    std::vector<float> send(n), a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) send[i] = static_cast<float>((i + rank) % 17);  // exact sums
    const double t_mpi = median_allreduce_seconds(send.data(), a.data(), n, MPI_SUM, 9);
    const double t_cv = median_allreduce_seconds(send.data(), b.data(), n, mpi_op(op::sum, dtype::float32), 9);
    int same = std::memcmp(a.data(), b.data(), bytes) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("%10s  %14.3f  %14.3f  %7.2fx  %s\n", bench::format_bytes(bytes).c_str(), t_mpi * 1e3, t_cv * 1e3,
                  t_mpi / t_cv, same ? "identical" : "DIFFERENT");
    }
  }
}

// The build and the job (`conveyor info` says more).
void print_build() {
  if (world_rank() != 0) return;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<std::size_t>(len));
  mpi = mpi.substr(0, mpi.find_first_of("\n,"));
  std::printf("conveyor %s, %s, SIMD %s, %d rank(s)\n", CONVEYOR_VERSION_STRING, mpi.c_str(),
              simd_targets().active.c_str(), world_size());
}

// Entropic OT to convergence on n x n squared distances of points on [0, 1),
// rows split over the ranks (balanced_rows), log domain.
void solve_ot(std::size_t n, double eps) {
  namespace sk = conveyor::sinkhorn;
  const sk::row_block mine = sk::balanced_rows(n, world_rank(), world_size());
  const auto point = [](std::size_t i) { return static_cast<double>((i * 7919) % 1000) / 1000.0; };
  std::vector<double> C(mine.count * n), a(mine.count, 1.0 / static_cast<double>(n)),
      b(n, 1.0 / static_cast<double>(n));
  for (std::size_t i = 0; i < mine.count; ++i) {
    for (std::size_t j = 0; j < n; ++j)
      C[i * n + j] = (point(mine.first + i) - point(j)) * (point(mine.first + i) - point(j));
  }
  sk::options o;
  o.log_domain = true;
  o.tol = 1e-8;
  const auto res = sk::transport(C.data(), mine.count, n, n, a.data(), b.data(), eps, MPI_COMM_WORLD, o);
  const double total = max_over_ranks(res.time.total);
  if (world_rank() == 0) {
    std::printf("%zu x %zu, eps %g: %s after %d iterations, error %.2e, cost %.9g, %.3f s\n", n, n, eps,
                std::string(sk::status_name(res.state)).c_str(), res.iterations, res.error, res.cost, total);
  }
}

}  // namespace

int run_demo() {
  section("Conveyor: this build and this job");
  print_build();

  section("Reduce engine: local reduction kernels (rank 0), sum/float32");
  if (world_rank() == 0) {
    bench::reduce_bench_options o;
    o.only_case = "sum/float32";
    o.min_bytes = 4 << 10;
    o.max_bytes = 64 << 20;
    o.size_step = 16;
    o.reps = 7;
    bench::run_reduce_bench(o);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  section("Reduce engine: Conveyor's kernels inside the MPI library's collectives");
  demo_mpi_op();

  section("Reduce engine: Conveyor's allreduce (auto) vs the MPI library's MPI_Allreduce");
  {
    bench::allreduce_bench_options o;
    o.min_bytes = 64;
    o.max_bytes = std::size_t{16} << 20;
    o.size_step = 16;
    o.reps = 7;
    o.impls = {"auto", "stock"};
    bench::run_allreduce_bench(o);
  }

  section("Sinkhorn: entropic OT to convergence (log domain, eps = 0.01), rows split over the ranks");
  { solve_ot(1500, 0.01); }

  section("Sinkhorn: ms per iteration, fused kernel vs the paper's variants and the one-read bound");
  {
    bench::sinkhorn_bench_options o;
    o.sizes = {3000};
    o.dtypes = {"float64"};
    o.iters = 3;
    o.reps = 3;
    bench::run_sinkhorn_bench(o);
  }

  section("DSOP: G = sum of outer products over the ranks, Conveyor's algorithms vs a local a b^T + MPI_Allreduce");
  {
    bench::dsop_bench_options o;
    o.shapes = {"2000"};
    o.iterations = 6;
    bench::run_dsop_bench(o);
  }

#ifdef CONVEYOR_HAVE_SCALAPACK
  if (bench::world_size() == 2 || bench::world_size() == 4) {
    section("Redistribute: conveyor_pdgemr2d / conveyor_pdtran drop-ins vs reference ScaLAPACK (same descriptors)");
    bench::scalapack_bench_options o;
    o.sizes = {4000};
    o.iterations = 7;
    o.rounds = 2;
    bench::run_scalapack_bench(o);
  }
#endif

  if (world_rank() == 0) {
    std::printf(
        "\nMore: `conveyor bench reduce --all-targets`, `conveyor bench allreduce`,\n"
        "`conveyor bench sinkhorn`, `conveyor sinkhorn --help`, `conveyor bench dsop`,\n"
        "`conveyor bench redistribute` (4 ranks: the tensor paper's case),\n"
        "`scripts/cluster run -- ...` for emulated nodes, docs/results.md\n");
  }
  return 0;
}

}  // namespace conveyor::bench
