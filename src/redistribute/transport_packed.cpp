// SPDX-License-Identifier: BSD-3-Clause
// The packed transport (transport.hpp): Irecv per peer; pack per peer + Isend;
// local pieces copied (and transformed) directly; each package unpacked as soon as
// all of its messages have arrived. Packages above 2^31 bytes go as several
// messages (runtime/message_pieces.hpp). Buffers: one package per peer and
// direction, from the runtime's pool, reused by every execution.
#include <mpi.h>

#include <vector>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"
#include "redistribute/transport.hpp"
#include "redistribute/transport_table.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/message_pieces.hpp"

namespace conveyor::redistribute::detail {
namespace {

class packed_transport final : public transport_base {
 public:
  explicit packed_transport(const exchange_map& g) : g_(g) {
    const auto P = static_cast<std::size_t>(g.size);
    send_buf_.resize(P);
    recv_buf_.resize(P);
    for (int p : g.send_peers)
      send_buf_[static_cast<std::size_t>(p)].resize(
          static_cast<std::size_t>(g.send_bytes[static_cast<std::size_t>(p)]));
    for (int p : g.recv_peers)
      recv_buf_[static_cast<std::size_t>(p)].resize(
          static_cast<std::size_t>(g.recv_bytes[static_cast<std::size_t>(p)]));
  }

  void execute() override {
    using conveyor::detail::check_mpi;
    rreq_.clear();
    sreq_.clear();
    rowner_.clear();
    parts_left_.assign(static_cast<std::size_t>(g_.size), 0);
    for (int p : g_.recv_peers) {
      const std::size_t before = rreq_.size();
      post(true, recv_buf_[static_cast<std::size_t>(p)].data(), p, rreq_);
      rowner_.resize(rreq_.size(), p);
      parts_left_[static_cast<std::size_t>(p)] = static_cast<int>(rreq_.size() - before);
    }
    for (int p : g_.send_peers) {
      char* buf = send_buf_[static_cast<std::size_t>(p)].data();
      g_.pack_all(p, buf);
      post(false, buf, p, sreq_);
    }
    g_.copy_local();
    for (std::size_t done = 0; done < rreq_.size(); ++done) {
      int idx = MPI_UNDEFINED;
      check_mpi(MPI_Waitany(static_cast<int>(rreq_.size()), rreq_.data(), &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
      const int p = rowner_[static_cast<std::size_t>(idx)];
      if (--parts_left_[static_cast<std::size_t>(p)] == 0)
        g_.unpack_all(p, recv_buf_[static_cast<std::size_t>(p)].data());
    }
    check_mpi(MPI_Waitall(static_cast<int>(sreq_.size()), sreq_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

 private:
  // A peer's whole package as messages of at most 2^31 - 1 bytes, tags 0, 1, ...
  void post(bool receive, char* buf, int peer, std::vector<MPI_Request>& reqs) const {
    const auto k = static_cast<std::size_t>(peer);
    const std::int64_t bytes = receive ? g_.recv_bytes[k] : g_.send_bytes[k];
    conveyor::detail::for_each_piece(static_cast<std::size_t>(bytes), [&](std::size_t off, int n, int part) {
      MPI_Request r;
      if (receive) MPI_Irecv(buf + off, n, MPI_BYTE, peer, part, g_.comm, &r);
      else MPI_Isend(buf + off, n, MPI_BYTE, peer, part, g_.comm, &r);
      reqs.push_back(r);
    });
  }

  const exchange_map& g_;
  std::vector<conveyor::detail::byte_buffer> send_buf_, recv_buf_;  // per peer
  std::vector<MPI_Request> rreq_, sreq_;                            // reused by every execution
  std::vector<int> rowner_, parts_left_;
};

}  // namespace

std::unique_ptr<transport_base> make_packed_transport(const exchange_map& g) {
  return std::make_unique<packed_transport>(g);
}

// The table's row (transport_table.hpp).
// Predicted: one alpha per peer + (S + R + L) c + the bytes on each link times its beta.
namespace {
double predict_packed(const traffic_terms& e, const conveyor::detail::traffic&, const cost_model&) {
  return e.latency + e.copy + e.wire_intra + e.wire_inter;
}
}  // namespace

const transport_row packed_row = {
    transport::packed,
    "Irecv per peer; pack per peer and Isend; local pieces copied directly; each package unpacked as it arrives",
    predict_packed, /*modeled=*/true, [](exchange_map& g, const transport_build&) { return make_packed_transport(g); }};

}  // namespace conveyor::redistribute::detail
