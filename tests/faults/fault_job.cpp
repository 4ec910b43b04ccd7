// SPDX-License-Identifier: BSD-3-Clause
// The job tests/faults/run_faults.py kills, starves or abandons mid-call.
//
//   fault_job ENGINE MODE
//
// ENGINE: the call every rank repeats until the driver intervenes (or 120 s pass):
//   shared_memory  the shared-memory allreduce (its waits spin/yield on flags)
//   ring           the ring allreduce (point-to-point steps)
//   one_sided      a Redistribute plan on the one_sided transport (shared window,
//                  MPI_Put), a 2-D transpose between Cartesian grids
//   sinkhorn       one Sinkhorn solve that never converges (tol 0): iterations
//   outer          DSOP (ring)
// MODE:
//   kill       each rank prints "ready RANK PID" once its first calls are done and
//              loops; the driver SIGKILLs one rank while the others are inside calls
//   exit       rank 1 calls exit(0) (no MPI_Finalize) after its first calls,
//              while the others go on calling
//   shm_full   rank 0 fills /dev/shm (the driver gives the job a small private one)
//              before the first call; every rank prints "result ..." once the calls
//              finish (with a fallback or a clear error), then the file is removed
//   calls      as shm_full without filling anything: three calls and "result ..."
//              (the driver makes something else fail, e.g. one rank's mmap)
//
// Prints one line per rank and event, so the driver reads the job's state from
// its output alone.
#include <conveyor/collectives.hpp>
#include <conveyor/dsop.hpp>
#include <conveyor/redistribute.hpp>
#include <conveyor/sinkhorn.hpp>
#include <conveyor/types.hpp>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

// One engine call; `calls` counts them so every rank's data differs per call.
using engine_call = std::function<void()>;

engine_call make_allreduce(conveyor::allreduce_algorithm algorithm, std::size_t count) {
  auto data = std::make_shared<std::vector<double>>(count, 1.0);
  return [data, algorithm] {
    conveyor::allreduce_options o;
    o.algorithm = algorithm;
    conveyor::allreduce(data->data(), data->data(), data->size(), conveyor::op::sum, MPI_COMM_WORLD, o);
    for (double& x : *data) x = 1.0;  // keeps the values finite across calls
  };
}

engine_call make_one_sided(int size) {
  namespace rd = conveyor::redistribute;
  const std::int64_t n = 768;
  // Source: row blocks over P x 1; destination: column blocks over 1 x P, transposed.
  auto src_buf = std::make_shared<std::vector<double>>();
  auto dst_buf = std::make_shared<std::vector<double>>();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto rows = conveyor::sinkhorn::balanced_rows(static_cast<std::size_t>(n), rank, size);
  src_buf->assign(rows.count * static_cast<std::size_t>(n), 1.0);
  dst_buf->assign(static_cast<std::size_t>(n) * rows.count, 0.0);
  auto src = std::make_shared<rd::layout>(rd::layout::cartesian({n, n}, {size, 1}, src_buf->data()));
  auto dst = std::make_shared<rd::layout>(rd::layout::cartesian({n, n}, {1, size}, dst_buf->data()));
  rd::transform t;
  t.src = src.get();
  t.dst = dst.get();
  t.perm = {1, 0};
  rd::plan_options o;
  o.transport = rd::transport::one_sided;
  auto p = std::make_shared<rd::plan>(t, MPI_COMM_WORLD, o);
  return [p, src, dst, src_buf, dst_buf] { p->execute(); };
}

engine_call make_sinkhorn(int rank, int size) {
  const std::size_t n = 1536;
  const auto rows = conveyor::sinkhorn::balanced_rows(n, rank, size);
  auto A = std::make_shared<std::vector<double>>(rows.count * n);
  for (std::size_t i = 0; i < A->size(); ++i) A->at(i) = 1.0 + static_cast<double>((i * 7 + rows.first) % 13);
  auto r = std::make_shared<std::vector<double>>(rows.count, 1.0 / static_cast<double>(n));
  auto c = std::make_shared<std::vector<double>>(n, 1.0 / static_cast<double>(n));
  return [A, r, c, rows, n] {
    conveyor::sinkhorn::options o;
    o.tol = 0;  // never converges: the call is a long run of iterations
    o.max_iter = 200000;
    conveyor::sinkhorn::scale(A->data(), rows.count, n, n, r->data(), c->data(), MPI_COMM_WORLD, o);
  };
}

