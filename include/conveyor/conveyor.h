// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API, every engine: one header per engine in conveyor/c/, which
 * conveyor.h includes. common.h has what they share and the conventions:
 *
 * Every function returns a conveyor_status (CONVEYOR_SUCCESS = 0) unless stated
 * otherwise. After a failure, conveyor_last_error() returns a message describing
 * it; the message belongs to the calling thread and stays valid until that thread's
 * next failing Conveyor call. Enum values equal those of the C++ API.
 */
#ifndef CONVEYOR_CONVEYOR_H
#define CONVEYOR_CONVEYOR_H

#include "conveyor/c/common.h"
#include "conveyor/c/reduce.h"
#include "conveyor/c/collectives.h"
#include "conveyor/c/sinkhorn.h"
#include "conveyor/c/dsop.h"
#include "conveyor/c/redistribute.h"

#endif /* CONVEYOR_CONVEYOR_H */
