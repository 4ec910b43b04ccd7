// SPDX-License-Identifier: BSD-3-Clause
// Internal: the transports of the Redistribute engine, one object per plan. The
// plan owns the exchange map (exchange_map.hpp: what moves where) and one transport built
// from it, which owns what that transport reuses on every execution (buffers, MPI
// datatypes, windows). Each transport lives in its own file, transport_<name>.cpp,
// with its row of the table of transports (transport_table.hpp: what it does, its
// prediction, its builder; `conveyor info` prints the table).
// Bytes on the wire: exactly the off-diagonal of the volume matrix; local pieces
// never touch MPI. docs/algorithms.md ("Redistribute") has the details.
#pragma once

#include <cstddef>
#include <memory>

#include "redistribute/exchange_map.hpp"

namespace conveyor::redistribute::detail {

class transport_base {
 public:
  transport_base() = default;
  transport_base(const transport_base&) = delete;
  transport_base& operator=(const transport_base&) = delete;
  virtual ~transport_base() = default;
  /// One redistribution (collective over the plan's communicator).
  virtual void execute() = 0;
};

// Builders (collective where the transport creates MPI objects). The exchange map must
// outlive the transport.
std::unique_ptr<transport_base> make_packed_transport(const exchange_map& g);
/// Cuts the exchange map's pieces into slabs first (the packed byte order is unchanged).
std::unique_ptr<transport_base> make_pipelined_transport(exchange_map& g, std::size_t chunk_bytes);
std::unique_ptr<transport_base> make_datatype_transport(const exchange_map& g);
/// node_color: my node's number if the caller set ranks per node, else -1 (the
/// shared-memory domains MPI reports). With require_shared_memory, returns null
/// (on every rank) when some node cannot have a shared window, having built nothing
/// else; without it, such packages go by MPI_Put.
std::unique_ptr<transport_base> make_one_sided_transport(const exchange_map& g, int node_color,
                                                         bool require_shared_memory);
std::unique_ptr<transport_base> make_alltoallv_transport(const exchange_map& g);
/// Null on every rank unless every rank is on one node (one_node: the real nodes,
/// agreed), the destinations that receive from other ranks lie in node memory
/// (push) or, with may_pull, the sources that go to other ranks do (pull), and
/// sources and destinations are disjoint; node_cpus as in node_layout (waiting
/// ranks yield). Lists the pieces only once every rank's first block is in node
/// memory (ScaLAPACK's arrays never are: their interval products stay).
std::unique_ptr<transport_base> make_one_copy_transport(exchange_map& g, bool one_node, bool may_pull, int node_cpus);

}  // namespace conveyor::redistribute::detail
