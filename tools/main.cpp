// The `conveyor` command-line tool.
//
//   conveyor info                    build, MPI, SIMD and rank layout
//   conveyor demo                    a tour of the engines next to the usual way
//   conveyor bench reduce [options]     local reduction throughput (bench/reduce_bench)
//   conveyor bench allreduce [options]  allreduce algorithms vs stock MPI_Allreduce
//   conveyor bench overlap [options]    allreduce + per-chunk compute, overlapped or not
//   conveyor bench sinkhorn [options]   ms per Sinkhorn iteration per variant vs the one-read bound
//   conveyor bench dsop [options]       sum of outer products: every algorithm and auto
//   conveyor bench redistribute         tensor redistribution per transport; relabeling
//   conveyor sinkhorn [options]         solve a generated or .npy scaling / OT problem
//   conveyor tune [--output FILE]       measure the allreduce cost model, write a tune file
//
// Run it directly (one process) or under mpiexec.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "conveyor/types.hpp"
#include "allreduce_bench.hpp"
#include "reduce_bench.hpp"
#include "dsop_bench.hpp"
#include "redistribute_bench.hpp"
#ifdef CONVEYOR_HAVE_SCALAPACK
#include "scalapack_bench.hpp"
#endif
#include "sinkhorn_bench.hpp"
#include "tool.hpp"

