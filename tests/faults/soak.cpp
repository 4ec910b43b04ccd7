// SPDX-License-Identifier: BSD-3-Clause
// Soak (issue 27): N mixed calls on every rank, then a summary.
//
//   conveyor_soak CALLS
//
// The calls (one random sequence, the same on every rank): allreduce of a random
// size (1 to 64 Ki elements), algorithm and op; reduce_scatter and allgather;
// every 50th call a sub-communicator (MPI_Comm_split with random colours) made,
// used by an allreduce and freed; every 200th a Redistribute plan built, run and
// destroyed; every 500th a small Sinkhorn solve and a DSOP. Every result is checked.
//
// Checked between the first and the last tenth of the run (after a warm-up
// tenth): resident memory may grow by at most 8 MiB, the open file descriptors
// not at all, and the median time per call (over batches of 100) at most 3x
// (generous: the machine is shared and oversubscribed; a leak of per-call state
// grows without bound). Prints "soak: ..." lines and exits 1 on any failure.
#include <conveyor/collectives.hpp>
#include <conveyor/dsop.hpp>
#include <conveyor/redistribute.hpp>
#include <conveyor/sinkhorn.hpp>
#include <conveyor/types.hpp>
#include <dirent.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "transpose_case.hpp"

namespace {

namespace rd = conveyor::redistribute;

long resident_kib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct soak {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  std::mt19937_64 rng{20261125};  // same seed on every rank: the same calls
  long wrong = 0;

  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng() % n); }

  void allreduce_call(MPI_Comm comm, int comm_rank, int comm_size) {
    static const conveyor::allreduce_algorithm algorithms[] = {
        conveyor::allreduce_algorithm::automatic,          conveyor::allreduce_algorithm::ring,
        conveyor::allreduce_algorithm::recursive_doubling, conveyor::allreduce_algorithm::rabenseifner,
        conveyor::allreduce_algorithm::shared_memory,      conveyor::allreduce_algorithm::mpi};
    const std::size_t n = std::size_t{1} << pick(17);
    const std::size_t count = n - pick(std::max<std::size_t>(n / 2, 1));
    conveyor::allreduce_options o;
    o.algorithm = algorithms[pick(6)];
    const bool max = pick(2) == 0;
    std::vector<std::int32_t> v(count, comm_rank + 1);
    conveyor::allreduce(v.data(), count, max ? conveyor::op::max : conveyor::op::sum, comm, o);
    const std::int32_t expect = max ? comm_size : comm_size * (comm_size + 1) / 2;
    for (std::int32_t x : v) wrong += x != expect;
  }

  void reduce_scatter_and_allgather() {
    const std::size_t block = 1 + pick(300);
    std::vector<double> send(block * static_cast<std::size_t>(size), 1.0), mine(block);
    conveyor::reduce_scatter_block(send.data(), mine.data(), block, conveyor::dtype::float64, conveyor::op::sum, world);
    for (double x : mine) wrong += x != size;
    std::vector<double> all(block * static_cast<std::size_t>(size));
    conveyor::allgather(mine.data(), all.data(), block, conveyor::dtype::float64, world);
    for (double x : all) wrong += x != size;
  }

  void sub_communicator() {
    const int colours = 1 + static_cast<int>(pick(3));
    MPI_Comm sub;
    MPI_Comm_split(world, rank % colours, rank, &sub);
    int sub_rank = 0, sub_size = 1;
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Comm_size(sub, &sub_size);
    allreduce_call(sub, sub_rank, sub_size);
    MPI_Comm_free(&sub);
  }

  void plan_call() {
    conveyor::testing::transpose_case c(8 + static_cast<std::int64_t>(pick(120)), rank, size);
    rd::plan_options o;
    o.transport = static_cast<rd::transport>(pick(6));  // every transport, automatic included
    rd::plan p(c.t, world, o);
    p.execute();
    wrong += c.wrong();
  }

  void sinkhorn_and_outer() {
    const std::size_t n = 16 + pick(48);
    const auto rows = conveyor::sinkhorn::balanced_rows(n, rank, size);
    std::vector<double> A(std::max<std::size_t>(1, rows.count * n), 1.0);
    std::vector<double> r(std::max<std::size_t>(1, rows.count), 1.0 / static_cast<double>(n)),
        c(n, 1.0 / static_cast<double>(n));
    conveyor::sinkhorn::options o;
    o.max_iter = 50;
    o.threads = 1;
    const auto res = conveyor::sinkhorn::scale(A.data(), rows.count, n, n, r.data(), c.data(), world, o);
    wrong += res.state != conveyor::sinkhorn::status::converged;
    std::vector<double> x(n, 1.0), y(n, 2.0), G(n * n);
    conveyor::outer_sum(x.data(), n, y.data(), n, G.data(), G.size(), world);
    for (double g : G) wrong += g != 2.0 * size;
  }

  void one(long i) {
    if (i % 500 == 499) sinkhorn_and_outer();
    else if (i % 200 == 199) plan_call();
    else if (i % 50 == 49) sub_communicator();
    else if (i % 5 == 4) reduce_scatter_and_allgather();
    else allreduce_call(world, rank, size);
  }
};

