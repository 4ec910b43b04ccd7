// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API of Redistribute: N-D layouts and redistribution plans (conveyor/redistribute.hpp).
 * Conventions (status codes, conveyor_last_error) in conveyor/c/common.h.
 */
#ifndef CONVEYOR_C_REDISTRIBUTE_H
#define CONVEYOR_C_REDISTRIBUTE_H

#include "conveyor/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Redistribute: N-D layouts and redistribution plans (conveyor/redistribute.hpp) ----
 *
 * A layout describes how an N-D array (1 <= ndim <= 8) is cut into blocks, which
 * rank owns each block and where this rank keeps its own blocks. A plan moves
 * dst = alpha * op(src) + beta * dst between layouts; build it once, execute it
 * many times on new data. A plan keeps its own references to the layouts, so the
 * handles may be freed after the plan is made (the arrays they describe must
 * stay). Indices and strides are in elements; blocks are numbered per dimension. */

typedef struct conveyor_layout_s* conveyor_layout;
typedef struct conveyor_redistribute_plan_s* conveyor_redistribute_plan;

#define CONVEYOR_C_TRANSPORT_(suffix, cpp, name) CONVEYOR_TRANSPORT_##suffix,
enum { CONVEYOR_TRANSPORT_LIST(CONVEYOR_C_TRANSPORT_) }; /* CONVEYOR_TRANSPORT_AUTO, _DATATYPE, ... */
#define CONVEYOR_C_RELABEL_(suffix, cpp, name) CONVEYOR_RELABEL_##suffix,
enum { CONVEYOR_RELABELING_LIST(CONVEYOR_C_RELABEL_) }; /* CONVEYOR_RELABEL_NONE, _GREEDY, _OPTIMAL */

/* Cartesian block distribution: dimension d cut into grid[d] near-equal blocks, the
 * block at grid coordinates c owned by the row-major (column_major_ranks: column-
 * major) rank of c. This rank's one block lives at `local`, row-major and
 * contiguous if local_strides is NULL. */
CONVEYOR_C_API int conveyor_layout_cartesian(int ndim, const int64_t* shape, const int* grid, void* local,
                                             int column_major_ranks, const int64_t* local_strides,
                                             conveyor_layout* result);

/* ScaLAPACK's 2-D block-cyclic distribution of the M x N submatrix at (row_offset,
 * col_offset) (ScaLAPACK's ia-1, ja-1); this rank's blocks in the column-major
 * local array `local` with leading dimension lld. Process (r, c) is rank
 * r * pcol + c (row_major_grid) or c * prow + r. */
typedef struct conveyor_block_cyclic {
  int64_t M, N, mb, nb;
  int prow, pcol;
  int row_major_grid;
  int rsrc, csrc;
  int64_t row_offset, col_offset;
  void* local;
  int64_t lld;
} conveyor_block_cyclic;
CONVEYOR_C_API void conveyor_block_cyclic_init(conveyor_block_cyclic* params); /* 1 x 1 grid, 1 x 1 blocks */
CONVEYOR_C_API int conveyor_layout_block_cyclic(const conveyor_block_cyclic* params, conveyor_layout* result);

/* Fully custom: dimension d is cut at split_points[d][0..split_counts[d]-1]
 * (0 = first < ... < last = extent); owners[i] owns the i-th block in row-major
 * order of block coordinates (owner_count = number of blocks). Describe this
 * rank's blocks with conveyor_layout_set_storage. */
CONVEYOR_C_API int conveyor_layout_custom(int ndim, const int64_t* const* split_points, const int64_t* split_counts,
                                          const int* owners, int64_t owner_count, conveyor_layout* result);
/* Where this rank keeps block `block` (ndim block coordinates): its first element
 * at `data`, neighbours `strides[d]` elements apart along dimension d. */
CONVEYOR_C_API int conveyor_layout_set_storage(conveyor_layout layout, const int64_t* block, void* data,
                                               const int64_t* strides);
CONVEYOR_C_API int conveyor_layout_ndim(conveyor_layout layout, int* result);
/* Number of blocks this rank owns. */
CONVEYOR_C_API int conveyor_layout_local_blocks(conveyor_layout layout, int rank, int64_t* result);
CONVEYOR_C_API void conveyor_layout_free(conveyor_layout layout); /* NULL is fine */

