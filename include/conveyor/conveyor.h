// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API.
 *
 * Every function returns a conveyor_status (CONVEYOR_SUCCESS = 0) unless stated
 * otherwise. After a failure, conveyor_last_error() returns a message describing
 * it; the message belongs to the calling thread and stays valid until that thread's
 * next failing Conveyor call. Enum values equal those of the C++ API.
 */
#ifndef CONVEYOR_CONVEYOR_H
#define CONVEYOR_CONVEYOR_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "conveyor/enums.h"

#if defined(_WIN32)
#define CONVEYOR_C_API
#else
#define CONVEYOR_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The type names are ints, not enums: a C caller may pass any int, and an
 * out-of-range value must be an error, not undefined behaviour in the C++ side. */
typedef int conveyor_dtype; /* one of the CONVEYOR_<type> values */
typedef int conveyor_op;    /* one of the CONVEYOR_<op> values */
typedef int conveyor_status;

/* C constants from the lists of conveyor/enums.h: CONVEYOR_<SUFFIX>, numbered from 0. */
#define CONVEYOR_C_PLAIN_(suffix, cpp, name) CONVEYOR_##suffix,
enum { CONVEYOR_DTYPE_LIST(CONVEYOR_C_PLAIN_) }; /* CONVEYOR_INT8 ... CONVEYOR_COMPLEX128 */
enum { CONVEYOR_OP_LIST(CONVEYOR_C_PLAIN_) };    /* CONVEYOR_SUM ... CONVEYOR_LOGADDEXP */

enum {
  CONVEYOR_SUCCESS = 0,
  CONVEYOR_ERR_INVALID_ARGUMENT = 1,
  CONVEYOR_ERR_UNSUPPORTED = 2,
  CONVEYOR_ERR_MPI = 3,
  CONVEYOR_ERR_INTERNAL = 4,
  CONVEYOR_ERR_INVALID_TYPE = 5 /* an unsupported or mismatched dtype */
};

/* Library version, e.g. "0.1.0". Never fails. */
CONVEYOR_C_API const char* conveyor_version(void);

/* Message of this thread's last failure ("" if none). Never fails. */
CONVEYOR_C_API const char* conveyor_last_error(void);

/* Bytes per element, or 0 for an unknown dtype. */
CONVEYOR_C_API size_t conveyor_dtype_size(conveyor_dtype t);

/* Node memory (conveyor/node_memory.hpp): `bytes` bytes the node's other ranks
 * can map, zeroed, in *result; a Redistribute plan whose destinations (or
 * sources) lie in it copies each byte once (the one_copy transport). Not
 * collective. Free with conveyor_node_free (null: nothing). */
CONVEYOR_C_API int conveyor_node_alloc(size_t bytes, void** result);
CONVEYOR_C_API void conveyor_node_free(void* p);
/* An MPI_Win_allocate_shared window's segment as node memory (conveyor::note_shared_window;
 * libconveyor_mpi notes every window it sees created): *noted is 1 if it is one shared
 * file mapping, now noted, else 0. Forget it before MPI_Win_free. Not collective. */
CONVEYOR_C_API int conveyor_note_shared_window(MPI_Win win, int* noted);
CONVEYOR_C_API void conveyor_forget_shared_window(MPI_Win win);

/* inout[i] = in[i] op inout[i] for i < count (see conveyor/reduce.hpp). */
CONVEYOR_C_API int conveyor_reduce_local(const void* in, void* inout, size_t count, conveyor_dtype t, conveyor_op op);

/* out[i] = a[i] op b[i]; out may be a or b but must not partially overlap them. */
CONVEYOR_C_API int conveyor_reduce(const void* a, const void* b, void* out, size_t count, conveyor_dtype t,
                                   conveyor_op op);

/* A committed commutative MPI_Op backed by Conveyor's kernel; freed by
 * MPI_Finalize, do not free it yourself. */
CONVEYOR_C_API int conveyor_mpi_op(conveyor_op op, conveyor_dtype t, MPI_Op* result);

/* The MPI datatype Conveyor uses for t (see conveyor/mpi.hpp). */
CONVEYOR_C_API int conveyor_mpi_datatype(conveyor_dtype t, MPI_Datatype* result);

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

/* ---- Sinkhorn: matrix scaling and entropic OT (conveyor/sinkhorn.hpp) ---- */

