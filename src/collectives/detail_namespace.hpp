// SPDX-License-Identifier: BSD-3-Clause
// The collectives engine's private namespace, conveyor::collectives::detail, which sees the
// runtime's conveyor::detail (its context, node layout, cost model...): every
// private header of the engine includes this rather than saying it again.
#pragma once

namespace conveyor::detail {  // the runtime's
struct node_layout;
struct comm_context;
}  // namespace conveyor::detail

namespace conveyor::collectives::detail {
using namespace conveyor::detail;
}  // namespace conveyor::collectives::detail
