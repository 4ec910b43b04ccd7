// conveyor::alltoallw (conveyor/alltoall.hpp): the steps, bytes and limits are in
// the public header. Here: how rows are walked, and the order of the exchange.
//
// Messages: on the runtime's private duplicate of the caller's communicator, tag
// (call number mod 512) * 64 + piece, so a message of one call can never match a
// receive of another (an erroneous program whose counts disagree leaves its
// message unmatched instead of corrupting the next call). Packages over 1 GiB go
// as several pieces (runtime/message_pieces.hpp), at most 64 (64 GiB a peer).
// Buffers: the packages of a call live in two buffers kept per communicator and
// reused by the next call (a repeated FFT transpose maps no new memory).
#include "conveyor/alltoall.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/contract.hpp"
#include "redistribute/alltoall_attach.hpp"
#include "redistribute/byte_rows.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/context.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor {
namespace {

constexpr int kCallTags = 512;   // call numbers before a tag repeats
constexpr int kTagsPerCall = 64;  // pieces 0-61, then the attach descriptor and done
constexpr int kPiecesPerPackage = kTagsPerCall - 2;
constexpr int kDescriptorTag = kTagsPerCall - 2, kDoneTag = kTagsPerCall - 1;

struct alltoall_state final : detail::engine_state {
  unsigned calls = 0;
  detail::byte_buffer send_packages, recv_packages;
  redistribute::detail::attach_state attach;
};

const int kAlltoallSlot = detail::register_engine_state(
    [](const detail::comm_context&) -> std::unique_ptr<detail::engine_state> {
      return std::make_unique<alltoall_state>();
    });

using redistribute::detail::at;
using redistribute::detail::row_walk;

// The one row of a map that is a single contiguous run (null otherwise).
char* single_run(const byte_map& m, const void* base) {
  char* row = nullptr;
  std::int64_t n = 0;
  for (const byte_box& b : m) {
    if (b.bytes() == 0) continue;
    if (row || b.bytes() != b.run) return nullptr;
    row = at(base, b.offset);
    n = b.run;
  }
  return n ? row : nullptr;
}

void pack(const byte_map& m, const void* base, char* out) {
  row_walk w(m, base);
  char* row = nullptr;
  std::int64_t n = 0;
  while (w.next(row, n)) {
    std::memcpy(out, row, static_cast<std::size_t>(n));
    out += n;
  }
}

void unpack(const char* in, const byte_map& m, void* base) {
  row_walk w(m, base);
  char* row = nullptr;
  std::int64_t n = 0;
  while (w.next(row, n)) {
    std::memcpy(row, in, static_cast<std::size_t>(n));
    in += n;
  }
}

// This rank's own part: send rows to receive rows directly, cut where either ends.
void copy_self(const byte_map& from, const void* send, const byte_map& to, void* recv) {
  row_walk src(from, send), dst(to, recv);
  char *s = nullptr, *d = nullptr;
  std::int64_t sn = 0, dn = 0;
  while (true) {
    if (sn == 0 && !src.next(s, sn)) return;
    if (dn == 0 && !dst.next(d, dn)) return;
    const std::int64_t n = std::min(sn, dn);
    if (s != d) std::memmove(d, s, static_cast<std::size_t>(n));
    s += n, d += n, sn -= n, dn -= n;
  }
}

void check_map(const byte_map& m, const char* side, int peer) {
  for (const byte_box& b : m) {
    bool ok = b.run >= 0 && b.axes >= 0 && b.axes <= byte_box::max_axes;
    for (int k = 0; ok && k < b.axes; ++k) ok = b.count[static_cast<std::size_t>(k)] >= 0;
    if (!ok) {
      throw error(errc::invalid_argument, std::string("alltoallw: a box of the ") + side + " map of rank " +
                                              std::to_string(peer) + " has a negative length or count, or over " +
                                              std::to_string(byte_box::max_axes) + " axes");
    }
  }
}

}  // namespace

