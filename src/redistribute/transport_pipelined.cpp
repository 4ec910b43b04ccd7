// SPDX-License-Identifier: BSD-3-Clause
// The pipelined transport (transport.hpp): pieces cut into slabs of the outermost
// packed axis (at most chunk_bytes each), and packages sent in chunks of
// >= chunk_bytes, round-robin over peers, so packing the next chunk overlaps
// sending the previous one; each chunk unpacked on arrival. One message per chunk
// (a chunk is below 2^31 bytes unless a single slab row is).
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"
#include "redistribute/transport.hpp"
#include "redistribute/transport_table.hpp"
#include "runtime/buffer_pool.hpp"

namespace conveyor::redistribute::detail {
namespace {

// Cuts every piece into slabs along the outermost packed axis (the sender's order)
// so no slab exceeds chunk_bytes; the packed byte order is unchanged by the cut.
void cut_into_slabs(transform_plan& t, std::size_t chunk_bytes) {
  const int n = t.ndim;
  const auto cut = [&](std::vector<piece>& v, const axis_order& order) {
    const auto a = static_cast<std::size_t>(order[0]);
    std::vector<piece> out;
    for (const piece& p : v) {
      const std::int64_t row =
          volume_of(p.ext, n) / std::max<std::int64_t>(p.ext[a], 1) * static_cast<std::int64_t>(t.esize);
      const std::int64_t rows_per =
          std::max<std::int64_t>(1, static_cast<std::int64_t>(chunk_bytes) / std::max<std::int64_t>(row, 1));
      for (std::int64_t r = 0; r < p.ext[a]; r += rows_per) {
        piece s = p;
        s.lo[a] = p.lo[a] + r;
        s.ext[a] = std::min(rows_per, p.ext[a] - r);
        out.push_back(s);
      }
    }
    v = std::move(out);
  };
  for (auto& v : t.send) cut(v, t.order);
  for (std::size_t q = 0; q < t.recv.size(); ++q) cut(t.recv[q], t.peer_order[q]);
}

class pipelined_transport final : public transport_base {
 public:
  pipelined_transport(exchange_map& g, std::size_t chunk_bytes)
      : g_(g), chunk_bytes_(static_cast<std::int64_t>(chunk_bytes)) {
    for (auto& t : g.transforms) cut_into_slabs(t, chunk_bytes);
    const auto P = static_cast<std::size_t>(g.size);
    send_buf_.resize(P);
    recv_buf_.resize(P);
    send_chunks_.assign(P, {});
    recv_chunks_.assign(P, {});
    for (int p : g.send_peers) {
      send_buf_[static_cast<std::size_t>(p)].resize(
          static_cast<std::size_t>(g.send_bytes[static_cast<std::size_t>(p)]));
      send_chunks_[static_cast<std::size_t>(p)] = chunks_of(&transform_plan::send, p);
    }
    for (int p : g.recv_peers) {
      recv_buf_[static_cast<std::size_t>(p)].resize(
          static_cast<std::size_t>(g.recv_bytes[static_cast<std::size_t>(p)]));
      recv_chunks_[static_cast<std::size_t>(p)] = chunks_of(&transform_plan::recv, p);
    }
  }

