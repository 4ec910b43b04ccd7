// SPDX-License-Identifier: BSD-3-Clause
// The one_sided transport (transport.hpp). Peers on my node: packed straight into
// their segment of a shared window (MPI_Win_allocate_shared), synchronized point
// to point by two counters at the start of every segment (no fences); peers on
// other nodes: packed into staging buffers and sent by MPI_Put between fences.
// Packing and local copies run in source order (source_order.hpp).
//
// Execution e: (1) wait until each node peer I pack for has unpacked execution
// e - 1 (its segment is free again); (2) pack: node peers straight into their
// segments, the others into staging buffers sent by MPI_Put between fences;
// (3) publish "packed e"; (4) my local copies, while peers still pack; (5) unpack
// each node peer's package as soon as it has published "packed e", then the
// MPI_Put window; (6) publish "unpacked e". No rank waits for ranks it exchanges
// nothing with; only the MPI_Put window (peers on other nodes) uses fences.
#include <mpi.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <numeric>
#include <thread>
#include <vector>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"
#include "redistribute/source_order.hpp"
#include "redistribute/transport.hpp"
#include "redistribute/transport_table.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor::redistribute::detail {
namespace {

using conveyor::detail::check_mpi;

// Waits until a peer's counter reaches `value`, yielding the core (ranks may
// outnumber cores; the peer may need this one to get there).
void wait_for(const std::atomic<std::uint64_t>& counter, std::uint64_t value) {
  while (counter.load(std::memory_order_acquire) < value) std::this_thread::yield();
}

class one_sided_transport final : public transport_base {
 public:
  // Every rank's segment starts with its two counters.
  struct shm_flags {
    alignas(64) std::atomic<std::uint64_t> packed{0};    // executions whose packages for node peers are written
    alignas(64) std::atomic<std::uint64_t> unpacked{0};  // executions whose packages from node peers are unpacked
  };
  static constexpr std::int64_t kFlagsBytes = sizeof(shm_flags);

  one_sided_transport(const exchange_map& g, int node_color) : g_(g) {
    split_node(node_color);
    shared_ = allocate_shared_window();
  }

  /// False if some node could not have a shared window (same on every rank).
  bool shares_memory() const { return shared_; }

  /// The rest of the construction (collective): staging, copies, the MPI_Put window.
  void finish();

  ~one_sided_transport() override {
    if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
    if (shm_win_ != MPI_WIN_NULL) MPI_Win_free(&shm_win_);
    if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  }

  void execute() override;

 private:
  void split_node(int node_color);
  void place();  // where each peer's package lands (collective: one MPI_Alltoall)
  bool allocate_shared_window();

