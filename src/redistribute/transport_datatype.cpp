// SPDX-License-Identifier: BSD-3-Clause
// The datatype transport (transport.hpp), the tensor paper's baseline: one MPI
// struct type per peer over the source blocks at absolute addresses, built once;
// MPI walks it (no packing in Conveyor). Plain copies are received the same way
// straight into the destination blocks; scaled ones into a contiguous buffer that
// Conveyor unpacks. Limits: one message per peer, so a package must stay below
// 2^31 elements of its type; MPI's type engine packs at best as fast as Conveyor.
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

// The elements of one piece, in the packed order (`order`), as an MPI type at
// absolute addresses: nested hvectors from the innermost dimension out.
MPI_Datatype piece_type(const transform_plan& t, const piece& p, bool dst_side, const axis_order& order) {
  const MPI_Datatype elem = mpi_datatype(t.type);
  coords stride{};
  char* corner;
  if (!dst_side) {
    stride = t.src->storage(p.src_block).strides;
    corner = exchange_map::src_corner(t, p);
  } else {
    const block_storage s = t.dst->storage(p.dst_block);
    for (int k = 0; k < t.ndim; ++k)
      stride[static_cast<std::size_t>(t.perm[static_cast<std::size_t>(k)])] = s.strides[static_cast<std::size_t>(k)];
    corner = exchange_map::dst_corner(t, p);
  }
  MPI_Datatype type = elem, next;
  bool owned = false;
  for (int j = t.ndim; j-- > 0;) {  // innermost packed axis first
    const auto k = static_cast<std::size_t>(order[static_cast<std::size_t>(j)]);
    MPI_Type_create_hvector(static_cast<int>(p.ext[k]), 1, stride[k] * static_cast<MPI_Aint>(t.esize), type, &next);
    if (owned) MPI_Type_free(&type);
    type = next;
    owned = true;
  }
  MPI_Aint addr;
  MPI_Get_address(corner, &addr);
  MPI_Datatype placed;
  int one = 1;
  MPI_Type_create_struct(1, &one, &addr, &type, &placed);
  MPI_Type_free(&type);
  return placed;
}

class datatype_transport final : public transport_base {
 public:
  explicit datatype_transport(const exchange_map& g) : g_(g) {
    const auto P = static_cast<std::size_t>(g.size);
    send_types_.assign(P, MPI_DATATYPE_NULL);
    recv_types_.assign(P, MPI_DATATYPE_NULL);
    recv_buf_.resize(P);
    direct_receive_ =
        std::all_of(g.transforms.begin(), g.transforms.end(), [](const transform_plan& t) { return t.scale.plain(); });
    for (int p : g.send_peers) send_types_[static_cast<std::size_t>(p)] = combine(&transform_plan::send, p, false);
    for (int p : g.recv_peers) {
      const auto k = static_cast<std::size_t>(p);
      if (direct_receive_) {
        recv_types_[k] = combine(&transform_plan::recv, p, true);
      } else {
        recv_buf_[k].resize(static_cast<std::size_t>(g.recv_bytes[k]));
        MPI_Type_contiguous(static_cast<int>(g.recv_bytes[k]), MPI_BYTE, &recv_types_[k]);
        MPI_Type_commit(&recv_types_[k]);
      }
    }
  }

  ~datatype_transport() override {
    for (auto& t : send_types_)
      if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    for (auto& t : recv_types_)
      if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }

  void execute() override {
    using conveyor::detail::check_mpi;
    std::vector<MPI_Request> reqs, sreq;
    for (int p : g_.recv_peers) {
      const auto k = static_cast<std::size_t>(p);
      MPI_Request r;
      MPI_Irecv(direct_receive_ ? MPI_BOTTOM : recv_buf_[k].data(), 1, recv_types_[k], p, 0, g_.comm, &r);
      reqs.push_back(r);
    }
    for (int p : g_.send_peers) {
      MPI_Request r;
      MPI_Isend(MPI_BOTTOM, 1, send_types_[static_cast<std::size_t>(p)], p, 0, g_.comm, &r);
      sreq.push_back(r);
    }
    g_.copy_local();
    for (std::size_t done = 0; done < reqs.size(); ++done) {
      int idx = MPI_UNDEFINED;
      check_mpi(MPI_Waitany(static_cast<int>(reqs.size()), reqs.data(), &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
      if (!direct_receive_) {
        const int p = g_.recv_peers[static_cast<std::size_t>(idx)];
        g_.unpack_all(p, recv_buf_[static_cast<std::size_t>(p)].data());
      }
    }
    check_mpi(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

 private:
  // All pieces of one peer and direction as one struct type.
  MPI_Datatype combine(piece_lists dir, int peer, bool dst_side) const {
    std::vector<MPI_Datatype> parts;
    g_.for_pieces(dir, peer, [&](const transform_plan& t, const piece& pc, std::size_t) {
      parts.push_back(piece_type(t, pc, dst_side, dst_side ? t.peer_order[static_cast<std::size_t>(peer)] : t.order));
    });
    std::vector<int> ones(parts.size(), 1);
    std::vector<MPI_Aint> zero(parts.size(), 0);
    MPI_Datatype all;
    MPI_Type_create_struct(static_cast<int>(parts.size()), ones.data(), zero.data(), parts.data(), &all);
    MPI_Type_commit(&all);
    for (auto& x : parts) MPI_Type_free(&x);
    return all;
  }

  const exchange_map& g_;
  std::vector<MPI_Datatype> send_types_, recv_types_;    // per peer (MPI_DATATYPE_NULL if none)
  std::vector<conveyor::detail::byte_buffer> recv_buf_;  // per peer, scaled transforms only
  bool direct_receive_ = false;
};

}  // namespace

std::unique_ptr<transport_base> make_datatype_transport(const exchange_map& g) {
  return std::make_unique<datatype_transport>(g);
}

// The table's row (transport_table.hpp).
// Predicted: as packed (MPI packs and unpacks); reported, never chosen by `auto`:
// MPI packs a derived type at best as fast as Conveyor does.
namespace {
double predict_datatype(const traffic_terms& e, const conveyor::detail::traffic&, const cost_model&) {
  return e.latency + e.copy + e.wire_intra + e.wire_inter;  // MPI packs and unpacks
}
}  // namespace

const transport_row datatype_row = {
    transport::datatype,
    "one MPI struct datatype per peer over the blocks: MPI walks the types (the tensor paper's baseline; "
    "never chosen by auto)",
    predict_datatype, /*modeled=*/false,
    [](exchange_map& g, const transport_build&) { return make_datatype_transport(g); }};

}  // namespace conveyor::redistribute::detail
