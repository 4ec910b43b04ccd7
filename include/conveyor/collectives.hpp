// The Reduce engine's collectives: allreduce and its two halves, reduce_scatter and
// allgather(v), over any communicator, with Conveyor's vectorized kernels doing
// every reduction.
//
// Conveyor never communicates on the caller's communicator: on first use it
// duplicates it (a collective call) and caches the duplicate and the node layout
// on it as an MPI attribute, freed when the caller frees the communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor {

/// automatic (the cost model's choice), ring, recursive_doubling, rabenseifner,
/// hierarchical, mpi (the MPI library's own): described in conveyor/enums.h and
/// docs/algorithms.md.
enum class allreduce_algorithm : int { CONVEYOR_ALLREDUCE_ALGORITHM_LIST(CONVEYOR_ENUMERATOR_) };
inline constexpr int allreduce_algorithm_count = 0 CONVEYOR_ALLREDUCE_ALGORITHM_LIST(CONVEYOR_COUNT_);
CONVEYOR_API std::string_view algorithm_name(allreduce_algorithm a);
/// "auto", "ring", "recursive_doubling", "rabenseifner", "hierarchical".
CONVEYOR_API allreduce_algorithm parse_algorithm(std::string_view name);

struct allreduce_options {
  /// Forced algorithm; `automatic` lets the cost model choose. The environment
  /// variable CONVEYOR_ALLREDUCE_ALGORITHM overrides `automatic` (not a forced choice).
  allreduce_algorithm algorithm = allreduce_algorithm::automatic;
  /// Pipeline segment size in bytes (0: chosen by the cost model).
  std::size_t segment_bytes = 0;
  /// Group ranks into emulated nodes of this many consecutive ranks (0: real
  /// shared-memory nodes, or CONVEYOR_RANKS_PER_NODE when set).
  int ranks_per_node = 0;
  /// Fix the reduction order: every element is ((x_0 op x_1) op x_2) ... op x_{P-1}
  /// in rank order, so the result has the same bits for a given P whatever the
  /// message size, segment size or algorithm.
  bool deterministic = false;
  /// The collective contract (conveyor/contract.hpp): agree across ranks on the
  /// outcome of the local checks and on count, dtype, op and these options (one
  /// extra MPI_Allreduce of 208 bytes), so a bad or mismatched argument on any
  /// rank throws the same error on every rank. Without it (MPI's semantics) a
  /// bad argument throws on its rank alone and mismatched arguments are erroneous:
  /// the other ranks may wait forever.
  bool validate = false;
  /// Called (on the calling thread, during allreduce) as soon as a chunk of the
  /// final result is complete in `recv`: every element exactly once, in no
  /// particular order. Lets callers overlap their own work with the collective.
  std::function<void(std::size_t offset, std::size_t count)> on_chunk;
};

/// What allreduce did.
struct allreduce_report {
  allreduce_algorithm algorithm = allreduce_algorithm::automatic;
  std::size_t segment_bytes = 0;
  int nodes = 1;               // nodes seen by the node-aware layout
  double predicted_seconds = 0;  // the cost model's estimate for the chosen algorithm
  // True while `auto` is still measuring this size class: the call ran one of the
  // candidates (`algorithm`) as a trial, and its time is not the settled choice's.
  // Benchmarks call until it is false before timing (and report that phase apart).
  bool trial = false;
  // shared_memory only: true if a waiting rank spins before it yields its core
  // (the node's ranks have cores of their own), false if it yields at once (they
  // share cores: more ranks than CPUs in the union of the ranks' affinity masks).
  bool spin_waits = false;
};

/// recv = send_0 op send_1 op ... op send_{P-1}, element-wise, on every rank, with
/// bitwise identical results on every rank. `send` may equal `recv` (or be
/// MPI_IN_PLACE) for in-place use. Counts are 64-bit; messages larger than 2^31
/// bytes are split. Throws conveyor::error on bad arguments, unsupported (op,
/// dtype), a mismatch detected by `validate`, or an MPI failure.
CONVEYOR_API allreduce_report allreduce(const void* send, void* recv, std::size_t count, dtype t,
                                        op o, MPI_Comm comm, const allreduce_options& options = {});

template <class T>
allreduce_report allreduce(const T* send, T* recv, std::size_t count, op o, MPI_Comm comm,
                           const allreduce_options& options = {}) {
  return allreduce(static_cast<const void*>(send), static_cast<void*>(recv), count, dtype_of_v<T>,
                   o, comm, options);
}
template <class T>
allreduce_report allreduce(T* inout, std::size_t count, op o, MPI_Comm comm,
                           const allreduce_options& options = {}) {
  return allreduce(static_cast<const void*>(inout), static_cast<void*>(inout), count,
                   dtype_of_v<T>, o, comm, options);
}