  const exchange_map& g_;
  bool shared_ = false;
  MPI_Comm node_comm_ = MPI_COMM_NULL;  // ranks sharing my memory
  std::vector<int> node_rank_;          // per plan rank: its rank in node_comm_ (or MPI_UNDEFINED)
  MPI_Win shm_win_ = MPI_WIN_NULL;      // shared window (peers on my node)
  char* shm_mine_ = nullptr;            // my segment's packages (after my flags)
  std::vector<shm_flags*> flags_of_;    // per plan rank on my node (null: another node)
  MPI_Win win_ = MPI_WIN_NULL;          // MPI_Put window (peers off my node)
  conveyor::detail::byte_buffer window_buf_;
  std::vector<conveyor::detail::byte_buffer> send_buf_;  // per peer off my node: staged for MPI_Put
  std::vector<char*> shm_target_;                        // per peer: where I pack its package (null: MPI_Put)
  std::vector<char> shm_source_;                         // per peer: its package is in my shared segment
  std::vector<std::int64_t> window_offset_of_peer_;      // where peer p's data lands in my segment / window
  std::vector<std::int64_t> remote_offset_;              // where my data lands in peer p's
  std::int64_t shm_total_ = 0, put_total_ = 0;
  source_order_copies copies_;
  std::uint64_t executions_ = 0;
  std::vector<int> unpack_pending_;  // node peers not yet unpacked (reused)
};

// My node's ranks, and each plan rank's number in the node communicator. With
// emulated nodes (node_color >= 0) the node is also cut to the ranks that really
// share memory with me: a shared window over ranks of two real nodes is erroneous
// (MPICH on an emulated 3+2+2 cluster returned one and moved wrong data).
void one_sided_transport::split_node(int node_color) {
  const auto sz = static_cast<std::size_t>(g_.size);
  MPI_Comm emulated = MPI_COMM_NULL;
  if (node_color >= 0) check_mpi(MPI_Comm_split(g_.comm, node_color, g_.rank, &emulated), "MPI_Comm_split");
  check_mpi(MPI_Comm_split_type(node_color >= 0 ? emulated : g_.comm, MPI_COMM_TYPE_SHARED, g_.rank, MPI_INFO_NULL,
                                &node_comm_),
            "MPI_Comm_split_type");
  if (emulated != MPI_COMM_NULL) MPI_Comm_free(&emulated);
  MPI_Comm_set_errhandler(node_comm_, MPI_ERRORS_RETURN);
  node_rank_.assign(sz, MPI_UNDEFINED);
  std::vector<int> all(sz);
  std::iota(all.begin(), all.end(), 0);
  MPI_Group group, node_group;
  MPI_Comm_group(g_.comm, &group);
  MPI_Comm_group(node_comm_, &node_group);
  MPI_Group_translate_ranks(group, g_.size, all.data(), node_group, node_rank_.data());
  MPI_Group_free(&group);
  MPI_Group_free(&node_group);
}

// Node peers' packages land in my shared segment, the others' in my MPI_Put
// window; every sender learns its offsets with one MPI_Alltoall.
void one_sided_transport::place() {
  const auto sz = static_cast<std::size_t>(g_.size);
  shm_total_ = put_total_ = 0;
  window_offset_of_peer_.assign(sz, 0);
  shm_source_.assign(sz, 0);
  for (int p : g_.recv_peers) {
    const auto k = static_cast<std::size_t>(p);
    shm_source_[k] = node_rank_[k] != MPI_UNDEFINED;
    std::int64_t& total = shm_source_[k] ? shm_total_ : put_total_;
    window_offset_of_peer_[k] = total;
    total += g_.recv_bytes[k];
  }
  remote_offset_.assign(sz, 0);
  check_mpi(MPI_Alltoall(window_offset_of_peer_.data(), 1, MPI_INT64_T, remote_offset_.data(), 1, MPI_INT64_T, g_.comm),
            "MPI_Alltoall");
}

// Whether the file system of /dev/shm (where MPI libraries back shared windows by
// default) has `bytes` free beyond a margin for the MPI library's own use; true
// where /dev/shm cannot be examined (the MPI library may keep windows elsewhere).
static bool dev_shm_has_room(std::int64_t bytes) {
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) != 0) return true;
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  return free_bytes >= 1.25 * static_cast<double>(bytes) + (4 << 20);
}

