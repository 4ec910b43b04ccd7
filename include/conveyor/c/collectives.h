// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API of the collectives: allreduce, reduce_scatter, allgatherv (conveyor/collectives.hpp).
 * Conventions (status codes, conveyor_last_error) in conveyor/c/common.h.
 */
#ifndef CONVEYOR_C_COLLECTIVES_H
#define CONVEYOR_C_COLLECTIVES_H

#include "conveyor/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Collectives (see conveyor/collectives.hpp) ---- */

#define CONVEYOR_C_ALLREDUCE_(suffix, cpp, name) CONVEYOR_ALLREDUCE_##suffix,
enum { CONVEYOR_ALLREDUCE_ALGORITHM_LIST(CONVEYOR_C_ALLREDUCE_) }; /* CONVEYOR_ALLREDUCE_AUTO, _RING, ... */

typedef struct conveyor_allreduce_options {
  int algorithm;        /* CONVEYOR_ALLREDUCE_* */
  size_t segment_bytes; /* 0: cost model */
  int ranks_per_node;   /* 0: real nodes */
  int deterministic;    /* non-zero: rank-ordered fold */
  int validate;         /* non-zero: the collective contract (docs/api.md): a bad or
                           mismatched argument on any rank fails on every rank */
  /* Called when recv[offset, offset+count) is final; may be NULL. */
  void (*on_chunk)(size_t offset, size_t count, void* user_data);
  void* user_data;
} conveyor_allreduce_options;

typedef struct conveyor_allreduce_report {
  int algorithm; /* the algorithm that ran */
  size_t segment_bytes;
  int nodes;
  double predicted_seconds;
} conveyor_allreduce_report;

/* Sets the defaults (automatic algorithm, everything else off). */
CONVEYOR_C_API void conveyor_allreduce_options_init(conveyor_allreduce_options* options);

/* recv = op over all ranks' send, on every rank; send may be recv or MPI_IN_PLACE.
 * options and report may be NULL. */
CONVEYOR_C_API int conveyor_allreduce(const void* send, void* recv, size_t count, conveyor_dtype t, conveyor_op op,
                                      MPI_Comm comm, const conveyor_allreduce_options* options,
                                      conveyor_allreduce_report* report);

/* counts has one entry per rank of comm. validate: as the allreduce option
 * (counts, dtype and op agreed across ranks; a bad argument on any rank fails
 * on every rank). */
CONVEYOR_C_API int conveyor_reduce_scatter(const void* send, void* recv, const size_t* counts, conveyor_dtype t,
                                           conveyor_op op, MPI_Comm comm, int validate);
CONVEYOR_C_API int conveyor_allgatherv(const void* send, void* recv, const size_t* counts, conveyor_dtype t,
                                       MPI_Comm comm, int validate);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_C_COLLECTIVES_H */