#define CONVEYOR_C_SINKHORN_(suffix, cpp, name) CONVEYOR_SINKHORN_##suffix,
enum { CONVEYOR_SINKHORN_VARIANT_LIST(CONVEYOR_C_SINKHORN_) }; /* CONVEYOR_SINKHORN_FUSED, _TYPICAL, _C2R, _BLOCKED */
enum {
  CONVEYOR_SINKHORN_STATUS_LIST(CONVEYOR_C_SINKHORN_)
}; /* CONVEYOR_SINKHORN_CONVERGED, _MAX_ITER, _NUMERICAL_FAILURE */
enum { CONVEYOR_SINKHORN_NORM_LIST(CONVEYOR_C_SINKHORN_) };     /* CONVEYOR_SINKHORN_L1, _L2 */
enum { CONVEYOR_SINKHORN_REG_TYPE_LIST(CONVEYOR_C_SINKHORN_) }; /* CONVEYOR_SINKHORN_KL, _ENTROPY */
enum { CONVEYOR_SINKHORN_STOP_LIST(CONVEYOR_C_SINKHORN_) };     /* CONVEYOR_SINKHORN_STOP_MARGINAL, _STOP_CHANGE */

typedef struct conveyor_sinkhorn_options {
  int variant; /* CONVEYOR_SINKHORN_* */
  double tol;  /* on the column-marginal error (in `norm`) */
  int max_iter;
  int threads;             /* OpenMP threads per rank; 0: automatic */
  int log_domain;          /* OT only: iterate on the log scalings */
  int overlap;             /* in-place variants: scale columns as their sums arrive */
  size_t mc, nc, mr, nr;   /* blocking of the blocked variant */
  const double* init_u;    /* warm start (this rank's rows; log domain: log u) or NULL */
  const double* init_v;    /* warm start (all columns; log domain: log v) or NULL */
  int allreduce_algorithm; /* CONVEYOR_ALLREDUCE_* for the column sums */
  int ranks_per_node;      /* of the column-sum allreduce; 0: real nodes */
  int norm;                /* CONVEYOR_SINKHORN_L1 (default) or _L2 (POT's) */
  int check_every;         /* test convergence on iterations 1, 1 + check_every, ... */
  int columns_first;       /* begin with a column update from init_u (POT's order) */
  double reg_m_rows;       /* OT, unbalanced: KL penalty on the row marginal; INFINITY: a constraint */
  double reg_m_cols;       /* the same for the column marginal */
  int reg_type;            /* CONVEYOR_SINKHORN_KL (default) or _ENTROPY */
  int stop;                /* CONVEYOR_SINKHORN_STOP_MARGINAL (default) or _STOP_CHANGE */
} conveyor_sinkhorn_options;

typedef struct conveyor_sinkhorn_info {
  int status; /* CONVEYOR_SINKHORN_CONVERGED, ... */
  int iterations;
  double error;   /* column-marginal error of the result (options' norm) */
  double cost;    /* OT: <P, C> over all ranks; scaling: 0 */
  double seconds; /* the whole call on this rank */
} conveyor_sinkhorn_info;

/* The defaults of conveyor::sinkhorn::options. */
CONVEYOR_C_API void conveyor_sinkhorn_options_init(conveyor_sinkhorn_options* options);

/* Matrix scaling of this rank's rows of A (float32 or float64, row stride ld).
 * in_place non-zero: A becomes diag(u) A diag(v) (any variant); zero: A is only
 * read (fused only). u (rows) and v (cols) receive the scaling and may be NULL.
 * Collective over comm; every rank gets the same error. options/info may be NULL. */
CONVEYOR_C_API int conveyor_sinkhorn_scale(conveyor_dtype t, void* A, size_t rows, size_t cols, size_t ld,
                                           const void* r, const void* c, MPI_Comm comm, int in_place,
                                           const conveyor_sinkhorn_options* options, void* u, void* v,
                                           conveyor_sinkhorn_info* info);

/* Entropic OT on this rank's rows of the cost matrix C. log_u (rows), log_v (cols)
 * receive the log scalings (the dual potentials divided by eps, f / eps and g / eps,
 * as conveyor_sinkhorn_points returns) and plan (rows x cols, stride plan_ld, 0:
 * cols) the plan rows; each may be NULL. */
CONVEYOR_C_API int conveyor_sinkhorn_transport(conveyor_dtype t, const void* C, size_t rows, size_t cols, size_t ld,
                                               const void* a, const void* b, double eps, MPI_Comm comm,
                                               const conveyor_sinkhorn_options* options, void* log_u, void* log_v,
                                               void* plan, size_t plan_ld, conveyor_sinkhorn_info* info);