/* One transform of a plan: dst = alpha * op(src) + beta * dst; dst axis k is src
 * axis perm[k] (perm NULL: identity); conjugate for complex types. */
typedef struct conveyor_transform {
  conveyor_layout src, dst;
  const int* perm;
  int conjugate;
  double alpha, beta, alpha_imag, beta_imag;
  conveyor_dtype type;
} conveyor_transform;
CONVEYOR_C_API void conveyor_transform_init(conveyor_transform* t); /* alpha 1, beta 0, float64, identity */

typedef struct conveyor_redistribute_options {
  int transport;          /* CONVEYOR_TRANSPORT_* */
  int relabel;            /* CONVEYOR_RELABEL_* */
  double intra_node_cost; /* cost of an intra-node byte relative to an inter-node one (1: flat) */
  int ranks_per_node;     /* 0: real nodes */
  size_t chunk_bytes;     /* pipelined transport */
} conveyor_redistribute_options;
CONVEYOR_C_API void conveyor_redistribute_options_init(conveyor_redistribute_options* options);

/* A plan for `count` transforms (batched: one message per peer). options may be
 * NULL. Collective over comm; argument errors are reported on every rank. */
CONVEYOR_C_API int conveyor_redistribute_plan_create(const conveyor_transform* transforms, size_t count, MPI_Comm comm,
                                                     const conveyor_redistribute_options* options,
                                                     conveyor_redistribute_plan* result);
CONVEYOR_C_API int conveyor_redistribute_plan_execute(conveyor_redistribute_plan plan); /* collective */
/* The transport that runs (auto resolved). */
CONVEYOR_C_API int conveyor_redistribute_plan_transport(conveyor_redistribute_plan plan, int* result);
/* The P x P volume matrix (row-major, bytes rank i sends to rank j; i == j: local copies). */
CONVEYOR_C_API int conveyor_redistribute_plan_volume(conveyor_redistribute_plan plan, int64_t* matrix, size_t capacity);
/* The relabeling the options asked for (P entries), and the destination layout of
 * transform k relabeled by it (a new handle, without storage: describe yours). */
CONVEYOR_C_API int conveyor_redistribute_plan_sigma(conveyor_redistribute_plan plan, int* sigma, size_t capacity);
CONVEYOR_C_API int conveyor_redistribute_plan_relabeled_destination(conveyor_redistribute_plan plan, size_t k,
                                                                    conveyor_layout* result);
CONVEYOR_C_API void conveyor_redistribute_plan_free(conveyor_redistribute_plan plan); /* NULL is fine */

/* Deprecated names of the plan (Conveyor 0.1): one name per idea, as C++'s
 * conveyor::redistribute::plan and Python's conveyor.Plan. They work and warn,
 * and go in a later release (docs/api.md, "Deprecated names"). */
typedef conveyor_redistribute_plan conveyor_redistribution CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan");
CONVEYOR_C_API int conveyor_redistribution_create(const conveyor_transform* transforms, size_t count, MPI_Comm comm,
                                                  const conveyor_redistribute_options* options,
                                                  conveyor_redistribute_plan* result)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_create");
CONVEYOR_C_API int conveyor_redistribution_execute(conveyor_redistribute_plan plan)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_execute");
CONVEYOR_C_API int conveyor_redistribution_transport(conveyor_redistribute_plan plan, int* result)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_transport");
CONVEYOR_C_API int conveyor_redistribution_volume(conveyor_redistribute_plan plan, int64_t* matrix, size_t capacity)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_volume");
CONVEYOR_C_API int conveyor_redistribution_sigma(conveyor_redistribute_plan plan, int* sigma, size_t capacity)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_sigma");
CONVEYOR_C_API int conveyor_redistribution_relabeled_destination(conveyor_redistribute_plan plan, size_t k,
                                                                 conveyor_layout* result)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_relabeled_destination");
CONVEYOR_C_API void conveyor_redistribution_free(conveyor_redistribute_plan plan)
    CONVEYOR_C_DEPRECATED("use conveyor_redistribute_plan_free");

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_C_REDISTRIBUTE_H */