  void execute() override {
    using conveyor::detail::check_mpi;
    struct pending {
      int peer;
      std::size_t chunk;
      std::int64_t offset;
    };
    std::vector<MPI_Request> rreq, sreq;
    std::vector<pending> rinfo;
    for (int p : g_.recv_peers) {
      const auto& bounds = recv_chunks_[static_cast<std::size_t>(p)];
      std::int64_t off = 0;
      for (std::size_t c = 0; c + 1 < bounds.size(); ++c) {
        const std::int64_t bytes = range_bytes(&transform_plan::recv, p, bounds[c], bounds[c + 1]);
        MPI_Request r;
        MPI_Irecv(recv_buf_[static_cast<std::size_t>(p)].data() + off, static_cast<int>(bytes), MPI_BYTE, p,
                  static_cast<int>(c), g_.comm, &r);
        rreq.push_back(r);
        rinfo.push_back({p, c, off});
        off += bytes;
      }
    }
    // Send chunk by chunk, round-robin over peers, so every peer's first chunk leaves early.
    std::vector<std::int64_t> soff(static_cast<std::size_t>(g_.size), 0);
    std::size_t max_chunks = 0;
    for (int p : g_.send_peers) max_chunks = std::max(max_chunks, send_chunks_[static_cast<std::size_t>(p)].size() - 1);
    for (std::size_t c = 0; c < max_chunks; ++c) {
      for (int p : g_.send_peers) {
        const auto& bounds = send_chunks_[static_cast<std::size_t>(p)];
        if (c + 1 >= bounds.size()) continue;
        char* buf = send_buf_[static_cast<std::size_t>(p)].data();
        const std::int64_t start = soff[static_cast<std::size_t>(p)];
        g_.pack_range(p, bounds[c], bounds[c + 1], buf, soff[static_cast<std::size_t>(p)]);
        MPI_Request r;
        MPI_Isend(buf + start, static_cast<int>(soff[static_cast<std::size_t>(p)] - start), MPI_BYTE, p,
                  static_cast<int>(c), g_.comm, &r);
        sreq.push_back(r);
      }
    }
    g_.copy_local();
    for (std::size_t done = 0; done < rreq.size(); ++done) {
      int idx = MPI_UNDEFINED;
      check_mpi(MPI_Waitany(static_cast<int>(rreq.size()), rreq.data(), &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
      const pending& w = rinfo[static_cast<std::size_t>(idx)];
      const auto& bounds = recv_chunks_[static_cast<std::size_t>(w.peer)];
      std::int64_t off = w.offset;
      g_.unpack_range(w.peer, bounds[w.chunk], bounds[w.chunk + 1], recv_buf_[static_cast<std::size_t>(w.peer)].data(),
                      off);
    }
    check_mpi(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

 private:
  // Chunk boundaries: consecutive pieces (slabs) of >= chunk_bytes, per peer.
  std::vector<std::size_t> chunks_of(piece_lists dir, int peer) const {
    std::vector<std::size_t> bounds{0};
    std::int64_t acc = 0;
    g_.for_pieces(dir, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
      acc += exchange_map::piece_bytes(t, p);
      if (acc >= chunk_bytes_) {
        bounds.push_back(i + 1);
        acc = 0;
      }
    });
    const std::size_t n = g_.piece_count(dir, peer);
    if (bounds.back() != n) bounds.push_back(n);
    return bounds;
  }

  std::int64_t range_bytes(piece_lists dir, int peer, std::size_t first, std::size_t last) const {
    std::int64_t b = 0;
    g_.for_pieces(dir, peer, [&](const transform_plan& t, const piece& p, std::size_t i) {
      if (i >= first && i < last) b += exchange_map::piece_bytes(t, p);
    });
    return b;
  }

  const exchange_map& g_;
  std::int64_t chunk_bytes_;
  std::vector<conveyor::detail::byte_buffer> send_buf_, recv_buf_;   // per peer
  std::vector<std::vector<std::size_t>> send_chunks_, recv_chunks_;  // piece index bounds per peer
};

}  // namespace

std::unique_ptr<transport_base> make_pipelined_transport(exchange_map& g, std::size_t chunk_bytes) {
  return std::make_unique<pipelined_transport>(g, chunk_bytes);
}

// The table's row (transport_table.hpp).
// Predicted: as packed plus one alpha per chunk, packing overlapped with sending to
// other nodes: max(S_inter c, wire_inter) + S_intra c + wire_intra + (R + L) c
// (within a node the "wire" is a copy by the same cores).
namespace {
double predict_pipelined(const traffic_terms& e, const conveyor::detail::traffic& t, const cost_model& p) {
  const auto d = [](std::int64_t x) { return static_cast<double>(x); };
  return e.latency + e.chunks * e.alpha_any + std::max(d(t.sent_inter) * p.copy_beta, e.wire_inter) +
         d(t.sent_intra + t.received + t.local) * p.copy_beta + e.wire_intra;
}
}  // namespace

const transport_row pipelined_row = {
    transport::pipelined, "packed in chunks of chunk_bytes, packing the next chunk while the last one is on the wire",
    predict_pipelined, /*modeled=*/true,
    [](exchange_map& g, const transport_build& b) { return make_pipelined_transport(g, b.options.chunk_bytes); }};

}  // namespace conveyor::redistribute::detail