/* ---- Sinkhorn between point clouds (conveyor/sinkhorn_points.hpp) ---- */

#define CONVEYOR_C_POINTS_(suffix, cpp, name) CONVEYOR_POINTS_##suffix,
enum { CONVEYOR_POINTS_METRIC_LIST(CONVEYOR_C_POINTS_) }; /* CONVEYOR_POINTS_SQEUCLIDEAN, _EUCLIDEAN */
#define CONVEYOR_C_EXCHANGE_(suffix, cpp, name) CONVEYOR_EXCHANGE_##suffix,
enum { CONVEYOR_POINTS_EXCHANGE_LIST(CONVEYOR_C_EXCHANGE_) }; /* CONVEYOR_EXCHANGE_AUTO, _RING, _GATHER */

typedef struct conveyor_points_options {
  int metric; /* CONVEYOR_POINTS_* */
  double tol; /* on the row-marginal error (in `norm`) */
  int max_iter;
  int norm;                 /* CONVEYOR_SINKHORN_L1 (default, POT's here) or _L2 */
  int check_every;          /* test convergence after iterations check_every, 2 check_every, ... */
  int threads;              /* OpenMP threads per rank; 0: automatic */
  const double* init_log_u; /* warm start (this rank's X points) or NULL; with init_log_v */
  const double* init_log_v; /* warm start (this rank's Y points) or NULL */
  double reg_m_rows;        /* unbalanced, as conveyor_sinkhorn_options */
  double reg_m_cols;
  int reg_type;
  int stop;
  double eps_scaling; /* eps-scaling factor in (0, 1), 0: off (points_options::eps_scaling) */
  int exchange;       /* CONVEYOR_EXCHANGE_AUTO (default), _RING or _GATHER */
} conveyor_points_options;

/* The defaults of conveyor::sinkhorn::points_options. */
CONVEYOR_C_API void conveyor_points_options_init(conveyor_points_options* options);

/* Entropic OT between this rank's n points X (n x dim, row-major) with weights a
 * and its m points Y with weights b (a or b NULL: uniform over all ranks' points),
 * float32 or float64. log_u (n) and log_v (m) receive the potentials (f / eps,
 * g / eps) and may be NULL; info->error is the row-marginal error. */
CONVEYOR_C_API int conveyor_sinkhorn_points(conveyor_dtype t, const void* X, size_t n, const void* Y, size_t m,
                                            size_t dim, const void* a, const void* b, double eps, MPI_Comm comm,
                                            const conveyor_points_options* options, void* log_u, void* log_v,
                                            conveyor_sinkhorn_info* info);

typedef struct conveyor_plan_apply_options {
  int metric;     /* CONVEYOR_POINTS_*: the solve's */
  int transpose;  /* 0: out = P V (a row per X point); 1: out = P^T V (a row per Y point) */
  int threads;    /* OpenMP threads per rank; 0: automatic */
  size_t batch;   /* independent problems stored one after another (1: one; conveyor/sinkhorn_points.hpp) */
  int cost_power; /* 0: the plan; 1: each entry times its cost; -1: divided by it (0 at cost 0) */
} conveyor_plan_apply_options;

/* The defaults of conveyor::sinkhorn::plan_apply_options. */
CONVEYOR_C_API void conveyor_plan_apply_options_init(conveyor_plan_apply_options* options);

/* The plan of a point-cloud solve (X, Y, log_u, log_v as conveyor_sinkhorn_points
 * took and gave them) applied to k values per point of the other side held by
 * this rank (V, row-major), without forming it: out (k per own point) =
 * P V, or P^T V with transpose. */
CONVEYOR_C_API int conveyor_apply_plan_points(conveyor_dtype t, const void* X, size_t n, const void* Y, size_t m,
                                              size_t dim, const void* log_u, const void* log_v, double eps,
                                              const void* V, size_t k, void* out, MPI_Comm comm,
                                              const conveyor_plan_apply_options* options);

/* ---- Fixed-support barycenter (conveyor/sinkhorn_barycenter.hpp) ---- */

