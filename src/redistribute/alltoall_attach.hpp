// SPDX-License-Identifier: BSD-3-Clause
// Internal: cross-memory attach for alltoallw (redistribute/alltoall.cpp) between
// ranks of one node. The receiver reads the sender's rows straight into its own
// (Linux process_vm_readv, up to 1024 rows per side and call): one copy of every
// byte instead of pack + MPI's transfer + unpack, made by the receiver's core
// alone while the sender's core does its own receives.
//
// Steps per pair and call: the sender sends its send map with absolute addresses
// (a descriptor: the boxes, a few hundred bytes for a subarray); the receiver reads,
// then sends an empty "done"; the sender's call returns only after every done
// (its buffer must not change while it is read).
//
// Usable only where every rank's probe succeeds: on the first alltoallw of a
// communicator each rank reads a word of every rank of its node and compares it
// (collective; the same verdict on every rank). The kernel refuses in containers
// whose seccomp profile blocks the call, across PID namespaces, under a ptrace
// policy (Yama) or for processes of another user; then every rank moves packages
// instead, and the verdict says why. CONVEYOR_ALLTOALL_COPY=packed turns it off;
// =attach / =slots / =messages fix this rank's choice as a sender
// (alltoall_copy_choice.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/alltoall.hpp"
#include "runtime/node_memory.hpp"

namespace conveyor::redistribute::detail {

/// Across nodes (no shared slots, nothing timed), node peers' pairs below this
/// many bytes move as packages: a descriptor, a read call and a done message cost
/// more than packing a small package (docs/results.md). On one node the senders
/// time it per plan (alltoall_copy_choice.hpp's kMidMinBytes).
inline constexpr std::int64_t kAttachMinBytes = std::int64_t{32} << 10;

/// An attached pair whose send rows average fewer bytes than this is packed by
/// the sender first and read as one run: process_vm_readv pays per row (an
/// iovec, the pages pinned), so short rows are read at a fraction of its
/// long-run rate (docs/results.md: 2 KiB and shorter at half or less), below
/// what a pack plus one long read gives.
inline constexpr std::int64_t kPackAttachedBelow = 4096;

/// Whether the sender packs an attached pair's rows (of `base`) first: they
/// average fewer than kPackAttachedBelow bytes and would be read with
/// process_vm_readv (not from node memory or a shared window, whose rows the
/// receiver copies from its own mapping at memcpy's rate).
bool pack_before_attach(const byte_map& rows, const void* base);

/// How this rank, as a sender on a one-node communicator, chooses the way of each
/// pair (alltoall_copy_choice.hpp): timed per plan (CONVEYOR_ALLTOALL_COPY=auto),
/// or fixed by the setting on this rank: attach from kMidMinBytes ("attach"),
/// slots then MPI messages ("slots"), MPI messages from kMidMinBytes ("messages").
enum class sender_rule { measured, attach, slots, messages };

struct attach_state {
  bool probed = false;
  bool usable = false;
  bool off = false;                          // CONVEYOR_ALLTOALL_COPY=packed (or invalid) on some rank: messages only
  sender_rule rule = sender_rule::measured;  // this rank's own (no agreement needed: receivers follow)
  std::string verdict;                       // "cross-memory attach", or "packed: <why>"
  std::vector<long> pid;                     // per rank of the communicator
  std::vector<int> node;                     // per rank: its node's number
};

/// Collective over `comm` (the first time; then free): fills `s`.
void probe_attach(attach_state& s, MPI_Comm comm, int rank, int size, const std::vector<int>& node_of);

/// Reads the rows of `remote` (absolute addresses in process `pid`) into the rows
/// of `local` (offsets from `base`), in order; both hold `bytes` bytes. Returns 0,
/// or the errno of a failed read.
int read_rows(long pid, const byte_map& remote, const byte_map& local, void* base, std::int64_t bytes);

/// The descriptor of a pair's send rows (`rows`, offsets from `base`): where they
/// lie in node memory (conveyor/node_memory.hpp) or in an MPI shared window
/// (runtime/shared_windows.hpp), a first box naming the allocation or the
/// window's file, then the rows as offsets in it, which the receiver copies with
/// memcpy from its own mapping (no system call, no page pinning); else their
/// absolute addresses, for read_rows.
byte_map attach_descriptor(const byte_map& rows, const void* base);

/// The peers' node memory mapped here by a call, held until the next call is
/// done (a repeated call finds its mappings, and their page tables, in place;
/// one no call uses any more is unmapped after the next).
struct node_mappings {
  std::vector<std::shared_ptr<const conveyor::detail::peer_memory>> held, used;
  void call_done() { held.swap(used), used.clear(); }
};

/// Reads what `descriptor` (from rank `pid`) names into `local`: node memory
/// mapped here when it names some and the mapping works (the mapping joins
/// `maps.used`), or a shared window this process maps too (then
/// from_node_memory), else read_rows. 0, or the errno of a failed read.
int read_attached(long pid, byte_map& descriptor, const byte_map& local, void* base, std::int64_t bytes,
                  node_mappings& maps, bool& from_node_memory);

}  // namespace conveyor::redistribute::detail
