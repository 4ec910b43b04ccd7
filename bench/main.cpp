// SPDX-License-Identifier: BSD-3-Clause
// `conveyor-bench`: the benchmarks behind docs/results.md, each comparing Conveyor
// with what users would otherwise use, in the same run. The `conveyor` tool's
// `bench` and `demo` subcommands run this program (it lives beside the tool), so
// the tool itself links nothing of the benchmarks.
//
//   conveyor-bench demo                  a tour of the engines next to the usual way
//   conveyor-bench reduce [options]      local reduction throughput (reduce_bench)
//   conveyor-bench allreduce [options]   allreduce algorithms vs stock MPI_Allreduce
//   conveyor-bench overlap [options]     allreduce + per-chunk compute, overlapped or not
//   conveyor-bench lse [options]         column log-sum-exp over ranks: allreduce(logaddexp) vs max + sum
//   conveyor-bench sinkhorn [options]    ms per Sinkhorn iteration per variant vs the one-read bound
//   conveyor-bench dsop [options]        sum of outer products: every algorithm and auto
//   conveyor-bench redistribute          tensor redistribution per transport; relabeling
//   conveyor-bench scalapack [options]   the drop-ins vs reference ScaLAPACK
//
// Sizes take CLI11's units (8B, 1KiB, 64MiB, 4k); lists are comma-separated, and
// an unknown name in a list is an error.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "allreduce_bench.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/dsop.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/types.hpp"
#include "demo.hpp"
#include "dsop_bench.hpp"
#include "model_bench.hpp"
#include "redistribute_bench.hpp"
#include "reduce_bench.hpp"
#ifdef CONVEYOR_HAVE_SCALAPACK
#include "scalapack_bench.hpp"
#endif
#include "sinkhorn_bench.hpp"

namespace {

// A CLI11 check that each element is a name `parse` accepts (the engine's own
// parser, so the benchmark accepts exactly the names of the API).
template <class Parse>
CLI::Validator names_of(const char* what, Parse parse) {
  return CLI::Validator(
      [parse](std::string& name) {
        try {
          parse(name);
          return std::string();
        } catch (const conveyor::error& e) {
          return e.message();
        }
      },
      what);
}

// --config, --json and --csv: the row label and the files every benchmark can write.
void add_outputs(CLI::App* sub, std::string& config, std::string& json, std::string& csv) {
  sub->add_option("--config", config, "Name of this configuration in the output rows");
  sub->add_option("--json", json, "Also write the rows as JSON");
  sub->add_option("--csv", csv, "Also write the rows as CSV");
}

CLI::Option* add_size(CLI::App* sub, const char* flag, std::size_t& into, const char* what) {
  return sub->add_option(flag, into, what)->transform(CLI::AsSizeValue(false))->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  namespace cb = conveyor::bench;
  CLI::App app{"Conveyor's benchmarks (the numbers in docs/results.md)"};
  app.require_subcommand(1);
  auto* demo = app.add_subcommand("demo", "A tour of Conveyor's engines next to what users would otherwise use");

  cb::reduce_bench_options ro;
  auto* bench_reduce =
      app.add_subcommand("reduce", "Local reduction kernels vs MPI_Reduce_local, a plain loop and memcpy");
  add_size(bench_reduce, "--min-size", ro.min_bytes, "Smallest buffer (e.g. 1KiB)");
  add_size(bench_reduce, "--max-size", ro.max_bytes, "Largest buffer (e.g. 128MiB)");
  bench_reduce->add_option("--reps", ro.reps, "Samples per measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench_reduce->add_flag("--all-targets", ro.all_targets, "Add a row per runnable SIMD target");
  bench_reduce->add_option("--case", ro.only_case, "Only this case, e.g. logaddexp/float64 (default: every case)");
  bench_reduce->add_option("--json", ro.json_path, "Also write the rows as JSON")->group("Output");
  bench_reduce->add_option("--csv", ro.csv_path, "Also write the rows as CSV")->group("Output");

  cb::allreduce_bench_options ao;
  const auto add_collective_options = [&](CLI::App* sub) {
    add_size(sub, "--min-size", ao.min_bytes, "Smallest message");
    add_size(sub, "--max-size", ao.max_bytes, "Largest message");
    sub->add_option("--reps", ao.reps, "Samples per measurement")->capture_default_str()->check(CLI::Range(1, 10000));
    sub->add_option("--ranks-per-node", ao.ranks_per_node, "Emulated ranks per node for Conveyor (0: real nodes)");
    add_outputs(sub, ao.config, ao.json_path, ao.csv_path);
  };
  auto* bench_allreduce = app.add_subcommand("allreduce", "Conveyor's allreduce algorithms vs stock MPI_Allreduce");
  add_collective_options(bench_allreduce);
  bench_allreduce
      ->add_option("--impls", ao.impls,
                   "Rows (default: auto, every algorithm `conveyor info` lists, stock): Conveyor's auto or an "
                   "algorithm, stock (MPI_Allreduce called directly), stock-again (the same call again: an A/A "
                   "control), stock-dup (MPI_Allreduce on a duplicate of MPI_COMM_WORLD, as Conveyor's private "
                   "communicator) and stock+STEPS (MPI_Allreduce after STEPS steps of local work: what a few ns of "
                   "work in front of the call cost)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(names_of("ALGORITHM|stock|stock-again|stock-dup|stock+STEPS", [](const std::string& n) {
        if (n == "stock" || n == "stock-again" || n == "stock-dup") return;
        if (n.rfind("stock+", 0) == 0) {
          if (n.size() == 6 || n.size() > 10 || n.find_first_not_of("0123456789", 6) != std::string::npos) {
            throw conveyor::error(conveyor::errc::invalid_argument, "stock+STEPS takes 1 to 4 digits, e.g. stock+8");
          }
          return;
        }
        conveyor::parse_algorithm(n);
      }));
  bench_allreduce->add_option("--mpi-label", ao.mpi_label, "Label of the stock MPI_Allreduce row");
  auto* bench_overlap =
      app.add_subcommand("overlap", "Allreduce + per-chunk compute: overlapped through on_chunk vs sequential");
  add_collective_options(bench_overlap);
  auto* bench_lse =
      app.add_subcommand("lse", "Column log-sum-exp over ranks: one allreduce(logaddexp) vs max then sum");
  add_collective_options(bench_lse);