engine_call make_outer(int size) {
  const std::size_t n = 512;
  auto a = std::make_shared<std::vector<double>>(n, 1.0);
  auto b = std::make_shared<std::vector<double>>(n, 2.0);
  auto G = std::make_shared<std::vector<double>>(n * n);
  (void)size;
  return [a, b, G, n] {
    conveyor::outer_options o;
    o.algorithm = conveyor::outer_algorithm::ring;
    conveyor::outer_sum(a->data(), n, b->data(), n, G->data(), G->size(), MPI_COMM_WORLD, o);
  };
}

engine_call make_engine(const std::string& name, int rank, int size) {
  if (name == "shared_memory") return make_allreduce(conveyor::allreduce_algorithm::shared_memory, 4096);
  if (name == "ring") return make_allreduce(conveyor::allreduce_algorithm::ring, 1 << 18);
  if (name == "one_sided") return make_one_sided(size);
  if (name == "sinkhorn") return make_sinkhorn(rank, size);
  if (name == "outer") return make_outer(size);
  return nullptr;
}

// Fills the file system holding /dev/shm until it has no room left; returns the
// bytes written. The driver runs the job in a private, small /dev/shm.
std::size_t fill_dev_shm(const char* path) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return 0;
  std::vector<char> chunk(1 << 16, 'x');
  std::size_t written = 0;
  for (;;) {
    const std::size_t w = std::fwrite(chunk.data(), 1, chunk.size(), f);
    written += w;
    if (w < chunk.size() || std::fflush(f) != 0) break;
  }
  std::fclose(f);
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    if (rank == 0) std::fprintf(stderr, "usage: fault_job ENGINE kill|exit|shm_full|calls\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::string engine = argv[1], mode = argv[2];

  if (mode == "shm_full" || mode == "calls") {
    const char* filler = "/dev/shm/conveyor-fault-filler";
    std::size_t filled = 0;
    if (rank == 0 && mode == "shm_full") filled = fill_dev_shm(filler);
    MPI_Barrier(MPI_COMM_WORLD);
    std::string result = "ok";
    try {
      engine_call call = make_engine(engine, rank, size);
      if (!call) MPI_Abort(MPI_COMM_WORLD, 2);
      if (engine == "sinkhorn") call = make_allreduce(conveyor::allreduce_algorithm::automatic, 4096);
      for (int i = 0; i < 3; ++i) call();
    } catch (const std::exception& e) {
      result = std::string("error: ") + e.what();
    }
    std::printf("result %d %s (filled %zu bytes)\n", rank, result.c_str(), filled);
    std::fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) std::remove(filler);
    MPI_Finalize();
    return 0;
  }

  engine_call call = make_engine(engine, rank, size);
  if (!call || (mode != "kill" && mode != "exit")) {
    if (rank == 0) std::fprintf(stderr, "fault_job: unknown engine or mode\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // The Sinkhorn solve is one long call: it is already running when "ready" prints.
  const bool one_long_call = engine == "sinkhorn";
  const int warm_calls = one_long_call ? 0 : 3;
  for (int i = 0; i < warm_calls; ++i) call();
  if (mode == "exit" && rank == 1) {
    std::printf("exiting %d %ld\n", rank, static_cast<long>(getpid()));
    std::fflush(stdout);
    // No MPI_Finalize: the others are (or will be) waiting for this rank. std::exit,
    // as an error path would: returning from main would first destroy the plan,
    // and freeing its MPI windows is collective (MPI_Win_free), so that rank would
    // wait for the others like any program holding an MPI window.
    std::exit(0);
  }
  std::printf("ready %d %ld\n", rank, static_cast<long>(getpid()));
  std::fflush(stdout);
  const auto deadline = clock_type::now() + std::chrono::seconds(120);
  long calls = 0;
  while (clock_type::now() < deadline) {
    call();
    ++calls;
  }
  // Reached only if nothing intervened: the driver counts this as a failure.
  std::printf("survived %d %ld calls\n", rank, calls);
  MPI_Finalize();
  return 0;
}