namespace {

std::size_t parse_size(const std::string& s) {
  std::size_t pos = 0;
  const double v = std::stod(s, &pos);
  std::string unit = s.substr(pos);
  double mult = 1;
  if (unit == "K" || unit == "KiB") mult = 1024;
  else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") throw CLI::ValidationError("size", "unknown unit '" + unit + "'");
  return static_cast<std::size_t>(v * mult);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Conveyor: data movement for distributed linear algebra and ML on MPI"};
  app.require_subcommand(1);
  auto* info = app.add_subcommand("info", "Show the build, MPI library, SIMD targets and rank layout");
  auto* demo = app.add_subcommand("demo", "A tour of Conveyor's engines next to what users would otherwise use");
  auto* bench = app.add_subcommand("bench", "Benchmarks behind the numbers in docs/results.md");
  bench->require_subcommand(1);

  conveyor::bench::reduce_bench_options ro;
  std::string min_size = "1KiB", max_size = "128MiB";
  auto* bench_reduce = bench->add_subcommand("reduce", "Local reduction kernels vs MPI_Reduce_local, a plain loop and memcpy");
  bench_reduce->add_option("--min-size", min_size, "Smallest buffer (e.g. 1KiB)")->capture_default_str();
  bench_reduce->add_option("--max-size", max_size, "Largest buffer (e.g. 128MiB)")->capture_default_str();
  bench_reduce->add_option("--reps", ro.reps, "Samples per measurement")->capture_default_str()->check(CLI::Range(1, 1000));
  bench_reduce->add_flag("--all-targets", ro.all_targets, "Add a row per runnable SIMD target");
  bench_reduce->add_option("--json", ro.json_path, "Also write the rows as JSON");
  bench_reduce->add_option("--csv", ro.csv_path, "Also write the rows as CSV");

  conveyor::bench::allreduce_bench_options ao;
  std::string ar_min = "8B", ar_max = "64MiB", impls;
  const auto add_collective_options = [&](CLI::App* sub, const char* default_max) {
    ar_max = default_max;
    sub->add_option("--min-size", ar_min, "Smallest message")->capture_default_str();
    sub->add_option("--max-size", ar_max, "Largest message")->capture_default_str();
    sub->add_option("--reps", ao.reps, "Samples per measurement")->capture_default_str()->check(CLI::Range(1, 10000));
    sub->add_option("--config", ao.config, "Name of this configuration in the output rows");
    sub->add_option("--ranks-per-node", ao.ranks_per_node, "Emulated ranks per node for Conveyor (0: real nodes)");
    sub->add_option("--json", ao.json_path, "Also write the rows as JSON");
    sub->add_option("--csv", ao.csv_path, "Also write the rows as CSV");
  };
  auto* bench_allreduce = bench->add_subcommand("allreduce", "Conveyor's allreduce algorithms vs stock MPI_Allreduce");
  add_collective_options(bench_allreduce, "64MiB");
  bench_allreduce->add_option("--impls", impls, "Comma-separated rows: auto,ring,recursive_doubling,rabenseifner,hierarchical,mpi");
  bench_allreduce->add_option("--mpi-label", ao.mpi_label, "Label of the stock MPI_Allreduce row");
  auto* bench_overlap = bench->add_subcommand("overlap", "Allreduce + per-chunk compute: overlapped through on_chunk vs sequential");
  add_collective_options(bench_overlap, "64MiB");

  conveyor::bench::sinkhorn_bench_options so;
  auto* bench_sinkhorn = bench->add_subcommand("sinkhorn", "ms per Sinkhorn iteration, every variant, vs the one-read-of-A bound");
  bench_sinkhorn->add_option("--sizes", so.sizes, "M = N values")->delimiter(',')->capture_default_str();
  bench_sinkhorn->add_option("--dtypes", so.dtypes, "float64,float32")->delimiter(',')->capture_default_str();
  bench_sinkhorn->add_option("--variants", so.variants, "fused,blocked,c2r,typical")->delimiter(',')->capture_default_str();
  bench_sinkhorn->add_option("--threads", so.threads, "OpenMP threads per rank")->capture_default_str()->check(CLI::Range(1, 1024));
  bench_sinkhorn->add_option("--iters", so.iters, "Iterations per sample")->capture_default_str()->check(CLI::Range(1, 100000));
  bench_sinkhorn->add_option("--reps", so.reps, "Samples")->capture_default_str()->check(CLI::Range(1, 1000));
  bench_sinkhorn->add_flag("--no-overlap{false}", so.overlap, "In-place variants: scale columns after the allreduce, not during it");
  bench_sinkhorn->add_option("--config", so.config, "Name of this configuration in the output rows");
  bench_sinkhorn->add_option("--json", so.json_path, "Also write the rows as JSON");
  bench_sinkhorn->add_option("--csv", so.csv_path, "Also write the rows as CSV");

  conveyor::bench::dsop_bench_options dso;
  auto* bench_dsop = bench->add_subcommand("dsop", "Distributed sum of outer products: every algorithm and auto");
  bench_dsop->add_option("--shapes", dso.shapes, "N (square) or NxM")->delimiter(',')->capture_default_str();
  bench_dsop->add_option("--algorithms", dso.algorithms, "auto,allgather,allreduce,ring,generalized_rabenseifner")->delimiter(',')->capture_default_str();
  bench_dsop->add_option("--dtype", dso.dtype, "float64 or float32")->capture_default_str();
  bench_dsop->add_option("--iterations", dso.iterations, "Calls per row, the first a warm-up")->capture_default_str()->check(CLI::Range(2, 100000));
  bench_dsop->add_flag("--distributed", dso.distributed, "Each rank receives only its row block of G");
  bench_dsop->add_option("--config", dso.config, "Name of this configuration in the output rows");
  bench_dsop->add_option("--json", dso.json_path, "Also write the rows as JSON");
  bench_dsop->add_option("--csv", dso.csv_path, "Also write the rows as CSV");

  conveyor::bench::redistribute_bench_options rbo;
  auto* bench_redistribute = bench->add_subcommand("redistribute", "The tensor paper's 5-D case per transport (4 ranks); relabeling");
  bench_redistribute->add_option("--iterations", rbo.iterations, "Calls per transport, the first a warm-up")->capture_default_str()->check(CLI::Range(2, 100000));
  bench_redistribute->add_option("--config", rbo.config, "Name of this configuration in the output rows");
  bench_redistribute->add_option("--transports", rbo.transports, "Only these transports (and the datatype baseline)");
  bench_redistribute->add_option("--rounds", rbo.rounds, "Rounds over all transports (calls spread evenly)")->capture_default_str()->check(CLI::Range(1, 1000));
  bench_redistribute->add_option("--json", rbo.json_path, "Also write the rows as JSON");
  bench_redistribute->add_option("--csv", rbo.csv_path, "Also write the rows as CSV (relabeling rows: *-relabel.csv)");

#ifdef CONVEYOR_HAVE_SCALAPACK
  conveyor::bench::scalapack_bench_options sbo;
  auto* bench_scalapack = bench->add_subcommand("scalapack", "conveyor_pdgemr2d / pdtran vs reference ScaLAPACK (2 or 4 ranks)");
  bench_scalapack->add_option("--sizes", sbo.sizes, "Matrix orders")->delimiter(',')->capture_default_str();
  bench_scalapack->add_option("--iterations", sbo.iterations, "Calls per routine and row, over all rounds")->capture_default_str()->check(CLI::Range(2, 100000));
  bench_scalapack->add_option("--rounds", sbo.rounds, "Rounds alternating reference and Conveyor (first call of each turn: warm-up)")->capture_default_str()->check(CLI::Range(1, 1000));
  bench_scalapack->add_option("--cache", sbo.cache, "warm (cached plans), cold (a plan built and freed per call) or both")
      ->capture_default_str()->check(CLI::IsMember({"warm", "cold", "both"}));
  bench_scalapack->add_option("--config", sbo.config, "Name of this configuration in the output rows");
  bench_scalapack->add_option("--json", sbo.json_path, "Also write the rows as JSON");
  bench_scalapack->add_option("--csv", sbo.csv_path, "Also write the rows as CSV");
#endif

  conveyor::tool::sinkhorn_cli_options sc;
  auto* sinkhorn = app.add_subcommand("sinkhorn", "Solve a matrix-scaling or entropic-OT problem (generated, or rows of a .npy file)");
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
    if (*info) {
      rc = conveyor::tool::run_info();
    } else if (*demo) {
      rc = conveyor::tool::run_demo();
    } else if (*bench_reduce) {
      ro.min_bytes = parse_size(min_size);
      ro.max_bytes = parse_size(max_size);
      if (ro.min_bytes == 0 || ro.min_bytes > ro.max_bytes) {
        throw conveyor::error(conveyor::errc::invalid_argument, "need 0 < --min-size <= --max-size");
      }
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) rc = conveyor::bench::run_reduce_bench(ro);  // a single-process benchmark
    } else if (*bench_sinkhorn) {
      rc = conveyor::bench::run_sinkhorn_bench(so);
    } else if (*bench_dsop) {
      rc = conveyor::bench::run_dsop_bench(dso);
    } else if (*bench_redistribute) {
      rc = conveyor::bench::run_redistribute_bench(rbo);
#ifdef CONVEYOR_HAVE_SCALAPACK
    } else if (*bench_scalapack) {
      rc = conveyor::bench::run_scalapack_bench(sbo);
#endif
    } else if (*sinkhorn) {
      rc = conveyor::tool::run_sinkhorn(sc);
    } else if (*tune) {
      rc = conveyor::tool::run_tune(tune_out, tune_ppn);
    } else if (*bench_allreduce || *bench_overlap) {
      ao.min_bytes = parse_size(ar_min);
      ao.max_bytes = parse_size(ar_max);
      if (ao.min_bytes == 0 || ao.min_bytes > ao.max_bytes) {
        throw conveyor::error(conveyor::errc::invalid_argument, "need 0 < --min-size <= --max-size");
      }
      if (!impls.empty()) {
        ao.impls.clear();
        for (std::size_t pos = 0; pos <= impls.size();) {
          const std::size_t comma = std::min(impls.find(',', pos), impls.size());
          ao.impls.push_back(impls.substr(pos, comma - pos));
          pos = comma + 1;
        }
      }
      rc = *bench_allreduce ? conveyor::bench::run_allreduce_bench(ao) : conveyor::bench::run_overlap_bench(ao);
    }
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