  cb::sinkhorn_bench_options so;
  auto* bench_sinkhorn =
      app.add_subcommand("sinkhorn", "ms per Sinkhorn iteration, every variant, vs the one-read-of-A bound");
  bench_sinkhorn->add_option("--sizes", so.sizes, "M = N values")->delimiter(',')->capture_default_str();
  bench_sinkhorn->add_option("--dtypes", so.dtypes, "float64,float32")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"float64", "float32"}));
  bench_sinkhorn->add_option("--variants", so.variants, "Names (default: every variant of the table)")
      ->delimiter(',')
      ->check(names_of("VARIANT", [](const std::string& n) { conveyor::sinkhorn::parse_variant(n); }));
  bench_sinkhorn->add_option("--threads", so.threads, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  bench_sinkhorn->add_option("--iters", so.iters, "Iterations per sample")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  bench_sinkhorn->add_option("--reps", so.reps, "Samples")->capture_default_str()->check(CLI::Range(1, 1000));
  bench_sinkhorn->add_flag("--no-overlap{false}", so.overlap,
                           "In-place variants: scale columns after the allreduce, not during it");
  add_outputs(bench_sinkhorn, so.config, so.json_path, so.csv_path);

  cb::dsop_bench_options dso;
  auto* bench_dsop = app.add_subcommand("dsop", "Distributed sum of outer products: every algorithm and auto");
  bench_dsop->add_option("--shapes", dso.shapes, "N (square) or NxM")->delimiter(',')->capture_default_str();
  bench_dsop->add_option("--algorithms", dso.algorithms, "Names (default: auto, then every algorithm of the table)")
      ->delimiter(',')
      ->check(names_of("ALGORITHM", [](const std::string& n) { conveyor::parse_outer_algorithm(n); }));
  bench_dsop->add_option("--dtype", dso.dtype, "float64 or float32")
      ->capture_default_str()
      ->check(CLI::IsMember({"float64", "float32"}));
  bench_dsop->add_option("--iterations", dso.iterations, "Calls per row, the first a warm-up")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  bench_dsop->add_flag("--distributed", dso.distributed, "Each rank receives only its row block of G");
  add_outputs(bench_dsop, dso.config, dso.json_path, dso.csv_path);

  cb::redistribute_bench_options rbo;
  auto* bench_redistribute =
      app.add_subcommand("redistribute", "The tensor paper's 5-D case per transport (4 ranks); relabeling");
  bench_redistribute->add_option("--iterations", rbo.iterations, "Calls per transport, the first a warm-up")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  bench_redistribute
      ->add_option("--transports", rbo.transports, "Only these transports, comma-separated (and the datatype baseline)")
      ->delimiter(',')
      ->check(names_of("TRANSPORT", [](const std::string& n) { conveyor::redistribute::parse_transport(n); }));
  bench_redistribute->add_option("--rounds", rbo.rounds, "Rounds over all transports (calls spread evenly)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_outputs(bench_redistribute, rbo.config, rbo.json_path, rbo.csv_path);  // (relabeling rows: *-relabel.csv)

  cb::model_bench_options mo;
  auto* bench_model = app.add_subcommand(
      "model", "The cost model beside measured times per engine; --extrapolate: its tables for 64-4096 nodes");
  bench_model->add_option("--allreduce-bytes", mo.allreduce_bytes, "Allreduce sizes (bytes, float32 sum)")
      ->delimiter(',')
      ->capture_default_str();
  bench_model->add_option("--dsop-sizes", mo.dsop_sizes, "DSOP N = M (float64)")->delimiter(',')->capture_default_str();
  bench_model
      ->add_option("--redistribute-sizes", mo.redistribute_sizes, "Redistribute n x n float64, block-cyclic Px1 -> 1xP")
      ->delimiter(',')
      ->capture_default_str();
  bench_model->add_option("--engines", mo.engines, "Engines whose cases run")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"allreduce", "dsop", "redistribute", "alltoall"}));
  bench_model->add_option("--alltoall-bytes", mo.alltoall_bytes, "All-to-all bytes per rank pair (real nodes only)")
      ->delimiter(',')
      ->capture_default_str();
  bench_model->add_option("--iterations", mo.iterations, "Calls per row over all rounds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  bench_model->add_option("--rounds", mo.rounds, "Rounds over all candidates")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench_model->add_option("--ranks-per-node", mo.ranks_per_node, "Emulated ranks per node (0: real nodes)")
      ->capture_default_str();
  bench_model->add_flag("--extrapolate", mo.extrapolate,
                        "Print the model's tables for 64-4096 nodes x 1-64 ranks per node (rank 0, no measurement)");
  bench_model
      ->add_option("--params", mo.params,
                   "--extrapolate: coffee (Tianhe-1, 1 Gb/s), dsop (Euler III, 10 GbE) or current")
      ->capture_default_str()
      ->check(CLI::IsMember({"coffee", "dsop", "current"}));
  add_outputs(bench_model, mo.config, mo.json_path, mo.csv_path);

#ifdef CONVEYOR_HAVE_SCALAPACK
  cb::scalapack_bench_options sbo;
  auto* bench_scalapack =
      app.add_subcommand("scalapack", "conveyor_pdgemr2d / pdtran vs reference ScaLAPACK (2 or 4 ranks)");
  bench_scalapack->add_option("--sizes", sbo.sizes, "Matrix orders")->delimiter(',')->capture_default_str();
  bench_scalapack->add_option("--iterations", sbo.iterations, "Calls per routine and row, over all rounds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  bench_scalapack
      ->add_option("--rounds", sbo.rounds,
                   "Rounds alternating reference and Conveyor (first call of each turn: warm-up)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench_scalapack
      ->add_option("--cache", sbo.cache, "warm (cached plans), cold (a plan built and freed per call) or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"warm", "cold", "both"}));
  add_outputs(bench_scalapack, sbo.config, sbo.json_path, sbo.csv_path);
#endif

  CLI11_PARSE(app, argc, argv);
  const auto need_range = [](std::size_t lo, std::size_t hi) {
    if (lo == 0 || lo > hi)
      throw conveyor::error(conveyor::errc::invalid_argument, "need 0 < --min-size <= --max-size");
  };
  int provided = 0, rc = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // (funneled: the Sinkhorn rows use OpenMP)
  try {
    if (*demo) {
      rc = cb::run_demo();
    } else if (*bench_reduce) {
      need_range(ro.min_bytes, ro.max_bytes);
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) rc = cb::run_reduce_bench(ro);  // a single-process benchmark
    } else if (*bench_allreduce || *bench_overlap || *bench_lse) {
      need_range(ao.min_bytes, ao.max_bytes);
      rc = *bench_allreduce ? cb::run_allreduce_bench(ao)
           : *bench_overlap ? cb::run_overlap_bench(ao)
                            : cb::run_lse_bench(ao);
    } else if (*bench_sinkhorn) {
      rc = cb::run_sinkhorn_bench(so);
    } else if (*bench_dsop) {
      rc = cb::run_dsop_bench(dso);
    } else if (*bench_redistribute) {
      rc = cb::run_redistribute_bench(rbo);
    } else if (*bench_model) {
      rc = cb::run_model_bench(mo);
#ifdef CONVEYOR_HAVE_SCALAPACK
    } else if (*bench_scalapack) {
      rc = cb::run_scalapack_bench(sbo);
#endif
    }
  } catch (const std::exception& e) {
    const auto* ce = dynamic_cast<const conveyor::error*>(&e);
    std::fprintf(stderr, "conveyor-bench: error: %s\n", ce ? ce->message().c_str() : e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
