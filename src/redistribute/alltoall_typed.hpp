// SPDX-License-Identifier: BSD-3-Clause
// Internal: alltoallw's byte-map form with the caller's own datatypes beside
// the maps. The datatype form passes them when nothing was staged and the call
// is not in place; a sender on one node may then move a pair as one MPI message
// of those types (way::typed): the MPI library's own pack and unpack, which it
// pipelines between the two ranks (a pair whose send rows are short moves so at
// about two copies' cost, where cross-memory attach reads each row with a
// system call's overhead). It takes the place of the packed message in the
// "messages" copy rules (alltoall_copy_choice.hpp), so the per-plan timing
// chooses between it, the slots and attach. A receiver without the types (its
// part staged) takes the message as bytes into its package: the engine's
// assumption everywhere, one byte representation on the node.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

#include "conveyor/alltoall.hpp"

namespace conveyor::redistribute::detail {

struct typed_parts {
  const std::vector<datatype_part>* send = nullptr;  // displacements from the send buffer
  const std::vector<datatype_part>* recv = nullptr;  // from the receive buffer
};

/// conveyor::alltoallw's byte-map form, with `typed` (both or neither set), and
/// `library` (may be empty): the caller's call as the MPI library's own, which
/// alltoallw_auto times against the exchange.
alltoallw_report alltoallw_maps(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                                const std::vector<byte_map>& recv_maps, MPI_Comm comm, bool validate,
                                const typed_parts& typed, const std::function<void()>& library);

}  // namespace conveyor::redistribute::detail
