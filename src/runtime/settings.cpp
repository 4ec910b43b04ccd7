// SPDX-License-Identifier: BSD-3-Clause
#include "conveyor/settings.hpp"

#include <mpi.h>

#include <array>
#include <cstdlib>

#include "conveyor/enums.h"
#include "conveyor/types.hpp"

// An enum list's names as one string literal (" auto ring ..."), for a
// setting's help text: the names come from the one list of include/conveyor/enums.h.
#define CONVEYOR_SETTING_NAME_(suffix, cpp, name) " " name

namespace {
// libconveyor_mpi's default threshold: 0, every size served. It was higher while
// Open MPI's small-message path beat Conveyor's; since the shared_memory
// algorithm the preload wins at the small sizes too, on both MPIs
// (docs/results.md, "An unmodified program under libconveyor_mpi").
constexpr const char* kMpiMinBytesDefault = "0";
}  // namespace

namespace conveyor {
namespace {

struct entry {
  std::string_view name, default_value, meaning, read_when;
};

constexpr std::array<entry, 17> kSettings = {{
    {"CONVEYOR_SIMD_TARGET", "the best target this CPU runs",
     "SIMD target of every kernel (a Highway name: AVX3, AVX2, SSE4, EMU128, ...)", "first kernel call in the process"},
    {"CONVEYOR_TUNE_FILE", "built-in defaults",
     "cost-model file written by `conveyor tune` (latency, bandwidth, reduction speed, segment size)",
     "first cost-model use in the process"},
    {"CONVEYOR_RANKS_PER_NODE", "0 (shared-memory domains)",
     "group consecutive ranks into emulated nodes of this many (node-aware algorithms, cost model)",
     "first use of a communicator"},
    {"CONVEYOR_ALLTOALL_COPY", "auto",
     "how alltoallw (and libconveyor_mpi's MPI_Alltoall*) moves packages between ranks of one node: auto "
     "(cross-memory attach, the receiver reading the sender's rows directly, where every rank's probe of it "
     "succeeds; else packed; on one node each sender times per plan where attach starts: the slot size, "
     "8 KiB or never), packed (pack, MPI message, unpack; on every rank if on one), attach (this rank's "
     "pairs from 8 KiB attached), slots (this rank's pairs through the shared slots, then MPI messages)",
     "first alltoallw on a communicator"},
    {"CONVEYOR_ALLTOALL_MEASURE", "1",
     "0: libconveyor_mpi's MPI_Alltoall of contiguous types always runs Conveyor's exchange (across nodes the "
     "pairwise or the node-aware one, as the cost model predicts), and alltoallw's senders on one node attach "
     "from the slot size; 1: per size class it times those against the MPI library's own MPI_Alltoall on its "
     "first calls and keeps the fastest (MPI_Alltoallv / w on one node: per class of the largest pair, voted "
     "through the exchange's headers, from 8 KiB), and each sender times its ways per plan (CONVEYOR_ALLTOALL_COPY); "
     "trace: as 1, and rank 0 prints each decision to stderr",
     "first measured all-to-all in the process"},
    {"CONVEYOR_ALLREDUCE_ALGORITHM", "auto",
     "what `automatic` allreduce runs, one of:" CONVEYOR_ALLREDUCE_ALGORITHM_LIST(
         CONVEYOR_SETTING_NAME_) " (`conveyor info` says what each does)",
     "first use of a communicator"},
    {"CONVEYOR_ALLREDUCE_MEASURE", "1",
     "0: `automatic` allreduce takes the cost model's choice alone; 1: per size class it times its candidates "
     "(that choice, the MPI library's own allreduce, shared_memory on one node) on its first calls and keeps "
     "the fastest; trace: as 1, and rank 0 "
     "prints each decision (every candidate's median) to stderr",
     "first automatic allreduce in the process"},
    {"CONVEYOR_DSOP_ALGORITHM", "auto",
     "what `automatic` outer_sum runs, one of:" CONVEYOR_OUTER_ALGORITHM_LIST(
         CONVEYOR_SETTING_NAME_) " (`conveyor info` says what each does)",
     "first outer_sum in the process"},
    {"CONVEYOR_REDISTRIBUTE_TRANSPORT", "auto",
     "what `automatic` Redistribute plans run: datatype, packed, pipelined, one_sided, alltoallv",
     "first plan in the process"},
    {"CONVEYOR_POINTS_DOT_MIN_DIM", "8",
     "point-cloud Sinkhorn: from this dimension on, costs are computed as |x|^2 + |y|^2 - 2<x, y> (centered "
     "points, several rows per load) instead of from differences",
     "first point-cloud solve in the process"},
    {"CONVEYOR_BUFFER_POOL_MB", "1024",
     "MiB of freed package buffers kept for the next plans (most recently used kept)", "first plan in the process"},
    {"CONVEYOR_SCALAPACK_CACHE", "8",
     "plans kept per process set by the ScaLAPACK drop-ins (0: plan, run and free every call); same on every process",
     "first drop-in call"},
    {"CONVEYOR_SCALAPACK_REPORT", "0", "1: each process prints at exit the drop-in calls it served (planned / cached)",
     "first drop-in call"},
    {"CONVEYOR_MPI", "1",
     "libconveyor_mpi (the MPI interposition library): 0 passes every call to the MPI library unchanged",
     "first intercepted MPI call"},
    {"CONVEYOR_MPI_CALLS", "default",
     "libconveyor_mpi: the calls Conveyor serves, a comma list of allreduce, reduce_scatter_block, "
     "reduce_scatter, allgather, allgatherv, reduce_local, alltoall, alltoallv, alltoallw; all; or default "
     "(all but alltoall and alltoallv, where the MPI libraries' contiguous paths are as fast or faster)",
     "first intercepted MPI call"},
    {"CONVEYOR_MPI_MIN_BYTES", kMpiMinBytesDefault,
     "libconveyor_mpi: calls moving fewer bytes than this (the whole result: count x type size, "
     "or the gathered total; per peer for alltoall; not applied to alltoallv / alltoallw, whose sizes "
     "differ between ranks) go to the MPI library; same on every process",
     "first intercepted MPI call"},
    {"CONVEYOR_MPI_REPORT", "0",
     "libconveyor_mpi: 1 prints at MPI_Finalize (rank 0, summed over MPI_COMM_WORLD) what was served "
     "(calls, bytes, algorithms) and what passed through, and why",
     "MPI_Finalize"},
}};

std::optional<std::string> read(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

}  // namespace

std::vector<setting_info> settings() {
  std::vector<setting_info> out;
  for (const entry& e : kSettings) {
    out.push_back({std::string(e.name), std::string(e.default_value), std::string(e.meaning), std::string(e.read_when),
                   read(e.name)});
  }
  return out;
}

namespace {
const entry& entry_of(std::string_view name) {
  for (const entry& e : kSettings) {
    if (e.name == name) return e;
  }
  throw error(errc::internal,
              "setting " + std::string(name) + " is not in the settings table (src/runtime/settings.cpp)");
}
}  // namespace

std::optional<std::string> setting(std::string_view name) { return read(entry_of(name).name); }

std::string setting_or_default(std::string_view name) {
  const entry& e = entry_of(name);
  const auto v = read(e.name);
  return v ? *v : std::string(e.default_value);
}

}  // namespace conveyor