std::int64_t bytes_of(const byte_map& m) {
  std::int64_t b = 0;
  for (const byte_box& x : m) b += x.bytes();
  return b;
}

alltoallw_report alltoallw(const void* send, const std::vector<byte_map>& send_maps, void* recv,
                           const std::vector<byte_map>& recv_maps, MPI_Comm comm) {
  collective_call call("alltoallw", comm);
  detail::comm_context& ctx = detail::context_of(call);
  const int P = ctx.size, me = ctx.rank;
  const auto uP = static_cast<std::size_t>(P);
  std::vector<std::int64_t> sbytes(uP), rbytes(uP);
  call.check([&] {
    if (send_maps.size() != uP || recv_maps.size() != uP) {
      throw error(errc::invalid_argument, "alltoallw: send_maps and recv_maps need one map per rank (" +
                                              std::to_string(P) + "), got " + std::to_string(send_maps.size()) +
                                              " and " + std::to_string(recv_maps.size()));
    }
    for (int q = 0; q < P; ++q) {
      const auto k = static_cast<std::size_t>(q);
      check_map(send_maps[k], "send", q);
      check_map(recv_maps[k], "receive", q);
      sbytes[k] = bytes_of(send_maps[k]);
      rbytes[k] = bytes_of(recv_maps[k]);
      const std::int64_t limit = static_cast<std::int64_t>(detail::kMaxMessageBytes) * kPiecesPerPackage;
      if (sbytes[k] > limit || rbytes[k] > limit) {
        throw error(errc::unsupported, "alltoallw: over 62 GiB to or from one rank");
      }
    }
    const auto k = static_cast<std::size_t>(me);
    if (sbytes[k] != rbytes[k]) {
      throw error(errc::invalid_argument, "alltoallw: this rank sends itself " + std::to_string(sbytes[k]) +
                                              " bytes but receives " + std::to_string(rbytes[k]) + " from itself");
    }
  });
  call.agree_if(false);

  auto& state = ctx.state<alltoall_state>(kAlltoallSlot);
  const int tag0 = static_cast<int>(state.calls++ % kCallTags) * kTagsPerCall;
  const bool in_place = send == recv;
  alltoallw_report rep;
  rep.self_bytes = sbytes[static_cast<std::size_t>(me)];
  redistribute::detail::attach_state& attach = state.attach;
  redistribute::detail::probe_attach(attach, ctx.comm, me, P, ctx.layout(ctx.env_ranks_per_node).node_of);
  // Pairs of one node moved by cross-memory attach; both sides decide from the
  // pair's byte count, which matching signatures make equal.
  auto attached = [&](int q, std::int64_t bytes) {
    return attach.usable && attach.node[static_cast<std::size_t>(q)] == attach.node[static_cast<std::size_t>(me)] &&
           bytes >= redistribute::detail::kAttachMinBytes;
  };
  std::vector<char> sattach(uP, 0), rattach(uP, 0);

  // Where each package is: straight from / into the caller's buffer when its map
  // is one run (never for sends in place: receives may land there first), else
  // in the packages' buffers.
  std::vector<char*> sdirect(uP, nullptr), rdirect(uP, nullptr);
  std::vector<std::int64_t> soff(uP, 0), roff(uP, 0);
  std::int64_t stotal = 0, rtotal = 0;
  for (int i = 1; i < P; ++i) {
    const auto q = static_cast<std::size_t>((me + i) % P);
    sattach[q] = attached(static_cast<int>(q), sbytes[q]);
    rattach[q] = attached(static_cast<int>(q), rbytes[q]);
    rep.attached_peers += rattach[q];
    if (sbytes[q]) {
      const bool read_in_place = sattach[q] && !in_place;  // the peer reads the caller's rows
      if (!in_place && !read_in_place) sdirect[q] = single_run(send_maps[q], send);
      if (!sdirect[q] && !read_in_place) soff[q] = stotal, stotal += sbytes[q];
      ++rep.send_peers, rep.sent_bytes += sbytes[q];
    }
    if (rbytes[q]) {
      rdirect[q] = single_run(recv_maps[q], recv);
      if (!rdirect[q] && !rattach[q]) roff[q] = rtotal, rtotal += rbytes[q];
      ++rep.recv_peers, rep.received_bytes += rbytes[q];
    }
  }
  state.send_packages.resize(static_cast<std::size_t>(stotal));
  state.recv_packages.resize(static_cast<std::size_t>(rtotal));
  char* sbuf = state.send_packages.data();
  char* rbuf = state.recv_packages.data();

  std::vector<MPI_Request> rreq, sreq;
  std::vector<int> rowner, rpiece;
  auto post_receives = [&] {
    for (int i = 1; i < P; ++i) {
      const int q = (me - i + P) % P;
      const auto k = static_cast<std::size_t>(q);
      if (!rbytes[k] || rattach[k]) continue;
      char* buf = rdirect[k] ? rdirect[k] : rbuf + roff[k];
      detail::for_each_piece(static_cast<std::size_t>(rbytes[k]), [&](std::size_t off, int n, int piece) {
        MPI_Request r;
        detail::check_mpi(MPI_Irecv(buf + off, n, MPI_BYTE, q, tag0 + piece, ctx.comm, &r), "MPI_Irecv");
        rreq.push_back(r), rowner.push_back(q), rpiece.push_back(n);
      });
    }
  };
  auto pack_peer = [&](int q) {
    const auto k = static_cast<std::size_t>(q);
    if (sbytes[k] && !sdirect[k] && !(sattach[k] && !in_place)) pack(send_maps[k], send, sbuf + soff[k]);
  };
  // An attached pair: the rows' absolute addresses (the packed copy's when in
  // place: the receive buffer changes while the peer reads), and a done to wait for.
  std::vector<byte_map> descriptors(uP);
  auto send_peer = [&](int q) {
    const auto k = static_cast<std::size_t>(q);
    if (!sbytes[k]) return;
    MPI_Request r;
    if (sattach[k]) {
      byte_map& d = descriptors[k];
      if (in_place) {
        d.push_back(byte_box{reinterpret_cast<std::intptr_t>(sbuf + soff[k]), sbytes[k], 0, {}, {}});
      } else {
        d = send_maps[k];
        for (byte_box& b : d) b.offset += reinterpret_cast<std::intptr_t>(send);
      }
      detail::check_mpi(MPI_Isend(d.data(), static_cast<int>(d.size() * sizeof(byte_box)), MPI_BYTE, q,
                                  tag0 + kDescriptorTag, ctx.comm, &r), "MPI_Isend");
      sreq.push_back(r);
      detail::check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, q, tag0 + kDoneTag, ctx.comm, &r), "MPI_Irecv");
      sreq.push_back(r);
      return;
    }
    char* buf = sdirect[k] ? sdirect[k] : sbuf + soff[k];
    detail::for_each_piece(static_cast<std::size_t>(sbytes[k]), [&](std::size_t off, int n, int piece) {
      detail::check_mpi(MPI_Isend(buf + off, n, MPI_BYTE, q, tag0 + piece, ctx.comm, &r), "MPI_Isend");
      sreq.push_back(r);
    });
  };
  if (in_place) {  // every package packed before anything can arrive
    for (int i = 1; i < P; ++i) pack_peer((me + i) % P);
    post_receives();
    for (int i = 1; i < P; ++i) send_peer((me + i) % P);
  } else {  // each package leaves as soon as it is packed
    post_receives();
    for (int i = 1; i < P; ++i) pack_peer((me + i) % P), send_peer((me + i) % P);
  }
  copy_self(send_maps[static_cast<std::size_t>(me)], send, recv_maps[static_cast<std::size_t>(me)], recv);

  // Every request completes before this returns, even after an error: a receive
  // left posted could write into the caller's buffer after the call.
  std::vector<int> pieces_left(uP, 0);
  for (int q : rowner) ++pieces_left[static_cast<std::size_t>(q)];
  std::string problem;
  int mpi_error = MPI_SUCCESS;
  // Attached pairs: the peer's descriptor (sent at the start of its call), one
  // read, then done (also after a failure: the peer waits for it).
  for (int i = 1; i < P; ++i) {
    const int q = (me - i + P) % P;
    const auto k = static_cast<std::size_t>(q);
    if (!rbytes[k] || !rattach[k]) continue;
    MPI_Message msg;
    MPI_Status st;
    detail::check_mpi(MPI_Mprobe(q, tag0 + kDescriptorTag, ctx.comm, &msg, &st), "MPI_Mprobe");
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    byte_map remote(static_cast<std::size_t>(n) / sizeof(byte_box));
    detail::check_mpi(MPI_Mrecv(remote.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
    const std::int64_t has = bytes_of(remote);
    if (has != rbytes[k] && problem.empty()) {
      problem = "alltoallw: rank " + std::to_string(q) + " sent " + std::to_string(has) + " bytes where this rank expects " +
                std::to_string(rbytes[k]) + " (type signatures that do not match)";
    } else if (has == rbytes[k]) {
      const int err = redistribute::detail::read_rows(attach.pid[k], remote, recv_maps[k], recv, has);
      if (err && problem.empty()) {
        problem = "alltoallw: reading rank " + std::to_string(q) + "'s rows (process_vm_readv) failed: " + std::strerror(err);
      }
    }
    MPI_Request r;
    detail::check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, q, tag0 + kDoneTag, ctx.comm, &r), "MPI_Isend");
    sreq.push_back(r);
  }
  for (std::size_t done = 0; done < rreq.size(); ++done) {
    int idx = MPI_UNDEFINED;
    MPI_Status st;
    const int rc = MPI_Waitany(static_cast<int>(rreq.size()), rreq.data(), &idx, &st);
    if (idx == MPI_UNDEFINED) {
      mpi_error = rc == MPI_SUCCESS ? MPI_ERR_INTERN : rc;
      break;
    }
    const auto i = static_cast<std::size_t>(idx);
    const int q = rowner[i];
    const auto k = static_cast<std::size_t>(q);
    int got = 0;
    if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_BYTE, &got);
    if (rc != MPI_SUCCESS || got != rpiece[i]) {
      if (problem.empty()) {
        problem = "alltoallw: rank " + std::to_string(q) + " sent " + (rc == MPI_SUCCESS ? std::to_string(got) : "more") +
                  " bytes where this rank expects " + std::to_string(rpiece[i]) + " (type signatures that do not match)";
      }
      pieces_left[k] = -1;  // never unpacked
      continue;
    }
    if (--pieces_left[k] == 0 && !rdirect[k]) unpack(rbuf + roff[k], recv_maps[k], recv);
  }
  const int rc = MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE);
  if (mpi_error != MPI_SUCCESS) detail::check_mpi(mpi_error, "MPI_Waitany");
  if (!problem.empty()) throw error(errc::invalid_argument, problem);
  detail::check_mpi(rc, "MPI_Waitall");
  return rep;
}

std::string alltoall_copy_path(MPI_Comm comm) {
  collective_call call("alltoall_copy_path", comm);
  detail::comm_context& ctx = detail::context_of(call);
  call.agree_if(false);
  auto& state = ctx.state<alltoall_state>(kAlltoallSlot);
  redistribute::detail::probe_attach(state.attach, ctx.comm, ctx.rank, ctx.size, ctx.layout(ctx.env_ranks_per_node).node_of);
  return state.attach.verdict;
}

}  // namespace conveyor
