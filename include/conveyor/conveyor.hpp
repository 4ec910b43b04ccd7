// SPDX-License-Identifier: BSD-3-Clause
// Everything in Conveyor's C++ API.
#pragma once

#include "conveyor/alltoall.hpp"
#include "conveyor/collectives.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/node_memory.hpp"
#include "conveyor/contract.hpp"
#include "conveyor/dsop.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/reduce.hpp"
#include "conveyor/settings.hpp"
#include "conveyor/sinkhorn.hpp"
#include "conveyor/sinkhorn_barycenter.hpp"
#include "conveyor/sinkhorn_points.hpp"
#include "conveyor/types.hpp"
#include "conveyor/version.hpp"
