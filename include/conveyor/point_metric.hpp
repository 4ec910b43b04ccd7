// SPDX-License-Identifier: BSD-3-Clause
// The ground cost between two points of the point-cloud solvers
// (conveyor/sinkhorn_points.hpp), in a header of its own without <mpi.h>: the
// SIMD kernels that compute it include only this, so their translation unit (one
// copy per Highway target) is the same under every MPI and compiled once.
#pragma once

#include "conveyor/types.hpp"

namespace conveyor::sinkhorn {

/// The ground cost: sqeuclidean (default), euclidean. Described in conveyor/enums.h.
CONVEYOR_DECLARE_ENUM(metric, CONVEYOR_POINTS_METRIC_LIST, metric_name, parse_metric);

}  // namespace conveyor::sinkhorn