struct window {
  long resident = 0;
  int fds = 0;
  double per_call = 0;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  soak s;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  const long calls = argc > 1 ? std::atol(argv[1]) : 20000;
  const long tenth = std::max(calls / 10, 100L), batch = 100;
  std::vector<double> batch_seconds;
  window first, last;
  const double start = MPI_Wtime();
  double t0 = start;
  for (long i = 0; i < calls; ++i) {
    s.one(i);
    if ((i + 1) % batch == 0) {
      const double t = MPI_Wtime();
      batch_seconds.push_back((t - t0) / batch);
      t0 = t;
    }
    // Windows: the second tenth (after a warm-up tenth) and the last tenth.
    if (i + 1 == 2 * tenth || i + 1 == calls) {
      window& w = i + 1 == calls ? last : first;
      w.resident = resident_kib();
      w.fds = open_fds();
      const std::size_t b = static_cast<std::size_t>(tenth / batch);
      w.per_call = median(std::vector<double>(
          batch_seconds.end() - static_cast<std::ptrdiff_t>(std::min(b, batch_seconds.size())), batch_seconds.end()));
    }
  }
  const double total = MPI_Wtime() - start;
  // The slowest rank's view of each measure.
  long growth_kib = last.resident - first.resident, wrong = s.wrong;
  int fd_growth = last.fds - first.fds;
  double slowdown = first.per_call > 0 ? last.per_call / first.per_call : 1;
  MPI_Allreduce(MPI_IN_PLACE, &growth_kib, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &fd_growth, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &slowdown, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Under AddressSanitizer resident memory grows by design (its quarantine keeps
  // freed blocks, up to 256 MiB): the bound is not applied there, and says so.
#if defined(__SANITIZE_ADDRESS__)
  const bool memory_checked = false;
#else
  const bool memory_checked = true;
#endif
  const bool ok = wrong == 0 && (!memory_checked || growth_kib <= 8 * 1024) && fd_growth <= 0 && slowdown <= 3.0;
  if (s.rank == 0) {
    std::printf("soak: %ld calls on %d ranks in %.1f s; wrong elements %ld\n", calls, s.size, total, wrong);
    std::printf("soak: resident memory %ld -> %ld KiB (largest growth on a rank %ld KiB, %s)\n", first.resident,
                last.resident, growth_kib, memory_checked ? "limit 8192" : "not checked under AddressSanitizer");
    std::printf("soak: open file descriptors %d -> %d (largest growth %d, limit 0)\n", first.fds, last.fds, fd_growth);
    std::printf("soak: median time per call %.1f -> %.1f us (largest ratio on a rank %.2f, limit 3)\n",
                first.per_call * 1e6, last.per_call * 1e6, slowdown);
    std::printf("soak: %s\n", ok ? "PASSED" : "FAILED");
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
