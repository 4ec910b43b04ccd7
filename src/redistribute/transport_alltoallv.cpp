// SPDX-License-Identifier: BSD-3-Clause
// The alltoallv transport (transport.hpp): every package packed (in source order,
// source_order.hpp) into one buffer, one MPI_Alltoallv, then unpacked. Limit: MPI
// counts are int, so all of a rank's packages together must stay below 2 GiB
// (checked at every execution: the error names the packed transport instead).
#include <mpi.h>

#include <climits>
#include <numeric>
#include <vector>

#include "conveyor/mpi.hpp"
#include "runtime/context.hpp"
#include "redistribute/source_order.hpp"
#include "redistribute/transport.hpp"
#include "redistribute/transport_table.hpp"
#include "runtime/buffer_pool.hpp"

namespace conveyor::redistribute::detail {
namespace {

class alltoallv_transport final : public transport_base {
 public:
  explicit alltoallv_transport(const exchange_map& g) : g_(g) {
    send_buf_.resize(
        static_cast<std::size_t>(std::accumulate(g.send_bytes.begin(), g.send_bytes.end(), std::int64_t{0})));
    recv_buf_.resize(
        static_cast<std::size_t>(std::accumulate(g.recv_bytes.begin(), g.recv_bytes.end(), std::int64_t{0})));
    std::vector<char*> package(static_cast<std::size_t>(g.size), nullptr);  // packages back to back, in rank order
    std::int64_t at = 0;
    for (int p : g.send_peers) {
      package[static_cast<std::size_t>(p)] = send_buf_.data() + at;
      at += g.send_bytes[static_cast<std::size_t>(p)];
    }
    copies_ = source_order_copies(g, package);
  }

  void execute() override {
    const auto P = static_cast<std::size_t>(g_.size);
    std::vector<int> scount(P, 0), sdispl(P, 0), rcount(P, 0), rdispl(P, 0);
    std::int64_t stotal = 0, rtotal = 0;
    for (std::size_t k = 0; k < P; ++k) {
      const bool self = static_cast<int>(k) == g_.rank;
      const std::int64_t sb = self ? 0 : g_.send_bytes[k], rb = self ? 0 : g_.recv_bytes[k];
      if (stotal + sb > INT32_MAX || rtotal + rb > INT32_MAX) {
        throw error(errc::unsupported, "redistribute: alltoallv transport limited to 2 GiB per rank; use packed");
      }
      scount[k] = static_cast<int>(sb);
      sdispl[k] = static_cast<int>(stotal);
      rcount[k] = static_cast<int>(rb);
      rdispl[k] = static_cast<int>(rtotal);
      stotal += sb;
      rtotal += rb;
    }
    copies_.run();
    conveyor::detail::check_mpi(MPI_Alltoallv(send_buf_.data(), scount.data(), sdispl.data(), MPI_BYTE,
                                              recv_buf_.data(), rcount.data(), rdispl.data(), MPI_BYTE, g_.comm),
                                "MPI_Alltoallv");
    for (int p : g_.recv_peers) g_.unpack_all(p, recv_buf_.data() + rdispl[static_cast<std::size_t>(p)]);
  }

 private:
  const exchange_map& g_;
  conveyor::detail::byte_buffer send_buf_, recv_buf_;
  source_order_copies copies_;
};

}  // namespace

std::unique_ptr<transport_base> make_alltoallv_transport(const exchange_map& g) {
  return std::make_unique<alltoallv_transport>(g);
}

// The table's row (transport_table.hpp).
// Predicted: (P - 1) alpha + (S + R + L) c + the wire (no overlap).
namespace {
double predict_alltoallv(const traffic_terms& e, const conveyor::detail::traffic& t, const cost_model&) {
  return (t.ranks - 1) * e.alpha_any + e.copy + e.wire_intra + e.wire_inter;
}
}  // namespace

const transport_row alltoallv_row = {
    transport::alltoallv, "every package in one buffer, one MPI_Alltoallv", predict_alltoallv, /*modeled=*/true,
    [](exchange_map& g, const transport_build&) { return make_alltoallv_transport(g); }};

}  // namespace conveyor::redistribute::detail
