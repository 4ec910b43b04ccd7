// SPDX-License-Identifier: BSD-3-Clause
// The table of Redistribute's transports (transport_table.hpp): one row each.
#include "redistribute/transport_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

namespace conveyor::redistribute {
namespace detail {

const std::vector<const transport_row*>& transport_rows() {
  static const std::vector<const transport_row*> rows = {
      &packed_row, &pipelined_row, &one_sided_row, &alltoallv_row, &datatype_row, &one_copy_row,
  };
  return rows;
}

const transport_row& transport_row_of(transport kind) {
  for (const transport_row* row : transport_rows()) {
    if (row->kind == kind) return *row;
  }
  throw error(errc::internal, "redistribute: no transport " + std::string(transport_name(kind)));
}

traffic_terms terms_of(const conveyor::detail::traffic& t, const cost_model& p) {
  const auto d = [](std::int64_t x) { return static_cast<double>(x); };
  return {d(t.sent_intra + t.sent_inter + t.received + t.local) * p.copy_beta,
          d(t.sent_intra) * p.intra_beta,
          d(t.sent_inter) * p.inter_beta,
          t.peers_intra * p.intra_alpha + t.peers_inter * p.inter_alpha,
          std::ceil(d(t.sent_intra + t.sent_inter) / d(std::max<std::int64_t>(t.chunk_bytes, 1))),
          t.peers_inter > 0 ? p.inter_alpha : p.intra_alpha};
}

}  // namespace detail

const std::vector<transport_info>& transports() {
  static const std::vector<transport_info> infos = [] {
    std::vector<transport_info> out;
    for (const detail::transport_row* row : detail::transport_rows()) {
      out.push_back({row->kind, transport_name(row->kind), row->summary, row->modeled});
    }
    return out;
  }();
  return infos;
}

}  // namespace conveyor::redistribute
