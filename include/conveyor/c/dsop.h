// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API of the distributed sum of outer products, DSOP (conveyor/dsop.hpp).
 * Conventions (status codes, conveyor_last_error) in conveyor/c/common.h.
 */
#ifndef CONVEYOR_C_DSOP_H
#define CONVEYOR_C_DSOP_H

#include "conveyor/c/collectives.h" /* the allreduce algorithm constants its options name */
#include "conveyor/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Distributed sum of outer products (conveyor/dsop.hpp) ---- */

#define CONVEYOR_C_OUTER_(suffix, cpp, name) CONVEYOR_OUTER_##suffix,
enum { CONVEYOR_OUTER_ALGORITHM_LIST(CONVEYOR_C_OUTER_) }; /* CONVEYOR_OUTER_AUTO, _ALLGATHER, ... */
enum { CONVEYOR_MATRIX_ORDER_LIST(CONVEYOR_C_PLAIN_) };    /* CONVEYOR_ROW_MAJOR, CONVEYOR_COLUMN_MAJOR */

typedef struct conveyor_outer_options {
  int algorithm;           /* CONVEYOR_OUTER_* */
  int order;               /* CONVEYOR_ROW_MAJOR or CONVEYOR_COLUMN_MAJOR */
  int distributed;         /* non-zero: this rank receives only its row block */
  int allreduce_algorithm; /* CONVEYOR_ALLREDUCE_* used by CONVEYOR_OUTER_RING */
  int ranks_per_node;      /* 0: real nodes */
} conveyor_outer_options;

typedef struct conveyor_outer_report {
  int algorithm;    /* the algorithm that ran */
  size_t first_row; /* rows of G held by this rank (distributed) */
  size_t rows;
  double predicted_seconds;
} conveyor_outer_report;

CONVEYOR_C_API void conveyor_outer_options_init(conveyor_outer_options* options);

/* G = sum over the ranks of comm of a b^T (a: N, b: M, float32/float64). G_count is
 * G's capacity in elements (N*M, or rows*M when distributed). options and report
 * may be NULL. Collective; argument errors are reported on every rank. */
CONVEYOR_C_API int conveyor_outer_sum(const void* a, size_t N, const void* b, size_t M, void* G, size_t G_count,
                                      conveyor_dtype t, MPI_Comm comm, const conveyor_outer_options* options,
                                      conveyor_outer_report* report);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_C_DSOP_H */