typedef struct conveyor_barycenter_options {
  double tol; /* on sum_j std_k of the plans' column sums */
  int max_iter;
  int check_every; /* test convergence on iterations first_check, first_check + check_every, ... */
  int first_check;
  int log_domain;          /* iterate on log scalings */
  int threads;             /* OpenMP threads per rank; 0: automatic */
  int allreduce_algorithm; /* CONVEYOR_ALLREDUCE_* for the plans' column sums */
  int ranks_per_node;      /* of that allreduce; 0: real nodes */
} conveyor_barycenter_options;

/* The defaults of conveyor::sinkhorn::barycenter_options. */
CONVEYOR_C_API void conveyor_barycenter_options_init(conveyor_barycenter_options* options);

/* The entropic barycenter of the hists columns of A (dim x hists, row-major, the
 * same on every rank) with weights (hists values, NULL: uniform), under this
 * rank's rows of the dim x dim cost C (row stride ld). barycenter (dim values,
 * may be NULL) receives it on every rank; info->cost is 0. */
CONVEYOR_C_API int conveyor_sinkhorn_barycenter(conveyor_dtype t, const void* C, size_t rows, size_t dim, size_t ld,
                                                const void* A, size_t hists, const void* weights, double eps,
                                                MPI_Comm comm, const conveyor_barycenter_options* options,
                                                void* barycenter, conveyor_sinkhorn_info* info);

/* ---- Distributed sum of outer products (conveyor/outer.hpp) ---- */

#define CONVEYOR_C_OUTER_(suffix, cpp, name) CONVEYOR_OUTER_##suffix,
enum { CONVEYOR_OUTER_ALGORITHM_LIST(CONVEYOR_C_OUTER_) }; /* CONVEYOR_OUTER_AUTO, _ALLGATHER, ... */
enum { CONVEYOR_MATRIX_ORDER_LIST(CONVEYOR_C_PLAIN_) };    /* CONVEYOR_ROW_MAJOR, CONVEYOR_COLUMN_MAJOR */

typedef struct conveyor_outer_options {
  int algorithm;           /* CONVEYOR_OUTER_* */
  int order;               /* CONVEYOR_ROW_MAJOR or CONVEYOR_COLUMN_MAJOR */
  int distributed;         /* non-zero: this rank receives only its row block */
  int validate;            /* ignored: outer_sum always agrees across ranks */
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

/* ---- Redistribute: N-D layouts and redistribution plans (conveyor/redistribute.hpp) ----
 *
 * A layout describes how an N-D array (1 <= ndim <= 8) is cut into blocks, which
 * rank owns each block and where this rank keeps its own blocks. A plan moves
 * dst = alpha * op(src) + beta * dst between layouts; build it once, execute it
 * many times on new data. A plan keeps its own references to the layouts, so the
 * handles may be freed after the plan is made (the arrays they describe must
 * stay). Indices and strides are in elements; blocks are numbered per dimension. */

typedef struct conveyor_layout_s* conveyor_layout;
typedef struct conveyor_redistribution_s* conveyor_redistribution;

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
CONVEYOR_C_API int conveyor_redistribution_create(const conveyor_transform* transforms, size_t count, MPI_Comm comm,
                                                  const conveyor_redistribute_options* options,
                                                  conveyor_redistribution* result);
CONVEYOR_C_API int conveyor_redistribution_execute(conveyor_redistribution plan); /* collective */
/* The transport that runs (auto resolved). */
CONVEYOR_C_API int conveyor_redistribution_transport(conveyor_redistribution plan, int* result);
/* The P x P volume matrix (row-major, bytes rank i sends to rank j; i == j: local copies). */
CONVEYOR_C_API int conveyor_redistribution_volume(conveyor_redistribution plan, int64_t* matrix, size_t capacity);
/* The relabeling the options asked for (P entries), and the destination layout of
 * transform k relabeled by it (a new handle, without storage: describe yours). */
CONVEYOR_C_API int conveyor_redistribution_sigma(conveyor_redistribution plan, int* sigma, size_t capacity);
CONVEYOR_C_API int conveyor_redistribution_relabeled_destination(conveyor_redistribution plan, size_t k,
                                                                 conveyor_layout* result);
CONVEYOR_C_API void conveyor_redistribution_free(conveyor_redistribution plan); /* NULL is fine */

/* Name of the SIMD target the reduction kernels use now, e.g. "AVX3". Never fails;
 * returns "" if it cannot be determined. Valid until the next call. */
CONVEYOR_C_API const char* conveyor_simd_target(void);

/* Forces the kernels onto a named SIMD target; NULL or "" restores the best one. */
CONVEYOR_C_API int conveyor_set_simd_target(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_CONVEYOR_H */
