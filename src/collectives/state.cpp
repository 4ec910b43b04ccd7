// SPDX-License-Identifier: BSD-3-Clause
// The collectives' per-communicator state (state.hpp): registered with the
// runtime, made with each context.
#include "collectives/state.hpp"

#include "conveyor/settings.hpp"

namespace conveyor::collectives::detail {

namespace {
std::unique_ptr<engine_state> make_collectives_state(const comm_context&) {
  auto state = std::make_unique<collectives_state>();
  // Read per communicator, when its context is made: a value only one rank has
  // wrong fails on every rank together (the runtime agrees on it).
  if (const auto v = setting("CONVEYOR_ALLREDUCE_ALGORITHM")) state->env_algorithm = parse_algorithm(*v);
  return state;
}
}  // namespace

const int kCollectivesSlot = register_engine_state(make_collectives_state);

}  // namespace conveyor::collectives::detail