/// The parameters of the cost model `automatic` chooses with (docs/algorithms.md).
/// Defaults describe a shared-memory node and ~10 Gbit/s Ethernet; `conveyor tune`
/// measures them and writes them to the file named by CONVEYOR_TUNE_FILE, which
/// every Conveyor process then reads at first use.
struct cost_model {
  double intra_alpha = 3e-6;        // seconds per message within a node
  double intra_beta = 1.0 / 6e9;    // seconds per byte within a node
  double inter_alpha = 30e-6;       // seconds per message between nodes
  double inter_beta = 1.0 / 1.1e9;  // seconds per byte between nodes
  double gamma = 1.0 / 12e9;        // seconds per byte of a local reduction
  double copy_beta = 1.0 / 5e9;     // seconds per byte of a strided local copy out of memory (pack, unpack)
  double shared_alpha = 0.3e-6;     // seconds of the shared_memory allreduce's two flag hand-offs on one node
  std::size_t segment_bytes = std::size_t{1} << 20;  // pipeline chunk
  int window = 4;                   // pipeline chunks in flight
  // Messages larger than this go in pieces of this size, all posted at once, so
  // no piece waits for the transport's rendezvous handshake (0: whole messages).
  // `conveyor tune` measures which is faster. Defaults: what it measured on this
  // project's machines -- MPICH 4.0's shared memory 8 KiB pieces (a 12 KiB message
  // took ~3x an 8 KiB one), Open MPI 4.1's whole messages (pieces were slower).
#if defined(MPICH_VERSION)
  std::size_t intra_piece_bytes = 8192;
#else
  std::size_t intra_piece_bytes = 0;
#endif
  std::size_t inter_piece_bytes = 0;
};

/// The model in use: defaults, or $CONVEYOR_TUNE_FILE if set (throws
/// conveyor::error(invalid_argument) if that file is unreadable or malformed).
CONVEYOR_API const cost_model& current_cost_model();
/// Measures the model on `comm` (collective): ping-pong latency and bandwidth
/// between ranks on one node and on different nodes (of `ranks_per_node`, 0 =
/// real nodes), and the local reduction speed. The same result on every rank.
CONVEYOR_API cost_model measure_cost_model(MPI_Comm comm, int ranks_per_node = 0);
/// The cost model alone, without MPI: the seconds allreduce algorithm `a` is
/// predicted to take for `bytes` on `nodes` nodes of `ranks_per_node` ranks each
/// (`automatic`: the model's own pick, the one `auto` starts from). For machines
/// one cannot run on: docs/results.md's tables for 64-4096 nodes come from it.
CONVEYOR_API double predict_allreduce_seconds(allreduce_algorithm a, std::size_t bytes, int nodes, int ranks_per_node,
                                              const cost_model& m);
/// The algorithm the model picks for that job (never `automatic`).
CONVEYOR_API allreduce_algorithm predicted_allreduce_choice(std::size_t bytes, int nodes, int ranks_per_node,
                                                            const cost_model& m);
/// The tune-file text of a model (`key value` lines), and its inverse.
CONVEYOR_API std::string format_cost_model(const cost_model& m);
CONVEYOR_API cost_model parse_cost_model(const std::string& text);

/// Reduce-scatter: rank r receives block r of the element-wise reduction, where
/// block r has counts[r] elements and blocks are consecutive in `send` (which
/// holds sum(counts) elements on every rank). recv must hold counts[rank].
/// `send` may be MPI_IN_PLACE (MPI's meaning): the input is then read from `recv`,
/// which holds all sum(counts) elements, and block `rank` is written to its start.
/// validate: as allreduce_options::validate (counts, dtype and op must match).
CONVEYOR_API void reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                 dtype t, op o, MPI_Comm comm, bool validate = false);
/// Equal blocks: `send` holds P * block_count elements.
CONVEYOR_API void reduce_scatter_block(const void* send, void* recv, std::size_t block_count, dtype t,
                                       op o, MPI_Comm comm, bool validate = false);

/// Allgather(v): rank r contributes counts[r] elements; `recv` receives all blocks
/// consecutively (sum(counts) elements). `send` may be MPI_IN_PLACE, in which
/// case rank r's block is already in place in `recv`. validate: counts and dtype
/// must match (see allreduce_options::validate).
CONVEYOR_API void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
                             dtype t, MPI_Comm comm, bool validate = false);
CONVEYOR_API void allgather(const void* send, void* recv, std::size_t block_count, dtype t,
                            MPI_Comm comm, bool validate = false);

}  // namespace conveyor