// The shared window; if any node cannot have one (MPI_Win_allocate_shared fails,
// e.g. Open MPI with its osc/sm component excluded), no rank uses one: every node
// peer is then treated as off-node (MPI_Put).
bool one_sided_transport::allocate_shared_window() {
  const auto sz = static_cast<std::size_t>(g_.size);
  place();
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each segment in its owner's NUMA domain
  // My segment: my counters at its first 64-byte boundary (MPIs do not promise
  // aligned segments: Open MPI's osc/sm may start one 8 bytes past a boundary),
  // then the packages.
  constexpr std::uintptr_t kAlign = alignof(shm_flags);
  const auto flags_in = [&](char* base) {
    return reinterpret_cast<shm_flags*>((reinterpret_cast<std::uintptr_t>(base) + kAlign - 1) / kAlign * kAlign);
  };
  const std::int64_t segment = static_cast<std::int64_t>(kAlign) + kFlagsBytes + shm_total_;
  char* segment_base = nullptr;
  // Room for the node's window in /dev/shm, agreed before asking for it: when the
  // backing file cannot be created, Open MPI 4.1's osc/sm fails
  // MPI_Win_allocate_shared on the node's first rank alone and the node's other
  // ranks wait in it forever (tests/faults, shm_full). Without room every rank
  // takes the MPI_Put path below.
  std::int64_t node_bytes = segment;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &node_bytes, 1, MPI_INT64_T, MPI_SUM, node_comm_), "MPI_Allreduce");
  int ok = dev_shm_has_room(node_bytes) ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g_.comm), "MPI_Allreduce");
  if (ok) ok = MPI_Win_allocate_shared(segment, 1, info, node_comm_, &segment_base, &shm_win_) == MPI_SUCCESS;
  MPI_Info_free(&info);
  flags_of_.assign(sz, nullptr);
  for (std::size_t k = 0; ok && k < sz; ++k) {
    if (node_rank_[k] == MPI_UNDEFINED) continue;
    MPI_Aint bytes;
    int disp;
    char* base = nullptr;
    ok = MPI_Win_shared_query(shm_win_, node_rank_[k], &bytes, &disp, &base) == MPI_SUCCESS;
    flags_of_[k] = flags_in(base);
  }
  if (ok) {
    new (flags_in(segment_base)) shm_flags();
    shm_mine_ = reinterpret_cast<char*>(flags_in(segment_base)) + kFlagsBytes;
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g_.comm), "MPI_Allreduce");  // (also: counters set)
  if (ok) return true;
  if (shm_win_ != MPI_WIN_NULL) MPI_Win_free(&shm_win_);
  shm_win_ = MPI_WIN_NULL;
  shm_mine_ = nullptr;
  flags_of_.assign(sz, nullptr);
  node_rank_.assign(sz, MPI_UNDEFINED);
  place();
  return false;
}

void one_sided_transport::finish() {
  const auto sz = static_cast<std::size_t>(g_.size);
  shm_target_.assign(sz, nullptr);
  send_buf_.resize(sz);
  int off_node = 0;
  std::vector<char*> package(sz, nullptr);
  for (int p : g_.send_peers) {
    const auto k = static_cast<std::size_t>(p);
    if (node_rank_[k] == MPI_UNDEFINED) {
      off_node = 1;
      send_buf_[k].resize(static_cast<std::size_t>(g_.send_bytes[k]));  // staged for MPI_Put
      package[k] = send_buf_[k].data();
    } else {
      // Packed in place: no staging buffer.
      shm_target_[k] = reinterpret_cast<char*>(flags_of_[k]) + kFlagsBytes + remote_offset_[k];
      package[k] = shm_target_[k];
    }
  }
  copies_ = source_order_copies(g_, package, /*local_last=*/true);
  for (int p : g_.recv_peers) off_node |= shm_source_[static_cast<std::size_t>(p)] ? 0 : 1;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &off_node, 1, MPI_INT, MPI_MAX, g_.comm), "MPI_Allreduce");
  if (!off_node) return;  // every package moves through shared memory
  window_buf_.resize(static_cast<std::size_t>(std::max<std::int64_t>(put_total_, 1)));
  // Open MPI 4.1's osc/rdma cannot create windows over btl/vader without a
  // single-copy mechanism (open-mpi/ompi#9871): say what to do instead of aborting.
  if (MPI_Win_create(window_buf_.data(), static_cast<MPI_Aint>(window_buf_.size()), 1, MPI_INFO_NULL, g_.comm, &win_) !=
      MPI_SUCCESS) {
    win_ = MPI_WIN_NULL;
    throw error(errc::mpi,
                "redistribute: MPI_Win_create failed, so the one_sided transport is unavailable with this MPI "
                "setup (Open MPI 4.1: try OMPI_MCA_osc=sm,pt2pt or ucx); other transports work");
  }
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
}

