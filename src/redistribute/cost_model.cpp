// SPDX-License-Identifier: BSD-3-Clause
// Redistribute's cost model (cost_model.hpp): each transport's prediction is its
// row's (transport_table.hpp); `auto`'s choice the cheapest modeled row.
#include "redistribute/cost_model.hpp"

#include "redistribute/transport_table.hpp"

namespace conveyor::detail {

using redistribute::transport;

transport_seconds predict_transports(const traffic& t, const cost_model& p) {
  const redistribute::detail::traffic_terms terms = redistribute::detail::terms_of(t, p);
  transport_seconds out{};
  for (const redistribute::detail::transport_row* row : redistribute::detail::transport_rows()) {
    out[static_cast<std::size_t>(row->kind)] = row->predict(terms, t, p);
  }
  return out;
}

transport cheapest_transport(const transport_seconds& slowest) {
  // The cheapest modeled row, the table's first on a tie (packed).
  transport best = transport::automatic;
  for (const redistribute::detail::transport_row* row : redistribute::detail::transport_rows()) {
    if (!row->modeled) continue;
    const std::size_t i = static_cast<std::size_t>(row->kind);
    if (best == transport::automatic || slowest[i] < slowest[static_cast<std::size_t>(best)]) best = row->kind;
  }
  return best;
}

}  // namespace conveyor::detail
