// SPDX-License-Identifier: BSD-3-Clause
// The all-to-all of the Redistribute engine: MPI_Alltoallw's movement, with each
// peer's part of the send and receive buffers described as byte boxes (what an
// MPI datatype's type map flattens to: runs of contiguous bytes repeated along
// strided axes). libconveyor_mpi decodes the datatypes of MPI_Alltoall, Alltoallv
// and Alltoallw into these maps (interpose/type_map.hpp); the plan API and C++
// callers may build them directly.
//
// Steps (redistribute/alltoall.cpp): receive packages posted from the peers that
// send this rank anything; each outgoing package packed (one copy of its boxes
// into a contiguous buffer; none when it is one run) and sent; this rank's own
// part copied directly from its send boxes to its receive boxes (one copy, never
// through MPI); each package unpacked into its receive boxes as it arrives.
// When every rank is on one node, smaller pairs go through slots of a shared
// segment instead of messages (redistribute/alltoall_shared.hpp: 512 KiB at 2
// ranks down to 32 KiB at 16), and larger ones skip the packages: the receiver
// reads the sender's rows into its own with cross-memory attach
// (redistribute/alltoall_attach.hpp), where the kernel allows it on every rank
// (from 32 KiB between ranks of one node when the ranks span several).
// Peers with nothing to move in either direction exchange no message at all (a
// sparse all-to-all costs only its non-empty pairs).
// Bytes on the wire: exactly the bytes of the non-empty off-diagonal pairs.
// Memory traffic per remote byte: pack + MPI's own transfer + unpack; one copy
// (the receiver's read) for an attached pair: a memcpy from the sender's buffer
// mapped here where it lies in node memory (conveyor/node_memory.hpp:
// conveyor::node_alloc, conveyor.empty, MPI_Alloc_mem under libconveyor_mpi),
// else process_vm_readv.
// Limits: every outgoing package is packed before any incoming one is unpacked,
// so the receive boxes may overlap the send boxes (MPI_IN_PLACE); receive boxes
// must not overlap each other (MPI makes that erroneous; validate checks it, at
// O(rows log rows), and throws; without it the bytes hold whichever part came last).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/cost_model.hpp"
#include "conveyor/export.hpp"
#include "conveyor/types.hpp"

