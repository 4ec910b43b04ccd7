// SPDX-License-Identifier: BSD-3-Clause
// The `conveyor` command-line tool.
//
//   conveyor info                    build, MPI, SIMD and rank layout
//   conveyor sinkhorn [options]      solve a generated or .npy scaling / OT problem
//   conveyor tune [--output FILE]    measure the allreduce cost model, write a tune file
//   conveyor demo                    a tour of the engines next to the usual way
//   conveyor bench <name> [options]  the benchmarks behind docs/results.md
//
// `demo` and `bench` run the separate program conveyor-bench (bench/main.cpp),
// found beside this one, so the tool links nothing of the benchmarks. Run it
// directly (one process) or under mpiexec.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "conveyor/types.hpp"
#include "tool.hpp"

namespace {

// Replaces this process by conveyor-bench with the arguments after `bench` (or
// `demo`), before MPI is initialized. Returns only if that program cannot run.
int run_benchmarks(int argc, char** argv, bool demo) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string program = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(argv[0]);
  program = program.substr(0, program.rfind('/') + 1) + "conveyor-bench";
  std::vector<std::string> args{program};
  if (demo) args.emplace_back("demo");
  for (int i = 2; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  execv(program.c_str(), c_args.data());
  std::fprintf(stderr, "conveyor: cannot run %s (%s): the benchmarks are built with CONVEYOR_BUILD_BENCHMARKS=ON\n",
               program.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "bench") == 0 || std::strcmp(argv[1], "demo") == 0)) {
    return run_benchmarks(argc, argv, std::strcmp(argv[1], "demo") == 0);
  }
  CLI::App app{"Conveyor: data movement for distributed linear algebra and ML on MPI"};
  app.require_subcommand(1);
  auto* info = app.add_subcommand("info", "Show the build, MPI library, SIMD targets and rank layout");
  // Listed for --help; run by conveyor-bench (see run_benchmarks).
  app.add_subcommand("demo",
                     "A tour of Conveyor's engines next to what users would otherwise use (conveyor-bench demo)");
  app.add_subcommand("bench", "Benchmarks behind the numbers in docs/results.md (conveyor-bench --help)");

  conveyor::tool::sinkhorn_cli_options sc;
  auto* sinkhorn = app.add_subcommand(
      "sinkhorn", "Solve a matrix-scaling or entropic-OT problem (generated, or rows of a .npy file)");
  conveyor::tool::add_sinkhorn_options(*sinkhorn, sc);

  std::string tune_out;
  int tune_ppn = 0;
  auto* tune = app.add_subcommand("tune", "Measure the allreduce cost model on this job and write the tune file");
  tune->add_option("--output", tune_out, "File to write (default: $CONVEYOR_TUNE_FILE, else conveyor-tune.txt)");
  tune->add_option("--ranks-per-node", tune_ppn, "Emulated ranks per node (0: real nodes)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rc = 0;
  try {
    if (*info) rc = conveyor::tool::run_info();
    else if (*sinkhorn) rc = conveyor::tool::run_sinkhorn(sc);
    else if (*tune) rc = conveyor::tool::run_tune(tune_out, tune_ppn);
  } catch (const conveyor::error& e) {
    std::fprintf(stderr, "conveyor: error: %s\n", e.message().c_str());
    rc = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conveyor: error: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
