// SPDX-License-Identifier: BSD-3-Clause
// The cost model's parameters, shared by every engine's `automatic` choice:
// latency and bandwidth within and between nodes, the local reduction and copy
// speeds, the pipeline's segment and window (docs/algorithms.md). Defaults, or
// the tune file named by CONVEYOR_TUNE_FILE that `conveyor tune`
// (measure_cost_model, conveyor/collectives.hpp) writes. Each engine's formulas
// live with the engine; this header only holds what they read.
#pragma once

#include <mpi.h>  // MPICH_VERSION: the defaults differ per MPI library

#include <cstddef>
#include <string>

#include "conveyor/export.hpp"

namespace conveyor {

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
  int window = 4;                                    // pipeline chunks in flight
  // Messages larger than this go in pieces of this size, all posted at once, so
  // no piece waits for the transport's rendezvous handshake (0: whole messages).
  // `conveyor tune` measures which is faster. Defaults: what it measured on this
  // project's machines -- MPICH 4.0's shared memory 8 KiB pieces, Open MPI 4.1's
  // whole messages (docs/algorithms.md, "Pieces below the eager limit").
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
/// The tune-file text of a model (`key value` lines), and its inverse.
CONVEYOR_API std::string format_cost_model(const cost_model& m);
CONVEYOR_API cost_model parse_cost_model(const std::string& text);

}  // namespace conveyor