namespace conveyor {

/// Bytes laid out as `run` contiguous bytes repeated along up to 7 outer axes,
/// outermost first: row (i_0, ..., i_{axes-1}) starts at
/// offset + sum_k i_k * stride[k] bytes from the buffer address. Rows are taken in
/// that (row-major) order; strides may be negative. Offsets are from the base
/// pointer passed with the map, which may be null (offsets are then addresses, as
/// with MPI_BOTTOM).
struct byte_box {
  static constexpr int max_axes = 7;
  std::int64_t offset = 0;
  std::int64_t run = 0;
  int axes = 0;
  std::array<std::int64_t, max_axes> count{}, stride{};
  /// run times every count: the bytes the box holds.
  std::int64_t bytes() const {
    std::int64_t b = run;
    for (int k = 0; k < axes; ++k) b *= count[static_cast<std::size_t>(k)];
    return b;
  }
};

/// A part of a buffer as the boxes its bytes are taken from, in order.
using byte_map = std::vector<byte_box>;

/// The bytes a map holds.
CONVEYOR_API std::int64_t bytes_of(const byte_map& m);

/// What alltoallw did on this rank.
struct alltoallw_report {
  int send_peers = 0, recv_peers = 0;               // other ranks this rank exchanged a message with
  std::int64_t sent_bytes = 0, received_bytes = 0;  // to / from other ranks
  std::int64_t self_bytes = 0;                      // copied from this rank's send to its receive boxes
  int attached_peers = 0;                           // peers whose rows this rank read directly (cross-memory attach)
  int node_memory_peers = 0;  // of those, read from node memory mapped here (memcpy, no system call)
  int packed_for_peers = 0;   // peers that read this rank's rows packed first (rows too short to read one by one)
  int typed_peers = 0;        // peers whose part came as one MPI message of the caller's own types (datatype form)
  // The datatype form only: derived types decoded by this call (0 once every type
  // has been seen), and parts of types not read, packed by MPI.
  int types_decoded = 0, staged_parts = 0;
  // Every rank on one node: this call was one of its plan's trials of the ways
  // this rank's pairs move (timed; CONVEYOR_ALLTOALL_MEASURE, docs/algorithms.md).
  bool copy_trial = false;
  // alltoallw_auto: the MPI library's own call ran instead of the exchange (the
  // counts above are what the exchange would have moved), and whether this call
  // was one of its size class's trials of the two.
  bool library = false, library_trial = false;
};

/// What alltoall_auto ran.
struct alltoall_auto_report {
  bool library = false;       // the MPI library's own call (`library`), not alltoallw
  bool by_nodes = false;      // the node-aware exchange (alltoall_by_nodes)
  bool trial = false;         // a measuring call of its size class (the result is the same)
  alltoallw_report exchange;  // alltoallw's report when it ran (last run of a trial)
};

/// The contiguous form's call of one algorithm of the family, `bytes` per peer
/// (alltoall_auto's parts; send may be MPI_IN_PLACE).
using alltoall_run = alltoallw_report (*)(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm);

/// One of the all-to-all family's algorithms: alltoall_auto's and
/// alltoallw_auto's candidates, as their table describes them
/// (src/redistribute/alltoall_table.cpp: one row each).
struct alltoall_algorithm_info {
  std::string_view name;  // the traces' and `conveyor info`'s name ("conveyor", "mpi", "by_nodes")
  const char* summary;    // what it does and when it pays
  int predicted;          // its entry in predict_alltoall's array, or -1 (not in the cost model)
  bool several_nodes;     // a candidate only where the ranks span several nodes
  alltoall_run run;       // it alone, on contiguous parts (the benchmarks' and tests' cases)
};
/// Every algorithm, in the table's order: what `conveyor info` lists, and the
/// case lists of the benchmarks and tests.
CONVEYOR_API const std::vector<alltoall_algorithm_info>& alltoall_algorithms();

/// MPI_Alltoall of contiguous parts, `bytes` per peer (part q of `send` at
/// q * bytes, of `recv` likewise; send may be MPI_IN_PLACE), `auto`: per size
/// class of `bytes` (two per octave) on `comm`, the first calls time alltoallw
/// (the pairwise exchange), the node-aware exchange (alltoall_by_nodes; when the
/// ranks span several nodes) and `library(in, out)` (the MPI library's own
/// MPI_Alltoall on the caller's arguments, from `in` to `out` laid out as send
/// and recv; `in` may be MPI_IN_PLACE), then one MPI_Allreduce of the slowest
/// rank's medians decides alike on every rank, and later calls of that class run
/// the fastest (the library unless one of Conveyor's beats it by more than the
/// trials' noise). CONVEYOR_ALLTOALL_MEASURE=0 runs Conveyor's two only, the one
/// the cost model predicts faster (docs/algorithms.md); =trace prints each
/// decision (rank 0). `bytes` must be equal on every rank (MPI_Alltoall's
/// matching rule).
CONVEYOR_API alltoall_auto_report alltoall_auto(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm,
                                                const std::function<void(const void* in, void* out)>& library);

/// MPI_Alltoall of contiguous parts (as alltoall_auto's), node-aware: one
/// message per ordered pair of nodes, gathered from and scattered to the node's
/// ranks through its shared memory (steps, leaders and cost:
/// redistribute/alltoall_by_nodes.hpp). On one node, the pairwise exchange.
/// Collective; the node communicator is made on the first call. Returns what
/// this rank exchanged between nodes (send_peers: the node pairs it sent) and,
/// in self_bytes, what it moved inside its node.
CONVEYOR_API alltoallw_report alltoall_by_nodes(const void* send, void* recv, std::int64_t bytes, MPI_Comm comm);

/// alltoallw's byte-map form (parts of any size), node-aware as alltoall_by_nodes:
/// one message per ordered pair of nodes that has bytes to move, after one
/// allgather on the node of what its ranks send and receive. On one node,
/// alltoallw. send may be MPI_IN_PLACE (pass the receive maps as send maps). The
/// byte counts of a pair must agree (MPI's matching rule); where they do not, a
/// rank that finds it (the receiver, or its node's leader for a pair between
/// nodes) throws errc::invalid_argument after every step has run on every rank,
/// so no rank waits for it. Collective.
CONVEYOR_API alltoallw_report alltoallw_by_nodes(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                                 const std::vector<byte_map>& recv_maps, MPI_Comm comm);

/// The cost model's seconds (conveyor/cost_model.hpp's parameters) for one
/// MPI_Alltoall of `bytes` per rank pair on `comm`'s node layout: [0] pairwise,
/// [1] node-aware. Collective on a communicator's first use.
CONVEYOR_API std::array<double, 2> predict_alltoall(std::int64_t bytes, MPI_Comm comm);
/// The same for a job's shape: `nodes` nodes of `ranks_per_node` ranks, with `model`.
CONVEYOR_API std::array<double, 2> predict_alltoall(std::int64_t bytes, int nodes, int ranks_per_node,
                                                    const cost_model& model);

/// How many nodes the ranks of `comm` span (the runtime's node layout: the
/// shared-memory domains MPI reports, or CONVEYOR_RANKS_PER_NODE). Collective on
/// a communicator's first use; a lookup after.
CONVEYOR_API int alltoall_nodes(MPI_Comm comm);

/// How alltoallw moves packages between ranks of one node on `comm`: "cross-memory
/// attach", or "packed: " and why not (the setting, or which rank the kernel
/// refused and its error). Collective on the first call for a communicator.
CONVEYOR_API std::string alltoall_copy_path(MPI_Comm comm);

/// Collective over `comm` (an intra-communicator): rank r's send_maps[q] (boxes
/// over `send`) arrive at rank q in recv_maps[r] (boxes over `recv`), byte for
/// byte in map order. send_maps and recv_maps hold one map per rank. The byte
/// counts of a pair must agree (MPI's matching type signatures): a package of
/// another size throws errc::invalid_argument on the rank that receives it.
/// `send` may equal `recv` (MPI_IN_PLACE: pass the receive maps as send maps).
/// Throws conveyor::error on bad arguments or an MPI failure. validate (the
/// collective contract, conveyor/contract.hpp): a bad argument on any rank throws
/// the same error on every rank before anything moves, and counts that disagree
/// between a pair throw the receiver's error on every rank after the exchange (one
/// agreement each); without it (MPI's semantics, what libconveyor_mpi uses) such
/// errors are thrown where they are found.
CONVEYOR_API alltoallw_report alltoallw(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                        const std::vector<byte_map>& recv_maps, MPI_Comm comm, bool validate = false);

/// One peer's part of a buffer as MPI_Alltoallw gives it: `count` items of
/// `type`, the first `displ` bytes past the buffer.
struct datatype_part {
  std::int64_t count = 0;
  std::int64_t displ = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

/// MPI_Alltoallw's movement on this engine (libconveyor_mpi's all-to-all calls and
/// conveyor.Alltoallw use it): each part decoded into byte maps
/// (redistribute/datatype_layout.hpp), every derived type once while it lives (its
/// layout kept on the type as an MPI attribute, deleted when the program frees
/// it); items of a type not read (F90 parameterized types, padded pairs such as
/// MPI_SHORT_INT) are packed and unpacked by MPI itself. `send` may be
/// MPI_IN_PLACE (send_parts unused: the receive parts are sent). send_size,
/// recv_size >= 0: the buffers' sizes in bytes; a part reaching outside its buffer
/// (by its type's true extent) is then invalid_argument. Errors and `validate` as
/// the byte-map form.
CONVEYOR_API alltoallw_report alltoallw(const void* send, const std::vector<datatype_part>& send_parts, void* recv,
                                        const std::vector<datatype_part>& recv_parts, MPI_Comm comm,
                                        bool validate = false, std::int64_t send_size = -1,
                                        std::int64_t recv_size = -1);

/// alltoallw's datatype form (no validate), `auto`. Every rank of `comm` on one
/// node (at most 16): MPI_Alltoallv / w give no size that every rank
/// knows, so each rank adds the size class (two per octave) of the largest
/// package it sends to the headers the exchange hands over anyway, and every
/// rank takes the largest as the call's class. Per class, the first calls alternate
/// the exchange and `library()` (the MPI library's own call on the caller's
/// arguments), then one MPI_Allreduce of the slowest rank's medians decides
/// alike on every rank (as alltoall_auto). A rank whose own class runs the
/// library sends its pairs as messages, so the hand-off is the library call's
/// only extra cost; after a call whose class went to the library,
/// alltoallw_ahead skips even that. Across nodes: one MPI_Allreduce agrees on
/// the class of the largest pair; per class the first calls time the pairwise
/// exchange, the library's call and alltoallw_by_nodes (Conveyor's with the
/// vote they pay on every call; the library's ahead of the vote as on one
/// node); with
/// CONVEYOR_ALLTOALL_MEASURE=0 the cost model's choice of Conveyor's two for the
/// largest pair, and with a forced CONVEYOR_ALLTOALL_COPY on any rank the
/// pairwise exchange.
CONVEYOR_API alltoallw_report alltoallw_auto(const void* send, const std::vector<datatype_part>& send_parts, void* recv,
                                             const std::vector<datatype_part>& recv_parts, MPI_Comm comm,
                                             const std::function<void()>& library);

/// Whether this alltoallw_auto call on `comm` runs the library's own call at once,
/// without the vote's hand-off: true for up to 63 calls after one whose agreed
/// class the measurement gave to the library, then false for one call, which
/// votes again. Every rank must ask it before each alltoallw_auto call on
/// `comm` (it counts the calls; every rank answers alike); on true, the caller
/// runs the library's call instead. Collective on a communicator's first use.
CONVEYOR_API bool alltoallw_ahead(MPI_Comm comm);

}  // namespace conveyor
