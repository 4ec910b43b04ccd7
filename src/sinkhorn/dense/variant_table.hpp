// SPDX-License-Identifier: BSD-3-Clause
// Internal: the dense variants' table (variant_table.cpp) as the solver reads it.
#pragma once

#include "conveyor/sinkhorn.hpp"
#include "sinkhorn/dense/walks/walk.hpp"

namespace conveyor::sinkhorn::detail {

/// The variant's in-place walk, or nullptr for one that never writes A (fused).
/// Throws invalid_argument for a value outside the enum.
template <class T>
const walk<T>* walk_of(variant v);

}  // namespace conveyor::sinkhorn::detail