void one_sided_transport::execute() {
  using copies = source_order_copies::copies;
  const std::uint64_t e = ++executions_;
  if (shm_win_ != MPI_WIN_NULL) {
    for (int p : g_.send_peers) {
      if (shm_target_[static_cast<std::size_t>(p)]) wait_for(flags_of_[static_cast<std::size_t>(p)]->unpacked, e - 1);
    }
  }
  if (win_ != MPI_WIN_NULL) check_mpi(MPI_Win_fence(0, win_), "MPI_Win_fence");
  copies_.run(copies::packing);
  for (int p : g_.send_peers) {
    const auto k = static_cast<std::size_t>(p);
    if (shm_target_[k]) continue;
    char* buf = send_buf_[k].data();
    conveyor::detail::for_each_piece(static_cast<std::size_t>(g_.send_bytes[k]), [&](std::size_t o, int n, int) {
      check_mpi(MPI_Put(buf + o, n, MPI_BYTE, p, remote_offset_[k] + static_cast<MPI_Aint>(o), n, MPI_BYTE, win_),
                "MPI_Put");
    });
  }
  shm_flags* mine = shm_win_ != MPI_WIN_NULL ? flags_of_[static_cast<std::size_t>(g_.rank)] : nullptr;
  if (mine) mine->packed.store(e, std::memory_order_release);
  copies_.run(copies::local);
  if (win_ != MPI_WIN_NULL) check_mpi(MPI_Win_fence(MPI_MODE_NOSUCCEED, win_), "MPI_Win_fence");
  const auto unpack = [&](int p) {
    const auto k = static_cast<std::size_t>(p);
    g_.unpack_all(p, (shm_source_[k] ? shm_mine_ : window_buf_.data()) + window_offset_of_peer_[k]);
  };
  unpack_pending_.clear();
  for (int p : g_.recv_peers) {
    if (shm_source_[static_cast<std::size_t>(p)]) unpack_pending_.push_back(p);
    else unpack(p);
  }
  while (!unpack_pending_.empty()) {  // in the order the peers finish packing
    const auto ready = std::find_if(unpack_pending_.begin(), unpack_pending_.end(), [&](int p) {
      return flags_of_[static_cast<std::size_t>(p)]->packed.load(std::memory_order_acquire) >= e;
    });
    if (ready == unpack_pending_.end()) {
      std::this_thread::yield();
      continue;
    }
    unpack(*ready);
    unpack_pending_.erase(ready);
  }
  if (mine) mine->unpacked.store(e, std::memory_order_release);
}

}  // namespace

std::unique_ptr<transport_base> make_one_sided_transport(const exchange_map& g, int node_color,
                                                         bool require_shared_memory) {
  auto t = std::make_unique<one_sided_transport>(g, node_color);
  if (require_shared_memory && !t->shares_memory()) return nullptr;  // agreed by every rank
  t->finish();
  return t;
}

// The table's row (transport_table.hpp).
// Predicted: a counter handshake per node peer (alpha_intra each), two fences
// (log2 P) if any peer is off-node, + (S + R + L) c + only the off-node wire (on a
// node the package is packed into the receiver's shared segment). Chosen by
// `auto` counting on shared memory: where some node cannot have a shared window
// it builds nothing and the plan runs packed.
namespace {
double predict_one_sided(const traffic_terms& e, const conveyor::detail::traffic& t, const cost_model& p) {
  const double log2_ranks = std::ceil(std::log2(std::max(t.ranks, 1)));
  const double sync = t.peers_intra * p.intra_alpha + (t.peers_inter > 0 ? 2 * log2_ranks * p.inter_alpha : 0);
  return sync + e.copy + e.wire_inter + t.peers_inter * p.inter_alpha;
}
}  // namespace

const transport_row one_sided_row = {
    transport::one_sided,
    "node peers: packed straight into their segment of a shared window (counters, no fences); others: MPI_Put",
    predict_one_sided, /*modeled=*/true, [](exchange_map& g, const transport_build& b) {
      return make_one_sided_transport(g, b.node_color, /*require_shared_memory=*/b.automatic);
    }};

}  // namespace conveyor::redistribute::detail
